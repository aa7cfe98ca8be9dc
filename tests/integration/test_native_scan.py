"""The native scan (sqlext.source.native) returns exactly what the Python data source returns.

Each query runs twice on the same table: with the native scan (Spark's Parquet reader for splits
that need no merge) and with it off (the ``dyntable`` source for everything); the rows must be
equal, and the plan must show that the native part really ran.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from sqlext.source.native import ENABLED, read_table

NATIVE = "FileScan parquet"
PYTHON = "BatchScan dyntable"


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def both(session, sql: str) -> tuple[list[tuple], str]:
    """Rows of ``sql`` (checked equal on both paths) and the native run's physical plan."""
    spark = session.spark
    try:
        spark.conf.set(ENABLED, "true")
        native = session.sql(sql)
        plan = _plan(native)
        got = _rows(native)
        spark.conf.set(ENABLED, "false")
        python = session.sql(sql)
        assert NATIVE not in _plan(python)
        expected = _rows(python)
    finally:
        spark.conf.unset(ENABLED)
    assert got == expected, sql
    return got, plan


def test_partitioned_append_table_with_filters_projections_and_nulls(session):
    session.sql("CREATE TABLE a (id BIGINT, name STRING, score DOUBLE, dt STRING) PARTITIONED BY (dt)")
    session.sql("INSERT INTO a VALUES (1, 'x', 1.5, 'd1'), (2, NULL, NULL, 'd2'), (3, 'z', -2.0, 'd1')")
    session.sql("INSERT INTO a VALUES (4, 'w', 0.0, 'd2'), (5, 'v', 9.0, 'd3')")
    rows, plan = both(session, "SELECT * FROM a")
    assert len(rows) == 5 and NATIVE in plan and PYTHON not in plan
    assert both(session, "SELECT id FROM a WHERE dt = 'd1'")[0] == [(1,), (3,)]
    rows, _ = both(session, "SELECT name, dt FROM a WHERE score > 0 AND dt IN ('d1', 'd3')")
    assert rows == [("v", "d3"), ("x", "d1")]
    assert both(session, "SELECT id FROM a WHERE name IS NULL")[0] == [(2,)]
    assert both(session, "SELECT count(*), sum(id) FROM a")[0] == [(5, 15)]
    assert both(session, "SELECT dt, count(*) FROM a GROUP BY dt")[0] == [("d1", 2), ("d2", 2), ("d3", 1)]


def test_primary_key_table_after_full_compaction_is_all_native(session):
    session.sql("CREATE TABLE k (id BIGINT, v STRING, n INT) TBLPROPERTIES ('primary-key'='id','bucket'='2')")
    session.sql("INSERT INTO k VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', 4)")
    session.sql("INSERT INTO k VALUES (2, 'B', 20), (4, NULL, NULL)")
    session.sql("DELETE FROM k WHERE id = 3")
    session.table(_name("k")).compact(full=True)
    rows, plan = both(session, "SELECT * FROM k")
    assert rows == [(1, "a", 1), (2, "B", 20), (4, None, None)]
    assert NATIVE in plan and PYTHON not in plan and "_VALUE_KIND" not in plan  # compacted: no filter
    assert both(session, "SELECT v FROM k WHERE id >= 2")[0] == [("B",), (None,)]
    assert both(session, "SELECT count(*) FROM k")[0] == [(3,)]


def test_pending_merges_go_through_the_python_source_the_rest_native(session):
    session.sql(
        "CREATE TABLE m (id BIGINT, v STRING)"
        " TBLPROPERTIES ('primary-key'='id', 'bucket'='2', 'write-only'='true')"
    )
    session.sql("INSERT INTO m SELECT id, concat('v', id) FROM range(0, 40)")
    table = session.table(_name("m"))
    split = table.plan().splits[0]
    one_bucket = [i for i in range(40) if _bucket_of(table, i) == split.bucket][:3]
    session.sql(f"INSERT INTO m VALUES {', '.join(f'({i}, {chr(39)}new{chr(39)})' for i in one_bucket)}")
    session.sql(f"DELETE FROM m WHERE id = {one_bucket[0]}")
    rows, plan = both(session, "SELECT * FROM m")
    assert NATIVE in plan and PYTHON in plan  # one bucket merges, the other is one sorted run
    assert len(rows) == 39 and (one_bucket[1], "new") in rows
    assert both(session, "SELECT count(*) FROM m")[0] == [(39,)]
    assert both(session, f"SELECT v FROM m WHERE id = {one_bucket[1]}")[0] == [("new",)]
    other = next(i for i in range(40) if i not in one_bucket)
    assert both(session, f"SELECT id FROM m WHERE v = 'v{other}'")[0] == [(other,)]


def test_retraction_rows_of_a_single_run_are_dropped(session):
    session.sql(
        "CREATE TABLE r (id BIGINT, v STRING)"
        " TBLPROPERTIES ('primary-key'='id', 'bucket'='1', 'write-only'='true')"
    )
    table = session.table(_name("r"))
    table.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "rowkind": ["+I", "-D", "+U"]}))
    rows, plan = both(session, "SELECT * FROM r")
    assert rows == [(1, "a"), (3, "c")]
    assert NATIVE in plan and "_VALUE_KIND" in plan
    assert both(session, "SELECT count(*) FROM r")[0] == [(2,)]


@pytest.mark.parametrize("primary_key", [False, True])
def test_evolved_schema_is_mapped_by_field_id(session, primary_key):
    props = "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')" if primary_key else ""
    session.sql(f"CREATE TABLE e (id BIGINT, a INT, b STRING, c FLOAT, gone STRING) {props}")
    session.sql("INSERT INTO e VALUES (1, 10, 'x', 1.5, 'g'), (2, NULL, NULL, NULL, NULL)")
    session.sql("ALTER TABLE e RENAME COLUMN b TO bee")
    session.sql("ALTER TABLE e ALTER COLUMN a TYPE BIGINT")
    session.sql("ALTER TABLE e ALTER COLUMN c TYPE DOUBLE")
    session.sql("ALTER TABLE e DROP COLUMN gone")
    session.sql("ALTER TABLE e ADD COLUMN gone STRING")  # a new column of an old name: a new field id
    session.sql("ALTER TABLE e ADD COLUMN added INT")
    session.sql("INSERT INTO e VALUES (3, 3000000000, 'z', 2.25, 'new', 7)")
    rows, plan = both(session, "SELECT * FROM e")
    assert rows == [
        (1, 10, "x", 1.5, None, None), (2, None, None, None, None, None), (3, 3000000000, "z", 2.25, "new", 7)
    ]
    assert NATIVE in plan
    assert both(session, "SELECT bee FROM e WHERE a > 5")[0] == [("x",), ("z",)]
    assert both(session, "SELECT id FROM e WHERE gone IS NULL AND added IS NULL")[0] == [(1,), (2,)]
    old, _ = both(session, "SELECT * FROM e VERSION AS OF 1")
    assert old == [(1, 10, "x", 1.5, "g"), (2, None, None, None, None)]  # the snapshot's own schema


def test_time_travel_tags_branches_and_read_optimized(session):
    session.sql("CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')")
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    session.sql("CALL sys.create_tag(table => 't', tag => 'first')")
    session.sql("INSERT INTO t VALUES (2, 'B'), (3, 'c')")
    session.sql("CALL sys.create_branch(table => 't', branch => 'dev', tag => 'first')")
    session.sql("INSERT INTO t$branch_dev VALUES (9, 'z')")
    assert both(session, "SELECT * FROM t VERSION AS OF 'first'")[0] == [(1, "a"), (2, "b")]
    assert both(session, "SELECT * FROM t VERSION AS OF 1")[0] == [(1, "a"), (2, "b")]
    assert both(session, "SELECT * FROM t")[0] == [(1, "a"), (2, "B"), (3, "c")]
    assert both(session, "SELECT * FROM t$branch_dev")[0] == [(1, "a"), (2, "b"), (9, "z")]
    session.table(_name("t")).compact(full=True)
    rows, plan = both(session, "SELECT * FROM t$ro")
    assert rows == [(1, "a"), (2, "B"), (3, "c")] and NATIVE in plan and PYTHON not in plan
    assert both(session, "SELECT count(*) FROM t$snapshots")[0][0][0] >= 2  # system tables: untouched


def test_native_scan_can_be_turned_off_per_read_and_per_table(session):
    session.sql("CREATE TABLE o (id BIGINT) TBLPROPERTIES ('read.native-scan.enabled' = 'false')")
    session.sql("INSERT INTO o VALUES (1), (2)")
    assert NATIVE not in _plan(session.sql("SELECT * FROM o"))
    session.sql("CREATE TABLE on2 (id BIGINT)")
    session.sql("INSERT INTO on2 VALUES (1), (2)")
    assert NATIVE in _plan(session.sql("SELECT * FROM on2"))
    hinted = session.sql("SELECT * FROM on2 /*+ OPTIONS('read.native-scan.enabled' = 'false') */")
    assert NATIVE not in _plan(hinted) and _rows(hinted) == [(1,), (2,)]
    session.sql("SET read.native-scan.enabled = false")
    try:
        assert NATIVE not in _plan(session.sql("SELECT * FROM on2"))
    finally:
        session.spark.conf.unset(ENABLED)


def test_read_table_for_dataframe_users(session, spark, warehouse):
    from engine.scan import predicate as P

    session.sql("CREATE TABLE d (id BIGINT, v STRING, dt STRING) PARTITIONED BY (dt)")
    session.sql("INSERT INTO d VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')")
    df = read_table(spark, "default.d", warehouse, columns=["id", "dt"], filter=P.Leaf("eq", "dt", ("x",)))
    assert df.columns == ["id", "dt"] and NATIVE in _plan(df)
    assert _rows(df.where("id > 1")) == [(3, "x")]
    python = read_table(spark, "default.d", warehouse, **{ENABLED: "false"})
    assert NATIVE not in _plan(python) and _rows(python) == _rows(read_table(spark, "default.d", warehouse))
    assert _rows(read_table(spark, "default.d", warehouse, **{"scan.snapshot-id": "1"})) == _rows(python)


def _name(table: str):
    from sqlext.parse.names import TableName

    return TableName(None, None, table)


def _bucket_of(table, key: int) -> int:
    from engine.meta.binary_row import bucket_of

    return bucket_of([key], [table.schema.field("id").type], table.store.options.bucket)


def test_a_missing_data_file_is_reported_as_the_python_path_reports_it(session):
    import os

    from pyspark.errors import PythonException

    session.sql("CREATE TABLE gone (id BIGINT)")
    session.sql("INSERT INTO gone VALUES (1), (2)")
    table = session.table(_name("gone"))
    split = table.plan().splits[0]
    os.remove(f"{table.path}/bucket-0/{split.files[0].file_name}")
    df = session.sql("SELECT * FROM gone")  # the Python source reads it: its typed error, not Spark's
    assert NATIVE not in _plan(df)
    with pytest.raises(PythonException, match="CorruptMetadataError: data file .* listed by the snapshot"):
        df.collect()


def test_every_common_type_reads_the_same(session):
    session.sql(
        "CREATE TABLE ty (id BIGINT, b BOOLEAN, t TINYINT, s SMALLINT, f FLOAT, dec DECIMAL(12, 3), d DATE,"
        " ts TIMESTAMP_NTZ, tl TIMESTAMP, bin BINARY, arr ARRAY<INT>, m MAP<STRING, BIGINT>,"
        " st STRUCT<x: INT, y: STRING>, tm TIME) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')"
    )
    import datetime as dt
    from decimal import Decimal

    table = session.table(_name("ty"))
    first = {
        "id": 1, "b": True, "t": 1, "s": 2, "f": 1.5, "dec": Decimal("12.345"), "d": dt.date(2024, 1, 2),
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123456), "tl": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "bin": b"\x00\xff", "arr": [1, None], "m": [("a", 1)], "st": {"x": 1, "y": "z"},
        "tm": dt.time(10, 11, 12),
    }
    empty = dict.fromkeys(first, None) | {"id": 2}
    table.write_arrow(pa.Table.from_pylist([first, empty], schema=table.arrow_schema))
    table.compact(full=True)
    columns = "id, b, t, s, f, dec, d, ts, tl, bin, arr, m, st"
    rows, plan = both(session, f"SELECT {columns} FROM ty")
    assert len(rows) == 2 and NATIVE in plan
    rows, plan = both(session, "SELECT id, tm FROM ty")  # TIME: Spark's reader differs, the source reads it
    assert NATIVE not in plan and len(rows) == 2
