"""Deletion vectors of primary-key tables: maintained by compaction, as Paimon's lookup compaction does.

A table with ``deletion-vectors.enabled`` is read without merging: readers skip level 0 and read
every other file minus its deletion vector (DV). So among the files of levels >= 1 each key must
have at most one row that no DV marks. Compaction keeps it so (Paimon's
``LookupMergeTreeCompactRewriter`` with a ``DeletionVectorsMaintainer``):

```
 every write: all of level 0 is compacted up (ForceUpLevel0), deletes are always dropped
 unit rows = unit files minus their DVs ──merge──►  keys the unit has only from level 0
                                                       │ look up, level by level upwards, in the
                                                       ▼ files above the output level (minus DVs)
                         found: mark that row in its file's DV; for merge engines whose result
                         depends on older values (partial-update, aggregation, sequence.field,
                         ignore-delete) the found row joins the merge
 rewritten files lose their DVs; a lone level-0 file may be upgraded (no rewrite) after its lookup
```
A unit of level-0 files only, with pairwise disjoint keys, under a merge engine where the newest
row wins, is not even merged: after the lookup each file's own retractions are marked in its own
DV and the files move up unchanged, one level each (``_move_level0_up``), so a write's compaction
reads the written keys and writes nothing but DVs.
Keys the unit already has from a file above level 0 need no lookup: that row was the key's only
live row above level 0. A unit with nothing to look up (no level-0 file, or nothing above its
output level, as in a full compaction) is merged section by section in bounded chunks
(``engine.read.section_merge``) and written as it goes. A unit with keys to look up is streamed
too (``engine.merge.streaming.aligned_rows``): each key-ordered chunk of its merge is looked
up, merged with the older rows found and written before the next is read, so a compaction holds
a chunk, the batches in flight and at most one file per level above, never the unit whole.
Everything is vectorised: key matching uses the LSM's sort codes
(``engine.merge.functions.keys_present_in``: Paimon's key equality), positions are numpy arrays, and
DVs are Roaring bitmaps (``engine.meta.deletion_vectors``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.files.reader import SEQUENCE_NUMBER, VALUE_KIND, data_file_path, iter_data_file, read_data_file
from engine.lsm.compact_strategy import CompactUnit
from engine.lsm.intervals import partition_by_key_intervals
from engine.lsm.key_order import orderable_key
from engine.lsm.levels import Levels
from engine.merge import streaming
from engine.merge.config import MergeConfig
from engine.merge.functions import key_sort_codes, keys_present_in, merge
from engine.merge.streaming import aligned_rows, run_batch_rows
from engine.meta.deletion_vectors import DeletionVector, read_deletion_vectors, write_deletion_vectors
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexFileMeta, IndexManifestEntry, IndexStore
from engine.meta.manifest import DataFileMeta, FileSource
from engine.meta.paths import FileNamer
from engine.options import DELETION_VECTORS_BITMAP64
from engine.read.deletion_vectors import apply_deletion_vector_batches
from engine.read.section_merge import merge_section
from engine.store import FileStore
from engine.write.compactor import CompactionResult, holds_retractions, key_range_fn
from engine.write.file_writer import DataFileWriter
from engine.write.kv_rolling import RollingKvWriter

_ADD_KINDS = (0, 2)  # +I, +U


class BucketDeletionVectors:
    """The DVs of one bucket's data files, changed by compaction (Paimon's ``DeletionVectorsMaintainer``).

    ``modified`` tells whether a new index file must be written for the commit.
    """

    def __init__(self, dvs: Mapping[str, DeletionVector] | None = None, *, bitmap64: bool = False) -> None:
        self._dvs: dict[str, DeletionVector] = dict(dvs or {})
        self.bitmap64 = bitmap64
        self.modified = False

    @classmethod
    def load(
        cls, store: FileStore, entries: Iterable[IndexManifestEntry], partition: bytes, bucket: int
    ) -> BucketDeletionVectors:
        """The bucket's DVs as an index manifest (its ``entries``) lists them."""
        index = IndexStore(store.io, store.paths)
        dvs: dict[str, DeletionVector] = {}
        for e in entries:
            if e.file.index_type != DELETION_VECTORS_INDEX or (e.partition, e.bucket) != (partition, bucket):
                continue
            dvs.update(read_deletion_vectors(index, e.file))
        return cls(dvs, bitmap64=bool(store.options.get(DELETION_VECTORS_BITMAP64)))

    def get(self, file_name: str) -> DeletionVector | None:
        return self._dvs.get(file_name)

    def items(self) -> list[tuple[str, DeletionVector]]:
        return sorted(self._dvs.items())

    def mark(self, file_name: str, positions: np.ndarray) -> None:
        """Mark rows (0-based positions) of a data file as deleted."""
        if len(positions) == 0:
            return
        new = DeletionVector.from_positions(positions, bitmap64=self.bitmap64)
        old = self._dvs.get(file_name)
        if old is not None and old.bitmap64 != new.bitmap64:
            new = new.to_bitmap64() if old.bitmap64 else new
            old = old.to_bitmap64() if new.bitmap64 else old
        self._dvs[file_name] = new if old is None else old.merge(new)
        self.modified = True

    def remove(self, file_names: Iterable[str]) -> None:
        """Forget the DVs of data files that a compaction rewrote (they are gone)."""
        for name in file_names:
            if self._dvs.pop(name, None) is not None:
                self.modified = True

    def write(self, index: IndexStore) -> IndexFileMeta | None:
        """A new index file with every DV of the bucket when something changed, else None.

        The bucket's previous index file is replaced by it in the index manifest (Paimon's
        bucketed combiner); like Paimon 0.9, a bucket whose last DV went gets a file without
        ranges.
        """
        if not self.modified:
            return None
        self.modified = False
        return write_deletion_vectors(index, dict(self.items()))


def live_rows(
    store: FileStore,
    part_dir: str,
    bucket: int,
    f: DataFileMeta,
    fields: Sequence,
    system_columns: Sequence[str],
    dvs: BucketDeletionVectors,
) -> tuple[pa.Table, np.ndarray]:
    """The rows of ``f`` its DV leaves, and their positions in the file."""
    path = store.paths.data_file(part_dir, bucket, f.file_name, f.external_path)
    table = read_data_file(store, path, f, fields, system_columns)
    positions = np.arange(table.num_rows, dtype=np.int64)
    dv = dvs.get(f.file_name)
    if dv is None or dv.is_empty():
        return table, positions
    keep = dv.keep_mask(table.num_rows)
    return table.filter(pa.array(keep)), positions[keep]


def needs_older_values(config: MergeConfig) -> bool:
    """Whether a key's merged result can depend on its older row (else the newest row wins)."""
    return not (config.engine == "deduplicate" and not config.sequence_fields and not config.ignore_delete)


def _drop_retractions(table: pa.Table) -> pa.Table:
    return table.filter(pc.is_in(table.column(VALUE_KIND), value_set=pa.array(_ADD_KINDS, pa.int8())))


def lookup_above(
    store: FileStore,
    part_dir: str,
    bucket: int,
    probe: pa.Table,
    above: Sequence[DataFileMeta],
    dvs: BucketDeletionVectors,
    *,
    with_values: bool,
    cache: AboveFiles | None = None,
) -> pa.Table | None:
    """Find the live rows of ``probe``'s keys in ``above`` and mark them deleted in their DVs.

    ``probe`` is sorted by key (merge output) with distinct keys. Levels are searched from the
    lowest upwards and a key found stops there (Paimon's ``LookupLevels``); only files whose key
    range meets the probe's are read, and only their key columns unless ``with_values``. Every
    key is looked up on its own, so probing a stream of key-ordered chunks one after another finds
    and marks exactly the rows one probe of all their keys would; ``cache`` (one per stream) then
    keeps the file of each level that reaches past the chunk, so no file is read twice.

    Returns:
        The found rows as key-value rows (``with_values``), else None.
    """
    schema = store.schema
    trimmed = list(schema.trimmed_primary_keys)
    keys = list(schema.primary_keys)
    fields = list(schema.fields) if with_values else [schema.field(k) for k in keys]
    system = (SEQUENCE_NUMBER, VALUE_KIND) if with_values else ()
    key_range = key_range_fn(store)
    found: list[pa.Table] = []
    remaining = probe.select(keys)
    if cache is not None and remaining.num_rows:
        cache.forget_below(orderable_key([remaining.column(k)[0].as_py() for k in trimmed]))
    for level in sorted({f.level for f in above}):
        if remaining.num_rows == 0:
            break
        lo = orderable_key([remaining.column(k)[0].as_py() for k in trimmed])
        hi = orderable_key([remaining.column(k)[remaining.num_rows - 1].as_py() for k in trimmed])
        hits: list[pa.Table] = []
        for f in above:
            if f.level != level:
                continue
            f_lo, f_hi = key_range(f)
            if f_hi < lo or f_lo > hi:
                continue
            if cache is None:
                rows, positions = live_rows(store, part_dir, bucket, f, fields, system, dvs)
            else:
                rows, positions = cache.live_rows(
                    f, f_hi, lo, hi, partial(live_rows, store, part_dir, bucket, f, fields, system, dvs))
            matched = keys_present_in(rows, remaining, keys)
            if not matched.any():
                continue
            dvs.mark(f.file_name, positions[matched])
            hits.append(rows.filter(pa.array(matched)))
        if hits:
            level_hits = pa.concat_tables(hits)
            if with_values:
                found.append(level_hits)
            still = ~keys_present_in(remaining, level_hits.select(keys), keys)
            remaining = remaining.filter(pa.array(still))
    if not with_values:
        return None
    return pa.concat_tables(found) if found else None


class AboveFiles:
    """The live rows of files above the output level, kept between the lookups of one key-ordered
    stream of probes: a file is kept only while it reaches past the last probe's highest key (the
    next probe starts above it), so at most one file per level is held, and none is read twice.
    Rows read once stay valid for later probes: the marks made meanwhile are of earlier keys. Each
    probe is matched against the slice of a file's rows within its key range (found by bisection:
    the rows are in key order), so a file's rows are matched about once, not once per probe."""

    def __init__(self, trimmed_keys: Sequence[str]) -> None:
        self._trimmed = list(trimmed_keys)
        self._held: dict[str, tuple[tuple, pa.Table, np.ndarray]] = {}

    def forget_below(self, lo: tuple) -> None:
        """Drop the files that end below ``lo`` (the next probe's lowest key)."""
        self._held = {name: v for name, v in self._held.items() if not v[0] < lo}

    def live_rows(self, f: DataFileMeta, f_hi: tuple, probe_lo: tuple, probe_hi: tuple,
                  read: Callable[[], tuple[pa.Table, np.ndarray]]) -> tuple[pa.Table, np.ndarray]:
        """The live rows of ``f`` (and their positions) whose keys lie in ``[probe_lo, probe_hi]``."""
        held = self._held.get(f.file_name)
        if held is not None:
            rows, positions = held[1], held[2]
        else:
            rows, positions = read()
            if f_hi > probe_hi:
                self._held[f.file_name] = (f_hi, rows, positions)
        start = self._first_at_least(rows, probe_lo, 0)
        end = self._first_at_least(rows, probe_hi, start, above=True)
        return rows.slice(start, end - start), positions[start:end]

    def _first_at_least(self, rows: pa.Table, key: tuple, lo: int, *, above: bool = False) -> int:
        """The first row from ``lo`` on whose key is >= ``key`` (``above``: > ``key``)."""
        columns = [rows.column(k) for k in self._trimmed]
        hi = rows.num_rows
        while lo < hi:
            mid = (lo + hi) // 2
            at = orderable_key([c[mid].as_py() for c in columns])
            if at < key or (above and at == key):
                lo = mid + 1
            else:
                hi = mid
        return lo


def _move_level0_up(
    store: FileStore,
    part_dir: str,
    bucket: int,
    levels: Levels,
    unit: CompactUnit,
    files: Sequence[DataFileMeta],
    above: Sequence[DataFileMeta],
    dvs: BucketDeletionVectors,
) -> CompactionResult | None:
    """A unit of level-0 files only, moved up without rewriting them when that is exact; else None.

    For merge engines where the newest row wins, level-0 files whose keys are pairwise disjoint need
    no merge among themselves: each key's row in them is its newest. Their keys are looked up above
    the output level and the older rows found there are marked in DVs. A file's own retractions
    (``-U``/``-D``) are then marked in its own DV, which drops them for every reader of levels
    >= 1 exactly as a rewrite without them would (a file of retractions only is dropped). Each
    file moves up unchanged into a level of its own (a level is one sorted run, and these files'
    key ranges interleave): the oldest into the output level, the next one a level below, and so
    on; those levels are empty (the unit took every run below them), so this needs one free level
    per file. The cost follows the written rows: their keys and kinds are read, nothing is
    rewritten, and the levels below the output keep their files.
    """
    output = unit.output_level
    if not files or any(f.level != 0 or dvs.get(f.file_name) is not None for f in files):
        return None  # (a level-0 file with a DV: its rows would need reading minus the DV)
    schema = store.schema
    keys = list(schema.primary_keys)
    key_fields = [schema.field(k) for k in keys]
    parts: list[pa.Table] = []
    kept: list[tuple[DataFileMeta, np.ndarray]] = []  # (file, positions of its retractions)
    for f in files:
        path = store.paths.data_file(part_dir, bucket, f.file_name, f.external_path)
        rows = read_data_file(store, path, f, key_fields, (VALUE_KIND,))
        retract = ~np.isin(rows.column(VALUE_KIND).to_numpy(), _ADD_KINDS)
        if not retract.all():
            kept.append((f, np.flatnonzero(retract)))
        parts.append(rows.select(keys))
    targets = list(range(output, output - len(kept), -1))
    if targets and targets[-1] < 1:
        return None
    taken = {f.file_name for f in files}
    if any(f.level in targets and f.file_name not in taken for f in levels.all_files()):
        return None
    probe = pa.concat_tables(parts)
    # Sorted in Paimon's key order, with its key equality (floats as Double.compare): the lookup
    # takes the probe's key range from its first and last rows.
    codes = key_sort_codes([probe.column(k) for k in keys])
    order = np.lexsort(list(reversed(codes))) if len(codes) > 1 else np.argsort(codes[0], kind="stable")
    if len(order) > 1:
        differs = np.zeros(len(order) - 1, dtype=bool)
        for code in codes:
            ordered = code[order]
            differs |= ordered[1:] != ordered[:-1]
        if not differs.all():
            return None  # a key in two level-0 files: only a merge by sequence number tells the winner
    if above and probe.num_rows:
        lookup_above(store, part_dir, bucket, probe.take(pa.array(order)), above, dvs, with_values=False)
    oldest_first = sorted(kept, key=lambda fr: (fr[0].max_sequence_number, fr[0].min_sequence_number))
    moved = []
    for (f, retractions), level in zip(oldest_first, targets, strict=True):
        dvs.mark(f.file_name, retractions)
        moved.append(f.upgrade(level))
    return CompactionResult(tuple(files), tuple(moved))


def compact_unit(
    store: FileStore,
    part_dir: str,
    bucket: int,
    levels: Levels,
    unit: CompactUnit,
    dvs: BucketDeletionVectors,
    namer: FileNamer,
) -> CompactionResult:
    """Do one compaction unit of a DV table's bucket, updating ``dvs`` (see the module docstring)."""
    files: list[DataFileMeta] = [f for f in unit.files if isinstance(f, DataFileMeta)]
    schema = store.schema
    config = MergeConfig.from_options(schema.options, schema.primary_keys)
    with_values = needs_older_values(config)
    output = unit.output_level
    inside = {f.file_name for f in files}
    above = [f for f in levels.all_files() if isinstance(f, DataFileMeta) and f.level > output
             and f.file_name not in inside]
    if len(files) == 1 and files[0].level != output and not unit.file_rewrite and files[0].level != 0:
        return CompactionResult((files[0],), (files[0].upgrade(output),))  # keeps its name, so its DV
    if not with_values and not unit.file_rewrite:
        moved = _move_level0_up(store, part_dir, bucket, levels, unit, files, above, dvs)
        if moved is not None:
            return moved
    if len(files) == 1 and files[0].level != output and not unit.file_rewrite:
        f = files[0]
        # A level-0 file may move up unchanged when nothing above it changes its rows' values.
        if not holds_retractions(store, part_dir, bucket, f) and (not above or not with_values):
            if above:
                probe = read_data_file(
                    store, store.paths.data_file(part_dir, bucket, f.file_name, f.external_path), f,
                    [schema.field(k) for k in schema.primary_keys],
                )
                lookup_above(store, part_dir, bucket, probe, above, dvs, with_values=False)
            return CompactionResult((f,), (f.upgrade(output),))
    has_level0 = any(f.level == 0 for f in files)
    writer = DataFileWriter(
        store, part_dir, bucket, namer=namer, file_source=FileSource.COMPACT, level=output
    )
    if not (has_level0 and above):
        # Nothing to look up above the output level (e.g. a full compaction): the unit's sections
        # are merged and written chunk by chunk, each file read minus its DV, in bounded memory.
        chunks = (
            _drop_retractions(merged)
            for section in partition_by_key_intervals(files, key_range_fn(store))
            for merged in merge_section(
                store, part_dir, bucket, section, list(schema.fields), config, drop_deletes=False,
                deletion_vector=lambda f: dvs.get(f.file_name),
            )
        )
        after = tuple(RollingKvWriter(writer).write_all(chunks))
        dvs.remove(inside)
        return CompactionResult(tuple(files), after)
    # Keys looked up above the output level: the unit is merged chunk by chunk as well, each chunk's
    # keys looked up (and the older rows found merged in) before it is written.
    looked_up = _looked_up_chunks(store, part_dir, bucket, files, above, dvs, config, with_values)
    after = tuple(RollingKvWriter(writer).write_all(looked_up))
    dvs.remove(inside)
    return CompactionResult(tuple(files), after)


_FROM_UPPER = "__dyntable_from_upper"  # per unit row: whether its file is above level 0


def _looked_up_chunks(
    store: FileStore,
    part_dir: str,
    bucket: int,
    files: Sequence[DataFileMeta],
    above: Sequence[DataFileMeta],
    dvs: BucketDeletionVectors,
    config: MergeConfig,
    with_values: bool,
) -> Iterator[pa.Table]:
    """A unit with level-0 files and files above its output level, merged in key-ordered chunks
    (its sections' runs streamed batch by batch, each file minus its DV, cut into key-aligned steps
    of about ``MERGE_CHUNK_ROWS`` rows). Per chunk: the keys it has from no unit file above level 0
    (those are the keys whose live row above level 0 may lie above the output level) are looked up
    there, the rows found are marked in their DVs (and, ``with_values``, merged in as the older
    rows), and retractions are dropped. A key's unit rows all fall in one chunk, and the lookup is
    per key, so the chunks are the whole unit's merge and lookup cut by key."""
    schema = store.schema
    keys = list(schema.primary_keys)
    fields = list(schema.fields)
    chunk_rows = streaming.MERGE_CHUNK_ROWS
    cache = AboveFiles(schema.trimmed_primary_keys)
    for section in partition_by_key_intervals(files, key_range_fn(store)):
        runs = [[f for f in run.files if isinstance(f, DataFileMeta)] for run in section]
        batch_rows = run_batch_rows(len(runs), chunk_rows)
        streams = [_tagged_run(store, part_dir, bucket, run, fields, dvs, batch_rows) for run in runs]
        for rows in aligned_rows(streams, keys, chunk_rows):
            upper = rows.filter(rows.column(_FROM_UPPER)).select(keys)
            merged = merge(rows.drop_columns([_FROM_UPPER]), keys, config, drop_deletes=False)
            probe = merged
            if upper.num_rows:
                probe = merged.filter(pa.array(~keys_present_in(merged, upper, keys)))
            older = lookup_above(store, part_dir, bucket, probe, above, dvs,
                                 with_values=with_values, cache=cache)
            if older is not None and older.num_rows:
                older = older.select(merged.column_names).cast(merged.schema)
                merged = merge(pa.concat_tables([older, merged]), keys, config, drop_deletes=False)
            # With DVs deletes are always dropped: every older row of a deleted key above the output
            # level was just marked in its DV, and readers of levels >= 1 do not merge.
            yield _drop_retractions(merged)


def _tagged_run(
    store: FileStore,
    part_dir: str,
    bucket: int,
    run: Sequence[DataFileMeta],
    fields: Sequence,
    dvs: BucketDeletionVectors,
    batch_rows: int,
) -> Iterator[pa.Table]:
    """A sorted run's kv rows minus DVs, batch by batch, each row tagged with whether its file
    lies above level 0."""
    for f in run:
        path = data_file_path(store, part_dir, bucket, f)
        batches = iter_data_file(store, path, f, fields, (SEQUENCE_NUMBER, VALUE_KIND), batch_rows=batch_rows)
        for batch in apply_deletion_vector_batches(batches, dvs.get(f.file_name), f.file_name):
            yield batch.append_column(_FROM_UPPER, pa.repeat(pa.scalar(f.level > 0), batch.num_rows))
