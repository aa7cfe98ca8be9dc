"""Where a stream starts for each ``scan.mode``: Paimon's streaming starting scanners as its Spark
source applies them (PaimonSourceTest's scan-mode cases), read through ``StreamScan.start`` and
the changes the stream then delivers."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.builders.stream import StreamStart
from engine.errors import InvalidArgumentError

SCHEMA = pa.schema([pa.field("a", pa.int64(), nullable=False), ("b", pa.string())])


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


def _delivered(t, start: StreamStart) -> list[int]:
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
            keys += [k for k, kind in zip(part.column("a").to_pylist(), kinds, strict=True) if kind in ("+I", "+U")]
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
    assert scan.start("from-snapshot", snapshot_id=1) == StreamStart(earliest - 1)
    assert scan.start("from-snapshot-full", snapshot_id=1) == StreamStart(earliest, earliest)


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
    assert _delivered(table, scan.start("from-timestamp", timestamp_millis=data[2].time_millis)) == [30, 31, 32]
    # After the latest: only what comes next.
    latest = table.latest_snapshot()
    assert _delivered(table, scan.start("from-timestamp", timestamp_millis=latest.time_millis + 1)) == []


def test_compacted_full_starts_at_the_latest_compaction(catalog):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["a"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(_rows(10))
    t.compact(full=True)
    compacted = t.latest_snapshot()
    assert compacted.commit_kind.name == "COMPACT"
    t.write_arrow(_rows(20))
    scan = t.new_read_builder().new_stream_scan()
    start = scan.start("compacted-full")
    assert start == StreamStart(compacted.id, compacted.id)
    assert _delivered(t, start) == [10, 11, 12, 20, 21, 22]
    # No compaction yet: the latest snapshot.
    u = catalog.create_table("db.u", SCHEMA, primary_keys=["a"], options={"bucket": "1", "write-only": "true"})
    u.write_arrow(_rows(10))
    assert u.new_read_builder().new_stream_scan().start("compacted-full") == StreamStart(1, 1)


def test_every_mode_before_the_first_snapshot_delivers_from_snapshot_one(catalog):
    t = catalog.create_table("db.e", SCHEMA, primary_keys=["a"])
    scan = t.new_read_builder().new_stream_scan()
    for mode in ("default", "latest", "latest-full", "compacted-full"):
        assert scan.start(mode) == StreamStart(0)
    assert scan.start("from-timestamp", timestamp_millis=1) == StreamStart(0)
    t.write_arrow(_rows(10))
    assert _delivered(t, StreamStart(0)) == [10, 11, 12]


def test_modes_a_stream_cannot_start_with_and_missing_options_are_refused(table):
    scan = table.new_read_builder().new_stream_scan()
    for mode in ("latest-delta", "incremental", "from-file-creation-time"):
        with pytest.raises(InvalidArgumentError, match="cannot start a stream"):
            scan.start(mode)
    with pytest.raises(InvalidArgumentError, match="scan.snapshot-id"):
        scan.start("from-snapshot")
    with pytest.raises(InvalidArgumentError, match="scan.timestamp"):
        scan.start("from-timestamp")
