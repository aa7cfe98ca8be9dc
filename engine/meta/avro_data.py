"""Avro data files in Paimon's layout: decoded into Arrow columns and encoded from them by polars.

One job: read and write a data file whose ``file.format`` is ``avro`` (Paimon's
``AvroFileFormat``), with no Python per row: polars (native code) decodes and encodes the rows,
and everything done here is per file, per block or per column (framing, codecs, vectorised
Arrow casts).

The layout is Paimon's (``AvroSchemaConverter``): one record named
``org.apache.paimon.avro.generated.record`` holding the file's columns (the key-value layout's
``_KEY_<pk>``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` then the values, as in Parquet), a nested ROW
named ``<its parent record>_<field>``; TINYINT/SMALLINT/INT as ``int``, DECIMAL as ``bytes`` with
the ``decimal`` logical type, DATE as ``date``, TIME(≤3) as ``time-millis``, TIMESTAMP(≤3 / ≤6) as
``timestamp-millis`` / ``timestamp-micros`` and the local-time-zone kind as
``local-timestamp-millis`` / ``-micros``; a MAP with string keys as an Avro ``map`` and any other
MAP as an array of ``key``/``value`` records (logical type ``map``); Paimon's Java writer declares
the row itself as ``["null", record]``. Avro files carry no statistics: Paimon collects them from
the rows it writes, as dyntable's writers do for every format.

What differs from Paimon's own writer, and why it reads the same everywhere:

* polars encodes every field, element and map value as a ``["null", T]`` union. Paimon's readers
  (Java 0.9 and 2.0, pypaimon) read such a union for a NOT NULL field as they read the plain type,
  so the header declares the unions polars wrote, with Paimon's names and logical types; the
  encoded bytes must match the header, which :class:`AvroWriter` checks against polars' own
  header once per file.
* a DECIMAL's bytes are encoded here (vectorised, a fixed width per precision) and handed to polars
  as binary: polars' own decimal encoding drops the sign byte of positive values whose top bit
  is set, which would read back negative (found by this module's tests).
* MAP and MULTISET columns are not written (refused with 0A000 at CREATE and by the writer):
  polars encodes list elements as unions too, and Paimon's map reader wants the entry records
  plain. Maps in Avro files other engines wrote are read.

Reading: polars cannot open a file whose schema holds an Avro ``map`` (it panics) or whose
top-level type is a union, so the header is rewritten to byte-identical forms first (an array of
``key``/``value`` records; a record of one field holding the union); zstandard, bzip2 and
xz blocks (polars reads null, deflate and snappy) are decompressed block by block. Types polars
maps differently (``large_*`` strings and lists, ``timestamp-*`` as UTC, ``local-timestamp-*`` as
naive, ``time-millis`` as nanoseconds, maps as lists of records) are converted with vectorised
Arrow casts to the types the table's schema gives.

Refused, with :class:`~engine.errors.UnsupportedTableError` (0A000) naming the type: an Avro type
polars does not decode (``enum``, ``fixed``, unions other than with ``null``), which Paimon never
writes. The Paimon types an Avro file cannot hold (TIMESTAMP above precision 6, TIME above 3,
VARIANT) are refused when the table is created or altered (``engine.schema``), as Paimon does.
"""

from __future__ import annotations

import bz2
import functools
import importlib
import io
import json
import lzma
import math
import os
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from engine.errors import CorruptDataError, UnsupportedTableError
from engine.meta.avro_framing import DECOMPRESS, POLARS_CODECS, block, header, iter_blocks, read_header
from engine.meta.avro_framing import zstd as avro_zstd

__all__ = ["AvroWriter", "avro_codec", "avro_schema", "iter_avro", "read_avro"]

RECORD = "org.apache.paimon.avro.generated.record"
_TIMESTAMPS = ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros")
_ROW = "paimon_row"


# -- reading ---------------------------------------------------------------------------------------
def _polars_schema(node: Any, names: list[int]) -> Any:
    """The Avro schema with every ``map`` as the byte-identical array of key/value records (polars
    cannot open a map); refuses what polars cannot decode."""
    if isinstance(node, list):
        branches = [b for b in node if b != "null"]
        if len(node) > 2 or len(branches) != 1:
            raise UnsupportedTableError(f"an Avro union {json.dumps(node)} (Paimon writes only [null, T])")
        return [_polars_schema(b, names) for b in node]
    if isinstance(node, str):
        if node in ("enum", "fixed"):
            raise UnsupportedTableError(f"the Avro type {node}")
        return node
    kind = node.get("type")
    if kind == "map":
        names.append(len(names))
        value = _polars_schema(node["values"], names)
        entry = {"type": "record", "name": f"paimon_map_entry_{len(names)}", "fields": [
            {"name": "key", "type": "string"}, {"name": "value", "type": value}]}
        return {"type": "array", "items": entry, "logicalType": "map"}
    if kind in ("enum", "fixed"):
        raise UnsupportedTableError(f"the Avro type {kind}")
    if kind == "record":
        return {**node, "fields": [{**f, "type": _polars_schema(f["type"], names)} for f in node["fields"]]}
    if kind == "array":
        return {**node, "items": _polars_schema(node["items"], names)}
    if isinstance(kind, (dict, list)):
        return {**node, "type": _polars_schema(kind, names)}
    return node


def _arrow_type(node: Any) -> pa.DataType:
    """The Arrow type dyntable uses for an Avro type (as ``engine.types.to_arrow_type`` would for
    the Paimon type Paimon's converter maps to it; INT for every ``int``)."""
    if isinstance(node, list):
        return _arrow_type(next(b for b in node if b != "null"))
    if isinstance(node, str):
        return {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
                "double": pa.float64(), "string": pa.string(), "bytes": pa.binary()}[node]
    kind, logical = node.get("type"), node.get("logicalType")
    if isinstance(kind, (dict, list)):
        return _arrow_type(kind)
    if logical == "decimal":
        return pa.decimal128(int(node["precision"]), int(node.get("scale", 0)))
    if logical == "date":
        return pa.date32()
    if logical == "time-millis":
        return pa.time32("ms")
    if logical in _TIMESTAMPS:
        unit = "ms" if logical.endswith("millis") else "us"
        return pa.timestamp(unit, tz="UTC" if logical.startswith("local") else None)
    if kind == "record":
        fields = node["fields"]
        return pa.struct([pa.field(f["name"], _arrow_type(f["type"]), _nullable(f["type"])) for f in fields])
    if kind == "array":
        items = node["items"]
        if logical == "map":
            entry = items if isinstance(items, dict) else next(b for b in items if b != "null")
            key, value = (next(f["type"] for f in entry["fields"] if f["name"] == n)
                          for n in ("key", "value"))
            return pa.map_(pa.field("key", _arrow_type(key), False),
                           pa.field("value", _arrow_type(value), _nullable(value)))
        return pa.list_(pa.field("element", _arrow_type(items), _nullable(items)))
    if kind == "map":
        values = node["values"]
        return pa.map_(pa.field("key", pa.string(), False),
                       pa.field("value", _arrow_type(values), _nullable(values)))
    return _arrow_type(kind)


def _nullable(node: Any) -> bool:
    return isinstance(node, list) and "null" in node


def _to_type(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` as polars decoded it, converted to ``target`` (vectorised, recursively)."""
    if arr.type.equals(target):
        return arr
    if arr.offset:  # rebuilding from offsets and a null mask needs an unsliced array
        arr = pa.concat_arrays([arr])
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_map(target):
        offsets = arr.offsets.cast(pa.int32())
        entries = arr.values
        keys = _to_type(entries.field("key"), target.key_type)
        items = _to_type(entries.field("value"), target.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    if pa.types.is_list(target) or pa.types.is_large_list(target):
        offsets = arr.offsets.cast(pa.int32())
        values = _to_type(arr.values, target.value_type)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if pa.types.is_struct(target):
        children = [_to_type(arr.field(target.field(i).name), target.field(i).type)
                    for i in range(target.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_time(target) and pa.types.is_time(arr.type):
        return arr.cast(target)  # time64[ns] of whole milliseconds → time32[ms], exact
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(arr.type) and arr.type.tz != target.tz:
        # Both hold the same epoch values; only the annotation differs (Avro's local-/UTC kinds).
        arr = arr.view(pa.timestamp(arr.type.unit, tz=target.tz))
    return arr.cast(target)


@functools.cache
def _polars() -> Any:
    return importlib.import_module("polars")


def _decode(data: bytes, columns: Sequence[str] | None) -> tuple[pa.Table, dict[str, Any]]:
    """polars' decoding of the container (re-framed for it) and the file's fields by name."""
    meta, sync, pos = read_header(data)
    schema = json.loads(meta[b"avro.schema"])
    wrapped = isinstance(schema, list)
    if wrapped:
        # Paimon's Java writer declares the row itself nullable: a top-level ["null", record], which
        # polars cannot read. A record of one field of that union is encoded by the same bytes.
        rows = [b for b in schema if b != "null"]
        if len(rows) != 1 or not isinstance(rows[0], dict):
            raise ValueError("an Avro data file holds records")
        fields = {f["name"]: f["type"] for f in rows[0]["fields"]}
        schema = {"type": "record", "name": "paimon_nullable_row", "fields": [{"name": _ROW, "type": schema}]}
    elif isinstance(schema, dict) and schema.get("type") == "record":
        fields = {f["name"]: f["type"] for f in schema["fields"]}
    else:
        raise ValueError("an Avro data file holds records")
    codec = meta.get(b"avro.codec", b"null")
    readable = codec in POLARS_CODECS
    if not readable and codec not in DECOMPRESS:
        raise UnsupportedTableError(f"the Avro codec {codec.decode(errors='replace')}")
    out = header({b"avro.schema": json.dumps(_polars_schema(schema, [])).encode(),
                  b"avro.codec": codec if readable else b"null"}, sync)
    if readable:
        out += data[pos:]
    else:
        decompress = DECOMPRESS[codec]()
        for count, stored in iter_blocks(data, pos, sync):
            out += block(count, decompress(stored), sync)
    pl = _polars()
    cols = list(fields) if columns is None else [c for c in columns if c in fields]
    if not cols:
        n = sum(c for c, _ in iter_blocks(data, pos, sync))
        return pa.table({}).append_column("_", pa.nulls(n)).drop(["_"]), fields
    try:
        frame = pl.read_avro(io.BytesIO(bytes(out)), columns=[_ROW] if wrapped else cols)
    except BaseException as e:  # noqa: BLE001 -- polars raises a PanicException (a BaseException) too
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise ValueError(f"polars cannot decode it: {type(e).__name__}: {e}") from e
    table = frame.to_arrow()
    if wrapped:  # Java never writes a null row (its reader refuses one): the fields are the columns
        row = table.column(_ROW)
        table = pa.table({c: pa.chunked_array([chunk.field(c) for chunk in row.chunks],
                                              type=row.type.field(c).type) for c in cols})
    return table, fields


def read_avro(data: bytes, path: str, columns: Sequence[str] | None = None,
              types: Mapping[str, pa.DataType] | None = None) -> pa.Table:
    """The ``columns`` (None: all) of one Avro data file's bytes, as Arrow columns of ``types``
    (by column name; a column not named there takes the type its Avro type maps to).

    Raises:
        UnsupportedTableError: a type or codec Paimon never writes and polars cannot decode.
        pyarrow.ArrowInvalid: the bytes are not a readable Avro data file (the caller types it).
    """
    try:
        table, fields = _decode(data, columns)
    except UnsupportedTableError as e:
        raise UnsupportedTableError(f"cannot read Avro data file {path}: it holds {e}, which dyntable "
                                    "does not read") from e
    except (ValueError, IndexError, KeyError, TypeError, json.JSONDecodeError) as e:
        # ArrowInvalid: what the data-file reader types as a corrupt file, as for Parquet and ORC
        raise pa.ArrowInvalid(f"not a readable Avro data file ({type(e).__name__}: {e})") from e
    if table.num_columns == 0:
        return table
    if columns is not None:  # polars gives the file's order
        table = table.select([c for c in columns if c in table.column_names])
    arrays = []
    for name in table.column_names:
        target = (types or {}).get(name) or _arrow_type(fields[name])
        col = table.column(name)
        chunks = [_to_type(c, target) for c in col.chunks] if col.num_chunks else [pa.array([], target)]
        arrays.append(pa.chunked_array(chunks, type=target))
    return pa.Table.from_arrays(arrays, names=table.column_names)


def iter_avro(data: bytes, path: str, columns: Sequence[str], batch_rows: int,
              types: Mapping[str, pa.DataType] | None = None) -> Iterator[pa.Table]:
    """:func:`read_avro` in pieces of at most ``batch_rows`` rows (the file is decoded whole: an
    Avro file has no row groups to read one at a time)."""
    table = read_avro(data, path, columns, types)
    for offset in range(0, table.num_rows, batch_rows):
        yield table.slice(offset, batch_rows)


# -- writing ---------------------------------------------------------------------------------------
def avro_codec(options: Mapping[str, str], compression: str) -> tuple[str, int | None]:
    """(fastavro codec, zstd level) of a new file: ``avro.codec`` when the table sets it, else
    ``file.compression`` as Paimon maps it (zstd → zstandard at ``file.compression.zstd-level``;
    gzip → deflate; Avro has no lz4 nor brotli, which take zstandard)."""
    explicit = str(options.get("avro.codec", "")).strip().lower()
    if explicit:
        codec = {"zstd": "zstandard", "none": "null", "uncompressed": "null"}.get(explicit, explicit)
        if codec not in ("null", "deflate", "snappy", "zstandard", "bzip2", "xz"):
            raise UnsupportedTableError(f"'avro.codec' = '{explicit}' is not an Avro codec "
                                        "(null, deflate, snappy, zstandard, bzip2, xz)")
        return codec, None
    c = compression.strip().lower()
    if c in ("none", "uncompressed"):
        return "null", None
    if c in ("snappy",):
        return "snappy", None
    if c == "gzip":
        return "deflate", None
    level = int(options.get("file.compression.zstd-level", 1)) if c == "zstd" else 1
    return "zstandard", level


def _writable_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type polars encodes as the Avro type Paimon uses for ``t``."""
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_timestamp(t):
        return pa.timestamp("ms" if t.unit in ("s", "ms") else t.unit)
    if pa.types.is_decimal(t):
        return pa.binary()  # its two's-complement bytes, encoded here (see _decimal_bytes)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_writable_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _writable_type(f.type)) for f in t])
    return t


def _writable(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """``arr`` (of the table's type) as polars writes it: see :func:`_writable_type`."""
    target = _writable_type(arr.type)
    if target.equals(arr.type):
        return arr
    if arr.offset:  # rebuilding from offsets and a null mask needs an unsliced array
        arr = pa.concat_arrays([arr])
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        values = _writable(arr.values, arr.type.value_type)
        return pa.ListArray.from_arrays(arr.offsets.cast(pa.int32()), values, type=target, mask=mask)
    if pa.types.is_struct(arr.type):
        children = [_writable(arr.field(i), arr.type.field(i).type) for i in range(arr.type.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_decimal(arr.type):
        return _decimal_bytes(arr)
    if pa.types.is_time32(arr.type):
        return arr.view(pa.int32())  # time-millis: milliseconds of the day, an Avro int
    if pa.types.is_timestamp(arr.type):
        if arr.type.tz is not None:
            arr = arr.view(pa.timestamp(arr.type.unit))
        return arr.cast(target)  # seconds → milliseconds (Paimon's precision ≤ 3 kind), exact
    return arr.cast(target)


def _decimal_bytes(arr: pa.Array) -> pa.Array:
    """A decimal column as the bytes of Avro's ``decimal`` logical type: each unscaled value in
    big-endian two's complement, in the fewest bytes every value of the precision fits (4 for
    DECIMAL(9), 8 for 18, 16 for 38). polars' own decimal encoding is not used: it drops the sign
    byte of a positive value whose top bit is set (32768 is written as 0x8000, read back as -32768)."""
    arr = arr.cast(pa.decimal128(arr.type.precision, arr.type.scale))
    width = min(16, (math.ceil(arr.type.precision * math.log2(10)) + 1 + 7) // 8)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16 : (arr.offset + len(arr)) * 16]
    # little-endian int128s → big-endian, keeping the low ``width`` bytes (sign included)
    big_endian = raw.reshape(-1, 16)[:, ::-1][:, 16 - width :]
    data = pa.py_buffer(np.ascontiguousarray(big_endian).tobytes())
    valid = arr.is_valid().buffers()[1] if arr.null_count else None
    return pa.Array.from_buffers(pa.binary(width), len(arr), [valid, data]).cast(pa.binary())


def _paimon_type(t: pa.DataType, name: str) -> Any:
    """The Avro type (Paimon's names and logical types; a ``["null", T]`` union as polars encodes
    every value) of an Arrow type of the table's schema; ``name`` is the record name Paimon gives a
    ROW here."""
    return ["null", _paimon_plain(t, name)]


def _paimon_plain(t: pa.DataType, name: str) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_timestamp(t) and t.unit != "ns":
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        return {"type": "long", "logicalType": f"{'local-' if t.tz else ''}timestamp-{unit}"}
    if pa.types.is_struct(t):
        return {"type": "record", "name": name, "fields": [
            {"name": f.name, "type": _paimon_type(f.type, f"{name}_{f.name}"), "default": None} for f in t]}
    if pa.types.is_map(t):
        raise UnsupportedTableError(
            "a MAP (or MULTISET) column cannot be written to an Avro data file by dyntable: polars encodes "
            "a map's entries as a nullable union, which Paimon's readers do not read as a map; dyntable "
            "reads such columns in Avro files other engines wrote. Use 'file.format' = 'parquet' or 'orc'")
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "items": _paimon_type(t.value_type, name)}
    raise UnsupportedTableError(f"the Arrow type {t} has no Avro encoding in Paimon")


def avro_schema(schema: pa.Schema) -> dict[str, Any]:
    """The header schema of an Avro data file of ``schema`` (see the module docstring)."""
    return {"type": "record", "name": RECORD, "fields": [
        {"name": f.name, "type": _paimon_type(f.type, f"{RECORD}_{f.name}"), "default": None}
        for f in schema]}


def _shape(node: Any) -> Any:
    """An Avro schema reduced to what decides its binary encoding (no names, no logical types)."""
    if isinstance(node, list):
        return [_shape(b) for b in node]
    if isinstance(node, str):
        return node
    kind = node.get("type")
    if kind == "record":
        return ("record", tuple((f["name"], _shape(f["type"])) for f in node["fields"]))
    if kind == "array":
        return ("array", _shape(node["items"]))
    if isinstance(kind, (dict, list)):
        return _shape(kind)
    return kind


def _compressor(codec: str, level: int | None) -> Callable[[bytes], bytes]:
    """A block's compression under an Avro codec (snappy: raw snappy + the big-endian CRC32 of the
    plain bytes, as Avro frames it; pyarrow's snappy, since fastavro's needs another library)."""
    if codec == "null":
        return lambda data: data
    if codec == "deflate":
        def deflate(data: bytes) -> bytes:
            c = zlib.compressobj(wbits=-15)
            return c.compress(data) + c.flush()
        return deflate
    if codec == "snappy":
        return lambda data: (pa.compress(data, codec="snappy", asbytes=True)
                             + struct.pack(">I", zlib.crc32(data)))
    if codec == "bzip2":
        return bz2.compress
    if codec == "xz":
        return lzma.compress
    zstd = avro_zstd()
    return lambda data: zstd.compress(data, level or 1)


class AvroWriter:
    """An Avro data file written piece by piece (the interface of the rolling writers:
    ``write_table``, ``close``): polars encodes each piece's rows, its blocks are compressed with
    the file's codec and framed with its sync marker, so ``sink.tell()`` grows as pieces are written."""

    def __init__(self, sink: Any, schema: pa.Schema, options: Mapping[str, str], compression: str) -> None:
        self.schema = schema
        self._sink = sink
        self._header = avro_schema(schema)
        self._shape = _shape(self._header)
        codec, level = avro_codec(options, compression)
        self._compress = _compressor(codec, level)
        self._sync = os.urandom(16)
        meta = {b"avro.schema": json.dumps(self._header).encode(), b"avro.codec": codec.encode()}
        sink.write(bytes(header(meta, self._sync)))
        self._checked = False

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
        if table.num_rows == 0:
            return
        batch = table.cast(self.schema).combine_chunks().to_batches()[0]
        arrays = [_writable(c, c.type) for c in batch.columns]
        frame = _polars().from_arrow(pa.Table.from_arrays(arrays, names=self.schema.names))
        buf = io.BytesIO()
        frame.write_avro(buf, compression="uncompressed", name=RECORD)
        data = buf.getvalue()
        meta, sync, pos = read_header(data)
        if not self._checked:
            written = _shape(json.loads(meta[b"avro.schema"]))
            if written != self._shape:
                raise CorruptDataError(  # a polars release that encodes differently: write nothing wrong
                    f"polars encodes these columns as {written}, not the declared {self._shape}")
            self._checked = True
        for count, plain in iter_blocks(data, pos, sync):
            self._sink.write(block(count, self._compress(plain), self._sync))

    def close(self) -> None:
        """Nothing is buffered: every piece's blocks are on the sink already."""

    def __enter__(self) -> AvroWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
