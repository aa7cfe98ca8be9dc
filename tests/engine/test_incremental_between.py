"""incremental-between: resolving 'start,end' (tags or snapshot ids) and the row diff of two states."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.errors import InvalidArgumentError, NoSuchSnapshotError, NoSuchTagError
from engine.scan.incremental import ChangeReader, diff_changes, range_splits, resolve_between


@pytest.fixture
def pk(tmp_path):
    cat = open_catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        pa.schema([("id", pa.int64()), ("v", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "1"},
    )
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))  # 1
    t.refs.tags.create("t1")
    t.write_arrow(pa.table({"id": [2, 3], "v": ["B", "c"]}))  # 2
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "rowkind": ["-D"]}))  # 3
    t.refs.tags.create("t2", t.latest_snapshot().id)
    return t


def rows(table):
    return sorted(tuple(r.values()) for r in table.to_pylist())


def expire(table, snapshot_id):
    """What another process's snapshot expiration leaves: the snapshot file gone, the tags kept."""
    os.remove(f"{table.store.paths.snapshot_dir}/snapshot-{snapshot_id}")
    table.store.snapshots.forget(snapshot_id)


def test_ids_and_tags_resolve_to_the_same_range(pk):
    by_tag = resolve_between(pk.store, "t1,t2")
    by_id = resolve_between(pk.store, f"1,{pk.latest_snapshot().id}")
    assert (
        (by_tag.start_id, by_tag.end.id, by_tag.mode)
        == (by_id.start_id, by_id.end.id, by_id.mode)
        == (1, 3, "auto")
    )
    changes = ChangeReader(pk.store).read_all(range_splits(pk.store, by_tag))
    assert rows(changes) == sorted([("+I", 2, "B"), ("+I", 3, "c"), ("-D", 1, "a")])


def test_auto_between_tags_diffs_when_snapshots_inside_expired(pk):
    expire(pk, 2)
    rng = resolve_between(pk.store, "t1,t2")
    assert rng.mode == "diff"
    with pytest.raises(NoSuchSnapshotError, match="expired"):
        resolve_between(pk.store, "1,3")  # ids: no silent switch to a diff
    assert resolve_between(pk.store, "1,3", "diff").mode == "diff"


def test_range_errors(pk):
    with pytest.raises(NoSuchTagError):
        resolve_between(pk.store, "t1,nope")
    with pytest.raises(InvalidArgumentError):
        resolve_between(pk.store, "t2,t1")
    with pytest.raises(InvalidArgumentError):
        resolve_between(pk.store, "t1")
    with pytest.raises(InvalidArgumentError):
        resolve_between(pk.store, "t1,t2", "sideways")
    with pytest.raises(NoSuchSnapshotError):
        resolve_between(pk.store, "1,99")


def test_diff_keyed_marks_updates_and_keeps_multiplicity():
    before = pa.table({"id": [1, 2, 4], "v": ["a", "b", "d"]})
    after = pa.table({"id": [2, 3, 4], "v": ["B", "c", "d"]})
    out = diff_changes(before, after, ["id"])
    assert out.column_names == ["rowkind", "id", "v"]
    assert rows(out) == sorted([("-D", 1, "a"), ("-U", 2, "b"), ("+U", 2, "B"), ("+I", 3, "c")])
    assert out.column("rowkind").to_pylist()[:2] in (["-D", "-U"], ["-U", "-D"])  # retractions first
    dup = diff_changes(pa.table({"x": [1, 1, 2]}), pa.table({"x": [1, 1, 1, 3]}), [])
    assert rows(dup) == sorted([("+I", 1), ("+I", 3), ("-D", 2)])
    assert diff_changes(after, after, ["id"]).num_rows == 0


def test_delta_and_changelog_modes_on_a_changelog_producing_table(tmp_path):
    cat = open_catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.c",
        pa.schema([("id", pa.int64()), ("v", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "input"},
    )
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    t.write_arrow(pa.table({"id": [1, 2], "v": ["A", "b"]}))
    for mode in ("auto", "delta", "changelog"):
        rng = resolve_between(t.store, "1,2", mode)
        got = rows(ChangeReader(t.store).read_all(range_splits(t.store, rng)))
        assert got == sorted([("+I", 1, "A"), ("+I", 2, "b")]), mode
    none = cat.create_table(
        "db.n", pa.schema([("id", pa.int64())]), primary_keys=["id"], options={"bucket": "1"}
    )
    none.write_arrow(pa.table({"id": [1]}))
    with pytest.raises(InvalidArgumentError, match="changelog-producer"):
        resolve_between(none.store, "0,1", "changelog")
