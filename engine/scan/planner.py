"""Scan planning: snapshot → pruned manifests → live files → picklable splits.

``TableScan`` is an immutable builder (``with_filter``, ``with_snapshot``, ``with_projection``);
``plan()`` does only metadata work, in the caller's process:

1. resolve the snapshot (latest, an id, a tag, or a point in time);
2. skip whole manifests whose partition statistics or bucket range cannot match;
3. decode the remaining manifests (cached), keep entries of matching partitions and buckets,
   and merge ADD/DELETE entries into the live file set;
4. skip files by statistics — value statistics for append tables, key statistics only for
   primary-key tables (a newer file may shadow an older row, so value statistics are unsafe) —
   and by data-file indexes under Paimon's rules (:mod:`engine.scan.file_index_filter`);
5. group by (partition, bucket) into splits; append buckets are cut by size, primary-key
   buckets stay whole (their files must be merged together). A split whose files do not
   overlap by key is marked ``raw_convertible`` and is read without merging. A data-evolution
   table's files are cut by row-id group (:mod:`engine.meta.row_ranges`), never dividing one; its
   split is ``raw_convertible`` only when no group holds more than one file, and only files alone
   in their group are pruned by statistics and indexes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import CorruptMetadataError, InvalidArgumentError, NoSuchColumnError, NoSuchSnapshotError
from engine.features import check_file_readable, check_readable, skipped_by_readers
from engine.history.expiry import explain_missing
from engine.history.retention_mark import check_visible
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.lsm.key_order import orderable_key
from engine.meta.binary_row import bucket_of, deserialize_row
from engine.meta.deletion_vectors import DeletionFile, deletion_files
from engine.meta.index_files import IndexStore
from engine.meta.manifest import DataFileMeta, ManifestEntry, ManifestFileMeta, SimpleStats, live_files
from engine.meta.manifest_arrow import ENTRY_SCHEMA, entries_from_table, live_entry_rows
from engine.meta.row_ranges import group_by_row_id, is_data_evolution
from engine.meta.snapshot import Snapshot
from engine.row_tracking import metadata_names
from engine.scan.file_index_filter import FileIndexFilter
from engine.scan.file_stats import decode_stats, key_stats_by_name, value_stats_by_name
from engine.scan.predicate import ColumnStats, Predicate, equality_values, split_by_columns
from engine.store import FileStore

SPLIT_TARGET_SIZE = 128 * 1024 * 1024
OPEN_FILE_COST = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class DataSplit:
    """Files of one (partition, bucket) to be read by one task."""

    snapshot_id: int
    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    raw_convertible: bool
    # Deletion-vector tables: the DVs of this split's files (files without one are absent).
    deletion_files: tuple[DeletionFile, ...] = ()
    # A split of the fallback branch (scan.fallback-branch, engine.scan.fallback): read with that
    # branch's table definition; None: the branch the scan was planned on.
    branch: str | None = None

    def deletion_file(self, name: str) -> DeletionFile | None:
        """The DV location of data file ``name``, or None when it has no DV."""
        for d in self.deletion_files:
            if d.data_file == name:
                return d
        return None

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def size(self) -> int:
        return sum(f.file_size for f in self.files)

    def without_stats(self) -> DataSplit:
        """This split with its files' key and value statistics left out: what a read task needs
        (statistics only prune during planning; readers never look at them)."""
        empty = SimpleStats.EMPTY
        files = tuple(
            replace(f, key_stats=empty, value_stats=empty, value_stats_cols=None) for f in self.files
        )
        return replace(self, files=files)


@dataclass(frozen=True, slots=True)
class Plan:
    snapshot: Snapshot | None
    splits: tuple[DataSplit, ...]

    @property
    def snapshot_id(self) -> int | None:
        return self.snapshot.id if self.snapshot else None


def _files_overlap(files: Sequence[DataFileMeta], key_of: Callable[[bytes], tuple[object, ...]]) -> bool:
    """True if any two files' [min_key, max_key] ranges intersect, or a file's range is inverted
    (a writer sorted it in another key order: engine.lsm.intervals takes it to span every key)."""
    if len(files) <= 1:
        return False
    ranges = sorted((key_of(f.min_key), key_of(f.max_key)) for f in files)
    if any(lo > hi for lo, hi in ranges):
        return True
    for (_, prev_max), (cur_min, _) in zip(ranges, ranges[1:], strict=False):
        if cur_min <= prev_max:
            return True
    return False


@dataclass(frozen=True)
class TableScan:
    """An immutable description of what to read; ``plan()`` turns it into splits."""

    store: FileStore
    snapshot_id: int | None = None
    filter: Predicate | None = None
    columns: tuple[str, ...] | None = None
    buckets: frozenset[int] | None = None
    pinned: Snapshot | None = None  # a snapshot given by value (a tag's, which may outlive its file)

    def with_snapshot(self, snapshot: int | Snapshot | None) -> TableScan:
        if isinstance(snapshot, Snapshot):
            return replace(self, snapshot_id=snapshot.id, pinned=snapshot)
        return replace(self, snapshot_id=snapshot, pinned=None)

    def with_filter(self, predicate: Predicate | None) -> TableScan:
        return replace(self, filter=predicate)

    def with_projection(self, columns: Sequence[str] | None) -> TableScan:
        if columns is not None:
            # Paimon's metadata columns (_ROW_ID, __paimon_file_path, ...) may be named too.
            names = {*self.store.schema.field_names, *metadata_names(self.store.schema)}
            unknown = [c for c in columns if c not in names]
            if unknown:
                raise NoSuchColumnError(
                    f"unknown column(s) {unknown}; the table has {list(self.store.schema.field_names)}"
                )
        return replace(self, columns=None if columns is None else tuple(columns))

    def with_buckets(self, buckets: Sequence[int] | None) -> TableScan:
        return replace(self, buckets=None if buckets is None else frozenset(buckets))

    # -- planning -------------------------------------------------------------------------------
    def resolve_snapshot(self) -> Snapshot | None:
        snapshots = self.store.snapshots
        if self.pinned is not None:
            return self.pinned
        if self.snapshot_id is None:
            return snapshots.latest()
        return snapshots.get(self.snapshot_id)

    def plan(self) -> Plan:
        snapshot = self.resolve_snapshot()
        if snapshot is None:
            return Plan(None, ())
        try:
            entries = self.read_entries(snapshot)
        except CorruptMetadataError as e:
            raise explain_missing(self.store, snapshot.id, e) from e
        splits = self.make_splits(snapshot.id, entries)
        if uses_deletion_vectors(self.store):
            try:
                splits = attach_deletion_files(self.store, snapshot, splits)
            except CorruptMetadataError as e:
                raise explain_missing(self.store, snapshot.id, e) from e
        return Plan(snapshot, tuple(splits))

    def read_entries(
        self, snapshot: Snapshot, manifests: list[ManifestFileMeta] | None = None
    ) -> list[ManifestEntry]:
        """Live ADD entries of the snapshot that survive partition/bucket/statistics pruning."""
        store = self.store
        partition_filter, _ = split_by_columns(self.filter, store.partition_keys)
        if partition_filter is None and self._bucket_set() is None:
            metas = manifests if manifests is not None else store.manifests.data_manifests(snapshot)
            live = live_files([e for meta in metas for e in store.manifests.read_entries(meta.file_name)])
        else:
            # Pruned on columns: records only for the entries the plan keeps.
            live = entries_from_table(self.read_entry_table(snapshot, manifests))
        if is_data_evolution(store.schema.options):
            # A file of a multi-file row-id group holds columns some of which a newer file of the
            # group replaced: its statistics and indexes prove nothing about the assembled rows.
            # Only files that are their range's whole group are pruned.
            live, kept = _whole_row_files(live)
        else:
            kept = []
        if self.filter is not None:
            live = [e for e in live if self._file_might_match(e.file)]
        index_filter = FileIndexFilter.of(store, self.filter)
        return kept + (live if index_filter is None else index_filter.apply(live))

    def read_entry_table(
        self, snapshot: Snapshot, manifests: list[ManifestFileMeta] | None = None
    ) -> pa.Table:
        """The snapshot's live ADD entries that survive partition and bucket pruning, as Arrow
        columns (:data:`~engine.meta.manifest_arrow.ENTRY_SCHEMA`); no statistics or file-index
        pruning. Opens only the manifests whose partition statistics and bucket range can match."""
        store = self.store
        partition_filter, _ = split_by_columns(self.filter, store.partition_keys)
        bucket_set = self._bucket_set()
        metas = manifests if manifests is not None else store.manifests.data_manifests(snapshot)
        partition_fields = [store.schema.field(k) for k in store.partition_keys]
        tables: list[pa.Table] = []
        for meta in metas:
            if partition_filter is not None and partition_fields:
                by_id = decode_stats(meta.partition_stats, partition_fields)
                stats = {f.name: by_id.get(f.id, ColumnStats()) for f in partition_fields}
                total = meta.num_added_files + meta.num_deleted_files
                if not partition_filter.might_match(stats, total):
                    continue
            if bucket_set is not None and meta.min_bucket is not None and meta.max_bucket is not None:
                if not any(meta.min_bucket <= b <= meta.max_bucket for b in bucket_set):
                    continue
            tables.append(store.manifests.read_entry_table(meta.file_name))
        if not tables:
            return ENTRY_SCHEMA.empty_table()
        entries = pa.concat_tables(tables).combine_chunks()
        if bucket_set is not None:
            wanted = pa.array(sorted(bucket_set), pa.int32())
            entries = entries.filter(pc.is_in(entries.column("bucket"), wanted))
        if partition_filter is not None:
            # The filter is evaluated once per distinct partition, then applied to all rows.
            distinct = pc.unique(entries.column("partition")).to_pylist()
            keep = []
            for raw in distinct:
                values = deserialize_row(raw, store.partition_types)
                row = dict(zip(store.partition_keys, values, strict=True))
                if partition_filter.eval_row(row) is not False:
                    keep.append(raw)
            entries = entries.filter(pc.is_in(entries.column("partition"), pa.array(keep, pa.binary())))
        return live_entry_rows(entries)

    def _bucket_set(self) -> set[int] | None:
        store = self.store
        buckets = None if self.buckets is None else set(self.buckets)
        num = store.options.bucket
        if num <= 0 or self.filter is None:
            return buckets
        keys = store.schema.logical_bucket_keys
        combos = equality_values(self.filter, keys)
        if combos is None:
            return buckets
        types = [store.schema.field(k).type for k in keys]
        try:
            pinned = {bucket_of(list(c), types, num) for c in combos}
        except Exception:  # noqa: BLE001 - a literal of an unexpected type: do not prune
            return buckets
        return pinned if buckets is None else buckets & pinned

    def _file_might_match(self, file: DataFileMeta) -> bool:
        if self.filter is None:
            return True
        store = self.store
        file_schema = store.schema_by_id(file.schema_id)
        if store.has_primary_key:
            key_filter, _ = split_by_columns(self.filter, store.schema.trimmed_primary_keys)
            if key_filter is None:
                return True
            return key_filter.might_match(key_stats_by_name(file, file_schema, store.schema), file.row_count)
        return self.filter.might_match(value_stats_by_name(file, file_schema, store.schema), file.row_count)

    def make_splits(self, snapshot_id: int, entries: Sequence[ManifestEntry]) -> list[DataSplit]:
        """The splits reading ``entries``; refuses (UnsupportedTableError, engine.features) a table
        or a data file dyntable cannot read as Paimon does, and skips what Paimon's readers skip."""
        store = self.store
        table = store.paths.root
        check_readable(store.schema, table)
        evolution = is_data_evolution(store.schema.options) and not store.has_primary_key
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
        for e in entries:
            if skipped_by_readers(e.bucket):
                continue
            check_file_readable(e.file, table, partial_columns=evolution)
            groups[(e.partition, e.bucket)].append(e)
        splits: list[DataSplit] = []
        key_types = [store.schema.field(k).type for k in store.schema.trimmed_primary_keys]
        for (partition, bucket), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            values = deserialize_row(partition, store.partition_types)
            total_buckets = group[0].total_buckets
            files = sorted((e.file for e in group), key=lambda f: (f.min_sequence_number, f.file_name))
            if store.has_primary_key:
                raw = not _files_overlap(files, lambda b: orderable_key(deserialize_row(b, key_types)))
                splits.append(
                    DataSplit(snapshot_id, partition, values, bucket, total_buckets, tuple(files), raw)
                )
                continue
            if evolution:  # whole row-id groups per split; raw only when no group needs assembling
                for packed in _pack_groups(group_by_row_id(files)):
                    flat = tuple(f for g in packed for f in g)
                    raw = all(len(g) == 1 for g in packed)
                    splits.append(DataSplit(snapshot_id, partition, values, bucket, total_buckets, flat, raw))
                continue
            for chunk in _pack_by_size(files):
                splits.append(
                    DataSplit(snapshot_id, partition, values, bucket, total_buckets, tuple(chunk), True)
                )
        return splits


def attach_deletion_files(
    store: FileStore, snapshot: Snapshot, splits: Sequence[DataSplit]
) -> list[DataSplit]:
    """``splits`` with the DVs of their files, from ``snapshot``'s index manifest (so time travel
    reads a snapshot with the DVs it had). Primary-key splits of a DV table are marked raw
    convertible: Paimon's batch reads of them skip level 0 and never merge."""
    index = IndexStore(store.io, store.paths)
    by_slot = deletion_files(index, index.read_manifest(snapshot.index_manifest))
    # Append tables: look a file's DV up in its whole partition (data-file names are unique), so
    # a bucket-unaware table's DVs are found whatever bucket their index entries name.
    by_partition: dict[bytes, dict[str, DeletionFile]] = {}
    for (partition, _), dvs in by_slot.items():
        by_partition.setdefault(partition, {}).update(dvs)
    out = []
    for s in splits:
        if store.has_primary_key:
            dvs = by_slot.get((s.partition, s.bucket), {})
        else:
            dvs = by_partition.get(s.partition, {})
        found = tuple(dvs[f.file_name] for f in s.files if f.file_name in dvs)
        raw = True if store.has_primary_key else s.raw_convertible  # (data evolution keeps its own)
        out.append(replace(s, deletion_files=found, raw_convertible=raw))
    return out


_T = TypeVar("_T")


def _pack(items: Sequence[_T], size: Callable[[_T], int]) -> list[list[_T]]:
    """Cut ``items`` into splits of about SPLIT_TARGET_SIZE (order kept; each item costs at
    least OPEN_FILE_COST)."""
    chunks: list[list[_T]] = []
    current: list[_T] = []
    weight = 0
    for item in items:
        cost = max(size(item), OPEN_FILE_COST)
        if current and weight + cost > SPLIT_TARGET_SIZE:
            chunks.append(current)
            current, weight = [], 0
        current.append(item)
        weight += cost
    if current:
        chunks.append(current)
    return chunks


def _pack_by_size(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """A bucket's append files cut into splits of about SPLIT_TARGET_SIZE (order kept)."""
    return _pack(files, lambda f: f.file_size)


def _pack_groups(groups: Sequence[list[DataFileMeta]]) -> list[list[list[DataFileMeta]]]:
    """Data-evolution groups (in row-id order) cut into splits of about SPLIT_TARGET_SIZE; a
    group is never divided (its files are read together)."""
    return _pack(groups, lambda g: sum(f.file_size for f in g))


def _whole_row_files(entries: list[ManifestEntry]) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
    """A data-evolution table's live entries as (files alone in their row-id range and holding
    whole rows: prunable by their own statistics, the others: kept)."""
    by_bucket: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
    for e in entries:
        by_bucket[(e.partition, e.bucket)].append(e)
    alone: list[ManifestEntry] = []
    kept: list[ManifestEntry] = []
    for bucket_entries in by_bucket.values():
        of = {id(e.file): e for e in bucket_entries}
        for g in group_by_row_id([e.file for e in bucket_entries]):
            target = alone if len(g) == 1 and g[0].write_cols is None else kept
            target.extend(of[id(f)] for f in g)
    return alone, kept


def store_at(store: FileStore, snapshot: Snapshot | None) -> FileStore:
    """``store`` as ``snapshot`` was written: bound to the schema the snapshot names.

    Paimon reads a time-travel snapshot with the schema it was committed with, not the latest
    (a column added later does not exist in it; a renamed one has its old name). ``None`` (the
    latest) or a snapshot of the store's own schema gives ``store`` itself.
    """
    if snapshot is None or snapshot.schema_id == store.schema.id:
        return store
    return store.with_schema(store.schema_by_id(snapshot.schema_id))


def resolve_time_travel(
    store: FileStore,
    snapshot_id: int | None = None,
    tag: str | None = None,
    timestamp_millis: int | None = None,
) -> Snapshot | None:
    """Turn one of (snapshot id, tag name, point in time) into a snapshot (None = latest)."""
    given = [x for x in (snapshot_id, tag, timestamp_millis) if x is not None]
    if len(given) > 1:
        raise InvalidArgumentError("give only one of snapshot id, tag name and timestamp for time travel")
    if snapshot_id is not None:
        snap = store.snapshots.get(snapshot_id)  # raises NoSuchSnapshotError with a clear message
        check_visible(store, snap, f"time travel to snapshot {snapshot_id}")
        return snap
    if tag is not None:
        from engine.meta.refs import TagStore

        snap = TagStore(store.io, store.paths).get(tag).snapshot
        check_visible(store, snap, f"time travel to tag '{tag}'")
        return snap
    if timestamp_millis is not None:
        found = store.snapshots.at_or_before(timestamp_millis)
        if found is None:
            raise NoSuchSnapshotError(f"the table has no snapshot at or before timestamp {timestamp_millis}")
        check_visible(store, found, f"time travel to timestamp {timestamp_millis}")
        return found
    return None
