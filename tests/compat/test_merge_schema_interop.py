"""Schema evolution on write against pypaimon 2.1: pypaimon reads the rows of tables dyntable's
merge-schema writes evolved (new columns and nested fields), and dyntable evolves and writes a
table whose schema pypaimon evolved."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.compat.harness import PyPaimon

pytestmark = pytest.mark.compat


def _by_id(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["id"])


def test_pypaimon_reads_after_evolving_writes(pypaimon: PyPaimon, catalog):
    info = pa.struct([("f1", pa.string()), ("f2", pa.string())])
    catalog.create_table("db.t", pa.schema([pa.field("id", pa.int32(), nullable=False), ("info", info)]),
                         primary_keys=["id"], options={"bucket": "2"})
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "info": [{"f1": "a", "f2": "b"}, None]}))
    # a new top-level column and a new nested field, then a widened type
    t.write_arrow(pa.table({"id": pa.array([2, 3], pa.int32()), "info": [{"f2": "y", "f3": "z"}, None],
                            "extra": [20, 30]}), merge_schema=True)
    t.refresh().with_options({"write.merge-schema.type-widening": "true"}).write_arrow(
        pa.table({"id": pa.array([4], pa.int32()), "extra": pa.array([2**40], pa.int64())}),
        merge_schema=True)
    t = t.refresh()
    assert str(t.arrow_schema.field("extra").type) == "int64"
    ours = _by_id(t.to_arrow().to_pylist())
    assert ours == [
        {"id": 1, "info": {"f1": "a", "f2": "b", "f3": None}, "extra": None},
        {"id": 2, "info": {"f1": None, "f2": "y", "f3": "z"}, "extra": 20},
        {"id": 3, "info": None, "extra": 30},
        {"id": 4, "info": None, "extra": 2**40},
    ]
    theirs = _by_id(pypaimon.read(catalog.warehouse, "db.t", schema=t.arrow_schema).to_pylist())
    assert theirs == ours
    fields = pypaimon.schema(catalog.warehouse, "db.t")["fields"]
    assert [f["name"] for f in fields] == ["id", "info", "extra"]


def test_dyntable_evolves_a_table_pypaimon_evolved(pypaimon: PyPaimon, catalog):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    pypaimon.create_table(catalog.warehouse, "db.p", schema)
    pypaimon.write(catalog.warehouse, "db.p", pa.table({"id": [1], "name": ["a"]}, schema=schema))
    pypaimon.add_column(catalog.warehouse, "db.p", "score", "DOUBLE")
    t = catalog.get_table("db.p")
    assert t.schema.id == 1
    t.write_arrow(pa.table({"id": [2], "score": [2.5], "tags": [["x", "y"]]}), merge_schema=True)
    t = t.refresh()
    assert t.schema.id == 2 and t.schema.field_names == ("id", "name", "score", "tags")
    assert t.schema.highest_field_id == 3  # ids continue after pypaimon's
    ours = _by_id(t.to_arrow().to_pylist())
    assert ours == [{"id": 1, "name": "a", "score": None, "tags": None},
                    {"id": 2, "name": None, "score": 2.5, "tags": ["x", "y"]}]
    assert _by_id(pypaimon.read(catalog.warehouse, "db.p", schema=t.arrow_schema).to_pylist()) == ours


@pytest.mark.spark
def test_pypaimon_reads_a_table_sql_evolved(pypaimon: PyPaimon, spark, catalog):
    # INSERT ... BY NAME with SET spark.paimon.write.merge-schema: a new column, a new nested field.
    from sqlext.session import SqlSession

    session = SqlSession(spark, warehouse=catalog.warehouse, database="db")
    try:
        session.sql("CREATE TABLE t (id INT, info STRUCT<f1: STRING, f2: STRING>, "
                    "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
        session.sql("INSERT INTO t VALUES (1, named_struct('f1', 'a', 'f2', 'b')), (2, NULL)")
        session.sql("SET spark.paimon.write.merge-schema = true")
        session.sql("INSERT INTO t BY NAME SELECT 2 AS id, named_struct('f3', 'z', 'f2', 'y') AS info, "
                    "20L AS extra")
        t = catalog.get_table("db.t")
        assert t.schema.id == 1 and t.schema.field_names == ("id", "info", "extra")
        ours = _by_id(session.sql("SELECT * FROM t").toArrow().to_pylist())
    finally:
        session.sql("RESET spark.paimon.write.merge-schema")  # SET reaches the shared Spark conf
        session.stop_jobs()
    assert ours == [{"id": 1, "info": {"f1": "a", "f2": "b", "f3": None}, "extra": None},
                    {"id": 2, "info": {"f1": None, "f2": "y", "f3": "z"}, "extra": 20}]
    theirs = _by_id(pypaimon.read(catalog.warehouse, "db.t", schema=t.arrow_schema).to_pylist())
    assert theirs == ours


@pytest.mark.parametrize("bucket", [3, -1])
def test_pypaimon_reads_a_widened_primary_key_and_an_explicit_cast(pypaimon: PyPaimon, catalog, bucket):
    # PaimonSinkTest "enable schema evolution": key a INT -> BIGINT, b STRING -> DATE, c added.
    import datetime as dt

    catalog.create_table("db.k", pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())]),
                         primary_keys=["a"], options={"bucket": str(bucket)})
    t = catalog.get_table("db.k")
    t.write_arrow(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["2023-08-09", "2023-08-09"]}))
    day = dt.date(2023, 8, 10)
    evolving = t.with_options({"write.merge-schema": "true", "write.merge-schema.type-widening": "true",
                               "write.merge-schema.explicit-cast": "true"})
    evolving.write_arrow(pa.table({"a": pa.array([1, 3], pa.int64()), "b": [day, day],
                                   "c": pa.array([1, 3], pa.int32())}))
    t = t.refresh()
    ours = sorted(t.to_arrow().to_pylist(), key=lambda r: r["a"])
    assert ours == [{"a": 1, "b": day, "c": 1}, {"a": 2, "b": dt.date(2023, 8, 9), "c": None},
                    {"a": 3, "b": day, "c": 3}]
    theirs = sorted(pypaimon.read(catalog.warehouse, "db.k", schema=t.arrow_schema).to_pylist(),
                    key=lambda r: r["a"])
    assert theirs == ours
