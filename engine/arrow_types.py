"""How Paimon's logical types cross into Arrow and back.

:func:`to_arrow_type` / :func:`to_arrow_field` give the Arrow type every reader and writer uses
for a column (never ``large_*``; the field carries its Paimon field id as Parquet's
``PARQUET:field_id`` and the exact Paimon type JSON, so CHAR(5) or TIME(0) survive a round trip);
:func:`from_arrow_type` / :func:`from_arrow_field` read a Paimon type back from Arrow, taking the
declared type where the field carries one. Invariant (property-tested):
``from_arrow_field(to_arrow_field(f)) == f``. The type records themselves are :mod:`engine.types`.
"""

from __future__ import annotations

import json

import pyarrow as pa

from engine.errors import InvalidArgumentError
from engine.types import (
    ARRAY,
    BINARY,
    BYTES,
    DATE,
    DECIMAL,
    FLOAT,
    MAP,
    ROW,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    VARIANT,
    DataField,
    DataType,
    TypeRoot,
    type_from_json,
    type_to_json,
)

FIELD_ID_KEY = b"PARQUET:field_id"  # pyarrow turns this field metadata into Parquet field ids
PAIMON_TYPE_KEY = b"paimon.type"  # exact Paimon type JSON, so CHAR(5) / TIME(0) survive Arrow
DESCRIPTION_KEY = b"paimon.description"  # the column comment, only when there is one
_TS_UNIT = ((3, "ms"), (6, "us"), (9, "ns"))
_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_ARROW_SIMPLE: dict[TypeRoot, pa.DataType] = {
    TypeRoot.BOOLEAN: pa.bool_(), TypeRoot.TINYINT: pa.int8(), TypeRoot.SMALLINT: pa.int16(),
    TypeRoot.INT: pa.int32(), TypeRoot.BIGINT: pa.int64(), TypeRoot.FLOAT: pa.float32(),
    TypeRoot.DOUBLE: pa.float64(), TypeRoot.CHAR: pa.string(), TypeRoot.VARCHAR: pa.string(),
    TypeRoot.BINARY: pa.binary(), TypeRoot.VARBINARY: pa.binary(), TypeRoot.DATE: pa.date32(),
}  # fmt: skip


#: A VARIANT as Paimon's Parquet writer lays it out: a group of the required binaries ``value``
#: (field id 0) then ``metadata`` (field id 1), no logical-type annotation. The ``variant`` tag on
#: ``metadata`` is pyspark's marker for its VariantType in Arrow (``pyspark.sql.pandas.types``), so
#: the same struct crosses into Spark as a VARIANT; Parquet keeps only the field ids.
VARIANT_ARROW = pa.struct([
    pa.field("value", pa.binary(), False, metadata={FIELD_ID_KEY: b"0"}),
    pa.field("metadata", pa.binary(), False, metadata={FIELD_ID_KEY: b"1", b"variant": b"true"}),
])  # fmt: skip


def is_variant_arrow(a: pa.DataType) -> bool:
    """Whether an Arrow type is a variant struct: ``value`` and ``metadata`` binaries, the latter
    tagged ``variant=true`` (pyspark's marker) — a plain two-binary ROW stays a ROW."""
    if not pa.types.is_struct(a) or a.num_fields != 2:
        return False
    names = {a.field(i).name: a.field(i) for i in range(2)}
    meta = names.get("metadata")
    return (
        "value" in names and meta is not None and (meta.metadata or {}).get(b"variant") == b"true"
        and all(pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type) for f in names.values())
    )


def to_arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type dyntable uses in memory and in Parquet for a Paimon type.

    Never ``large_*`` (Spark's Arrow batches need ``string``/``binary``). List elements are
    named ``element`` and map entries ``key``/``value`` as in compliant Parquet; nested
    nullability follows the Paimon types; ROW fields carry the metadata of
    :func:`to_arrow_field`.
    """
    r = t.root
    simple = _ARROW_SIMPLE.get(r)
    if simple is not None:
        return simple
    if r is TypeRoot.DECIMAL:
        assert t.precision is not None and t.scale is not None
        return pa.decimal128(t.precision, t.scale)
    if r is TypeRoot.TIME:
        # Paimon keeps a TIME of any precision as milliseconds of the day (Parquet INT32
        # TIME_MILLIS); Java Paimon reads no other layout.
        return pa.time32("ms")
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        p = 6 if t.precision is None else t.precision
        unit = next(u for limit, u in _TS_UNIT if p <= limit)
        return pa.timestamp(unit, tz="UTC" if r is TypeRoot.TIMESTAMP_LTZ else None)
    if r is TypeRoot.ARRAY:
        assert t.element is not None
        return pa.list_(pa.field("element", to_arrow_type(t.element), t.element.nullable))
    if r is TypeRoot.MULTISET:  # Paimon stores a multiset as MAP<element, INT NOT NULL>
        assert t.element is not None
        return pa.map_(pa.field("key", to_arrow_type(t.element), False), pa.field("value", pa.int32(), False))
    if r is TypeRoot.MAP:
        assert t.key is not None and t.value is not None
        value = pa.field("value", to_arrow_type(t.value), t.value.nullable)
        return pa.map_(pa.field("key", to_arrow_type(t.key), False), value)
    if r is TypeRoot.ROW:
        return pa.struct([to_arrow_field(f) for f in t.fields])
    if r is TypeRoot.VARIANT:
        return VARIANT_ARROW
    raise InvalidArgumentError(f"no Arrow mapping for {r.value}")


def to_arrow_field(f: DataField) -> pa.Field:
    """An Arrow field with the Parquet field id (= Paimon field id), the exact Paimon type and comment."""
    meta = {FIELD_ID_KEY: str(f.id).encode(), PAIMON_TYPE_KEY: json.dumps(type_to_json(f.type)).encode()}
    if f.description is not None:
        meta[DESCRIPTION_KEY] = f.description.encode()
    return pa.field(f.name, to_arrow_type(f.type), f.type.nullable, metadata=meta)


def from_arrow_field(f: pa.Field, default_id: int = 0) -> DataField:
    """Inverse of :func:`to_arrow_field`.

    The ``paimon.type`` metadata wins when it still describes the Arrow type (so CHAR(5) comes
    back as CHAR(5)); otherwise the type is inferred with :func:`from_arrow_type`. The id comes
    from ``PARQUET:field_id`` or is ``default_id``.
    """
    meta = f.metadata or {}
    fid = default_id
    if FIELD_ID_KEY in meta:
        try:
            fid = int(meta[FIELD_ID_KEY])
        except ValueError:
            raise InvalidArgumentError(f"field {f.name!r} has a bad id {meta[FIELD_ID_KEY]!r}") from None
    t: DataType | None = None
    if PAIMON_TYPE_KEY in meta:
        try:
            declared = type_from_json(json.loads(meta[PAIMON_TYPE_KEY]))
            if to_arrow_type(declared) == f.type:
                t = declared.copy(f.nullable)
        except (ValueError, InvalidArgumentError):
            t = None  # stale or foreign metadata: fall back to inference
    if t is None:
        t = from_arrow_type(f.type, f.nullable)
    desc = meta.get(DESCRIPTION_KEY)
    return DataField(fid, f.name, t, desc.decode() if desc is not None else None)


def from_arrow_type(a: pa.DataType, nullable: bool = True) -> DataType:  # noqa: C901
    """The Paimon type for an Arrow type (inverse of :func:`to_arrow_type`, plus aliases).

    ``large_string``/``string_view`` → STRING, ``large_binary``/``binary_view`` → BYTES,
    ``fixed_size_binary(n)`` → BINARY(n), ``timestamp('s')`` → TIMESTAMP(0), any time zone →
    TIMESTAMP_LTZ, dictionaries → their value type, unsigned ints → the next wider signed type
    (uint64 has none), struct fields without ids are numbered 0.. in order.

    Raises:
        InvalidArgumentError: no Paimon type can hold the Arrow type (e.g. uint64, duration, null).
    """
    if pa.types.is_dictionary(a):
        return from_arrow_type(a.value_type, nullable)
    if pa.types.is_string(a) or pa.types.is_large_string(a) or pa.types.is_string_view(a):
        return STRING(nullable)
    if pa.types.is_binary(a) or pa.types.is_large_binary(a) or pa.types.is_binary_view(a):
        return BYTES(nullable)
    for root, simple in _ARROW_SIMPLE.items():
        if a == simple:
            return DataType(root, nullable)
    if pa.types.is_fixed_size_binary(a):
        return BINARY(a.byte_width, nullable)
    widened = {pa.uint8(): TypeRoot.SMALLINT, pa.uint16(): TypeRoot.INT, pa.uint32(): TypeRoot.BIGINT}
    if a in widened:
        return DataType(widened[a], nullable)
    if pa.types.is_float16(a):
        return FLOAT(nullable)
    if pa.types.is_date64(a):
        return DATE(nullable)
    if pa.types.is_decimal(a):
        if a.precision > 38:
            raise InvalidArgumentError(f"{a} has precision {a.precision}; Paimon DECIMAL allows at most 38")
        return DECIMAL(a.precision, a.scale, nullable)
    if pa.types.is_time(a):
        return TIME(_UNIT_PRECISION[a.unit], nullable)
    if pa.types.is_timestamp(a):
        p = _UNIT_PRECISION[a.unit]
        return TIMESTAMP_LTZ(p, nullable) if a.tz else TIMESTAMP(p, nullable)
    if pa.types.is_list(a) or pa.types.is_large_list(a) or pa.types.is_fixed_size_list(a):
        vf = a.value_field
        return ARRAY(from_arrow_field(vf).type, nullable)
    if pa.types.is_map(a):
        return MAP(from_arrow_type(a.key_type, False), from_arrow_field(a.item_field).type, nullable)
    if is_variant_arrow(a):
        return VARIANT(nullable)
    if pa.types.is_struct(a):
        return ROW([from_arrow_field(a.field(i), i) for i in range(a.num_fields)], nullable)
    raise InvalidArgumentError(f"Arrow type {a} has no Paimon equivalent; cast the column first")


# ---- Type widening (ALTER COLUMN ... TYPE) ----------------------------------------------------
