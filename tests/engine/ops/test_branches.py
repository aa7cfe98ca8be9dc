"""Branches: creation (whole or not at all), isolation from main, rename, deletion with exact file
cleanup, and fast-forward as one atomic main snapshot (checked with a crash at every file operation)."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.errors import (
    BranchAlreadyExistsError,
    CommitConflictError,
    CommitStateUnknownError,
    InvalidArgumentError,
    InvalidNameError,
    NoSuchBranchError,
    NoSuchSnapshotError,
    NoSuchTagError,
    StorageError,
    TagAlreadyExistsError,
)
from engine.io.faults import FailingFileIO
from engine.meta.snapshot import CommitKind
from engine.ops.branches import FF_BRANCH, BranchOps
from engine.ops.reachability import UnsafeToDeleteError, reachable_files
from engine.schema_changes import AddColumn, SetOption
from engine.store import FileStore
from engine.types import INT
from tests.engine.ops.conftest import content, data_and_manifest_files, rows


def tree(root: str) -> set[str]:
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        out.update(os.path.relpath(os.path.join(dirpath, f), root) for f in files)
        out.update(os.path.relpath(os.path.join(dirpath, d), root) + "/" for d in _dirs)
    return out


def all_referenced_exist(t) -> bool:
    return all(os.path.exists(p) for p in reachable_files(t.store.io, t.path).paths())


# -- creating ------------------------------------------------------------------------------------


def test_empty_branch_copies_the_schemas_and_is_written_independently(catalog, append_table):
    t = append_table
    catalog.alter_table("db.app", [SetOption("snapshot.num-retained.min", "5")])
    t = t.refresh()
    main_rows = content(t)
    t.refs.branches.create("dev")
    bdir = os.path.join(t.path, "branch", "branch-dev")
    assert sorted(os.listdir(os.path.join(bdir, "schema"))) == ["schema-0", "schema-1"]
    assert not os.path.exists(os.path.join(bdir, "snapshot"))
    assert t.refs.branches.names() == ["dev"]
    dev = catalog.get_table("db.app$branch_dev")
    assert content(dev) == [] and dev.latest_snapshot() is None
    dev.write_arrow(rows([100]))
    assert content(dev) == [(100, "x100", "a")]
    assert content(t) == main_rows  # main unchanged
    t.write_arrow(rows([200]))
    assert content(dev) == [(100, "x100", "a")]  # and vice versa


def test_branch_from_a_tag_copies_tag_snapshot_and_its_schemas(catalog, append_table):
    t = append_table
    t.refs.tags.create("t2", 2)
    catalog.alter_table("db.app", [AddColumn("extra", INT())])
    t = t.refresh()
    tagged = content(t.branch_table("main"), tag="t2")
    t.refs.branches.create("dev", from_tag="t2")
    bdir = os.path.join(t.path, "branch", "branch-dev")
    assert os.listdir(os.path.join(bdir, "tag")) == ["tag-t2"]
    assert os.listdir(os.path.join(bdir, "snapshot")) == ["snapshot-2"]
    assert os.listdir(os.path.join(bdir, "schema")) == ["schema-0"]  # 0..snapshot.schemaId, not the later one
    with (
        open(os.path.join(t.path, "tag", "tag-t2"), "rb") as a,
        open(os.path.join(bdir, "tag", "tag-t2"), "rb") as b,
    ):
        assert a.read() == b.read()
    dev = catalog.get_table("db.app$branch_dev")
    assert content(dev) == tagged and content(dev, tag="t2") == tagged
    assert [f.name for f in dev.schema.fields] == ["id", "v", "p"]
    dev.write_arrow(rows([50]))
    assert dev.latest_snapshot().id == 3
    assert content(dev) == sorted(tagged + [(50, "x50", "a")])
    assert (50, "x50", "a", None) not in content(t)


def test_branch_from_a_snapshot(catalog, pk_table):
    t = pk_table
    at1 = content(t, snapshot_id=1)
    t.refs.branches.create("b1", from_snapshot=1)
    dev = catalog.get_table("db.pk$branch_b1")
    assert content(dev) == at1 and [s.id for s in dev.snapshots()] == [1]


@pytest.mark.parametrize("name", ["main", "", "  ", "123", "a/b", "..", "x$y"])
def test_bad_branch_names_change_nothing(append_table, name):
    before = tree(append_table.path)
    with pytest.raises(InvalidNameError):
        append_table.refs.branches.create(name)
    assert tree(append_table.path) == before


def test_refusals_change_nothing(append_table):
    t = append_table
    t.refs.branches.create("dev")
    before = tree(t.path)
    with pytest.raises(BranchAlreadyExistsError):
        t.refs.branches.create("dev")
    with pytest.raises(NoSuchTagError):
        t.refs.branches.create("x", from_tag="nope")
    with pytest.raises(NoSuchSnapshotError):
        t.refs.branches.create("x", from_snapshot=99)
    with pytest.raises(InvalidArgumentError):
        t.refs.branches.create("x", from_tag="t", from_snapshot=1)
    with pytest.raises(NoSuchBranchError):
        t.refs.branches.delete("nope")
    with pytest.raises(NoSuchBranchError):
        t.refs.branches.rename("nope", "x")
    with pytest.raises(BranchAlreadyExistsError):
        t.refs.branches.rename("dev", "dev")
    with pytest.raises(InvalidNameError):
        t.refs.branches.delete("main")
    with pytest.raises(NoSuchBranchError):
        t.refs.branches.fast_forward("nope")
    assert tree(t.path) == before


@pytest.mark.parametrize("after", [False, True])
def test_a_crash_while_creating_leaves_no_branch(append_table, after):
    t = append_table
    t.refs.tags.create("t1", 1)
    n = 1
    while True:  # a crash (every later call fails too, so no cleanup runs) at every write/rename
        io = FailingFileIO(t.store.io, "any", n, times=-1, after=after, path_contains="branch")
        try:
            BranchOps(FileStore(io, t.store.paths, t.store.schema)).create("dev", from_tag="t1")
        except StorageError:
            assert t.refs.branches.names() in ([], ["dev"])
            if t.refs.branches.names() == ["dev"]:  # only when the crash hit after the final rename
                assert after and content(t.branch_table("dev")) == content(t, tag="t1")
                t.refs.branches.delete("dev")
            assert all_referenced_exist(t)
            n += 1
            continue
        break
    assert n > 3 and t.refs.branches.names() == ["dev"]
    assert content(t.branch_table("dev")) == content(t, tag="t1")


# -- operations on a branch ----------------------------------------------------------------------


def test_schema_change_compaction_tags_and_time_travel_on_a_branch(catalog, pk_table):
    t = pk_table
    main_rows, main_snaps = content(t), [s.id for s in t.snapshots()]
    t.refs.branches.create("dev", from_snapshot=2)
    catalog.alter_table("db.pk$branch_dev", [AddColumn("n", INT())])
    dev = catalog.get_table("db.pk$branch_dev")
    assert [f.name for f in dev.schema.fields][-1] == "n"
    dev.write_arrow(pa.table({"id": [1, 9], "v": ["d1", "d9"], "p": ["a", "a"], "n": [7, 8]}))
    dev.compact(full=True)
    dev.refs.tags.create("dt")
    assert content(dev, tag="dt") == content(dev)
    assert content(dev, snapshot_id=2) == main_rows  # time travel reads with the snapshot's schema
    assert {r[0]: r[3] for r in content(dev)}[9] == 8
    # main untouched by all of it
    t = t.refresh()
    assert [f.name for f in t.schema.fields] == ["id", "v", "p"]
    assert content(t) == main_rows and [s.id for s in t.snapshots()] == main_snaps
    assert t.refs.tags.names() == ["branch-base-dev"]  # the pin of dev's base, for Java's expiration of main
    assert all_referenced_exist(t)


# -- rename and delete ---------------------------------------------------------------------------


def test_rename_branch(catalog, append_table):
    t = append_table
    t.refs.branches.create("dev", from_snapshot=3)
    rows3 = content(catalog.get_table("db.app$branch_dev"))
    t.refs.branches.rename("dev", "prod")
    assert t.refs.branches.names() == ["prod"]
    assert content(catalog.get_table("db.app$branch_prod")) == rows3
    with pytest.raises(NoSuchBranchError):
        catalog.get_table("db.app$branch_dev")


def test_delete_branch_deletes_only_files_no_one_else_needs(catalog, append_table):
    t = append_table
    t.refs.branches.create("dev", from_snapshot=3)
    before = data_and_manifest_files(t.path)
    dev = catalog.get_table("db.app$branch_dev")
    dev.write_arrow(rows([10, 11]))
    dev.write_arrow(rows([12]), overwrite=True)
    branch_only = data_and_manifest_files(t.path) - before
    main_rows = content(t)
    dry = t.refs.branches.delete("dev", dry_run=True)
    assert set(dry.files.paths()) == branch_only and t.refs.branches.names() == ["dev"]
    result = t.refs.branches.delete("dev")
    assert set(result.files.paths()) == branch_only
    assert data_and_manifest_files(t.path) == before
    assert t.refs.branches.names() == [] and not os.path.exists(os.path.join(t.path, "branch", "branch-dev"))
    assert content(t) == main_rows and all_referenced_exist(t)
    assert os.listdir(os.path.join(t.path, "branch")) == []  # no trash left


def test_delete_branch_fails_closed(catalog, append_table):
    t = append_table
    t.refs.branches.create("dev", from_snapshot=3)
    catalog.get_table("db.app$branch_dev").write_arrow(rows([10]))
    with open(t.store.paths.snapshot_file(2), "w") as f:
        f.write("{broken")
    t.store.snapshots.forget(2)
    before = tree(t.path)
    with pytest.raises(UnsafeToDeleteError) as e:
        t.refs.branches.delete("dev")
    assert e.value.path.endswith("snapshot-2") and tree(t.path) == before


# -- fast-forward --------------------------------------------------------------------------------


def test_fast_forward_publishes_the_branch_head_as_a_new_main_snapshot(catalog, append_table):
    t = append_table
    t.refs.tags.create("t2", 2)
    t.refs.branches.create("dev", from_tag="t2")
    dev = catalog.get_table("db.app$branch_dev")
    dev.write_arrow(rows([20, 21]))
    dev.write_arrow(rows([22], p="c"))
    old_head, old_rows = t.latest_snapshot(), content(t)
    before = data_and_manifest_files(t.path)
    result = t.refs.branches.fast_forward("dev")
    assert (result.previous_snapshot_id, result.current_snapshot_id) == (old_head.id, old_head.id + 1)
    new = t.latest_snapshot()
    assert new.commit_kind is CommitKind.OVERWRITE and new.properties[FF_BRANCH] == "dev"
    assert content(t) == content(dev)
    assert new.total_record_count == dev.latest_snapshot().total_record_count
    assert content(t, snapshot_id=old_head.id) == old_rows  # main's history kept
    assert before <= data_and_manifest_files(t.path)  # nothing deleted
    assert t.refs.branches.fast_forward("dev").current_snapshot_id == new.id  # nothing to do the second time
    # both keep going independently
    t.write_arrow(rows([30]))
    dev.write_arrow(rows([40]))
    assert (30, "x30", "a") in content(t) and (30, "x30", "a") not in content(dev)
    assert (40, "x40", "a") not in content(t)
    assert all_referenced_exist(t)


def test_fast_forward_brings_the_branch_schema(catalog, pk_table):
    t = pk_table
    t.refs.branches.create("dev", from_snapshot=2)
    catalog.alter_table("db.pk$branch_dev", [AddColumn("n", INT())])
    dev = catalog.get_table("db.pk$branch_dev")
    dev.write_arrow(pa.table({"id": [3], "v": ["d"], "p": ["a"], "n": [5]}))
    t.refs.branches.fast_forward("dev")
    t = t.refresh()
    assert [f.name for f in t.schema.fields] == ["id", "v", "p", "n"] and content(t) == content(dev)
    t.write_arrow(pa.table({"id": [4], "v": ["m"], "p": ["a"], "n": [6]}))  # main keeps writing
    assert (4, "m", "a", 6) in content(t)


def test_fast_forward_refuses_when_main_changed_its_schema(catalog, append_table):
    t = append_table
    t.refs.branches.create("dev", from_snapshot=3)
    catalog.get_table("db.app$branch_dev").write_arrow(rows([9]))
    catalog.alter_table("db.app", [AddColumn("m", INT())])
    before = tree(t.path)
    with pytest.raises(CommitConflictError):
        t.refresh().refs.branches.fast_forward("dev")
    assert tree(t.path) == before
    empty = t.refs.branches.create("e") or "e"
    with pytest.raises(NoSuchSnapshotError):
        t.refs.branches.fast_forward(empty)


def test_fast_forward_loses_a_race_against_a_main_commit_and_changes_nothing(catalog, append_table):
    t = append_table
    t.refs.branches.create("dev", from_snapshot=2)
    catalog.get_table("db.app$branch_dev").write_arrow(rows([9]))
    from engine.io.faults import FailingFileIO
    from engine.ops.branches import BranchOps
    from engine.store import FileStore

    wanted = f"{t.store.paths.snapshot_dir}/snapshot-{t.latest_snapshot().id + 1}"
    racing = FailingFileIO(t.store.io, "try_create", path_contains=wanted, action="hook",
                           hook=lambda method, path: t.write_arrow(rows([77])))  # lands first, same id
    files = data_and_manifest_files(t.path)
    with pytest.raises(CommitConflictError):
        BranchOps(FileStore(racing, t.store.paths, t.store.schema)).fast_forward("dev")
    t = t.refresh()
    assert (77, "x77", "a") in content(t) and t.latest_snapshot().commit_kind is not CommitKind.OVERWRITE
    referenced = reachable_files(t.store.io, t.path)
    new_files = data_and_manifest_files(t.path) - files
    assert new_files and all(p in referenced for p in new_files)  # the fast-forward's manifests were removed


@pytest.fixture(params=[pytest.param(False, id="same-schema"),
                        pytest.param(True, id="branch-added-a-column", marks=pytest.mark.slow)])
def ff_template(tmp_path, request):
    """A warehouse whose main and branch 'dev' diverged (main wrote after the branch point)."""
    cat = open_catalog(str(tmp_path / "template"))
    cat.create_database("db")
    from tests.engine.ops.conftest import SCHEMA

    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3], p="b"))
    t.refs.tags.create("t1", 2)
    t.write_arrow(rows([4]))
    t.refs.branches.create("dev", from_tag="t1")
    dev = cat.get_table("db.t$branch_dev")
    dev.write_arrow(rows([5, 6]))
    if request.param:
        dev = cat.alter_table("db.t$branch_dev", [AddColumn("n", INT())])
    dev.write_arrow(rows([7], p="c"), overwrite={"p": "b"})
    return str(tmp_path / "template"), content(t), content(dev)


@pytest.mark.parametrize("after", [False, True])
def test_fast_forward_crashing_at_every_file_operation_leaves_main_at_its_old_or_new_head(
    tmp_path, ff_template, after
):
    template, old_rows, new_rows = ff_template
    counting = open_catalog(str(tmp_path / "count"))
    shutil.copytree(template, str(tmp_path / "count"), dirs_exist_ok=True)
    t = counting.get_table("db.t")
    probe = FailingFileIO(t.store.io, "any", 10**9)
    BranchOps(FileStore(probe, t.store.paths, t.store.schema)).fast_forward("dev")
    total = probe.calls
    assert total > 10
    outcomes = set()
    for n in range(1, total + 1):
        wh = str(tmp_path / f"w{n}")
        shutil.copytree(template, wh)
        t = open_catalog(wh).get_table("db.t")
        io = FailingFileIO(t.store.io, "any", n, times=-1, after=after)  # a crash: nothing runs after it
        try:
            BranchOps(FileStore(io, t.store.paths, t.store.schema)).fast_forward("dev")
            finished = True  # only the best-effort LATEST hint write failed
        except (StorageError, CommitStateUnknownError):
            finished = False
        t = open_catalog(wh).get_table("db.t")
        seen = content(t)
        # Old head (read with the branch's newer schema if that was copied before the crash) or new head.
        assert seen == new_rows or content(t, columns=["id", "v", "p"]) == old_rows, f"crash at call {n}"
        assert not finished or seen == new_rows
        outcomes.add(seen == new_rows)
        assert all_referenced_exist(t)
        t.refs.branches.fast_forward("dev")  # running it again finishes the job
        assert content(t.refresh()) == new_rows
        shutil.rmtree(wh)
    assert outcomes == {False, True}


@pytest.mark.parametrize("after", [False, True])
def test_a_crash_while_deleting_a_branch_leaves_it_whole_or_gone(tmp_path, after):
    template = str(tmp_path / "template")
    cat = open_catalog(template)
    cat.create_database("db")
    from tests.engine.ops.conftest import SCHEMA

    t = cat.create_table("db.t", SCHEMA)
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3]))
    t.refs.branches.create("dev", from_snapshot=1)
    dev = cat.get_table("db.t$branch_dev")
    dev.write_arrow(rows([10]))
    dev_rows, main_rows = content(dev), content(t)
    n, gone = 0, set()
    while True:  # a crash at every file operation: nothing runs after it
        n += 1
        wh = str(tmp_path / f"w{n}")
        shutil.copytree(template, wh)
        t = open_catalog(wh).get_table("db.t")
        io = FailingFileIO(t.store.io, "any", n, times=-1, after=after)
        try:
            BranchOps(FileStore(io, t.store.paths, t.store.schema)).delete("dev")
            break
        except (StorageError, UnsafeToDeleteError):  # a failed read refuses (fail closed)
            pass
        cat = open_catalog(wh)
        if t.refs.branches.names() == ["dev"]:
            assert content(cat.get_table("db.t$branch_dev")) == dev_rows
        assert content(cat.get_table("db.t")) == main_rows and all_referenced_exist(t)
        gone.add(t.refs.branches.names() == [])
        t.refs.branches.create("other")  # leftovers (a trash directory) are swept by the next deletion
        t.refs.branches.delete("other")
        assert os.listdir(os.path.join(t.path, "branch")) in ([], ["branch-dev"])
        shutil.rmtree(wh)
    assert n > 5 and gone == {False, True}


def test_fast_forward_into_a_main_without_snapshots_and_branches_of_branches(catalog):
    from tests.engine.ops.conftest import SCHEMA

    t = catalog.create_table("db.e", SCHEMA)
    t.refs.branches.create("dev")
    dev = catalog.get_table("db.e$branch_dev")
    dev.write_arrow(rows([1, 2]))
    dev.refs.tags.create("d1")
    dev.refs.branches.create("sub", from_tag="d1")  # created from the branch's own tag
    sub = catalog.get_table("db.e$branch_sub")
    assert content(sub) == content(dev) and sorted(t.refs.branches.names()) == ["dev", "sub"]
    result = t.refs.branches.fast_forward("sub")
    assert (result.previous_snapshot_id, result.current_snapshot_id) == (None, 1)
    assert content(t) == content(dev) and t.latest_snapshot().total_record_count == 2
    t.refs.branches.delete("dev")  # main and 'sub' still hold every file
    assert content(t) == content(sub) == [(1, "x1", "a"), (2, "x2", "a")] and all_referenced_exist(t)


def test_a_branch_from_a_snapshot_or_tag_pins_its_base_until_it_is_deleted(catalog, pk_table):
    """Java's expire_snapshots protects only the expired branch's tags: the base gets a tag on main."""
    from engine.ops.branches import base_tag_name

    t = pk_table
    t.refs.tags.create("t1", 1)
    t.refs.branches.create("dev", from_snapshot=2)
    t.refs.branches.create("qa", from_tag="t1")
    t.refs.branches.create("empty")
    assert (
        t.refs.tags.get(base_tag_name("dev")).snapshot.id == 2
        and t.refs.tags.get(base_tag_name("qa")).snapshot.id == 1
    )
    assert base_tag_name("empty") not in t.refs.tags.names()  # nothing inherited, nothing to pin
    t.refs.branches.rename("dev", "dev2")
    assert base_tag_name("dev") not in t.refs.tags.names()
    assert t.refs.tags.get(base_tag_name("dev2")).snapshot.id == 2
    before = data_and_manifest_files(t.path)
    t.refs.branches.delete("dev2")
    t.refs.branches.delete("qa")
    assert sorted(t.refresh().refs.tags.names()) == ["t1"]
    assert data_and_manifest_files(t.path) <= before and all_referenced_exist(t.refresh())


def test_a_base_tag_cannot_be_deleted_while_its_branch_exists(pk_table):
    t = pk_table
    t.refs.branches.create("dev", from_snapshot=2)
    before = tree(t.path)
    with pytest.raises(InvalidArgumentError, match="branch-base-dev.*delete the branch first"):
        t.refs.tags.delete("branch-base-dev")
    assert tree(t.path) == before
    t.refs.branches.delete("dev")  # takes its pin with it
    assert "branch-base-dev" not in t.refresh().refs.tags.names()


def test_a_branch_is_refused_when_its_base_tag_name_tags_another_snapshot(pk_table):
    t = pk_table
    t.refs.tags.create("branch-base-dev", 1)
    before = tree(t.path)
    with pytest.raises(TagAlreadyExistsError, match="branch-base-dev"):
        t.refs.branches.create("dev", from_snapshot=2)
    assert tree(t.path) == before
    t.refs.branches.create("dev", from_snapshot=1)  # the same base: the tag is reused
    assert "dev" in t.refs.branches.names()
