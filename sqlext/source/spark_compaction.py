"""Compaction tasks on Spark: the runner that rewrites each planned bucket in its own Spark task.

Planning, the commit and the retry after a lost race are the engine's (``Table.compact``,
``CommitBuilder``); this module only supplies the runner (``engine.CompactionRunner``), so a
cluster compacts in parallel while the driver handles metadata only. SQL writes hand it to their
commit (``sqlext.execute.writes``), ``CALL sys.compact`` to the compaction
(``sqlext.execute.compaction``), and DataFrame writes to the compaction their driver runs after
the job (``sqlext.source.session_conf``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine import CommitMessage, CompactionRunner, CompactionTask, run_compaction_task


def spark_runner(spark: Any) -> CompactionRunner:
    """A compaction runner that rewrites each planned bucket in its own Spark task."""

    def run_on_spark(store: Any, tasks: Sequence[CompactionTask]) -> list[CommitMessage]:
        def rewrite(task: CompactionTask) -> list[CommitMessage]:  # shipped to the executors
            return run_compaction_task(store, task)

        results = spark.sparkContext.parallelize(list(tasks), len(tasks)).map(rewrite).collect()
        return [m for ms in results for m in ms]

    return run_on_spark
