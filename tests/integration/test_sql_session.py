"""SqlSession end to end (shared SparkSession): every statement of the session issue, its observable
result (rows, schema, options, files on disk), its errors with SQLSTATE, and "a statement that
fails changes nothing" (snapshot count, schema id and rows unchanged after a failing statement).

Tables are checked through the engine (no Spark job) wherever possible, to keep the file fast.
DML and DESCRIBE details have their own files (test_sql_dml.py, test_sql_describe.py); here each
appears once, as part of a session.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pytest

from engine import CommitKind
from engine.commit import CHANGE_TRACKING_PROPERTY
from engine.types import type_to_json
from sqlext.errors import (
    ProcedureArgumentError,
    SqlAnalysisError,
    SqlError,
    SqlParseError,
    UnsupportedStatementError,
)
from sqlext.parse.names import TableName


def run(session, sql):
    """Run a statement (or script); returns the last result's rows (None without a frame)."""
    result = list(session.execute(sql))[-1]
    return [tuple(r) for r in result.dataframe.collect()] if result.dataframe is not None else None


def message(session, sql):
    return list(session.execute(sql))[-1].message


def table(session, name):
    return session.table(TableName.parse(name))


def contents(session, name):
    t = table(session, name)
    cols = list(t.schema.field_names)
    rows = [tuple(r[c] for c in cols) for r in t.to_arrow().to_pylist()]
    return sorted(rows, key=lambda row: tuple((v is None, 0 if v is None else v) for v in row))


def state(session, name):
    """What a failing statement must leave alone: snapshots, schema id and rows."""
    t = table(session, name)
    return len(t.snapshots()), t.schema.id, contents(session, name)


def fails(session, sql, sqlstate, *words, cls=SqlError):
    with pytest.raises(cls) as info:
        list(session.execute(sql))
    assert info.value.sqlstate == sqlstate, str(info.value)
    for w in words:
        assert w in str(info.value), str(info.value)
    return info.value


def unchanged(session, name, sql, sqlstate, *words):
    before = state(session, name)
    err = fails(session, sql, sqlstate, *words)
    assert state(session, name) == before, sql
    return err


# -- databases ---------------------------------------------------------------------------------------


def test_databases_use_and_show(session, warehouse):
    assert message(session, "CREATE DATABASE sales") == "Database sales created"
    run(session, "CREATE DATABASE IF NOT EXISTS sales")  # no error the second time
    fails(session, "CREATE DATABASE sales", "42710", "sales")
    assert ("sales",) in run(session, "SHOW DATABASES")
    run(session, "USE sales")
    assert session.current_database == "sales"
    run(session, "CREATE TABLE t (id INT)")
    assert os.path.isdir(os.path.join(warehouse, "sales.db", "t"))
    assert run(session, "SHOW TABLES") == [("sales", "t", False)]
    assert run(session, "SHOW TABLES IN default") == []
    run(session, "USE default")
    run(session, "INSERT INTO sales.t VALUES (7)")
    assert run(session, "SELECT * FROM sales.t") == [(7,)]
    fails(session, "USE nope", "42P01", "nope")
    fails(session, "DROP DATABASE sales", "22023", "CASCADE")  # not empty
    assert os.path.isdir(os.path.join(warehouse, "sales.db", "t"))
    run(session, "USE sales; DROP DATABASE sales CASCADE")
    assert session.current_database == "default"
    assert ("sales",) not in run(session, "SHOW DATABASES")
    assert not os.path.exists(os.path.join(warehouse, "sales.db"))


# -- CREATE / DROP TABLE -----------------------------------------------------------------------------


def test_create_table_in_every_style(session, spark):
    run(
        session,
        """
        CREATE TABLE orders (
          id BIGINT NOT NULL COMMENT 'order id',
          amount DECIMAL(10, 2),
          ts TIMESTAMP(3),
          dt STRING,
          amount2 AS amount * 2,
          WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
          PRIMARY KEY (id, dt) NOT ENFORCED
        ) COMMENT 'orders' PARTITIONED BY (dt) WITH ('bucket' = '2', 'merge-engine' = 'deduplicate')
    """,
    )
    o = table(session, "orders")
    assert o.schema.field_names == ("id", "amount", "ts", "dt", "amount2")
    assert o.primary_keys == ("id", "dt") and o.partition_keys == ("dt",)
    assert o.options["bucket"] == "2" and o.options["merge-engine"] == "deduplicate"
    assert o.options["dyntable.computed-column.amount2"] == "amount * 2"
    assert o.options["dyntable.watermark.ts"] == "ts - INTERVAL '5' SECOND"
    assert o.schema.comment == "orders" and o.schema.fields[0].description == "order id"
    assert type_to_json(o.schema.fields[4].type) == "DECIMAL(12, 2)"
    # the computed column is evaluated on INSERT (not listed in the implicit column list)
    run(session, "INSERT INTO orders VALUES (1, 1.50, NULL, 'd1'), (2, 2.25, NULL, 'd2')")
    assert [(r[0], r[4]) for r in contents(session, "orders")] == [(1, 3), (2, 4.5)]
    assert run(session, "DESCRIBE orders")[4][0] == "amount2"

    # Spark style
    run(
        session,
        "CREATE TABLE sp (id INT, v STRING) USING dyntable "
        "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')",
    )
    sp = table(session, "sp")
    assert sp.primary_keys == ("id",) and sp.options["bucket"] == "1"
    assert "PRIMARY KEY (`id`) NOT ENFORCED" in run(session, "SHOW CREATE TABLE sp")[0][0]
    run(session, "CREATE TABLE IF NOT EXISTS sp (x INT)")  # kept as it was
    assert table(session, "sp").schema.field_names == ("id", "v")
    fails(session, "CREATE TABLE sp (x INT)", "42710", "already exists")

    # LIKE copies schema, keys and options, not data
    run(session, "CREATE TABLE o2 LIKE orders")
    o2 = table(session, "o2")
    assert o2.schema.fields == o.schema.fields and o2.primary_keys == o.primary_keys
    assert o2.options == o.options and o2.snapshots() == []

    # AS SELECT, with options; column types come from the query
    run(
        session,
        "CREATE TABLE o3 WITH ('bucket' = '1', 'primary-key' = 'id') "
        "AS SELECT id, amount FROM orders WHERE dt = 'd2'",
    )
    o3 = table(session, "o3")
    assert o3.schema.field_names == ("id", "amount") and o3.primary_keys == ("id",)
    assert contents(session, "o3") == [(2, Decimal("2.25"))]

    # a format Paimon has no format table for goes to Spark (csv/parquet/json/orc make format
    # tables: test_paimon_format_tables.py); DROP TABLE deletes dyntable's storage
    run(session, "CREATE TABLE txt (value STRING) USING text")
    assert spark.catalog.tableExists("txt") and not session.is_managed(TableName.parse("txt"))
    run(session, "DROP TABLE txt")
    path = table(session, "o2").path
    assert os.path.isdir(path)
    assert message(session, "DROP TABLE o2") == "Table default.o2 dropped"
    assert not os.path.exists(path)
    assert ("default", "o2", False) not in run(session, "SHOW TABLES")
    run(session, "DROP TABLE IF EXISTS o2")
    fails(session, "DROP TABLE o2", "42P01")

    # with fixed buckets, a partitioned table's primary key must hold the partition columns (the
    # default bucket -1 makes it a cross-partition upsert table); nothing is created
    # Fixed buckets with a key that does not cover the partition: accepted since Paimon 1.3 (each
    # partition keeps its own keys; docs/buckets.md), so no longer a refusal.
    session.sql(
        "CREATE TABLE per_partition_keys (id INT, dt STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2')"
    )
    assert table(session, "per_partition_keys").primary_keys == ("id",)
    assert not session.is_managed(TableName.parse("bad"))
    fails(session, "CREATE TABLE bad (a INTEGR)", "22023", "INTEGR")
    assert not session.is_managed(TableName.parse("bad"))
    # AS SELECT whose write job fails leaves no table behind
    fails(
        session,
        "CREATE TABLE bad AS SELECT id, CAST(raise_error('boom') AS STRING) AS v FROM range(3)",
        "P0001",
        "boom",
    )
    assert not session.is_managed(TableName.parse("bad"))


# -- ALTER TABLE -------------------------------------------------------------------------------------


def test_alter_table_columns_options_rename(session, warehouse):
    run(session, "CREATE TABLE t (id INT NOT NULL, v STRING, dt STRING) PARTITIONED BY (dt)")
    run(session, "INSERT INTO t VALUES (1, 'a', 'd1'), (2, 'b', 'd2')")

    run(session, "ALTER TABLE t SET ('snapshot.num-retained.max' = '50', 'dyntable.my-tag' = 'x')")
    assert table(session, "t").options["snapshot.num-retained.max"] == "50"
    assert ("dyntable.my-tag", "x") in run(session, "SELECT key, value FROM t$options")
    run(session, "ALTER TABLE t RESET ('snapshot.num-retained.max')")
    assert "snapshot.num-retained.max" not in table(session, "t").options

    run(session, "ALTER TABLE t ADD COLUMN n INT AFTER id")
    run(session, "ALTER TABLE t ADD COLUMN first_col STRING FIRST")
    run(session, "ALTER TABLE t RENAME COLUMN v TO w")
    run(session, "ALTER TABLE t ALTER COLUMN n TYPE BIGINT")
    t = table(session, "t")
    assert t.schema.field_names == ("first_col", "id", "n", "w", "dt")
    assert type_to_json(t.schema.fields[2].type) == "BIGINT"
    run(session, "ALTER TABLE t DROP COLUMN first_col")
    assert contents(session, "t") == [(1, None, "a", "d1"), (2, None, "b", "d2")]
    schema_id = table(session, "t").schema.id
    assert schema_id == 7  # one schema per change

    # failing ALTERs change nothing (snapshots, schema id, rows)
    unchanged(session, "t", "ALTER TABLE t ADD COLUMN id INT", "22023", "already exists")
    unchanged(session, "t", "ALTER TABLE t ADD COLUMN (a INT, id INT)", "22023", "'id'")  # all or nothing
    unchanged(session, "t", "ALTER TABLE t ALTER COLUMN id TYPE BOOLEAN", "22023", "widening")
    unchanged(session, "t", "ALTER TABLE t RENAME COLUMN nope TO x", "42703", "nope")
    unchanged(session, "t", "ALTER TABLE t DROP COLUMN nope", "42703", "nope")
    unchanged(session, "t", "ALTER TABLE t DROP COLUMN dt", "22023", "partition column")
    unchanged(session, "t", "ALTER TABLE t SET ('data-file.external-paths' = 'd')", "22023", "no scheme")
    unchanged(session, "t", "ALTER TABLE t SET ('bucket' = '2')", "22023", "CLUSTERED INTO")
    unchanged(session, "t", "ALTER TABLE t SET ('snapshot.num-retained.max' = 'lots')", "22023", "lots")
    fails(session, "ALTER TABLE nope ADD COLUMN x INT", "42P01", "default.nope")
    assert table(session, "t").schema.id == schema_id

    old_path = table(session, "t").path
    run(session, "ALTER TABLE t RENAME TO t_new")
    assert not os.path.exists(old_path) and not session.is_managed(TableName.parse("t"))
    assert run(session, "SELECT id, w FROM t_new ORDER BY id") == [(1, "a"), (2, "b")]


def test_primary_key_buckets_partitions_compaction(session):
    run(session, "CREATE TABLE a (id INT NOT NULL, v STRING, dt STRING NOT NULL) PARTITIONED BY (dt)")
    run(session, "INSERT INTO a VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')")
    run(session, "CREATE TABLE dup (id INT NOT NULL, v STRING)")
    run(session, "INSERT INTO dup VALUES (1, 'a'), (1, 'b')")
    unchanged(session, "dup", "ALTER TABLE dup ADD PRIMARY KEY (id) NOT ENFORCED", "23505", "duplicate")
    assert table(session, "dup").primary_keys == ()
    # a key without dt makes a cross-partition upsert table (bucket -1, Paimon's default)
    run(session, "CREATE TABLE x (id INT NOT NULL, v STRING, dt STRING NOT NULL) PARTITIONED BY (dt)")
    run(session, "INSERT INTO x VALUES (1, 'a', 'd1'), (2, 'b', 'd2')")
    run(session, "ALTER TABLE x ADD PRIMARY KEY (id) NOT ENFORCED")
    run(session, "INSERT INTO x VALUES (1, 'A', 'd2')")
    assert contents(session, "x") == [(1, "A", "d2"), (2, "b", "d2")]

    assert message(session, "ALTER TABLE a ADD PRIMARY KEY (id, dt) NOT ENFORCED").endswith(
        "3 row(s) rewritten"
    )
    a = table(session, "a")
    assert a.primary_keys == ("id", "dt")
    assert contents(session, "a") == [(1, "a", "d1"), (2, "b", "d1"), (3, "c", "d2")]
    fails(session, "ALTER TABLE a ADD PRIMARY KEY (v) NOT ENFORCED", "42000", "already has a primary key")

    run(session, "ALTER TABLE a CLUSTERED INTO 3 BUCKETS")
    a = table(session, "a")
    assert a.options["bucket"] == "3"
    files = run(session, "SELECT partition, bucket FROM a$files")
    assert files and all(0 <= b < 3 for _, b in files)
    assert contents(session, "a") == [(1, "a", "d1"), (2, "b", "d1"), (3, "c", "d2")]

    # upsert then compact one partition: a COMPACT snapshot, same rows
    run(session, "INSERT INTO a VALUES (1, 'A', 'd1')")
    run(session, "ALTER TABLE a PARTITION (dt = 'd1') COMPACT")
    assert table(session, "a").latest_snapshot().commit_kind is CommitKind.COMPACT
    run(session, "ALTER TABLE a COMPACT")
    assert contents(session, "a") == [(1, "A", "d1"), (2, "b", "d1"), (3, "c", "d2")]
    assert run(session, "SELECT count(*) FROM a$files WHERE level = 0") == [(0,)]

    assert run(session, "SHOW PARTITIONS a") == [("dt=d1",), ("dt=d2",)]
    described = run(session, "DESCRIBE TABLE EXTENDED a PARTITION (dt = 'd2')")
    details = {r[0]: r[1] for r in described}
    assert details["partition"] == "dt=d2" and details["file.path"].endswith("/dt=d2")
    assert details["record-count"] == "1"
    extended = {r[0]: r[1] for r in run(session, "DESCRIBE EXTENDED a")}
    assert extended["primary-key"] == "id,dt" and extended["bucket"] == "3"
    run(session, "ALTER TABLE a DROP PARTITION (dt = 'd1')")
    assert run(session, "SHOW PARTITIONS a") == [("dt=d2",)]
    assert contents(session, "a") == [(3, "c", "d2")]
    unchanged(session, "a", "ALTER TABLE a DROP PARTITION (v = 'x')", "22023", "'v'")


# -- INSERT ------------------------------------------------------------------------------------------


def test_insert_forms_change_tracking_hint_and_atomic_failure(session):
    run(session, "CREATE TABLE p (id INT NOT NULL, v STRING, dt STRING) PARTITIONED BY (dt)")
    assert (
        message(session, "INSERT INTO p VALUES (1, 'a', 'd1'), (2, 'b', 'd2')")
        == "2 row(s) inserted into default.p"
    )
    run(session, "INSERT INTO p (dt, id) SELECT 'd3', 3")  # column list: v is NULL
    run(session, "INSERT INTO p PARTITION (dt = 'd1') (id, v) VALUES (4, 'd')")  # static partition
    assert contents(session, "p") == [(1, "a", "d1"), (2, "b", "d2"), (3, None, "d3"), (4, "d", "d1")]
    run(session, "INSERT OVERWRITE p PARTITION (dt = 'd1') SELECT 10, 'x'")  # only d1 replaced
    assert contents(session, "p") == [(2, "b", "d2"), (3, None, "d3"), (10, "x", "d1")]
    # Spark's default (static) mode would replace the whole table; the hint asks for dynamic: only d2
    run(session, "INSERT OVERWRITE p /*+ OPTIONS('dynamic-partition-overwrite' = 'true') */ PARTITION (dt) "
                 "VALUES (20, 'y', 'd2')")
    assert contents(session, "p") == [(3, None, "d3"), (10, "x", "d1"), (20, "y", "d2")]
    run(session, "INSERT OVERWRITE p VALUES (30, 'z', 'd9')")  # everything
    assert contents(session, "p") == [(30, "z", "d9")]

    run(session, "INSERT INTO p /*+ OPTIONS('change-tracking' = 'false') */ SELECT 31, 'q', 'd9'")
    snap = table(session, "p").latest_snapshot()
    assert snap.commit_kind is CommitKind.OVERWRITE
    assert dict(snap.properties or {}).get(CHANGE_TRACKING_PROPERTY) == "false"
    assert contents(session, "p") == [(30, "z", "d9"), (31, "q", "d9")]  # an insert, not a replace

    # failing INSERTs publish nothing: analysis errors and a failure inside the write job alike
    unchanged(session, "p", "INSERT INTO p VALUES (NULL, 'n', 'd1')", "22023", "'id' is NOT NULL")
    unchanged(session, "p", "INSERT INTO p VALUES (1)", "21S01", "3 are expected")
    unchanged(session, "p", "INSERT INTO p (id, nope) VALUES (1, 2)", "42703", "nope")
    unchanged(session, "p", "INSERT INTO p PARTITION (v = 'x') SELECT 1, 'd1'", "42703", "'v'")
    unchanged(session, "p", "INSERT INTO p SELECT id, raise_error('boom'), dt FROM p", "P0001", "boom")
    unchanged(session, "p$snapshots", "INSERT INTO p$snapshots SELECT * FROM p$snapshots", "42809")
    unchanged(session, "p", "INSERT INTO p SELECT * FROM nope", "42P01", "nope")


# -- time travel ---------------------------------------------------------------------------------------


def _utc(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def test_time_travel_forms(session):
    run(session, "CREATE TABLE tt (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    run(session, "INSERT INTO tt VALUES (1, 'a')")
    run(session, "INSERT INTO tt VALUES (1, 'b'), (2, 'c')")
    s1, s2 = table(session, "tt").snapshots()[:2]
    first = [(1, "a")]
    assert run(session, "SELECT * FROM tt VERSION AS OF 1") == first
    assert run(session, f"SELECT * FROM tt TIMESTAMP AS OF '{_utc(s1.time_millis)}'") == first
    assert run(session, f"SELECT * FROM tt FOR SYSTEM_TIME AS OF '{_utc(s1.time_millis)}'") == first
    assert run(session, "SELECT * FROM tt /*+ OPTIONS('scan.snapshot-id' = '1') */") == first
    assert (
        run(session, f"SELECT * FROM tt /*+ OPTIONS('scan.timestamp-millis' = '{s1.time_millis}') */")
        == first
    )
    latest = run(session, f"SELECT * FROM tt FOR SYSTEM_TIME AS OF '{_utc(s2.time_millis)}' ORDER BY id")
    assert latest == [(1, "b"), (2, "c")] == run(session, "SELECT * FROM tt ORDER BY id")
    # time travel inside a join: each reference reads its own snapshot
    assert run(session, "SELECT o.v, n.v FROM tt VERSION AS OF 1 o JOIN tt n ON o.id = n.id") == [("a", "b")]
    # a missing target fails the statement itself (not a later collect) with a typed error
    fails(session, "SELECT * FROM tt VERSION AS OF 99", "42P01", "snapshot 99")
    fails(session, "SELECT * FROM tt TIMESTAMP AS OF '2000-01-01 00:00:00'", "42P01", "no snapshot")
    fails(session, "SELECT * FROM tt VERSION AS OF 'no_such_tag'", "42P01", "no_such_tag")
    fails(session, "SELECT * FROM tt TIMESTAMP AS OF 'yesterday-ish'", "22023", "yesterday-ish")


# -- session options ---------------------------------------------------------------------------------


def test_session_options_and_table_storage_defaults(session, spark):
    assert message(session, "SET 'table-storage.bucket' = '4'") == "table-storage.bucket = 4"
    run(session, "SET 'table-storage.changelog-producer' = 'input'")
    assert ("table-storage.bucket", "4") in run(session, "SET")
    assert run(session, "SET 'table-storage.bucket'") == [("table-storage.bucket", "4")]
    run(session, "CREATE TABLE k (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    k = table(session, "k")
    assert k.options["bucket"] == "4" and k.options["changelog-producer"] == "input"
    run(session, "INSERT INTO k SELECT id, 'v' FROM range(40)")
    buckets = {b for (b,) in run(session, "SELECT DISTINCT bucket FROM k$files")}
    assert buckets <= {0, 1, 2, 3} and len(buckets) > 1
    # a per-table option (without the prefix) overrides the session default
    run(session, "CREATE TABLE k2 (id INT PRIMARY KEY NOT ENFORCED) WITH ('bucket' = '2')")
    assert table(session, "k2").options["bucket"] == "2"
    run(session, "RESET 'table-storage.bucket'")
    assert ("table-storage.bucket", "4") not in run(session, "SET")
    run(session, "CREATE TABLE k3 (id INT PRIMARY KEY NOT ENFORCED)")
    assert "bucket" not in table(session, "k3").options or table(session, "k3").options["bucket"] != "4"
    run(session, "RESET")
    assert run(session, "SET") == []

    fails(session, "SET 'table-storage.bucket' = 'four'", "22023", "four")
    fails(session, "SET 'table-storage.record-level.expire-time' = '1 d'", "22023", "not supported")
    fails(session, "SET 'execution.runtime-mode' = 'fast'", "22023", "'batch' or 'streaming'")
    assert session.options == {}
    # other keys reach Spark
    run(session, "SET spark.sql.shuffle.partitions = 3")
    try:
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
        assert run(session, "SET spark.sql.shuffle.partitions") == [("spark.sql.shuffle.partitions", "3")]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        run(session, "RESET 'spark.sql.shuffle.partitions'")


# -- reads: system tables, joins, DML in a session -----------------------------------------------------


def test_system_tables_joins_and_row_level_dml(session, spark):
    run(
        session,
        "CREATE TABLE s (id INT, v STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '1', 'changelog-producer' = 'input')",
    )
    run(session, "INSERT INTO s VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')")
    assert run(session, "UPDATE s SET v = 'B' WHERE id = 2") == [(1,)]
    assert run(session, "DELETE FROM s WHERE id = 1") == [(1,)]
    merged = run(
        session,
        "MERGE INTO s USING (SELECT 4 AS id, 'd' AS v, 'd2' AS dt) src "
        "ON s.id = src.id AND s.dt = src.dt WHEN NOT MATCHED THEN INSERT *",
    )
    assert merged == [(1, 0, 0, 1)]

    # $audit_log (rowkind first) and $ro in queries with filters, joins and aggregates
    audit = run(session, "SELECT rowkind, id, v FROM s$audit_log ORDER BY id")
    # the kind of each key's last change, deletes included (Paimon's audit log shows -D until compaction)
    assert audit == [("-D", 1, "a"), ("+U", 2, "B"), ("+I", 3, "c"), ("+I", 4, "d")]
    # $ro reads only fully compacted files: after a full compaction it is the table
    run(session, "ALTER TABLE s COMPACT")
    assert run(session, "SELECT id, v FROM s$ro WHERE dt = 'd2' ORDER BY id") == [(3, "c"), (4, "d")]
    snaps = run(session, "SELECT snapshot_id, commit_kind FROM s$snapshots ORDER BY snapshot_id")
    assert [k for _, k in snaps].count("APPEND") >= 4
    joined = run(
        session,
        "SELECT b.partition, b.record_count, count(*) FROM s$buckets b JOIN s$files f "
        "ON f.partition = b.partition AND f.bucket = b.bucket GROUP BY 1, 2 ORDER BY 1",
    )
    assert [(p, n) for p, n, _ in joined] == [("{d1}", 1), ("{d2}", 2)]
    assert run(session, "SELECT count(DISTINCT partition) FROM s$files") == [(2,)]
    assert run(session, "SELECT count(*) FROM s$schemas") == [(1,)]
    assert run(session, "SELECT value FROM s$options WHERE key = 'changelog-producer'") == [("input",)]
    assert run(session, "SELECT count(*) > 0 FROM s$manifests") == [(True,)]
    assert sorted(run(session, "SELECT partition, bucket FROM s$buckets")) == [("{d1}", 0), ("{d2}", 0)]
    assert run(session, "SELECT * FROM s$consumers") == []
    run(session, "CALL sys.reset_consumer(table => 'default.s', consumer_id => 'etl', next_snapshot_id => 2)")
    assert run(session, "SELECT consumer_id, next_snapshot_id FROM s$consumers") == [("etl", 2)]

    # managed table x Spark temp view, x a plain Spark table, and a CTE over a managed table
    spark.sql(
        "CREATE OR REPLACE TEMPORARY VIEW names AS "
        "SELECT * FROM VALUES (2, 'two'), (3, 'three') AS n(id, name)"
    )
    assert run(session, "SELECT s.id, n.name FROM s JOIN names n ON s.id = n.id ORDER BY s.id") == [
        (2, "two"),
        (3, "three"),
    ]
    run(session, "CREATE TABLE plain (id INT) USING parquet")
    run(session, "INSERT INTO plain VALUES (3), (4)")
    try:
        assert run(session, "SELECT p.id, s.v FROM plain p LEFT JOIN s ON p.id = s.id ORDER BY 1") == [
            (3, "c"),
            (4, "d"),
        ]
        out = run(
            session,
            "WITH x AS (SELECT id FROM s WHERE dt = 'd1') SELECT count(*) FROM x JOIN names USING (id)",
        )
        assert out == [(1,)]
    finally:
        spark.sql("DROP TABLE IF EXISTS plain")

    run(session, "TRUNCATE TABLE s")
    assert contents(session, "s") == []
    assert run(session, "SELECT count(*) FROM s") == [(0,)]


# -- errors ------------------------------------------------------------------------------------------


def test_errors_carry_sqlstate_position_and_stop_the_script(session):
    run(session, "CREATE TABLE e (id INT, v STRING)")
    # a parse error: SQLSTATE, script-relative line and column, the source line and a caret
    err = fails(
        session,
        "SELECT 1;\nINSERT INTO e VALUES (1, 'a');\nALTER TABLE e COMPACTT",
        "42601",
        cls=SqlParseError,
    )
    assert (err.line, err.column) == (3, 15)
    text = str(err)
    assert "line 3, column 15" in text and "ALTER TABLE e COMPACTT" in text
    assert text.splitlines()[-1] == "  " + " " * 14 + "^"
    assert contents(session, "e") == [(1, "a")]  # the statements before the error ran

    err = fails(session, "CREATE TABLE x (\n  a INT,\n)", "42601", cls=SqlParseError)
    assert err.line == 3
    fails(session, "SELEC 1", "42601", "SELEC", cls=SqlParseError)

    # unknown table / column / option / procedure name what was not found
    fails(session, "SELECT * FROM nope", "42P01", "nope", cls=SqlAnalysisError)
    err = fails(session, "SELECT nope FROM e", "42703", "nope")
    assert (err.line, err.column) == (1, 8)
    # Spark's position maps back through the binder's view names to the user's text
    err = fails(
        session, "SELECT 1;\nSELECT e.id FROM e JOIN e AS f ON e.id = f.id\n  WHERE f.nope > 1", "42703"
    )
    assert (err.line, err.column) == (3, 9) and err.snippet == "  WHERE f.nope > 1", str(err)
    fails(session, "SELECT * FROM e$nope", "22023", "nope")
    fails(session, "SELECT * FROM e$branch_dev", "42P01", "dev")
    fails(session, "UPDATE nope SET v = 1", "42P01", "nope")
    fails(session, "ALTER TABLE e SET ('changelog-producer' = 'inputs')", "22023", "changelog-producer")
    fails(session, "CALL sys.no_such_proc(table => 'default.e')", "42883", "no_such_proc")
    fails(session, "STOP JOB 'nope'", "42704", "nope")
    # the other error classes: unsupported statements and bad procedure arguments
    fails(
        session,
        "ALTER TABLE e ALTER COLUMN id SET NOT NULL",
        "0A000",
        "nullability",
        cls=UnsupportedStatementError,
    )
    fails(
        session,
        "CALL sys.compact(table => 'default.e', table => 'default.e')",
        "22023",
        cls=ProcedureArgumentError,
    )
    fails(session, "CALL sys.compact(table => 'default.nope')", "42P01", "nope")

    # the first failing statement stops the script: later statements never run
    with pytest.raises(SqlError):
        list(
            session.execute(
                "INSERT INTO e VALUES (2, 'b'); SELECT nope FROM e; INSERT INTO e VALUES (3, 'c')"
            )
        )
    assert contents(session, "e") == [(1, "a"), (2, "b")]


def test_two_sessions_on_one_spark_session_never_share_view_names(spark, warehouse):
    from sqlext.session import SqlSession

    a, b = SqlSession(spark, warehouse=warehouse), SqlSession(spark, warehouse=warehouse)
    a.sql("CREATE TABLE ta (id INT)")
    b.sql("CREATE TABLE tb (id INT)")
    a.sql("INSERT INTO ta VALUES (1)")
    b.sql("INSERT INTO tb VALUES (2)")
    left = a.sql("SELECT id FROM ta")  # lazy: its view must not be replaced by b's statements
    b.sql("SELECT id FROM tb").collect()
    assert [r.id for r in left.collect()] == [1]
    assert next(a._counter) != next(b._counter)


# -- syntax and analysis errors point at the user's text ---------------------------------------------
# (statement, SQLSTATE, line, column, the text at the caret). The script's first line is a SELECT,
# so positions are script-relative; the snippet is always the user's line, never rewritten SQL.
BAD_STATEMENTS = [
    ("SELEC * FROM orders", "42601", 2, 1, "SELEC"),
    ("SELECT id, FROM orders", "42601", 2, 12, "FROM"),
    ("SELECT id FROM orders\n  WHERE amount >", "42601", 3, 17, ""),
    ("SELECT * FROM orders WHERE nope = 1", "42703", 2, 28, "nope"),
    ("SELECT nope FROM orders", "42703", 2, 8, "nope"),
    ("SELECT count(*) FROM orders GROUP BY nope", "42703", 2, 38, "nope"),
    ("SELECT * FROM orders o JOIN nothere n ON o.id = n.id", "42P01", 2, 29, "nothere"),
    ("SELECT * FROM orders$nope", "22023", 2, 15, "orders$nope"),
    ("SELECT * FROM orders$branch_nope", "42P01", 2, 15, "orders$branch_nope"),
    ("SELECT * FROM orders VERSION AS OF 99", "42P01", 2, 15, "orders"),
    ("SELECT * FROM orders TIMESTAMP AS OF '1999-01-01 00:00:00'", "42P01", 2, 15, "orders"),
    ("SELECT * FROM orders TIMESTAMP AS OF 'yesterday'", "22023", 2, 15, "orders"),
    ("SELECT * FROM orders /*+ OPTIONS('scan.snapshot-id' = 'x') */", "22023", 2, 35, "scan.snapshot-id"),
    ("DELETE FROM orders WHERE nope = 1", "42703", 2, 26, "nope"),
    ("UPDATE orders SET amount = amount + 1 WHERE nope = 1", "42703", 2, 45, "nope"),
    ("UPDATE orders SET nope = 1", "42703", 2, 19, "nope"),
    ("MERGE INTO orders t USING (SELECT 1 AS id) s ON t.nope = s.id WHEN MATCHED THEN DELETE",
     "42703", 2, 49, "t.nope"),
    ("INSERT INTO orders SELECT nope FROM orders", "42703", 2, 27, "nope"),
    ("INSERT INTO orders VALUES (1, 2)", "21S01", 2, 13, "orders"),
    ("INSERT INTO orders (id, nope) VALUES (1, 2)", "42703", 2, 25, "nope"),
    ("INSERT INTO orders SELECT * FROM orders WHERE", "42601", 2, 41, "WHERE"),
    ("ALTER TABLE orders ADD COLUMNS (amount INT)", "22023", 2, 33, "amount"),
    ("ALTER TABLE orders DROP COLUMN nope", "42703", 2, 32, "nope"),
    ("ALTER TABLE orders RENAME COLUMN nope TO x", "42703", 2, 34, "nope"),
    ("ALTER TABLE nothere ADD COLUMNS (x INT)", "42P01", 2, 13, "nothere"),
    ("CREATE TABLE orders (id INT)", "42710", 2, 14, "orders"),
    ("CREATE TABEL x (a INT)", "42601", 2, 8, "TABEL"),
    ("DROP TABLE nothere", "42P01", 2, 12, "nothere"),
    ("TRUNCATE TABLE nothere", "42P01", 2, 16, "nothere"),
    ("CALL sys.expire_snapshots(table => 'nothere')", "42P01", 2, 27, "table"),
    ("CALL sys.nope(table => 'orders')", "42883", 2, 6, "sys.nope"),
    ("CREATE VIEW v AS SELECT nope FROM orders", "42703", 2, 25, "nope"),
    ("CREATE DATABASE default", "42710", 2, 17, "default"),
]


def _disk(warehouse: str) -> dict[str, tuple[int, int]]:
    out = {}
    for root, _dirs, files in os.walk(warehouse):
        for f in files:
            st = os.stat(os.path.join(root, f))
            out[os.path.join(root, f)] = (st.st_size, st.st_mtime_ns)
    return out


def test_bad_statements_point_at_the_users_text_and_change_nothing(session, warehouse, capfd):
    session.sql("CREATE TABLE orders (id INT, customer STRING, amount INT, PRIMARY KEY (id) NOT ENFORCED)")
    session.sql("INSERT INTO orders VALUES (1, 'ada', 10)")
    before = _disk(warehouse)
    capfd.readouterr()
    failures = []
    for sql, state, line, column, token in BAD_STATEMENTS:
        script = "SELECT 1;\n" + sql
        try:
            list(session.execute(script))
        except SqlError as e:
            lines = script.split("\n")
            got = (e.sqlstate, e.line, e.column)
            at = (e.snippet or "")[e.column - e.snippet_column:] if e.column else ""
            if got != (state, line, column) or e.snippet != lines[line - 1] or not at.startswith(token):
                failures.append(f"{sql!r}: {got} at {at[:20]!r}, snippet {e.snippet!r}\n{e}")
            if "__dyntable_" in str(e) or " pos " in e.message:
                failures.append(f"{sql!r} leaks rewritten SQL: {e}")
        else:
            failures.append(f"{sql!r} did not fail")
    assert not failures, "\n".join(failures)
    assert _disk(warehouse) == before
    assert [tuple(r) for r in session.sql("SELECT * FROM orders").collect()] == [(1, "ada", 10)]
    out, err = capfd.readouterr()
    assert "Falling back" not in out + err  # no stray parser log lines
