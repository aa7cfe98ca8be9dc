"""Distributed compaction: the engine's compaction operation with one Spark task per bucket.

Planning, the commit and the retry after a lost race are the engine's (``Table.compact``); this
module only supplies the runner that rewrites each planned bucket in a Spark task, so a cluster
compacts in parallel while the driver handles metadata only. The same runner is what a SQL
write's commit hands its post-commit compaction (``CommitBuilder.with_compaction_runner``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from engine import CommitMessage, CommitResult, CompactionRunner, CompactionTask, Table, run_compaction_task


def spark_runner(spark: SparkSession) -> CompactionRunner:
    """A compaction runner that rewrites each planned bucket in its own Spark task."""

    def run_on_spark(store: Any, tasks: Sequence[CompactionTask]) -> list[CommitMessage]:
        def rewrite(task: CompactionTask) -> list[CommitMessage]:  # shipped to the executors
            return run_compaction_task(store, task)

        results = spark.sparkContext.parallelize(list(tasks), len(tasks)).map(rewrite).collect()
        return [m for ms in results for m in ms]

    return run_on_spark


def compact_distributed(
    spark: SparkSession,
    table: Table,
    *,
    full: bool,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    max_attempts: int = 3,
    order_strategy: str | None = None,
    order_by: Sequence[str] = (),
) -> CommitResult:
    """Compact ``table`` (or some partitions) with one Spark task per bucket that needs it; one commit.
    With ``order_strategy`` / ``order_by``, a sorted compaction (one task per partition)."""
    runner = spark_runner(spark)
    return table.compact(full=full, partitions=partitions, max_attempts=max_attempts, runner=runner,
                         order_strategy=order_strategy, order_by=order_by)
