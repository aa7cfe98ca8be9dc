"""The commit pipeline: atomic publish, retries under real concurrency, conflicts, idempotency."""

from __future__ import annotations

import multiprocessing as mp
import os

import pyarrow as pa
import pytest

from engine import (
    CommitConflictError,
    CommitKind,
    CorruptMetadataError,
    InvalidArgumentError,
    OverwriteSpec,
    open_catalog,
)
from engine.commit import FileStoreCommit

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _append_many(warehouse: str, worker: int, count: int) -> None:
    table = open_catalog(warehouse).get_table("db.t")
    for i in range(count):
        table.write_arrow(pa.table({"id": [worker * 1000 + i], "p": [f"w{worker}"]}, schema=SCHEMA))


def test_four_processes_fifty_appends_each(catalog, warehouse):
    catalog.create_table(
        "db.t", SCHEMA, options={"commit.max-retries": "200", "commit.max-retry-wait": "200 ms"}
    )
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(warehouse, w, 50)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    table = catalog.get_table("db.t")
    snaps = table.snapshots()
    assert len(snaps) == 200
    assert [s.id for s in snaps] == list(range(1, 201))
    ids = sorted(table.to_arrow().column("id").to_pylist())
    assert ids == sorted(w * 1000 + i for w in range(4) for i in range(50))
    assert snaps[-1].total_record_count == 200


def test_overwrite_refuses_to_erase_a_concurrent_append(catalog):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    t.write_arrow(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA))
    writer = t.new_writer()
    writer.write(pa.table({"id": [2], "p": ["a"]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    committer = t.new_commit()
    # start an overwrite of partition a, then let another writer append into it before we publish
    original = committer.store.snapshots.try_publish
    state = {"raced": False}

    def racing_publish(snapshot):
        if not state["raced"]:
            state["raced"] = True
            t.write_arrow(pa.table({"id": [3], "p": ["a"]}, schema=SCHEMA))
            return False
        return original(snapshot)

    committer.store.snapshots.try_publish = racing_publish

    with pytest.raises(CommitConflictError):
        committer.overwrite(messages, OverwriteSpec(static={"p": "a"}))
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 3]


def test_compaction_conflict_when_file_already_removed(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [2], "p": ["a"]}, schema=SCHEMA))
    t.truncate()
    split_files = t.plan(snapshot_id=2).splits[0].files
    from engine.commit_messages import CommitMessage

    msg = CommitMessage(
        t.plan(snapshot_id=2).splits[0].partition, 0, -1, compact_before=split_files, compact_after=()
    )
    with pytest.raises(CommitConflictError):
        t.new_commit().commit([msg])


def test_streaming_identifier_is_idempotent(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    committer = FileStoreCommit(t.store, commit_user="job-1")
    for _attempt in range(2):  # the second round simulates a restart replaying the same batches
        for batch_id in (1, 2):
            w = t.new_writer()
            w.write(pa.table({"id": [batch_id], "p": ["x"]}, schema=SCHEMA))
            committer.commit(w.prepare_commit(), identifier=batch_id)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]
    assert len(t.snapshots()) == 2


def test_change_tracking_off_commits_overwrite_kind(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "p": ["x"]}, schema=SCHEMA), change_tracking=False)
    snap = t.latest_snapshot()
    assert snap.commit_kind is CommitKind.OVERWRITE
    assert snap.properties == {"dyntable.change-tracking": "false"}


def test_many_commits_keep_the_manifest_list_short(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(70):
        t.write_arrow(pa.table({"id": [i], "p": ["x"]}, schema=SCHEMA))
    snap = t.latest_snapshot()
    ms = t.store.manifests
    n = len(ms.read_list(snap.base_manifest_list)) + len(ms.read_list(snap.delta_manifest_list))
    assert n < 32
    assert t.to_arrow().num_rows == 70


def test_truncated_snapshot_gives_a_clear_error(catalog, warehouse):
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "p": ["x"]}, schema=SCHEMA))
    path = t.store.paths.snapshot_file(1)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    fresh = open_catalog(warehouse).get_table("db.t")
    with pytest.raises(CorruptMetadataError):
        fresh.to_arrow()


def test_truncated_manifest_gives_a_clear_error(catalog, warehouse):
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "p": ["x"]}, schema=SCHEMA))
    mdir = t.store.paths.manifest_dir
    for name in os.listdir(mdir):
        if name.startswith("manifest-") and not name.startswith("manifest-list"):
            p = os.path.join(mdir, name)
            data = open(p, "rb").read()
            open(p, "wb").write(data[:20])
    from engine.meta import manifest_store

    manifest_store._MANIFEST_CACHE._items.clear()
    with pytest.raises(CorruptMetadataError):
        open_catalog(warehouse).get_table("db.t").to_arrow()


def test_overwrite_from_an_old_base_conflicts_with_later_appends(catalog):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    t.write_arrow(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA))
    base = t.latest_snapshot().id
    t.write_arrow(pa.table({"id": [2], "p": ["a"]}, schema=SCHEMA))  # lands after the rewrite read its data
    w = t.new_writer()
    w.write(pa.table({"id": [10], "p": ["a"]}, schema=SCHEMA))
    with pytest.raises(CommitConflictError):
        t.commit(w.prepare_commit(), overwrite=[{"p": "a"}], base_snapshot_id=base)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


def test_a_file_added_twice_in_one_commit_is_refused_and_nothing_is_published(catalog):
    """Two messages naming the same file (a reused task name, a message passed twice) would make
    the snapshot unreadable (a double ADD); the commit refuses it and the table stays readable."""

    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA))
    writer = t.new_writer()
    writer.write(pa.table({"id": [2], "p": ["b"]}, schema=SCHEMA))
    messages = writer.prepare_commit()
    with pytest.raises(InvalidArgumentError, match="twice"):
        t.new_commit().commit(messages + messages)
    t = t.refresh()
    assert len(t.snapshots()) == 1
    assert t.to_arrow().column("id").to_pylist() == [1]
    t.write_arrow(pa.table({"id": [3], "p": ["c"]}, schema=SCHEMA))  # the next commit works
    assert sorted(t.refresh().to_arrow().column("id").to_pylist()) == [1, 3]


@pytest.mark.parametrize("spec", [
    {"static": {"p": "a"}, "dynamic": True},
    {"dynamic": True, "partitions": ({"p": "a"},)},
    {"static": {"p": "a"}, "partitions": ()},
])
def test_an_overwrite_spec_holds_one_intent(spec):
    with pytest.raises(InvalidArgumentError, match="one intent"):
        OverwriteSpec(**spec)
