"""Manifest files decoded straight into Arrow columns, and the ADD/DELETE merge done on columns.

One job: give the readers that look at every live file of a snapshot at once (the ``$files``,
``$partitions`` and ``$buckets`` system tables, partition-filtered planning) a manifest's entries
as one Arrow table per manifest, without building a Python object per entry.

Why: decoding a manifest entry into Python dicts (fastavro) and then into frozen records costs
about 100 µs per entry, so a table of 100,000 live files took several seconds per cold query,
all of it spent in per-entry Python. polars' Avro reader decodes the same object-container file
into Arrow columns in native code, about ten times faster than fastavro produces its dicts.

Invariants:

* The columns are :data:`ENTRY_SCHEMA`, one row per entry in file order, exactly the values
  :func:`engine.meta.manifest.read_manifest_entries` gives (``creation_time`` as epoch ms, kind
  and file source as their codes); fields an older writer lacks are null.
* polars reads only the codecs null, deflate and snappy: a ``zstandard`` (Paimon's default),
  ``bzip2`` or ``xz`` file is re-framed as an uncompressed container first (block by block, a few
  blocks per manifest). A file polars cannot read at all (a very old writer's top-level union,
  a corrupt file), or a process without polars, takes the fastavro path, which raises
  :class:`~engine.errors.CorruptMetadataError` on what is truly undecodable.
* :func:`live_entry_rows` applies the merge rule of :func:`engine.meta.manifest.live_files` on
  columns: a file is live when its ADDs outnumber its DELETEs by one; any other surplus means
  inconsistent manifests and raises.
"""

from __future__ import annotations

import functools
import gc
import importlib
import importlib.util
import io
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import CorruptMetadataError
from engine.meta.avro_framing import DECOMPRESS, POLARS_CODECS, block, header, iter_blocks, read_header
from engine.meta.avro_schemas import FORMAT_IDENTIFIER
from engine.meta.manifest import (
    EMPTY_ROW_BYTES,
    DataFileMeta,
    EntryRef,
    FileKind,
    FileSource,
    ManifestEntry,
    SimpleStats,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)

__all__ = ["ENTRY_SCHEMA", "entries_from_table", "live_entry_rows", "read_manifest_table", "refs_from_table"]

_STATS = pa.struct([("_MIN_VALUES", pa.binary()), ("_MAX_VALUES", pa.binary()),
                    ("_NULL_COUNTS", pa.list_(pa.int64()))])
_STRINGS = pa.list_(pa.string())

#: The manifest entry record as Arrow (field names as in the Avro schema, nested as there).
_NESTED = pa.schema([
    ("_VERSION", pa.int32()),
    ("_KIND", pa.int32()),
    ("_PARTITION", pa.binary()),
    ("_BUCKET", pa.int32()),
    ("_TOTAL_BUCKETS", pa.int32()),
    ("_FILE", pa.struct([
        ("_FILE_NAME", pa.string()),
        ("_FILE_SIZE", pa.int64()),
        ("_ROW_COUNT", pa.int64()),
        ("_MIN_KEY", pa.binary()),
        ("_MAX_KEY", pa.binary()),
        ("_KEY_STATS", _STATS),
        ("_VALUE_STATS", _STATS),
        ("_MIN_SEQUENCE_NUMBER", pa.int64()),
        ("_MAX_SEQUENCE_NUMBER", pa.int64()),
        ("_SCHEMA_ID", pa.int64()),
        ("_LEVEL", pa.int32()),
        ("_EXTRA_FILES", _STRINGS),
        ("_CREATION_TIME", pa.int64()),
        ("_DELETE_ROW_COUNT", pa.int64()),
        ("_EMBEDDED_FILE_INDEX", pa.binary()),
        ("_FILE_SOURCE", pa.int32()),
        ("_VALUE_STATS_COLS", _STRINGS),
        ("_EXTERNAL_PATH", pa.string()),
        ("_FIRST_ROW_ID", pa.int64()),
        ("_WRITE_COLS", _STRINGS),
    ])),
])

# Flat column name → path in the nested record.
_COLUMNS: dict[str, tuple[str, ...]] = {
    "kind": ("_KIND",),
    "partition": ("_PARTITION",),
    "bucket": ("_BUCKET",),
    "total_buckets": ("_TOTAL_BUCKETS",),
    "file_name": ("_FILE", "_FILE_NAME"),
    "file_size": ("_FILE", "_FILE_SIZE"),
    "row_count": ("_FILE", "_ROW_COUNT"),
    "min_key": ("_FILE", "_MIN_KEY"),
    "max_key": ("_FILE", "_MAX_KEY"),
    "key_min_values": ("_FILE", "_KEY_STATS", "_MIN_VALUES"),
    "key_max_values": ("_FILE", "_KEY_STATS", "_MAX_VALUES"),
    "key_null_counts": ("_FILE", "_KEY_STATS", "_NULL_COUNTS"),
    "value_min_values": ("_FILE", "_VALUE_STATS", "_MIN_VALUES"),
    "value_max_values": ("_FILE", "_VALUE_STATS", "_MAX_VALUES"),
    "value_null_counts": ("_FILE", "_VALUE_STATS", "_NULL_COUNTS"),
    "min_sequence_number": ("_FILE", "_MIN_SEQUENCE_NUMBER"),
    "max_sequence_number": ("_FILE", "_MAX_SEQUENCE_NUMBER"),
    "schema_id": ("_FILE", "_SCHEMA_ID"),
    "level": ("_FILE", "_LEVEL"),
    "extra_files": ("_FILE", "_EXTRA_FILES"),
    "creation_time": ("_FILE", "_CREATION_TIME"),
    "delete_row_count": ("_FILE", "_DELETE_ROW_COUNT"),
    "embedded_file_index": ("_FILE", "_EMBEDDED_FILE_INDEX"),
    "file_source": ("_FILE", "_FILE_SOURCE"),
    "value_stats_cols": ("_FILE", "_VALUE_STATS_COLS"),
    "external_path": ("_FILE", "_EXTERNAL_PATH"),
    "first_row_id": ("_FILE", "_FIRST_ROW_ID"),
    "write_cols": ("_FILE", "_WRITE_COLS"),
}
_REQUIRED = frozenset({
    "kind", "partition", "bucket", "total_buckets", "file_name", "file_size", "row_count", "min_key",
    "max_key", "key_min_values", "key_max_values", "value_min_values", "value_max_values",
    "min_sequence_number", "max_sequence_number", "schema_id", "level", "extra_files",
})


def _leaf_type(path: tuple[str, ...]) -> pa.DataType:
    t: Any = _NESTED.field(path[0]).type
    for name in path[1:]:
        t = t.field(name).type
    return t


#: One row per manifest entry, flat; see the module docstring.
ENTRY_SCHEMA = pa.schema([(name, _leaf_type(path)) for name, path in _COLUMNS.items()])


# -- re-framing a container for polars ------------------------------------------------------------
def _uncompressed(data: bytes) -> bytes | None:
    """The container with its blocks decompressed and codec ``null`` when polars cannot read its
    codec; ``data`` itself when it can; None when the header is not one this re-framing knows."""
    try:
        meta, sync, pos = read_header(data)
        codec = meta.get(b"avro.codec", b"null")
        if codec in POLARS_CODECS:
            return data
        make = DECOMPRESS.get(codec)
        if make is None:
            return None
        decompress = make()
        out = header({b"avro.schema": meta[b"avro.schema"], b"avro.codec": b"null"}, sync)
        for count, stored in iter_blocks(data, pos, sync):
            out += block(count, decompress(stored), sync)
    except (ValueError, IndexError, KeyError):
        return None
    return bytes(out)


#: Whether manifests are decoded by polars (optional: without it every manifest takes the fastavro
#: path). Tests set it to False to check the fastavro path against polars'.
USE_POLARS = importlib.util.find_spec("polars") is not None


@functools.cache
def _polars() -> Any:
    # Imported on first use: a process that never reads a system table does not pay for it.
    return importlib.import_module("polars")


def _polars_table(data: bytes) -> pa.Table | None:
    if not USE_POLARS:
        return None
    try:
        framed = _uncompressed(data)
        if framed is None:
            return None
        return _polars().read_avro(io.BytesIO(framed)).to_arrow()
    except Exception:  # noqa: BLE001 -- anything polars rejects is judged by the fastavro path
        return None


def _fastavro_table(data: bytes) -> pa.Table:
    try:
        records: list[Any] = list(fastavro.reader(io.BytesIO(data)))
    except Exception as e:  # noqa: BLE001 -- fastavro/zstd raise many types on corrupt bytes
        raise CorruptMetadataError(
            f"manifest file cannot be decoded ({type(e).__name__}: {e}); the file is truncated or corrupt"
        ) from e
    if any(r is None for r in records):
        raise CorruptMetadataError("manifest holds a null record")
    if not records:
        return _NESTED.empty_table()
    present = set(records[0])
    file_fields = set(records[0].get("_FILE") or ())
    schema = pa.schema([f for f in _NESTED if f.name in present])
    if "_FILE" in present:
        file_type = _NESTED.field("_FILE").type
        kept = pa.struct([f for f in file_type if f.name in file_fields])
        schema = schema.set(schema.get_field_index("_FILE"), pa.field("_FILE", kept))
    for rec in records:  # fastavro gives timestamp-millis as aware datetimes
        f = rec.get("_FILE")
        ct = None if f is None else f.get("_CREATION_TIME")
        if ct is not None and type(ct) is not int:
            f["_CREATION_TIME"] = (ct - _EPOCH) // _ONE_MS
    try:
        return pa.Table.from_pylist(records, schema=schema)
    except (pa.ArrowException, TypeError, ValueError, KeyError) as e:
        raise CorruptMetadataError(f"manifest entry has a field of the wrong type ({e})") from e


def _column(table: pa.Table, path: tuple[str, ...]) -> pa.ChunkedArray | None:
    if path[0] not in table.column_names:
        return None
    col = table.column(path[0])
    for name in path[1:]:
        if col.type.get_field_index(name) < 0:
            return None
        col = pc.struct_field(col, name)
    return col


def read_manifest_table(data: bytes) -> pa.Table:
    """A manifest file's entries as :data:`ENTRY_SCHEMA` columns, one row per entry in file order.

    Raises:
        CorruptMetadataError: The bytes are not a readable manifest (truncated, corrupt, a
            required field missing, a bad ``_VERSION``).
    """
    nested = _polars_table(data)
    if nested is None:
        nested = _fastavro_table(data)
    n = nested.num_rows
    if n and "_VERSION" in nested.column_names:
        versions = nested.column("_VERSION")
        # min/max, not a comparison with a Python int: converting a Python scalar makes pyarrow
        # import pandas, which planning in Spark's Python workers must not pay for.
        low, high = (v.as_py() for v in pc.min_max(versions).values())
        if versions.null_count or low != FORMAT_IDENTIFIER or high != FORMAT_IDENTIFIER:
            bad = low if low != FORMAT_IDENTIFIER else high
            if bad == 1:
                raise CorruptMetadataError(
                    "manifest written with the legacy format identifier 1 (Paimon < 0.9): "
                    "recreate the table with a newer Paimon"
                )
            raise CorruptMetadataError(f"manifest record has unknown format identifier _VERSION={bad!r}")
    arrays = []
    for field in ENTRY_SCHEMA:
        col = _column(nested, _COLUMNS[field.name])
        if col is None:
            if n and field.name in _REQUIRED:
                raise CorruptMetadataError(f"manifest entry lacks the required field {field.name}")
            arrays.append(pa.nulls(n, field.type))
            continue
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.int64())
        try:
            arrays.append(col.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise CorruptMetadataError(f"manifest field {field.name} has an unexpected type ({e})") from e
    table = pa.Table.from_arrays(arrays, schema=ENTRY_SCHEMA)
    if n and not pc.all(pc.is_in(table.column("kind"), pa.array([0, 1], pa.int32()))).as_py():
        raise CorruptMetadataError("manifest entry has an unknown kind")
    sources = pc.fill_null(table.column("file_source"), 0)
    if n and not pc.all(pc.is_in(sources, pa.array([0, 1], pa.int32()))).as_py():
        raise CorruptMetadataError("manifest entry has an unknown file source")
    return table.combine_chunks()


def _codes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Equal values → equal int64 codes (null is its own value)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_list(column.type):
        column = pc.if_else(column.is_null(), None, pc.binary_join(column, "\x00"))
    if pa.types.is_integer(column.type):
        return column.cast(pa.int64()).fill_null(-(1 << 40)).to_numpy()
    encoded = column.dictionary_encode()
    return encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


# The merge key of ManifestEntry.identifier: which ADD a DELETE cancels.
_IDENTIFIER = (
    "partition", "bucket", "level", "file_name", "extra_files", "embedded_file_index", "external_path"
)


def live_entry_rows(entries: Sequence[pa.Table] | pa.Table) -> pa.Table:
    """The live ADD rows after applying all entries of a complete history (base + delta), in the
    order of the entries that added them.

    Raises:
        CorruptMetadataError: A file is added twice, or deleted without ever being added.
    """
    table = entries if isinstance(entries, pa.Table) else pa.concat_tables(list(entries))
    table = table.combine_chunks()
    n = table.num_rows
    if n == 0:
        return table
    kind = table.column("kind").to_numpy()
    codes = [_codes(table.column(c)) for c in _IDENTIFIER]
    # Mixed radix into one int64 when it fits (it always does for realistic tables): a 1-D unique.
    key = np.zeros(n, np.int64)
    span = 1
    for c in codes:
        low, high = int(c.min()), int(c.max())
        width = high - low + 1
        if span * width >= 1 << 62:
            _, ident = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
            break
        key += (c - low) * span
        span *= width
    else:
        _, ident = np.unique(key, return_inverse=True)
    ident = ident.ravel()
    net = np.bincount(ident, weights=np.where(kind == 0, 1, -1)).astype(np.int64)
    if net.min() < 0 or net.max() > 1:
        which = int(np.flatnonzero((net < 0) | (net > 1))[0])
        row = int(np.flatnonzero(ident == which)[0])
        name = table.column("file_name")[row].as_py()
        problem = "is added twice" if net[which] > 1 else "is deleted but was never added"
        raise CorruptMetadataError(f"file {name} {problem}; the table's manifests are inconsistent")
    adds = np.flatnonzero(kind == 0)
    # The last ADD of each live identifier (a file deleted and re-added lives from its re-add).
    last = np.full(len(net), -1, np.int64)
    last[ident[adds]] = adds
    keep = np.sort(last[(net == 1) & (last >= 0)])
    return table.take(pa.array(keep))


def entries_from_table(table: pa.Table) -> list[ManifestEntry]:
    """:class:`ManifestEntry` records of the given rows: for the few files a filtered plan keeps
    (its splits carry records), never for every entry of a manifest."""
    if table.num_rows == 0:
        return []
    # None of the objects built here can form cycles: pausing the cyclic GC (as the record
    # decoder does) saves the collections their allocation would trigger.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _entries_from_table(table)
    finally:
        if gc_was_enabled:
            gc.enable()


def _entries_from_table(table: pa.Table) -> list[ManifestEntry]:
    c = {name: table.column(name).to_pylist() for name in ENTRY_SCHEMA.names}

    def stats(mins: list[bytes], maxs: list[bytes], nulls: list[Any]) -> list[SimpleStats]:
        return [
            SimpleStats.EMPTY
            if nc == [] and mn == EMPTY_ROW_BYTES and mx == EMPTY_ROW_BYTES
            else SimpleStats(mn, mx, None if nc is None else tuple(nc))
            for mn, mx, nc in zip(mins, maxs, nulls, strict=True)
        ]

    def opt(values: list[Any]) -> list[tuple[str, ...] | None]:
        return [None if v is None else tuple(v) for v in values]

    files = [
        DataFileMeta(*row)
        for row in zip(
            c["file_name"], c["file_size"], c["row_count"], c["min_key"], c["max_key"],
            stats(c["key_min_values"], c["key_max_values"], c["key_null_counts"]),
            stats(c["value_min_values"], c["value_max_values"], c["value_null_counts"]),
            c["min_sequence_number"], c["max_sequence_number"], c["schema_id"], c["level"],
            [tuple(v) for v in c["extra_files"]], c["creation_time"], c["delete_row_count"],
            c["embedded_file_index"], [None if v is None else FileSource(v) for v in c["file_source"]],
            opt(c["value_stats_cols"]), c["external_path"], c["first_row_id"], opt(c["write_cols"]),
            strict=True,
        )
    ]
    return [
        ManifestEntry(FileKind(k), p, b, t, f)
        for k, p, b, t, f in zip(
            c["kind"], c["partition"], c["bucket"], c["total_buckets"], files, strict=True
        )
    ]


#: The columns :func:`refs_from_table` reads, in :class:`~engine.meta.manifest.EntryRef`'s order.
_REF_COLUMNS = ("kind", "partition", "bucket", "file_name", "file_size", "level", "extra_files",
                "embedded_file_index", "external_path")


def refs_from_table(table: pa.Table) -> list[EntryRef]:
    """:class:`~engine.meta.manifest.EntryRef` records of every row: what deciding which files are
    in use reads, taken from nine columns (no statistics, no keys are converted to Python)."""
    if table.num_rows == 0:
        return []
    if table.column("extra_files").null_count:
        raise CorruptMetadataError("manifest entry has a null _EXTRA_FILES")
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        c = [table.column(name).to_pylist() for name in _REF_COLUMNS]
        kinds = {code: FileKind(code) for code in set(c[0])}
        c[0] = [kinds[k] for k in c[0]]
        c[6] = [tuple(v) for v in c[6]]
        return [EntryRef(*row) for row in zip(*c, strict=True)]
    finally:
        if gc_was_enabled:
            gc.enable()
