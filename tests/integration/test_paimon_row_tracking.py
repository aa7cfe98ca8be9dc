"""Paimon 2.0's RowTrackingTestBase (paimon-spark-ut) translated: row-tracking tables
(``row-tracking.enabled``) read and written through dyntable's SQL, with Paimon's expected
``_ROW_ID`` / ``_SEQUENCE_NUMBER`` values.

Not translated (they need something a Spark-only user does not have, or belong elsewhere):
* the ``Data Evolution:`` cases (``data-evolution.enabled``): their own suite;
* ``query row_tracking system table with filter pushdown``'s check of the scan description (an
  internal of Paimon's connector); its rows are checked here.
"""

from __future__ import annotations

import pytest


def sql(session, text):
    """The rows of the last statement of ``text`` as tuples (Spark's order)."""
    frame = list(session.execute(text))[-1].dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


RT = "TBLPROPERTIES ('row-tracking.enabled' = 'true')"


def test_read_row_tracking(session):
    sql(session, f"CREATE TABLE t (id INT, data STRING) {RT}")
    sql(session, "INSERT INTO t VALUES (11, 'a'), (22, 'b')")
    assert sorted(sql(session, "SELECT *, _ROW_ID, _SEQUENCE_NUMBER FROM t")) == [
        (11, "a", 0, 1), (22, "b", 1, 1)]
    assert sorted(sql(session, "SELECT _ROW_ID, data, _SEQUENCE_NUMBER, id FROM t")) == [
        (0, "a", 1, 11), (1, "b", 1, 22)]
    assert sorted(sql(session, "SELECT _ROW_ID FROM t")) == [(0,), (1,)]  # no column of the table read
    # hidden from a star, qualified or not
    assert sorted(sql(session, "SELECT * FROM t")) == [(11, "a"), (22, "b")]
    assert sorted(sql(session, "SELECT x.*, x._ROW_ID FROM t x")) == [(11, "a", 0), (22, "b", 1)]


def test_row_tracking_system_table_with_filter(session):
    sql(session, "CREATE TABLE t (a INT, b INT) TBLPROPERTIES ('row-tracking.enabled' = 'true')")
    sql(session, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)")
    assert sql(session, "SELECT a, b FROM `t$row_tracking` WHERE a > 1 ORDER BY a") == [(2, 20), (3, 30)]
    assert sql(session, "SELECT * FROM `t$row_tracking` ORDER BY a") == [
        (1, 10, 0, 1), (2, 20, 1, 1), (3, 30, 2, 1)]


def rows(session, table="t", order="id"):
    return sql(session, f"SELECT *, _ROW_ID, _SEQUENCE_NUMBER FROM {table} ORDER BY {order}")


def files(session, table="t", order="min_sequence_number"):
    return sql(session, "SELECT min_sequence_number, max_sequence_number "
                        f"FROM `{table}$files` ORDER BY {order}")


def _compact_then_update(session):
    sql(session, "CREATE TABLE t (id INT, data INT) TBLPROPERTIES ('row-tracking.enabled' = 'true', "
                 "'compaction.min.file-num'='2')")
    for i in (1, 2, 3):
        sql(session, f"INSERT INTO t VALUES ({i}, {i})")
    assert rows(session) == [(1, 1, 0, 1), (2, 2, 1, 2), (3, 3, 2, 3)]
    sql(session, "CALL sys.compact(table => 't')")
    last = "SELECT commit_kind FROM `t$snapshots` ORDER BY snapshot_id DESC LIMIT 1"
    assert sql(session, last) == [("COMPACT",)]
    assert rows(session) == [(1, 1, 0, 1), (2, 2, 1, 2), (3, 3, 2, 3)]
    sql(session, "INSERT INTO t VALUES (4, '4')")
    sql(session, "INSERT INTO t VALUES (5, '5')")
    sql(session, "CALL sys.compact(table => 't')")  # snapshot 7: files with sequence numbers [1, 6]
    assert files(session) == [(1, 6)]
    sql(session, "UPDATE t SET data = 22 WHERE id = 2")  # snapshot 8: the updated row's sequence is NULL
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS data FROM range(6, 8)")
    sql(session, "UPDATE t SET data = 67 WHERE _SEQUENCE_NUMBER = 9")


def test_compact_table(session):
    _compact_then_update(session)
    assert rows(session) == [(1, 1, 0, 1), (2, 22, 1, 8), (3, 3, 2, 3), (4, 4, 3, 5), (5, 5, 4, 6),
                             (6, 67, 5, 10), (7, 67, 6, 10)]


def test_compact_table_rewrites_only_touched_files(session):
    """Paimon's copy-on-write UPDATE rewrites only the files holding a matched row: two files stay."""
    _compact_then_update(session)
    assert files(session) == [(1, 8), (10, 10)]


@pytest.mark.parametrize("dv", ["false", "true"])
def test_delete_table(session, dv):
    sql(session, "CREATE TABLE t (id INT, data INT) TBLPROPERTIES ('row-tracking.enabled' = 'true', "
                 f"'deletion-vectors.enabled' = '{dv}')")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS data FROM range(1, 4)")
    sql(session, "DELETE FROM t WHERE id = 2")
    assert rows(session) == [(1, 1, 0, 1), (3, 3, 2, 1)]
    sql(session, "DELETE FROM t WHERE _ROW_ID = 2")
    assert rows(session) == [(1, 1, 0, 1)]


def test_delete_preserves_row_tracking_metadata_for_update(session):
    sql(session, f"CREATE TABLE t (id INT, data INT) {RT}")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS data FROM range(1, 4)")
    sql(session, "DELETE FROM t WHERE id = 2")
    sql(session, "UPDATE t SET data = 33 WHERE _ROW_ID = 2")
    assert rows(session) == [(1, 1, 0, 1), (3, 33, 2, 3)]


@pytest.mark.parametrize("dv", ["false", "true"])
def test_update_table(session, dv):
    sql(session, "CREATE TABLE t (id INT, data INT) TBLPROPERTIES ('row-tracking.enabled' = 'true', "
                 f"'deletion-vectors.enabled' = '{dv}')")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS data FROM range(1, 4)")
    assert rows(session) == [(1, 1, 0, 1), (2, 2, 1, 1), (3, 3, 2, 1)]
    sql(session, "UPDATE t SET data = 22 WHERE id = 2")
    assert rows(session) == [(1, 1, 0, 1), (2, 22, 1, 2), (3, 3, 2, 1)]
    sql(session, "UPDATE t SET data = 222 WHERE _ROW_ID = 1")
    assert rows(session) == [(1, 1, 0, 1), (2, 222, 1, 3), (3, 3, 2, 1)]


def test_update_table_without_condition(session):
    sql(session, f"CREATE TABLE t (id INT, data INT) {RT}")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS data FROM range(1, 4)")
    sql(session, "UPDATE t SET data = 22")
    assert rows(session) == [(1, 22, 0, 2), (2, 22, 1, 2), (3, 22, 2, 2)]


def test_update_then_insert(session):
    sql(session, f"CREATE TABLE t (id INT, data INT) {RT}")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS data FROM range(1, 4)")
    sql(session, "UPDATE t SET data = 22 WHERE id = 2")
    sql(session, "INSERT INTO t VALUES (4, 4), (5, 5)")
    assert rows(session) == [(1, 1, 0, 1), (2, 22, 1, 2), (3, 3, 2, 1), (4, 4, 3, 3), (5, 5, 4, 3)]


def _merge_tables(session, target_dv="false"):
    sql(session, f"CREATE TABLE s (id INT, b INT) {RT}")
    sql(session, "INSERT INTO s VALUES (1, 11), (2, 22)")
    sql(session, "CREATE TABLE t (id INT, b INT) TBLPROPERTIES ('row-tracking.enabled' = 'true', "
                 f"'deletion-vectors.enabled' = '{target_dv}')")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b FROM range(2, 4)")


@pytest.mark.parametrize("dv", ["false", "true"])
def test_merge_into_table(session, dv):
    _merge_tables(session, dv)
    assert rows(session) == [(2, 2, 0, 1), (3, 3, 1, 1)]
    sql(session, "MERGE INTO t USING s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET t.b = s.b WHEN NOT MATCHED THEN INSERT *")
    assert rows(session) == [(1, 11, 2, 2), (2, 22, 0, 2), (3, 3, 1, 1)]


def test_merge_into_table_with_only_insert(session):
    _merge_tables(session)
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert rows(session) == [(1, 11, 2, 2), (2, 2, 0, 1), (3, 3, 1, 1)]


def test_merge_into_table_with_only_delete(session):
    _merge_tables(session)
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert rows(session) == [(3, 3, 1, 1)]


def test_merge_into_table_with_only_update(session):
    _merge_tables(session)
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    assert rows(session) == [(2, 22, 0, 2), (3, 3, 1, 1)]


def test_merge_into_table_not_matched_by_source(session):
    sql(session, f"CREATE TABLE source (a INT, b INT, c STRING) {RT}")
    sql(session, "INSERT INTO source VALUES (1, 100, 'c11'), (3, 300, 'c33'), (5, 500, 'c55'), "
                 "(7, 700, 'c77'), (9, 900, 'c99')")
    sql(session, f"CREATE TABLE target (a INT, b INT, c STRING) {RT}")
    sql(session, "INSERT INTO target values (1, 10, 'c1'), (2, 20, 'c2'), (3, 30, 'c3'), (4, 40, 'c4'), "
                 "(5, 50, 'c5')")
    sql(session, """
        MERGE INTO target
        USING source
        ON target.a = source.a
        WHEN MATCHED AND target.a = 5 THEN UPDATE SET b = source.b + target.b
        WHEN MATCHED AND source.c > 'c2' THEN UPDATE SET *
        WHEN NOT MATCHED AND c > 'c9' THEN INSERT (a, b, c) VALUES (a, b * 1.1, c)
        WHEN NOT MATCHED THEN INSERT *
        WHEN NOT MATCHED BY SOURCE AND a = 2 THEN UPDATE SET b = b * 10
        WHEN NOT MATCHED BY SOURCE THEN DELETE
        """)
    assert rows(session, "target", "a") == [
        (1, 10, "c1", 0, 1), (2, 200, "c2", 1, 2), (3, 300, "c33", 2, 2), (5, 550, "c5", 4, 2),
        (7, 700, "c77", 5, 2), (9, 990, "c99", 6, 2)]


def test_dataframe_reads_metadata_columns(session, spark, warehouse):
    """DataFrame users name the metadata columns in the read's projection (``columns``)."""
    from sqlext.source.native import read_table

    sql(session, f"CREATE TABLE t (id INT, data INT) {RT}")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS data FROM range(1, 3)")  # one file
    df = read_table(spark, "default.t", warehouse, columns=["id", "_ROW_ID", "__paimon_row_index"])
    assert sorted(tuple(r) for r in df.collect()) == [(1, 0, 0), (2, 1, 1)]
    assert read_table(spark, "default.t", warehouse).columns == ["id", "data"]
