"""Paimon schemas seen as Iceberg's: types, schemas, the partition spec and partition values.

One job: everything type-dependent the Iceberg metadata needs, for format versions 2 and 3.

* An Iceberg field keeps the Paimon field's id, name and nullability (``required`` = NOT NULL),
  so renamed and dropped columns keep their ids and added columns get new ones, as Iceberg
  expects. Types, as Paimon 2.0 maps them (``IcebergDataField``): BOOLEAN → boolean; TINYINT,
  SMALLINT, INT → int; BIGINT → long; FLOAT, DOUBLE; DECIMAL(p, s) → decimal(p, s); CHAR, VARCHAR
  → string; BINARY, VARBINARY → binary; DATE; TIME(0..3) → time; TIMESTAMP(3..6) → timestamp;
  TIMESTAMP_LTZ(3..6) → timestamptz; with format version 3, TIMESTAMP(7..9) → timestamp_ns and
  TIMESTAMP_LTZ(7..9) → timestamptz_ns (their files hold INT64 nanosecond timestamps, which is
  what Iceberg v3 stores); ROW → struct; ARRAY → list, MAP → map, MULTISET → map to a required
  int (its count), their element, key and value ids being the Parquet field ids Paimon 2.0 gives
  them (``engine.write.nested_ids``). Whether the data files carry those ids is the commit's
  check (``engine.iceberg.nested``).
  Anything else raises :class:`IcebergUnsupportedError` naming the column, as Paimon refuses it:
  TIME(4..9), timestamps of precision 0–2, nanosecond timestamps with format version 2 (the
  error says to set format version 3), VARIANT (an Iceberg v3 type that needs row lineage,
  which neither Paimon nor dyntable writes).
* The partition spec has one identity field per Paimon partition key, field ids 1000 and up.
* Partition values (Paimon's BinaryRow, decoded) become the Avro values of the partition record,
  and the manifest list's partition summaries carry Iceberg's single-value binary bounds.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.errors import UnsupportedTableError
from engine.schema import TableSchema
from engine.types import DataField, DataType, TypeRoot
from engine.write.nested_ids import array_element_id, map_key_id, map_value_id

__all__ = [
    "FIRST_PARTITION_FIELD_ID",
    "IcebergUnsupportedError",
    "from_avro_value",
    "iceberg_schema",
    "partition_avro_fields",
    "partition_avro_value",
    "partition_spec",
    "single_value_bytes",
]

FIRST_PARTITION_FIELD_ID = 1000
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)


class IcebergUnsupportedError(UnsupportedTableError):
    """The table has a column Iceberg metadata cannot describe for dyntable's data files."""


_SIMPLE = {
    TypeRoot.BOOLEAN: "boolean",
    TypeRoot.TINYINT: "int",
    TypeRoot.SMALLINT: "int",
    TypeRoot.INT: "int",
    TypeRoot.BIGINT: "long",
    TypeRoot.FLOAT: "float",
    TypeRoot.DOUBLE: "double",
    TypeRoot.CHAR: "string",
    TypeRoot.VARCHAR: "string",
    TypeRoot.BINARY: "binary",
    TypeRoot.VARBINARY: "binary",
    TypeRoot.DATE: "date",
}


def _type(t: DataType, path: str, field_id: int, format_version: int, depth: int = 0) -> Any:
    """The Iceberg type of ``t``, at ``depth`` below the field ``field_id`` (Paimon's
    ``IcebergDataField``: collection members take ids from the field holding them)."""
    simple = _SIMPLE.get(t.root)
    if simple is not None:
        return simple
    if t.root is TypeRoot.DECIMAL:
        return f"decimal({t.precision}, {t.scale})"
    if t.root is TypeRoot.TIME:
        # Stored as Parquet TIME_MILLIS (Paimon's layout). Iceberg writers store time in microseconds,
        # but Iceberg's own Parquet readers read milliseconds too; Paimon publishes TIME(0..3) so.
        if (t.precision or 0) <= 3:
            return "time"
        raise IcebergUnsupportedError(
            f"column {path} has type TIME({t.precision}): Iceberg metadata (metadata.iceberg.storage) "
            "describes TIME of precision 0 to 3 only, as Paimon's; see docs/iceberg.md"
        )
    if t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        p = 6 if t.precision is None else t.precision
        local = t.root is TypeRoot.TIMESTAMP_LTZ
        if 3 <= p <= 6:
            return "timestamptz" if local else "timestamp"
        if p >= 7 and format_version >= 3:
            return "timestamptz_ns" if local else "timestamp_ns"
        if p >= 7:
            raise IcebergUnsupportedError(
                f"column {path} has type {t.root.value}({p}), a nanosecond timestamp: Iceberg has "
                "timestamp_ns/timestamptz_ns from format version 3 on; set "
                "'metadata.iceberg.format-version' = '3' to publish it (metadata.iceberg.storage)"
            )
    if t.root is TypeRoot.VARIANT:
        raise IcebergUnsupportedError(
            f"column {path} has type VARIANT, which dyntable does not publish as Iceberg metadata "
            "(metadata.iceberg.storage), as Paimon does not: Iceberg's variant is a format version 3 "
            "type whose tables need row lineage, which neither writes; see docs/iceberg.md"
        )
    if t.root is TypeRoot.ROW:
        return {"type": "struct", "fields": [_field(f, f"{path}.{f.name}", format_version) for f in t.fields]}
    d = depth + 1
    if t.root is TypeRoot.ARRAY:
        assert t.element is not None
        return {
            "type": "list",
            "element-id": array_element_id(field_id, d),
            "element-required": not t.element.nullable,
            "element": _type(t.element, f"{path}.element", field_id, format_version, d),
        }
    if t.root in (TypeRoot.MAP, TypeRoot.MULTISET):
        key = t.element if t.root is TypeRoot.MULTISET else t.key
        assert key is not None
        value: Any = "int"  # a MULTISET's count, never NULL
        value_required = True
        if t.root is TypeRoot.MAP:
            assert t.value is not None
            value = _type(t.value, f"{path}.value", field_id, format_version, d)
            value_required = not t.value.nullable
        return {
            "type": "map",
            "key-id": map_key_id(field_id, d),
            "key": _type(key, f"{path}.key", field_id, format_version, d),
            "value-id": map_value_id(field_id, d),
            "value-required": value_required,
            "value": value,
        }
    raise IcebergUnsupportedError(
        f"column {path} has type {t.root.value}"
        + (f"({t.precision})" if t.precision is not None else "")
        + ", which dyntable cannot publish as Iceberg metadata (metadata.iceberg.storage): "
        "see docs/iceberg.md for the types it can"
    )


def _field(f: DataField, path: str, format_version: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f.id,
        "name": f.name,
        "required": not f.type.nullable,
        "type": _type(f.type, path, f.id, format_version),
    }
    if f.description:
        out["doc"] = f.description
    return out


def iceberg_schema(schema: TableSchema, format_version: int = 2) -> dict[str, Any]:
    """The Iceberg schema (``schema-id`` = the Paimon schema id) of a Paimon schema version, for
    Iceberg metadata of ``format_version``."""
    return {
        "type": "struct",
        "schema-id": schema.id,
        "fields": [_field(f, f.name, format_version) for f in schema.fields],
    }


def partition_spec(schema: TableSchema) -> dict[str, Any]:
    """Spec 0: one identity field per partition key."""
    fields = []
    for i, key in enumerate(schema.partition_keys):
        f = schema.field(key)
        fields.append(
            {
                "name": f.name,
                "transform": "identity",
                "source-id": f.id,
                "field-id": FIRST_PARTITION_FIELD_ID + i,
            }
        )
    return {"spec-id": 0, "fields": fields}


def _decimal_size(precision: int) -> int:
    """Iceberg's fixed size of a decimal: the fewest bytes that hold 10^precision − 1 signed."""
    n = 1
    while 2 ** (8 * n - 1) - 1 < 10**precision - 1:
        n += 1
    return n


def _avro_type(t: DataType, name: str, column: str) -> Any:
    """The Avro type of partition column ``column``'s values (``name``: its Avro fixed name)."""
    r = t.root
    if r in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT):
        return "int"
    if r is TypeRoot.BIGINT:
        return "long"
    if r in (TypeRoot.CHAR, TypeRoot.VARCHAR):
        return "string"
    if r in (TypeRoot.BINARY, TypeRoot.VARBINARY):
        return "bytes"
    if r in (TypeRoot.BOOLEAN, TypeRoot.FLOAT, TypeRoot.DOUBLE):
        return r.value.lower()
    if r is TypeRoot.DATE:
        return {"type": "int", "logicalType": "date"}
    if r is TypeRoot.TIME:
        return {"type": "long", "logicalType": "time-micros"}
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ) and _nanos_type(t):
        # Iceberg's Avro form is timestamp-nanos, which pyiceberg (0.10 to 0.12) cannot read in a
        # manifest; Paimon's Avro writer refuses precision above 6 here, so it publishes none either.
        raise IcebergUnsupportedError(
            f"partition column {column} has type {r.value}({t.precision}): a nanosecond timestamp is "
            "not published as an Iceberg partition value (Paimon does not either); see docs/iceberg.md"
        )
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return {
            "type": "long",
            "logicalType": "timestamp-micros",
            "adjust-to-utc": r is TypeRoot.TIMESTAMP_LTZ,
        }
    if r is TypeRoot.DECIMAL:
        assert t.precision is not None
        return {
            "type": "fixed",
            "name": f"fixed_{name}",
            "size": _decimal_size(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    raise IcebergUnsupportedError(
        f"partition column {column} has type {r.value}, which has no Iceberg partition value"
    )


def partition_avro_fields(schema: TableSchema) -> list[dict[str, Any]]:
    """The Avro fields of the manifests' partition record (``r102``)."""
    return [
        {
            "name": key,
            "type": ["null", _avro_type(schema.field(key).type, f"{1000 + i}", key)],
            "default": None,
            "field-id": FIRST_PARTITION_FIELD_ID + i,
        }
        for i, key in enumerate(schema.partition_keys)
    ]


def _nanos_type(t: DataType) -> bool:
    """TIMESTAMP(7..9) / TIMESTAMP_LTZ(7..9): Iceberg's timestamp_ns / timestamptz_ns."""
    return t.precision is not None and t.precision >= 7


def _nanos(value: Any) -> int:
    """Nanoseconds since the epoch of a decoded timestamp (a ``datetime64`` when it has
    sub-microsecond digits, else a ``datetime``)."""
    if isinstance(value, np.datetime64):
        return int(value.astype("datetime64[ns]").astype(np.int64))
    return _micros(value) * 1000


def _epoch_value(value: Any, t: DataType) -> int:
    """A timestamp as Iceberg stores it: micros, or nanos for the nanosecond types."""
    return _nanos(value) if _nanos_type(t) else _micros(value)


def _micros(value: Any) -> int:
    if isinstance(value, np.datetime64):
        return int(value.astype("datetime64[us]").astype(np.int64))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    raise TypeError(f"not a timestamp: {value!r}")


def _unscaled(value: decimal.Decimal, scale: int) -> int:
    return int(value.scaleb(scale).to_integral_value())


def partition_avro_value(value: Any, t: DataType) -> Any:
    """A decoded Paimon partition value as the Avro partition record holds it (fastavro form)."""
    if value is None:
        return None
    r = t.root
    if r is TypeRoot.DATE:
        return (value - _EPOCH_DATE).days
    if r is TypeRoot.TIME:
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return _micros(value)
    if r is TypeRoot.DECIMAL:
        assert t.precision is not None and t.scale is not None
        return _unscaled(value, t.scale).to_bytes(_decimal_size(t.precision), "big", signed=True)
    return value


def from_avro_value(value: Any, t: DataType) -> Any:
    """The inverse of :func:`partition_avro_value` (for the bounds of partition summaries)."""
    if value is None:
        return None
    r = t.root
    if r is TypeRoot.DATE:
        return _EPOCH_DATE + dt.timedelta(days=value)
    if r is TypeRoot.TIME:
        return (dt.datetime.min + dt.timedelta(microseconds=value)).time()
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return _EPOCH + dt.timedelta(microseconds=value)
    if r is TypeRoot.DECIMAL:
        assert t.scale is not None
        if isinstance(value, decimal.Decimal):  # fastavro's reader decodes the logical type
            return value
        return decimal.Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-t.scale)
    return value


def single_value_bytes(value: Any, t: DataType) -> bytes:
    """Iceberg's single-value binary serialization of a (decoded, non-null) Paimon value."""
    r = t.root
    if r is TypeRoot.BOOLEAN:
        return b"\x01" if value else b"\x00"
    if r in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT):
        return struct.pack("<i", value)
    if r is TypeRoot.DATE:
        return struct.pack("<i", (value - _EPOCH_DATE).days)
    if r is TypeRoot.BIGINT:
        return struct.pack("<q", value)
    if r is TypeRoot.TIME:
        return struct.pack("<q", partition_avro_value(value, t))
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return struct.pack("<q", _epoch_value(value, t))
    if r is TypeRoot.FLOAT:
        return struct.pack("<f", value)
    if r is TypeRoot.DOUBLE:
        return struct.pack("<d", value)
    if r in (TypeRoot.CHAR, TypeRoot.VARCHAR):
        return str(value).encode()
    if r in (TypeRoot.BINARY, TypeRoot.VARBINARY):
        return bytes(value)
    if r is TypeRoot.DECIMAL:
        assert t.scale is not None
        n = _unscaled(value, t.scale)
        return n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True)
    raise IcebergUnsupportedError(f"no Iceberg single-value form for {r.value}")


def partition_summaries(values: Sequence[Sequence[Any]], types: Sequence[DataType]) -> list[dict[str, Any]]:
    """The manifest list's per-field partition summaries of the partitions in one manifest."""
    out = []
    for i, t in enumerate(types):
        column = [v[i] for v in values]
        present = [v for v in column if v is not None]
        nan = None
        if t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            nan = any(v != v for v in present)
            present = [v for v in present if v == v]
        lower = upper = None
        if present:
            lower = single_value_bytes(min(present), t)
            upper = single_value_bytes(max(present), t)
        out.append(
            {
                "contains_null": len(present) < len(column) and any(v is None for v in column),
                "contains_nan": nan,
                "lower_bound": lower,
                "upper_bound": upper,
            }
        )
    return out
