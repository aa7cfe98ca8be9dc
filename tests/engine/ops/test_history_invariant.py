"""Paimon's history invariant after rollback, fast-forward and replace_main (engine.ops.republish).

In one branch's history a data file is ADDed once and DELETEd once. The checks here replay what
Java Paimon does with a history, without a JVM:

* :func:`java_live` is ``AbstractFileStoreScan.readAndMergeFileEntries``: an ADD whose identifier
  any scanned manifest DELETEs is dropped, whatever the order;
* :func:`java_expire_all_but_head` is ``expire_snapshots`` down to the head: every path named by a
  net DELETE of an expired snapshot's delta (a DELETE not re-ADDed in the same delta: an upgrade)
  is deleted from disk, then the head must still read.
"""

from __future__ import annotations

import os

import pytest

from engine.errors import CommitConflictError, NoSuchBranchError, NoSuchSnapshotError
from engine.io.faults import FailingFileIO
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import FileKind
from engine.ops import rollback as rollback_mod
from engine.ops.branches import BranchOps
from engine.ops.reachability import reachable_files
from engine.ops.replace_main import replace_main
from engine.store import FileStore
from tests.engine.ops.conftest import content, data_and_manifest_files, rows


def _path(store, e) -> str:
    part = store.partition_dir(deserialize_row(e.partition, store.partition_types))
    return e.file.external_path or store.paths.data_file(part, e.bucket, e.file.file_name)


def java_live(store, snapshot) -> set[tuple]:
    ms = store.manifests
    entries = [e for m in ms.data_manifests(snapshot) for e in ms.read_entries(m.file_name)]
    deleted = {e.identifier for e in entries if e.kind is FileKind.DELETE}
    return {e.identifier for e in entries if e.kind is FileKind.ADD and e.identifier not in deleted}


def assert_added_once(store) -> None:
    """No path of the branch's history is ADDed again after a delta DELETEd it (upgrades aside)."""
    gone: set[str] = set()
    first = store.snapshots.earliest()
    for m in store.manifests.read_list(first.base_manifest_list):
        for e in store.manifests.read_entries(m.file_name):
            if e.kind is FileKind.DELETE:
                gone.add(_path(store, e))
    for snap in store.snapshots.all():
        entries = [e for m in store.manifests.read_list(snap.delta_manifest_list)
                   for e in store.manifests.read_entries(m.file_name)]
        added = {_path(store, e) for e in entries if e.kind is FileKind.ADD}
        assert not (added & gone), f"snapshot {snap.id} ADDs again {sorted(added & gone)[:3]}"
        gone |= {_path(store, e) for e in entries if e.kind is FileKind.DELETE} - added


def java_expire_all_but_head(store) -> None:
    """Java's expiration keeps the files of the branch's tags (its data-file skipper) and nothing else."""
    from engine.meta.refs import TagStore

    head = store.snapshots.latest()
    tagged = {_path(store, e) for tag in TagStore(store.io, store.paths).all().values()
              for e in store.live_entries(tag.snapshot)}
    for snap in store.snapshots.all():
        if snap.id == store.snapshots.earliest_id():
            continue  # Java deletes what the deltas after the earliest retained one DELETE
        entries = [e for m in store.manifests.read_list(snap.delta_manifest_list)
                   for e in store.manifests.read_entries(m.file_name)]
        added = {_path(store, e) for e in entries if e.kind is FileKind.ADD}
        for e in entries:
            path = _path(store, e)
            gone = e.kind is FileKind.DELETE and path not in added and path not in tagged
            if gone and os.path.exists(path):
                os.remove(path)
    for sid in store.snapshots.list_ids():
        if sid != head.id:
            os.remove(store.paths.snapshot_file(sid))
            store.snapshots.forget(sid)


def check_history(table) -> None:
    store = table.store
    head = store.snapshots.latest()
    assert java_live(store, head) == {e.identifier for e in store.live_entries(head)}
    assert_added_once(store)
    rows_before = content(table)
    java_expire_all_but_head(store)
    assert content(table.refresh()) == rows_before


@pytest.mark.parametrize("fixture", ["append_table", "pk_table"])
def test_rollback_past_a_full_compaction_keeps_the_invariant_and_survives_java_expiration(request, fixture):
    t = request.getfixturevalue(fixture)
    at1 = content(t, snapshot_id=1)
    t.compact(full=True)
    t.write_arrow(rows([40]))
    t.refs.rollback_to(1)
    assert content(t) == at1
    new = t.latest_snapshot()
    restored = {e.file.file_name for e in t.store.live_entries(new)}
    original = {e.file.file_name for e in t.store.live_entries(t.store.snapshots.get(1))}
    assert not restored & original  # every file that came back has a new name
    check_history(t)


def test_rolling_back_twice_and_forward_again_keeps_the_invariant(pk_table):
    t = pk_table
    t.compact(full=True)
    t.refs.rollback_to(1)
    t.write_arrow(rows([7], "c"))
    t.refs.rollback_to(2)
    t.refs.rollback_to(3)  # the compacted state, once more
    assert content(t) == content(t, snapshot_id=3)
    check_history(t)


def test_fast_forward_to_a_branch_holding_files_main_compacted_away(catalog, pk_table):
    t = pk_table
    t.refs.branches.create("dev", from_snapshot=2)
    dev = catalog.get_table("db.pk$branch_dev")
    dev.write_arrow(rows([9], "d"))
    t.compact(full=True)  # main DELETEs the files dev still has
    t.refs.branches.fast_forward("dev")
    assert content(t) == content(dev)
    check_history(t)
    assert content(dev.refresh()) == content(t)  # the branch still reads its own files


def test_replace_main_with_a_branch_holding_files_main_compacted_away(catalog, pk_table):
    t = pk_table
    t.refs.tags.create("base", 2)
    t.refs.branches.create("dev", from_tag="base")
    dev = catalog.get_table("db.pk$branch_dev")
    dev.write_arrow(rows([9], "d"))
    t.compact(full=True)
    t.write_arrow(rows([11], "m"))
    replace_main(t.store, "dev")
    t = t.refresh()
    assert content(t) == content(dev)
    check_history(t)


def test_a_rollback_whose_target_lost_a_file_changes_nothing(pk_table):
    t = pk_table
    t.refs.tags.create("t1", 1)
    t.compact(full=True)
    victim = _path(t.store, t.store.live_entries(t.store.snapshots.get(1))[0])
    os.remove(victim)  # e.g. orphan cleanup with force, or another engine's expiration
    before = data_and_manifest_files(t.path)
    head = t.latest_snapshot().id
    with pytest.raises(NoSuchSnapshotError, match="is missing"):
        t.refs.rollback_to("t1")
    assert t.latest_snapshot().id == head and "rollback-backup-3" not in t.refs.tags.all()
    assert data_and_manifest_files(t.path) == before  # links and manifests made so far were removed


def test_the_links_of_a_lost_rollback_are_removed(append_table):
    t = append_table
    t.compact(full=True)
    head = t.latest_snapshot().id
    racing = FailingFileIO(t.store.io, "try_create", path_contains=f"snapshot/snapshot-{head + 1}",
                           action="hook", hook=lambda method, path: t.write_arrow(rows([77])))
    with pytest.raises(CommitConflictError):
        rollback_mod.rollback_to(FileStore(racing, t.store.paths, t.store.schema), 1)
    t = t.refresh()
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()


def test_two_rollbacks_of_one_head_the_loser_keeps_the_winners_backup_tag(append_table):
    """Race 5: the loser created the backup tag, the winner found it and reported it."""
    t = append_table
    head = t.latest_snapshot().id
    tag = f"rollback-backup-{head}"
    results = []

    def winner_runs_now(method, path):  # the loser created the tag and is about to publish
        results.append(t.refs.rollback_to(2))

    loser = FailingFileIO(t.store.io, "try_create", path_contains=f"snapshot/snapshot-{head + 1}",
                          action="hook", hook=winner_runs_now)
    with pytest.raises(CommitConflictError):
        rollback_mod.rollback_to(FileStore(loser, t.store.paths, t.store.schema), 1)
    assert results[0].backup_tag == tag
    assert tag in t.refs.tags.names() and t.refs.tags.get(tag).snapshot.id == head


@pytest.mark.parametrize("operation", ["fast_forward", "replace_main"])
def test_moving_main_to_a_branch_racing_delete_branch_fails_and_leaves_main_as_it_was(
    catalog, pk_table, operation
):
    """Race 2: the branch is deleted (files and all) while main's new snapshot links its files."""
    t = pk_table
    t.refs.branches.create("dev", from_snapshot=2)
    dev = catalog.get_table("db.pk$branch_dev")
    dev.write_arrow(rows([9], "d"))
    dev.write_arrow(rows([10], "d"))
    head, rows_before = t.latest_snapshot().id, content(t)
    deleted = []

    def delete_branch_now(method, path):
        if not deleted:
            deleted.append(BranchOps(t.store).delete("dev"))

    racing = FailingFileIO(t.store.io, "link", action="hook", hook=delete_branch_now)
    store = FileStore(racing, t.store.paths, t.store.schema)
    with pytest.raises(NoSuchBranchError):
        if operation == "fast_forward":
            BranchOps(store).fast_forward("dev")
        else:
            replace_main(store, "dev")
    t = t.refresh()
    assert deleted and t.latest_snapshot().id == head and content(t) == rows_before
    assert not [n for n in t.refs.tags.names() if n.startswith("replace-main-backup-")]  # the backup went too
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()


@pytest.mark.parametrize("after", [False, True])
def test_a_rollback_crashing_at_every_file_operation_leaves_the_old_or_the_new_head(tmp_path, after):
    import shutil

    from engine import open_catalog
    from engine.errors import CommitStateUnknownError, StorageError
    from tests.engine.ops.conftest import SCHEMA
    from tests.engine.ops.test_branches import all_referenced_exist

    template = str(tmp_path / "template")
    cat = open_catalog(template)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(rows(range(6), "a"))
    t.write_arrow(rows([1, 2], "b"))
    t.compact(full=True)
    old_head, old_rows, new_rows = t.latest_snapshot().id, content(t), content(t, snapshot_id=1)
    outcomes = set()
    n = 1
    while True:  # call n fails, and every call after it (a crash), until a rollback runs past its last call
        wh = str(tmp_path / f"w{n}")
        shutil.copytree(template, wh)
        t = open_catalog(wh).get_table("db.t")
        io = FailingFileIO(t.store.io, "any", n, times=-1, after=after)  # a crash: nothing runs after it
        try:
            rollback_mod.rollback_to(FileStore(io, t.store.paths, t.store.schema), 1)
            finished = True
        except (StorageError, CommitStateUnknownError):
            finished = False
        t = open_catalog(wh).get_table("db.t")
        head = t.latest_snapshot().id
        assert (head, content(t)) in ((old_head, old_rows), (old_head + 1, new_rows)), f"crash at call {n}"
        outcomes.add(head == old_head + 1)
        assert all_referenced_exist(t)
        t.refs.rollback_to(1)  # running it again finishes the job (or finds it done)
        t = t.refresh()
        assert content(t) == new_rows
        check_history(t)
        shutil.rmtree(wh)
        if finished and io.failures == 0:
            break
        n += 1
    assert n > 10 and outcomes == {False, True}


def _writer_process(root: str, n: int, queue) -> None:
    from engine import open_catalog

    t = open_catalog(root).get_table("db.t")
    done = 0
    for i in range(n):
        try:
            t.write_arrow(rows([100 + i], "w"))
            done += 1
        except CommitConflictError:
            pass
        if i % 5 == 4:
            try:
                t.compact(full=True)
            except CommitConflictError:
                pass
    queue.put(done)


def _rollback_process(root: str, n: int, queue) -> None:
    from engine import open_catalog

    t = open_catalog(root).get_table("db.t")
    backups = []
    for _ in range(n):
        try:
            result = t.refresh().refs.rollback_to(1)
        except CommitConflictError:
            continue
        if result.backup_tag is not None:
            backups.append(result.backup_tag)
    queue.put(backups)


def test_writers_compactions_and_rollbacks_in_two_processes_keep_the_history_sound(tmp_path):
    import multiprocessing

    from engine import open_catalog
    from tests.engine.ops.conftest import SCHEMA

    root = str(tmp_path / "wh")
    cat = open_catalog(root)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(rows(range(4), "a"))
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer_process, args=(root, 20, queue)),
             ctx.Process(target=_rollback_process, args=(root, 8, queue))]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    backups = next(r for r in results if isinstance(r, list))
    t = t.refresh()
    for tag in backups:  # every backup a rollback reported exists (race 5)
        assert tag in t.refs.tags.names()
    times = [s.time_millis for s in t.snapshots()]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert all(os.path.exists(p) for p in reachable_files(t.store.io, t.path).paths())
    check_history(t)


@pytest.mark.s3
def test_a_rollback_on_s3_copies_the_files_that_come_back(s3_root, s3_endpoint):
    from engine import open_catalog
    from tests.engine.ops.conftest import SCHEMA

    cat = open_catalog(s3_root, **s3_endpoint)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(rows(range(4), "a"))
    t.write_arrow(rows([1], "b"))
    at1 = content(t, snapshot_id=1)
    t.compact(full=True)
    t.refs.rollback_to(1)
    assert content(t) == at1
    assert_added_once(t.store)
    for e in t.store.live_entries(t.store.snapshots.get(1)):  # Java's expiration removes the originals
        t.store.io.delete(_path(t.store, e))
    assert content(open_catalog(s3_root, **s3_endpoint).get_table("db.t")) == at1


def _delta_adds(store, snapshot) -> list:
    return [e for m in store.manifests.read_list(snapshot.delta_manifest_list)
            for e in store.manifests.read_entries(m.file_name) if e.kind is FileKind.ADD]


def test_a_second_fast_forward_links_only_what_is_new_on_the_branch(catalog, pk_table):
    t = pk_table
    t.refs.branches.create("dev", from_snapshot=2)
    dev = catalog.get_table("db.pk$branch_dev")
    dev.write_arrow(rows([9], "d"))
    t.compact(full=True)
    t.refs.branches.fast_forward("dev")
    dev.write_arrow(rows([10], "d"))
    t = t.refresh()
    t.refs.branches.fast_forward("dev")
    new = t.refresh().latest_snapshot()
    added = _delta_adds(t.store, new)
    assert len(added) == 1 and all("-link-" in e.file.file_name for e in added)  # dev's one new file
    assert content(t.refresh()) == content(dev.refresh())
    check_history(t.refresh())


def test_rolling_back_to_content_the_head_holds_under_new_names_links_nothing(pk_table):
    t = pk_table
    t.compact(full=True)
    t.refs.rollback_to(1)  # snapshot 4: snapshot 1's files under new names
    t.write_arrow(rows([7], "c"))
    t.refs.rollback_to(1)  # only the write is undone: the copies of snapshot 1's files stay
    t = t.refresh()
    head = t.latest_snapshot()
    assert _delta_adds(t.store, head) == []
    assert content(t) == content(t, snapshot_id=1)
    check_history(t)
