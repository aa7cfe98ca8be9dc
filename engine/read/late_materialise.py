"""A filtered merge-on-read of one key section, reading the columns the filter does not need last.

A filter on a value column can only run after the merge, so a plain filtered read decodes every
column of every version of every key, merges and then drops most rows. Here the section is read
in two passes:

1. **Probe**: the key, the ordering columns (``sequence.field``), the filter's columns and the
   system columns (``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) of every file, each row tagged with its
   file and its position in the file (numbered before the file's deletion vector drops rows).
   These rows are narrowed to the keys with a passing version, merged as the section always is
   (whole, or streamed in key-aligned steps: :mod:`engine.read.section_merge`), and filtered.
2. **Rest**: the other columns are read only for the surviving rows, file by file, at their
   positions; a Parquet file decodes only the row groups holding a survivor, and a file without
   one is not opened again.

**When it is exact.** Only where the merged row is one input row, whole: the ``deduplicate`` and
``first-row`` engines (the merge changes only ``_SEQUENCE_NUMBER``, which the probe carries). A
``partial-update`` or ``aggregation`` row is assembled column by column from several versions, so
no single position holds its values; those engines, reads that keep retractions (``$audit_log``),
the count layout and reads with metadata columns are read by :func:`~engine.read.section_merge.
merge_section` instead (the caller decides: ``engine.read.split_reader``). Under those conditions
the rows are the same as merging all columns and filtering: the same rows go into the same merge
(narrowing keeps every version of a kept key), the merge picks a row by the probe's columns alone,
and the filter sees the merged values of its own columns.

**Where it is used.** The rest is decoded per row group (pyarrow reads no part of one), and
merged rows that pass a selective filter are spread over the key range: a 1 % filter on a value
column leaves survivors in every row group of 262,144 rows, so the second pass decodes as much
as a plain read and the two passes cost the same CPU (measured on the benchmarks' W3 table, 1 +
4 runs per bucket: 0.26 s either way), while a filter passing most rows costs about a tenth more
(the survivors' columns taken at their positions). It pays where row groups or whole files hold
no survivor: big files (several row groups) under a filter whose survivors cluster by key (a
value that grows with the key, such as a creation time under increasing ids). So the reader uses
it for sections holding a file bigger than one row group (:func:`pays`) and merges the others
plainly.

Memory: survivors are collected as probe rows and materialised every ``chunk_rows`` survivors
(and at the end), so a filter that passes most rows holds one chunk at a time, as a plain read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import cast

import numpy as np
import pyarrow as pa

from engine.files.reader import data_file_path, iter_data_file, read_data_file, read_data_file_rows
from engine.lsm.levels import SortedRun
from engine.merge import streaming
from engine.merge.config import MergeConfig
from engine.merge.functions import merge
from engine.merge.streaming import aligned_rows, run_batch_rows
from engine.meta.file_formats import format_of
from engine.meta.manifest import DataFileMeta
from engine.read.deletion_vectors import apply_deletion_vector, apply_deletion_vector_batches
from engine.read.section_merge import KV_SYSTEM_COLUMNS, DeletionVectorOf, section_rows
from engine.scan.predicate import Predicate, filter_table
from engine.store import FileStore
from engine.types import DataField

# Never column names (double underscore): a probe row's file (index in the section) and position.
_FILE = "__dyntable_late_file"
_POSITION = "__dyntable_late_position"
#: The merge engines whose merged row is one input row, whole (see the module docstring).
WHOLE_ROW_ENGINES = ("deduplicate", "first-row")


def pays(section: Sequence[SortedRun]) -> bool:
    """Whether the section holds a file of more than one row group's rows (the writers' row
    groups hold :data:`~engine.merge.streaming.MERGE_CHUNK_ROWS` rows), where the second pass may
    skip row groups (see the module docstring). Read at call time (tests lower it)."""
    # Only Parquet files are read by row group; other formats are read whole either way.
    return any(
        f.row_count > streaming.MERGE_CHUNK_ROWS and format_of(f.file_name) == "parquet"
        for run in section
        for f in run.files
    )


def probe_columns(fields: Sequence[DataField], keys: Sequence[str], config: MergeConfig,
                  predicate: Predicate) -> list[str]:
    """The columns of ``fields`` the probe reads: keys, ordering columns and the filter's."""
    wanted = {*keys, *config.sequence_fields, *config.group_sequence_fields, *predicate.columns()}
    return [f.name for f in fields if f.name in wanted]


def merge_section_late(
    store: FileStore,
    part_dir: str,
    bucket: int,
    section: Sequence[SortedRun],
    fields: Sequence[DataField],
    config: MergeConfig,
    predicate: Predicate,
    narrow: Callable[[pa.Table], pa.Table],
    *,
    deletion_vector: DeletionVectorOf | None = None,
    chunk_rows: int | None = None,
) -> Iterator[pa.Table]:
    """The section's merged rows that pass ``predicate`` (``fields`` plus ``_SEQUENCE_NUMBER`` /
    ``_VALUE_KIND``, retractions dropped), in key order, read in two passes (module docstring).

    The caller guarantees the conditions of exactness: ``config.engine`` in
    :data:`WHOLE_ROW_ENGINES`, retractions dropped, no count layout.

    Args:
        fields: the current-schema fields to read (the key and ordering columns among them).
        narrow: rows → the rows of the keys with a passing version (all versions of those keys).
        deletion_vector: ``file -> its DV`` (None: no file has one).
        chunk_rows: rows per merge step and survivors per materialisation (default
            :data:`~engine.merge.streaming.MERGE_CHUNK_ROWS`, read at call time).

    Raises:
        CorruptMetadataError / CorruptDataError: as :func:`~engine.read.section_merge.merge_section`.
    """
    assert config.engine in WHOLE_ROW_ENGINES
    chunk_rows = chunk_rows if chunk_rows is not None else streaming.MERGE_CHUNK_ROWS
    keys = list(store.schema.primary_keys)
    probe_names = set(probe_columns(fields, keys, config, predicate))
    probe_fields = [f for f in fields if f.name in probe_names]
    rest_fields = [f for f in fields if f.name not in probe_names]
    runs = [cast(list[DataFileMeta], list(run.files)) for run in section]
    files = [f for run in runs for f in run]
    paths = [data_file_path(store, part_dir, bucket, f) for f in files]
    first = np.cumsum([0] + [len(run) for run in runs])  # index of each run's first file

    def merged_passing(rows: pa.Table) -> pa.Table:
        return filter_table(merge(narrow(rows), keys, config, drop_deletes=True), predicate)

    def finish(survivors: pa.Table) -> pa.Table:
        return _materialise(store, files, paths, survivors, fields, rest_fields)

    if section_rows(section) <= chunk_rows:
        parts = [_probe_whole(store, paths[i], f, i, probe_fields, deletion_vector)
                 for i, f in enumerate(files)]
        if parts:
            survivors = merged_passing(pa.concat_tables(parts))
            if survivors.num_rows:
                yield finish(survivors)
        return
    batch_rows = run_batch_rows(len(runs), chunk_rows)
    streams = [_probe_batches(store, paths, files, range(int(first[r]), int(first[r + 1])), probe_fields,
                              deletion_vector, batch_rows) for r in range(len(runs))]
    held: list[pa.Table] = []
    count = 0
    for step in aligned_rows(streams, keys, chunk_rows):  # every version of a key is in one step
        survivors = merged_passing(step)
        if survivors.num_rows:
            held.append(survivors)
            count += survivors.num_rows
        if count >= chunk_rows:
            yield finish(pa.concat_tables(held))
            held, count = [], 0
    if held:
        yield finish(pa.concat_tables(held))


def _tagged(table: pa.Table, index: int, offset: int) -> pa.Table:
    """``table`` (rows ``offset..`` of file ``index``, before its DV) with its file and positions."""
    n = table.num_rows
    return (table.append_column(_FILE, pa.array(np.full(n, index, np.int32)))
            .append_column(_POSITION, pa.array(np.arange(offset, offset + n, dtype=np.int64))))


def _probe_whole(store: FileStore, path: str, f: DataFileMeta, index: int, fields: Sequence[DataField],
                 deletion_vector: DeletionVectorOf | None) -> pa.Table:
    table = _tagged(read_data_file(store, path, f, fields, KV_SYSTEM_COLUMNS), index, 0)
    dv = deletion_vector(f) if deletion_vector is not None else None
    return table if dv is None else apply_deletion_vector(table, dv, f.file_name)


def _probe_batches(store: FileStore, paths: Sequence[str], files: Sequence[DataFileMeta], indexes: range,
                   fields: Sequence[DataField], deletion_vector: DeletionVectorOf | None,
                   batch_rows: int) -> Iterator[pa.Table]:
    """One sorted run's probe rows, file after file, batch by batch (each file minus its DV)."""
    for i in indexes:
        f = files[i]

        def tagged(i: int = i, f: DataFileMeta = f) -> Iterator[pa.Table]:
            offset = 0
            for batch in iter_data_file(store, paths[i], f, fields, KV_SYSTEM_COLUMNS, batch_rows=batch_rows):
                yield _tagged(batch, i, offset)
                offset += batch.num_rows

        dv = deletion_vector(f) if deletion_vector is not None else None
        yield from apply_deletion_vector_batches(tagged(), dv, f.file_name)


def _materialise(store: FileStore, files: Sequence[DataFileMeta], paths: Sequence[str], survivors: pa.Table,
                 fields: Sequence[DataField], rest_fields: Sequence[DataField]) -> pa.Table:
    """The survivors (probe rows, in key order) with their other columns read at their positions."""
    columns = {name: survivors.column(name) for name in survivors.column_names}
    if rest_fields:
        index = survivors.column(_FILE).to_numpy()
        position = survivors.column(_POSITION).to_numpy()
        order = np.lexsort((position, index))  # file by file, each in file order
        index, position = index[order], position[order]
        cuts = np.flatnonzero(np.diff(index)) + 1
        pieces = [read_data_file_rows(store, paths[int(index[a])], files[int(index[a])], rest_fields,
                                      position[a:b])
                  for a, b in zip(np.concatenate([[0], cuts]), np.append(cuts, len(index)), strict=True)]
        inverse = np.empty(len(order), np.int64)
        inverse[order] = np.arange(len(order), dtype=np.int64)
        rest = pa.concat_tables(pieces).take(pa.array(inverse))
        columns.update({name: rest.column(name) for name in rest.column_names})
    names = [*(f.name for f in fields), *KV_SYSTEM_COLUMNS]
    return pa.table({name: columns[name] for name in names})
