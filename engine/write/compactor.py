"""Rewriting the files of one bucket: compaction (picked or full) and the changelog it yields.

One function does the data work of a compaction unit, so the writer's automatic compaction,
``Table.compact`` and Spark's distributed compaction all produce identical files:

* a unit that is a single file moved to a higher level without deletes to drop is *upgraded*
  (metadata only, no rewrite);
* otherwise the unit's files are merged with the table's merge engine and written at the output
  level; deletes are dropped when nothing older can lie below the output level. The merge goes
  key section by key section, a large section streamed in bounded chunks
  (``engine.read.section_merge``) straight into a rolling writer (``engine.write.kv_rolling``), so
  a compaction's memory does not grow with the bucket (except for the two cases that need the
  merged rows whole: a first-row lookup above the output level and a full-compaction changelog);
* with ``changelog-producer = full-compaction`` a compaction into the top level emits the exact
  difference between the old top level and the new one as changelog files.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.count_layout import is_count_layout
from engine.errors import UnsupportedTableError
from engine.files.reader import SEQUENCE_NUMBER, VALUE_KIND, read_data_file
from engine.lsm.changelog import diff_changelog, rowkind_to_kinds
from engine.lsm.compact_strategy import CompactUnit, UniversalCompaction, can_drop_deletes
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.lsm.intervals import partition_by_key_intervals
from engine.lsm.key_order import key_range_decoder, orderable_key
from engine.lsm.levels import FileMeta, Levels
from engine.merge.functions import COUNT_COLUMN, MergeConfig, keys_present_in, merge
from engine.meta.manifest import DataFileMeta, FileSource
from engine.meta.paths import FileNamer
from engine.read.section_merge import merge_section
from engine.store import FileStore
from engine.types import to_arrow_field
from engine.write.file_writer import DataFileWriter
from engine.write.kv_rolling import RollingKvWriter


# Built on first use: any pyarrow array construction imports pandas (~0.2-0.4 s), and processes
# that only plan (Spark's driver-side source runner) never need it.
@functools.cache
def _retract_kinds() -> pa.Array:
    return pa.array([1, 3], pa.int8())  # -U, -D


@dataclass(frozen=True, slots=True)
class CompactionResult:
    before: tuple[DataFileMeta, ...] = ()
    after: tuple[DataFileMeta, ...] = ()
    changelog: tuple[DataFileMeta, ...] = ()


def key_range_fn(store: FileStore):
    """``file -> (min_key, max_key)`` comparable in Paimon's key order (floats as Double.compare)."""
    return key_range_decoder([store.schema.field(k).type for k in store.schema.trimmed_primary_keys])


def levels_of(store: FileStore, files: Sequence[DataFileMeta]) -> Levels:
    num_levels = store.options.num_levels
    top = max((f.level for f in files), default=0)
    return Levels(files, max(num_levels, top + 1), key_range_fn(store))


def strategy(store: FileStore) -> UniversalCompaction:
    opts = store.options
    return UniversalCompaction(
        max_size_amp_percent=opts.compaction_max_size_amplification_percent,
        size_ratio=opts.compaction_size_ratio,
        num_run_compaction_trigger=opts.num_sorted_run_compaction_trigger,
    )


def is_first_row(store: FileStore) -> bool:
    return store.has_primary_key and store.options.merge_engine == "first-row"


def forces_up_level0(store: FileStore) -> bool:
    """Whether every compaction must also move all level-0 files up (Paimon's
    ``ForceUpLevel0Compaction``). For ``first-row`` and deletion-vector tables Paimon's batch reads
    skip level 0 and read the other levels without merging, so a write becomes visible only once
    compacted up."""
    return is_first_row(store) or (store.has_primary_key and uses_deletion_vectors(store))


def pick(
    store: FileStore, files: Sequence[DataFileMeta], full: bool = False
) -> tuple[Levels, CompactUnit | None]:
    levels = levels_of(store, files)
    s = strategy(store)
    runs = levels.level_sorted_runs()
    if full:
        unit = s.force_full(levels.num_levels, runs)
    elif forces_up_level0(store):
        # Deletion-vector tables: a forced pick that no universal trigger asked for moves level 0
        # up alone and marks the rows it supersedes in DVs (engine.write.kv_deletion_vectors),
        # instead of rewriting the runs below by size ratio as Paimon's pick would.
        unit = s.force_up_level0(levels.num_levels, runs, level0_only=not is_first_row(store))
        level0 = {f.file_name for f in levels.level0}
        if unit is not None and not level0 <= {f.file_name for f in unit.files}:
            # The universal pick took only the newest level-0 runs: take them all in one unit,
            # so that the write that triggered this compaction is wholly visible when it returns.
            unit = s.force_up_level0(levels.num_levels, runs, universal_first=False)
    else:
        unit = s.pick(levels.num_levels, runs)
    return levels, unit


def read_kv(store: FileStore, partition_dir: str, bucket: int, files: Sequence[DataFileMeta]) -> pa.Table:
    fields = list(store.schema.fields)
    parts = [
        read_data_file(
            store,
            store.paths.data_file(partition_dir, bucket, f.file_name),
            f,
            fields,
            (SEQUENCE_NUMBER, VALUE_KIND),
        )
        for f in files
    ]
    return pa.concat_tables(parts) if parts else _empty_kv(store)


def holds_retractions(store: FileStore, partition_dir: str, bucket: int, f: DataFileMeta) -> bool:
    """Whether a data file holds -U/-D rows, judged by its rows: a ``deleteRowCount`` of 0 is
    not proof (pypaimon writes 0 for files holding deletes), so only a positive count is trusted."""
    if f.delete_row_count:
        return True
    path = store.paths.data_file(partition_dir, bucket, f.file_name)
    kinds = read_data_file(store, path, f, [], (VALUE_KIND,)).column(VALUE_KIND)
    return bool(pc.any(pc.is_in(kinds, value_set=_retract_kinds())).as_py())


def _data_files(files: Sequence[FileMeta]) -> list[DataFileMeta]:
    """``files`` as the DataFileMetas they are: Levels and CompactUnit are generic over any
    file meta (the level logic is tested with light fakes), and the engine fills them with
    DataFileMeta from the scan."""
    return cast(list[DataFileMeta], list(files))


def _first_rows_above(store: FileStore, levels: Levels, unit: CompactUnit) -> list[DataFileMeta]:
    """For ``first-row`` tables: the files above the unit's output level, outside the unit.

    They hold the first rows of their keys (older data lives higher), so a key of the unit found
    there must not be written again below it: Paimon's readers concatenate levels >= 1 of a
    first-row table without merging, and would return both.
    """
    if not is_first_row(store) or unit.output_level >= levels.max_level:
        return []
    inside = {f.file_name for f in unit.files}
    return [
        f
        for f in _data_files(levels.all_files())
        if f.level > unit.output_level and f.file_name not in inside
    ]


def _drop_keys_kept_above(
    store: FileStore, partition_dir: str, bucket: int, merged: pa.Table, older: Sequence[DataFileMeta]
) -> pa.Table:
    """``merged`` without the keys that already have their first row in ``older`` (Paimon's
    first-row lookup during compaction). Only files whose key range meets ``merged``'s are read,
    and only their key columns."""
    if merged.num_rows == 0:
        return merged
    schema = store.schema
    keys = list(schema.trimmed_primary_keys)
    key_range = key_range_fn(store)
    lo, hi = _table_key_bounds(merged, keys)
    candidates = [f for f in older if not (key_range(f)[1] < lo or key_range(f)[0] > hi)]
    if not candidates:
        return merged
    key_fields = [schema.field(k) for k in keys]
    seen = pa.concat_tables(
        [
            read_data_file(store, store.paths.data_file(partition_dir, bucket, f.file_name), f, key_fields)
            for f in candidates
        ]
    )
    present = keys_present_in(merged, seen, keys)
    return merged.filter(pa.array(~present)) if present.any() else merged


def _table_key_bounds(table: pa.Table, keys: Sequence[str]) -> tuple[tuple[object, ...], tuple[object, ...]]:
    # Merged output is sorted by key in Paimon's order: the first and last rows are the bounds.
    first = [table.column(k)[0].as_py() for k in keys]
    last = [table.column(k)[table.num_rows - 1].as_py() for k in keys]
    return orderable_key(first), orderable_key(last)


def _merged_chunks(
    store: FileStore,
    partition_dir: str,
    bucket: int,
    files: Sequence[DataFileMeta],
    config: MergeConfig,
    drop_deletes: bool,
) -> Iterator[pa.Table]:
    """The unit's rows merged, in key order: section by section (sections are key-disjoint), each
    streamed in bounded chunks when large (``engine.read.section_merge``)."""
    schema = store.schema
    fields = list(schema.fields)
    drop_zero = drop_deletes and is_count_layout(schema)  # nothing older remains: a zero count is no row
    for section in partition_by_key_intervals(files, key_range_fn(store)):
        for merged in merge_section(
            store, partition_dir, bucket, section, fields, config, drop_deletes=drop_deletes
        ):
            if drop_zero:
                merged = merged.filter(pc.not_equal(merged.column(COUNT_COLUMN), 0))
            if merged.num_rows:
                yield merged


def _empty_kv(store: FileStore) -> pa.Table:
    arrow_fields = [to_arrow_field(f) for f in store.schema.fields]
    return pa.schema(
        arrow_fields + [pa.field(SEQUENCE_NUMBER, pa.int64()), pa.field(VALUE_KIND, pa.int8())]
    ).empty_table()


def run_compaction(
    store: FileStore,
    partition_dir: str,
    bucket: int,
    levels: Levels,
    unit: CompactUnit,
    namer: FileNamer | None = None,
) -> CompactionResult:
    """Do the data work of one compaction unit of one bucket (tables without deletion vectors:
    those compact through ``engine.write.kv_deletion_vectors``)."""
    if uses_deletion_vectors(store):
        raise UnsupportedTableError(
            f"table {store.paths.root} has deletion vectors: its compaction must maintain them "
            "(engine.write.kv_deletion_vectors.compact_unit)"
        )
    namer = namer or FileNamer()
    drop_deletes = can_drop_deletes(unit, levels)
    files = _data_files(unit.files)
    older = _first_rows_above(store, levels, unit)
    if len(files) == 1 and files[0].level != unit.output_level and not unit.file_rewrite and not older:
        f = files[0]
        if not drop_deletes or not holds_retractions(store, partition_dir, bucket, f):
            return CompactionResult((f,), (f.upgrade(unit.output_level),))
    schema = store.schema
    config = MergeConfig.from_options(schema.options, schema.primary_keys)
    chunks = _merged_chunks(store, partition_dir, bucket, files, config, drop_deletes)
    writer = DataFileWriter(
        store, partition_dir, bucket, namer=namer, file_source=FileSource.COMPACT, level=unit.output_level
    )
    full_changelog = (
        store.options.changelog_producer == "full-compaction" and unit.output_level == levels.max_level
    )
    if not older and not full_changelog:
        # Streamed: merged chunks go to the rolling writer as they come, so neither the unit's
        # rows nor its output are ever held whole.
        return CompactionResult(tuple(files), tuple(RollingKvWriter(writer).write_all(chunks)))
    # A first-row lookup above the output level and a full-compaction changelog need the merged
    # rows whole (one lookup over every key; one diff against the old top level).
    parts = list(chunks)
    merged = pa.concat_tables(parts) if parts else _empty_kv(store)
    if older:
        merged = _drop_keys_kept_above(store, partition_dir, bucket, merged, older)
    after = tuple(writer.write_kv(merged)) if merged.num_rows else ()
    changelog: tuple[DataFileMeta, ...] = ()
    if full_changelog:
        old_top = [f for f in _data_files(levels.all_files()) if f.level == levels.max_level]
        before = merge(
            read_kv(store, partition_dir, bucket, old_top), schema.primary_keys, config, drop_deletes=True
        )
        new_state = merged if drop_deletes else merge(merged, schema.primary_keys, config, drop_deletes=True)
        changelog = write_changelog(store, partition_dir, bucket, before, new_state, namer)
    return CompactionResult(tuple(files), after, changelog)


def write_changelog(
    store: FileStore, partition_dir: str, bucket: int, before: pa.Table, after: pa.Table, namer: FileNamer
) -> tuple[DataFileMeta, ...]:
    """Write the exact -U/+U/+I/-D difference between two merged states as changelog files."""
    schema = store.schema
    value_columns = list(schema.field_names)
    diff = diff_changelog(
        before.select(value_columns), after.select(value_columns), list(schema.primary_keys), value_columns
    )
    if diff.num_rows == 0:
        return ()
    seq_base = int(pc.max(after.column(SEQUENCE_NUMBER)).as_py() or 0) if after.num_rows else 0
    kinds = rowkind_to_kinds(diff.column("rowkind"))
    table = (
        diff.drop_columns(["rowkind"])
        .append_column(SEQUENCE_NUMBER, pa.array(np.full(diff.num_rows, seq_base, dtype=np.int64)))
        .append_column(VALUE_KIND, kinds)
    )
    writer = DataFileWriter(
        store,
        partition_dir,
        bucket,
        namer=namer,
        file_source=FileSource.COMPACT,
        prefix=store.options.changelog_file_prefix,
    )
    return tuple(writer.write_kv(table))
