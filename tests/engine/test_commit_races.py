"""The commit protocol under races: each test stages one interleaving deterministically.

A race is staged by wrapping ``SnapshotStore.try_publish`` so that, right before the commit
under test publishes, another commit runs to completion (exactly what a concurrent process
does between our planning and our publish).
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from engine import CommitConflictError, CommitKind
from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage, OverwriteSpec
from engine.errors import StorageError
from engine.meta.manifest import FileKind, ManifestEntry
from engine.table import Table

KV = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


def _kv(ids, v, p="a"):
    return pa.table({"id": ids, "v": [v] * len(ids), "p": [p] * len(ids)}, schema=KV)


def _rows(table: Table) -> list[tuple]:
    t = table.refresh().to_arrow()
    return sorted(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))


def _race_before_publish(committer: FileStoreCommit, race) -> dict:
    """Run ``race()`` once, right before ``committer``'s first publish attempt."""
    original = committer.store.snapshots.try_publish
    state = {"raced": 0}

    def publish(snapshot):
        if not state["raced"]:
            state["raced"] += 1
            race()
        return original(snapshot)

    committer.store.snapshots.try_publish = publish
    return state


def _files_on_disk(table: Table) -> set[str]:
    root = table.path
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            out.add(os.path.relpath(os.path.join(dirpath, f), root))
    return out


def _pk_table(catalog, name="db.t", **options):
    opts = {"bucket": "1", "write-only": "true", **options}
    return catalog.create_table(name, KV, primary_keys=["p", "id"], partition_keys=["p"], options=opts)


# -- defect 1: an overwrite racing a compaction that only moves a file up a level --------------------------


@pytest.mark.parametrize("operation", ["overwrite", "drop_partition", "truncate"])
def test_overwrite_racing_a_level_upgrade_keeps_the_table_readable(catalog, operation):
    t = _pk_table(catalog)
    t.write_arrow(_kv([1, 2], "old"))
    t.write_arrow(_kv([9], "other", p="b"))
    committer = t.new_commit()
    # A full compaction of a one-file bucket moves the file to the top level without rewriting it.
    state = _race_before_publish(committer, lambda: t.refresh().compact(full=True))
    if operation == "overwrite":
        w = t.new_writer()
        w.write(_kv([3], "new"))
        result = committer.overwrite(w.prepare_commit(), OverwriteSpec(static={"p": "a"}))
        expected = [(3, "new", "a"), (9, "other", "b")]
    elif operation == "drop_partition":
        result = committer.drop_partitions([{"p": "a"}])
        expected = [(9, "other", "b")]
    else:
        result = committer.truncate()
        expected = []
    assert state["raced"] == 1
    assert result.snapshot_ids
    fresh = catalog.get_table("db.t")
    assert _rows(fresh) == expected
    # The table stays writable: the next commit applies on top.
    fresh.write_arrow(_kv([4], "later"))
    assert (4, "later", "a") in _rows(fresh)
    assert [s.commit_kind for s in fresh.snapshots()][-3:] == [
        CommitKind.COMPACT,
        CommitKind.OVERWRITE,
        CommitKind.APPEND,
    ]


def test_a_delta_that_does_not_apply_is_never_published(catalog):
    t = _pk_table(catalog)
    t.write_arrow(_kv([1], "x"))
    live = t.store.live_entries(t.latest_snapshot())[0]
    moved = live.file.upgrade(5)  # the same file at a level where it does not live
    committer = t.new_commit()
    before = t.latest_snapshot().id
    with pytest.raises(CommitConflictError, match="no longer live"):
        committer._publish(CommitKind.OVERWRITE, 1,
                           lambda _l: [ManifestEntry(FileKind.DELETE, live.partition, live.bucket, 1, moved)],
                           [], None, None)
    assert t.refresh().latest_snapshot().id == before
    assert _rows(t) == [(1, "x", "a")]


def test_row_level_rewrite_still_conflicts_with_a_concurrent_write(catalog):
    t = catalog.create_table("db.ap", KV, partition_keys=["p"])
    t.write_arrow(_kv([1], "x"))
    base = t.latest_snapshot().id
    w = t.new_writer()
    w.write(_kv([2], "rewritten"))
    committer = t.new_commit()
    _race_before_publish(committer, lambda: t.write_arrow(_kv([7], "concurrent")))
    with pytest.raises(CommitConflictError, match="changed the partitions"):
        committer.overwrite(
            w.prepare_commit(), OverwriteSpec(partitions=({"p": "a"},)), base_snapshot_id=base
        )
    assert _rows(t) == [(1, "x", "a"), (7, "concurrent", "a")]


def test_row_level_rewrite_tolerates_a_concurrent_compaction(catalog):
    t = catalog.create_table("db.ap", KV, partition_keys=["p"])
    for i in range(3):
        t.write_arrow(_kv([i], "x"))
    base = t.latest_snapshot().id
    w = t.new_writer()
    w.write(_kv([0, 1], "x"))  # the rewrite of partition a without row 2
    committer = t.new_commit()
    _race_before_publish(committer, lambda: t.refresh().compact(full=True))
    committer.overwrite(w.prepare_commit(), OverwriteSpec(partitions=({"p": "a"},)), base_snapshot_id=base)
    assert _rows(t) == [(0, "x", "a"), (1, "x", "a")]


# -- defect 3: a write's outcome is its own commit's ------------------------------------------------------


@pytest.mark.parametrize("error", [CommitConflictError("another compaction removed these files first"),
                                   StorageError("disk full")])
def test_pk_write_succeeds_when_its_follow_up_compaction_fails(catalog, error):
    t = catalog.create_table(
        "db.agg", pa.schema([("id", pa.int64()), ("total", pa.int64())]), primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "aggregation", "fields.total.aggregate-function": "sum",
                 "num-sorted-run.compaction-trigger": "2"},
    )
    t.write_arrow(pa.table({"id": [1], "total": [100]}))
    original = FileStoreCommit._publish

    def compaction_loses(self, kind, *args, **kwargs):
        if kind is CommitKind.COMPACT:
            raise error
        return original(self, kind, *args, **kwargs)

    FileStoreCommit._publish = compaction_loses
    try:
        result = t.write_arrow(pa.table({"id": [1], "total": [4]}))  # must not raise: the APPEND is committed
    finally:
        FileStoreCommit._publish = original
    assert len(result.snapshot_ids) == 1
    assert t.refresh().to_arrow().to_pydict() == {"id": [1], "total": [104]}
    # The compaction's outputs were deleted; only the committed files remain as data files.
    live = {e.file.file_name for e in t.store.live_entries(t.refresh().latest_snapshot())}
    on_disk = {os.path.basename(f) for f in _files_on_disk(t) if os.path.basename(f).startswith("data-")}
    assert on_disk == live


# -- defect 5: the last committed write of a key wins -----------------------------------------------------


@pytest.mark.parametrize("first_to_commit", ["A", "B"])
def test_concurrent_upserts_of_one_key_last_commit_wins(catalog, first_to_commit):
    t = _pk_table(catalog)
    t.write_arrow(_kv([1], "start"))
    wa, wb = t.new_writer(), t.new_writer()
    wa.write(_kv([1], "A"))
    wb.write(_kv([1], "B"))
    ma, mb = wa.prepare_commit(), wb.prepare_commit()
    order = [("A", ma), ("B", mb)] if first_to_commit == "A" else [("B", mb), ("A", ma)]
    for _, messages in order:
        t.new_commit().commit(messages)
    last = order[-1][0]
    assert _rows(catalog.get_table("db.t")) == [(1, last, "a")]
    t.refresh().compact(full=True)
    assert _rows(catalog.get_table("db.t")) == [(1, last, "a")]
    # Rewritten files replaced the originals: nothing unreferenced is left.
    fresh = catalog.get_table("db.t")
    live = {e.file.file_name for e in fresh.store.live_entries(fresh.latest_snapshot())}
    assert {
        os.path.basename(f) for f in _files_on_disk(fresh) if os.path.basename(f).startswith("data-")
    } >= live


def test_first_row_keeps_the_first_committed_write(catalog):
    t = _pk_table(catalog, **{"merge-engine": "first-row"})
    wa, wb = t.new_writer(), t.new_writer()
    wa.write(_kv([1], "A"))
    wb.write(_kv([1], "B"))
    ma, mb = wa.prepare_commit(), wb.prepare_commit()
    t.new_commit().commit(mb)
    t.new_commit().commit(ma)
    t.refresh().compact(full=True)
    assert _rows(catalog.get_table("db.t")) == [(1, "B", "a")]


def test_rebase_leaves_no_stale_file_versions(catalog):
    t = _pk_table(catalog)
    t.write_arrow(_kv([1], "start"))
    wa, wb = t.new_writer(), t.new_writer()
    wa.write(_kv([1, 2], "A"))
    wb.write(_kv([1], "B"))
    ma, mb = wa.prepare_commit(), wb.prepare_commit()
    t.new_commit().commit(mb)
    t.new_commit().commit(ma)
    fresh = catalog.get_table("db.t")
    live = {e.file.file_name for e in fresh.store.live_entries(fresh.latest_snapshot())}
    data = {os.path.basename(f) for f in _files_on_disk(fresh) if os.path.basename(f).startswith("data-")}
    assert data == live
    assert _rows(fresh) == [(1, "A", "a"), (2, "A", "a")]


# -- defect 6: a failed commit deletes what it wrote ------------------------------------------------------


def test_a_conflicting_overwrite_deletes_its_data_and_manifests(catalog):
    t = catalog.create_table("db.ap", KV, partition_keys=["p"])
    t.write_arrow(_kv([1], "x"))
    base = t.latest_snapshot().id
    w = t.new_writer()
    w.write(_kv([2, 3], "new"))
    messages = w.prepare_commit()
    committer = t.new_commit()
    _race_before_publish(committer, lambda: t.write_arrow(_kv([7], "concurrent")))
    before_race = _files_on_disk(t)
    with pytest.raises(CommitConflictError):
        committer.overwrite(messages, OverwriteSpec(partitions=({"p": "a"},)), base_snapshot_id=base)
    after = _files_on_disk(t)
    ours = {f.file_name for m in messages for f in m.new_files}
    assert not {os.path.basename(f) for f in after} & ours
    # Nothing this commit wrote remains: only the concurrent writer's files were added.
    concurrent = catalog.get_table("db.ap")
    referenced = set()
    for s in concurrent.snapshots():
        referenced |= {s.base_manifest_list, s.delta_manifest_list}
        for m in concurrent.store.manifests.data_manifests(s):
            referenced.add(m.file_name)
    added = {os.path.basename(f) for f in after - before_race}
    leftover = [f for f in added if f.startswith("manifest") and f not in referenced]
    assert leftover == []


def test_a_commit_that_gives_up_deletes_its_files(catalog, monkeypatch):
    t = catalog.create_table("db.ap", KV, options={"commit.max-retries": "2", "commit.min-retry-wait": "1 ms",
                                                   "commit.max-retry-wait": "2 ms"})
    t.write_arrow(_kv([1], "x"))
    before = _files_on_disk(t)
    w = t.new_writer()
    w.write(_kv([2], "y"))
    messages: list[CommitMessage] = w.prepare_commit()
    committer = t.new_commit()
    monkeypatch.setattr(committer.store.snapshots, "try_publish", lambda _s: False)  # always loses
    with pytest.raises(CommitConflictError, match="gave up"):
        committer.commit(messages)
    assert _files_on_disk(t) == before


# -- an unknown outcome, and the idempotent retry ---------------------------------------------------------


def test_unknown_outcome_then_retry_with_the_same_identifier_applies_once(catalog, monkeypatch):
    from engine.errors import CommitStateUnknownError

    t = catalog.create_table(
        "db.agg", pa.schema([("id", pa.int64()), ("total", pa.int64())]), primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "aggregation", "fields.total.aggregate-function": "sum"},
    )
    t.write_arrow(pa.table({"id": [1], "total": [100]}))
    snapshots = type(t.store.snapshots)
    original_publish, original_get = snapshots.try_publish, snapshots.get

    def publish_then_fail(self, snapshot):
        original_publish(self, snapshot)  # the snapshot lands ...
        raise StorageError("connection reset")  # ... but the answer is lost

    def unreadable(self, sid):
        if sid == 2:
            raise StorageError("connection reset")
        return original_get(self, sid)

    monkeypatch.setattr(snapshots, "try_publish", publish_then_fail)
    monkeypatch.setattr(snapshots, "get", unreadable)
    with pytest.raises(CommitStateUnknownError):
        t.write_arrow(pa.table({"id": [1], "total": [4]}), commit_user="job-7", identifier=1)
    monkeypatch.undo()
    before = _files_on_disk(t)
    retry = t.refresh().write_arrow(pa.table({"id": [1], "total": [4]}), commit_user="job-7", identifier=1)
    assert retry.snapshot_ids == ()
    assert t.refresh().to_arrow().to_pydict() == {"id": [1], "total": [104]}
    assert _files_on_disk(t) == before  # the retry's copies were removed


def test_racing_writers_with_disjoint_keys_are_not_rewritten(catalog):
    t = _pk_table(catalog)
    t.write_arrow(_kv([1], "start"))
    wa, wb = t.new_writer(), t.new_writer()
    wa.write(_kv([10, 11], "A"))
    wb.write(_kv([20, 21], "B"))
    ma, mb = wa.prepare_commit(), wb.prepare_commit()
    t.new_commit().commit(mb)
    t.new_commit().commit(ma)
    fresh = catalog.get_table("db.t")
    live = {e.file.file_name for e in fresh.store.live_entries(fresh.latest_snapshot())}
    assert {f.file_name for m in ma for f in m.new_files} <= live  # committed as written, no rewrite
    assert _rows(fresh) == [(1, "start", "a"), (10, "A", "a"), (11, "A", "a"), (20, "B", "a"), (21, "B", "a")]


def test_drop_of_a_missing_partition_refuses_the_whole_drop(catalog):
    from engine.errors import NoSuchPartitionError

    t = catalog.create_table("db.ap", KV, partition_keys=["p"])
    t.write_arrow(_kv([1], "x", p="a"))
    with pytest.raises(NoSuchPartitionError, match="nothing was dropped"):
        t.drop_partitions([{"p": "a"}, {"p": "zz"}], if_exists=False)
    assert _rows(t) == [(1, "x", "a")]
    t.write_arrow(_kv([2], "y", p="b"))
    committer = t.new_commit()
    # Partition b vanishes between the statement's start and its publish: still refused.
    state = _race_before_publish(committer, lambda: t.refresh().drop_partitions([{"p": "b"}]))
    with pytest.raises((NoSuchPartitionError, CommitConflictError)):  # either way: nothing is dropped
        committer.drop_partitions([{"p": "a"}, {"p": "b"}], if_exists=False)
    assert state["raced"] == 1
    assert _rows(t) == [(1, "x", "a")]
