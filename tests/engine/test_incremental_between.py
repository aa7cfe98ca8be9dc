"""incremental-between: resolving 'start,end' (tags or snapshot ids) and the row diff of two states."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from engine import IncrementalQuery, open_catalog
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


def test_tags_are_diffed_and_ids_read_the_snapshots_between(pk):
    # Paimon 2.0: two tags are compared as two states, whatever the scan mode; two ids read the
    # files of the snapshots between them (incremental-between-tag-to-snapshot does that for tags).
    by_tag = resolve_between(pk.store, "t1,t2")
    by_id = resolve_between(pk.store, f"1,{pk.latest_snapshot().id}")
    to_snapshot = resolve_between(pk.store, "t1,t2", tag_to_snapshot=True)
    assert (by_tag.start_id, by_tag.end.id, by_tag.mode) == (1, 3, "diff")
    assert (by_id.start_id, by_id.end.id, by_id.mode) == (to_snapshot.start_id, to_snapshot.end.id,
                                                          to_snapshot.mode) == (1, 3, "auto")
    changes = ChangeReader(pk.store).read_all(range_splits(pk.store, by_id))
    assert rows(changes) == sorted([("+I", 2, "B"), ("+I", 3, "c"), ("-D", 1, "a")])
    diffed = pk.new_read_builder().new_incremental("t1,t2").diff()
    # Paimon's diff: no -U, and a changed row comes with the kind the end state stores (an upsert: +I).
    assert rows(diffed) == sorted([("+I", 2, "B"), ("+I", 3, "c"), ("-D", 1, "a")])
    assert resolve_between(pk.store, "t2,t2").mode == resolve_between(pk.store, "2,2").mode == "empty"


def test_between_tags_reads_after_the_snapshots_inside_expired(pk):
    expire(pk, 2)
    assert resolve_between(pk.store, "t1,t2").mode == "diff"
    with pytest.raises(NoSuchSnapshotError, match="expired"):
        resolve_between(pk.store, "1,3")  # ids: no silent switch to a diff
    with pytest.raises(NoSuchSnapshotError, match="expired"):
        resolve_between(pk.store, "t1,t2", tag_to_snapshot=True)
    assert resolve_between(pk.store, "1,3", "diff").mode == "diff"


def test_range_errors(pk):
    with pytest.raises(NoSuchTagError, match="two tags or two snapshot ids"):
        resolve_between(pk.store, "t1,nope")
    with pytest.raises(NoSuchTagError, match="two tags or two snapshot ids"):
        resolve_between(pk.store, "t1,3")  # Paimon: a tag and an id cannot be mixed
    with pytest.raises(InvalidArgumentError, match="before tag start"):
        resolve_between(pk.store, "t2,t1")
    with pytest.raises(InvalidArgumentError, match="before the start snapshot"):
        resolve_between(pk.store, "3,1")
    with pytest.raises(InvalidArgumentError):
        resolve_between(pk.store, "t1")
    with pytest.raises(InvalidArgumentError):
        resolve_between(pk.store, "t1,t2", "sideways")
    with pytest.raises(InvalidArgumentError, match="out of the available snapshots"):
        resolve_between(pk.store, "1,99")
    with pytest.raises(InvalidArgumentError, match="tag-to-snapshot"):
        resolve_between(pk.store, "t1,t2", "diff", tag_to_snapshot=True)


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
    # Paimon reads the changelog files of the range, and a table without a producer has none.
    assert range_splits(none.store, resolve_between(none.store, "0,1", "changelog")) == []


def _appends(tmp_path, count):
    cat = open_catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.a", pa.schema([("id", pa.int64())]))
    for i in range(1, count + 1):
        t.write_arrow(pa.table({"id": [i]}))
    return t


def _read(table, query):
    plan = table.new_read_builder().new_incremental(query)
    if plan.is_diff:
        changes = plan.diff()
        return [] if changes is None else rows(changes)
    return rows(ChangeReader(table.store).read_all(plan.splits()))


def test_between_timestamps_reads_the_snapshots_committed_in_between(tmp_path):
    # Paimon's TableValuedFunctionsTest "paimon_incremental_between_timestamp": five inserts, times
    # taken after the first, second and fourth.
    t = _appends(tmp_path, 5)
    t1, t2, t3 = (t.store.snapshots.get(i).time_millis for i in (1, 2, 4))
    assert _read(t, IncrementalQuery(between_timestamp=f"{t1},{t2}")) == [("+I", 2)]
    assert _read(t, IncrementalQuery(between_timestamp=f"{t2},{t3}")) == [("+I", 3), ("+I", 4)]
    assert _read(t, IncrementalQuery(between_timestamp=f"{t1},{t3}")) == [("+I", 2), ("+I", 3), ("+I", 4)]
    local = [dt.datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="milliseconds")
             for ms in (t1, t3)]
    assert _read(t, IncrementalQuery(between_timestamp=",".join(local))) == [("+I", 2), ("+I", 3), ("+I", 4)]
    assert _read(t, IncrementalQuery(between_timestamp=f"{t1},{t3}", scan_mode="diff")) == [
        ("+I", 2), ("+I", 3), ("+I", 4)]
    # Before the first snapshot: from the start; beyond the table's times, or equal ends: nothing.
    assert _read(t, IncrementalQuery(between_timestamp=f"{t1 - 10_000},{t1}")) == [("+I", 1)]
    assert _read(t, IncrementalQuery(between_timestamp=f"{t3 + 100_000},{t3 + 200_000}")) == []
    assert _read(t, IncrementalQuery(between_timestamp=f"{t2},{t2}")) == []
    with pytest.raises(InvalidArgumentError, match="before the start"):
        _read(t, IncrementalQuery(between_timestamp=f"{t3},{t1}"))
    with pytest.raises(InvalidArgumentError, match="epoch milliseconds"):
        _read(t, IncrementalQuery(between_timestamp="yesterday,today"))
    with pytest.raises(InvalidArgumentError, match="'start,end'"):
        _read(t, IncrementalQuery(between_timestamp=f"{t1}"))


def test_to_auto_tag_diffs_from_the_previous_automatic_tag(tmp_path):
    # Paimon's TableValuedFunctionsTest "paimon_incremental_to_auto_tag": daily tags 2024-12-01,
    # 2024-12-02 and 2024-12-04 on three commits (2024-12-03 has none).
    t = _appends(tmp_path, 3)
    for name, sid in (("2024-12-01", 1), ("2024-12-02", 2), ("2024-12-04", 3), ("manual", 3)):
        t.refs.tags.create(name, sid)
    assert _read(t, IncrementalQuery(to_auto_tag="2024-12-01")) == []  # no earlier automatic tag
    assert _read(t, IncrementalQuery(to_auto_tag="2024-12-02")) == [("+I", 2)]
    assert _read(t, IncrementalQuery(to_auto_tag="2024-12-03")) == []  # no such tag
    assert _read(t, IncrementalQuery(to_auto_tag="2024-12-04")) == [("+I", 3)]
    with pytest.raises(InvalidArgumentError, match="not an automatic tag"):
        _read(t, IncrementalQuery(to_auto_tag="manual"))


def test_an_incremental_query_takes_exactly_one_kind():
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        IncrementalQuery(between="1,2", to_auto_tag="2024-12-01")
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        IncrementalQuery()
