"""CALL sys.expire_snapshots, sys.retention_mark / system$retention_mark and t$retention through
SqlSession (shared Spark)."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError
from tests.integration.sql_helpers import run


@pytest.fixture
def history(session):
    session.sql("CREATE TABLE hist (id INT, v STRING) TBLPROPERTIES ('retention.time' = '0 s')")
    for i in range(5):
        session.sql(f"INSERT INTO hist VALUES ({i}, 'v{i}')")
    return "hist"


def test_expire_snapshots_procedure(session, history):
    # Paimon's answer: one row, one column (ExpireSnapshotsProcedure's deleted_snapshots_count)
    paimon = "CALL sys.expire_snapshots(table => 'hist', retain_max => 2, dry_run => true)"
    frame = list(session.execute(paimon))[-1].dataframe
    assert frame.columns == ["deleted_snapshots_count"] and [tuple(r) for r in frame.collect()] == [(3,)]
    dry = run(session, "CALL sys.expire_snapshots(table => 'hist', retain_max => 2, dry_run => true, "
                       "detail => true)")
    summary, details = dry[0], dry[1:]
    assert summary[0] == 3 and summary[1] > 0 and summary[3] is True and summary[4] is None
    assert {r[6] for r in details if r[4] == "delete" and r[5] == "snapshot"} == {"1", "2", "3"}
    keep = {r[6]: r[8] for r in details if r[4] == "keep" and r[5] == "snapshot"}
    assert keep["5"].startswith("latest snapshot")
    assert [r[0] for r in run(session, "SELECT snapshot_id FROM `hist$snapshots` ORDER BY snapshot_id")] == [
        1,
        2,
        3,
        4,
        5,
    ]
    done = run(session, "CALL sys.expire_snapshots('hist', 2)")
    assert done == [(3,)]
    # the files and bytes are in the maintenance log, as the detailed dry run announced them
    logged = run(session, "SELECT deleted_files, deleted_bytes FROM `hist$maintenance_log` "
                          "WHERE procedure = 'expire_snapshots' AND NOT dry_run")
    assert logged[-1] == (summary[1], summary[2])
    assert [r[0] for r in run(session, "SELECT snapshot_id FROM `hist$snapshots` ORDER BY snapshot_id")] == [
        4,
        5,
    ]
    assert sorted(r[0] for r in run(session, "SELECT id FROM hist")) == [0, 1, 2, 3, 4]
    with pytest.raises(SqlError) as info:
        list(session.execute("CALL sys.expire_snapshots(table => 'hist', retain_max => 1, retain_min => 2)"))
    assert info.value.sqlstate == "22023"
    # Paimon's options argument: table options for this run only
    done = run(
        session,
        "CALL sys.expire_snapshots(table => 'hist', retain_min => 1, "
        "options => 'snapshot.num-retained.max=1')",
    )
    assert done[0][0] == 1
    assert [r[0] for r in run(session, "SELECT snapshot_id FROM `hist$snapshots`")] == [5]
    with pytest.raises(SqlError) as info:
        list(
            session.execute("CALL sys.expire_snapshots(table => 'hist', options => 'snapshot.expire.limit')")
        )
    assert info.value.sqlstate == "22023"


def test_retention_mark_procedures_and_refused_time_travel(session, history):
    first = run(session, "CALL sys.retention_mark(table => 'hist')")
    assert first[0][0] == 5 and first[0][3] is True
    again = run(session, "CALL system$retention_mark(default, hist)")
    assert again[0][0] == 5 and again[0][3] is False
    assert run(session, "CALL system$retention_mark(hist)")[0][2] == first[0][2]
    with pytest.raises(SqlError) as info:
        list(session.execute("SELECT * FROM hist VERSION AS OF 2"))
    assert "retention mark" in str(info.value)
    assert sorted(r[0] for r in run(session, "SELECT id FROM hist VERSION AS OF 5")) == [0, 1, 2, 3, 4]
    rows = run(
        session,
        "SELECT name, behind_retention_mark FROM `hist$retention` "
        "WHERE object_type = 'snapshot' ORDER BY snapshot_id",
    )
    assert rows == [("1", True), ("2", True), ("3", True), ("4", True), ("5", False)]


def test_retention_system_table(session, history):
    run(session, "CALL sys.create_tag(table => 'hist', tag => 'keep', snapshot => 2)")
    rows = run(session, "SELECT object_type, name, kept_by, collectable_now FROM `hist$retention`")
    kinds = {r[0] for r in rows}
    assert {"snapshot", "tag", "data", "manifest", "manifest-list"} <= kinds
    tag = [r for r in rows if r[0] == "tag"]
    assert tag == [("tag", "keep", "tag (until deleted)", False)]
    assert any(r[0] == "data" and "tag keep" in (r[2] or "") for r in rows)
