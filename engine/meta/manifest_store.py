"""Reading and writing manifest files and manifest lists of one table.

Manifests are immutable and referenced by name, so decoded contents are cached process-wide
by path (bounded by entry count): planning a table twice, or committing after planning, decodes
each manifest once. Writing computes the per-manifest partition statistics and bucket/level
ranges that readers use to skip whole manifests.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TypeVar

import pyarrow as pa

from engine.errors import CorruptMetadataError
from engine.io import FileIO
from engine.meta import manifest_arrow
from engine.meta.binary_row import deserialize_row, serialize_row, timestamp_epoch_nanos
from engine.meta.manifest import (
    EntryRef,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    read_manifest_entries,
    read_manifest_list,
    read_manifest_list_refs,
    read_manifest_refs,
    write_manifest_entries,
    write_manifest_list,
)
from engine.meta.manifest_arrow import entries_from_table, read_manifest_table, refs_from_table
from engine.meta.paths import FileNamer, TablePaths
from engine.meta.snapshot import Snapshot
from engine.types import DataType, TypeRoot

_TIMESTAMPS = (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ)

_T = TypeVar("_T")


class _LruCache:
    """A small thread-safe LRU keyed by path, bounded by the number of cached items' weight."""

    def __init__(self, max_weight: int) -> None:
        self._items: OrderedDict[str, tuple[int, object]] = OrderedDict()
        self._weight = 0
        self._max = max_weight
        self._lock = threading.Lock()

    def get(self, key: str) -> object | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[1]

    def put(self, key: str, value: object, weight: int) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = (weight, value)
            self._weight += weight
            while self._weight > self._max and len(self._items) > 1:
                _, (w, _) = self._items.popitem(last=False)
                self._weight -= w


_MANIFEST_CACHE = _LruCache(max_weight=2_000_000)  # manifest entries and list entries
# Manifests decoded into Arrow columns (engine.meta.manifest_arrow), weighed by their bytes.
_TABLE_CACHE = _LruCache(max_weight=256 << 20)


def clear_caches() -> None:
    """Forget every decoded manifest (benchmarks measuring cold reads; never needed for correctness:
    manifests are immutable)."""
    for cache in (_MANIFEST_CACHE, _TABLE_CACHE):
        with cache._lock:
            cache._items.clear()
            cache._weight = 0


def partition_stats(partitions: Sequence[bytes], partition_types: Sequence[DataType]) -> SimpleStats:
    """Min/max/null-count over the partition rows of a manifest's entries."""
    if not partition_types:
        return SimpleStats.EMPTY
    n = len(partition_types)
    mins: list[object] = [None] * n
    maxs: list[object] = [None] * n
    nulls = [0] * n
    # Timestamps decode to datetime, or numpy.datetime64 when they carry nanoseconds: compare
    # them as epoch nanoseconds, never as objects of two kinds.
    keys = [
        (lambda v, t=t: timestamp_epoch_nanos(v, t, 0)) if t.root in _TIMESTAMPS else (lambda v: v)
        for t in partition_types
    ]
    for raw in set(partitions):
        values = deserialize_row(raw, partition_types)
        for i, v in enumerate(values):
            if v is None:
                nulls[i] += 1
                continue
            key = keys[i]
            if mins[i] is None or key(v) < key(mins[i]):
                mins[i] = v
            if maxs[i] is None or key(v) > key(maxs[i]):
                maxs[i] = v
    return SimpleStats(
        serialize_row(mins, partition_types), serialize_row(maxs, partition_types), tuple(nulls)
    )


#: Manifests at least this large are decoded to records through Arrow columns. Below it fastavro's
#: dicts cost as little, and no Arrow array is built: the first array makes pyarrow import pandas
#: (~0.25 s), which a process that only plans small deltas (a stream's planner) should not pay.
ARROW_DECODE_MIN_BYTES = 64 * 1024
# A manifest is rolled at this many entries (a few MB of Avro): one manifest's decode stays bounded.
MANIFEST_ROLL_ENTRIES = 20_000


def _decode_entries(data: bytes) -> list[ManifestEntry]:
    """A manifest's records, through Arrow columns when polars decodes them and the manifest is
    large (about a third of the cost of fastavro's dicts), else through fastavro's dicts directly."""
    if manifest_arrow.USE_POLARS and len(data) >= ARROW_DECODE_MIN_BYTES:
        return entries_from_table(read_manifest_table(data))
    return read_manifest_entries(data)


def _decode_refs(data: bytes) -> list[EntryRef]:
    """A manifest's :class:`EntryRef` records: a large manifest through Arrow columns (polars decodes
    it natively, with the same checks; the per-record dicts of fastavro cost about twice as much
    as the whole decode), a small one through fastavro's dicts, as :func:`_decode_entries` does."""
    if manifest_arrow.USE_POLARS and len(data) >= ARROW_DECODE_MIN_BYTES:
        return refs_from_table(read_manifest_table(data))
    return read_manifest_refs(data)


def _named(path: str, decode: Callable[[bytes], _T], data: bytes) -> _T:
    """Decode a manifest (list); a decode error names the file, which the decoder cannot know."""
    try:
        return decode(data)
    except CorruptMetadataError as e:
        raise CorruptMetadataError(f"{path}: {e}") from e


class ManifestStore:
    """Manifest I/O for one table (manifests are shared by every branch)."""

    def __init__(self, io: FileIO, paths: TablePaths, codec: str = "zstd") -> None:
        self.io = io
        self.paths = paths
        self.codec = codec
        self.namer = FileNamer()

    def read_list(self, name: str) -> list[ManifestFileMeta]:
        path = self.paths.manifest_file(name)
        cached = _MANIFEST_CACHE.get(path)
        if cached is not None:
            return cached  # type: ignore[return-value]
        metas = _named(path, read_manifest_list, self._read(path, "manifest list"))
        _MANIFEST_CACHE.put(path, metas, max(1, len(metas)))
        return metas

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """The data manifests of a snapshot, in the order their entries apply (base, then delta)."""
        return self.read_list(snapshot.base_manifest_list) + self.read_list(snapshot.delta_manifest_list)

    def read_entries(self, name: str) -> list[ManifestEntry]:
        path = self.paths.manifest_file(name)
        cached = _MANIFEST_CACHE.get(path)
        if cached is not None:
            return cached  # type: ignore[return-value]
        entries = _named(path, _decode_entries, self._read(path, "manifest"))
        _MANIFEST_CACHE.put(path, entries, max(1, len(entries)))
        return entries

    def read_entry_table(self, name: str) -> pa.Table:
        """A manifest's entries as Arrow columns (:data:`~engine.meta.manifest_arrow.ENTRY_SCHEMA`),
        for readers that look at every entry at once; cached by the manifest's immutable name."""
        path = self.paths.manifest_file(name)
        cached = _TABLE_CACHE.get(path)
        if isinstance(cached, pa.Table):
            return cached
        table = _named(path, read_manifest_table, self._read(path, "manifest"))
        _TABLE_CACHE.put(path, table, max(1, table.nbytes))
        return table

    def read_list_refs(self, name: str) -> list[tuple[str, int]]:
        """A manifest list's ``(manifest name, byte size)`` pairs; from the cache if the list was
        decoded before, else decoded without statistics and not cached (see :meth:`read_refs`)."""
        path = self.paths.manifest_file(name)
        cached = _MANIFEST_CACHE.get(path)
        if cached is not None:
            return [(m.file_name, m.file_size) for m in cached]  # type: ignore[attr-defined]
        return _named(path, read_manifest_list_refs, self._read(path, "manifest list"))

    def read_refs(self, name: str) -> list[ManifestEntry] | list[EntryRef]:
        """A manifest's entries for deciding which files are in use: the cached entries if the
        manifest was decoded before, else :class:`EntryRef` records (no statistics), which are not
        cached — a sweep over every manifest of a table must not evict what planning uses."""
        path = self.paths.manifest_file(name)
        cached = _MANIFEST_CACHE.get(path)
        if cached is not None:
            return cached  # type: ignore[return-value]
        table = _TABLE_CACHE.get(path)
        if isinstance(table, pa.Table):
            return refs_from_table(table)
        return _named(path, _decode_refs, self._read(path, "manifest"))

    def _read(self, path: str, what: str) -> bytes:
        try:
            return self.io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptMetadataError(
                f"{what} {path} is referenced by a snapshot but missing; the table's metadata is damaged"
            ) from None

    def write_entries(
        self, entries: Sequence[ManifestEntry], schema_id: int, partition_types: Sequence[DataType]
    ) -> ManifestFileMeta:
        """Write one manifest file and describe it for a manifest list."""
        name = self.namer.manifest()
        data = write_manifest_entries(entries, codec=self.codec)
        path = self.paths.manifest_file(name)
        self.io.write_new(path, data)
        _MANIFEST_CACHE.put(path, list(entries), max(1, len(entries)))
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        return ManifestFileMeta(
            file_name=name,
            file_size=len(data),
            num_added_files=sum(1 for e in entries if e.kind is FileKind.ADD),
            num_deleted_files=sum(1 for e in entries if e.kind is FileKind.DELETE),
            partition_stats=partition_stats([e.partition for e in entries], partition_types),
            schema_id=schema_id,
            min_bucket=min(buckets) if buckets else None,
            max_bucket=max(buckets) if buckets else None,
            min_level=min(levels) if levels else None,
            max_level=max(levels) if levels else None,
        )

    def write_entries_rolling(
        self,
        entries: Sequence[ManifestEntry],
        schema_id: int,
        partition_types: Sequence[DataType],
        max_entries: int = MANIFEST_ROLL_ENTRIES,
    ) -> list[ManifestFileMeta]:
        """Write entries as one or more manifests of bounded size."""
        return [
            self.write_entries(entries[i : i + max_entries], schema_id, partition_types)
            for i in range(0, len(entries), max_entries)
        ]

    def write_list(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        """Write a manifest list; returns (name, byte size)."""
        name = self.namer.manifest_list()
        data = write_manifest_list(metas, codec=self.codec)
        path = self.paths.manifest_file(name)
        self.io.write_new(path, data)
        _MANIFEST_CACHE.put(path, list(metas), max(1, len(metas)))
        return name, len(data)

    def delete(self, name: str) -> None:
        self.io.delete(self.paths.manifest_file(name))
