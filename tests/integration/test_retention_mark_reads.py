"""The retention mark through the Spark source: streams starting at a snapshot, timestamp or tag
below the mark and incremental-between reads starting below it are refused; at the mark they
read; a branch's own mark is set by CALL sys.retention_mark on ``db.t$branch_b``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.history import retention_mark as rm


@pytest.fixture
def table(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         options={"retention.time": "1 h"})
    for i in range(5):
        t.write_arrow(pa.table({"id": [i], "v": [f"v{i}"]}))
    t.refs.tags.create("old", 1)
    rm.advance(t.store, 0, now_ms=t.store.snapshots.get(3).time_millis)
    t.mark = t.maintenance.retention_mark()
    assert t.mark.snapshot_id >= 3
    return t


def batch(spark, warehouse, **options):
    df = (
        spark.read.format("dyntable")
        .option("warehouse", warehouse)
        .option("table", "db.t")
        .options(**options)
    )
    return sorted(tuple(r) for r in df.load().collect())


def stream(spark, warehouse, tmp_path, name, **options):
    sink, checkpoint = str(tmp_path / f"sink-{name}"), str(tmp_path / f"ckpt-{name}")
    q = (spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", "db.t")
         .options(**options).load()
         .writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return sorted(tuple(r) for r in spark.read.parquet(sink).collect())


def test_reads_starting_below_the_mark_are_refused(spark, warehouse, table, tmp_path):
    mark, below = table.mark.snapshot_id, table.mark.snapshot_id - 1
    table.refs.tags.create("head", 5)
    for between in (f"{below},5", "old,head", "0,5"):
        with pytest.raises(Exception, match="retention mark") as err:
            batch(spark, warehouse, **{"incremental-between": between})
        assert f"snapshot {mark}" in str(err.value)
    if mark < 5:
        assert batch(spark, warehouse, **{"incremental-between": f"{mark},5"}) == [
            (i, f"v{i}") for i in range(mark, 5)]
    refused = [
        {"scan.mode": "from-snapshot", "scan.snapshot-id": str(below)},
        {"scan.mode": "from-snapshot-full", "scan.snapshot-id": str(below)},
        {"scan.mode": "from-timestamp",
         "scan.timestamp-millis": str(table.store.snapshots.get(1).time_millis)},
        {"scan.mode": "from-snapshot", "scan.tag-name": "old"},
    ]
    for i, options in enumerate(refused):
        with pytest.raises(Exception, match="retention mark"):
            stream(spark, warehouse, tmp_path, f"r{i}", **options)
    # At the mark the stream starts: the changes of the mark snapshot and after.
    rows = stream(
        spark, warehouse, tmp_path, "ok", **{"scan.mode": "from-snapshot", "scan.snapshot-id": str(mark)}
    )
    assert rows == [(i, f"v{i}") for i in range(mark - 1, 5)]


def test_call_retention_mark_on_a_branch(session, warehouse):
    def run(sql):
        result = list(session.execute(sql))[-1]
        return [tuple(r) for r in result.dataframe.collect()] if result.dataframe is not None else None

    run("CREATE TABLE bm (id INT, v STRING) TBLPROPERTIES ('retention.time' = '0 s')")
    run("INSERT INTO bm VALUES (1, 'a')")
    run("CALL sys.create_branch(`table` => 'bm', branch => 'b')")
    run("INSERT INTO `bm$branch_b` VALUES (2, 'b')")
    run("INSERT INTO `bm$branch_b` VALUES (3, 'c')")
    marked = run("CALL sys.retention_mark(table => 'bm$branch_b')")
    assert marked[0][0] == 2 and marked[0][3] is True
    assert run("CALL sys.retention_mark(table => 'bm')")[0][0] == 1  # main's own mark
    with pytest.raises(Exception, match="retention mark"):
        run("SELECT * FROM `bm$branch_b` VERSION AS OF 1")
