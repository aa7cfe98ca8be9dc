"""Copy-on-write DELETE / UPDATE / MERGE INTO on append tables rewrite only the data files that hold
a matched row, as Paimon does (its Spark ``DeleteFromPaimonTableCommand``, ``UpdatePaimonTableCommand``
and ``MergeIntoPaimonTable`` rewrite the touched files): the other files of the same partition stay
as they are, and each statement is one OVERWRITE snapshot replacing exactly the touched files."""

from __future__ import annotations

from engine import CommitKind
from sqlext.parse.names import TableName


def run(session, sql):
    result = list(session.execute(sql))[-1]
    frame = result.dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


def files(session, name="t"):
    t = session.table(TableName.parse(name))
    return {f.file_name for sp in t.new_scan().plan().splits for f in sp.files}


def rows(session, name="t"):
    t = session.table(TableName.parse(name))
    return sorted(tuple(r.values()) for r in t.to_arrow().to_pylist())


def test_each_statement_replaces_only_the_files_holding_a_matched_row(session):
    run(session, "CREATE TABLE t (id INT, v STRING, dt STRING) PARTITIONED BY (dt)")
    for ids in ((1, 2), (3, 4), (5, 6)):  # three files in partition a, one in b
        values = ", ".join(f"({i}, 'v{i}', 'a')" for i in ids)
        run(session, f"INSERT INTO t SELECT /*+ REPARTITION(1) */ * FROM VALUES {values} AS r(id, v, dt)")
    run(session, "INSERT INTO t VALUES (7, 'v7', 'b')")
    before = set(files(session))

    assert run(session, "UPDATE t SET v = 'x' WHERE id = 3") == [(1,)]
    after = set(files(session))
    assert len(before - after) == 1 and len(after - before) == 1  # one file replaced, three untouched
    table = session.table(TableName.parse("t"))
    assert table.latest_snapshot().commit_kind is CommitKind.OVERWRITE

    before = after
    assert run(session, "DELETE FROM t WHERE id IN (1, 2, 6)") == [(3,)]
    after = set(files(session))
    # the file of 1 and 2 goes whole, the file of 5 and 6 becomes one of 5
    assert len(before - after) == 2 and len(after - before) == 1
    assert rows(session) == [(3, "x", "a"), (4, "v4", "a"), (5, "v5", "a"), (7, "v7", "b")]

    run(session, "CREATE TABLE s (id INT, v STRING)")
    run(session, "INSERT INTO s VALUES (5, 'm'), (8, 'new')")
    before = after
    assert run(session, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
                        "WHEN NOT MATCHED THEN INSERT (id, v, dt) VALUES (s.id, s.v, 'b')") == [(2, 1, 0, 1)]
    after = set(files(session))
    assert len(before - after) == 1  # only the file of 5
    assert rows(session) == [(3, "x", "a"), (4, "v4", "a"), (5, "m", "a"), (7, "v7", "b"), (8, "new", "b")]

    # a MERGE that only inserts, or matches nothing, replaces no file
    before = after
    run(session, "INSERT INTO s VALUES (9, 'n')")
    run(session, "MERGE INTO t USING (SELECT * FROM s WHERE id = 9) s ON t.id = s.id "
                 "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, v, dt) VALUES (s.id, s.v, 'b')")
    assert before <= set(files(session))
