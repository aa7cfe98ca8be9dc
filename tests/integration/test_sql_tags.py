"""CALL procedures for tags and rollback through SqlSession (shared Spark): Paimon's names and outputs."""

from __future__ import annotations

import pytest

from sqlext.parse.names import TableName
from tests.integration.sql_helpers import fails, run


@pytest.fixture
def tagged(session):
    session.sql("CREATE TABLE tagged (id INT, v STRING)")
    for i in range(3):
        session.sql(f"INSERT INTO tagged VALUES ({i}, 'v{i}')")
    return session.table(TableName.parse("tagged"))


def test_tag_procedures(session, tagged):
    assert run(session, "CALL sys.create_tag(table => 'tagged', tag => 'one', snapshot => 1)") == [(True,)]
    assert run(session, "CALL sys.create_tag('tagged', 'two', 2, '1 d')") == [(True,)]
    assert run(
        session, "SELECT tag_name, snapshot_id, time_retained FROM `tagged$tags` ORDER BY tag_name"
    ) == [("one", 1, None), ("two", 2, "PT24H")]
    assert run(session, "SELECT id FROM tagged VERSION AS OF 'one'") == [(0,)]
    e = fails(session, "CALL sys.create_tag(table => 'tagged', tag => 'one')", "already exists")
    assert e.sqlstate
    fails(session, "CALL sys.create_tag(table => 'tagged', tag => 'x', snapshot => 99)", "99")
    assert run(session, "CALL sys.create_tag(table => 'tagged', tag => '123')") == [(True,)]  # as Paimon
    assert run(session, "CALL sys.delete_tag(table => 'tagged', tag => '123')") == [(True,)]
    assert run(session, "CALL sys.rename_tag(table => 'tagged', tag => 'one', target_tag => 'first')") == [
        (True,)
    ]
    assert run(session, "CALL sys.replace_tag(table => 'tagged', tag => 'first', snapshot => 3)") == [(True,)]
    first = tagged.snapshots()[0]
    [(name, sid, commit_time, watermark)] = run(
        session,
        f"CALL sys.create_tag_from_timestamp(table => 'tagged', tag => 'ts', timestamp => "
        f"{first.time_millis})",
    )
    assert (name, sid, commit_time, watermark) == ("ts", 1, first.time_millis, "null")
    assert run(session, "CALL sys.delete_tag(table => 'tagged', tag => 'first,ts')") == [(True,)]
    assert run(session, "CALL sys.delete_tag(table => 'tagged', tag => 'nope')") == [
        (True,)
    ]  # Paimon: no error
    assert run(session, "CALL sys.expire_tags(table => 'tagged', older_than => '2999-01-01 00:00:00')") == [
        ("two",)
    ]
    assert tagged.refs.tags.all() == {}


def test_rollback_procedures(session, tagged):
    run(session, "CALL sys.create_tag(table => 'tagged', tag => 'one', snapshot => 1)")
    assert run(session, "CALL sys.rollback(table => 'tagged', version => 'one')") == [(3, 4)]
    assert run(session, "SELECT id FROM tagged") == [(0,)]
    assert run(session, "CALL sys.rollback(table => 'tagged', snapshot => 3)") == [(4, 5)]
    assert sorted(run(session, "SELECT id FROM tagged")) == [(0,), (1,), (2,)]
    second = tagged.store.snapshots.get(2).time_millis
    assert run(session, f"CALL sys.rollback_to_timestamp(table => 'tagged', timestamp => {second})") == [
        (5, 6)
    ]
    assert sorted(run(session, "SELECT id FROM tagged")) == [(0,), (1,)]
    assert {"rollback-backup-3", "rollback-backup-4", "rollback-backup-5"} <= set(tagged.refs.tags.all())
    fails(session, "CALL sys.rollback(table => 'tagged')", "exactly one")
    fails(session, "CALL sys.rollback(table => 'tagged', version => 'missing')", "missing")
