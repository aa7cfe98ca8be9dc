"""Tables after dyntable's sorted compaction (z-order, Hilbert, order), read by pypaimon and Java
Paimon 0.9: the rewritten files are ordinary Paimon data files, every snapshot reads the same rows
in every engine, Java's planner skips files by their statistics on both order columns, and Java
keeps writing and compacting the table."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engine import Table
from tests.compat.harness import PyPaimon
from tests.compat.java_oracle import JavaPaimon, arrow_rows

SCHEMA = pa.schema([("x", pa.int64()), ("y", pa.int64()), ("s", pa.string()), ("dt", pa.string())])


def _rows(n: int, seed: int, dt: str) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"x": rng.integers(0, 10_000, n), "y": rng.integers(0, 10_000, n),
                     "s": pa.array(np.char.mod("%06d", rng.integers(0, 10**6, n))), "dt": [dt] * n},
                    schema=SCHEMA)


def _build(catalog) -> Table:
    t = catalog.create_table("db.sorted", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "-1", "target-file-size": "32 kb"})
    for seed in range(3):
        t.write_arrow(_rows(8_000, seed, "a"))
    t.write_arrow(_rows(2_000, 9, "b"))
    t = t.refresh()
    t.compact(order_strategy="zorder", order_by=["x", "y"], partitions=[{"dt": "a"}])
    t.refresh().compact(order_strategy="hilbert", order_by=["y", "x"], partitions=[{"dt": "b"}])
    t.refresh().compact(order_strategy="order", order_by=["s"], partitions=[{"dt": "b"}])
    return t.refresh()


def test_pypaimon_reads_every_snapshot_after_sorted_compactions(pypaimon: PyPaimon, catalog, warehouse):
    t = _build(catalog)
    for snap in t.snapshots():
        assert arrow_rows(pypaimon.read(warehouse, "db.sorted", snapshot_id=snap.id)) == \
            arrow_rows(t.to_arrow(snapshot_id=snap.id)), snap.id


@pytest.mark.java
def test_java_reads_prunes_writes_and_compacts_after_a_zorder_compaction(java: JavaPaimon, catalog):
    t = _build(catalog)
    assert java.read("db.sorted") == arrow_rows(t.to_arrow())
    files_a = [f for s in t.new_scan().plan().splits if s.partition_values[0] == "a" for f in s.files]
    assert len(files_a) >= 5
    # Java skips files by dyntable's statistics: an equality on x reads only the files whose x range
    # holds it, far fewer rows than the partition.
    x = int(t.to_arrow().column("x")[0].as_py())
    _, rows = java.read_full("db.sorted", filter={"column": "x", "op": "eq", "values": [x]})
    assert any(r[0] == x for r in rows) and len(rows) < 24_000 // 2
    java.write("db.sorted", [(1, 2, "java", "a")])
    java.compact("db.sorted", full=True)
    t = t.refresh()
    assert java.read("db.sorted") == arrow_rows(t.to_arrow())
    assert t.to_arrow().num_rows == 26_001


def _clustered(catalog) -> Table:
    """An incrementally clustered table: files at level 0, at a middle level and at the max level."""
    t = catalog.create_table("db.clustered", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "-1", "clustering.columns": "x,y",
                                      "clustering.incremental": "true",
                                      "num-sorted-run.compaction-trigger": "2", "target-file-size": "32 kb"})
    for seed in range(3):
        t.write_arrow(_rows(4_000, seed, "a"))
    t.refresh().compact(full=False)
    for seed in range(3, 5):
        t.write_arrow(_rows(500, seed, "a"))
    t.refresh().compact(full=False)
    t.write_arrow(_rows(300, 7, "a"))
    t = t.refresh()
    assert len({f.level for s in t.new_scan().plan().splits for f in s.files}) >= 2
    return t


def test_pypaimon_reads_an_incrementally_clustered_table(pypaimon: PyPaimon, catalog, warehouse):
    t = _clustered(catalog)
    for snap in t.snapshots():
        assert arrow_rows(pypaimon.read(warehouse, "db.clustered", snapshot_id=snap.id)) == \
            arrow_rows(t.to_arrow(snapshot_id=snap.id)), snap.id


@pytest.mark.java
def test_java_reads_and_appends_to_an_incrementally_clustered_table(java: JavaPaimon, catalog):
    t = _clustered(catalog)
    assert java.read("db.clustered") == arrow_rows(t.to_arrow())
    java.write("db.clustered", [(1, 2, "java", "a")])
    t = t.refresh()
    t.compact(full=True)
    t = t.refresh()
    assert java.read("db.clustered") == arrow_rows(t.to_arrow())
    assert t.to_arrow().num_rows == 3 * 4_000 + 2 * 500 + 300 + 1
