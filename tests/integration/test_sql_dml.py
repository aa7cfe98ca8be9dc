"""DELETE / UPDATE / MERGE INTO / TRUNCATE through SqlSession on real tables (shared SparkSession).

Results are checked by reading the tables with the engine (no Spark job), and "a failing
statement changes nothing" by the snapshot count and the rows before and after.
"""

from __future__ import annotations

import pytest

from engine import CommitKind
from engine.meta.manifest import FileKind
from sqlext.errors import SqlError
from sqlext.parse.names import TableName


def run(session, sql):
    """Run one statement; returns (rows of its result frame or None, message)."""
    result = list(session.execute(sql))[-1]
    frame = result.dataframe
    return ([tuple(r) for r in frame.collect()] if frame is not None else None), result.message


def table(session, name):
    return session.table(TableName.parse(name))


def contents(session, name):
    t = table(session, name)
    cols = list(t.schema.field_names)
    return sorted(tuple(r[c] for c in cols) for r in t.to_arrow().to_pylist())


def snapshot_count(session, name):
    return len(table(session, name).snapshots())


def partition_files(session, name, dt):
    """Data file names live in partition ``dt`` (to show which partitions a rewrite touched)."""
    t = table(session, name)
    return {
        f.file_name for sp in t.new_scan().plan().splits if sp.partition_values == (dt,) for f in sp.files
    }


def fails(session, sql, sqlstate, *words):
    with pytest.raises(SqlError) as info:
        list(session.execute(sql))
    assert info.value.sqlstate == sqlstate, str(info.value)
    for w in words:
        assert w in str(info.value), str(info.value)
    return info.value


def unchanged(session, name, sql, sqlstate, *words):
    """The statement fails with ``sqlstate`` and leaves the table exactly as it was."""
    before_rows, before_snaps = contents(session, name), snapshot_count(session, name)
    err = fails(session, sql, sqlstate, *words)
    assert snapshot_count(session, name) == before_snaps
    assert contents(session, name) == before_rows
    return err


# -- append tables ---------------------------------------------------------------------------------


def test_append_partitioned_delete_update_copy_on_write(session):
    run(session, "CREATE TABLE a (id INT, v STRING, dt STRING) PARTITIONED BY (dt)")
    run(session, "INSERT INTO a VALUES (1,'a','d1'), (2,'b','d1'), (3,'c','d2'), (4,NULL,'d3'), (5,'e','d3')")
    run(session, "CREATE TABLE gone (id INT)")
    run(session, "INSERT INTO gone VALUES (2), (9)")
    d3_files = partition_files(session, "a", "d3")

    # DELETE with a subquery on another managed table: only partition d1 is rewritten.
    out, msg = run(session, "DELETE FROM a AS x WHERE x.id IN (SELECT id FROM gone)")
    assert out == [(1,)] and msg == "1 row(s) deleted"
    assert contents(session, "a") == [(1, "a", "d1"), (3, "c", "d2"), (4, None, "d3"), (5, "e", "d3")]
    assert partition_files(session, "a", "d3") == d3_files

    # A condition that is NULL for a row keeps the row (NOT (c) OR (c) IS NULL).
    out, _ = run(session, "DELETE FROM a WHERE v <> 'e' AND dt = 'd3'")
    assert out == [(0,)]
    assert snapshot_count(session, "a") == 2  # the insert and the first delete; a no-op commits nothing

    # Deleting every row of a partition removes the partition.
    run(session, "DELETE FROM a WHERE dt = 'd2'")
    assert contents(session, "a") == [(1, "a", "d1"), (4, None, "d3"), (5, "e", "d3")]
    assert partition_files(session, "a", "d2") == set()

    # UPDATE moves a row to another partition (append tables may assign partition columns);
    # rows where the condition is NULL keep their values.
    out, msg = run(session, "UPDATE a SET v = upper(v), dt = 'd9' WHERE v <> 'a' AND dt = 'd3'")
    assert out == [(1,)] and msg == "1 row(s) updated"
    assert contents(session, "a") == [(1, "a", "d1"), (4, None, "d3"), (5, "E", "d9")]

    # UPDATE without WHERE touches every row.
    out, _ = run(session, "UPDATE a SET id = id * 10")
    assert out == [(3,)]
    assert contents(session, "a") == [(10, "a", "d1"), (40, None, "d3"), (50, "E", "d9")]

    # DELETE without WHERE is a truncate.
    out, _ = run(session, "DELETE FROM a")
    assert out == [(3,)]
    assert contents(session, "a") == []
    # DML on an empty table reads nothing and changes nothing
    out, _ = run(session, "UPDATE a SET v = 'x' WHERE id = 1")
    assert out == [(0,)] and snapshot_count(session, "a") == 6


def test_append_unpartitioned_and_errors(session):
    run(session, "CREATE TABLE u (id INT NOT NULL, v STRING, c AS id * 2)")
    run(session, "INSERT INTO u (id, v) VALUES (1,'a'), (2,'b'), (3,'c')")
    out, _ = run(session, "UPDATE u t SET t.v = concat(t.v, '!') WHERE t.id >= 2")
    assert out == [(2,)]
    assert contents(session, "u") == [(1, "a", 2), (2, "b!", 4), (3, "c!", 6)]
    run(session, "DELETE FROM u WHERE id = 1")
    assert contents(session, "u") == [(2, "b!", 4), (3, "c!", 6)]
    run(session, "UPDATE u SET id = id + 10 WHERE id = 3")  # computed column follows
    assert contents(session, "u") == [(2, "b!", 4), (13, "c!", 26)]

    unchanged(session, "u", "UPDATE u SET nope = 1", "42703", "nope")
    unchanged(session, "u", "UPDATE u SET c = 1", "42000", "computed")
    unchanged(session, "u", "UPDATE u SET v = 'x', v = 'y'", "42701")
    unchanged(session, "u", "DELETE FROM u WHERE missing_col = 1", "42703")
    # A runtime failure inside the write job (NOT NULL column set to NULL) publishes nothing.
    with pytest.raises(SqlError):
        list(session.execute("UPDATE u SET id = NULL WHERE id = 2"))
    assert contents(session, "u") == [(2, "b!", 4), (13, "c!", 26)]
    run(session, "TRUNCATE TABLE u")
    assert contents(session, "u") == []
    # a name dyntable does not manage goes to Spark, whose refusal is a typed error
    session.spark.sql("CREATE OR REPLACE TEMPORARY VIEW plain_view AS SELECT 1 AS x")
    fails(session, "DELETE FROM plain_view WHERE x = 1", "0A000", "does not manage")


# -- primary-key tables ----------------------------------------------------------------------------


def test_primary_key_delete_update_and_errors(session):
    run(
        session,
        "CREATE TABLE p (id INT, v STRING, n INT, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2')",
    )
    run(session, "INSERT INTO p VALUES (1,'a',1,'d1'), (2,'b',2,'d1'), (3,'c',3,'d2')")
    out, msg = run(session, "DELETE FROM p WHERE n = 2")
    assert out == [(1,)] and msg == "1 row(s) deleted"
    out, _ = run(session, "UPDATE p SET v = concat(v, v), n = n + 100 WHERE id <> 1")
    assert out == [(1,)]
    assert contents(session, "p") == [(1, "a", 1, "d1"), (3, "cc", 103, "d2")]
    # the update and delete were written as changes: no DML commit replaced files
    assert all(snap.commit_kind is not CommitKind.OVERWRITE for snap in table(session, "p").snapshots())

    unchanged(session, "p", "UPDATE p SET id = 7 WHERE id = 1", "42000", "'id'")
    unchanged(session, "p", "UPDATE p SET dt = 'x'", "42000", "'dt'")
    unchanged(session, "p", "DELETE FROM p WHERE nope > 1", "42703")
    unchanged(session, "p", "UPDATE p$snapshots SET v = 'x'", "42809")
    run(session, "TRUNCATE TABLE p PARTITION (dt = 'd2')")
    assert contents(session, "p") == [(1, "a", 1, "d1")]
    unchanged(session, "p", "TRUNCATE TABLE p PARTITION (v = 'a')", "42703", "'v'")


def test_merge_primary_key_table(session):
    run(session, "CREATE TABLE m (id INT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED)")
    # MERGE into an empty (never written) table: the initial load
    out, _ = run(
        session,
        "MERGE INTO m USING (SELECT * FROM VALUES (1,'a',1), (2,'b',2), (3,'c',3), (4,'d',4) "
        "AS s(id, v, n)) s ON m.id = s.id WHEN NOT MATCHED THEN INSERT *",
    )
    assert out == [(4, 0, 0, 4)]
    run(session, "CREATE TABLE src (id INT, v STRING, op STRING)")
    run(session, "INSERT INTO src VALUES (1,'A','U'), (2,NULL,'D'), (5,'E','I'), (6,'F','X')")
    out, msg = run(
        session,
        """
        MERGE INTO m AS tgt USING src ON tgt.id = src.id
        WHEN MATCHED AND src.op = 'D' THEN DELETE
        WHEN MATCHED THEN UPDATE SET v = src.v, n = tgt.n + 10
        WHEN NOT MATCHED AND src.op <> 'X' THEN INSERT (id, v) VALUES (src.id, src.v)
        WHEN NOT MATCHED BY SOURCE AND tgt.id = 4 THEN UPDATE SET v = 'orphan'
    """,
    )
    assert out == [(4, 2, 1, 1)], msg
    assert contents(session, "m") == [(1, "A", 11), (3, "c", 3), (4, "orphan", 4), (5, "E", None)]

    # two source rows matching one target row: error 21000 and nothing changes
    run(session, "INSERT INTO src VALUES (3,'x','U'), (3,'y','U')")
    unchanged(
        session, "m", "MERGE INTO m USING src s ON m.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v", "21000"
    )
    # a key may be assigned only if no matched row changes it; UPDATE SET * keeps them
    unchanged(
        session,
        "m",
        "MERGE INTO m USING (SELECT 1 AS id) s ON m.id = s.id WHEN MATCHED THEN UPDATE SET id = 9",
        "42000",
        "key",
    )
    out, _ = run(
        session,
        "MERGE INTO m USING (SELECT 1 AS id, 'z' AS v, 0 AS n) s ON m.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED BY SOURCE THEN DELETE",
    )
    assert out == [(4, 1, 3, 0)]
    assert contents(session, "m") == [(1, "z", 0)]


def test_merge_append_partitioned_copy_on_write(session):
    run(session, "CREATE TABLE ap (id INT, v STRING, dt STRING) PARTITIONED BY (dt)")
    run(session, "INSERT INTO ap VALUES (1,'a','d1'), (2,'b','d1'), (3,'c','d2'), (4,'d','d3')")
    d2_files, d3_files = partition_files(session, "ap", "d2"), partition_files(session, "ap", "d3")
    # id 1 is matched by two source rows but no clause applies to either pair: the row is kept once.
    out, _ = run(
        session,
        """
        MERGE INTO ap t USING (SELECT * FROM VALUES (1,'x'), (1,'y'), (2,'B'), (7,'g') AS s(id, v)) s
        ON t.id = s.id
        WHEN MATCHED AND s.v = 'B' THEN UPDATE SET v = s.v, dt = 'd2'
        WHEN NOT MATCHED THEN INSERT (id, v, dt) VALUES (s.id, s.v, 'd7')
    """,
    )
    assert out == [(2, 1, 0, 1)]
    assert contents(session, "ap") == [
        (1, "a", "d1"),
        (2, "B", "d2"),
        (3, "c", "d2"),
        (4, "d", "d3"),
        (7, "g", "d7"),
    ]
    # only d1 was rewritten; d2 and d3 kept their files (d2 gained the moved row)
    assert partition_files(session, "ap", "d3") == d3_files
    assert d2_files < partition_files(session, "ap", "d2")
    last = table(session, "ap").latest_snapshot()
    ms = table(session, "ap").store.manifests
    deleted = [
        e
        for m in ms.read_list(last.delta_manifest_list)
        for e in ms.read_entries(m.file_name)
        if e.kind is FileKind.DELETE
    ]
    assert {e.partition for e in deleted} and all(b"d1" in e.partition for e in deleted)

    # only inserts: nothing is rewritten; a source-only DELETE by source removes rows
    out, _ = run(
        session,
        "MERGE INTO ap USING (SELECT 8 AS id, 'h' AS v, 'd8' AS dt) s ON ap.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *",
    )
    assert out == [(1, 0, 0, 1)]
    out, _ = run(
        session,
        "MERGE INTO ap t USING (SELECT 1 AS id) s ON t.id = s.id "
        "WHEN NOT MATCHED BY SOURCE AND t.dt IN ('d2', 'd7') THEN DELETE",
    )
    assert out == [(3, 0, 3, 0)]
    assert contents(session, "ap") == [(1, "a", "d1"), (4, "d", "d3"), (8, "h", "d8")]
    unchanged(
        session,
        "ap",
        "MERGE INTO ap USING (SELECT 1 AS id, 1 AS k UNION ALL SELECT 1, 2) s "
        "ON ap.id = s.id WHEN MATCHED THEN DELETE",
        "21000",
    )
    unchanged(
        session,
        "ap",
        "MERGE INTO ap USING (SELECT 1 AS id) s ON ap.id = s.id WHEN NOT MATCHED THEN INSERT *",
        "42703",
        "'v'",
    )


def test_time_columns_take_nulls_literals_and_text_and_survive_an_update(session):
    # Spark has no TIME type: TIME columns cross as text, so INSERT and UPDATE must parse it back.
    import datetime as dt

    run(session, "CREATE TABLE times (id INT, t0 TIME, t3 TIME(3), PRIMARY KEY (id) NOT ENFORCED)")
    run(session, "INSERT INTO times VALUES (1, NULL, NULL), (2, TIME '12:34:56', '01:02:03.45')")
    assert sorted(run(session, "SELECT id, t0, t3 FROM times")[0]) == [
        (1, None, None), (2, "12:34:56", "01:02:03.45")]
    run(session, "UPDATE times SET id = id WHERE id = 2")  # a rewrite through Spark keeps the values
    assert contents(session, "times") == [
        (1, None, None),
        (2, dt.time(12, 34, 56), dt.time(1, 2, 3, 450_000)),
    ]
    before = snapshot_count(session, "times")
    for bad in ("'25:00:00'", "'noon'", "'12:34:56.5'"):  # not a time of day; finer than TIME(0)
        with pytest.raises(SqlError, match="t0"):
            run(session, f"INSERT INTO times VALUES (3, {bad}, NULL)")
    assert snapshot_count(session, "times") == before


@pytest.mark.parametrize("keys", ["", "PRIMARY KEY (id) NOT ENFORCED"], ids=["append", "primary_key"])
def test_row_level_statements_right_after_add_column_see_it(session, keys):
    """ALTER TABLE ADD COLUMNS with no write after it: the new column is there for UPDATE, DELETE
    and MERGE (as NULLs in the stored rows), as in Paimon, though the latest snapshot was written
    in the older schema."""
    sep = ", " if keys else ""
    run(session, f"CREATE TABLE addcol_{bool(keys)} (id INT, v STRING{sep}{keys})")
    name = f"addcol_{bool(keys)}"
    run(session, f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    run(session, f"ALTER TABLE {name} ADD COLUMNS (d INT)")
    run(session, f"UPDATE {name} SET d = id * 10 WHERE id <= 2")
    assert contents(session, name) == [(1, "a", 10), (2, "b", 20), (3, "c", None)]
    run(session, f"ALTER TABLE {name} ADD COLUMNS (e STRING)")
    run(session, f"DELETE FROM {name} WHERE e IS NULL AND d = 20")
    run(session, f"MERGE INTO {name} t USING (SELECT 3 AS id, 'x' AS e) s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET t.e = s.e")
    assert contents(session, name) == [(1, "a", 10, None), (3, "c", None, "x")]
