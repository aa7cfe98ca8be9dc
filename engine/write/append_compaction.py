"""Compaction of append tables: rewrite a bucket's small files into files of the target size.

Append rows have no key, so compaction only concatenates (in sequence order) and rolls new
files; it runs for a bucket holding at least ``compaction.min.file-num`` small files, or for
every bucket with more than one small file when a full compaction is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from engine.commit_messages import CommitMessage
from engine.files.reader import data_file_path, read_data_file
from engine.lsm.deletion_vectors import refuse_deletion_vectors
from engine.meta.manifest import FileSource
from engine.scan.planner import DataSplit
from engine.store import FileStore
from engine.write.file_writer import DataFileWriter


def compact_bucket(store: FileStore, splits: Sequence[DataSplit], full: bool) -> CommitMessage | None:
    """Rewrite the small files of one bucket (all ``splits`` share partition and bucket)."""
    refuse_deletion_vectors(store, "compact")
    target = store.options.target_file_size(False)
    files = sorted((f for s in splits for f in s.files), key=lambda f: f.min_sequence_number)
    small = [f for f in files if f.file_size < target]
    if len(small) < (2 if full else store.options.compaction_min_file_num):
        return None
    first = splits[0]
    part_dir = store.partition_dir(first.partition_values)
    fields = list(store.schema.fields)
    data = pa.concat_tables(
        [read_data_file(store, data_file_path(store, part_dir, first.bucket, f), f, fields) for f in small]
    )
    writer = DataFileWriter(store, part_dir, first.bucket, file_source=FileSource.COMPACT)
    after = writer.write_append(data, small[0].min_sequence_number)
    return CommitMessage(first.partition, first.bucket, first.total_buckets, compact_before=tuple(small),
                         compact_after=tuple(after))
