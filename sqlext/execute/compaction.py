"""Distributed compaction: the engine's compaction operation with one Spark task per bucket
(the runner is ``sqlext.source.spark_compaction``; planning, the commit and the retry after a lost
race are the engine's ``Table.compact``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from engine import CommitResult, Table
from sqlext.source.spark_compaction import spark_runner


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
