"""Compaction of append tables: rewrite a bucket's small files into files of the target size.

Append rows have no key, so compaction only concatenates (in sequence order) and rolls new
files; it runs for a bucket holding at least ``compaction.min.file-num`` small files, or for
every bucket with more than one small file when a full compaction is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from engine.commit import CommitMessage, CommitResult
from engine.meta.manifest import FileSource
from engine.meta.paths import FileNamer
from engine.read.split_reader import data_file_path, split_partition_dir
from engine.read.file_reader import read_data_file
from engine.scan.predicate import and_, equal, or_
from engine.write.conform import coerce_spec
from engine.write.file_writer import DataFileWriter

if TYPE_CHECKING:
    from engine.table import Table


def compact_append(table: Table, partitions: Sequence[Mapping[str, object]] | None = None, full: bool = True) -> CommitResult:
    store = table.store
    predicate = None
    if partitions:
        specs = [coerce_spec(store.schema, p) for p in partitions]
        predicate = or_(*[and_(*[equal(k, v) for k, v in s.items()]) for s in specs])  # type: ignore[misc]
    plan = table.new_scan().with_filter(predicate).plan()
    target = store.options.target_file_size(False)
    min_files = store.options.compaction_min_file_num
    by_bucket: dict[tuple[bytes, int], list] = {}
    for split in plan.splits:
        by_bucket.setdefault((split.partition, split.bucket), []).append(split)
    namer = FileNamer()
    messages = []
    fields = list(store.schema.fields)
    for (partition, bucket), splits in by_bucket.items():
        files = sorted((f for s in splits for f in s.files), key=lambda f: f.min_sequence_number)
        small = [f for f in files if f.file_size < target]
        if len(small) < (2 if full else min_files):
            continue
        part_dir = split_partition_dir(store, splits[0])
        data = pa.concat_tables(
            [read_data_file(store, data_file_path(store, part_dir, bucket, f), f, fields) for f in small]
        )
        writer = DataFileWriter(store, part_dir, bucket, namer=namer, file_source=FileSource.COMPACT)
        after = writer.write_append(data, small[0].min_sequence_number)
        messages.append(
            CommitMessage(partition, bucket, splits[0].total_buckets, compact_before=tuple(small), compact_after=tuple(after))
        )
    if not messages:
        return CommitResult(())
    return table.new_commit().commit(messages)
