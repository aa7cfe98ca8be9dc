"""Tag operations: create/replace/rename/delete/expire, their typed refusals, and file cleanup."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os

import pytest

from engine.errors import (
    InvalidArgumentError,
    InvalidNameError,
    NoSuchSnapshotError,
    NoSuchTagError,
    TagAlreadyExistsError,
)
from engine.meta.refs import TagStore
from engine.meta.snapshot import Tag
from engine.ops.reachability import FileKindRef, UnsafeToDeleteError, all_anchors, reachable_files
from engine.system_tables import read_system_table
from tests.engine.ops.conftest import content, data_and_manifest_files, expire_snapshot_file, rows


def tag_dir_listing(t) -> list[str]:
    d = os.path.join(t.path, "tag")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


# -- create ---------------------------------------------------------------------------------------
def test_create_tags_the_latest_snapshot_with_the_snapshot_json(append_table):
    t = append_table
    tag = t.refs.tags.create("v1")
    assert tag.snapshot.id == 3 and set(t.refs.tags.all()) == {"v1"}
    with open(os.path.join(t.path, "tag", "tag-v1")) as f:
        text = f.read()
    # Without a retention the file is exactly the snapshot file (readable by Paimon <= 0.7).
    with open(t.store.paths.snapshot_file(3)) as f:
        assert text == f.read()
    assert content(t, tag="v1") == content(t)


def test_create_with_retention_writes_java_keys(append_table):
    t = append_table
    t.refs.tags.create("r", 1, time_retained="1 d")
    data = json.loads(open(os.path.join(t.path, "tag", "tag-r")).read())
    assert data["id"] == 1 and str(data["tagTimeRetained"]) == "86400.0"
    assert isinstance(data["tagCreateTime"], list) and len(data["tagCreateTime"]) >= 5
    assert '"tagTimeRetained" : 86400.000000000' in open(os.path.join(t.path, "tag", "tag-r")).read()
    row = read_system_table(t, "tags").to_pylist()[0]
    assert (row["tag_name"], row["snapshot_id"], row["time_retained"]) == ("r", 1, "PT24H")
    assert row["create_time"] is not None and row["record_count"] == 2


def test_default_time_retained_option_applies(catalog):
    t = catalog.create_table("db.d", rows([]).schema, options={"tag.default-time-retained": "2 h"})
    t.write_arrow(rows([1]))
    assert t.refs.tags.create("x").time_retained_ms == 2 * 3600 * 1000
    assert t.refs.tags.create("y", time_retained=dt.timedelta(minutes=1)).time_retained_ms == 60_000


@pytest.mark.parametrize(
    "name", ["", "  ", "a/b", "..", "x..y", ".hidden"]
)  # '123' is a valid tag, as in Paimon
def test_create_refuses_bad_names_and_writes_nothing(append_table, name):
    with pytest.raises(InvalidNameError):
        append_table.refs.tags.create(name)
    assert tag_dir_listing(append_table) == []


def test_create_refuses_existing_and_unknown_snapshots(append_table):
    t = append_table
    t.refs.tags.create("a", 1)
    with pytest.raises(TagAlreadyExistsError):
        t.refs.tags.create("a", 2)
    assert t.refs.tags.all()["a"].snapshot.id == 1
    with pytest.raises(NoSuchSnapshotError):
        t.refs.tags.create("b", 99)
    expire_snapshot_file(t, 1)
    with pytest.raises(NoSuchSnapshotError):
        t.refs.tags.create("c", 1)
    with pytest.raises(InvalidArgumentError):
        t.refs.tags.create("d", time_retained="soon")
    assert tag_dir_listing(t) == ["tag-a"]


def test_create_on_an_empty_table_is_refused(catalog):
    t = catalog.create_table("db.e", rows([]).schema)
    with pytest.raises(NoSuchSnapshotError):
        t.refs.tags.create("x")


def test_concurrent_create_of_one_name_has_one_winner(append_table, monkeypatch):
    t = append_table
    from engine.ops import tags as tags_mod

    real_exists = tags_mod.TagStore.exists
    # The other creator publishes between our existence check and our create-if-absent.
    def racing_exists(self, name):
        answer = real_exists(self, name)
        if name == "race" and not answer:
            self.io.write_text(self.paths.tag_file("race"), Tag(t.store.snapshots.get(1)).to_json())
        return answer

    monkeypatch.setattr(tags_mod.TagStore, "exists", racing_exists)
    with pytest.raises(TagAlreadyExistsError):
        t.refs.tags.create("race", 3)
    assert t.refs.tags.all()["race"].snapshot.id == 1


def test_create_from_timestamp_takes_the_first_snapshot_at_or_after(append_table):
    t = append_table
    snaps = t.snapshots()
    assert t.refs.tags.create_from_timestamp("f", snaps[1].time_millis).snapshot.id == 2
    assert t.refs.tags.create_from_timestamp("g", snaps[0].time_millis - 1000).snapshot.id == 1
    with pytest.raises(NoSuchSnapshotError):
        t.refs.tags.create_from_timestamp("h", snaps[-1].time_millis + 1)
    assert "h" not in t.refs.tags.all()


def test_create_from_timestamp_finds_a_tagged_expired_snapshot(append_table):
    t = append_table
    first = t.snapshots()[0]
    t.refs.tags.create("keep", 1)
    expire_snapshot_file(t, 1)
    tag = t.refs.tags.create_from_timestamp("again", first.time_millis)
    assert tag.snapshot.id == 1 and content(t, tag="again") == content(t, tag="keep")


# -- replace / rename -----------------------------------------------------------------------------
def test_replace_moves_an_existing_tag(append_table):
    t = append_table
    with pytest.raises(NoSuchTagError):
        t.refs.tags.replace("nope", 1)
    assert tag_dir_listing(t) == []
    t.refs.tags.create("m", 1)
    t.refs.tags.replace("m", 2, time_retained="1 h")
    tag = t.refs.tags.all()["m"]
    assert tag.snapshot.id == 2 and tag.time_retained_ms == 3_600_000
    with pytest.raises(NoSuchSnapshotError):
        t.refs.tags.replace("m", 42)
    assert t.refs.tags.all()["m"].snapshot.id == 2


def test_rename(append_table):
    t = append_table
    t.refs.tags.create("a", 1)
    t.refs.tags.create("b", 2)
    with pytest.raises(NoSuchTagError):
        t.refs.tags.rename("zz", "c")
    with pytest.raises(TagAlreadyExistsError):
        t.refs.tags.rename("a", "b")
    with pytest.raises(InvalidNameError):
        t.refs.tags.rename("a", "x/y")
    assert tag_dir_listing(t) == ["tag-a", "tag-b"]
    t.refs.tags.rename("a", "c")
    assert {n: g.snapshot.id for n, g in t.refs.tags.all().items()} == {"b": 2, "c": 1}


# -- delete ---------------------------------------------------------------------------------------
def test_delete_unknown_tag_changes_nothing(append_table):
    t = append_table
    t.refs.tags.create("a", 1)
    with pytest.raises(NoSuchTagError):
        t.refs.tags.delete(["a", "missing"])
    with pytest.raises(InvalidNameError):
        t.refs.tags.delete(["a/../x"])
    assert tag_dir_listing(t) == ["tag-a"]


def test_deleting_a_tag_of_a_live_snapshot_deletes_only_the_tag(append_table):
    t = append_table
    files = data_and_manifest_files(t.path)
    t.refs.tags.create("a", 1)
    result = t.refs.tags.delete("a")
    assert result.tags == ("a",) and result.files.count == 0
    assert data_and_manifest_files(t.path) == files and t.refs.tags.all() == {}


def test_deleting_a_tag_of_a_live_snapshot_reads_no_manifest_and_no_other_snapshot(append_table):
    from engine.io.faults import FailingFileIO
    from engine.ops.tags import TagOps
    from engine.store import FileStore

    t = append_table
    t.refs.tags.create("a", 2)
    probe = FailingFileIO(t.store.io, "any", 10**9)  # counts every file operation, fails none
    TagOps(FileStore(probe, t.store.paths, t.store.schema)).delete("a")
    # exists + tag and snapshot-2 reads + delete: the cost does not depend on the history
    assert probe.calls <= 4 and t.refs.tags.all() == {}


def test_a_reused_snapshot_id_does_not_stand_for_the_tag(append_table):
    t = append_table
    t.refs.tags.create("a", 2)
    t.write_arrow(rows([9]), overwrite=True)
    # A Java rollback deletes newer snapshots and reuses their ids: snapshot-2 now means other metadata.
    with open(t.store.paths.snapshot_file(2), "w") as f:
        f.write(dataclasses.replace(t.store.snapshots.get(4), id=2).to_json())
    t.store.snapshots.forget(2)
    of_a = reachable_files(t.store.io, t.path, exclude=[x for x in all_anchors(t.store.io, t.path)
                                                         if x.name != "a"]).paths()
    deleted = set(t.refs.tags.delete("a").files.paths())
    assert deleted and deleted <= of_a  # the full computation ran and freed what only the tag held


def test_deleting_the_last_anchor_of_files_deletes_exactly_them(append_table):
    t = append_table
    t.refs.tags.create("old", 2)
    t.refs.tags.create("older", 1)
    t.write_arrow(rows([9]), overwrite=True)
    t.compact(full=True)
    for sid in (1, 2, 3):
        expire_snapshot_file(t, sid)
    before = data_and_manifest_files(t.path)
    anchors = all_anchors(t.store.io, t.path)
    keep_if_both_gone = reachable_files(
        t.store.io, t.path, exclude=[a for a in anchors if a.kind == "tag"]
    ).paths()
    of_old = reachable_files(t.store.io, t.path, exclude=[a for a in anchors if a.name != "old"]).paths()
    # "older" (snapshot 1) holds no data "old" (snapshot 2) lacks: only its own manifest lists go.
    older = t.refs.tags.delete("older").files
    assert [k for _, k, _ in older.files] == [FileKindRef.MANIFEST_LIST] * 2
    before -= set(older.paths())
    dry = t.refs.tags.delete("old", dry_run=True)
    assert dry.files.count > 0 and data_and_manifest_files(t.path) == before and "old" in t.refs.tags.all()
    done = t.refs.tags.delete("old")
    assert set(done.files.paths()) == set(dry.files.paths()) == of_old - keep_if_both_gone
    assert done.files.bytes == dry.files.bytes > 0
    # Snapshot 3's own files were orphaned by the simulated expiration: not the tag's to delete.
    assert data_and_manifest_files(t.path) == before - (of_old - keep_if_both_gone)
    # (its manifests stay: the head's manifest list still names them, merged or not)
    assert {FileKindRef.DATA, FileKindRef.MANIFEST_LIST} <= {k for _, k, _ in done.files.files}
    assert content(t) == [(9, "x9", "a")]


def test_a_neighbour_tag_keeps_shared_files(pk_table):
    t = pk_table
    t.refs.tags.create("a", 1)
    t.refs.tags.create("b", 2)
    t.write_arrow(rows(range(6), "z"))
    t.compact(full=True)
    expected_b = content(t, tag="b")
    for sid in t.store.snapshots.list_ids()[:-1]:
        expire_snapshot_file(t, sid)
    t.refs.tags.delete("a")
    assert content(t, tag="b") == expected_b
    refs = reachable_files(t.store.io, t.path).paths()
    assert all(os.path.exists(p) for p in refs)


def test_delete_fails_closed_on_an_unreadable_anchor(append_table):
    t = append_table
    t.refs.tags.create("victim", 1)
    t.write_arrow(rows([9]), overwrite=True)
    for sid in (1, 2, 3):
        expire_snapshot_file(t, sid)
    bad = t.store.paths.snapshot_file(4)
    original = open(bad, "rb").read()
    with open(bad, "w") as f:
        f.write("{")
    t.store.snapshots.forget(4)
    files = data_and_manifest_files(t.path)
    with pytest.raises(UnsafeToDeleteError) as err:
        t.refs.tags.delete("victim")
    assert err.value.path == bad
    assert "victim" in t.refs.tags.all() and data_and_manifest_files(t.path) == files
    with open(bad, "wb") as f:
        f.write(original)
    assert t.refs.tags.delete("victim").files.count > 0


def test_tag_reads_its_rows_after_its_snapshot_expired(pk_table):
    t = pk_table
    t.refs.tags.create("t", 1)
    expected = content(t, tag="t")
    t.write_arrow(rows(range(6), "q"))
    t.compact(full=True)
    expire_snapshot_file(t, 1)
    assert content(t, tag="t") == expected
    assert content(t.refresh(), tag="t") == expected


# -- expire ---------------------------------------------------------------------------------------
def test_expire_tags_by_retention_and_by_older_than(append_table):
    t = append_table
    past = dt.datetime.now() - dt.timedelta(hours=2)
    tags = TagStore(t.store.io, t.store.paths)  # tags created two hours ago, written as Paimon would
    tags.write("gone", Tag(t.store.snapshots.get(1), create_time=past, time_retained_ms=3_600_000))
    tags.write("kept", Tag(t.store.snapshots.get(2), create_time=past, time_retained_ms=10 * 3_600_000))
    t.refs.tags.create("plain", 3)
    assert t.maintenance.expire_tags(dry_run=True).tags == ("gone",)
    assert set(t.refs.tags.all()) == {"gone", "kept", "plain"}
    assert t.maintenance.expire_tags().tags == ("gone",)
    # older_than: creation time (or, without one, the tag file's modification time) before it.
    assert t.maintenance.expire_tags(older_than=past - dt.timedelta(days=1)).tags == ()
    soon = dt.datetime.now() + dt.timedelta(seconds=5)
    assert t.maintenance.expire_tags(older_than=soon).tags == ("kept", "plain")
    assert t.refs.tags.all() == {}


def test_an_anchor_made_while_a_tag_is_deleted_keeps_its_files(append_table, monkeypatch):
    from engine.ops import tags as tag_module

    t = append_table
    t.refs.tags.create("a", 1)
    t.write_arrow(rows([9]), overwrite=True)
    for sid in (1, 2, 3):  # tag 'a' alone holds snapshot 1's files now
        expire_snapshot_file(t, sid)
    tag_json = open(t.store.paths.tag_file("a"), "rb").read()
    real, calls = tag_module.all_anchors, []

    def racing(io, root):
        calls.append(root)
        if len(calls) == 2:  # after the tag file went: another writer publishes a tag of the same content
            t.store.io.write_bytes(t.store.paths.tag_file("b"), tag_json)
        return real(io, root)

    monkeypatch.setattr(tag_module, "all_anchors", racing)
    deleted = t.refs.tags.delete("a").files
    assert len(calls) == 2 and deleted.count == 0 and t.refs.tags.names() == ["b"]
    assert content(t, tag="b") == [(1, "x1", "a"), (2, "x2", "a")]
    assert all(os.path.exists(p) for p in reachable_files(t.store.io, t.path).paths())
