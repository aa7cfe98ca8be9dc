"""Merging one key section of a bucket's files with bounded memory.

A section (``engine.lsm.intervals``) is a group of sorted runs whose keys overlap. A section of
at most :data:`~engine.merge.streaming.MERGE_CHUNK_ROWS` rows (by the files' metadata) is read
whole and merged in one vectorised call, as it always was: it pays no per-batch overhead. A
larger one is streamed (``engine.merge.streaming``): every run is read batch by batch (each file
minus its deletion vector, the vector's positions offset by the batch's place in the file), so a
merge-on-read or a compaction holds a few batches per run whatever the bucket holds.
Both the merge-on-read reader and compaction merge through here, so they agree row for row.

A reader under a filter may hand a ``narrow`` step: applied to the rows just before they merge
(whole section or streamed step: all versions of a key are together), it keeps the rows of the
keys that can still pass (``engine.read.split_reader``), so the merge sorts far fewer rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import cast

import pyarrow as pa

from engine.files.reader import SEQUENCE_NUMBER, VALUE_KIND, data_file_path, iter_data_file, read_data_file
from engine.lsm.levels import SortedRun
from engine.merge import streaming
from engine.merge.config import MergeConfig
from engine.merge.functions import merge
from engine.merge.streaming import aligned_rows, merge_sorted_runs, run_batch_rows
from engine.meta.deletion_vectors import DeletionVector
from engine.meta.manifest import DataFileMeta
from engine.read.deletion_vectors import apply_deletion_vector, apply_deletion_vector_batches
from engine.store import FileStore
from engine.types import DataField

KV_SYSTEM_COLUMNS = (SEQUENCE_NUMBER, VALUE_KIND)
DeletionVectorOf = Callable[[DataFileMeta], DeletionVector | None]


def section_rows(section: Sequence[SortedRun]) -> int:
    """Rows the section's files hold by their metadata (before deletion vectors)."""
    return sum(f.row_count for run in section for f in run.files)


def merge_section(
    store: FileStore,
    part_dir: str,
    bucket: int,
    section: Sequence[SortedRun],
    fields: Sequence[DataField],
    config: MergeConfig,
    *,
    drop_deletes: bool,
    deletion_vector: DeletionVectorOf | None = None,
    chunk_rows: int | None = None,
    narrow: Callable[[pa.Table], pa.Table] | None = None,
) -> Iterator[pa.Table]:
    """The section's rows merged by ``config``: merged kv tables (``fields`` plus
    ``_SEQUENCE_NUMBER``/``_VALUE_KIND``) in key order, one table for a small section, chunks
    of about ``chunk_rows`` input rows for a larger one (default: the module constant
    :data:`~engine.merge.streaming.MERGE_CHUNK_ROWS`, read at call time).

    Args:
        section: the section's sorted runs, in the order :func:`~engine.lsm.intervals.
            partition_by_key_intervals` gives them (their files are ``DataFileMeta``).
        fields: the current-schema fields to read (must include the key and ordering columns).
        deletion_vector: ``file -> its DV`` (None: no file has one).
        narrow: rows → the rows whose keys may survive (all versions of those keys), before the
            merge (see the module docstring).

    Raises:
        CorruptMetadataError / CorruptDataError: a file is missing or unreadable, or a DV points
            past its file's end; a run turns out not to be sorted by key.
    """
    chunk_rows = chunk_rows if chunk_rows is not None else streaming.MERGE_CHUNK_ROWS
    keys = list(store.schema.primary_keys)
    runs = [cast(list[DataFileMeta], list(run.files)) for run in section]
    if section_rows(section) <= chunk_rows:
        parts = [_read_whole(store, part_dir, bucket, f, fields, deletion_vector)
                 for run in runs for f in run]
        if parts:
            rows = pa.concat_tables(parts)
            yield merge(narrow(rows) if narrow else rows, keys, config, drop_deletes=drop_deletes)
        return
    batch_rows = run_batch_rows(len(runs), chunk_rows)
    streams = [_run_batches(store, part_dir, bucket, run, fields, deletion_vector, batch_rows)
               for run in runs]
    if narrow is None:
        yield from merge_sorted_runs(streams, keys, config, drop_deletes=drop_deletes, chunk_rows=chunk_rows)
        return
    for step in aligned_rows(streams, keys, chunk_rows):  # every version of a key is in one step
        yield merge(narrow(step), keys, config, drop_deletes=drop_deletes)


def _read_whole(
    store: FileStore,
    part_dir: str,
    bucket: int,
    f: DataFileMeta,
    fields: Sequence[DataField],
    deletion_vector: DeletionVectorOf | None,
) -> pa.Table:
    path = data_file_path(store, part_dir, bucket, f)
    table = read_data_file(store, path, f, fields, KV_SYSTEM_COLUMNS)
    dv = deletion_vector(f) if deletion_vector is not None else None
    return table if dv is None else apply_deletion_vector(table, dv, f.file_name)


def _run_batches(
    store: FileStore,
    part_dir: str,
    bucket: int,
    run: Sequence[DataFileMeta],
    fields: Sequence[DataField],
    deletion_vector: DeletionVectorOf | None,
    batch_rows: int,
) -> Iterator[pa.Table]:
    """A sorted run's rows, file after file, batch by batch (files are opened one at a time)."""
    for f in run:
        path = data_file_path(store, part_dir, bucket, f)
        batches = iter_data_file(store, path, f, fields, KV_SYSTEM_COLUMNS, batch_rows=batch_rows)
        dv = deletion_vector(f) if deletion_vector is not None else None
        yield from apply_deletion_vector_batches(batches, dv, f.file_name)
