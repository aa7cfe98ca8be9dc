"""replace_main: main gets the branch head's content and schema as one new snapshot, even when the
schemas diverged; the backup tag; streaming readers of main; refusals; crashes at every file operation."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    InvalidNameError,
    NoSuchBranchError,
    NoSuchSnapshotError,
    StorageError,
    TagAlreadyExistsError,
)
from engine.io.faults import FailingFileIO
from engine.meta.snapshot import CommitKind
from engine.ops.reachability import reachable_files
from engine.ops.replace_main import RM_BRANCH, replace_main
from engine.scan.incremental import ChangeReader, incremental_splits
from engine.schema_changes import AddColumn
from engine.store import FileStore
from engine.types import INT
from tests.engine.ops.conftest import SCHEMA, content, data_and_manifest_files, rows
from tests.engine.ops.test_branches import all_referenced_exist, tree


def diverged(catalog, name="t", schemas=True):
    """Main and branch 'dev' diverged after tag t1: in data, and (``schemas``) each added a column."""
    t = catalog.create_table(f"db.{name}", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3], p="b"))
    t.refs.tags.create("t1", 2)
    t.refs.branches.create("dev", from_tag="t1")
    dev = catalog.get_table(f"db.{name}$branch_dev")
    if schemas:
        t = catalog.alter_table(f"db.{name}", [AddColumn("m", INT())])
        t.write_arrow(pa.table({"id": [4], "v": ["x4"], "p": ["a"], "m": [40]}))
        dev = catalog.alter_table(f"db.{name}$branch_dev", [AddColumn("n", INT())])
        dev.write_arrow(pa.table({"id": [5, 6], "v": ["y5", "y6"], "p": ["a", "c"], "n": [50, 60]}))
    else:
        t.write_arrow(rows([4]))
        dev.write_arrow(rows([5, 6], v="y"))
    dev.write_arrow(rows([7], p="c"), overwrite={"p": "b"})
    return t.refresh(), dev.refresh()


def test_replace_main_with_diverged_schemas(catalog):
    t, dev = diverged(catalog)
    old_head, old_rows = t.latest_snapshot(), content(t)
    old_highest = max(s.highest_field_id for s in t.schemas.all())
    before = data_and_manifest_files(t.path)
    result = t.refs.branches.replace_main("dev")
    assert (result.previous_snapshot_id, result.current_snapshot_id) == (old_head.id, old_head.id + 1)
    assert result.backup_tag == f"replace-main-backup-{old_head.id}"
    assert result.branch_snapshot_id == dev.latest_snapshot().id
    t = t.refresh()
    assert [f.name for f in t.schema.fields] == ["id", "v", "p", "n"]  # main's schema is the branch's
    assert t.schema.id == result.schema_id > old_head.schema_id
    assert t.schema.field("n").id > old_highest  # never a field id main's lineage used for 'm'
    assert content(t) == content(dev)
    new = t.latest_snapshot()
    assert new.commit_kind is CommitKind.OVERWRITE and new.properties[RM_BRANCH] == "dev"
    assert new.total_record_count == dev.latest_snapshot().total_record_count
    # Main's history and the backup: read with their own schema ("m").
    assert content(t, snapshot_id=old_head.id) == old_rows == content(t, tag=result.backup_tag)
    assert before <= data_and_manifest_files(t.path)  # nothing deleted
    assert t.refs.branches.replace_main("dev").current_snapshot_id == new.id  # repeated: nothing to do
    # Both keep going; main writes with the branch's columns.
    t.write_arrow(pa.table({"id": [8], "v": ["z"], "p": ["a"], "n": [80]}))
    dev.write_arrow(pa.table({"id": [9], "v": ["w"], "p": ["a"], "n": [90]}))
    assert (8, "z", "a", 80) in content(t) and (9, "w", "a", 90) not in content(t)
    assert dev.refs.branches.names() == ["dev"] and all_referenced_exist(t)


def test_replace_main_same_schemas_without_backup(catalog):
    t, dev = diverged(catalog, schemas=False)
    head = t.latest_snapshot()
    result = t.refs.branches.replace_main("dev", keep_backup=False)
    assert result.backup_tag is None and t.refs.tags.names() == ["branch-base-dev", "t1"]
    assert content(t) == content(dev) and t.refresh().schema.id == head.schema_id  # no schema copied
    assert result.current_snapshot_id == head.id + 1


def test_a_streaming_reader_of_main_continues_without_duplicates_or_gaps(catalog):
    t, dev = diverged(catalog, schemas=False)
    position = t.latest_snapshot().id  # a reader has delivered everything up to main's head
    t.refs.branches.replace_main("dev")
    t.write_arrow(rows([100]))
    changes = ChangeReader(t.store).read_all(incremental_splits(t.store, position, t.latest_snapshot().id))
    # The replacement is an OVERWRITE, skipped as a batch rewrite; the next commit is read once.
    assert changes.column("id").to_pylist() == [100]


def test_main_schema_changed_but_branch_did_not(catalog):
    t = catalog.create_table("db.s", SCHEMA)
    t.write_arrow(rows([1]))
    t.refs.branches.create("dev", from_snapshot=1)
    catalog.get_table("db.s$branch_dev").write_arrow(rows([2]))
    t = catalog.alter_table("db.s", [AddColumn("m", INT())])
    t.write_arrow(pa.table({"id": [3], "v": ["x"], "p": ["a"], "m": [3]}))
    t.refs.branches.replace_main("dev")
    t = t.refresh()
    assert [f.name for f in t.schema.fields] == ["id", "v", "p"] and t.schema.id == 2
    assert content(t) == [(1, "x1", "a"), (2, "x2", "a")]


def test_refusals_change_nothing(catalog):
    t, _ = diverged(catalog, schemas=False)
    t.refs.branches.create("empty")
    # the backup name, on another snapshot
    t.refs.tags.create(f"replace-main-backup-{t.latest_snapshot().id}", 1)
    before = tree(t.path)
    for name, error in (("nope", NoSuchBranchError), ("main", InvalidNameError), ("a/b", InvalidNameError),
                        ("empty", NoSuchSnapshotError), ("dev", TagAlreadyExistsError)):
        with pytest.raises(error):
            t.refs.branches.replace_main(name)
        assert tree(t.path) == before, name
    result = t.refs.branches.replace_main("dev", keep_backup=False)
    assert result.current_snapshot_id == t.latest_snapshot().id


def test_replace_main_loses_a_race_and_changes_no_snapshot(catalog):
    t, _ = diverged(catalog, schemas=False)
    wanted = f"{t.store.paths.snapshot_dir}/snapshot-{t.latest_snapshot().id + 1}"
    racing = FailingFileIO(t.store.io, "try_create", path_contains=wanted, action="hook",
                           hook=lambda method, path: t.write_arrow(rows([77])))  # lands first, same id
    files = data_and_manifest_files(t.path)
    with pytest.raises(CommitConflictError):
        replace_main(FileStore(racing, t.store.paths, t.store.schema), "dev")
    t = t.refresh()
    assert (77, "x77", "a") in content(t) and t.refs.tags.names() == [
        "branch-base-dev",
        "t1",
    ]  # no backup tag left
    new_files = data_and_manifest_files(t.path) - files
    referenced = reachable_files(t.store.io, t.path)
    assert new_files and all(p in referenced for p in new_files)  # the replacement's manifests were removed


@pytest.mark.parametrize("after", [False, True])
def test_replace_main_crashing_at_every_file_operation(tmp_path, after):
    template = str(tmp_path / "template")
    cat = open_catalog(template)
    cat.create_database("db")
    t, dev = diverged(cat)
    old_head, old_rows, new_rows = t.latest_snapshot().id, content(t), content(dev)
    shutil.copytree(template, str(tmp_path / "count"))
    t = open_catalog(str(tmp_path / "count")).get_table("db.t")
    probe = FailingFileIO(t.store.io, "any", 10**9)
    replace_main(FileStore(probe, t.store.paths, t.store.schema), "dev")
    total = probe.calls
    assert total > 10
    outcomes = set()
    for n in range(1, total + 1):
        wh = str(tmp_path / f"w{n}")
        shutil.copytree(template, wh)
        t = open_catalog(wh).get_table("db.t")
        io = FailingFileIO(t.store.io, "any", n, times=-1, after=after)  # a crash: nothing runs after it
        try:
            replace_main(FileStore(io, t.store.paths, t.store.schema), "dev")
            finished = True  # only the best-effort LATEST hint write failed
        except (StorageError, CommitStateUnknownError):
            finished = False
        t = open_catalog(wh).get_table("db.t")
        head = t.latest_snapshot().id
        # Old head (its rows, by time travel with its own schema) or the new head, nothing between.
        assert (head == old_head and content(t, snapshot_id=head) == old_rows) or (
            head == old_head + 1 and content(t) == new_rows), f"crash at call {n}"
        assert not finished or head == old_head + 1
        assert set(t.refs.tags.names()) <= {"t1", "branch-base-dev", f"replace-main-backup-{old_head}"}
        outcomes.add(head == old_head + 1)
        assert all_referenced_exist(t)
        t.refs.branches.replace_main("dev")  # running it again finishes the job
        t = t.refresh()
        assert content(t) == new_rows and [f.name for f in t.schema.fields] == ["id", "v", "p", "n"]
        assert content(t, tag=f"replace-main-backup-{old_head}") == old_rows
        shutil.rmtree(wh)
    assert outcomes == {False, True}


def test_replace_an_empty_main(catalog):
    t = catalog.create_table("db.e", SCHEMA)
    t.refs.branches.create("dev")
    dev = catalog.get_table("db.e$branch_dev")
    dev.write_arrow(rows([1, 2]))
    # called through the branch's table: it is main that changes
    result = dev.refs.branches.replace_main("dev")
    assert (result.previous_snapshot_id, result.current_snapshot_id, result.backup_tag) == (None, 1, None)
    assert content(t) == content(dev) and t.refs.tags.names() == []
