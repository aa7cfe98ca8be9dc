"""engine.ops.reachability: the files every anchor of every branch needs, computed fail-closed."""

from __future__ import annotations

import os
import shutil

import pytest

from engine.meta.manifest_store import ManifestStore
from engine.ops.reachability import (
    FileKindRef,
    UnsafeToDeleteError,
    all_anchors,
    delete_files,
    reachable_files,
    unreferenced,
)
from tests.engine.ops.conftest import data_and_manifest_files, expire_snapshot_file, rows


def reach(t, **kw):
    return reachable_files(t.store.io, t.path, **kw)


@pytest.mark.parametrize("fixture", ["append_table", "pk_table"])
def test_a_clean_table_references_every_file_it_has(request, fixture):
    t = request.getfixturevalue(fixture)
    t.compact(full=True)
    r = reach(t)
    assert r.paths() == data_and_manifest_files(t.path)
    assert all(os.path.exists(p) for p in r.paths())
    assert r.paths(FileKindRef.DATA) and r.paths(FileKindRef.MANIFEST) and r.paths(FileKindRef.MANIFEST_LIST)


def test_after_expiration_only_the_remaining_snapshot_live_files_are_reachable(pk_table):
    t = pk_table
    t.write_arrow(rows([0, 5], "c"))
    t.compact(full=True)
    before = reach(t).paths(FileKindRef.DATA)
    for sid in t.store.snapshots.list_ids()[:-1]:
        expire_snapshot_file(t, sid)
    head = t.latest_snapshot()
    live = {os.path.join(t.path, f"bucket-{e.bucket}", e.file.file_name) for e in t.store.live_entries(head)}
    assert reach(t).paths(FileKindRef.DATA) == live
    assert live < before  # the merged-away files are no longer kept by anything


def test_a_tag_keeps_its_files_after_its_snapshot_expired(append_table):
    t = append_table
    t.refs.tags.create("t1", 1)
    t.write_arrow(rows([9]), overwrite=True)  # deletes every file of snapshot 1 from the head
    expire_snapshot_file(t, 1)
    r = reach(t, explain=True)
    tag_files = reach(t).paths()
    tagged_data = {p for p, why in r.reasons.items()
                   if any(a.kind == "tag" for a in why) and r.files[p].kind is FileKindRef.DATA}
    assert tagged_data and tagged_data <= tag_files
    # Only the tag keeps snapshot 1's data now: the head overwrote it.
    assert all(all(a.kind == "tag" or a.name != "1" for a in r.reasons[p]) for p in tagged_data)


def test_explain_names_every_anchor_that_keeps_a_file(append_table):
    t = append_table
    t.refs.tags.create("t2", 2)
    r = reach(t, explain=True)
    first = sorted(r.paths(FileKindRef.DATA))
    reasons = {p: sorted(str(a) for a in r.reasons[p]) for p in first}
    # The files of snapshot 1 are live in every snapshot and in the tag.
    assert any(reasons[p] == ["snapshot 1", "snapshot 2", "snapshot 3", "tag t2"] for p in first)
    assert set(r.reasons) == set(r.files)


def test_each_distinct_manifest_is_decoded_once(catalog, monkeypatch):
    t = catalog.create_table("db.many", rows([]).schema, options={"manifest.merge-min-count": "1000"})
    for i in range(12):
        t.write_arrow(rows([i]))
    t.refs.tags.create("mid", 6)
    calls: list[str] = []
    real = ManifestStore.read_entries

    def counting(self, name):
        calls.append(name)
        return real(self, name)

    monkeypatch.setattr(ManifestStore, "read_entries", counting)
    r = reach(t)
    assert len(calls) == len(set(calls)) == len(r.paths(FileKindRef.MANIFEST)) == 12


def test_branch_anchors_protect_files(append_table):
    t = append_table
    branch = os.path.join(t.path, "branch", "branch-dev")
    os.makedirs(os.path.join(branch, "snapshot"))
    shutil.copytree(os.path.join(t.path, "schema"), os.path.join(branch, "schema"))
    shutil.copy(t.store.paths.snapshot_file(1), os.path.join(branch, "snapshot", "snapshot-1"))
    snapshot1 = reachable_files(
        t.store.io,
        t.path,
        exclude=[a for a in all_anchors(t.store.io, t.path) if a.name != "1" or a.branch != "main"],
    ).paths(FileKindRef.DATA)
    t.write_arrow(rows([9]), overwrite=True)
    for sid in (1, 2, 3):
        expire_snapshot_file(t, sid)
    anchors = all_anchors(t.store.io, t.path)
    assert sorted((a.branch, a.name) for a in anchors) == [("dev", "1"), ("main", "4")]
    assert snapshot1 and snapshot1 <= reach(t).paths()
    without_dev = reachable_files(t.store.io, t.path, exclude=[a for a in anchors if a.branch == "dev"])
    assert not snapshot1 & without_dev.paths()


def test_long_lived_changelog_protects_its_delta(append_table):
    t = append_table
    os.makedirs(os.path.join(t.path, "changelog"))
    shutil.copy(t.store.paths.snapshot_file(2), os.path.join(t.path, "changelog", "changelog-2"))
    t.write_arrow(rows([9]), overwrite=True)
    for sid in (1, 2, 3):
        expire_snapshot_file(t, sid)
    r = reach(t, explain=True)
    kept_by_changelog = {p for p, why in r.reasons.items() if [a.kind for a in why] == ["changelog"]}
    kinds = {r.files[p].kind for p in kept_by_changelog}
    assert FileKindRef.DATA in kinds and FileKindRef.MANIFEST_LIST in kinds
    # Its base list is not protected (long-lived changelogs keep only their delta and changelog).
    assert len([p for p in kept_by_changelog if r.files[p].kind is FileKindRef.MANIFEST_LIST]) == 1


# -- fail closed ----------------------------------------------------------------------------------
def test_a_corrupt_snapshot_refuses_and_names_the_file(append_table):
    t = append_table
    path = t.store.paths.snapshot_file(2)
    with open(path, "w") as f:
        f.write("{ not json")
    with pytest.raises(UnsafeToDeleteError) as err:
        reach(t)
    assert err.value.path == path and path in str(err.value)


def test_a_missing_manifest_refuses_and_names_the_file(append_table):
    t = append_table
    snap = t.store.snapshots.get(2)
    name = t.store.manifests.read_list(snap.delta_manifest_list)[0].file_name
    path = t.store.paths.manifest_file(name)
    os.remove(path)
    from engine.meta import manifest_store

    manifest_store._MANIFEST_CACHE._items.pop(path, None)
    with pytest.raises(UnsafeToDeleteError) as err:
        reach(t)
    assert err.value.path == path


def test_a_corrupt_tag_refuses(append_table):
    t = append_table
    path = os.path.join(t.path, "tag", "tag-broken")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("")
    with pytest.raises(UnsafeToDeleteError) as err:
        reach(t)
    assert err.value.path == path


def test_a_branch_directory_with_an_unsafe_name_refuses(append_table):
    t = append_table
    os.makedirs(os.path.join(t.path, "branch", "branch-a..b"))
    with pytest.raises(UnsafeToDeleteError) as err:
        reach(t)
    assert "branch-a..b" in err.value.path


def test_a_branch_without_schema_refuses(append_table):
    t = append_table
    branch = os.path.join(t.path, "branch", "branch-dev", "snapshot")
    os.makedirs(branch)
    shutil.copy(t.store.paths.snapshot_file(1), os.path.join(branch, "snapshot-1"))
    with pytest.raises(UnsafeToDeleteError):
        reach(t)


# -- deleting -------------------------------------------------------------------------------------
def test_delete_files_reports_bytes_and_dry_run_deletes_nothing(append_table):
    t = append_table
    t.write_arrow(rows([9]), overwrite=True)
    anchors = all_anchors(t.store.io, t.path)
    old = [a for a in anchors if a.name != "4"]  # the overwrite (4) replaced everything of 1..3
    doomed = unreferenced(reachable_files(t.store.io, t.path, exclude=[a for a in anchors if a not in old]),
                          reachable_files(t.store.io, t.path, exclude=old))
    assert doomed
    dry = delete_files(t.store.io, doomed, dry_run=True)
    assert dry.count == len(doomed) and dry.bytes == sum(os.path.getsize(p) for p in doomed)
    assert all(os.path.exists(p) for p in doomed)
    done = delete_files(t.store.io, doomed)
    assert done.bytes == dry.bytes and not any(os.path.exists(p) for p in doomed)
    kinds = [k for _, k, _ in done.files]
    assert kinds.index(FileKindRef.DATA) < kinds.index(FileKindRef.MANIFEST_LIST)
