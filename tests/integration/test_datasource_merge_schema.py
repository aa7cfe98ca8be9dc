"""DataFrame writes that evolve the schema (``write.merge-schema``) and create missing tables,
through the Spark data source ``dyntable``.

Cases from Paimon 2.0's ``WriteMergeSchemaTest`` and ``DataFrameWriteTestBase`` as a DataFrame
user runs them, with Paimon's expected rows. ``saveAsTable`` needs ``.option("table", ...)``:
Spark does not hand the table name to a Python data source.
"""

from __future__ import annotations

import os
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql import Row
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from engine import open_catalog


@pytest.fixture
def catalog(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat


def _writer(df, warehouse, table, mode="append", **options):
    return (df.write.format("dyntable").option("warehouse", warehouse).option("table", table)
            .options(**options).mode(mode))


def _rows(spark, warehouse, table, order):
    df = spark.read.format("dyntable").option("warehouse", warehouse).option("table", table).load()
    return [r.asDict(recursive=True) for r in df.orderBy(order).collect()]


def _metadata(table):
    snapshots = f"{table.path}/snapshot"
    listed = os.listdir(snapshots) if os.path.isdir(snapshots) else []
    return sorted(os.listdir(f"{table.path}/schema")), sorted(n for n in listed if n.startswith("snapshot-"))


MERGE = {"write.merge-schema": "true"}


def test_new_columns_missing_columns_and_nested_fields(spark, warehouse, catalog):
    # WriteMergeSchemaTest "dataframe write" and "nested struct with new fields by dataframe".
    inner = pa.struct([("key2", pa.string()), ("key3", pa.string())])
    catalog.create_table("db.t", pa.schema([("a", pa.int32()), ("b", pa.string()),
                                            ("info", pa.struct([("key1", inner)]))]))
    t = catalog.get_table("db.t")
    _writer(spark.createDataFrame([(1, "1"), (2, "2")], "a int, b string"), warehouse, "db.t").save()
    _writer(spark.createDataFrame([(3, "3", 3)], "a int, b string, c int"), warehouse, "db.t",
            **MERGE).save()
    _writer(spark.createDataFrame([("4", "4", 4)], "d string, b string, c int"), warehouse, "db.t",
            **MERGE).save()
    key1 = StructType([StructField("key2", StringType()), StructField("key4", StringType()),
                       StructField("key3", StringType())])
    nested = StructType([StructField("a", IntegerType()),
                         StructField("info", StructType([StructField("key1", key1)]))])
    _writer(spark.createDataFrame([Row(5, Row(Row("v2", "v4", "v3")))], nested), warehouse, "db.t",
            **MERGE).save()
    rows = _rows(spark, warehouse, "db.t", "a")
    assert [(r["a"], r["b"], r["c"], r["d"]) for r in rows] == [
        (None, "4", 4, "4"), (1, "1", None, None), (2, "2", None, None), (3, "3", 3, None),
        (5, None, None, None)]
    assert rows[-1]["info"] == {"key1": {"key2": "v2", "key3": "v3", "key4": "v4"}}
    assert rows[1]["info"] is None
    # one schema version per evolving write, each published with its snapshot
    assert _metadata(t) == ([f"schema-{i}" for i in range(4)], [f"snapshot-{i}" for i in range(1, 5)])


def test_without_merge_schema_a_new_column_is_refused(spark, warehouse, catalog):
    catalog.create_table("db.t", pa.schema([("a", pa.int32())]))
    t = catalog.get_table("db.t")
    with pytest.raises(Exception, match=r"\['c'\] are not in the table"):
        _writer(spark.createDataFrame([(1, 2)], "a int, c int"), warehouse, "db.t").save()
    assert _metadata(t) == (["schema-0"], [])


@pytest.mark.parametrize("primary_key", [False, True])
def test_type_widening_and_primary_key_upserts(spark, warehouse, catalog, primary_key):
    # DataFrameWriteTestBase "Schema evolution: write data into Paimon" (bucket 2), cases 1 and 2.
    options = {"primary-key": "a", "bucket": "2"} if primary_key else {"bucket-key": "a", "bucket": "2"}
    a = pa.field("a", pa.int32(), nullable=not primary_key)
    catalog.create_table("db.t", pa.schema([a, ("b", pa.string())]), options=options)
    _writer(spark.createDataFrame([(1, "a"), (2, "b")], "a int, b string"), warehouse, "db.t").save()
    df2 = spark.createDataFrame([(1, "a2", 123), (3, "c", 345)], "a int, b string, c long")
    _writer(df2, warehouse, "db.t", **MERGE).save()
    df3 = spark.createDataFrame([(2, "b2", Decimal(234))], "a int, b string, c decimal(38,18)")
    _writer(df3, warehouse, "db.t", **MERGE, **{"write.merge-schema.type-widening": "true"}).save()
    t = catalog.get_table("db.t")
    assert str(t.arrow_schema.field("c").type) == "decimal128(38, 18)"
    assert "write.merge-schema" not in t.options
    got = [(r["a"], r["b"], None if r["c"] is None else int(r["c"]))
           for r in _rows(spark, warehouse, "db.t", "a")]
    if primary_key:
        assert got == [(1, "a2", 123), (2, "b2", 234), (3, "c", 345)]
    else:
        assert sorted(got, key=str) == sorted(
            [(1, "a", None), (1, "a2", 123), (2, "b", None), (2, "b2", 234), (3, "c", 345)], key=str)


def test_table_option_and_a_failed_job_leaves_no_schema(spark, warehouse, catalog):
    catalog.create_table("db.t", pa.schema([("a", pa.int32())]), options={"write.merge-schema": "true"})
    t = catalog.get_table("db.t")
    # The job evolves the schema (column s) but a task fails ('x' is no INT): nothing is published.
    bad = spark.createDataFrame([("1", "s"), ("x", "s")], "a string, s string")
    with pytest.raises(Exception, match="column 'a'"):
        _writer(bad, warehouse, "db.t").save()
    assert _metadata(t) == (["schema-0"], [])
    assert not [f for _, _, fs in os.walk(t.path) for f in fs if f.startswith("data-")]
    _writer(spark.createDataFrame([(1, "s")], "a int, s string"), warehouse, "db.t").save()
    assert _rows(spark, warehouse, "db.t", "a") == [{"a": 1, "s": "s"}]


def test_save_as_table_creates_a_missing_table(spark, warehouse):
    # DataFrameWriteTestBase "DataFrameWrite.saveAsTable": table options are stored, merge-schema is not.
    spark.sql("CREATE DATABASE IF NOT EXISTS db")
    try:
        # One task: a DataFrame write into a dynamic-bucket table takes one writer per partition.
        df = spark.createDataFrame([(1, "x1"), (2, "x2")], "a long, b string").coalesce(1)
        options = {"primary-key": "a", "bucket": "-1", "target-file-size": "256MB", **MERGE}
        _writer(df, warehouse, "db.test_ctas", **options).saveAsTable("db.test_ctas")
        t = open_catalog(warehouse).get_table("db.test_ctas")
        assert t.primary_keys == ("a",)
        assert t.options["bucket"] == "-1" and t.options["target-file-size"] == "256MB"
        assert "write.merge-schema" not in t.options
        # .save() of a missing table creates it too (in a missing database).
        _writer(df, warehouse, "other.t2").save()
        assert _rows(spark, warehouse, "other.t2", "a") == [{"a": 1, "b": "x1"}, {"a": 2, "b": "x2"}]
    finally:
        spark.sql("DROP TABLE IF EXISTS db.test_ctas")


def test_streaming_sink_evolves_the_table_once(spark, warehouse, catalog, tmp_path):
    # Paimon's "Write Merge Schema" streaming example: the stream has a column the sink lacks.
    catalog.create_table("db.src", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    catalog.create_table("db.dst", pa.schema([("id", pa.int64())]))
    src, dst = catalog.get_table("db.src"), catalog.get_table("db.dst")
    checkpoint = str(tmp_path / "ckpt")

    def run_once():
        query = (spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", "db.src")
                 .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1").load()
                 .writeStream.format("dyntable").option("warehouse", warehouse).option("table", "db.dst")
                 .option("write.merge-schema", "true").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)

    src.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    run_once()
    src.write_arrow(pa.table({"id": [3], "v": ["c"]}))
    run_once()
    assert _rows(spark, warehouse, "db.dst", "id") == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}]
    assert _metadata(dst)[0] == ["schema-0", "schema-1"]
