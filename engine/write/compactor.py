"""Rewriting the files of one bucket: compaction (picked or full) and the changelog it yields.

One function does the data work of a compaction unit, so the writer's automatic compaction,
``Table.compact`` and Spark's distributed compaction all produce identical files:

* a unit that is a single file moved to a higher level without deletes to drop is *upgraded*
  (metadata only, no rewrite);
* otherwise the unit's files are merged with the table's merge engine and written at the output
  level; deletes are dropped when nothing older can lie below the output level. The merge goes
  key section by key section, a large section streamed in bounded chunks
  (``engine.read.section_merge``) straight into a rolling writer (``engine.write.kv_rolling``), so
  a compaction's memory does not grow with the bucket; a first-row table's lookup of the keys
  kept above the output level streams those levels' keys alongside;
* with ``changelog-producer = full-compaction`` a compaction into the top level emits the exact
  difference between the old top level and the new one as changelog files, diffed as both
  stream by (only the changelog rows are held until they are written).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.arrow_types import to_arrow_field
from engine.count_layout import is_count_layout
from engine.errors import UnsupportedTableError
from engine.files.reader import SEQUENCE_NUMBER, VALUE_KIND, data_file_path, iter_data_file, read_data_file
from engine.lsm.changelog import diff_changelog, rowkind_to_kinds
from engine.lsm.compact_strategy import CompactUnit, UniversalCompaction, can_drop_deletes
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.lsm.intervals import partition_by_key_intervals
from engine.lsm.key_order import key_range_decoder
from engine.lsm.levels import FileMeta, Levels
from engine.merge.functions import COUNT_COLUMN, MergeConfig, keys_present_in, merge
from engine.merge.streaming import align_sorted_runs, run_batch_rows
from engine.meta.manifest import DataFileMeta, FileSource
from engine.meta.paths import FileNamer
from engine.read.section_merge import merge_section
from engine.store import FileStore
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
            store.paths.data_file(partition_dir, bucket, f.file_name, f.external_path),
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
    path = store.paths.data_file(partition_dir, bucket, f.file_name, f.external_path)
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


def _without_keys_above(
    store: FileStore,
    partition_dir: str,
    bucket: int,
    chunks: Iterable[pa.Table],
    older: Sequence[DataFileMeta],
) -> Iterator[pa.Table]:
    """The merged ``chunks`` without the keys that already have their first row in ``older``
    (Paimon's first-row lookup during compaction). Each level of ``older`` is one sorted run: its
    key columns are streamed alongside the chunks (``align_sorted_runs``), so the lookup holds a
    few batches per level, not the levels' keys."""
    schema = store.schema
    keys = list(schema.trimmed_primary_keys)
    key_fields = [schema.field(k) for k in keys]
    key_range = key_range_fn(store)
    batch_rows = run_batch_rows(1 + len({f.level for f in older}))

    def level_keys(files: list[DataFileMeta]) -> Iterator[pa.Table]:
        for f in sorted(files, key=lambda f: key_range(f)[0]):
            yield from iter_data_file(store, data_file_path(store, partition_dir, bucket, f), f, key_fields,
                                      batch_rows=batch_rows)

    levels = sorted({f.level for f in older})
    runs = [chunks, *(level_keys([f for f in older if f.level == level]) for level in levels)]
    for merged, *seen in align_sorted_runs(runs, keys):
        if merged is None:
            continue
        found = [s for s in seen if s is not None]
        if found:
            present = keys_present_in(merged, pa.concat_tables(found), keys)
            merged = merged.filter(pa.array(~present)) if present.any() else merged
        if merged.num_rows:
            yield merged


def _full_compaction_changelog(
    store: FileStore,
    partition_dir: str,
    bucket: int,
    levels: Levels,
    config: MergeConfig,
    merged: Iterable[pa.Table],
    drop_deletes: bool,
    namer: FileNamer,
) -> tuple[DataFileMeta, ...]:
    """The ``full-compaction`` changelog: the difference between the old top level and the new
    merged state, diffed step by step as both stream by in key order (``align_sorted_runs``).
    Only the changelog rows are held until written (their sequence number is the new state's
    highest, known at the end)."""
    schema = store.schema
    keys = list(schema.primary_keys)
    value_columns = list(schema.field_names)
    old_top = [f for f in _data_files(levels.all_files()) if f.level == levels.max_level]
    before = (
        chunk
        for section in partition_by_key_intervals(old_top, key_range_fn(store))
        for chunk in merge_section(store, partition_dir, bucket, section, list(schema.fields), config,
                                   drop_deletes=True)
    )
    seq_max: list[int] = []

    def new_state() -> Iterator[pa.Table]:
        for chunk in merged:
            state = chunk if drop_deletes else merge(chunk, keys, config, drop_deletes=True)
            if state.num_rows:
                seq_max.append(int(pc.max(state.column(SEQUENCE_NUMBER)).as_py()))
                yield state

    diffs = []
    for old, new in align_sorted_runs([before, new_state()], keys):
        # (A side without rows in this step: the other side's schema, empty; one exists.)
        old = old if old is not None else new.schema.empty_table()  # type: ignore[union-attr]
        new = new if new is not None else old.schema.empty_table()
        diff = diff_changelog(old.select(value_columns), new.select(value_columns), keys, value_columns)
        if diff.num_rows:
            diffs.append(diff)
    if not diffs:
        return ()
    rows = pa.concat_tables(diffs, promote_options="permissive")  # (steps may differ in nullability)
    return _write_changelog_rows(store, partition_dir, bucket, rows, max(seq_max, default=0), namer)


def _tee(chunks: Iterable[pa.Table], writer: RollingKvWriter) -> Iterator[pa.Table]:
    """``chunks`` passed on, each written by ``writer`` first."""
    for chunk in chunks:
        writer.write(chunk)
        yield chunk


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
    # A full-compaction changelog needs the rewrite: a file moved up to the top level unread would
    # bring its rows there without their +I/-U/+U (Paimon's FullChangelogMergeTreeCompactRewriter).
    full_changelog = (store.options.changelog_producer == "full-compaction"
                      and unit.output_level == levels.max_level)
    if (len(files) == 1 and files[0].level != unit.output_level and not unit.file_rewrite and not older
            and not full_changelog):
        f = files[0]
        if not drop_deletes or not holds_retractions(store, partition_dir, bucket, f):
            return CompactionResult((f,), (f.upgrade(unit.output_level),))
    schema = store.schema
    config = MergeConfig.from_options(schema.options, schema.primary_keys)
    chunks: Iterable[pa.Table] = _merged_chunks(store, partition_dir, bucket, files, config, drop_deletes)
    if older:
        chunks = _without_keys_above(store, partition_dir, bucket, chunks, older)
    writer = RollingKvWriter(DataFileWriter(
        store, partition_dir, bucket, namer=namer, file_source=FileSource.COMPACT, level=unit.output_level
    ))
    # Streamed: merged chunks go to the rolling writer as they come, so neither the unit's rows
    # nor its output are ever held whole.
    if not full_changelog:
        return CompactionResult(tuple(files), tuple(writer.write_all(chunks)))
    try:
        changelog = _full_compaction_changelog(
            store, partition_dir, bucket, levels, config, _tee(chunks, writer), drop_deletes, namer
        )
    except BaseException:
        writer.abort()
        raise
    return CompactionResult(tuple(files), tuple(writer.close()), changelog)


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
    return _write_changelog_rows(store, partition_dir, bucket, diff, seq_base, namer)


def _write_changelog_rows(
    store: FileStore, partition_dir: str, bucket: int, diff: pa.Table, seq_base: int, namer: FileNamer
) -> tuple[DataFileMeta, ...]:
    """Changelog rows (``rowkind`` + value columns, key order) written as changelog files, every
    row with sequence number ``seq_base``."""
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
