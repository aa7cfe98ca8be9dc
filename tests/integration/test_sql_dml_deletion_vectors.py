"""DELETE / UPDATE / MERGE INTO on append tables with deletion vectors, through SqlSession.

Each statement must mark rows in DVs (no data file rewritten, one snapshot), read back the same
through the engine and through Spark SQL, merge with the DVs of earlier statements, and a
compaction afterwards must apply and drop the DVs.
"""

from __future__ import annotations

from engine import CommitKind
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexStore
from tests.integration.test_sql_dml import contents, run, snapshot_count, table


def _files(session, name):
    t = table(session, name)
    return {f.file_name for sp in t.new_scan().plan().splits for f in sp.files}


def _dv_count(session, name):
    t = table(session, name)
    snap = t.latest_snapshot()
    entries = IndexStore(t.store.io, t.store.paths).read_manifest(snap.index_manifest)
    return sum(e.file.row_count for e in entries if e.file.index_type == DELETION_VECTORS_INDEX)


def _spark_rows(session, name):
    return sorted(tuple(r) for r in session.spark_sql(f"SELECT * FROM {name}").collect())


def test_delete_update_merge_write_deletion_vectors_and_compaction_drops_them(session):
    run(session, "CREATE TABLE dv (id INT, v STRING, dt STRING) PARTITIONED BY (dt) "
                 "TBLPROPERTIES ('deletion-vectors.enabled' = 'true', 'bucket' = '-1')")
    run(session, "INSERT INTO dv VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y'), (4, 'd', 'y')")
    run(session, "INSERT INTO dv VALUES (5, 'e', 'x'), (6, 'f', 'y')")
    files = _files(session, "dv")
    snaps = snapshot_count(session, "dv")

    rows, _ = run(session, "DELETE FROM dv WHERE id % 2 = 0")
    assert rows == [(3,)]
    assert _files(session, "dv") == files  # nothing rewritten
    assert snapshot_count(session, "dv") == snaps + 1
    assert table(session, "dv").latest_snapshot().commit_kind is CommitKind.OVERWRITE  # as Paimon commits it
    assert contents(session, "dv") == [(1, "a", "x"), (3, "c", "y"), (5, "e", "x")]
    assert _spark_rows(session, "dv") == contents(session, "dv")
    assert _dv_count(session, "dv") == 3  # the three files holding an even id have a DV now

    # Already deleted rows are not matched again (count) and not resurrected by UPDATE.
    rows, _ = run(session, "DELETE FROM dv WHERE id <= 2")
    assert rows == [(1,)]
    rows, _ = run(session, "UPDATE dv SET v = upper(v), dt = 'z' WHERE id >= 2")
    assert rows == [(2,)]
    assert contents(session, "dv") == [(3, "C", "z"), (5, "E", "z")]
    assert files < _files(session, "dv")  # the updated rows are new files; old ones stay

    run(session, "CREATE TABLE src (id INT, v STRING)")
    run(session, "INSERT INTO src VALUES (3, 'm'), (5, 'gone'), (9, 'new')")
    rows, _ = run(session, """
        MERGE INTO dv t USING src s ON t.id = s.id
        WHEN MATCHED AND s.v = 'gone' THEN DELETE
        WHEN MATCHED THEN UPDATE SET v = s.v
        WHEN NOT MATCHED THEN INSERT (id, v, dt) VALUES (s.id, s.v, 'x')""")
    assert rows == [(3, 1, 1, 1)]
    expected = [(3, "m", "z"), (9, "new", "x")]
    assert contents(session, "dv") == expected
    assert _spark_rows(session, "dv") == expected

    # time travel to the first DELETE still sees its DVs only
    first = snaps + 1
    travelled = session.spark_sql(f"SELECT id FROM dv VERSION AS OF {first}").collect()
    assert sorted(r[0] for r in travelled) == [1, 3, 5]

    run(session, "CALL sys.compact(table => 'default.dv', compact_strategy => 'full')")
    assert contents(session, "dv") == expected
    assert _dv_count(session, "dv") == 0


def test_delete_on_an_empty_dv_table_and_a_no_match_change_nothing(session):
    run(session, "CREATE TABLE dve (id INT) TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    rows, _ = run(session, "DELETE FROM dve WHERE id = 1")
    assert rows == [(0,)]
    run(session, "INSERT INTO dve VALUES (1), (2)")
    before = snapshot_count(session, "dve")
    rows, _ = run(session, "DELETE FROM dve WHERE id = 7")
    assert rows == [(0,)] and snapshot_count(session, "dve") == before
    rows, _ = run(session, "DELETE FROM dve")
    assert rows == [(2,)] and contents(session, "dve") == []


def test_a_stream_of_a_dv_append_table_gets_new_rows_and_no_deletes_as_in_paimon(session):
    run(session, "CREATE TABLE dvs (id INT, v STRING) TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    run(session, "CREATE TABLE dvt (id INT, v STRING)")
    run(session, "INSERT INTO dvs VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    run(session, "DELETE FROM dvs WHERE id = 2")
    stream = ["SET 'execution.runtime-mode' = 'streaming'",
              "SET 'execution.streaming.trigger' = 'available-now'",
              "INSERT INTO dvt SELECT * FROM dvs", "SET 'execution.runtime-mode' = 'batch'"]
    for sql in stream:
        run(session, sql)
    assert contents(session, "dvt") == [(1, "a"), (3, "c")]  # the first read is the snapshot minus its DVs
    run(session, "DELETE FROM dvs WHERE id = 1")
    run(session, "INSERT INTO dvs VALUES (4, 'd')")
    run(session, "UPDATE dvs SET v = 'C' WHERE id = 3")
    for sql in stream:
        run(session, sql)
    # new files stream as +I; a DELETE or UPDATE is an OVERWRITE snapshot (Paimon's commit kind for
    # them), which streaming readers skip as Paimon's do ('streaming-read-overwrite' = false)
    assert contents(session, "dvt") == [(1, "a"), (3, "c"), (4, "d")]


def test_incremental_between_of_a_dv_append_table_returns_the_added_rows_as_in_paimon(session):
    run(session, "CREATE TABLE dvi (id INT, v STRING) TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    run(session, "INSERT INTO dvi VALUES (1, 'a'), (2, 'b'), (3, 'c')")  # 1
    run(session, "DELETE FROM dvi WHERE id = 2")  # 2: DVs only
    run(session, "INSERT INTO dvi VALUES (4, 'd')")  # 3
    run(session, "UPDATE dvi SET v = 'C' WHERE id = 3")  # 4: a DV and a new file, OVERWRITE

    def between(rng, mode=None, name="dvi"):
        hint = f"'incremental-between' = '{rng}'" + (f", 'incremental-between-scan-mode' = '{mode}'"
                                                      if mode else "")
        return sorted(tuple(r) for r in session.spark_sql(
            f"SELECT * FROM {name} /*+ OPTIONS({hint}) */").collect())

    # the files each APPEND snapshot added, whole: row 2 is there although deleted inside the range;
    # DELETE and UPDATE commit OVERWRITE snapshots, which a delta read skips (Paimon's
    # IncrementalDeltaStartingScanner reads APPEND snapshots only)
    assert between("0,4") == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert between("1,4") == [(4, "d")]
    assert between("1,2") == []  # a DELETE that wrote only DVs is no change
    # the diff mode compares the two states with their DVs applied (a plain read shows the additions)
    assert between("1,4", "diff") == [(3, "C"), (4, "d")]
    assert between("1,4", "diff", "`dvi$audit_log`") == [
        ("+I", 3, "C"), ("+I", 4, "d"), ("-D", 2, "b"), ("-D", 3, "c")]
