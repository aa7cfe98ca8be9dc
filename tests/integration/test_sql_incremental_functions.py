"""Paimon's incremental table-valued functions in SQL, with the answers of Paimon 2.0's
``TableValuedFunctionsTest`` (paimon-spark-ut), plus where a table can stand (joins, CTEs,
subqueries, INSERT … SELECT) and the errors for bad arguments."""

from __future__ import annotations

import pytest

from tests.integration.sql_helpers import fails, run

WRITE_ONLY_PK = ("CREATE TABLE t (id INT) "
                 "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1', 'write-only' = 'true')")
AUDIT_TAGS = "SELECT * FROM paimon_incremental_query('`t$audit_log`', 'tag1', 'tag2') ORDER BY id"


def rows(session, sql):
    return sorted(run(session, sql), key=repr)


def snapshot_times(session, table):
    got = run(session, f"SELECT snapshot_id, unix_millis(commit_time) FROM `{table}$snapshots`")
    return [r[1] for r in sorted(got)]


@pytest.mark.parametrize(("pk", "bucket"), [(True, 1), (True, 2), (False, 2), (False, -1)])
def test_incremental_query(session, pk, bucket):
    if pk:
        props = f"'primary-key' = 'a,b', 'bucket' = '{bucket}'"
    elif bucket != -1:
        props = f"'bucket-key' = 'b', 'bucket' = '{bucket}'"
    else:
        props = "'write-only' = 'true'"
    run(session, f"CREATE TABLE t (a INT, b INT, c STRING) TBLPROPERTIES ({props}) PARTITIONED BY (a)")
    run(session, "INSERT INTO t VALUES (1, 1, '1'), (2, 2, '2')")
    run(session, "INSERT INTO t VALUES (1, 3, '3'), (2, 4, '4')")
    run(session, "INSERT INTO t VALUES (1, 5, '5'), (1, 7, '7')")
    q = "SELECT * FROM paimon_incremental_query('t', '{}', '{}') ORDER BY a, b"
    assert run(session, q.format(0, 1)) == [(1, 1, "1"), (2, 2, "2")]
    assert run(session, q.format(1, 2)) == [(1, 3, "3"), (2, 4, "4")]
    assert run(session, q.format(2, 3)) == [(1, 5, "5"), (1, 7, "7")]
    assert run(session, q.format(1, 3)) == [(1, 3, "3"), (1, 5, "5"), (1, 7, "7"), (2, 4, "4")]
    # Numbers as arguments, the function's name in any case, and its hint-free twin agree.
    assert run(session, "SELECT * FROM PAIMON_INCREMENTAL_QUERY('default.t', 1, 3) ORDER BY a, b") == run(
        session, "SELECT * FROM t /*+ OPTIONS('incremental-between' = '1,3') */ ORDER BY a, b")


def test_incremental_between_timestamp(session):
    run(session, "CREATE DATABASE test_tvf_db")
    run(session, "USE test_tvf_db")
    run(session, "CREATE TABLE t (id INT) USING paimon")
    for i in range(1, 6):
        run(session, f"INSERT INTO t VALUES {i}")
    times = snapshot_times(session, "t")
    t1, t2, t3 = times[0], times[1], times[3]  # after the first, second and fourth insert
    q = "SELECT * FROM paimon_incremental_between_timestamp('{}', '{}', '{}') ORDER BY id"
    assert run(session, q.format("t", t1, t2)) == [(2,)]
    assert run(session, q.format("test_tvf_db.t", t2, t3)) == [(3,), (4,)]
    assert run(session, q.format("dyntable.test_tvf_db.t", t1, t3)) == [(2,), (3,), (4,)]
    import datetime as dt

    local = [dt.datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="milliseconds")
             for ms in (t1, t3)]
    assert run(session, q.format("dyntable.test_tvf_db.t", *local)) == [(2,), (3,), (4,)]


def test_incremental_to_auto_tag(session):
    # Paimon commits with watermarks 2024-12-02/03/05 make daily tags 2024-12-01, -02 and -04; the
    # same tags are created here by name.
    run(session, "CREATE TABLE t (a INT, b STRING) TBLPROPERTIES ('primary-key' = 'a', 'bucket' = '1', "
                 "'tag.automatic-creation' = 'watermark', 'tag.creation-period' = 'daily')")
    for i, (a, b, tag) in enumerate([(1, "a", "2024-12-01"), (2, "b", "2024-12-02"), (3, "c", "2024-12-04")]):
        run(session, f"INSERT INTO t VALUES ({a}, '{b}')")
        run(session, f"CALL sys.create_tag('t', '{tag}', {i + 1})")
    q = "SELECT * FROM paimon_incremental_to_auto_tag('t', '{}') ORDER BY a"
    assert run(session, q.format("2024-12-01")) == []
    assert run(session, q.format("2024-12-02")) == [(2, "b")]
    assert run(session, q.format("2024-12-03")) == []
    assert run(session, q.format("2024-12-04")) == [(3, "c")]


def test_incremental_query_with_inconsistent_tag_bucket(session):
    run(session, "CREATE TABLE t (a INT, b INT) TBLPROPERTIES ('primary-key' = 'a', 'bucket' = '1')")
    run(session, "INSERT INTO t VALUES (1, 11), (2, 22)")
    run(session, "CALL sys.create_tag('t', '2024-01-01', 1)")
    run(session, "ALTER TABLE t CLUSTERED INTO 2 BUCKETS")  # Paimon: SET 'bucket' and INSERT OVERWRITE
    run(session, "INSERT INTO t VALUES (3, 33)")
    run(session, "CALL sys.create_tag('t', '2024-01-03', 3)")
    run(session, "DELETE FROM t WHERE a = 1")
    run(session, "CALL sys.create_tag('t', '2024-01-04', 4)")
    run(session, "UPDATE t SET b = 222 WHERE a = 2")
    run(session, "CALL sys.create_tag('t', '2024-01-05', 5)")
    q = "SELECT * FROM paimon_incremental_query('{}', '{}', '{}') ORDER BY a, b"
    assert run(session, q.format("t", "2024-01-01", "2024-01-03")) == [(3, 33)]
    to_tag = "SELECT * FROM paimon_incremental_to_auto_tag('t', '2024-01-03') ORDER BY a, b"
    assert run(session, to_tag) == [(3, 33)]
    assert run(session, q.format("t", "2024-01-01", "2024-01-04")) == [(3, 33)]
    assert run(session, q.format("t", "2024-01-01", "2024-01-05")) == [(2, 222), (3, 33)]
    audit = q.format("`t$audit_log`", "2024-01-01", "2024-01-04")
    assert run(session, audit) == [("-D", 1, 11), ("+I", 3, 33)]
    kinds = run(session, q.format("`t$audit_log`", "2024-01-01", "2024-01-05"))
    assert kinds == [("-D", 1, 11), (kinds[1][0], 2, 222), ("+I", 3, 33)]
    assert kinds[1][0] in ("+I", "+U")  # the kind the UPDATE stored (Paimon's UPDATE: +U)


def test_incremental_query_with_delete_after_compact(session):
    run(session, WRITE_ONLY_PK)
    run(session, "INSERT INTO t VALUES 1")
    run(session, "INSERT INTO t VALUES 2")
    run(session, "CALL sys.create_tag('t', 'tag1')")
    run(session, "CALL sys.compact(table => 't')")
    run(session, "DELETE FROM t WHERE id = 1")
    run(session, "CALL sys.create_tag('t', 'tag2')")
    assert run(session, AUDIT_TAGS) == [("-D", 1)]


def test_incremental_query_with_delete_after_minor_compact(session):
    run(session, WRITE_ONLY_PK)
    run(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ CAST(id AS INT) FROM range(1, 100001)")
    run(session, "CALL sys.compact(table => 't')")
    run(session, "INSERT INTO t VALUES 100001")
    run(session, "INSERT INTO t VALUES 100002")
    run(session, "CALL sys.create_tag('t', 'tag1')")
    # Paimon passes options => 'num-sorted-run.compaction-trigger=2' to the procedure.
    run(session, "ALTER TABLE t SET TBLPROPERTIES ('num-sorted-run.compaction-trigger' = '2')")
    run(session, "CALL sys.compact(table => 't', compact_strategy => 'minor')")
    run(session, "DELETE FROM t WHERE id = 999")
    run(session, "CALL sys.create_tag('t', 'tag2')")
    assert run(session, AUDIT_TAGS) == [("-D", 999)]


def test_incremental_query_with_delete_after_compact2(session):
    run(session, WRITE_ONLY_PK)
    run(session, "INSERT INTO t VALUES 1")
    run(session, "DELETE FROM t WHERE id = 1")
    run(session, "CALL sys.create_tag('t', 'tag1')")
    run(session, "CALL sys.compact(table => 't')")
    run(session, "INSERT INTO t VALUES 1")
    run(session, "DELETE FROM t WHERE id = 1")
    run(session, "CALL sys.create_tag('t', 'tag2')")
    assert run(session, AUDIT_TAGS) == []


def test_incremental_query_by_tag_with_limit(session):
    run(session, "CREATE TABLE t (a INT, b INT, c STRING) "
                 "TBLPROPERTIES ('primary-key' = 'a,b', 'bucket' = '2') PARTITIONED BY (a)")
    run(session, "INSERT INTO t VALUES (1, 1, '1'), (2, 2, '2')")
    run(session, "CALL sys.create_tag('t', 'tag1')")
    run(session, "INSERT INTO t VALUES (1, 3, '3'), (2, 4, '4')")
    run(session, "CALL sys.create_tag('t', 'tag2')")
    limited = "SELECT * FROM paimon_incremental_query('t', 'tag1', 'tag2') ORDER BY a, b LIMIT 5"
    assert run(session, limited) == [(1, 3, "3"), (2, 4, "4")]


def test_a_function_stands_wherever_a_table_can(session):
    run(session, "CREATE TABLE t (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')")
    run(session, "CREATE TABLE names (id INT, name STRING)")
    run(session, "CREATE TABLE sink (id INT, v STRING)")
    run(session, "INSERT INTO names VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    run(session, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    run(session, "INSERT INTO t VALUES (2, 'B'), (3, 'c')")
    f = "paimon_incremental_query('t', 1, 2)"
    joined = rows(session, f"SELECT n.name, x.v FROM {f} x JOIN names n ON x.id = n.id")
    assert joined == [("three", "c"), ("two", "B")]
    assert rows(session, f"WITH c AS (SELECT id FROM {f}) SELECT count(*) FROM c") == [(2,)]
    assert rows(session, f"SELECT name FROM names WHERE id IN (SELECT id FROM {f})") == [("three",), ("two",)]
    assert rows(session, f"SELECT * FROM (SELECT v FROM {f}) s") == [("B",), ("c",)]
    # Two calls of one table with different ranges are two reads.
    assert rows(session, f"SELECT a.v, b.v FROM {f} a FULL JOIN paimon_incremental_query('t', 0, 1) b "
                         "ON a.id = b.id") == sorted([("B", "b"), ("c", None), (None, "a")], key=repr)
    run(session, f"INSERT INTO sink SELECT * FROM {f}")
    assert rows(session, "SELECT * FROM sink") == [(2, "B"), (3, "c")]
    # A scan mode from the session applies to the function's read, as to any read of the table.
    run(session, "SET spark.paimon.incremental-between-scan-mode = diff")
    assert rows(session, "SELECT * FROM paimon_incremental_query('`t$audit_log`', 0, 2)") == [
        ("+I", 1, "a"), ("+I", 2, "B"), ("+I", 3, "c")]


def test_bad_arguments_are_refused(session):
    run(session, "CREATE TABLE t (id INT)")
    run(session, "INSERT INTO t VALUES 1")
    run(session, "CALL sys.create_tag('t', 'tag1')")
    fails(session, "SELECT * FROM paimon_incremental_query('t', 1)", "takes 3 arguments", "not 2")
    fails(session, "SELECT * FROM paimon_incremental_to_auto_tag('t', 'a', 'b')", "takes 2 arguments")
    fails(session, "SELECT * FROM paimon_incremental_query('nope', 0, 1)", "is not a dyntable table")
    fails(session, "SELECT * FROM paimon_incremental_query('`t$snapshots`', 0, 1)", "not $snapshots")
    fails(session, "SELECT * FROM paimon_incremental_query('t', 'tag1', 1)", "two tags or two snapshot ids")
    fails(session, "SELECT * FROM paimon_incremental_query('t', 1, 0)", "before the start snapshot")
    fails(session, "SELECT * FROM paimon_incremental_query('t', 0, 9)", "out of the available snapshots")
    fails(session, "SELECT * FROM paimon_incremental_query('t', id, 1)", "literal arguments")
    fails(session, "SELECT * FROM paimon_incremental_to_auto_tag('t', 'tag1')", "not an automatic tag")
    fails(session, "SELECT * FROM paimon_incremental_between_timestamp('t', 'x', 'y')", "epoch milliseconds")
