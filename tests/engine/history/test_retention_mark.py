"""The retention mark: set from a snapshot's commit time, only ever increasing (also when
processes and threads race), refusing time travel below it, protecting what lies at or above it."""

from __future__ import annotations

import multiprocessing
import os
import threading

import pytest

from engine import open_catalog
from engine.errors import (
    BehindRetentionMarkError,
    CorruptMetadataError,
    InvalidArgumentError,
    NoSuchSnapshotError,
)
from engine.history import retention_mark as rm
from tests.engine.ops.conftest import SCHEMA, content, rows


@pytest.fixture
def marked(catalog):
    t = catalog.create_table("db.m", SCHEMA, options={"retention.time": "1 h"})
    for i in range(6):
        t.write_arrow(rows([i]))
    return t


def _time(t, sid: int) -> int:
    return t.store.snapshots.get(sid).time_millis


def test_needs_a_retention(catalog):
    t = catalog.create_table("db.n", SCHEMA)
    t.write_arrow(rows([1]))
    with pytest.raises(InvalidArgumentError, match="retention.time"):
        t.maintenance.advance_retention_mark()
    assert t.maintenance.retention_mark() is None


def test_alias_table_retention_time(catalog):
    t = catalog.create_table("db.n", SCHEMA, options={"table_retention_time": "2 h"})
    assert rm.retention_millis(t.store) == 7_200_000


def test_mark_is_the_newest_snapshot_at_or_before_now_minus_retention(marked):
    t = marked
    hour = 3_600_000
    result = rm.advance(t.store, now_ms=_time(t, 3) + hour)
    expected = t.store.snapshots.at_or_before(_time(t, 3))
    assert result.advanced and result.mark.snapshot_id == expected.id >= 3
    assert result.mark.commit_time_ms == expected.time_millis  # a snapshot's time, not the clock
    assert t.maintenance.retention_mark() == result.mark


def test_mark_never_moves_backwards(marked):
    t = marked
    hour = 3_600_000
    first = rm.advance(t.store, now_ms=_time(t, 4) + hour).mark
    again = rm.advance(t.store, now_ms=_time(t, 1) + hour)
    assert not again.advanced and again.mark == first
    assert t.maintenance.retention_mark() == first


def test_a_clock_running_ahead_marks_at_most_the_newest_snapshot(marked):
    t = marked
    far_future = _time(t, 6) + 10 * 365 * 86_400_000
    mark = rm.advance(t.store, now_ms=far_future).mark
    assert mark.snapshot_id == 6 and mark.commit_time_ms == _time(t, 6)
    t.write_arrow(rows([100]))  # history written after the mark stays visible
    assert content(t, snapshot_id=7) == content(t)
    assert content(t, snapshot_id=6)


def test_no_snapshot_old_enough_leaves_no_mark(marked):
    t = marked
    result = rm.advance(t.store, now_ms=_time(t, 1) - 1 + 3_600_000)
    assert not result.advanced and result.mark is None and result.target is None


def test_time_travel_below_the_mark_is_refused(marked):
    t = marked
    t.refs.tags.create("old", 2)
    t.refs.tags.create("new", 5)
    rm.advance(t.store, 0, now_ms=_time(t, 4))
    mark = t.maintenance.retention_mark()
    assert mark.snapshot_id >= 4
    below = mark.snapshot_id - 1
    with pytest.raises(BehindRetentionMarkError, match="retention mark") as err:
        t.to_arrow(snapshot_id=below)
    assert f"snapshot {mark.snapshot_id}" in str(err.value)
    assert isinstance(err.value, NoSuchSnapshotError)
    with pytest.raises(BehindRetentionMarkError):
        t.to_arrow(tag="old")
    with pytest.raises(BehindRetentionMarkError):
        t.to_arrow(timestamp_millis=_time(t, 1))
    assert content(t, snapshot_id=mark.snapshot_id) is not None
    if mark.snapshot_id <= 5:
        assert content(t, tag="new") is not None
    assert content(t, snapshot_id=6) == content(t)


def test_latest_snapshot_is_always_visible(marked):
    t = marked
    rm.advance(t.store, 0, now_ms=_time(t, 6))
    from engine.ops.rollback import rollback_to

    rollback_to(t.store, 6, backup=False)  # the latest is above the mark anyway; it stays readable
    assert content(t, snapshot_id=t.latest_snapshot().id) == content(t)


def test_expiration_keeps_everything_at_or_above_the_mark(marked):
    t = marked
    rm.advance(t.store, 0, now_ms=_time(t, 3))
    mark = t.maintenance.retention_mark()
    report = t.maintenance.expire_snapshots(retain_max=1)
    assert report.snapshots == tuple(range(1, mark.snapshot_id))
    assert t.store.snapshots.list_ids()[0] == mark.snapshot_id
    assert content(t, snapshot_id=mark.snapshot_id)


def test_corrupt_newest_mark_is_an_error_not_an_older_mark(marked):
    t = marked
    rm.advance(t.store, 0, now_ms=_time(t, 2))
    with open(os.path.join(rm.mark_dir(t.path), "mark-2"), "wb") as f:
        f.write(b"garbage")
    with pytest.raises(CorruptMetadataError, match="mark-2"):
        t.maintenance.retention_mark()


def test_old_versions_are_pruned(marked):
    t = marked
    store = t.store
    for i in range(rm.KEEP_VERSIONS + 5):  # write the versions directly: each names a newer snapshot
        mark = rm.RetentionMark(i + 1, 1 + i, i, i, 0)
        store.io.try_create(os.path.join(rm.mark_dir(t.path), f"mark-{i + 1}"), mark.to_json())
    rm._prune(store.io, t.path, rm.KEEP_VERSIONS + 5)
    versions = [n for n, _ in rm._versions(store.io, t.path)]
    assert versions == list(range(6, rm.KEEP_VERSIONS + 6))


# -- racing markers ------------------------------------------------------------------------------


def _race_worker(args: tuple[str, int, int]) -> int:
    warehouse, now_ms, rounds = args
    t = open_catalog(warehouse).get_table("db.m")
    last = 0
    for _ in range(rounds):
        result = rm.advance(t.store, 0, now_ms=now_ms)
        assert result.mark is not None
        last = result.mark.snapshot_id
    return last


def _versions_increase(t) -> None:
    marks = [
        rm.RetentionMark.from_json(t.store.io.read_bytes(p), p) for _, p in rm._versions(t.store.io, t.path)
    ]
    ids = [m.snapshot_id for m in marks]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids  # every version strictly newer
    assert [m.version for m in marks] == sorted(m.version for m in marks)


def test_racing_processes_never_move_the_mark_backwards(marked, warehouse):
    t = marked
    times = [_time(t, sid) for sid in range(1, 7)]
    jobs = [(warehouse, times[i % 6], 3) for i in range(12)]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        pool.map(_race_worker, jobs)
    final = t.maintenance.retention_mark()
    assert final.snapshot_id == t.store.snapshots.at_or_before(times[-1]).id
    _versions_increase(t)


def test_racing_threads_never_move_the_mark_backwards(marked):
    t = marked
    times = [_time(t, sid) for sid in range(1, 7)]
    barrier = threading.Barrier(6)
    errors = []

    def work(now_ms: int) -> None:
        try:
            barrier.wait()
            for _ in range(5):
                rm.advance(t.store, 0, now_ms=now_ms)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(ms,)) for ms in reversed(times)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert t.maintenance.retention_mark().snapshot_id == t.store.snapshots.at_or_before(times[-1]).id
    _versions_increase(t)


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_a_failed_publish_leaves_the_old_or_the_new_mark(marked, after):
    from engine.errors import StorageError
    from engine.io.faults import FailingFileIO
    from engine.store import FileStore

    t = marked
    old = rm.advance(t.store, 0, now_ms=_time(t, 2)).mark
    failing = FailingFileIO(t.store.io, "try_create", 1, after=after)
    store = FileStore(failing, t.store.paths, t.store.schema)
    with pytest.raises(StorageError, match="injected fault"):
        rm.advance(store, 0, now_ms=_time(t, 5))
    now = t.maintenance.retention_mark()
    assert now == old if not after else now.snapshot_id >= 5
    again = rm.advance(t.store, 0, now_ms=_time(t, 5))
    assert again.mark.snapshot_id >= 5 and again.advanced is (not after)
    _versions_increase(t)
