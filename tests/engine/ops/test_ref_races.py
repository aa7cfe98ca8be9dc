"""Races between reference writers (tags, consumers) and maintenance (expiration, orphan cleanup,
tag deletion), made deterministic through the FileIO seam: ``FailingFileIO(action="hook")`` runs
the other actor's operation exactly between two storage calls of the first one (issue #20, races
3, 4, 6, 7, 10, 11). Every test first shows what the fence prevents: the broken outcome of the same
interleaving is spelled out in its docstring.
"""

from __future__ import annotations

import os

import pytest

from engine.errors import (
    CorruptMetadataError,
    SnapshotExpiredConcurrentlyError,
    SnapshotExpiredDuringReadError,
)
from engine.io.faults import FailingFileIO
from engine.meta import manifest_store
from engine.meta.snapshot import Consumer
from engine.ops.expire_snapshots import expire_snapshots
from engine.ops.orphan_files import remove_orphan_files
from engine.ops.reachability import (
    ConcurrentChangeError,
    HistoryGapError,
    reachable_files,
    retry_concurrent,
)
from engine.scan.planner import TableScan
from engine.table import Table
from tests.engine.ops.conftest import SCHEMA, content, rows

FUTURE = 2**62


def with_hook(table: Table, operation: str, path: str, hook, *, call: int = 1, after: bool = False) -> Table:
    """``table`` whose ``call``-th ``operation`` on a path containing ``path`` runs ``hook`` first
    (or, ``after``, once the call is done)."""
    io = FailingFileIO(table.store.io, operation, call, path_contains=path, action="hook", after=after,
                       hook=lambda _m, _p: hook())
    return Table(table.catalog, table.identifier, io, table.store.paths, table.store.schema)


def referenced_files_exist(table: Table) -> None:
    """The invariant: every file any snapshot, tag or branch references exists."""
    missing = [p for p in reachable_files(table.store.io, table.path).files if not os.path.exists(p)]
    assert not missing, missing


@pytest.fixture
def history(catalog):
    """Snapshots 1-2 write rows whose files only they reference (3 overwrites them); 4 and 5 append."""
    t = catalog.create_table("db.h", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3]))
    t.write_arrow(rows([10]), overwrite=True)
    t.write_arrow(rows([11]))
    t.write_arrow(rows([12]))
    return t


# ---- race 3: a tag replaced while expire_snapshots runs ------------------------------------------


def test_tag_replaced_during_expiration_keeps_its_new_snapshot_files(history):
    """Expiration of 1-3 computes its keep set with tag t → 5; before it deletes the first snapshot
    file, t is replaced to name snapshot 2 (which still exists, so the replace is legitimate).
    Re-checking anchors by name only, the expiration saw "tag t" as known and deleted snapshot 2's
    files: reading t failed. By the snapshot each anchor names, t → 2 is a new anchor and kept."""
    history.refs.tags.create("t", 5)
    racing = with_hook(history, "delete", "snapshot/snapshot-1", lambda: history.refs.tags.replace("t", 2))
    report = expire_snapshots(racing.store, retain_max=2, older_than=FUTURE)
    assert report.snapshots == (1, 2, 3)
    fresh = history.refresh()
    assert content(fresh, tag="t") == [(1, "x1", "a"), (2, "x2", "a"), (3, "x3", "a")]
    referenced_files_exist(fresh)


# ---- race 4: create_tag(S) racing the expiration of S --------------------------------------------


def test_tag_created_before_expiration_rereads_is_kept(history):
    """The tag of snapshot 2 is created after expiration judged 1-3 (and read every anchor) but
    before it deleted snapshot 2's file: the tag's check sees snapshot 2, and the expiration,
    re-reading anchors after deleting snapshot files, sees the tag and keeps its files."""
    racing = with_hook(history, "delete", "snapshot/snapshot-1", lambda: history.refs.tags.create("late", 2))
    expire_snapshots(racing.store, retain_max=2, older_than=FUTURE)
    fresh = history.refresh()
    assert content(fresh, tag="late") == [(1, "x1", "a"), (2, "x2", "a"), (3, "x3", "a")]
    referenced_files_exist(fresh)


def test_tag_whose_snapshot_expires_while_it_is_published_is_removed(history):
    """create_tag read snapshot 2, then expiration removed it (its files too, as no anchor
    needed them), then the tag file was created: before the fix that tag dangled (its files were
    gone). Now the tag checks its snapshot after publishing, removes its own file and raises."""

    def expire_now() -> None:
        expire_snapshots(history.refresh().store, retain_max=2, older_than=FUTURE)

    racing = with_hook(history, "try_create", "tag/tag-", expire_now)
    with pytest.raises(SnapshotExpiredConcurrentlyError, match="snapshot 2 was expired"):
        racing.refs.tags.create("dangling", 2)
    fresh = history.refresh()
    assert "dangling" not in fresh.refs.tags.all()
    referenced_files_exist(fresh)


def test_tag_replace_whose_snapshot_expires_is_put_back(history):
    history.refs.tags.create("t", 5)

    def expire_now() -> None:
        expire_snapshots(history.refresh().store, retain_max=2, older_than=FUTURE)

    racing = with_hook(history, "write", "tag/tag-t", expire_now)
    with pytest.raises(SnapshotExpiredConcurrentlyError):
        racing.refs.tags.replace("t", 2)
    fresh = history.refresh()
    assert fresh.refs.tags.all()["t"].snapshot.id == 5  # the previous content, put back
    referenced_files_exist(fresh)


# ---- race 6 (engine side): a consumer recorded while expiration deletes its snapshots ------------


def test_consumer_started_during_expiration_gets_its_snapshots_back(history):
    """A stream with a consumer-id starts at snapshot 2 after expiration judged 1-3 but before it
    deleted their files: the consumer's check passes (snapshot 2 still there) and expiration,
    re-reading consumers after deleting snapshot files, re-creates 2 and 3 (and keeps their files)."""
    racing = with_hook(history, "delete", "snapshot/snapshot-1",
                       lambda: history.refs.consumers.start("c1", 2))
    report = expire_snapshots(racing.store, retain_max=2, older_than=FUTURE)
    assert report.snapshots == (1,)
    fresh = history.refresh()
    assert fresh.store.snapshots.list_ids() == [2, 3, 4, 5]
    assert fresh.store.snapshots.earliest_id() == 2
    assert content(fresh, snapshot_id=2) == [(1, "x1", "a"), (2, "x2", "a"), (3, "x3", "a")]
    referenced_files_exist(fresh)


def test_consumer_start_after_its_snapshot_expired_is_refused_and_removed(history):
    expire_snapshots(history.store, retain_max=2, older_than=FUTURE)
    with pytest.raises(SnapshotExpiredConcurrentlyError, match="consumer 'c1'"):
        history.refs.consumers.start("c1", 2)
    assert history.refs.consumers.get("c1") is None


def test_consumer_start_keeps_an_existing_position(history):
    history.refs.consumers.reset("c1", 4)
    consumers = history.refs.consumers
    assert consumers.start("c1", 2) == Consumer(4)
    assert consumers.start("c2", 6) == Consumer(6)  # not committed yet: nothing to check


# ---- race 7: gaps and hint mismatches stop orphan cleanup ----------------------------------------


def test_orphan_cleanup_refuses_a_history_gap(history):
    """Snapshot 2 lost (deleted outside dyntable): the files only it references must not look
    orphaned. Before: reachability skipped the missing id and the cleanup deleted them."""
    before = set(_files(history.path))
    os.remove(history.store.paths.snapshot_file(2))
    with pytest.raises(HistoryGapError, match="snapshot 2 is missing between snapshots 1 and 5"):
        remove_orphan_files(history.store.io, history.path, older_than=FUTURE - 1, force=True,
                            now_ms=FUTURE)
    assert set(_files(history.path)) == before - {history.store.paths.snapshot_file(2)}


def test_orphan_cleanup_refuses_latest_naming_a_missing_snapshot(history):
    for sid in (1, 2, 3, 4):
        os.remove(history.store.paths.snapshot_file(sid))
    os.remove(history.store.paths.snapshot_file(5))
    with open(history.store.paths.latest_hint, "w") as f:
        f.write("5")
    before = set(_files(history.path))
    with pytest.raises(HistoryGapError, match="LATEST names snapshot 5"):
        remove_orphan_files(history.store.io, history.path, older_than=FUTURE - 1, force=True, now_ms=FUTURE)
    assert set(_files(history.path)) == before


def test_a_concurrent_expiration_is_not_a_gap(history):
    """Snapshots vanishing at the old end while the listing is read are an expiration: no error."""
    racing = with_hook(history, "read", "snapshot/snapshot-1",
                       lambda: expire_snapshots(history.refresh().store, retain_max=2, older_than=FUTURE))
    reach = reachable_files(racing.store.io, history.path)
    assert reach.files
    assert history.refresh().store.snapshots.list_ids() == [4, 5]


# ---- race 10: concurrent legitimate removals are retried, not reported as damage -----------------


def test_manifest_list_expired_while_read_is_retried(history):
    """Orphan cleanup read snapshot 2, then an expiration removed it and its manifest list before
    the list was read: that was reported as "metadata damaged". Now it is retried and succeeds."""
    snap2 = history.store.snapshots.get(2)
    manifest_store._MANIFEST_CACHE._items.clear()  # so that the list is really read
    racing = with_hook(history, "read", snap2.delta_manifest_list,
                       lambda: expire_snapshots(history.refresh().store, retain_max=2, older_than=FUTURE))
    result = remove_orphan_files(racing.store.io, history.path, older_than=FUTURE - 1, force=True,
                                 now_ms=FUTURE)
    assert racing.store.io.failures == 1  # the expiration really ran in between
    now = reachable_files(history.store.io, history.path).files
    assert result.count and not set(result.paths()) & set(now)  # only what the expiration let go
    referenced_files_exist(history.refresh())


def test_branch_deleted_while_read_is_retried(history):
    history.refs.branches.create("b")
    racing = with_hook(history, "list", "branch-b/snapshot", lambda: history.refs.branches.delete("b"))
    reach = reachable_files(racing.store.io, history.path)
    assert reach.files


def test_a_really_missing_manifest_list_is_damage(history):
    snap4 = history.store.snapshots.get(4)
    os.remove(history.store.paths.manifest_file(snap4.delta_manifest_list))
    manifest_store._MANIFEST_CACHE._items.clear()  # decoded lists are cached by path
    with pytest.raises(CorruptMetadataError) as info:
        reachable_files(history.store.io, history.path)
    assert not isinstance(info.value, ConcurrentChangeError)


def test_retry_is_bounded():
    calls = []

    def always() -> None:
        calls.append(1)
        raise ConcurrentChangeError("moving", "/x")

    with pytest.raises(ConcurrentChangeError):
        retry_concurrent(always)
    assert len(calls) == 3


# ---- race 11: a snapshot expired during a read -----------------------------------------------------


def test_snapshot_expired_during_read_is_a_typed_retryable_error(history):
    """A read of snapshot 2 plans, then expiration removes snapshot 2 and its files: the read
    used to fail with CorruptMetadataError ("listed by the snapshot but missing")."""
    scan = TableScan(history.store).with_snapshot(2)
    plan = scan.plan()
    expire_snapshots(history.refresh().store, retain_max=2, older_than=FUTURE)
    from engine.read.split_reader import SplitReader

    with pytest.raises(SnapshotExpiredDuringReadError, match="snapshot 2 .* expired") as info:
        for split in plan.splits:
            SplitReader(history.store).read_table(split)
    assert info.value.retryable and info.value.sqlstate == "72000"


def test_snapshot_expired_while_planning_is_typed(history):
    manifest_store._MANIFEST_CACHE._items.clear()  # so that planning reads the lists
    racing = with_hook(history, "read", "manifest/manifest-list",
                       lambda: expire_snapshots(history.refresh().store, retain_max=2, older_than=FUTURE))
    with pytest.raises(SnapshotExpiredDuringReadError):
        TableScan(racing.store).with_snapshot(2).plan()


def test_a_missing_file_of_a_live_snapshot_is_still_damage(history):
    plan = TableScan(history.store).with_snapshot(5).plan()
    for split in plan.splits:
        for f in split.files:
            from engine.files.reader import data_file_path

            part_dir = history.store.partition_dir(split.partition_values)
            os.remove(data_file_path(history.store, part_dir, split.bucket, f))
    from engine.read.split_reader import SplitReader

    with pytest.raises(CorruptMetadataError, match="listed by the snapshot but missing"):
        for split in plan.splits:
            SplitReader(history.store).read_table(split)


def _files(root: str) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
