"""Streaming reads in steps: where a stream may start, and the splits of a range of snapshots.

``ReadBuilder.new_stream_scan()`` hands out a :class:`StreamScan` (driver side, picklable); the
splits it plans are read by ``ReadBuilder.new_read()`` in tasks like any other split. Positions
are snapshot ids: the stream layer (e.g. ``sqlext.source.stream``) keeps its own offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from engine.meta.snapshot import Snapshot
from engine.scan.incremental import ChangeSplit, change_splits
from engine.scan.planner import DataSplit, TableScan

if TYPE_CHECKING:
    from engine.builders.read import ReadBuilder


class StreamScan:
    """The snapshots of a branch as a stream sees them."""

    def __init__(self, builder: ReadBuilder) -> None:
        self.builder = builder
        self.store = builder.table.store

    def latest_id(self) -> int | None:
        return self.store.snapshots.latest_id()

    def earliest_id(self) -> int | None:
        return self.store.snapshots.earliest_id()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Raises NoSuchSnapshotError when it does not exist (any more)."""
        return self.store.snapshots.get(snapshot_id)

    def at_or_before(self, timestamp_millis: int) -> Snapshot | None:
        return self.store.snapshots.at_or_before(timestamp_millis)

    def tag_snapshot(self, tag: str) -> Snapshot:
        """The snapshot a tag holds (readable after the snapshot itself expired); NoSuchTagError."""
        from engine.meta.refs import TagStore

        return TagStore(self.store.io, self.store.paths).get(tag).snapshot

    def check_visible(self, snapshot: Snapshot | int | None, what: str) -> None:
        """Refuse a start position below the branch's retention mark (BehindRetentionMarkError)."""
        from engine.history.retention_mark import check_visible

        check_visible(self.store, snapshot, what)

    def full_splits(self, snapshot: Snapshot) -> tuple[DataSplit, ...]:
        """The splits of ``snapshot``'s whole content (a stream's first, full delivery)."""
        return TableScan(self.store).with_snapshot(snapshot).plan().splits

    def change_splits(self, start_exclusive: int, end_inclusive: int) -> Iterator[ChangeSplit]:
        """The changes of the snapshots ``start < id <= end`` that still exist, in commit order."""
        for snapshot in self.store.snapshots.iter_range(start_exclusive, end_inclusive):
            yield from change_splits(self.store, snapshot)
