"""Where a stream starts for each ``scan.mode``: Paimon's streaming starting scanners as its Spark
source applies them (PaimonSourceTest's scan-mode cases), read through ``StreamScan.start`` and
the changes the stream then delivers."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.builders.stream import ReadLimits, StreamPosition
from engine.errors import InvalidArgumentError

SCHEMA = pa.schema([pa.field("a", pa.int64(), nullable=False), ("b", pa.string())])


WRITE_ONLY = {"bucket": "1", "write-only": "true"}


def _rows(start):
    ids = [start, start + 1, start + 2]
    return pa.table({"a": ids, "b": [f"v_{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def table(catalog):
    # PaimonSourceTest's table: a primary key, two buckets, three commits of three rows.
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["a"], options={"bucket": "2"})
    for i in (10, 20, 30):
        t.write_arrow(_rows(i))
    return t


def _delivered(t, start: StreamPosition) -> list[int]:
    """The keys a stream from ``start`` delivers up to the latest snapshot (after-images)."""
    builder = t.new_read_builder()
    scan = builder.new_stream_scan()
    keys: list[int] = []
    if start.full is not None:
        full = builder.new_read(all_levels=True)
        for split in scan.full_splits(scan.snapshot(start.full)):
            for part in full.read(split):
                keys += part.column("a").to_pylist()
    read = builder.new_read()
    for split in scan.change_splits(start.delivered, scan.latest_id() or 0):
        for part in read.read(split):
            kinds = part.column("rowkind").to_pylist()
            keys += [k for k, kind in zip(part.column("a").to_pylist(), kinds, strict=True)
                     if kind in ("+I", "+U")]
    return sorted(keys)


def _data_snapshots(t):
    return [s for s in t.snapshots() if s.commit_kind.name == "APPEND"]


def test_latest_delivers_the_latest_snapshots_changes(table):
    scan = table.new_read_builder().new_stream_scan()
    start = scan.start("latest")
    assert start.full is None
    assert _delivered(table, start) == [30, 31, 32]


def test_latest_full_full_and_default_deliver_the_whole_latest_snapshot(table):
    scan = table.new_read_builder().new_stream_scan()
    for mode in ("latest-full", "full", "default"):
        start = scan.start(mode)
        assert start.full == scan.latest_id()
        assert _delivered(table, start) == [10, 11, 12, 20, 21, 22, 30, 31, 32]


def test_from_snapshot_delivers_that_snapshots_changes_and_full_its_content(table):
    scan = table.new_read_builder().new_stream_scan()
    third = _data_snapshots(table)[2].id
    assert _delivered(table, scan.start("from-snapshot", snapshot_id=third)) == [30, 31, 32]
    assert _delivered(table, scan.start("default", snapshot_id=third)) == [30, 31, 32]
    assert _delivered(table, scan.start("from-snapshot-full", snapshot_id=third)) == [
        10, 11, 12, 20, 21, 22, 30, 31, 32]
    # A snapshot not written yet: the stream waits for it (nothing now).
    assert _delivered(table, scan.start("from-snapshot", snapshot_id=(scan.latest_id() or 0) + 1)) == []


def test_from_snapshot_of_an_expired_snapshot_starts_at_the_earliest(table):
    table.maintenance.expire_snapshots(retain_max=1, older_than=2**62)
    scan = table.new_read_builder().new_stream_scan()
    earliest = scan.earliest_id()
    assert scan.start("from-snapshot", snapshot_id=1) == StreamPosition(earliest - 1)
    assert scan.start("from-snapshot-full", snapshot_id=1) == StreamPosition(earliest, earliest)


def test_from_timestamp_delivers_snapshots_at_or_after_it_and_everything_before_the_first(table):
    scan = table.new_read_builder().new_stream_scan()
    data = _data_snapshots(table)
    first = data[0]
    # Before the first snapshot: every change there is (Paimon reads everything, no failure).
    assert _delivered(table, scan.start("from-timestamp", timestamp_millis=first.time_millis - 60_000)) == [
        10, 11, 12, 20, 21, 22, 30, 31, 32]
    assert _delivered(table, scan.start("default", timestamp_millis=first.time_millis - 60_000)) == [
        10, 11, 12, 20, 21, 22, 30, 31, 32]
    # Exactly at a snapshot's time: that snapshot is included.
    at_third = scan.start("from-timestamp", timestamp_millis=data[2].time_millis)
    assert _delivered(table, at_third) == [30, 31, 32]
    # After the latest: only what comes next.
    latest = table.latest_snapshot()
    assert _delivered(table, scan.start("from-timestamp", timestamp_millis=latest.time_millis + 1)) == []


def test_compacted_full_starts_at_the_latest_compaction(catalog):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["a"], options=WRITE_ONLY)
    t.write_arrow(_rows(10))
    t.compact(full=True)
    compacted = t.latest_snapshot()
    assert compacted.commit_kind.name == "COMPACT"
    t.write_arrow(_rows(20))
    scan = t.new_read_builder().new_stream_scan()
    start = scan.start("compacted-full")
    assert start == StreamPosition(compacted.id, compacted.id)
    assert _delivered(t, start) == [10, 11, 12, 20, 21, 22]
    # No compaction yet: the latest snapshot.
    u = catalog.create_table("db.u", SCHEMA, primary_keys=["a"], options=WRITE_ONLY)
    u.write_arrow(_rows(10))
    assert u.new_read_builder().new_stream_scan().start("compacted-full") == StreamPosition(1, 1)


def test_every_mode_before_the_first_snapshot_delivers_from_snapshot_one(catalog):
    t = catalog.create_table("db.e", SCHEMA, primary_keys=["a"])
    scan = t.new_read_builder().new_stream_scan()
    for mode in ("default", "latest", "latest-full", "compacted-full"):
        assert scan.start(mode) == StreamPosition(0)
    assert scan.start("from-timestamp", timestamp_millis=1) == StreamPosition(0)
    t.write_arrow(_rows(10))
    assert _delivered(t, StreamPosition(0)) == [10, 11, 12]


def test_modes_a_stream_cannot_start_with_and_missing_options_are_refused(table):
    scan = table.new_read_builder().new_stream_scan()
    for mode in ("latest-delta", "incremental", "from-file-creation-time"):
        with pytest.raises(InvalidArgumentError, match="cannot start a stream"):
            scan.start(mode)
    with pytest.raises(InvalidArgumentError, match="scan.snapshot-id"):
        scan.start("from-snapshot")
    with pytest.raises(InvalidArgumentError, match="scan.timestamp"):
        scan.start("from-timestamp")


def _batches(t, start: StreamPosition, limits: ReadLimits) -> list[list[int]]:
    """The keys of each micro-batch a stream from ``start`` reads under ``limits`` (after-images)."""
    builder = t.new_read_builder()
    scan = builder.new_stream_scan()
    full_read, read = builder.new_read(all_levels=True), builder.new_read()
    out: list[list[int]] = []
    pos = start
    while True:
        end, rows = scan.advance(pos, scan.latest_id() or 0, limits)
        if end == pos:
            return out
        full, changes = scan.splits_between(pos, end)
        keys = [k for s in full for part in full_read.read(s) for k in part.column("a").to_pylist()]
        for s in changes:
            for part in read.read(s):
                kinds = part.column("rowkind").to_pylist()
                keys += [k for k, kind in zip(part.column("a").to_pylist(), kinds, strict=True)
                         if kind in ("+I", "+U")]
        assert rows == sum(f.row_count for s in [*full, *changes] for f in s.files)
        out.append(sorted(keys))
        pos = end


def test_max_files_per_trigger_cuts_a_snapshot_by_split(table):
    # PaimonSourceTest "Trigger AvailableNow + latest scan mode + maxFilesPerTrigger": two
    # buckets, so the latest snapshot's changes come in two batches.
    scan = table.new_read_builder().new_stream_scan()
    batches = _batches(table, scan.start("latest"), ReadLimits(max_files=1))
    assert len(batches) == 2
    assert sorted(k for b in batches for k in b) == [30, 31, 32]
    end, _ = scan.advance(scan.start("latest"), scan.latest_id() or 0, ReadLimits(max_files=1))
    assert end.split == 1 and end.full is None


def test_max_bytes_per_trigger_reads_one_split_per_batch_and_loses_nothing(catalog):
    # PaimonSourceTest "from-snapshot scan mode + maxBytesPerTrigger": an append table with two
    # buckets, one byte per trigger: one split per batch, every row once.
    t = catalog.create_table("db.b", SCHEMA, options={"bucket": "2", "bucket-key": "a"})
    for i in (10, 20, 30):
        t.write_arrow(_rows(i))
    scan = t.new_read_builder().new_stream_scan()
    splits = list(scan.change_splits(0, scan.latest_id() or 0))
    batches = _batches(t, scan.start("from-snapshot", snapshot_id=1), ReadLimits(max_bytes=1))
    assert len(batches) == len(splits)
    assert sorted(k for b in batches for k in b) == [10, 11, 12, 20, 21, 22, 30, 31, 32]


def test_max_rows_per_trigger_admits_while_below_the_limit(table):
    # PaimonSourceTest "default scan mode + maxRowsPerTrigger": 9 rows, limit 10: one batch.
    scan = table.new_read_builder().new_stream_scan()
    assert _batches(table, scan.start("default"), ReadLimits(max_rows=10)) == [
        [10, 11, 12, 20, 21, 22, 30, 31, 32]]
    # One row per trigger: one split per batch, inside the full content too, and nothing lost.
    batches = _batches(table, scan.start("default"), ReadLimits(max_rows=1))
    assert len(batches) == len(scan.full_splits(table.latest_snapshot()))
    assert sorted(k for b in batches for k in b) == [10, 11, 12, 20, 21, 22, 30, 31, 32]
