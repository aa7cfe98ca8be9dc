"""Rollback: one new snapshot with the target's content, a backup tag, nothing deleted."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from engine.errors import CommitConflictError, InvalidArgumentError, NoSuchSnapshotError, NoSuchTagError
from engine.io.faults import FailingFileIO
from engine.meta.snapshot import CommitKind
from engine.ops import rollback as rollback_mod
from engine.ops.reachability import reachable_files
from engine.store import FileStore
from tests.engine.ops.conftest import content, data_and_manifest_files, expire_snapshot_file, rows


def state(t):
    return (sorted(os.listdir(t.store.paths.snapshot_dir)), sorted(os.listdir(os.path.join(t.path, "tag")))
            if os.path.isdir(os.path.join(t.path, "tag")) else [], data_and_manifest_files(t.path))


@pytest.mark.parametrize("fixture", ["append_table", "pk_table"])
def test_rollback_to_a_snapshot_publishes_its_content_as_a_new_snapshot(request, fixture):
    t = request.getfixturevalue(fixture)
    at1 = content(t, snapshot_id=1)
    head = t.latest_snapshot()
    before_files = data_and_manifest_files(t.path)
    result = t.refs.rollback_to(1)
    assert (result.previous_snapshot_id, result.current_snapshot_id) == (head.id, head.id + 1)
    assert result.backup_tag == f"rollback-backup-{head.id}"
    new = t.latest_snapshot()
    assert new.commit_kind is CommitKind.OVERWRITE and new.properties["dyntable.rollback.to"] == "1"
    assert content(t) == at1 and new.total_record_count == t.store.snapshots.get(1).total_record_count
    assert content(t, snapshot_id=head.id) == content(t, tag=result.backup_tag)  # history kept
    assert before_files <= data_and_manifest_files(t.path)  # nothing deleted
    assert open(t.store.paths.latest_hint).read() == str(new.id)


def test_writes_after_a_rollback_of_a_key_table_merge_correctly(pk_table):
    t = pk_table
    t.refs.rollback_to(1)
    t.write_arrow(rows([1, 7], "n"))
    t.compact(full=True)
    expected = {i: f"a{i}" for i in range(6)} | {1: "n1", 7: "n7"}
    assert content(t) == sorted((k, v, "a") for k, v in expected.items())


def test_rollback_to_a_tag_whose_snapshot_expired(append_table):
    t = append_table
    t.refs.tags.create("t1", 1)
    expected = content(t, tag="t1")
    t.write_arrow(rows([8, 9]), overwrite=True)
    expire_snapshot_file(t, 1)
    result = t.refs.rollback_to("t1")
    assert content(t) == expected and result.current_snapshot_id == 5
    assert all(os.path.exists(p) for p in reachable_files(t.store.io, t.path).paths())


def test_rollback_to_timestamp(append_table):
    t = append_table
    snaps = t.snapshots()
    t.refs.rollback_to_timestamp(snaps[1].time_millis)
    assert content(t) == content(t, snapshot_id=2)
    with pytest.raises(NoSuchSnapshotError):
        t.refs.rollback_to_timestamp(snaps[0].time_millis - 10_000)


def test_rollback_refusals_change_nothing(append_table):
    t = append_table
    t.refs.tags.create("ok", 1)
    before = state(t)
    with pytest.raises(NoSuchSnapshotError):
        t.refs.rollback_to(42)
    with pytest.raises(NoSuchTagError):
        t.refs.rollback_to("nope")
    with pytest.raises(InvalidArgumentError):
        t.refs.rollback_to("a/b")
    with pytest.raises(InvalidArgumentError):
        t.refs.rollback_to(1.5)  # type: ignore[arg-type]
    expire_snapshot_file(t, 2)
    before = state(t)
    with pytest.raises(NoSuchSnapshotError):
        t.refs.rollback_to(2)
    assert state(t) == before


def test_rollback_to_the_head_is_a_no_op(append_table):
    t = append_table
    before = state(t)
    result = t.refs.rollback_to(3)
    assert (result.previous_snapshot_id, result.current_snapshot_id, result.backup_tag) == (3, 3, None)
    assert state(t) == before


def test_a_commit_racing_the_rollback_wins_and_the_rollback_changes_nothing(append_table):
    t = append_table
    # Another writer's commit lands exactly when the rollback creates its snapshot (id 4).
    racing = FailingFileIO(t.store.io, "try_create", path_contains="snapshot/snapshot-4", action="hook",
                           hook=lambda method, path: t.write_arrow(rows([77])))
    with pytest.raises(CommitConflictError):
        rollback_mod.rollback_to(FileStore(racing, t.store.paths, t.store.schema), 1)
    t = t.refresh()
    assert "rollback-backup-3" not in t.refs.tags.all()
    assert t.latest_snapshot().id == 4 and (77, "x77", "a") in content(t)
    # No metadata file of the failed attempt is left behind.
    assert data_and_manifest_files(t.path) == reachable_files(t.store.io, t.path).paths()


def test_rollback_restores_the_dynamic_bucket_index(catalog):
    t = catalog.create_table("db.dyn", rows([]).schema, primary_keys=["id"], options={"bucket": "-1"})
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3, 4]))
    first = t.store.snapshots.get(1)
    t.refs.rollback_to(1)
    assert t.latest_snapshot().index_manifest == first.index_manifest
    t.write_arrow(rows([1, 3], "u"))
    assert content(t) == [(1, "u1", "a"), (2, "x2", "a"), (3, "u3", "a")]


def test_rollback_over_a_schema_change_keeps_the_new_schema(catalog, append_table):
    from engine.schema_changes import AddColumn
    from engine.types import INT

    t = catalog.alter_table("db.app", [AddColumn("extra", INT())])
    t.write_arrow(pa.table({"id": [6], "v": ["x6"], "p": ["a"], "extra": [1]}))
    t.refs.rollback_to(1)
    assert t.latest_snapshot().schema_id == 1
    data = t.refresh().to_arrow()
    assert data.column_names == ["id", "v", "p", "extra"] and data.column("extra").to_pylist() == [None, None]


def test_a_publish_whose_answer_is_lost_is_resolved_by_reading_it_back(pk_table):
    """The rollback snapshot lands but the store's answer is lost: the publish reads the file back,
    finds its own snapshot, and reports success; its manifests, links and backup tag stay."""
    t = pk_table
    head = t.latest_snapshot()
    lost = FailingFileIO(
        t.store.io, "try_create", path_contains=f"snapshot/snapshot-{head.id + 1}", after=True
    )
    result = rollback_mod.rollback_to(FileStore(lost, t.store.paths, t.store.schema), 1)
    assert lost.failures == 1 and result.current_snapshot_id == head.id + 1
    fresh = t.refresh()
    assert fresh.latest_snapshot().id == head.id + 1
    assert content(fresh) == content(fresh, snapshot_id=1)  # the new head reads: nothing it needs was deleted
    assert content(fresh, tag=f"rollback-backup-{head.id}") == content(fresh, snapshot_id=head.id)
