"""Paimon 2.0's data-evolution Spark tests, translated (RowTrackingTestBase's "Data Evolution: ..."
cases and DataEvolutionDeletionTestBase), with Paimon's expected rows.

What dyntable does with a data-evolution table (docs/compatibility.md): it creates one, appends to
it, reads it in batch (each column from the newest file of its row-id range), compacts it (the
files of adjacent ranges merged into one, row ids kept), and changes rows by row id as Paimon
does: MERGE INTO and UPDATE write only the changed columns over the touched row-id ranges, DELETE
(with deletion vectors) marks rows on each range's anchor file.
"""

from __future__ import annotations

import pytest

from sqlext.errors import sqlstate_for

EVOLUTION = "'row-tracking.enabled' = 'true', 'data-evolution.enabled' = 'true'"

def sql(session, text):
    frame = list(session.execute(text))[-1].dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


def _refused(session, text):
    with pytest.raises(Exception) as info:  # noqa: B017 - the SQL layer's typed error, checked below
        sql(session, text)
    assert sqlstate_for(info.value) == "0A000", repr(info.value)
    assert "data-evolution.enabled" in str(info.value) or "Data Evolution" in str(info.value), str(info.value)


def test_small_files_compact_into_one_keeping_rows(session):
    """'Data Evolution: concurrent merge and small files compact', without the concurrent MERGE:
    the appended small files of adjacent row-id ranges become one file."""
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION}, "
                 "'compaction.min.file-num' = '2')")
    for i in range(1, 6):
        sql(session, f"INSERT INTO t VALUES ({i}, {i}, {i})")
    assert sql(session, "SELECT count(*) FROM `t$files`") == [(5,)]
    sql(session, "CALL sys.compact(table => 't')")
    assert sorted(sql(session, "SELECT * FROM t")) == [(i, i, i) for i in range(1, 6)]
    assert sql(session, "SELECT count(*) FROM `t$files`") == [(1,)]
    sql(session, "INSERT INTO t VALUES (6, 6, 6)")
    assert sorted(sql(session, "SELECT * FROM t")) == [(i, i, i) for i in range(1, 7)]


def test_inserts_with_an_added_column(session):
    """DataEvolutionDeletionTestBase's table before its DELETE: rows written before the column
    was added read it as NULL, before and after a compaction."""
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION}, "
                 "'deletion-vectors.enabled' = 'true')")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(0, 5)")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(5, 10)")
    sql(session, "ALTER TABLE t ADD COLUMNS (d INT)")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c, id + 100 AS d "
                 "FROM range(10, 13)")
    expected = [(i, i, i, None) for i in range(10)] + [(i, i, i, i + 100) for i in range(10, 13)]
    assert sql(session, "SELECT * FROM t ORDER BY id") == expected
    sql(session, "CALL sys.compact(table => 't')")  # three adjacent files of two schema versions
    assert sql(session, "SELECT * FROM t ORDER BY id") == expected
    assert sql(session, "SELECT count(*) FROM `t$files`") == [(1,)]


def test_delete_without_deletion_vectors_is_refused(session):
    """'Data Evolution: delete table throws exception' (Paimon: only with deletion vectors)."""
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION})")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(2, 4)")
    _refused(session, "DELETE FROM t WHERE id = 2")
    assert sorted(sql(session, "SELECT * FROM t")) == [(2, 2, 2), (3, 3, 3)]


def test_sorted_compaction_is_refused(session):
    """'Data Evolution: compact sort throw exception' (a sort would renumber the rows)."""
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION})")
    sql(session, "INSERT INTO t VALUES (1, 1, 1)")
    _refused(session, "CALL sys.compact(table => 't', order_strategy => 'order', order_by => 'id')")


def test_streaming_and_incremental_reads_are_refused(session):
    sql(session, f"CREATE TABLE t (id INT, b INT) TBLPROPERTIES ({EVOLUTION})")
    sql(session, "INSERT INTO t VALUES (1, 1)")
    sql(session, "INSERT INTO t VALUES (2, 2)")
    _refused(session, "SELECT * FROM t /*+ OPTIONS('incremental-between' = '1,2') */")


def test_merge_into_updates_one_column_and_inserts(session):
    """'Data Evolution: merge into table with data-evolution'."""
    sql(session, "CREATE TABLE s (id INT, b INT)")
    sql(session, "INSERT INTO s VALUES (1, 11), (2, 22)")
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION})")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(2, 4)")
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.b = s.b "
                 "WHEN NOT MATCHED THEN INSERT (id, b, c) VALUES (id, b, 11)")
    assert sql(session, "SELECT count(*) FROM t") == [(3,)]
    assert sql(session, "SELECT *, _ROW_ID, _SEQUENCE_NUMBER FROM t ORDER BY id") == [
        (1, 11, 11, 2, 2), (2, 22, 2, 0, 2), (3, 3, 3, 1, 2)]


def test_merge_into_not_matched_insert_only(session):
    """'Data Evolution: insert into table with data-evolution'."""
    sql(session, "CREATE TABLE s (id INT, b INT)")
    sql(session, "INSERT INTO s VALUES (1, 11), (2, 22)")
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION})")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(2, 4)")
    sql(session, "MERGE INTO t USING s ON t.id = s.id "
                 "WHEN NOT MATCHED THEN INSERT (id, b, c) VALUES (id, b, 11)")
    assert sql(session, "SELECT *, _ROW_ID, _SEQUENCE_NUMBER FROM t ORDER BY id") == [
        (1, 11, 11, 2, 2), (2, 2, 2, 0, 1), (3, 3, 3, 1, 1)]


def test_update_writes_the_changed_column(session):
    """'Data Evolution: V1 update table with data-evolution'."""
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION})")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(2, 4)")
    sql(session, "UPDATE t SET b = 22 WHERE id = 2")
    assert sql(session, "SELECT *, _ROW_ID, _SEQUENCE_NUMBER FROM t ORDER BY id") == [
        (2, 22, 2, 0, 2), (3, 3, 3, 1, 2)]


def test_compact_after_merge_into(session):
    """'Data Evolution: compact fields action'."""
    sql(session, "CREATE TABLE s (id INT, b INT)")
    sql(session, "INSERT INTO s VALUES (1, 11), (2, 22)")
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION}, "
                 "'compaction.min.file-num' = '2')")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(2, 4)")
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.b = s.b "
                 "WHEN NOT MATCHED THEN INSERT (id, b, c) VALUES (id, b, 111)")
    expected = [(1, 11, 111, 2, 2), (2, 22, 2, 0, 2), (3, 3, 3, 1, 2)]
    assert sql(session, "SELECT *, _ROW_ID, _SEQUENCE_NUMBER FROM t ORDER BY id") == expected
    assert sql(session, "SELECT count(*) FROM `t$files`") == [(3,)]
    sql(session, "CALL sys.compact(table => 't')")
    assert sql(session, "SELECT *, _ROW_ID, _SEQUENCE_NUMBER FROM t ORDER BY id") == expected
    assert sql(session, "SELECT count(*) FROM `t$files`") == [(1,)]


def test_delete_with_deletion_vectors(session):
    """DataEvolutionDeletionTestBase: 'delete from table with deletion vectors'."""
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION}, "
                 "'deletion-vectors.enabled' = 'true')")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(0, 5)")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(5, 10)")
    sql(session, "ALTER TABLE t ADD COLUMNS (d INT)")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c, id + 100 AS d "
                 "FROM range(10, 13)")
    sql(session, "DELETE FROM t WHERE id IN (1, 4, 6, 11)")
    assert sql(session, "SELECT *, _ROW_ID FROM t ORDER BY id") == [
        (0, 0, 0, None, 0), (2, 2, 2, None, 2), (3, 3, 3, None, 3), (5, 5, 5, None, 5), (7, 7, 7, None, 7),
        (8, 8, 8, None, 8), (9, 9, 9, None, 9), (10, 10, 10, 110, 10), (12, 12, 12, 112, 12)]
    sql(session, "DELETE FROM t WHERE id IN (2, 8)")
    assert sql(session, "SELECT *, _ROW_ID FROM t ORDER BY id") == [
        (0, 0, 0, None, 0), (3, 3, 3, None, 3), (5, 5, 5, None, 5), (7, 7, 7, None, 7), (9, 9, 9, None, 9),
        (10, 10, 10, 110, 10), (12, 12, 12, 112, 12)]


def test_merge_matched_delete_writes_deletion_vectors_only(session):
    """DataEvolutionDeletionTestBase: 'merge matched delete writes deletion vectors only'."""
    sql(session, "CREATE TABLE s (id INT)")
    sql(session, "INSERT INTO s VALUES (1), (6), (8), (99)")
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) TBLPROPERTIES ({EVOLUTION}, "
                 "'deletion-vectors.enabled' = 'true')")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(0, 5)")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(5, 10)")
    files_before = sql(session, "SELECT count(*) FROM `t$files`")
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert sql(session, "SELECT count(*) FROM `t$files`") == files_before
    assert sql(session, "SELECT id, b, c, _ROW_ID FROM t ORDER BY id") == [
        (i, i, i, i) for i in (0, 2, 3, 4, 5, 7, 9)]


DV = f"TBLPROPERTIES ({EVOLUTION}, 'deletion-vectors.enabled' = 'true')"


def _ten_rows(session):
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) {DV}")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(0, 5)")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(5, 10)")


def test_merge_update_after_file_level_and_partial_deletion(session):
    """DataEvolutionDeletionTestBase: 'merge update after file-level and partial deletion'."""
    sql(session, "CREATE TABLE s (id INT, new_b INT)")
    sql(session, "INSERT INTO s VALUES (2, 200), (6, 600), (7, 700), (9, 900)")
    _ten_rows(session)
    sql(session, "DELETE FROM t WHERE id IN (0, 1, 2, 3, 4, 6, 9)")
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.b = s.new_b")
    assert sql(session, "SELECT id, b, c, _ROW_ID FROM t ORDER BY id") == [(5, 5, 5, 5), (7, 700, 7, 7),
                                                                           (8, 8, 8, 8)]


def test_self_merge_skips_deleted_rows(session):
    """DataEvolutionDeletionTestBase: 'self merge skips deleted rows'."""
    _ten_rows(session)
    sql(session, "DELETE FROM t WHERE id IN (0, 1, 2, 3, 4, 6, 9)")
    sql(session, "MERGE INTO t USING t AS source ON t._ROW_ID = source._ROW_ID "
                 "WHEN MATCHED AND source.id IN (2, 6, 7, 9) THEN UPDATE SET t.b = source.b + 100")
    assert sql(session, "SELECT id, b, c, _ROW_ID FROM t ORDER BY id") == [(5, 5, 5, 5), (7, 107, 7, 7),
                                                                           (8, 8, 8, 8)]


def test_self_merge_delete_by_row_id(session):
    """DataEvolutionDeletionTestBase: 'self merge delete by row id'."""
    _ten_rows(session)
    sql(session, "MERGE INTO t USING t AS source ON t._ROW_ID = source._ROW_ID "
                 "WHEN MATCHED AND source.id IN (2, 6, 9) THEN DELETE")
    assert sql(session, "SELECT id, b, c, _ROW_ID FROM t ORDER BY id") == [
        (i, i, i, i) for i in (0, 1, 3, 4, 5, 7, 8)]


def test_merge_matched_update_and_delete_keep_first_match_semantics(session):
    """DataEvolutionDeletionTestBase: 'merge matched update and delete keeps first-match semantics'."""
    sql(session, "CREATE TABLE s (id INT, new_b INT, op STRING)")
    sql(session, "INSERT INTO s VALUES (1, 100, 'update'), (2, 200, 'delete'), (6, 600, 'update'), "
                 "(11, 1100, 'delete')")
    _ten_rows(session)
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.op = 'delete' THEN DELETE "
                 "WHEN MATCHED AND s.id IN (1, 2, 6) THEN UPDATE SET t.b = s.new_b")
    assert sql(session, "SELECT id, b, c, _ROW_ID FROM t ORDER BY id") == [
        (0, 0, 0, 0), (1, 100, 1, 1), (3, 3, 3, 3), (4, 4, 4, 4), (5, 5, 5, 5), (6, 600, 6, 6),
        (7, 7, 7, 7), (8, 8, 8, 8), (9, 9, 9, 9)]


def test_merge_not_matched_by_source_delete(session):
    """DataEvolutionDeletionTestBase: 'merge not matched by source delete'."""
    sql(session, "CREATE TABLE s (id INT)")
    sql(session, "INSERT INTO s VALUES (1), (3)")
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) {DV}")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(0, 6)")
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert sql(session, "SELECT id, b, c, _ROW_ID FROM t ORDER BY id") == [(1, 1, 1, 1), (3, 3, 3, 3)]


def test_merge_update_insert_and_not_matched_by_source_delete(session):
    """DataEvolutionDeletionTestBase: 'merge update insert and not matched by source delete'."""
    sql(session, "CREATE TABLE s (id INT, new_b INT)")
    sql(session, "INSERT INTO s VALUES (1, 100), (4, 400)")
    sql(session, f"CREATE TABLE t (id INT, b INT, c INT) {DV}")
    sql(session, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, id AS c FROM range(0, 4)")
    sql(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.b = s.new_b "
                 "WHEN NOT MATCHED THEN INSERT (id, b, c) VALUES (s.id, s.new_b, s.new_b) "
                 "WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert sql(session, "SELECT id, b, c FROM t ORDER BY id") == [(1, 100, 1), (4, 400, 400)]
