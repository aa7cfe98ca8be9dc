"""System tables over one snapshot's files: ``$files``, ``$manifests``, ``$partitions``, ``$buckets``.

One job: read one snapshot's manifest lists (``$manifests``) or plan its live files once
(``$files``, ``$partitions``, ``$buckets``) and lay them out as Paimon's rows. Invariants:

* cost follows the live files of the chosen snapshot, never the history: one
  ``TableScan.read_entries`` (manifests are cached process-wide) per call;
* ``$partitions`` / ``$buckets`` aggregate with pyarrow ``group_by``; Python touches each
  distinct partition once (to format it), never each row of table data;
* statistics are mapped to the columns of the Table's schema by field id, as Java's
  ``SimpleStatsEvolution`` does: a column the file's schema lacks has null count = the file's
  row count and null min/max; a column the file kept no statistics for shows ``null``;
* ``creation_time`` / ``last_update_time`` are the manifests' ``_CREATION_TIME`` values, which
  are already local wall-clock milliseconds, shown unchanged (as Java shows them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.meta.binary_row import deserialize_row
from engine.meta.deletion_vectors import deletion_files
from engine.meta.index_files import IndexStore
from engine.meta.manifest import DataFileMeta, ManifestEntry, ManifestFileMeta
from engine.meta.manifest_arrow import entries_from_table
from engine.meta.paths import partition_path
from engine.meta.snapshot import Snapshot
from engine.read.deletion_vectors import DeletionVectorLoader
from engine.scan.file_stats import decode_stats
from engine.scan.planner import TableScan
from engine.schema import TableSchema
from engine.system_tables.columns import arrow_schema, build_table
from engine.system_tables.render import (
    java_string,
    key_string,
    partition_spec_string,
    row_string,
    stats_map_string,
)
from engine.system_tables.stats_render import java_key_texts, layout_stats_texts
from engine.types import DataType

if TYPE_CHECKING:
    from engine.store import FileStore

# Compression suffixes that may follow the format in a data file name (``.csv.gz``).
_COMPRESSION_SUFFIXES = frozenset(
    {"gz", "gzip", "bz2", "zst", "zstd", "lz4", "snappy", "deflate", "xz", "lzo", "br"}
)


def resolve_snapshot(store: FileStore, snapshot_id: int | None) -> Snapshot | None:
    """The latest snapshot (None for an empty table) or the given one (NoSuchSnapshotError)."""
    if snapshot_id is None:
        return store.snapshots.latest()
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise InvalidArgumentError(f"snapshot_id must be an integer snapshot id, not {snapshot_id!r}")
    return store.snapshots.get(snapshot_id)


def _live_entries(store: FileStore, snapshot: Snapshot) -> list[ManifestEntry]:
    return TableScan(store).with_snapshot(snapshot).read_entries(snapshot)


def live_table(store: FileStore, snapshot: Snapshot) -> pa.Table:
    """The snapshot's live files as manifest entry columns (no Python object per file)."""
    return TableScan(store).with_snapshot(snapshot).read_entry_table(snapshot)


def file_format_of(file_name: str) -> str:
    """The format identifier a reader derives from the file name (``data-….parquet`` → ``parquet``)."""
    parts = file_name.rsplit("/", 1)[-1].split(".")
    if len(parts) < 2:
        return ""
    if parts[-1].lower() in _COMPRESSION_SUFFIXES and len(parts) >= 3:
        return parts[-2].lower()
    return parts[-1].lower()


# -- $files -------------------------------------------------------------------------------------
class FileRenderer:
    """Per-call caches (schemas, partitions) and the per-file formatting of ``$files``."""

    def __init__(self, store: FileStore) -> None:
        self.store = store
        self.schema: TableSchema = store.logical_schema
        opts = self.store.options
        self.default_name = opts.partition_default_name
        self.legacy = opts.partition_legacy_name
        self.partition_types = self.store.partition_types
        self._partitions: dict[bytes, tuple[str, str]] = {}

    def partition(self, raw: bytes) -> tuple[str, str]:
        """(``{v1, v2}`` text, relative directory) of a serialized partition row."""
        cached = self._partitions.get(raw)
        if cached is None:
            values = deserialize_row(raw, self.partition_types)
            types = self.partition_types[: len(values)]
            directory = partition_path(
                self.store.partition_keys[: len(values)], values, types, self.default_name, self.legacy
            )
            cached = (row_string(values, types), directory)
            self._partitions[raw] = cached
        return cached

    def key(self, raw: bytes, key_types: Sequence[DataType]) -> str | None:
        """``[k1, k2]`` of a serialized key row; None for append files (an arity-0 key)."""
        try:
            values = deserialize_row(raw, key_types)
        except CorruptMetadataError:
            return None  # a key of an unexpected layout: shown as unknown rather than failing
        return key_string(values, key_types[: len(values)]) if values else None

    def stats(self, file: DataFileMeta, file_schema: TableSchema) -> tuple[str, str, str]:
        """(null counts, min values, max values) as Java's ``{col=value, ...}`` strings."""
        if file.value_stats_cols is not None:
            cols: Sequence[str] = file.value_stats_cols
        elif file.write_cols is not None:
            cols = file.write_cols
        else:
            cols = file_schema.field_names
        by_name = {f.name: f for f in file_schema.fields}
        stat_fields = [by_name[c] for c in cols if c in by_name]
        by_id = decode_stats(file.value_stats, stat_fields)
        types_by_id = {f.id: f.type for f in stat_fields}
        file_ids = {f.id for f in file_schema.fields}
        nulls: dict[str, str] = {}
        mins: dict[str, str] = {}
        maxs: dict[str, str] = {}
        for f in self.schema.fields:
            st = by_id.get(f.id)
            if st is None:
                # A column added after the file was written is null in all its rows; one the
                # file kept no statistics for is unknown.
                nulls[f.name] = str(file.row_count) if f.id not in file_ids else "null"
                mins[f.name] = maxs[f.name] = "null"
                continue
            dtype = types_by_id[f.id]
            nulls[f.name] = "null" if st.null_count is None else str(st.null_count)
            mins[f.name] = java_string(st.min, dtype)
            maxs[f.name] = java_string(st.max, dtype)
        return stats_map_string(nulls), stats_map_string(mins), stats_map_string(maxs)


def _group_codes(live: pa.Table, names: Sequence[str]) -> np.ndarray:
    """One int64 per row, equal for rows equal in all the named columns (lists by content)."""
    out = np.zeros(live.num_rows, np.int64)
    for name in names:
        column = live.column(name).combine_chunks()
        if pa.types.is_list(column.type):
            # Null and empty lists differ: a null list is "not recorded", an empty one is "none".
            joined = pc.binary_join(column, "\x00")
            column = pc.if_else(column.is_null(), None, pc.binary_join_element_wise("[", joined, ""))
        encoded = column.dictionary_encode()
        width = len(encoded.dictionary) + 1
        if width == 2 and not encoded.null_count:
            continue  # one value everywhere (the common case): no split
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
        # Mixed radix, then back to dense codes so the next column cannot overflow.
        _, dense = np.unique(out * width + codes, return_inverse=True)
        out = dense.ravel().astype(np.int64)
    return out


def _groups(codes: np.ndarray) -> list[np.ndarray]:
    """Row indices of each distinct code, in order of first appearance."""
    if len(codes) == 0 or codes.min() == codes.max():
        return [np.arange(len(codes))]
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    bounds = np.cumsum(np.bincount(inverse.ravel()))[:-1]
    groups = np.split(order, bounds)
    return [groups[i] for i in np.argsort(first, kind="stable")]


def _patch(
    arrays: Sequence[pa.Array], rows: Sequence[int], texts: Sequence[Sequence[str | None]]
) -> list[pa.Array]:
    """``arrays`` with the given rows replaced by per-file texts (one sequence per array)."""
    out = []
    for array, column in zip(arrays, texts, strict=True):
        values = array.to_numpy(zero_copy_only=False).astype(object)
        values[list(rows)] = list(column)
        out.append(pa.array(values, pa.string()))
    return out


def _in_row_order(
    members: Sequence[np.ndarray], chunks: Sequence[Sequence[pa.Array]], width: int
) -> list[pa.Array]:
    """Per-group arrays (groups of the given row indices) put back into row order."""
    if len(members) == 1 and np.array_equal(members[0], np.arange(len(members[0]))):
        return [chunks[0][k] for k in range(width)]
    inverse = pa.array(np.argsort(np.concatenate(members), kind="stable"))
    return [pa.concat_arrays([c[k] for c in chunks]).take(inverse) for k in range(width)]


def _stats_columns(render: FileRenderer, live: pa.Table) -> list[pa.Array]:
    """``null_value_counts``, ``min_value_stats``, ``max_value_stats`` of every file, vectorised per
    statistics layout (schema, stats columns); files the vectorised decoder does not vouch for
    are rendered one by one."""
    # What decides the layout: the file's schema and which columns its statistics cover.
    members = _groups(_group_codes(live, ["schema_id", "value_stats_cols", "write_cols"]))
    chunks: list[list[pa.Array]] = []
    for rows in members:
        group = live if len(members) == 1 else live.take(pa.array(rows))
        file_schema = render.store.schema_by_id(group.column("schema_id")[0].as_py())
        texts, ok = layout_stats_texts(render.schema, file_schema, group)
        arrays = list(texts)
        odd = np.flatnonzero(~ok).tolist()
        if odd:
            files = [e.file for e in entries_from_table(group.take(pa.array(odd)))]
            fixed = [render.stats(f, file_schema) for f in files]
            arrays = _patch(arrays, odd, list(zip(*fixed, strict=True)))
        chunks.append(arrays)
    return _in_row_order(members, chunks, 3)


def key_columns(render: FileRenderer, live: pa.Table) -> list[pa.Array]:
    """``min_key`` and ``max_key`` of every file, vectorised per schema."""
    members = _groups(live.column("schema_id").to_numpy())
    chunks: list[list[pa.Array]] = []
    for rows in members:
        group = live if len(members) == 1 else live.take(pa.array(rows))
        file_schema = render.store.schema_by_id(group.column("schema_id")[0].as_py())
        key_types = [file_schema.field(k).type for k in file_schema.trimmed_primary_keys]
        arrays = []
        for column in ("min_key", "max_key"):
            raws = group.column(column).to_pylist()
            texts, ok = java_key_texts(raws, key_types)
            odd = np.flatnonzero(~ok).tolist()
            if odd:
                texts = _patch([texts], odd, [[render.key(raws[j], key_types) for j in odd]])[0]
            arrays.append(texts)
        chunks.append(arrays)
    return _in_row_order(members, chunks, 2)


def by_partition(render: FileRenderer, live: pa.Table) -> tuple[pa.Array, pa.Array]:
    """(``{v1, v2}`` text, file path) of every file; Python formats each distinct partition and
    bucket directory once, pyarrow joins the rest."""
    store = render.store
    encoded = live.column("partition").combine_chunks().dictionary_encode()
    distinct = [render.partition(raw) for raw in encoded.dictionary.to_pylist()]
    part_index = encoded.indices.to_numpy()
    buckets = live.column("bucket").to_numpy().astype(np.int64)
    # One int64 per (partition, bucket): buckets are >= -2 and fit 32 bits.
    pair_keys = (part_index.astype(np.int64) << 32) | (buckets + 2)
    pairs, slot = np.unique(pair_keys, return_inverse=True)
    dirs = [
        store.paths.bucket_dir(distinct[p >> 32][1], (p & 0xFFFFFFFF) - 2).rstrip("/") for p in pairs.tolist()
    ]
    names = pc.utf8_ltrim(live.column("file_name").combine_chunks(), "/")
    paths = pc.binary_join_element_wise(pa.array(dirs, pa.string()).take(pa.array(slot.ravel())), names, "/")
    external = live.column("external_path").combine_chunks()
    external = pc.if_else(pc.equal(external, ""), None, external)
    texts = pa.array([d[0] for d in distinct], pa.string()).take(encoded.indices)
    return texts, pc.coalesce(external, paths)


def file_formats(names: pa.Array) -> pa.Array:
    """:func:`file_format_of` of every file name, vectorised."""
    last = pc.struct_field(pc.extract_regex(names, r"\.(?P<x>[^./]*)$"), 0)
    second = pc.struct_field(pc.extract_regex(names, r"\.(?P<x>[^./]*)\.[^./]*$"), 0)
    compressed = pc.and_(
        pc.is_in(pc.utf8_lower(last), pa.array(sorted(_COMPRESSION_SUFFIXES))), second.is_valid()
    )
    chosen = pc.if_else(pc.fill_null(compressed, False), second, last)
    return pc.fill_null(pc.utf8_lower(chosen), "")


def sorted_live_files(store: FileStore, snapshot: Snapshot | None) -> pa.Table | None:
    """The live files of ``snapshot`` as manifest entry columns, in ``$files`` order (partition,
    bucket, sequence, name); None when there is no snapshot or no file."""
    if snapshot is None:
        return None
    live = live_table(store, snapshot)
    if live.num_rows == 0:
        return None
    return live.sort_by(
        [("partition", "ascending"), ("bucket", "ascending"), ("min_sequence_number", "ascending"),
         ("file_name", "ascending")]
    )


def read_files(store: FileStore, snapshot_id: int | None) -> pa.Table:
    snapshot = resolve_snapshot(store, snapshot_id)
    live = sorted_live_files(store, snapshot)
    if snapshot is None or live is None:
        return arrow_schema("files").empty_table()
    render = FileRenderer(store)
    partitions, paths = by_partition(render, live)
    nulls, mins, maxs = _stats_columns(render, live)
    min_keys, max_keys = key_columns(render, live)
    sources = pa.array(["APPEND", "COMPACT"], pa.string()).take(live.column("file_source").combine_chunks())
    cols: dict[str, Sequence[object] | pa.Array | pa.ChunkedArray] = {
        "partition": partitions,
        "bucket": live.column("bucket"),
        "file_path": paths,
        "file_format": file_formats(live.column("file_name").combine_chunks()),
        "schema_id": live.column("schema_id"),
        "level": live.column("level"),
        "record_count": live.column("row_count"),
        "file_size_in_bytes": live.column("file_size"),
        "min_key": min_keys,
        "max_key": max_keys,
        "null_value_counts": nulls,
        "min_value_stats": mins,
        "max_value_stats": maxs,
        "min_sequence_number": live.column("min_sequence_number"),
        "max_sequence_number": live.column("max_sequence_number"),
        "creation_time": live.column("creation_time"),
        "deleteRowCount": live.column("delete_row_count"),
        "file_source": sources,
        "first_row_id": live.column("first_row_id"),
        "write_cols": live.column("write_cols"),
        "deletion_vector_cardinality": _deletion_vector_column(store, snapshot, live),
    }
    return build_table("files", cols)


def _deletion_vector_column(store: FileStore, snapshot: Snapshot, live: pa.Table) -> pa.Array:
    """Each file's deletion vector cardinality (null for files without one)."""
    counts = _deletion_vector_counts(store, snapshot)
    if not counts:
        return pa.nulls(live.num_rows, pa.int64())
    keys = zip(
        live.column("partition").to_pylist(), live.column("bucket").to_pylist(),
        live.column("file_name").to_pylist(), strict=True,
    )
    return pa.array([counts.get(k) for k in keys], pa.int64())


def _deletion_vector_counts(store: FileStore, snapshot: Snapshot) -> dict[tuple[bytes, int, str], int]:
    """Rows each data file's deletion vector marks, from the snapshot's index manifest; Paimon
    0.9 recorded no cardinality there, so those DVs are read (once per index file)."""
    if snapshot.index_manifest is None:
        return {}
    index = IndexStore(store.io, store.paths)
    located = deletion_files(index, index.read_manifest(snapshot.index_manifest))
    loader = DeletionVectorLoader(store.io)
    return {
        (partition, bucket, name): d.cardinality if d.cardinality is not None else loader.load(d).cardinality
        for (partition, bucket), files in located.items()
        for name, d in files.items()
    }


# -- $manifests ---------------------------------------------------------------------------------
def _manifest_metas(store: FileStore, snapshot: Snapshot) -> list[ManifestFileMeta]:
    ms = store.manifests
    # As Java's ManifestList.readAllManifests: base and delta data manifests, then changelog ones.
    metas = ms.data_manifests(snapshot)
    if snapshot.changelog_manifest_list:
        metas += ms.read_list(snapshot.changelog_manifest_list)
    return metas


def _partition_bound(raw: bytes, types: Sequence[DataType]) -> str | None:
    try:
        values = deserialize_row(raw, types)
    except CorruptMetadataError:
        return None  # statistics of an incompatible partition layout: unknown, as Java would fail
    return row_string(values, types[: len(values)])


def read_manifests(store: FileStore, snapshot_id: int | None) -> pa.Table:
    snapshot = resolve_snapshot(store, snapshot_id)
    if snapshot is None:
        return arrow_schema("manifests").empty_table()
    metas = _manifest_metas(store, snapshot)
    types = store.partition_types
    return build_table(
        "manifests",
        {
            "file_name": [m.file_name for m in metas],
            "file_size": [m.file_size for m in metas],
            "num_added_files": [m.num_added_files for m in metas],
            "num_deleted_files": [m.num_deleted_files for m in metas],
            "schema_id": [m.schema_id for m in metas],
            "min_partition_stats": [_partition_bound(m.partition_stats.min_values, types) for m in metas],
            "max_partition_stats": [_partition_bound(m.partition_stats.max_values, types) for m in metas],
            "min_row_id": [m.min_row_id for m in metas],
            "max_row_id": [m.max_row_id for m in metas],
        },
    )


# -- $partitions / $buckets ---------------------------------------------------------------------
def _entry_table(live: pa.Table) -> pa.Table:
    """The fields of every live file that the aggregates need (metadata, not table data)."""
    return pa.table(
        {
            "partition": live.column("partition"),
            "bucket": live.column("bucket"),
            "rows": live.column("row_count"),
            "size": live.column("file_size"),
            "ctime": live.column("creation_time"),
            "total_buckets": live.column("total_buckets"),
            "deletes": live.column("delete_row_count"),
        }
    )


def _spec_strings(store: FileStore, partitions: pa.Array, as_row: bool) -> pa.Array:
    """The text of each distinct serialized partition (one decode per partition).

    ``as_row``: the row cast to STRING, ``{v1, v2}`` (Java's ``$buckets``, like ``$files``);
    otherwise the partition path ``k1=v1/k2=v2`` (Java's ``$partitions``).
    """
    keys, types = store.partition_keys, store.partition_types
    default_name = store.options.partition_default_name
    out = []
    for raw in partitions.to_pylist():
        values = deserialize_row(raw, types)
        if as_row:
            out.append(row_string(values, types[: len(values)]))
        else:
            out.append(partition_spec_string(keys[: len(values)], values, types[: len(values)], default_name))
    return pa.array(out, pa.string())


def _aggregate(store: FileStore, snapshot_id: int | None, by_bucket: bool) -> pa.Table | None:
    snapshot = resolve_snapshot(store, snapshot_id)
    if snapshot is None:
        return None
    live = live_table(store, snapshot)
    if live.num_rows == 0:
        return None
    keys = ["partition", "bucket"] if by_bucket else ["partition"]
    grouped = (
        _entry_table(live)
        .group_by(keys)
        .aggregate(
            [
                ("rows", "sum"),
                ("size", "sum"),
                ("rows", "count"),
                ("ctime", "max"),
                ("total_buckets", "max"),
                ("deletes", "sum"),
            ]
        )
    )
    grouped = grouped.append_column(
        "spec", _spec_strings(store, grouped.column("partition").combine_chunks(), as_row=by_bucket)
    )
    # Both sort by their partition text (then bucket), as Java does.
    order = [("spec", "ascending"), ("bucket", "ascending")] if by_bucket else [("spec", "ascending")]
    return grouped.sort_by(order)


def read_partitions(store: FileStore, snapshot_id: int | None) -> pa.Table:
    g = _aggregate(store, snapshot_id, by_bucket=False)
    if g is None:
        return arrow_schema("partitions").empty_table()
    n = g.num_rows
    return build_table(
        "partitions",
        {
            "partition": g.column("spec"),
            "record_count": g.column("rows_sum"),
            "file_size_in_bytes": g.column("size_sum"),
            "file_count": g.column("rows_count"),
            "last_update_time": g.column("ctime_max"),
            "total_buckets": g.column("total_buckets_max"),
            "done": pa.array([False] * n, pa.bool_()),
            "deleted_record_count": g.column("deletes_sum"),
        },
    )


def read_buckets(store: FileStore, snapshot_id: int | None) -> pa.Table:
    g = _aggregate(store, snapshot_id, by_bucket=True)
    if g is None:
        return arrow_schema("buckets").empty_table()
    return build_table(
        "buckets",
        {
            "partition": g.column("spec"),
            "bucket": g.column("bucket"),
            "record_count": g.column("rows_sum"),
            "file_size_in_bytes": g.column("size_sum"),
            "file_count": g.column("rows_count"),
            "last_update_time": g.column("ctime_max"),
        },
    )


__all__ = [
    "file_format_of",
    "read_buckets",
    "read_files",
    "read_manifests",
    "read_partitions",
    "resolve_snapshot",
]
