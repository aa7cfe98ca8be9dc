"""ORC data files (``file.format = 'orc'``): dyntable writes them as Paimon does, Java Paimon 0.9 and
pypaimon 2.1 read them row for row, and dyntable reads theirs.

Every ORC column is named as its field and carries the field id as the ``paimon.id`` type
attribute (``engine.meta.file_formats``); statistics, key ranges and file indexes are dyntable's
own, format-independent. A table may switch ``file.format``: files of both formats read together.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from engine.meta.file_formats import ORC_ID
from tests.compat.harness import PyPaimon
from tests.compat.java_oracle import JavaPaimon, arrow_rows
from tests.compat.test_newer_features import _rows

SCHEMA = pa.schema([
    pa.field("k", pa.int32(), nullable=False), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()),
    ("i64", pa.int64()), ("f32", pa.float32()), ("f64", pa.float64()), ("d9", pa.decimal128(9, 2)),
    ("dec30", pa.decimal128(30, 4)), ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()),
    ("ts", pa.timestamp("us")), ("ts3", pa.timestamp("ms")),
])
DATA = pa.table({
    "k": [1, 2, 3], "b": [True, False, None], "i8": [1, -1, None], "i16": [2, None, 3],
    "i64": [2**40, None, -5], "f32": [1.5, None, -2.0], "f64": [2.5, 0.0, None],
    "d9": [decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")],
    "dec30": [decimal.Decimal("12345678901234567890.1234"), None, decimal.Decimal("0.0001")],
    "s": ["x", "", None], "bin": [b"\x00\xff", None, b""],
    "d": [dt.date(2024, 1, 2), None, dt.date(1969, 12, 31)],
    "ts": [dt.datetime(2024, 1, 2, 3, 4, 5, 123456), None, dt.datetime(1970, 1, 1)],
    "ts3": [dt.datetime(2024, 1, 2, 3, 4, 5, 123000), None, dt.datetime(2000, 1, 1)],
}, schema=SCHEMA)


def ours(catalog, name: str) -> list[tuple]:
    return arrow_rows(catalog.get_table(name).to_arrow())


def _files(t) -> list:
    return [f for s in t.new_scan().plan().splits for f in s.files]


@pytest.mark.java
@pytest.mark.parametrize("keys", [["k"], []], ids=["primary-key", "append"])
def test_java_reads_every_type_dyntable_writes_as_orc(java: JavaPaimon, catalog, keys):
    name = f"db.orc_{len(keys)}"
    t = catalog.create_table(name, SCHEMA, primary_keys=keys,
                             options={"file.format": "orc", **({"bucket": "1"} if keys else {})})
    t.write_arrow(DATA)
    t.write_arrow(DATA.slice(1, 1))
    t = t.refresh()
    files = _files(t)
    assert files and all(f.file_name.endswith(".orc") for f in files)
    path = t.store.paths.data_file("", 0, files[0].file_name)
    schema = orc.ORCFile(path).schema
    assert schema.field("k").metadata[ORC_ID] == str(t.store.schema.field("k").id).encode()
    columns, rows = java.read_full(name)
    assert columns == SCHEMA.names and rows == ours(catalog, name)
    t.compact(full=True)
    assert java.read(name) == ours(catalog, name)
    java.compact(name)
    assert java.read(name) == ours(catalog, name)


@pytest.mark.java
def test_dyntable_reads_java_orc_writes_and_keeps_writing(java: JavaPaimon, catalog):
    java.create_table("db.jorc", [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("ts", "TIMESTAMP(6)"),
                                  ("d", "DECIMAL(10, 2)")],
                      primary_keys=["id"], options={"bucket": "2", "file.format": "orc"})
    java.write("db.jorc", [[1, "a", "2024-01-02T03:04:05.123456", "1.25"], [2, None, None, None]])
    t = catalog.get_table("db.jorc")
    assert all(f.file_name.endswith(".orc") for f in _files(t))
    assert ours(catalog, "db.jorc") == java.read("db.jorc")
    assert ours(catalog, "db.jorc")[0][:2] == (1, "a")
    t.write_arrow(pa.table({"id": [2, 3], "v": ["b", "c"], "ts": [None, dt.datetime(2020, 1, 1)],
                            "d": [None, decimal.Decimal("9.99")]}, schema=t.arrow_schema))
    t.compact(full=True)
    assert ours(catalog, "db.jorc") == java.read("db.jorc") and len(java.read("db.jorc")) == 3


@pytest.mark.compat
def test_pypaimon_reads_dyntable_orc_and_a_format_switch(pypaimon: PyPaimon, catalog):
    t = catalog.create_table("db.sw", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    t.write_arrow(DATA)
    from engine.schema_changes import SetOption

    catalog.alter_table("db.sw", [SetOption("file.format", "orc")])
    t = catalog.get_table("db.sw")
    t.write_arrow(DATA.slice(0, 2).set_column(9, "s", pa.array(["y", "z"])))
    assert {f.file_name.rsplit(".", 1)[1] for f in _files(t)} == {"parquet", "orc"}
    assert _rows(pypaimon.read(catalog.warehouse, "db.sw")) == _rows(t.to_arrow())
    t.compact(full=True)
    t = t.refresh()
    assert "orc" in {f.file_name.rsplit(".", 1)[1] for f in _files(t)}  # a rewritten bucket's file
    assert _rows(pypaimon.read(catalog.warehouse, "db.sw")) == _rows(t.to_arrow())
    pypaimon.write(catalog.warehouse, "db.sw", DATA.slice(2, 1))
    assert _rows(pypaimon.read(catalog.warehouse, "db.sw")) == _rows(t.refresh().to_arrow())


@pytest.mark.java
@pytest.mark.spark
def test_sql_and_dataframes_write_orc_that_java_reads(java: JavaPaimon, catalog, spark):
    from sqlext.session import SqlSession

    session = SqlSession(spark, warehouse=catalog.warehouse)
    try:
        list(session.execute("CREATE TABLE db.q (id BIGINT, v STRING, ts TIMESTAMP_NTZ) TBLPROPERTIES ("
                             "'file.format' = 'orc', 'primary-key' = 'id', 'bucket' = '2')"))
        list(session.execute("INSERT INTO db.q VALUES (1, 'a', TIMESTAMP_NTZ'2024-01-02 03:04:05.123456'), "
                             "(2, 'b', NULL)"))
        df = spark.createDataFrame([(2, "z", None), (3, "c", None)], "id BIGINT, v STRING, ts TIMESTAMP_NTZ")
        (df.write.format("dyntable").option("warehouse", catalog.warehouse).option("table", "db.q")
         .mode("append").save())
        list(session.execute("CALL sys.compact(table => 'db.q')"))
        got = sorted(tuple(r) for r in session.sql("SELECT id, v FROM db.q").collect())
        assert got == [(1, "a"), (2, "z"), (3, "c")]
        assert [r[:2] for r in java.read("db.q")] == got
        assert ours(catalog, "db.q") == java.read("db.q")
        t = catalog.get_table("db.q")
        assert all(f.file_name.endswith(".orc") for f in _files(t))
    finally:
        session.stop_jobs()
