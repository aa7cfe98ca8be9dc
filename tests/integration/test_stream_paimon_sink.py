"""The streaming sink as Paimon's Spark sink behaves (PaimonSinkTest: append, complete mode,
``full-compaction.delta-commits``, source and sink), and exactly once where Paimon's is not
(apache/paimon#9666): a query stopped at any point of a micro-batch and restarted from its
checkpoint commits every row once.

The points of a batch are reproduced as the checkpoint and table a stop there leaves behind:
Spark logs a batch's offsets, the sink writes its files, the sink commits one snapshot, then Spark
logs the batch as done. Deleting the last log entries (and rolling the table back where the stop
came before the sink's commit) is that state exactly — no sleeps, no timing."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from engine import CommitKind, open_catalog

SRC = pa.schema([pa.field("id", pa.int64(), nullable=False), ("city", pa.string())])


@pytest.fixture
def catalog(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat


def _source(spark, warehouse, table="db.src", **options):
    return (spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", table)
            .options(**options).load())


def _sink(df, warehouse, table, checkpoint, mode="append", **options):
    return (df.writeStream.format("dyntable").option("warehouse", warehouse).option("table", table)
            .option("checkpointLocation", checkpoint).outputMode(mode).options(**options))


def _cities(src, pairs):
    src.write_arrow(pa.table({"id": [p[0] for p in pairs], "city": [p[1] for p in pairs]}, schema=SRC))


def test_complete_mode_replaces_the_table_each_batch(spark, warehouse, catalog, tmp_path):
    src = catalog.create_table("db.src", SRC)
    dst = catalog.create_table("db.dst", pa.schema([("city", pa.string()), ("population", pa.int64())]))
    counts = _source(spark, warehouse).groupBy("city").count().toDF("city", "population")
    q = _sink(counts, warehouse, "db.dst", str(tmp_path / "ckpt"), mode="complete").start()
    try:
        q.processAllAvailable()
        expected = [{"BJ": 2, "HZ": 1}, {"BJ": 3, "HZ": 2, "SH": 1}, {"BJ": 3, "HZ": 3, "SH": 2}]
        for batch, want in zip([[(1, "HZ"), (2, "BJ"), (3, "BJ")], [(4, "SH"), (5, "BJ"), (6, "HZ")],
                                [(7, "HZ"), (8, "SH")]], expected, strict=True):
            _cities(src, batch)
            q.processAllAvailable()
            rows = dst.refresh().to_arrow().to_pylist()
            assert sorted((r["city"], r["population"]) for r in rows) == sorted(want.items())
        assert dst.latest_snapshot().commit_kind is CommitKind.OVERWRITE
    finally:
        q.stop()


def test_full_compaction_delta_commits_in_a_streaming_write(spark, warehouse, catalog, tmp_path):
    schema = pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.int32())])
    src = catalog.create_table("db.src", schema)
    dst = catalog.create_table("db.dst", schema, primary_keys=["a"],
                               options={"bucket": "1", "full-compaction.delta-commits": "2"})
    kinds = []
    # One batch per write, batch ids 0..3 (the first write is there when the query starts).
    src.write_arrow(pa.table({"a": [1], "b": [1]}, schema=schema))
    q = _sink(_source(spark, warehouse), warehouse, "db.dst", str(tmp_path / "ckpt")).start()
    try:
        q.processAllAvailable()
        kinds.append(dst.refresh().latest_snapshot().commit_kind)
        for a, b in [(2, 1), (2, 2), (3, 1)]:
            src.write_arrow(pa.table({"a": [a], "b": [b]}, schema=schema))
            q.processAllAvailable()
            kinds.append(dst.refresh().latest_snapshot().commit_kind)
    finally:
        q.stop()
    assert kinds == [CommitKind.APPEND, CommitKind.COMPACT, CommitKind.APPEND, CommitKind.COMPACT]
    assert sorted((r["a"], r["b"]) for r in dst.to_arrow().to_pylist()) == [(1, 1), (2, 2), (3, 1)]


def test_source_and_sink_restart_ignores_the_start_option(spark, warehouse, catalog, tmp_path):
    # PaimonSourceTest "Paimon Source and Sink": scan.snapshot-id 3, then a restart from the checkpoint.
    src = catalog.create_table("db.src", SRC, options={"bucket": "2", "bucket-key": "id"})
    dst = catalog.create_table("db.dst", SRC)
    for i in (10, 20, 30):
        _cities(src, [(i + j, f"v_{i + j}") for j in range(3)])
    checkpoint = str(tmp_path / "ckpt")

    def run():
        q = _sink(_source(spark, warehouse, **{"scan.snapshot-id": "3"}), warehouse, "db.dst",
                  checkpoint).trigger(availableNow=True).start()
        q.awaitTermination(120)
        assert q.exception() is None

    run()
    assert sorted(r["id"] for r in dst.refresh().to_arrow().to_pylist()) == [30, 31, 32]
    _cities(src, [(40, "v_40"), (41, "v_41")])
    run()
    run()  # nothing new: nothing written
    assert sorted(r["id"] for r in dst.refresh().to_arrow().to_pylist()) == [30, 31, 32, 40, 41]


# -- exactly once across a stop anywhere in a batch ----------------------------------------------

def _drop_log_entry(checkpoint: str, log: str, batch: int) -> None:
    for name in (str(batch), f".{batch}.crc"):
        path = os.path.join(checkpoint, log, name)
        if os.path.exists(path):
            os.remove(path)


def _last_batch(checkpoint: str) -> int:
    return max(int(n) for n in os.listdir(os.path.join(checkpoint, "commits")) if n.isdigit())


def _files(root: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


@pytest.mark.parametrize("stop", ["before-offsets-logged", "before-sink-commit", "after-sink-commit"])
def test_a_batch_stopped_at_any_point_commits_each_row_once(spark, warehouse, catalog, tmp_path, stop):
    src = catalog.create_table("db.src", SRC)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("city", pa.string()), ("n", pa.int64())])
    # An aggregation table: a batch committed twice would double n, not only duplicate a row.
    dst = catalog.create_table("db.dst", schema, primary_keys=["id"],
                               options={"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    checkpoint = str(tmp_path / "ckpt")

    def run():
        df = _source(spark, warehouse, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
        q = _sink(df.selectExpr("id", "city", "1L AS n"), warehouse, "db.dst", checkpoint)
        q = q.trigger(availableNow=True).start()
        q.awaitTermination(120)
        assert q.exception() is None

    _cities(src, [(1, "a"), (2, "b")])
    run()
    _cities(src, [(3, "c"), (4, "d")])
    saved = str(tmp_path / "dst-before")
    shutil.copytree(dst.path, saved)  # the table as it was before the batch
    run()
    batch = _last_batch(checkpoint)
    # The state a stop at that point leaves. Spark has not logged the batch as done. Before the
    # sink's commit, the table is as it was, plus (after its tasks ran) the files it wrote.
    _drop_log_entry(checkpoint, "commits", batch)
    if stop != "after-sink-commit":
        written = [f for f in _files(dst.path) - _files(saved) if os.path.basename(f).startswith("data-")]
        assert written
        kept = str(tmp_path / "written")
        for f in written:
            os.makedirs(os.path.dirname(os.path.join(kept, f)), exist_ok=True)
            shutil.copy2(os.path.join(dst.path, f), os.path.join(kept, f))
        shutil.rmtree(dst.path)
        shutil.copytree(saved, dst.path)
        if stop == "before-sink-commit":  # the stopped attempt's files, never published
            shutil.copytree(kept, dst.path, dirs_exist_ok=True)
    if stop == "before-offsets-logged":  # the batch is planned again from the source
        _drop_log_entry(checkpoint, "offsets", batch)
    run()  # the restart runs batch `batch` again, with its original id
    rows = sorted((r["id"], r["n"]) for r in dst.refresh().to_arrow().to_pylist())
    assert rows == [(1, 1), (2, 1), (3, 1), (4, 1)]
    appends = [s for s in dst.snapshots() if s.commit_kind is CommitKind.APPEND]
    assert len(appends) == 2
    run()  # and a restart with nothing new writes nothing
    assert sorted((r["id"], r["n"]) for r in dst.refresh().to_arrow().to_pylist()) == rows


def test_a_checkpoint_started_afresh_is_a_new_writer(spark, warehouse, catalog, tmp_path):
    # Batch ids restart at 0 in a new checkpoint at the same place: they must not be mistaken for
    # the old query's batches (which would skip them: lost rows).
    src = catalog.create_table("db.src", SRC)
    dst = catalog.create_table("db.dst", SRC)
    checkpoint = str(tmp_path / "ckpt")

    def run():
        q = _sink(_source(spark, warehouse, **{"scan.mode": "latest"}), warehouse, "db.dst", checkpoint)
        q = q.trigger(availableNow=True).start()
        q.awaitTermination(120)
        assert q.exception() is None

    _cities(src, [(1, "a")])
    run()
    _cities(src, [(2, "b")])
    run()
    assert sorted(r["id"] for r in dst.refresh().to_arrow().to_pylist()) == [1, 2]
    shutil.rmtree(checkpoint)
    _cities(src, [(3, "c")])
    run()  # a new query: 'latest' delivers the latest snapshot's changes, as batch 0
    assert sorted(r["id"] for r in dst.refresh().to_arrow().to_pylist()) == [1, 2, 3]
