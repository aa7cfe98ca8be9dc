"""Postpone compaction: the pending files of a postpone-bucket table moved into real buckets.

One job: what Paimon 2.0's postpone compaction (``SparkPostponeCompactProcedure``,
``PostponeUtils``) does to a table with ``bucket = -2`` whose writers left files in the pending
bucket (``bucket-postpone``, written in Avro by Paimon's and pypaimon's streaming or
``postpone.batch-write-fixed-bucket = false`` writers; readers skip them until this runs):

* each partition's pending files are read (their rows, row kinds and sequence numbers; any
  format dyntable reads) in the order Paimon merges them: file by file in creation order, rows in
  sequence order within a file;
* the rows are written into the partition's real buckets as a new write is (``engine.write.kv_writer``:
  the partition's bucket count when it has files in real buckets, else, for a new partition,
  ``postpone.target-row-num-per-bucket`` over the pending row count when set, else
  ``postpone.default-bucket-num``), taking sequence numbers above each bucket's, so they win over
  what the bucket held, as in Paimon; the touched buckets are compacted;
* the pending files leave the table in the same commit (``compact_before`` of the pending bucket).

dyntable's own writes never leave pending files (they go straight to real buckets, as Paimon's
Spark batch writer does by default); this is for tables other engines wrote.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pyarrow as pa

from engine.commit_messages import CommitMessage
from engine.features import POSTPONE_BUCKET
from engine.files.reader import SEQUENCE_NUMBER, VALUE_KIND, data_file_path, read_data_file
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, ManifestEntry
from engine.store import FileStore
from engine.write.kv_writer import KeyValueWriter

__all__ = ["move_pending_files", "pending_entries"]

_TARGET_ROWS = "postpone.target-row-num-per-bucket"


def pending_entries(store: FileStore) -> list[ManifestEntry]:
    """The live files of the latest snapshot in the pending bucket (none unless ``bucket = -2``)."""
    if store.options.bucket != POSTPONE_BUCKET:
        return []
    return [e for e in store.live_entries(store.snapshots.latest()) if e.bucket == POSTPONE_BUCKET]


def _rows(store: FileStore, partition_dir: str, files: list[DataFileMeta]) -> pa.Table:
    """The rows of one partition's pending files with their ``_VALUE_KIND``, in Paimon's merge
    order (files by creation time, rows by sequence number within a file)."""
    fields = list(store.schema.fields)
    tables = []
    for f in sorted(files, key=lambda f: (f.creation_time_millis or 0, f.min_sequence_number)):
        path = data_file_path(store, partition_dir, POSTPONE_BUCKET, f)
        t = read_data_file(store, path, f, fields, (SEQUENCE_NUMBER, VALUE_KIND))
        order = np.argsort(t.column(SEQUENCE_NUMBER).to_numpy(), kind="stable")
        tables.append(t.take(pa.array(order)).drop_columns([SEQUENCE_NUMBER]))
    return pa.concat_tables(tables)


def move_pending_files(store: FileStore, entries: list[ManifestEntry]) -> list[CommitMessage]:
    """Write the rows of the pending ``entries`` into real buckets and compact those buckets;
    returns the commit messages, including the removal of the pending files."""
    by_partition: dict[bytes, list[DataFileMeta]] = defaultdict(list)
    for e in entries:
        by_partition[e.partition].append(e.file)
    writer = KeyValueWriter(store, compact=True)
    target = store.options.to_dict().get(_TARGET_ROWS)
    for partition, files in by_partition.items():
        values = deserialize_row(partition, store.partition_types)
        rows = _rows(store, store.partition_dir(values), files)
        if target is not None and writer.known_postpone_buckets(partition) is None:
            # A new partition's bucket count from its pending rows (PostponeUtils.computeBucketNumByRowCount).
            writer.set_postpone_buckets(partition, max(1, math.ceil(rows.num_rows / int(target))))
        writer.write(rows)
    messages = writer.prepare_commit()
    removals = [CommitMessage(partition=p, bucket=POSTPONE_BUCKET, total_buckets=POSTPONE_BUCKET,
                              compact_before=tuple(files)) for p, files in by_partition.items()]
    return removals + messages
