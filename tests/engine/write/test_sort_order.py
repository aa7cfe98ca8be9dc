"""Sorted compaction in the engine: the row orders (engine.write.sort_order) and
``Table.compact(order_strategy=..., order_by=...)`` on append tables (engine.compaction)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import AppendDeletionCommit
from engine import predicate as P
from engine.append_deletions import dv_scan_files
from engine.errors import InvalidArgumentError, NoSuchColumnError, UnsupportedTableError
from engine.write.sort_order import SortOrder, sort_indices, sort_order

GRID = pa.table({"a": pa.array([a for a in range(3) for _ in range(3)], pa.int32()),
                 "b": pa.array([b for _ in range(3) for b in range(3)], pa.int32())})


def _pairs(table: pa.Table, idx) -> list[tuple]:
    t = table.take(pa.array(idx))
    return list(zip(t.column("a").to_pylist(), t.column("b").to_pylist(), strict=True))


def test_zorder_and_hilbert_orders_are_paimons():
    """Paimon's CompactProcedureTestBase expects these orders of the 3x3 grid."""
    assert _pairs(GRID, sort_indices(GRID, SortOrder("zorder", ("a", "b")))) == [
        (0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (1, 2), (2, 0), (2, 1), (2, 2)]
    assert _pairs(GRID, sort_indices(GRID, SortOrder("hilbert", ("a", "b")))) == [
        (0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2)]
    shuffled = GRID.take([8, 3, 0, 5, 1, 7, 2, 4, 6])
    assert _pairs(shuffled, sort_indices(shuffled, SortOrder("order", ("a", "b")))) == _pairs(GRID, range(9))


@pytest.mark.parametrize("values", [
    pa.array([5, -3, None, 0, -2**40, 2**40, 7], pa.int64()),
    pa.array([1.5, -0.5, None, -1e300, 0.0, 2.25, float("-inf")], pa.float64()),
    pa.array(["b", "abcdefghij", None, "abc", "ab", "zz", "a"], pa.string()),  # null and "" tie, as in Paimon
    pa.array([3, -1, 0, None, -100, 100, 2], pa.int8()),
])
def test_zorder_of_one_column_is_its_value_order_nulls_first(values):
    table = pa.table({"v": values})
    got = table.take(pa.array(sort_indices(table, SortOrder("zorder", ("v",))))).column("v").to_pylist()
    non_null = sorted(v for v in values.to_pylist() if v is not None)
    assert got == [None] * values.null_count + non_null


def test_zorder_clusters_both_columns():
    """The rows of a z-ordered table cut into 64 runs: each run spans a small box of both columns."""
    rng = np.random.default_rng(3)
    n = 1 << 16
    table = pa.table({"x": rng.integers(0, 1 << 20, n), "y": rng.integers(0, 1 << 20, n)})
    idx = sort_indices(table, SortOrder("zorder", ("x", "y")))
    x = table.column("x").to_numpy()[idx].reshape(64, -1)
    y = table.column("y").to_numpy()[idx].reshape(64, -1)
    area = (x.max(axis=1) - x.min(axis=1)).astype(float) * (y.max(axis=1) - y.min(axis=1))
    assert np.median(area) < (1 << 40) / 8  # a random cut would span (almost) the whole square


def test_sort_order_refusals():
    names = ("a", "b", "p")
    with pytest.raises(InvalidArgumentError, match="order_strategy"):
        sort_order("sort", ["a"], names)
    with pytest.raises(NoSuchColumnError):
        sort_order("zorder", ["a", "c"], names)
    with pytest.raises(InvalidArgumentError, match="partition"):
        sort_order("order", ["p"], names, ("p",))
    with pytest.raises(InvalidArgumentError, match="two"):
        sort_order("hilbert", ["a"], names)
    with pytest.raises(InvalidArgumentError, match="twice"):
        sort_order("zorder", ["a", "a"], names)
    assert sort_order(" ZOrder ", [" a", "b "], names) == SortOrder("zorder", ("a", "b"))


def _xy(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"x": rng.integers(0, 10_000, n), "y": rng.integers(0, 10_000, n),
                     "s": pa.array(np.char.mod("%08d", rng.integers(0, 10**8, n)))})


def test_sorted_compaction_rewrites_every_file_and_prunes_by_both_columns(catalog):
    t = catalog.create_table("db.t", _xy(0, 0).schema, options={"bucket": "-1", "target-file-size": "32 kb"})
    parts = [_xy(20_000, seed) for seed in range(3)]
    for p in parts:
        t.write_arrow(p)
    t = t.refresh()
    where = P.and_(P.greater_or_equal("x", 2_000), P.less_than("x", 2_500),
                   P.greater_or_equal("y", 6_000), P.less_than("y", 6_500))
    before = t.to_arrow(filter=where).sort_by([("x", "ascending"), ("y", "ascending"), ("s", "ascending")])
    planned_before = sum(len(s.files) for s in t.new_scan().with_filter(where).plan().splits)
    result = t.compact(order_strategy="zorder", order_by=["x", "y"])
    t = t.refresh()
    assert t.latest_snapshot().id == result.last_snapshot_id
    assert t.latest_snapshot().commit_kind.name == "COMPACT"
    files = [f for s in t.new_scan().plan().splits for f in s.files]
    assert len(files) >= 12 and sum(f.row_count for f in files) == 60_000
    kept = sum(len(s.files) for s in t.new_scan().with_filter(where).plan().splits)
    assert kept * 3 <= len(files) and kept < planned_before
    after = t.to_arrow(filter=where).sort_by([("x", "ascending"), ("y", "ascending"), ("s", "ascending")])
    assert after.equals(before) and after.num_rows > 0
    assert t.to_arrow().num_rows == 60_000


def test_sorted_compaction_of_one_partition_with_deletion_vectors(catalog):
    schema = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("dt", pa.string())])
    t = catalog.create_table("db.dv", schema, partition_keys=["dt"],
                             options={"bucket": "-1", "deletion-vectors.enabled": "true"})
    for dt in ("a", "b"):
        for start in (0, 100):
            ids = np.arange(start, start + 100)
            t.write_arrow(pa.table({"id": ids, "k": (ids * 37) % 101, "dt": [dt] * 100}, schema=schema))
    t = t.refresh()
    snap = t.latest_snapshot()
    found = {}
    for f in dv_scan_files(t.store, snap):
        ids = pq.read_table(io.BytesIO(t.store.io.read_bytes(f.path)), columns=["id"]).column("id").to_numpy()
        found[f.name] = np.flatnonzero(ids % 3 == 0)
    commit = AppendDeletionCommit(t.store, snap)
    commit.delete(found)
    commit.commit()
    t = t.refresh()
    b_before = t.to_arrow(filter=P.equal("dt", "b")).column("id").to_pylist()
    t.compact(order_strategy="order", order_by=["k"], partitions=[{"dt": "a"}])
    t = t.refresh()
    a = t.to_arrow(filter=P.equal("dt", "a"))
    assert a.column("k").to_pylist() == sorted(a.column("k").to_pylist())
    assert sorted(a.column("id").to_pylist()) == [i for i in range(200) if i % 3]
    assert t.to_arrow(filter=P.equal("dt", "b")).column("id").to_pylist() == b_before
    splits = {s.partition_values[0]: s for s in t.new_scan().plan().splits}
    assert len(splits["a"].files) == 1 and not splits["a"].deletion_files
    assert splits["b"].deletion_files


def test_sorted_compaction_refuses_what_paimon_refuses(catalog):
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("tags", pa.list_(pa.string()))])
    rows = pa.table({"id": [1, 2], "v": [2, 1], "tags": [["a"], []]}, schema=schema)
    pk = catalog.create_table("db.pk", schema.remove(2), primary_keys=["id"], options={"bucket": "1"})
    pk.write_arrow(rows.drop(["tags"]))
    fixed = catalog.create_table("db.fixed", schema, options={"bucket": "2", "bucket-key": "id"})
    fixed.write_arrow(rows)
    plain = catalog.create_table("db.plain", schema, options={"bucket": "-1"})
    plain.write_arrow(rows)
    with pytest.raises(UnsupportedTableError, match="bucket = -1"):
        pk.refresh().compact(order_strategy="zorder", order_by=["v"])
    with pytest.raises(UnsupportedTableError, match="bucket = -1"):
        fixed.refresh().compact(order_strategy="order", order_by=["v"])
    with pytest.raises(InvalidArgumentError, match="type"):
        plain.refresh().compact(order_strategy="zorder", order_by=["tags", "v"])
    with pytest.raises(InvalidArgumentError, match="none"):
        plain.refresh().compact(order_by=["v"])
    for t in (pk, fixed, plain):
        assert t.refresh().latest_snapshot().id == 1


def test_sorted_compaction_refuses_a_table_with_incremental_clustering(catalog):
    """Paimon: 'The table has enabled incremental clustering, do not support sort compact.'"""
    t = catalog.create_table("db.ic", pa.schema([("a", pa.int64()), ("b", pa.int64())]),
                             options={"bucket": "-1", "clustering.columns": "a,b",
                                      "clustering.incremental": "true"})
    t.write_arrow(pa.table({"a": [2, 1], "b": [1, 2]}))
    with pytest.raises(InvalidArgumentError, match="incremental clustering"):
        t.refresh().compact(order_strategy="zorder", order_by=["a", "b"])
    assert t.refresh().latest_snapshot().id == 1
