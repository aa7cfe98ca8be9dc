"""Fences of the publish primitive (engine.meta.publish) as commits meet other processes.

Each race of issue 20 is replayed deterministically: a ``FailingFileIO`` hook plays the other
process's step exactly at one storage call of the commit (no private function is patched), or a
second process really runs concurrently.
"""

from __future__ import annotations

import multiprocessing
import os

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.errors import CommitConflictError, NoSuchBranchError
from engine.io.faults import FailingFileIO
from engine.meta.publish import next_time_millis
from engine.ops.branches import BranchOps
from engine.ops.reachability import reachable_files
from engine.table import Table
from tests.engine.ops.conftest import SCHEMA, content, data_and_manifest_files, rows


def through(t: Table, io) -> Table:
    """The same table opened through another FileIO (e.g. a hooked one)."""
    return Table(None, t.identifier, io, t.store.paths, t.store.schema)


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.f", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1, 2]))
    return t


def test_a_writer_on_a_deleted_branch_fails_and_creates_nothing(catalog, table):
    """Race 1: the branch is deleted while a writer that opened it commits."""
    table.refs.branches.create("b", from_snapshot=1)
    stale = catalog.get_table("db.f$branch_b")
    stale.write_arrow(rows([3]))
    branch_dir = stale.store.paths.branch_root
    wanted = f"{stale.store.paths.snapshot_dir}/snapshot-3"

    def delete_the_branch(method, path):
        BranchOps(table.store).delete("b")

    hooked = FailingFileIO(
        stale.store.io, "try_create", path_contains=wanted, action="hook", hook=delete_the_branch
    )
    with pytest.raises(NoSuchBranchError, match="deleted"):
        through(stale, hooked).write_arrow(rows([4]))
    assert not os.path.exists(branch_dir)  # no schema-less branch directory recreated
    t = table.refresh()
    assert t.refs.branches.names() == []
    # Nothing of the failed commit is left, and maintenance works on the table.
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()
    t.refs.branches.create("c")
    t.refs.branches.delete("c")


def test_a_stale_writer_of_a_branch_deleted_before_its_commit(catalog, table):
    table.refs.branches.create("b")
    stale = catalog.get_table("db.f$branch_b")
    table.refs.branches.delete("b")
    with pytest.raises(NoSuchBranchError):
        stale.write_arrow(rows([3]))
    assert not os.path.exists(stale.store.paths.branch_root)
    assert table.refresh().refs.branches.names() == []


def test_a_commit_whose_data_file_was_deleted_meanwhile_publishes_nothing(table):
    """Race 8: orphan cleanup (force, or a cutoff newer than the write) deleted a new file."""
    before = table.latest_snapshot().id

    def orphan_cleanup(method, path):
        for dirpath, _dirs, files in os.walk(table.path):
            for f in files:
                full = os.path.join(dirpath, f)
                if f.startswith("data-") and full not in reachable_files(table.store.io, table.path).paths():
                    os.remove(full)

    hooked = FailingFileIO(table.store.io, "write", path_contains="manifest-list-", action="hook",
                           hook=orphan_cleanup)
    with pytest.raises(CommitConflictError, match="is gone"):
        through(table, hooked).write_arrow(rows([5]))
    t = table.refresh()
    assert t.latest_snapshot().id == before and content(t) == content(t, snapshot_id=before)
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()


def test_snapshot_times_never_go_back_even_when_a_clock_does(table):
    """Race 9: a writer whose clock is behind still publishes after its parent."""
    from engine.meta.snapshot import Snapshot

    head = table.latest_snapshot()
    assert (
        next_time_millis(head, now_millis=head.time_millis - 365 * 24 * 3600 * 1000) == head.time_millis + 1
    )
    assert next_time_millis(head, now_millis=head.time_millis + 5) == head.time_millis + 5
    assert next_time_millis(None, now_millis=7) == 7
    # Every publisher goes through it: commits, compaction, rollback.
    table.write_arrow(rows([3]))
    table.compact(full=True)
    table.refs.rollback_to(1)
    times = [s.time_millis for s in table.refresh().snapshots()]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert isinstance(head, Snapshot)


def _write_many(root: str, branch: str, n: int, queue) -> None:  # a second process
    t = open_catalog(root).get_table(f"db.f$branch_{branch}")
    outcome = "ok"
    for i in range(n):
        try:
            t.write_arrow(pa.table({"id": [100 + i], "v": ["w"], "p": ["a"]}, schema=SCHEMA))
        except NoSuchBranchError:
            outcome = "deleted"
            break
    queue.put(outcome)


def test_a_branch_deleted_between_the_snapshot_file_and_its_link_is_a_deleted_branch(catalog, table):
    """Race 1, inside the create: the deletion moves the branch away after the commit wrote its
    temporary snapshot file and before the link, so the create finds no directory."""
    table.refs.branches.create("b", from_snapshot=1)
    stale = catalog.get_table("db.f$branch_b")
    stale.write_arrow(rows([3]))
    wanted = f"{stale.store.paths.snapshot_dir}/snapshot-3"

    def delete_the_branch_mid_create(method, path):
        BranchOps(table.store).delete("b")
        raise FileNotFoundError(2, "No such file or directory (while trying to create)", path)

    hooked = FailingFileIO(
        stale.store.io, "try_create", path_contains=wanted, action="hook", hook=delete_the_branch_mid_create
    )
    with pytest.raises(NoSuchBranchError, match="deleted"):
        through(stale, hooked).write_arrow(rows([4]))
    t = table.refresh()
    assert t.refs.branches.names() == [] and not os.path.exists(stale.store.paths.branch_root)


def test_a_writer_process_racing_delete_branch_never_leaves_a_branch_behind(tmp_path):
    """Race 1 with real processes: whatever the interleaving, no schema-less branch remains."""
    root = str(tmp_path / "wh")
    cat = open_catalog(root)
    cat.create_database("db")
    t = cat.create_table("db.f", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1]))
    t.refs.branches.create("b", from_snapshot=1)
    cat.get_table("db.f$branch_b").write_arrow(rows([2]))  # the writer's table exists and works
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    writer = ctx.Process(target=_write_many, args=(root, "b", 40, queue))
    writer.start()
    try:
        # Delete once the writer has committed something, so the race is on.
        branch = cat.get_table("db.f$branch_b")
        while branch.refresh().latest_snapshot().id < 3 and writer.is_alive():
            pass
        t.refs.branches.delete("b")
        outcome = queue.get(timeout=120)
    finally:
        writer.join(timeout=120)
    assert outcome in {"ok", "deleted"}
    t = t.refresh()
    assert t.refs.branches.names() == [] and not os.path.exists(os.path.join(t.path, "branch", "branch-b"))
    t.refs.branches.create("c")  # branch operations are not blocked by leftovers
    t.refs.branches.delete("c")
    t.maintenance.remove_orphan_files(dry_run=True)  # refused before the fence: a branch without a schema
    t.maintenance.expire_snapshots(retain_max=1)
