"""The streaming source as Paimon's Spark source behaves: PaimonSourceTest's scan-mode, trigger
and read-limit cases translated (same table, same writes, Paimon's expected rows and batch
counts), and ``t$audit_log`` streamed as AuditLogStreamingReadTest streams it."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from engine import open_catalog

SCHEMA = pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())])


@pytest.fixture
def catalog(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat


def _rows(start):
    ids = [start, start + 1, start + 2]
    return pa.table({"a": ids, "b": [f"v_{i}" for i in ids]}, schema=SCHEMA)


def _prepare(catalog, commits: int, has_pk: bool = True, name: str = "t"):
    """PaimonSourceTest.prepareTableAndGetLocation: two buckets, ``commits`` commits of three rows
    (10..12, 20..22, ...). Returns the table, all rows and the last commit's rows."""
    keys = {"primary_keys": ["a"]} if has_pk else {}
    options = {"bucket": "2"} if has_pk else {"bucket": "2", "bucket-key": "a"}
    t = catalog.create_table(f"db.{name}", SCHEMA, options=options, **keys)
    every: list[tuple[int, str]] = []
    last: list[tuple[int, str]] = []
    for i in range(1, commits + 1):
        t.write_arrow(_rows(10 * i))
        last = [(10 * i + j, f"v_{10 * i + j}") for j in range(3)]
        every += last
    return t, every, last


def _insert(t, start):
    t.write_arrow(_rows(start))
    return [(start + j, f"v_{start + j}") for j in range(3)]


class _Memory:
    """A stream into Spark's memory sink, and the rows it holds."""

    def __init__(self, spark, warehouse, tmp_path, name, trigger=None, table="db.t", **options):
        self.spark, self.name = spark, name
        reader = spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", table)
        writer = (reader.options(**options).load().writeStream.format("memory").queryName(name)
                  .option("checkpointLocation", str(tmp_path / f"ckpt-{name}")).outputMode("append"))
        if trigger is not None:
            writer = writer.trigger(**trigger)
        self.query = writer.start()

    def rows(self):
        self.query.processAllAvailable()
        return sorted(tuple(r) for r in self.spark.sql(f"SELECT * FROM {self.name}").collect())

    def batches_with_rows(self):
        return sum(1 for p in self.query.recentProgress if p["numInputRows"])

    def stop(self):
        self.query.stop()


@pytest.fixture
def streams():
    started: list[_Memory] = []
    yield started
    for s in started:
        s.stop()


def _start(streams, *args, **kwargs):
    s = _Memory(*args, **kwargs)
    streams.append(s)
    return s


def test_latest_and_latest_full(spark, warehouse, catalog, tmp_path, streams):
    t, every, last = _prepare(catalog, 3)
    full = _start(streams, spark, warehouse, tmp_path, "lf", **{"scan.mode": "latest-full"})
    latest = _start(streams, spark, warehouse, tmp_path, "l", **{"scan.mode": "latest"})
    assert full.rows() == sorted(every)
    assert latest.rows() == sorted(last)  # the latest snapshot's changes, not nothing
    new = _insert(t, 40)
    assert full.rows() == sorted(every + new)
    assert latest.rows() == sorted(last + new)


def test_default_scan_mode_reads_the_latest_snapshot_then_its_changes(
        spark, warehouse, catalog, tmp_path, streams):
    t, every, _ = _prepare(catalog, 3)
    s = _start(streams, spark, warehouse, tmp_path, "d")
    assert s.rows() == sorted(every)
    new = _insert(t, 40) + _insert(t, 50)
    assert s.rows() == sorted(every + new)


def test_from_snapshot_and_from_snapshot_full(spark, warehouse, catalog, tmp_path, streams):
    t, every, last = _prepare(catalog, 3)
    full = _start(streams, spark, warehouse, tmp_path, "fsf",
                  **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": "3"})
    delta = _start(streams, spark, warehouse, tmp_path, "fs",
                   **{"scan.mode": "from-snapshot", "scan.snapshot-id": "3"})
    default3 = _start(streams, spark, warehouse, tmp_path, "d3", **{"scan.snapshot-id": "3"})
    default4 = _start(streams, spark, warehouse, tmp_path, "d4", **{"scan.snapshot-id": "4"})
    assert full.rows() == sorted(every)
    assert delta.rows() == sorted(last)
    assert default3.rows() == sorted(last)
    assert default4.rows() == []  # snapshot 4 is the next commit
    new = _insert(t, 40)
    assert full.rows() == sorted(every + new)
    assert delta.rows() == sorted(last + new)
    assert default3.rows() == sorted(last + new)
    assert default4.rows() == sorted(new)


def test_from_timestamp_before_the_first_snapshot_reads_everything(
        spark, warehouse, catalog, tmp_path, streams):
    before = int(time.time() * 1000) - 1000
    t, every, _ = _prepare(catalog, 3)
    after = int(t.latest_snapshot().time_millis) + 1
    early = _start(streams, spark, warehouse, tmp_path, "ts1", **{"scan.timestamp-millis": str(before)})
    late = _start(streams, spark, warehouse, tmp_path, "ts2",
                  **{"scan.mode": "from-timestamp", "scan.timestamp-millis": str(after)})
    assert early.rows() == sorted(every)
    assert late.rows() == []
    new = _insert(t, 40)
    assert early.rows() == sorted(every + new)
    assert late.rows() == sorted(new)


def test_a_stream_from_a_timestamp_on_an_empty_table_waits_for_the_first_snapshot(
        spark, warehouse, catalog, tmp_path, streams):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["a"], options={"bucket": "2"})
    s = _start(streams, spark, warehouse, tmp_path, "empty",
               **{"scan.timestamp": "2020-01-01 00:00:00"})
    assert s.rows() == []
    assert s.rows() == []
    new = _insert(t, 10)
    assert s.rows() == sorted(new)


def test_trigger_available_now_reads_what_was_there_and_stops(spark, warehouse, catalog, tmp_path, streams):
    t, _, last = _prepare(catalog, 3)
    s = _start(streams, spark, warehouse, tmp_path, "an", trigger={"availableNow": True},
               **{"scan.mode": "latest"})
    s.query.awaitTermination(120)
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM an").collect()) == sorted(last)
    _insert(t, 40)
    assert not s.query.isActive
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM an").collect()) == sorted(last)


def test_available_now_with_max_files_per_trigger_reads_a_bucket_per_batch(
        spark, warehouse, catalog, tmp_path, streams):
    _prepare(catalog, 3)
    s = _start(streams, spark, warehouse, tmp_path, "anf", trigger={"availableNow": True},
               **{"scan.mode": "latest", "read.stream.maxFilesPerTrigger": "1"})
    s.query.awaitTermination(120)
    # 2 buckets: the latest snapshot's changes in two batches (Paimon's count).
    assert s.batches_with_rows() == 2
    assert sorted(r.a for r in spark.sql("SELECT * FROM anf").collect()) == [30, 31, 32]


def test_max_bytes_per_trigger_reads_one_split_per_batch(spark, warehouse, catalog, tmp_path, streams):
    t, every, _ = _prepare(catalog, 3, has_pk=False)
    scan = t.new_read_builder().new_stream_scan()
    splits = len(list(scan.change_splits(0, scan.latest_id() or 0)))
    s = _start(streams, spark, warehouse, tmp_path, "mb", **{
        "scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxBytesPerTrigger": "1"})
    assert s.rows() == sorted(every)
    assert s.batches_with_rows() == splits
    new = _insert(t, 40)
    assert s.rows() == sorted(every + new)


def test_max_rows_per_trigger_admits_the_whole_snapshot_under_the_limit(
        spark, warehouse, catalog, tmp_path, streams):
    _, every, _ = _prepare(catalog, 3)
    s = _start(streams, spark, warehouse, tmp_path, "mr", **{"read.stream.maxRowsPerTrigger": "10"})
    assert s.rows() == sorted(every)
    assert s.batches_with_rows() == 1


def test_min_rows_per_trigger_holds_a_small_batch_back(spark, warehouse, catalog, tmp_path, streams):
    t, every, _ = _prepare(catalog, 3)
    with pytest.raises(Exception, match="maxTriggerDelayMs"):
        bad = _start(streams, spark, warehouse, tmp_path, "mn0", **{"read.stream.minRowsPerTrigger": "10"})
        bad.query.processAllAvailable()
    s = _start(streams, spark, warehouse, tmp_path, "mn", **{
        "read.stream.minRowsPerTrigger": "5", "read.stream.maxTriggerDelayMs": "3600000"})
    assert s.rows() == sorted(every)  # the first batch is never held back
    _insert(t, 40)  # 3 rows < 5, and the hour has not passed: no batch
    assert s.rows() == sorted(every)
    assert s.batches_with_rows() == 1
    new = _insert(t, 50)  # 6 rows now
    assert len(s.rows()) == len(every) + 6 and set(new) <= set(s.rows())


def test_audit_log_streams_every_change_with_its_kind(spark, warehouse, catalog, tmp_path, streams):
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                        ("age", pa.int32())])
    t = catalog.create_table("db.p", schema, primary_keys=["id"], options={
        "bucket": "4", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
        "changelog-producer": "lookup"})
    s = _start(streams, spark, warehouse, tmp_path, "audit", table="db.p$audit_log")
    assert s.rows() == []  # the stream has started (on an empty table: from the first snapshot)

    def write(rows, kinds=None):
        data = pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows],
                         "age": [r[2] for r in rows]}, schema=schema)
        if kinds:
            data = data.append_column("rowkind", pa.array(kinds))
        t.write_arrow(data)

    write([(1, "a", None)])
    write([(2, "b", None)])
    write([(1, None, 16)])
    write([(1, None, None)], ["-D"])
    assert [tuple(r.values()) for r in t.refresh().to_arrow().to_pylist()] == [(2, "b", None)]
    assert sorted(s.rows(), key=str) == sorted([
        ("+I", 1, "a", None), ("+I", 2, "b", None), ("-U", 1, "a", None), ("+U", 1, "a", 16),
        ("-D", 1, "a", 16)], key=str)


def test_other_system_tables_cannot_be_streamed(spark, warehouse, catalog, tmp_path, streams):
    _prepare(catalog, 1)
    with pytest.raises(Exception, match="cannot be streamed"):
        s = _start(streams, spark, warehouse, tmp_path, "snaps", table="db.t$snapshots")
        s.query.processAllAvailable()


def _lookup_table(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["a"],
                             options={"bucket": "2", "changelog-producer": "lookup"})
    for a, b in [(1, "v_1"), (2, "v_2"), (2, "v_2_new")]:
        t.write_arrow(pa.table({"a": [a], "b": [b]}, schema=SCHEMA))
    return t


def _upsert(t):
    t.write_arrow(pa.table({"a": [1, 3], "b": ["v_1_new", "v_3"]}, schema=SCHEMA))


def test_cdc_default_scan_mode_reads_the_snapshot_then_its_changelog(
        spark, warehouse, catalog, tmp_path, streams):
    # PaimonCDCSourceTest "batch write and streaming read change-log with default scan mode".
    t = _lookup_table(catalog)
    s = _start(streams, spark, warehouse, tmp_path, "cdc", **{"read.changelog": "true"})
    assert s.rows() == sorted([("+I", 1, "v_1"), ("+I", 2, "v_2_new")])
    _upsert(t)
    assert s.rows() == sorted([("+I", 1, "v_1"), ("-U", 1, "v_1"), ("+U", 1, "v_1_new"),
                               ("+I", 2, "v_2_new"), ("+I", 3, "v_3")])


def test_cdc_from_snapshot_reads_every_change(spark, warehouse, catalog, tmp_path, streams):
    # PaimonCDCSourceTest "batch write and streaming read change-log with scan.snapshot-id".
    t = _lookup_table(catalog)
    s = _start(streams, spark, warehouse, tmp_path, "cdc1", **{
        "read.changelog": "true", "scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    first = [("+I", 1, "v_1"), ("+I", 2, "v_2"), ("-U", 2, "v_2"), ("+U", 2, "v_2_new")]
    assert s.rows() == sorted(first)
    _upsert(t)
    assert s.rows() == sorted(first + [("-U", 1, "v_1"), ("+U", 1, "v_1_new"), ("+I", 3, "v_3")])
