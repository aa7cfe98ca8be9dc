"""Distributed compaction: one Spark task per bucket that needs it, one commit for all.

The driver plans the buckets (metadata only); each task rewrites one bucket's files with the
engine's compactor and returns picklable commit messages; the driver commits them together as
one COMPACT snapshot. A commit that loses a race against a concurrent change of the same files
has its files deleted by the commit and starts over from the new latest snapshot (bounded retries).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from engine import CommitConflictError, CommitResult, Table
from engine.commit import CommitMessage
from engine.scan.planner import DataSplit
from engine.store import FileStore


def _needs_compaction(store: FileStore, split: DataSplit, full: bool) -> bool:
    from engine.lsm.compactor import pick

    if not store.has_primary_key:
        small = [f for f in split.files if f.file_size < store.options.target_file_size(False)]
        return len(small) >= (2 if full else store.options.compaction_min_file_num)
    _, unit = pick(store, split.files, full=full)
    return unit is not None


def compact_task(store: FileStore, splits: Sequence[DataSplit], full: bool) -> list[CommitMessage]:
    """Executor side: compact the buckets of ``splits`` (all of one bucket) and return the messages."""
    if store.has_primary_key:
        from engine.write.kv_writer import KeyValueWriter

        writer = KeyValueWriter(store, compact=False)
        writer.compact_splits(splits, full=full)
        return writer.prepare_commit()
    from engine.write.append_compaction import compact_bucket

    message = compact_bucket(store, splits, full)
    return [message] if message is not None else []


def compact_distributed(
    spark: SparkSession,
    table: Table,
    *,
    full: bool,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    max_attempts: int = 3,
) -> CommitResult:
    from engine.scan.predicate import any_partition

    predicate = any_partition(partitions)
    for attempt in range(max_attempts):
        table = table.refresh()
        store = table.store
        plan = table.new_scan().with_filter(predicate).plan()
        groups: dict[tuple[bytes, int], list[DataSplit]] = {}
        for split in plan.splits:
            groups.setdefault((split.partition, split.bucket), []).append(split)
        tasks = [g for g in groups.values() if _needs_compaction(store, _merged(g), full)]
        if not tasks:
            return CommitResult(())
        results = spark.sparkContext.parallelize(tasks, len(tasks)).map(
            lambda group, _store=store, _full=full: compact_task(_store, group, _full)
        ).collect()
        messages = [m for ms in results for m in ms]
        if not messages:
            return CommitResult(())
        try:
            return table.new_commit().commit(messages)
        except CommitConflictError:  # the commit deleted what the tasks wrote
            if attempt == max_attempts - 1:
                raise
    return CommitResult(())


def _merged(group: list[DataSplit]) -> DataSplit:
    first = group[0]
    files = tuple(f for s in group for f in s.files)
    return DataSplit(first.snapshot_id, first.partition, first.partition_values, first.bucket, first.total_buckets,
                     files, first.raw_convertible)

