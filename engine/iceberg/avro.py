"""Iceberg's Avro files: the manifest and manifest-list schemas of the Iceberg spec (format
versions 2 and 3, with their field ids) and an object-container codec for them.

One job: turn Iceberg manifest entries and manifest-list entries (plain dicts, the spec's field
names) into Avro bytes and back.

* The schemas carry the spec's ``field-id`` / ``element-id`` attributes and Iceberg's record
  names (``manifest_entry``, ``r2``, ``r102``, ``k121_v122`` …): Iceberg readers resolve the
  columns by id. Maps with int keys are arrays of key/value records marked ``logicalType: map``,
  as Iceberg writes them.
* The container is framed here rather than by fastavro's writer because Paimon's default codec
  for these files is ``snappy`` and fastavro needs an extra library for it; pyarrow's snappy,
  zstd and Python's raw deflate cover every codec the option allows. Records are encoded by
  ``fastavro.schemaless_writer`` (one block per file: these files are small).
"""

from __future__ import annotations

import functools
import io
import json
import os
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import fastavro
import pyarrow as pa

from engine.errors import CorruptMetadataError
from engine.meta.avro_framing import block, header, read_header, read_long

__all__ = [
    "MANIFEST_CONTENT_DATA",
    "MANIFEST_CONTENT_DELETES",
    "manifest_entry_schema",
    "manifest_list_schema",
    "read_container",
    "write_container",
]

MANIFEST_CONTENT_DATA = 0  # manifest_file.content: 0 data files, 1 delete files
MANIFEST_CONTENT_DELETES = 1

#: The option's names → the Avro codec names in the file header.
_AVRO_CODEC = {"snappy": "snappy", "deflate": "deflate", "zstd": "zstandard", "uncompressed": "null"}


def _opt(type_: Any) -> list[Any]:
    return ["null", type_]


def _int_map(name: str, key_id: int, value_id: int, value_type: str) -> dict[str, Any]:
    return {
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": f"k{key_id}_v{value_id}",
            "fields": [
                {"name": "key", "type": "int", "field-id": key_id},
                {"name": "value", "type": value_type, "field-id": value_id},
            ],
        },
    }


def manifest_entry_schema(partition_fields: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The Avro schema of a manifest of the spec (``manifest_entry``) for a partition type given as
    Avro fields (each with its ``field-id``, 1000 and up)."""
    data_file = {
        "type": "record",
        "name": "r2",
        "fields": [
            {"name": "content", "type": "int", "field-id": 134},
            {"name": "file_path", "type": "string", "field-id": 100},
            {"name": "file_format", "type": "string", "field-id": 101},
            {
                "name": "partition",
                "type": {"type": "record", "name": "r102", "fields": list(partition_fields)},
                "field-id": 102,
            },
            {"name": "record_count", "type": "long", "field-id": 103},
            {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
            {
                "name": "null_value_counts",
                "type": _opt(_int_map("null_value_counts", 121, 122, "long")),
                "default": None,
                "field-id": 110,
            },
            {
                "name": "lower_bounds",
                "type": _opt(_int_map("lower_bounds", 126, 127, "bytes")),
                "default": None,
                "field-id": 125,
            },
            {
                "name": "upper_bounds",
                "type": _opt(_int_map("upper_bounds", 129, 130, "bytes")),
                "default": None,
                "field-id": 128,
            },
            # Format version 3's deletion vectors: the data file a DV blob belongs to and the
            # blob's range in its Puffin file (absent, i.e. null, for data files).
            {"name": "referenced_data_file", "type": _opt("string"), "default": None, "field-id": 143},
            {"name": "content_offset", "type": _opt("long"), "default": None, "field-id": 144},
            {"name": "content_size_in_bytes", "type": _opt("long"), "default": None, "field-id": 145},
        ],
    }
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            {"name": "status", "type": "int", "field-id": 0},
            {"name": "snapshot_id", "type": _opt("long"), "default": None, "field-id": 1},
            {"name": "sequence_number", "type": _opt("long"), "default": None, "field-id": 3},
            {"name": "file_sequence_number", "type": _opt("long"), "default": None, "field-id": 4},
            {"name": "data_file", "type": data_file, "field-id": 2},
        ],
    }


def manifest_list_schema() -> dict[str, Any]:
    """The Avro schema of a manifest list of the spec (``manifest_file``)."""
    summary = {
        "type": "record",
        "name": "r508",
        "fields": [
            {"name": "contains_null", "type": "boolean", "field-id": 509},
            {"name": "contains_nan", "type": _opt("boolean"), "default": None, "field-id": 518},
            {"name": "lower_bound", "type": _opt("bytes"), "default": None, "field-id": 510},
            {"name": "upper_bound", "type": _opt("bytes"), "default": None, "field-id": 511},
        ],
    }
    return {
        "type": "record",
        "name": "manifest_file",
        "fields": [
            {"name": "manifest_path", "type": "string", "field-id": 500},
            {"name": "manifest_length", "type": "long", "field-id": 501},
            {"name": "partition_spec_id", "type": "int", "field-id": 502},
            {"name": "content", "type": "int", "field-id": 517},
            {"name": "sequence_number", "type": "long", "field-id": 515},
            {"name": "min_sequence_number", "type": "long", "field-id": 516},
            {"name": "added_snapshot_id", "type": "long", "field-id": 503},
            {"name": "added_files_count", "type": "int", "field-id": 504},
            {"name": "existing_files_count", "type": "int", "field-id": 505},
            {"name": "deleted_files_count", "type": "int", "field-id": 506},
            {"name": "added_rows_count", "type": "long", "field-id": 512},
            {"name": "existing_rows_count", "type": "long", "field-id": 513},
            {"name": "deleted_rows_count", "type": "long", "field-id": 514},
            {
                "name": "partitions",
                "type": _opt({"type": "array", "items": summary, "element-id": 508}),
                "default": None,
                "field-id": 507,
            },
        ],
    }


# ---- the object container --------------------------------------------------------------------


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "null":
        return data
    if codec == "deflate":
        c = zlib.compressobj(wbits=-15)
        return c.compress(data) + c.flush()
    if codec == "snappy":  # Avro's snappy block: raw snappy + CRC32 (big-endian) of the plain bytes
        return pa.compress(data, codec="snappy", asbytes=True) + struct.pack(">I", zlib.crc32(data))
    return pa.compress(data, codec="zstd", asbytes=True)


def _decompress(codec: str, data: bytes) -> bytes:
    if codec == "null":
        return data
    if codec == "deflate":
        return zlib.decompress(data, wbits=-15)
    if codec == "snappy":
        body = data[:-4]
        size = _snappy_length(body)
        return pa.decompress(body, decompressed_size=size, codec="snappy", asbytes=True)
    if codec == "zstandard":
        return zstd_decompress(data)
    raise CorruptMetadataError(f"Iceberg Avro codec {codec!r} is not supported")


def _snappy_length(body: bytes) -> int:
    """The uncompressed length a raw snappy block starts with (a little-endian base-128 varint)."""
    shift = n = pos = 0
    while True:
        b = body[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n
        shift += 7


def zstd_decompress(data: bytes) -> bytes:
    """A zstd frame of unknown content size, through pyarrow's stream decompressor."""
    with pa.input_stream(pa.py_buffer(data), compression="zstd") as stream:
        return bytes(stream.read())


def write_container(
    schema: dict[str, Any], records: Iterable[Mapping[str, Any]], codec: str, metadata: Mapping[str, str]
) -> bytes:
    """One Avro object-container file of ``records`` in one block; ``codec`` is the option's name."""
    avro_codec = _AVRO_CODEC[codec]
    text = json.dumps(schema)
    parsed = _parsed(text)
    body = io.BytesIO()
    count = 0
    for rec in records:
        fastavro.schemaless_writer(body, parsed, rec)
        count += 1
    meta = {"avro.schema": text.encode(), "avro.codec": avro_codec.encode()}
    meta.update({k: v.encode() for k, v in metadata.items()})
    sync = os.urandom(16)
    out = header({k.encode(): v for k, v in meta.items()}, sync)
    if count:
        out += block(count, _compress(avro_codec, body.getvalue()), sync)
    return bytes(out)


@functools.lru_cache(maxsize=64)
def _parsed(text: str, plain: bool = False) -> Any:
    """A parsed schema, by its JSON text (a table's few schemas are parsed once per process)."""
    schema = json.loads(text)
    return fastavro.parse_schema(_plain(schema) if plain else schema)


def _plain(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_plain(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def read_container(data: bytes, what: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The records and the header metadata of an Avro object-container file (any writer)."""
    try:
        return _read(memoryview(data))
    except (IndexError, ValueError, KeyError, OSError, pa.ArrowException, zlib.error) as e:
        raise CorruptMetadataError(f"{what} is not a readable Avro file: {e}") from e


def _read(buf: memoryview) -> tuple[list[dict[str, Any]], dict[str, str]]:
    raw, _sync, pos = read_header(bytes(buf))
    meta = {k.decode(): v for k, v in raw.items()}
    # Logical types are read as their plain values (days, micros, unscaled bytes): the records
    # are written back unchanged when a manifest is rewritten.
    schema = _parsed(meta["avro.schema"].decode(), plain=True)
    codec = meta.get("avro.codec", b"null").decode()
    records: list[dict[str, Any]] = []
    while pos < len(buf):
        count, pos = read_long(buf, pos)
        size, pos = read_long(buf, pos)
        stored = io.BytesIO(_decompress(codec, bytes(buf[pos : pos + size])))
        pos += size + 16
        for _ in range(count):
            records.append(fastavro.schemaless_reader(stored, schema, None))  # type: ignore[arg-type]
    return records, {k: v.decode(errors="replace") for k, v in meta.items() if not k.startswith("avro.")}
