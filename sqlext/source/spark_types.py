"""Arrow ↔ Spark type bridging for the data source.

Spark's Python data source requires record batches whose column types match the declared
schema exactly (``int64`` for BIGINT, ``string`` — never ``large_string`` —, microsecond
timestamps, no dictionary arrays). ``spark_arrow_schema`` derives, once per scan, the Arrow
schema Spark accepts for a table's columns; ``to_spark_batches`` casts engine output to it.
Paimon TIMESTAMP (wall clock) maps to Spark TIMESTAMP_NTZ, TIMESTAMP_LTZ to Spark TIMESTAMP,
TIME to a string (Spark has no stable TIME type across 4.x), CHAR/VARCHAR to STRING. A top-level
CHAR(n) column is a STRING carrying Spark's char metadata (``__CHAR_VARCHAR_TYPE_STRING`` =
``char(n)``), so Spark treats it as its own CHAR(n) does: a comparison with a shorter string pads
that string with spaces (``WHERE c = 'a'`` matches the stored ``'a    '``), and DESCRIBE shows
``char(n)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructField, StructType

from engine.arrow_types import PAIMON_TYPE_KEY, VARIANT_ARROW, is_variant_arrow
from engine.types import TypeRoot, type_from_json
from sqlext.output import trim_fraction


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    if pa.types.is_time(t):
        return pa.string()
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field("element", spark_arrow_type(t.value_type), t.value_field.nullable))
    if pa.types.is_map(t):
        value = pa.field("value", spark_arrow_type(t.item_type), t.item_field.nullable)
        return pa.map_(spark_arrow_type(t.key_type), value)
    if is_variant_arrow(t):  # kept whole: the ``variant`` field tag makes it Spark's VariantType
        return VARIANT_ARROW
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in t])
    return t


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in schema])


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark StructType of an engine Arrow schema (CHAR(n) columns with Spark's char metadata)."""
    struct = from_arrow_schema(spark_arrow_schema(schema))
    fields = []
    for arrow_field, field in zip(schema, struct.fields, strict=True):
        length = _char_length(arrow_field)
        if length is not None:
            meta = {**(field.metadata or {}), CHAR_METADATA_KEY: f"char({length})"}
            field = StructField(field.name, field.dataType, field.nullable, meta)
        fields.append(field)
    return StructType(fields)


CHAR_METADATA_KEY = "__CHAR_VARCHAR_TYPE_STRING"  # Spark's CharVarcharUtils key


def _char_length(f: pa.Field) -> int | None:
    """n for a field whose exact Paimon type (``paimon.type`` metadata) is CHAR(n), else None."""
    raw = (f.metadata or {}).get(PAIMON_TYPE_KEY)
    if raw is None or not pa.types.is_string(f.type):
        return None
    try:
        t = type_from_json(json.loads(raw))
    except (ValueError, TypeError, KeyError):
        return None
    return t.length if t.root is TypeRoot.CHAR else None


def time_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """TIME values as the text Spark receives: ``12:34:56``, ``01:02:03.45`` (no trailing zero
    fraction digits, as Spark prints timestamps); the writer parses the same text back."""
    return trim_fraction(col.cast(pa.string()))


def to_spark_batches(table: pa.Table, target: pa.Schema, max_rows: int = 65_536) -> Iterator[pa.RecordBatch]:
    """Cast engine output to the exact Arrow schema Spark declared, and cut it into batches."""
    if table.num_rows == 0:
        return
    arrays = []
    for field in target:
        col = table.column(field.name)
        if pa.types.is_time(col.type):
            col = time_text(col)
        if not col.type.equals(field.type):
            col = col.cast(field.type)
        arrays.append(col)
    out = pa.Table.from_arrays(arrays, schema=target)
    yield from out.to_batches(max_chunksize=max_rows)
