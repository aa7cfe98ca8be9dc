"""count/min/max answered from manifests (engine.scan.metadata_aggregate), without a JVM: Paimon's
push-down rule (PushDownAggregatesTest's cases, engine side), checked against the rows read."""

from __future__ import annotations

import io
from datetime import date

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from engine import AppendDeletionCommit, MetadataAggregate, aggregate_from_metadata
from engine import predicate as P
from engine.append_deletions import dv_scan_files

COUNT = MetadataAggregate("count")


def mn(c):
    return MetadataAggregate("min", c)


def mx(c):
    return MetadataAggregate("max", c)


ROWS = pa.table({
    "c1": pa.array([1, 2, 3, 3, None], pa.int32()),
    "c2": ["xyz", None, "abc", "abc", "abc"],
    "c3": [11.1, None, 33.3, None, 44.4],
    "c4": [date(2025, 1, 1), date(2025, 1, 1), None, date(2025, 3, 1), date(2025, 3, 1)],
})


def agg(t, aggregates, partition_filter=None, **at):
    b = t.refresh().new_read_builder()
    if at:
        b = b.at(**at)
    return aggregate_from_metadata(b, aggregates, partition_filter)


def test_append_table_without_partitions(catalog):
    t = catalog.create_table("db.t", ROWS.schema)
    assert agg(t, [COUNT]) == (0,)
    assert agg(t, [COUNT, mn("c1"), mn("c3"), mn("c4")]) == (0, None, None, None)
    assert agg(t, [mn("c2")]) is None  # strings: bounds may be truncated
    t.write_arrow(ROWS)
    assert agg(t, [COUNT]) == (5,)
    assert agg(t, [COUNT, mn("c1"), mx("c1")]) == (5, 1, 3)
    assert agg(t, [COUNT, mn("c3"), mx("c3")]) == (5, 11.1, 44.4)
    assert agg(t, [COUNT, mn("c4"), mx("c4")]) == (5, date(2025, 1, 1), date(2025, 3, 1))
    assert agg(t, [mx("c2")]) is None
    # a data filter is not a partition filter: not exact from metadata
    assert agg(t, [COUNT], P.equal("c1", 3)) is None


def test_append_table_with_partitions_and_a_partition_filter(catalog):
    schema = pa.schema([("c1", pa.int32()), ("c2", pa.int64()), ("day", pa.string()), ("hour", pa.int32())])
    t = catalog.create_table("db.p", schema, partition_keys=["day", "hour"])
    t.write_arrow(pa.table({
        "c1": pa.array([1, 2, 3, 3, None], pa.int32()), "c2": [100, None, 300, 330, 400],
        "day": ["2025-01-01", "2025-01-01", "2025-03-01", "2025-03-01", "2025-03-01"],
        "hour": pa.array([1, 1, 3, 3, None], pa.int32()),
    }, schema=schema))
    assert agg(t, [COUNT, mn("c2"), mx("c2")]) == (5, 100, 400)
    assert agg(t, [COUNT, mn("c2"), mx("c2")], P.equal("day", "2025-03-01")) == (3, 300, 400)
    assert agg(t, [COUNT], P.equal("hour", 3)) == (2,)  # the null hour is not kept (unknown)
    assert agg(t, [COUNT], P.is_null("hour")) == (1,)
    assert agg(t, [COUNT], P.equal("day", "2025-02-01")) == (0,)


def test_stats_mode_none_answers_count_only(catalog):
    t = catalog.create_table("db.n", ROWS.schema, options={"metadata.stats-mode": "none"})
    t.write_arrow(ROWS)
    assert agg(t, [COUNT]) == (5,)
    assert agg(t, [COUNT, mn("c1"), mx("c1")]) is None
    assert agg(t, [mx("c4")]) is None


def test_a_column_null_in_one_partition(catalog):
    schema = pa.schema([("c1", pa.int32()), ("c2", pa.int64()), ("day", pa.string())])
    t = catalog.create_table("db.nul", schema, partition_keys=["day"])
    for c1, day in ((1, "2025-11-10"), (None, "2025-11-11")):
        t.write_arrow(pa.table({"c1": pa.array([c1], pa.int32()), "c2": [2], "day": [day]}, schema=schema))
    assert agg(t, [mn("c1"), mx("c1")]) == (1, 1)


def test_added_column_counts_old_files_as_nulls(catalog):
    from engine.schema_changes import AddColumn

    schema = pa.schema([("a", pa.int64())])
    t = catalog.create_table("db.evo", schema)
    t.write_arrow(pa.table({"a": [5, 6]}))
    catalog.alter_table("db.evo", [AddColumn("b", "INT")])
    t = t.refresh()
    t.write_arrow(pa.table({"a": [7], "b": pa.array([9], pa.int32())}))
    assert agg(t, [COUNT, mn("a"), mx("b")]) == (3, 5, 9)


def test_time_travel_reads_the_pinned_snapshot(catalog):
    t = catalog.create_table("db.tt", ROWS.schema)
    t.write_arrow(ROWS)
    t.write_arrow(ROWS.slice(0, 2))
    assert agg(t, [COUNT]) == (7,)
    assert agg(t, [COUNT, mx("c1")], snapshot_id=1) == (5, 3)


def _delete_where(t, column, predicate):
    snap = t.latest_snapshot()
    found = {}
    for f in dv_scan_files(t.store, snap):
        k = pq.read_table(io.BytesIO(t.store.io.read_bytes(f.path)), columns=[column]).column(column)
        pos = np.flatnonzero(predicate(k.to_numpy()))
        if pos.size:
            found[f.name] = pos
    c = AppendDeletionCommit(t.store, snap)
    c.delete(found)
    c.commit()


def test_append_table_with_deletion_vectors(catalog):
    schema = pa.schema([("id", pa.int64())])
    t = catalog.create_table("db.dv", schema, options={
        "deletion-vectors.enabled": "true", "bucket": "1", "bucket-key": "id"})
    t.write_arrow(pa.table({"id": pa.array(range(5000), pa.int64())}))
    assert agg(t, [COUNT, mn("id"), mx("id")]) == (5000, 0, 4999)
    _delete_where(t.refresh(), "id", lambda k: (k > 100) & (k <= 400))
    assert agg(t, [COUNT]) == (4700,)
    assert t.refresh().to_arrow().num_rows == 4700
    assert agg(t, [mn("id"), mx("id")]) is None  # DV rows make the bounds wide


def _pk(catalog, name, **options):
    schema = pa.schema([pa.field("c1", pa.int32(), nullable=False), ("c2", pa.string())])
    return catalog.create_table(name, schema, primary_keys=["c1"], options={"bucket": "1", **options})


def _kv(ids, v):
    return pa.table({"c1": pa.array(ids, pa.int32()), "c2": [v] * len(ids)})


@pytest.mark.parametrize("dv", [True, False])
def test_primary_key_table(catalog, dv):
    t = _pk(catalog, f"db.pk{dv}", **{"deletion-vectors.enabled": str(dv).lower()})
    assert agg(t, [COUNT]) == (0,)
    t.write_arrow(_kv([1, 2, 3], "x"))
    assert agg(t, [COUNT]) == (3,)
    assert agg(t, [mn("c1")]) is None  # never MIN/MAX of a primary-key table
    t.write_arrow(_kv([1], "x_1"))
    rows = t.refresh().to_arrow().num_rows
    assert rows == 3
    got = agg(t, [COUNT])
    # a second overlapping level-0 run needs a merge unless compaction already merged it
    files = [f for s in t.refresh().plan().splits for f in s.files]
    if dv or len(files) == 1:
        assert got == (3,)
    else:
        assert got is None


def test_primary_key_overlapping_runs_need_a_merge(catalog):
    t = _pk(catalog, "db.ov", **{"write-only": "true"})
    t.write_arrow(_kv([1, 2, 3], "x"))
    assert agg(t, [COUNT]) == (3,)  # one level-0 file: exact
    t.write_arrow(_kv([1, 4], "y"))
    assert agg(t, [COUNT]) is None
    t.refresh().compact(full=True)
    assert agg(t, [COUNT]) == (4,) == (t.refresh().to_arrow().num_rows,)


def test_primary_key_new_key_beyond_a_compacted_file_counts(catalog):
    t = _pk(catalog, "db.del", **{"write-only": "true"})
    t.write_arrow(_kv([1, 2, 3], "x"))
    t.refresh().compact(full=True)
    t = t.refresh()
    t.write_arrow(pa.table({"c1": pa.array([9], pa.int32()), "c2": ["z"]}))
    assert agg(t, [COUNT]) == (4,)  # non-overlapping: key 9 lies beyond the compacted file


def test_count_matches_rows_read_across_partitions(catalog):
    schema = pa.schema([("v", pa.float64()), ("p", pa.int32())])
    t = catalog.create_table("db.many", schema, partition_keys=["p"])
    rng = np.random.default_rng(7)
    for _ in range(3):
        v = rng.normal(size=200)
        t.write_arrow(pa.table({"v": v, "p": pa.array(rng.integers(0, 4, 200), pa.int32())}, schema=schema))
    data = t.refresh().to_arrow()
    keep = pc.is_in(data.column("p"), pa.array([1, 2], pa.int32()))
    sel = data.filter(keep)
    got = agg(t, [COUNT, mn("v"), mx("v")], P.is_in("p", [1, 2]))
    assert got == (sel.num_rows, pc.min(sel.column("v")).as_py(), pc.max(sel.column("v")).as_py())


def test_scan_options_of_the_table_refuse(catalog):
    t = catalog.create_table("db.so", ROWS.schema, options={"scan.snapshot-id": "1"})
    t.write_arrow(ROWS)
    t.write_arrow(ROWS)
    assert agg(t, [COUNT]) is None
    assert agg(t, [COUNT], snapshot_id=2) == (10,)  # pinned explicitly: that snapshot


def test_count_layout_tables_refuse(catalog):
    schema = pa.schema([("k", pa.int64())])
    t = catalog.create_table("db.cl", schema, options={"retractions.enabled": "true"})
    t.write_arrow(pa.table({"k": [1, 1, 2]}))
    assert t.refresh().to_arrow().num_rows == 3
    assert agg(t, [COUNT]) is None  # rows are counts to expand


def test_primary_key_file_counting_deletes_refuses(catalog):
    t = _pk(catalog, "db.rk", **{"write-only": "true"})
    t.write_arrow(_kv([1, 2, 3], "x"))
    t.refresh().compact(full=True)
    # a retraction of a key beyond the compacted file: no key overlap, but the file counts a delete
    t.write_arrow(pa.table({"c1": pa.array([9, 10], pa.int32()), "c2": ["z", "z"], "rowkind": ["-D", "+I"]}))
    t = t.refresh()
    assert t.to_arrow().num_rows == 4
    assert agg(t, [COUNT]) is None


@pytest.mark.parametrize("write_only", ["true", "false"])
def test_first_row_counts_what_its_reads_return(catalog, write_only):
    t = _pk(catalog, f"db.fr{write_only}", **{"merge-engine": "first-row", "write-only": write_only})
    t.write_arrow(_kv([1, 2, 3], "x"))
    t.write_arrow(_kv([3, 4], "y"))
    # first-row batch reads skip level 0: nothing until a compaction (write-only: never) lifts it
    expected = 0 if write_only == "true" else 4
    assert agg(t, [COUNT]) == (t.refresh().to_arrow().num_rows,) == (expected,)
