"""The Spark data source: batch and streaming reads and writes on the shared SparkSession."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from engine import CommitKind, open_catalog


@pytest.fixture
def catalog(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat


def reader(spark, warehouse, table, **options):
    return (
        spark.read.format("dyntable").option("warehouse", warehouse).option("table", table).options(**options)
    )


def writer(df, warehouse, table, mode="append", **options):
    return (
        df.write.format("dyntable")
        .option("warehouse", warehouse)
        .option("table", table)
        .options(**options)
        .mode(mode)
    )


def data_files(table):
    out = []
    for _root, _dirs, files in os.walk(table.path):
        out += [f for f in files if f.startswith("data-")]
    return out


def test_append_round_trip_projection_and_time_travel(spark, warehouse, catalog):
    catalog.create_table("db.a", pa.schema([("id", pa.int64()), ("s", pa.string()), ("dt", pa.string())]),
                         partition_keys=["dt"])
    df = spark.range(0, 1000, numPartitions=2).selectExpr(
        "id", "cast(id as string) s", "cast(id % 3 as string) dt"
    )
    writer(df, warehouse, "db.a").save()
    writer(df.filter("id < 10"), warehouse, "db.a").save()
    out = reader(spark, warehouse, "db.a").load()
    assert out.count() == 1010
    assert reader(spark, warehouse, "db.a", columns="s").load().columns == ["s"]
    assert reader(spark, warehouse, "db.a", **{"scan.snapshot-id": "1"}).load().count() == 1000
    # filters are answered exactly even when pushed down for pruning
    assert out.filter("dt = '1' AND id < 100").count() == 36  # 33 + ids 1, 4, 7 written twice
    assert out.filter("dt = '1'").count() + out.filter("dt <> '1'").count() == 1010


def test_overwrite_modes(spark, warehouse, catalog):
    catalog.create_table("db.o", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    writer(spark.createDataFrame([(1, "a"), (2, "b")], "id long, dt string"), warehouse, "db.o").save()
    writer(spark.createDataFrame([(3, "a")], "id long, dt string"), warehouse, "db.o", "overwrite",
           partitionOverwriteMode="dynamic").save()
    assert sorted(r.id for r in reader(spark, warehouse, "db.o").load().collect()) == [2, 3]
    writer(spark.createDataFrame([(4, "b")], "id long, dt string"), warehouse, "db.o", "overwrite",
           **{"overwrite-partition": '{"dt": "b"}'}).save()
    assert sorted(r.id for r in reader(spark, warehouse, "db.o").load().collect()) == [3, 4]
    writer(spark.createDataFrame([(5, "c")], "id long, dt string"), warehouse, "db.o", "overwrite").save()
    assert [r.id for r in reader(spark, warehouse, "db.o").load().collect()] == [5]


def test_primary_key_round_trip_across_tasks(spark, warehouse, catalog):
    catalog.create_table("db.pk", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                         options={"bucket": "3", "num-sorted-run.compaction-trigger": "3"})
    for round_ in range(4):
        df = spark.range(0, 300, numPartitions=3).selectExpr("id", f"'r{round_}' v")
        writer(df, warehouse, "db.pk").save()
    out = reader(spark, warehouse, "db.pk").load()
    assert out.count() == 300
    assert {r.v for r in out.select("v").distinct().collect()} == {"r3"}
    t = catalog.get_table("db.pk")
    assert any(s.commit_kind is CommitKind.COMPACT for s in t.snapshots())


def test_failed_job_publishes_nothing_and_leaves_no_files(spark, warehouse, catalog):
    t = catalog.create_table("db.f", pa.schema([("id", pa.int64())]))
    writer(spark.range(0, 10).selectExpr("id"), warehouse, "db.f").save()
    before_files = set(data_files(t))
    bad = spark.range(0, 1000, numPartitions=4).selectExpr(
        "CASE WHEN id = 900 THEN raise_error('boom') ELSE id END id"
    )
    with pytest.raises(Exception, match="boom"):
        writer(bad, warehouse, "db.f").save()
    # Spark aborts the job while sibling tasks may still be running: they find the abort marker
    # and delete their own files when they end. Wait for them to end, then look.
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 120
    while tracker.getActiveStageIds() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tracker.getActiveStageIds()
    assert len(t.snapshots()) == 1
    assert set(data_files(t)) == before_files
    assert reader(spark, warehouse, "db.f").load().count() == 10


def test_streaming_read_sees_new_commits_and_resumes_without_duplicates(spark, warehouse, catalog, tmp_path):
    t = catalog.create_table("db.s", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"])
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    sink = str(tmp_path / "sink")
    checkpoint = str(tmp_path / "ckpt")

    def run_once():
        q = (spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", "db.s")
             .option("read.changelog", "true").load()
             .writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
        q.awaitTermination(120)

    run_once()
    t.write_arrow(pa.table({"id": [2, 3], "v": ["B", "c"]}))
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "rowkind": ["-D"]}))
    run_once()
    run_once()  # nothing new: must not re-deliver anything
    rows = sorted((r.rowkind, r.id, r.v) for r in spark.read.parquet(sink).collect())
    assert rows == sorted([("+I", 1, "a"), ("+I", 2, "b"), ("+I", 2, "B"), ("+I", 3, "c"), ("-D", 1, "a")])


def test_streaming_latency_from_commit_to_visible_row(spark, warehouse, catalog):
    t = catalog.create_table("db.lat", pa.schema([("id", pa.int64())]))
    seen: list[float] = []
    q = (spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", "db.lat")
         .option("scan.mode", "latest").load()
         .writeStream.foreachBatch(lambda df, _id: seen.append(time.time()) if df.count() else None)
         .trigger(processingTime="200 milliseconds").start())
    try:
        # "latest" starts after the snapshot that is latest when the stream first plans: wait for
        # that first (empty) micro-batch instead of guessing how long a loaded machine needs.
        deadline = time.time() + 120
        while not q.recentProgress and time.time() < deadline:
            time.sleep(0.05)
        assert q.recentProgress, "the stream never started"
        committed = time.time()
        t.write_arrow(pa.table({"id": [1]}))
        deadline = time.time() + 60
        while not seen and time.time() < deadline:
            time.sleep(0.1)
    finally:
        q.stop()
    assert seen, "the committed row never reached the stream"
    latency = seen[0] - committed
    print(f"commit-to-visible latency: {latency:.2f} s (trigger 0.2 s)")
    assert latency < 30


def test_streaming_write_is_exactly_once_across_restarts(spark, warehouse, catalog, tmp_path):
    catalog.create_table("db.src", pa.schema([("id", pa.int64())]))
    catalog.create_table("db.dst", pa.schema([("id", pa.int64()), ("rowkind", pa.string())]))
    src = catalog.get_table("db.src")
    checkpoint = str(tmp_path / "ckpt2")

    def run_once():
        q = (
            spark.readStream.format("dyntable")
            .option("warehouse", warehouse)
            .option("table", "db.src")
            .option("scan.mode", "from-snapshot")
            .option("scan.snapshot-id", "1")
            .option("read.changelog", "true")
            .load()
            .writeStream.format("dyntable")
            .option("warehouse", warehouse)
            .option("table", "db.dst")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)

    src.write_arrow(pa.table({"id": [1, 2]}))
    run_once()
    src.write_arrow(pa.table({"id": [3]}))
    run_once()
    run_once()
    ids = sorted(r.id for r in reader(spark, warehouse, "db.dst").load().collect())
    assert ids == [1, 2, 3]


def test_distributed_compaction_commits_once(spark, warehouse, catalog):
    from sqlext.execute.compaction import compact_distributed

    t = catalog.create_table("db.c", pa.schema([("id", pa.int64()), ("v", pa.int64())]), primary_keys=["id"],
                             options={"bucket": "4", "write-only": "true"})
    for i in range(3):
        t.write_arrow(pa.table({"id": list(range(100)), "v": [i] * 100}))
    n_before = len(t.snapshots())
    result = compact_distributed(spark, t, full=True)
    assert len(result.snapshot_ids) == 1 and len(t.snapshots()) == n_before + 1
    assert t.latest_snapshot().commit_kind is CommitKind.COMPACT
    assert {r["v"] for r in t.to_arrow().to_pylist()} == {2}
    assert all(s.raw_convertible for s in t.plan().splits)
