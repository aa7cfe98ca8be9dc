"""The retention mark holds wherever history can be named: on branches (each with its own mark),
for rollbacks, incremental reads, tags and branches made from a snapshot — not only for time
travel on main. (Streams are covered by tests/integration/test_retention_mark_reads.py.)"""

from __future__ import annotations

import os

import pytest

from engine.errors import BehindRetentionMarkError, NoSuchSnapshotError
from engine.history import retention_mark as rm
from engine.scan.incremental import resolve_between
from tests.engine.ops.conftest import SCHEMA, content, rows


def _time(t, sid: int) -> int:
    return t.store.snapshots.get(sid).time_millis


@pytest.fixture
def marked(catalog):
    """Six snapshots, a tag on snapshot 2, and a mark at snapshot 4 or later (same-millisecond
    commits may put it higher); ``below`` is a snapshot id under the mark."""
    t = catalog.create_table("db.m", SCHEMA, options={"retention.time": "1 h"})
    for i in range(6):
        t.write_arrow(rows([i]))
    t.refs.tags.create("old", 2)
    rm.advance(t.store, 0, now_ms=_time(t, 4))
    t.mark = t.maintenance.retention_mark()
    assert 4 <= t.mark.snapshot_id
    t.below = t.mark.snapshot_id - 1
    return t


def _refused(t, call, *args, **kwargs):
    with pytest.raises(BehindRetentionMarkError, match="retention mark") as err:
        call(*args, **kwargs)
    assert f"snapshot {t.mark.snapshot_id}" in str(err.value)  # the message names the mark
    assert isinstance(err.value, NoSuchSnapshotError)
    return err.value


# -- rollback -------------------------------------------------------------------------------------


def test_rollback_below_the_mark_is_refused_and_changes_nothing(marked):
    t = marked
    head, tags = t.latest_snapshot().id, set(t.refs.tags.names())
    _refused(t, t.refs.rollback_to, t.below)
    _refused(t, t.refs.rollback_to, "old")
    _refused(t, t.refs.rollback_to, str(t.below))
    _refused(t, t.refs.rollback_to_timestamp, _time(t, 1))
    assert t.latest_snapshot().id == head and set(t.refs.tags.names()) == tags  # no snapshot, no backup tag
    if t.mark.snapshot_id < head:
        result = t.refs.rollback_to(t.mark.snapshot_id)  # the mark itself is visible
        assert content(t) == content(t, snapshot_id=t.mark.snapshot_id)
        assert result.current_snapshot_id == head + 1


# -- incremental-between ---------------------------------------------------------------------------


def test_incremental_between_starting_below_the_mark_is_refused(marked):
    t = marked
    latest = t.latest_snapshot().id
    _refused(t, resolve_between, t.store, f"{t.below},{latest}")
    t.refs.tags.create("head", latest)
    _refused(t, resolve_between, t.store, "old,head")
    _refused(t, resolve_between, t.store, f"0,{latest}")  # from the very beginning: below any mark
    _refused(t, resolve_between, t.store, f"{t.below},{latest}", "diff")
    rng = resolve_between(t.store, f"{t.mark.snapshot_id},{latest}")
    assert rng.start_id == t.mark.snapshot_id


def test_incremental_between_on_a_table_without_a_mark_is_unchanged(catalog):
    t = catalog.create_table("db.n", SCHEMA)
    for i in range(3):
        t.write_arrow(rows([i]))
    assert resolve_between(t.store, "0,3").start_id == 0


# -- tags and branches made from history ----------------------------------------------------------------


def test_tags_below_the_mark_cannot_be_created_or_pointed_at(marked):
    t = marked
    _refused(t, t.refs.tags.create, "x", t.below)
    _refused(t, t.refs.tags.create_from_timestamp, "x", _time(t, 1))
    _refused(t, t.refs.tags.replace, "old", t.below)
    assert not t.refs.tags.exists("x") and t.refs.tags.get("old").snapshot.id == 2
    t.refs.tags.create("at-mark", t.mark.snapshot_id)
    t.refs.tags.create("latest")
    assert {"at-mark", "latest"} <= set(t.refs.tags.names())


def test_branches_below_the_mark_cannot_be_created(marked):
    t = marked
    _refused(t, t.refs.branches.create, "b1", from_snapshot=t.below)
    _refused(t, t.refs.branches.create, "b2", from_tag="old")
    assert not os.path.exists(t.store.paths.for_branch("b1").branch_root)
    assert not os.path.exists(t.store.paths.for_branch("b2").branch_root)
    t.refs.branches.create("ok", from_snapshot=t.mark.snapshot_id)
    t.refs.branches.create("empty")
    assert os.path.isdir(t.store.paths.for_branch("ok").branch_root)


# -- branches keep their own mark ------------------------------------------------------------------------


@pytest.fixture
def branched(catalog):
    """Main with 3 snapshots; branch ``b`` from main's snapshot 3 with 4 more commits (4..7)."""
    t = catalog.create_table("db.b", SCHEMA, options={"retention.time": "1 h"})
    for i in range(3):
        t.write_arrow(rows([i]))
    t.refs.branches.create("b", from_snapshot=3)
    b = catalog.get_table("db.b$branch_b")
    for i in range(4):
        b.write_arrow(rows([10 + i]))
    b.refs.tags.create("b-old", 4)
    return t, b


def test_a_branch_has_its_own_mark_under_its_directory(branched):
    t, b = branched
    result = rm.advance(b.store, 0, now_ms=_time(b, 6))
    mark = b.maintenance.retention_mark()
    assert result.advanced and mark == result.mark and mark.snapshot_id >= 6
    assert os.listdir(rm.mark_dir(b.store.paths.branch_root)) == [f"mark-{mark.version}"]
    assert t.maintenance.retention_mark() is None  # main is not marked by its branch
    assert content(t, snapshot_id=1)  # main's history stays readable
    b.mark, b.below = mark, mark.snapshot_id - 1
    for call, args, kwargs in [
        (b.to_arrow, (), {"snapshot_id": b.below}),
        (b.to_arrow, (), {"tag": "b-old"}),
        (b.to_arrow, (), {"timestamp_millis": _time(b, 4)}),
        (b.refs.rollback_to, (b.below,), {}),
        (b.refs.tags.create, ("x", b.below), {}),
        (resolve_between, (b.store, f"{b.below},7"), {}),
    ]:
        err = _refused(b, call, *args, **kwargs)
        assert "branch 'b'" in str(err)
    assert content(b, snapshot_id=mark.snapshot_id) is not None
    assert content(b, snapshot_id=7) == content(b)


def test_the_table_mark_does_not_hide_a_branch_history(branched):
    t, b = branched
    t.write_arrow(rows([99]))  # main: 4 snapshots
    rm.advance(t.store, 0, now_ms=_time(t, 4))
    assert t.maintenance.retention_mark().snapshot_id == 4
    assert b.maintenance.retention_mark() is None
    assert content(b, snapshot_id=4) and content(b, snapshot_id=5)  # branch ids below main's mark
    with pytest.raises(BehindRetentionMarkError):
        t.to_arrow(snapshot_id=3)


def test_branch_expiration_keeps_what_its_own_mark_protects(branched):
    _, b = branched
    rm.advance(b.store, 0, now_ms=_time(b, 5))
    mark = b.maintenance.retention_mark()
    report = b.maintenance.expire_snapshots(retain_max=1)
    assert b.store.snapshots.list_ids()[0] == mark.snapshot_id
    assert all(sid < mark.snapshot_id for sid in report.snapshots)


def test_retention_table_of_a_branch_shows_its_own_mark(branched):
    from engine.system_tables.retention import read_retention

    _, b = branched
    rm.advance(b.store, 0, now_ms=_time(b, 5))
    mark = b.maintenance.retention_mark()
    out = read_retention(b.store).to_pylist()
    snaps = {r["snapshot_id"]: r["behind_retention_mark"] for r in out if r["object_type"] == "snapshot"}
    assert snaps[4] is (4 < mark.snapshot_id) and snaps[7] is False
    assert any(r["object_type"] == "retention-mark" and r["snapshot_id"] == mark.snapshot_id for r in out)
