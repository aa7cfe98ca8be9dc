"""VARIANT without a JVM (issue 36): the schema encoding, the Parquet layout Paimon's writer uses
(``ParquetSchemaConverter``: a group of required binaries ``value`` id 0 and ``metadata`` id 1, no
logical-type annotation), no min/max statistics, the refusals Paimon documents, the variants Spark
sends (NULL variants with NULL children) and the stored layouts dyntable will or will not read."""

from __future__ import annotations

import glob
import json
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.arrow_types import VARIANT_ARROW, from_arrow_field, to_arrow_field
from engine.errors import InvalidArgumentError, UnsupportedTableError
from engine.files.evolve import conform_column
from engine.frozen import FrozenMap
from engine.scan.file_stats import decode_stats
from engine.schema import TableSchema, validate_schema
from engine.types import (
    ARRAY,
    INT,
    MAP,
    ROW,
    STRING,
    VARIANT,
    DataField,
    parse_sql_type,
    type_from_json,
    type_to_json,
    type_to_sql,
)

# Parquet Variant binary encoding: metadata version 1 with no keys; int8 5; short string "hi".
META = b"\x01\x00\x00"
FIVE, HI = b"\x0c\x05", b"\x09hi"


def test_variant_type_text_json_and_arrow():
    assert type_to_json(VARIANT()) == "VARIANT" and type_to_json(VARIANT(False)) == "VARIANT NOT NULL"
    assert type_from_json("VARIANT NOT NULL") == VARIANT(False)
    assert parse_sql_type("variant") == VARIANT() and type_to_sql(VARIANT(False)) == "VARIANT NOT NULL"
    nested = parse_sql_type("STRUCT<a: ARRAY<VARIANT>, m: MAP<STRING, VARIANT>>")
    assert nested.fields[0].type == ARRAY(VARIANT()) and nested.fields[1].type == MAP(STRING(), VARIANT())
    field = DataField(4, "v", VARIANT())
    assert from_arrow_field(to_arrow_field(field)) == field
    assert [f.name for f in VARIANT_ARROW] == ["value", "metadata"]
    # A plain struct of two binaries stays a ROW: only pyspark's variant tag makes a VARIANT.
    plain = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
    assert from_arrow_field(pa.field("r", plain)).type.root.value == "ROW"


def _write(catalog, name, schema, columns, **kwargs):
    table = catalog.create_table(name, schema, **kwargs)
    table.write_arrow(pa.table(columns, schema=schema))
    return table


def test_schema_file_parquet_layout_and_statistics(catalog, warehouse):
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("v", VARIANT_ARROW)])
    values = pa.array([{"value": FIVE, "metadata": META}, None, {"value": HI, "metadata": META}],
                      VARIANT_ARROW)
    table = _write(catalog, "db.v", schema, {"id": pa.array([1, 2, 3], pa.int32()), "v": values})
    schema_file = json.loads(open(glob.glob(f"{warehouse}/**/schema/schema-0", recursive=True)[0]).read())
    assert schema_file["fields"][1] == {"id": 1, "name": "v", "type": "VARIANT"}

    [data_file] = glob.glob(f"{warehouse}/**/*.parquet", recursive=True)
    group = pq.ParquetFile(data_file).schema.to_arrow_schema()
    parquet_schema = str(pq.ParquetFile(data_file).schema)
    assert "optional group field_id=1 v {" in parquet_schema
    assert "required binary field_id=0 value;" in parquet_schema
    assert "required binary field_id=1 metadata;" in parquet_schema
    assert parquet_schema.index(" value;") < parquet_schema.index(" metadata;")
    assert "(Variant" not in parquet_schema and "(VARIANT" not in parquet_schema  # no annotation
    assert group.field("v").type.num_fields == 2

    [file] = [f for s in table.new_scan().plan().splits for f in s.files]
    stats = decode_stats(file.value_stats, table.schema.fields)
    assert (stats[1].min, stats[1].max, stats[1].null_count) == (None, None, 1)  # no min/max for a variant
    assert (stats[0].min, stats[0].max) == (1, 3)
    assert table.to_arrow().column("v").to_pylist() == [
        {"value": FIVE, "metadata": META}, None, {"value": HI, "metadata": META}]


def test_spark_null_variants_are_written_and_broken_variants_refused(catalog):
    # Spark's Arrow form leaves NULL children under a NULL variant although they are declared NOT NULL.
    spark_form = pa.StructArray.from_arrays(
        [pa.array([FIVE, None]), pa.array([META, None])], fields=list(VARIANT_ARROW),
        mask=pa.array([False, True]))
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("v", VARIANT_ARROW)])
    table = _write(catalog, "db.s", schema, {"id": pa.array([1, 2], pa.int32()), "v": spark_form})
    assert table.to_arrow().column("v").to_pylist() == [{"value": FIVE, "metadata": META}, None]
    broken = pa.StructArray.from_arrays([pa.array([None], pa.binary()), pa.array([META])],
                                        fields=list(VARIANT_ARROW))
    with pytest.raises(InvalidArgumentError, match="NULL value or metadata"):
        table.write_arrow(pa.table({"id": pa.array([3], pa.int32()), "v": broken}, schema=schema))


def test_stored_variant_children_are_taken_by_name_and_shredding_is_refused():
    other_order = pa.StructArray.from_arrays([pa.array([META]), pa.array([HI])], names=["metadata", "value"])
    assert conform_column(other_order, VARIANT(), VARIANT()).to_pylist() == [{"value": HI, "metadata": META}]
    shredded = pa.StructArray.from_arrays(
        [pa.array([META]), pa.array([None], pa.binary()), pa.array([5], pa.int32())],
        names=["metadata", "value", "typed_value"])
    with pytest.raises(UnsupportedTableError, match="shredded VARIANT"):
        conform_column(shredded, VARIANT(), VARIANT())
    in_row = pa.StructArray.from_arrays([shredded], names=["v"])
    row_type = ROW([DataField(1, "v", VARIANT())])
    with pytest.raises(UnsupportedTableError, match="shredded VARIANT"):
        conform_column(in_row, row_type, row_type)


def test_variant_keys_partitions_and_other_formats_are_refused():
    fields = [("id", INT()), ("v", VARIANT())]
    with pytest.raises(InvalidArgumentError, match="VARIANT, which cannot be a primary key column"):
        TableSchema.create(fields, primary_keys=["v"], options={"bucket": "1"})
    with pytest.raises(InvalidArgumentError, match="VARIANT, which cannot be a partition column"):
        TableSchema.create(fields, partition_keys=["v"])
    with pytest.raises(InvalidArgumentError, match="VARIANT, which cannot be a bucket-key column"):
        TableSchema.create(fields, options={"bucket": "2", "bucket-key": "v"})
    schema = TableSchema.create([("id", INT()), ("a", ARRAY(VARIANT()))])
    for fmt in ("orc", "avro"):
        with pytest.raises(UnsupportedTableError, match="only in Parquet"):
            validate_schema(replace(schema, options=FrozenMap({**schema.options, "file.format": fmt})))
