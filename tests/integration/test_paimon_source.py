"""Paimon 2.0's PaimonSourceTest (paimon-spark-ut) translated: the cases not already in
test_stream_paimon_source.py (which has the scan modes, AvailableNow and the read limits), with
Paimon's table (``prepareTableAndGetLocation``: ``T (a INT, b STRING)``, two buckets, commits of
three rows 10.., 20.., ...), its inputs and its expected rows; format ``dyntable`` for ``paimon``.

Paimon's ``Trigger ProcessingTime 5s`` case sleeps six seconds and expects both commits read; here
the trigger is one second and the wait is ``processAllAvailable`` (no sleep, same rows)."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from engine import open_catalog
from tests.integration.test_stream_paimon_source import SCHEMA, _insert, _prepare, _start


@pytest.fixture
def catalog(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat


@pytest.fixture
def streams():
    started: list = []
    yield started
    for s in started:
        s.stop()


def _memory(spark, warehouse, tmp_path, name, **options):
    """A stream of ``db.t`` (with ``options``) into Spark's memory sink ``name``, not started."""
    return (spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", "db.t")
            .options(**options).load().writeStream.format("memory").queryName(name)
            .option("checkpointLocation", str(tmp_path / name)).outputMode("append"))


def sql(session, text):
    frame = list(session.execute(text))[-1].dataframe
    return sorted(tuple(r) for r in frame.collect()) if frame is not None else None


def test_equal_null_safe(session):
    sql(session, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key' = 'a', 'bucket' = '2')")
    sql(session, "INSERT INTO T VALUES (1, CAST(null as string)), (2, CAST(null as string))")
    current = "SELECT * FROM T WHERE !(b <=> 'v_1')"
    assert sql(session, current) == [(1, None), (2, None)]
    sql(session, "INSERT INTO T VALUES (3, 'v_1'), (4, CAST(null as string))")
    assert sql(session, current) == [(1, None), (2, None), (4, None)]
    assert sql(session, "SELECT * FROM T WHERE b <=> 'v_1'") == [(3, "v_1")]
    assert sql(session, "SELECT * FROM T WHERE b <=> null") == [(1, None), (2, None), (4, None)]


@pytest.mark.xfail(strict=True, reason=(
    "spark.readStream.format('dyntable').table('test_tbl') resolves the name in Spark's session "
    "catalog, which has no dyntable tables (dyntable plugs no Spark catalog in; a stream names its "
    "table with .option('warehouse', ...).option('table', ...)); a platform limit, "
    "docs/compatibility.md"))
def test_default_scan_mode_with_table_api(spark, warehouse, catalog, tmp_path):
    t, every, _ = _prepare(catalog, 3, name="test_tbl")
    query = (spark.readStream.format("dyntable").option("warehouse", warehouse).table("db.test_tbl")
             .writeStream.format("memory").queryName("mem_table_api")
             .option("checkpointLocation", str(tmp_path / "ckpt")).outputMode("append").start())
    try:
        query.processAllAvailable()
        got = spark.sql("SELECT * FROM mem_table_api").collect
        assert sorted(tuple(r) for r in got()) == sorted(every)
        new = _insert(t, 40) + _insert(t, 50)
        query.processAllAvailable()
        assert sorted(tuple(r) for r in got()) == sorted(every + new)
    finally:
        query.stop()


def test_from_snapshot_with_max_rows_min_rows_and_max_trigger_delay(
        spark, warehouse, catalog, tmp_path, streams):
    t, _, _ = _prepare(catalog, 0, has_pk=False)
    s = _start(streams, spark, warehouse, tmp_path, "mm", **{
        "scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxRowsPerTrigger": "6",
        "read.stream.minRowsPerTrigger": "4", "read.stream.maxTriggerDelayMs": "5000"})
    _insert(t, 10)
    s.rows()
    # The first batch is always triggered under a minimum-rows limit.
    assert s.batches_with_rows() == 1
    _insert(t, 20)
    s.rows()
    assert s.batches_with_rows() == 1
    assert s.query.lastProgress["numInputRows"] == 3
    ids = list(range(30, 40))
    t.write_arrow(pa.table({"a": ids, "b": [f"v_{i}" for i in ids]}, schema=SCHEMA))
    s.rows()
    # the rest can trigger a batch; then every row is consumed
    assert s.batches_with_rows() == 3
    assert sum(p["numInputRows"] for p in s.query.recentProgress) == 16


def test_trigger_processing_time(spark, warehouse, catalog, tmp_path, streams):
    t, _, last = _prepare(catalog, 3)
    s = _start(streams, spark, warehouse, tmp_path, "pt", trigger={"processingTime": "1 second"},
               **{"scan.mode": "latest"})
    s.rows()
    new = _insert(t, 40) + _insert(t, 50)
    deadline = time.monotonic() + 60
    while s.rows() != sorted(last + new) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert s.rows() == sorted(last + new)


def test_with_error_options(spark, warehouse, catalog, tmp_path):
    _prepare(catalog, 3)
    with pytest.raises(Exception) as info:  # noqa: B017 (Paimon: IllegalArgumentException)
        q = _memory(spark, warehouse, tmp_path, "mem_err", **{
            "scan.snapshot-id": "3", "scan.timestamp-millis": str(int(time.time() * 1000))}
        ).trigger(processingTime="5 seconds").start()
        try:
            q.processAllAvailable()
        finally:
            q.stop()
    # Paimon asserts an IllegalArgumentException; dyntable's is its typed InvalidArgumentError.
    assert "InvalidArgumentError" in str(info.value), str(info.value)


def test_incremental_scan_mode_is_refused_in_streaming(spark, warehouse, catalog, tmp_path):
    _prepare(catalog, 3)
    q = _memory(spark, warehouse, tmp_path, "mem_inc",
                **{"scan.mode": "incremental", "incremental-between": "3,5"}).start()
    try:
        with pytest.raises(Exception) as info:  # noqa: B017 (Paimon: any Exception, by its message)
            q.processAllAvailable()
    finally:
        q.stop()
    assert "Cannot read incremental in streaming mode" in str(info.value), str(info.value)
