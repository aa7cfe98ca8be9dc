"""Split → Arrow data. Append splits concatenate; primary-key splits merge.

A data-evolution split (append, not raw convertible) is read row-id group by row-id group, each
group's columns taken from the newest file holding them (:mod:`engine.read.data_evolution`) and
the group's deletion vector (its oldest file's) applied to the assembled rows.

Tables with deletion vectors are read as Paimon's batch readers read them, without merging:
every file (for a primary-key table every file above level 0) is read raw, and the rows its
deletion vector marks are dropped by a vectorised mask (``engine.read.deletion_vectors``).

For a primary-key split the files are cut into key-interval sections (files that overlap by
key, transitively). A section holding one sorted run is read straight ("raw convertible"),
dropping retraction rows; a section with several runs is concatenated and merged with the
table's merge engine, vectorised. Sections are independent, so memory is bounded by the largest
section, not the bucket. Filters are applied after merging (a filter before the merge could
drop the newest version of a row and resurrect an older one). Where the merged row is always one
of the key's versions, whole (``deduplicate``, ``first-row``), the rows go into the merge narrowed
to the keys with at least one version that passes the filter: a key none of whose versions pass
cannot pass once merged, and a kept key keeps all its versions, so the merge picks the same row.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.arrow_types import to_arrow_field, to_arrow_type
from engine.count_layout import expand, is_count_layout, logical_schema
from engine.errors import CorruptMetadataError, NoSuchBranchError, UnsupportedTableError
from engine.files.reader import VALUE_KIND, data_file_path, read_data_file
from engine.history.expiry import explain_missing
from engine.lsm.changelog import kinds_to_rowkind
from engine.lsm.deletion_vectors import batch_reads_skip_level0, uses_deletion_vectors
from engine.lsm.intervals import partition_by_key_intervals
from engine.lsm.key_order import key_range_decoder
from engine.merge.functions import COUNT_COLUMN, MergeConfig, keys_present_in
from engine.meta.deletion_vectors import DeletionVector
from engine.meta.manifest import DataFileMeta
from engine.meta.row_ranges import anchor_file, group_by_row_id, is_data_evolution
from engine.meta.schema_store import SchemaStore
from engine.read.data_evolution import read_group
from engine.read.deletion_vectors import DeletionVectorLoader, apply_deletion_vector
from engine.read.section_merge import merge_section
from engine.row_tracking import (
    FILE_COLUMNS,
    ROW_ID,
    SEQUENCE_NUMBER,
    TRACKING_COLUMNS,
    file_metadata,
    has_physical_row_tracking,
    row_id_column,
    sequence_number_column,
    split_columns,
    split_metadata,
)
from engine.scan.planner import DataSplit
from engine.scan.predicate import Predicate, filter_table
from engine.store import FileStore
from engine.types import DataField


# Built on first use: any pyarrow array construction imports pandas (~0.2-0.4 s), and processes
# that only plan (Spark's driver-side source runner) never need it.
@functools.cache
def _add_kinds() -> pa.Array:
    return pa.array([0, 2], pa.int8())  # +I, +U
ROWKIND = "rowkind"
_POSITION = "__dyntable_position"  # a probe's row numbers (never a column name: double underscore)


class SplitReader:
    """Reads splits of one table as the current schema, with projection and an exact filter."""

    def __init__(
        self,
        store: FileStore,
        columns: Sequence[str] | None = None,
        filter: Predicate | None = None,
        *,
        row_kind: bool = False,
        all_levels: bool = False,
    ) -> None:
        self.store = store
        # Deletion-vector tables: read raw minus each file's DV (see the module docstring).
        self.deletion_vectors = DeletionVectorLoader(store.io) if uses_deletion_vectors(store) else None
        # Prepend the merged rows' kinds as ``rowkind`` ($audit_log). Such a read keeps the keys
        # whose latest change is a retraction (-D / -U), as Paimon's audit log does (it reads
        # with deletes kept), so a DELETE shows until a full compaction drops the row.
        self.row_kind = row_kind
        self._fallback_readers: dict[str, SplitReader] = {}
        schema = store.schema
        self.count_layout = is_count_layout(schema)
        self.data_evolution = not store.has_primary_key and is_data_evolution(schema.options)
        # (A count-layout table shows counts as repeated rows; a retraction is a count, not a row.)
        self.keep_deletes = row_kind and not self.count_layout
        visible = logical_schema(schema).field_names if self.count_layout else schema.field_names
        self.columns = list(columns) if columns is not None else list(visible)
        self.filter = filter
        # Paimon's metadata columns (engine.row_tracking) are computed per file, never read as such.
        own, self.meta_fields = split_columns(schema, self.columns)
        needed = list(own)
        for c in sorted(filter.columns()) if filter is not None else []:
            if c not in needed:
                needed.append(c)
        # first-row tables: like Paimon's batch scans, read only levels >= 1. Writes compact their
        # level-0 files up before they return (engine.write.compactor.forces_up_level0), so level 0
        # holds only rows whose compaction has not run yet (e.g. 'write-only' tables).
        self.skip_level0 = False
        if store.has_primary_key:
            self.merge_config = MergeConfig.from_options(schema.options, schema.primary_keys)
            # (Deletion-vector tables likewise: Paimon's batch reads skip their level 0.)
            # ``all_levels`` (a stream's full phase, as Paimon's streaming scans): level 0 too, merged.
            self.skip_level0 = not all_levels and (
                self.merge_config.engine == "first-row" or batch_reads_skip_level0(store)
            )
            extra = [COUNT_COLUMN] if self.count_layout else []
            config = self.merge_config
            ordering = [*config.sequence_fields, *config.group_sequence_fields]
            for c in [*schema.primary_keys, *ordering, *extra]:
                if c not in needed:
                    needed.append(c)
        self.expanded = [c for c in needed if c != COUNT_COLUMN]
        self.read_fields: list[DataField] = [schema.field(c) for c in needed]
        meta = {f.name: to_arrow_field(f).with_metadata(None) for f in self.meta_fields}
        out = [meta[c] if c in meta else schema.arrow_schema().field(c) for c in self.columns]
        if row_kind:
            out.insert(0, pa.field(ROWKIND, pa.string(), nullable=False))
        self.output_schema = pa.schema(out)

    def read(self, split: DataSplit) -> Iterator[pa.Table]:
        """Yield the split's rows as Arrow tables (one per file or merged section).

        Raises:
            SnapshotExpiredDuringReadError: the split's snapshot was expired meanwhile and a file
                it named is gone (``engine.history.expiry``).
        """
        if split.branch is not None and split.branch != self.store.branch:
            yield from self._fallback_reader(split.branch).read(split)
            return
        try:
            yield from self._read(split)
        except CorruptMetadataError as e:
            raise explain_missing(self.store, split.snapshot_id, e) from e

    def _fallback_reader(self, branch: str) -> SplitReader:
        """A reader of the fallback branch's splits (scan.fallback-branch), with its own definition."""
        readers = self._fallback_readers
        if branch not in readers:
            schema = SchemaStore(self.store.io, self.store.paths.for_branch(branch)).latest()
            if schema is None:
                raise NoSuchBranchError(
                    f"branch '{branch}' (scan.fallback-branch) was deleted during the read; read again")
            store = FileStore(self.store.io, self.store.paths.for_branch(branch), schema)
            readers[branch] = SplitReader(store, self.columns, self.filter, row_kind=self.row_kind)
        return readers[branch]

    def _read(self, split: DataSplit) -> Iterator[pa.Table]:
        part_dir = self.store.partition_dir(split.partition_values)
        if self.data_evolution and not split.raw_convertible:
            yield from self._read_evolved(part_dir, split)
            return
        if not self.store.has_primary_key:
            for f in split.files:
                path = data_file_path(self.store, part_dir, split.bucket, f)
                if self._probes():
                    yield self._finish(self._probe_then_read(path, split, f, kinds=False))
                    continue
                table = self._with_metadata(read_data_file(self.store, path, f, self.read_fields,
                                                           self._physical(f)), split, f, path)
                yield self._finish(self._apply_dv(table, split, f))
            return
        files = split.files
        if self.skip_level0:
            files = tuple(f for f in files if f.level > 0)
        # (raw_convertible is still true of a subset of the files; DV tables are merged only when
        # level 0 is read too, each file minus its DV)
        unmerged = self.deletion_vectors is not None and all(f.level > 0 for f in files)
        if (split.raw_convertible and self.deletion_vectors is None) or unmerged:
            for f in files:
                yield self._finish(self._read_kv(part_dir, split, f))
            return
        if any(m.name in FILE_COLUMNS for m in self.meta_fields):
            # Paimon's readers refuse them too: a merged row comes from no single file.
            raise UnsupportedTableError(
                f"{FILE_COLUMNS[0]} and {FILE_COLUMNS[1]} are offered only where rows are read "
                "straight from their files (tables without a primary key, or with deletion vectors); "
                "this split's rows are merged from several files")
        schema = self.store.schema
        key_range = key_range_decoder([schema.field(k).type for k in schema.trimmed_primary_keys])
        for section in partition_by_key_intervals(files, key_range):
            # The sections' runs hold the split's own DataFileMetas (typed by the LSM as FileMeta).
            if len(section) == 1:
                for run_file in section[0].files:
                    yield self._finish(self._read_kv(part_dir, split, cast(DataFileMeta, run_file)))
                continue
            for merged in merge_section(
                self.store, part_dir, split.bucket, section, self.read_fields, self.merge_config,
                drop_deletes=not self.keep_deletes, deletion_vector=functools.partial(self._dv_of, split),
                narrow=self._narrow if self._narrows() else None,
            ):
                yield self._finish(self._with_split_metadata(merged, split))

    def _read_evolved(self, part_dir: str, split: DataSplit) -> Iterator[pa.Table]:
        """A data-evolution split (the only append splits not raw convertible): each row-id group
        of several files assembled column-wise (:mod:`engine.read.data_evolution`), minus its
        anchor's deletion vector; a group of one file read as any append file."""
        for group in group_by_row_id(split.files):
            if len(group) == 1:
                f = group[0]
                path = data_file_path(self.store, part_dir, split.bucket, f)
                if self._probes():
                    yield self._finish(self._probe_then_read(path, split, f, kinds=False))
                else:
                    table = read_data_file(self.store, path, f, self.read_fields, self._physical(f))
                    yield self._finish(self._apply_dv(self._with_metadata(table, split, f, path), split, f))
                continue
            rows = read_group(self.store, part_dir, split.bucket, group, self.read_fields)
            anchor = anchor_file(group)
            rows = self._with_group_metadata(rows, split, group, anchor)
            yield self._finish(self._apply_dv(rows, split, anchor))

    def _with_group_metadata(
        self, rows: pa.Table, split: DataSplit, group: Sequence[DataFileMeta], anchor: DataFileMeta
    ) -> pa.Table:
        """A data-evolution group's rows (its whole row-id range, in order) with the metadata
        columns asked for: ``_ROW_ID`` from the range's first id, ``_SEQUENCE_NUMBER`` the newest
        file's, as Paimon's data-evolution reader gives them. A row comes from several files, so
        its file path and row index are refused as for merged rows."""
        if any(m.name in FILE_COLUMNS for m in self.meta_fields):
            raise UnsupportedTableError(
                f"{FILE_COLUMNS[0]} and {FILE_COLUMNS[1]} are not offered for rows a data-evolution table "
                "assembles from several files (a row-id range rewritten column by column)")
        newest = max(group, key=lambda f: f.max_sequence_number)
        for m in self.meta_fields:
            if m.name == ROW_ID:
                column = row_id_column(anchor, rows.num_rows)
            elif m.name == SEQUENCE_NUMBER:
                column = sequence_number_column(newest, rows.num_rows)
            else:
                column = split_metadata(m, rows.num_rows, split.partition_values, split.bucket)
            rows = rows.append_column(m.name, column)
        return rows

    def _narrows(self) -> bool:
        """Whether merges may take only the keys with a passing version (module docstring)."""
        return (self.filter is not None and not self.keep_deletes and not self.count_layout
                and self.merge_config.engine in ("deduplicate", "first-row"))

    def _narrow(self, rows: pa.Table) -> pa.Table:
        """``rows`` (every version of their keys) minus the keys none of whose versions pass."""
        passing = filter_table(rows, self.filter)
        if passing.num_rows == rows.num_rows:
            return rows
        keys = list(self.store.schema.primary_keys)
        column = rows.column(keys[0])
        if len(keys) == 1 and (pa.types.is_integer(column.type) or pa.types.is_string(column.type)):
            mask = pc.is_in(column, value_set=pc.unique(passing.column(keys[0])))
        else:  # floats and composite keys: Paimon's key equality (NaN, -0.0)
            mask = pa.array(keys_present_in(rows, passing.select(keys), keys))
        return rows.filter(mask)

    def read_table(self, split: DataSplit) -> pa.Table:
        tables = list(self.read(split))
        if not tables:
            return self.output_schema.empty_table()
        return pa.concat_tables(tables)

    def _apply_dv(self, table: pa.Table, split: DataSplit, f: DataFileMeta) -> pa.Table:
        """The rows of ``f`` (all of them, in file order) minus those its deletion vector marks."""
        dv = self._dv_of(split, f)
        return table if dv is None else apply_deletion_vector(table, dv, f.file_name)

    def _dv_of(self, split: DataSplit, f: DataFileMeta) -> DeletionVector | None:
        """The deletion vector of ``f`` in ``split`` (None without one)."""
        if self.deletion_vectors is None:
            return None
        where = split.deletion_file(f.file_name)
        return None if where is None else self.deletion_vectors.load(where)

    def _read_kv(self, part_dir: str, split: DataSplit, f: DataFileMeta) -> pa.Table:
        """A file of a section that needs no merge: its rows without retractions (unless kept)."""
        path = data_file_path(self.store, part_dir, split.bucket, f)
        if self._probes():
            return self._probe_then_read(path, split, f)
        if self.meta_fields:
            table = self._with_metadata(read_data_file(self.store, path, f, self.read_fields, (VALUE_KIND,)),
                                        split, f, path)
            table = self._apply_dv(table, split, f)
            keep = table if self.keep_deletes else table.filter(
                pc.is_in(table.column(VALUE_KIND), value_set=_add_kinds()))
            return keep
        # The kinds are always read and filtered: a file's deleteRowCount is not proof that it
        # holds no retractions (pypaimon writes 0 for files holding -D rows), and one int8 column
        # costs little next to the values. The DV goes first: its positions number the file's rows.
        table = self._apply_dv(read_data_file(self.store, path, f, self.read_fields, (VALUE_KIND,)), split, f)
        if not self.keep_deletes:
            table = table.filter(pc.is_in(table.column(VALUE_KIND), value_set=_add_kinds()))
        return table

    def _probes(self) -> bool:
        """Whether files are read filter-first: a deletion-vector table's files (read unmerged by
        the callers' raw paths) under a filter, without retractions kept ($audit_log keeps them)."""
        return (self.deletion_vectors is not None and self.filter is not None and not self.keep_deletes
                and not self.count_layout and not self.meta_fields)

    def _physical(self, f: DataFileMeta) -> tuple[str, ...]:
        """The row-tracking columns ``f`` holds itself and this read needs."""
        wanted = [m.name for m in self.meta_fields if m.name in TRACKING_COLUMNS]
        if not wanted or not has_physical_row_tracking(f):
            return ()
        assert f.write_cols is not None
        return tuple(c for c in TRACKING_COLUMNS if c in f.write_cols)

    def _with_metadata(self, table: pa.Table, split: DataSplit, f: DataFileMeta, path: str) -> pa.Table:
        """``table`` (all rows of ``f``, in file order; the physical row-tracking columns last)
        with the metadata columns this read asks for, computed before any row is dropped."""
        if not self.meta_fields:
            return table
        physical = table.select([c for c in TRACKING_COLUMNS if c in table.column_names])
        table = table.drop_columns(physical.column_names)
        # A read of metadata columns only reads no column of the file: its rows are the file's.
        n = table.num_rows if table.num_columns or physical.num_columns else f.row_count
        values = file_metadata(self.meta_fields, f, path, n, split.partition_values,
                               split.bucket, physical if physical.num_columns else None)
        if not table.num_columns:
            return pa.table(dict(zip([m.name for m in self.meta_fields], values, strict=True)))
        for m, v in zip(self.meta_fields, values, strict=True):
            table = table.append_column(m.name, v)
        return table

    def _with_split_metadata(self, table: pa.Table, split: DataSplit) -> pa.Table:
        """Merged rows with the split-level metadata columns (partition, bucket) asked for."""
        for m in self.meta_fields:
            table = table.append_column(m.name, split_metadata(m, table.num_rows, split.partition_values,
                                                               split.bucket))
        return table

    def _probe_then_read(self, path: str, split: DataSplit, f: DataFileMeta, kinds: bool = True) -> pa.Table:
        """A deletion-vector file read under a filter, in two passes (no merge follows, so the
        filter may run on the file's own rows): first the filter's columns (and the kinds of a
        primary-key file), which give the surviving positions (filter ∧ +I/+U ∧ not in the DV);
        then the other columns, taken at those positions. A file where nothing survives is not
        read further."""
        assert self.filter is not None
        system = (VALUE_KIND,) if kinds else ()
        probe_names = [c for c in (fd.name for fd in self.read_fields) if c in self.filter.columns()]
        probe_fields = [fd for fd in self.read_fields if fd.name in probe_names]
        probe = read_data_file(self.store, path, f, probe_fields, system)
        probe = probe.append_column(_POSITION, pa.array(np.arange(probe.num_rows, dtype=np.int64)))
        probe = self._apply_dv(probe, split, f)
        if kinds:
            probe = probe.filter(pc.is_in(probe.column(VALUE_KIND), value_set=_add_kinds()))
        probe = filter_table(probe, self.filter)
        rest_fields = [fd for fd in self.read_fields if fd.name not in probe_names]
        if probe.num_rows == 0 or not rest_fields:
            rest = pa.table({fd.name: pa.nulls(probe.num_rows, to_arrow_type(fd.type)) for fd in rest_fields})
        else:
            rest = read_data_file(self.store, path, f, rest_fields).take(probe.column(_POSITION))
        columns = {**{n: rest.column(n) for n in rest.column_names},
                   **{n: probe.column(n) for n in (*probe_names, *system)}}
        return pa.table({n: columns[n] for n in (*(fd.name for fd in self.read_fields), *system)})

    def _finish(self, table: pa.Table) -> pa.Table:
        if self.count_layout:  # each row as many times as its count (before filtering)
            table = expand(table, self.expanded)
        table = filter_table(table, self.filter)
        if not self.row_kind:
            return table.select(self.columns).cast(self.output_schema)
        if VALUE_KIND in table.column_names:
            kinds = kinds_to_rowkind(table.column(VALUE_KIND))
        else:
            kinds = pa.repeat(pa.scalar("+I", pa.string()), table.num_rows)
        return table.select(self.columns).add_column(0, ROWKIND, kinds).cast(self.output_schema)
