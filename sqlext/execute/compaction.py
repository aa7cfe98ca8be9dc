"""Distributed compaction: the engine's compaction operation with one Spark task per bucket.

Planning, the commit and the retry after a lost race are the engine's (``engine.compaction``);
this module only supplies the runner that rewrites each planned bucket in a Spark task, so a
cluster compacts in parallel while the driver handles metadata only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from engine import CommitMessage, CommitResult, FileStore, Table
from engine.compaction import CompactionTask, compact, run_task


def compact_distributed(
    spark: SparkSession,
    table: Table,
    *,
    full: bool,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    max_attempts: int = 3,
) -> CommitResult:
    """Compact ``table`` (or some partitions) with one Spark task per bucket that needs it; one commit."""

    def run_on_spark(store: FileStore, tasks: Sequence[CompactionTask]) -> list[CommitMessage]:
        results = spark.sparkContext.parallelize(list(tasks), len(tasks)).map(
            lambda task, _store=store: run_task(_store, task)
        ).collect()
        return [m for ms in results for m in ms]

    return compact(table, full=full, partitions=partitions, runner=run_on_spark, max_attempts=max_attempts)
