"""Streaming reads in steps: where a stream may start, and the splits of a range of snapshots.

``ReadBuilder.new_stream_scan()`` hands out a :class:`StreamScan` (driver side, picklable); the
splits it plans are read by ``ReadBuilder.new_read()`` in tasks like any other split. Positions
are snapshot ids: the stream layer (e.g. ``sqlext.source.stream``) keeps its own offsets.

Where a stream starts (:meth:`StreamScan.start`) follows Paimon's streaming starting scanners as
its Spark source applies them (``StartingContext``: a snapshot and whether its whole content comes
first), so each ``scan.mode``'s first batch is Paimon's:

=========================  =========================================================================
``scan.mode``              first delivery
=========================  =========================================================================
``latest-full`` / ``full``  the latest snapshot's whole content, then the changes after it
/ ``default``
``latest``                 the latest snapshot's own changes, then the changes after it
``from-snapshot``          the changes of snapshot ``scan.snapshot-id`` (the earliest one if it has
                           expired) and after
``from-snapshot-full``     that snapshot's whole content, then the changes after it
``from-timestamp``         the changes of every snapshot committed at or after the timestamp
                           (``default`` with ``scan.timestamp-millis`` / ``scan.timestamp`` too); a
                           timestamp before the first snapshot reads every change there is
``compacted-full``         the whole content of the latest COMPACT snapshot (of a full compaction,
                           ``full-compaction.delta-commits``), else of the latest, then its changes
=========================  =========================================================================

Before the first snapshot every mode waits for it and delivers every change from snapshot 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.errors import InvalidArgumentError
from engine.meta.snapshot import CommitKind, Snapshot
from engine.scan.incremental import ChangeSplit, change_splits
from engine.scan.planner import DataSplit, TableScan

if TYPE_CHECKING:
    from engine.store import FileStore


#: The ``scan.mode`` values a stream can start with (``full`` is Paimon's old name of ``latest-full``).
STREAM_START_MODES = (
    "default", "latest-full", "full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp",
    "compacted-full",
)
FULL_COMPACTED_IDENTIFIER = 2**63 - 1  # a batch commit's identifier: a full compaction by any count


@dataclass(frozen=True)
class StreamPosition:
    """How far a stream has read: every change of the snapshots up to ``delivered``; with
    ``full`` that snapshot's whole content is still to come first (``full == delivered``); and
    ``split`` splits of the next unit — the full content, else snapshot ``delivered + 1`` — are
    delivered already (a batch cut by a read limit ends inside a snapshot, as Paimon's do)."""

    delivered: int
    full: int | None = None
    split: int = 0


@dataclass(frozen=True)
class ReadLimits:
    """Paimon's Spark read limits per micro-batch (``read.stream.maxFilesPerTrigger``, ...).

    As Paimon admits them: split by split in stream order, while every count so far is below its
    limit, so a batch takes at least one split and may pass a row or byte limit by its last one;
    a "file" is a split (one bucket's files of one snapshot). ``min_rows`` (with a trigger delay,
    applied by the caller) only reports whether the batch reached it.
    """

    max_files: int | None = None
    max_bytes: int | None = None
    max_rows: int | None = None

    @property
    def unlimited(self) -> bool:
        return self.max_files is None and self.max_bytes is None and self.max_rows is None


class _Admission:
    def __init__(self, limits: ReadLimits) -> None:
        self.limits = limits
        self.files = self.bytes = self.rows = 0

    def admit(self, split: DataSplit | ChangeSplit) -> bool:
        lim = self.limits
        if ((lim.max_files is not None and self.files >= lim.max_files)
                or (lim.max_bytes is not None and self.bytes >= lim.max_bytes)
                or (lim.max_rows is not None and self.rows >= lim.max_rows)):
            return False
        self.files += 1
        self.bytes += sum(f.file_size for f in split.files)
        self.rows += sum(f.row_count for f in split.files)
        return True


class StreamScan:
    """The snapshots of ``store``'s branch as a stream sees them."""

    def __init__(self, store: FileStore) -> None:
        self.store = store

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

    def start(
        self,
        mode: str,
        *,
        snapshot_id: int | None = None,
        timestamp_millis: int | None = None,
        full_compaction_delta_commits: int | None = None,
    ) -> StreamPosition:
        """Where a stream with ``scan.mode = mode`` starts now (the table above).

        ``default`` becomes ``from-timestamp`` with a timestamp, ``from-snapshot`` with a snapshot
        id, else ``latest-full``. Raises InvalidArgumentError for a mode without its option or a
        mode a stream cannot start with (``latest-delta``, ``incremental``, ...).
        """
        if mode == "default":
            mode = ("from-timestamp" if timestamp_millis is not None
                    else "from-snapshot" if snapshot_id is not None else "latest-full")
        if mode not in STREAM_START_MODES:
            # Paimon's words first for the incremental mode: users search for them.
            lead = "Cannot read incremental in streaming mode: " if mode == "incremental" else ""
            raise InvalidArgumentError(
                f"{lead}scan.mode '{mode}' cannot start a stream; use one of {', '.join(STREAM_START_MODES)}")
        latest = self.latest_id()
        earliest = self.earliest_id()
        if mode in ("from-snapshot", "from-snapshot-full"):
            if snapshot_id is None:
                raise InvalidArgumentError(f"scan.mode {mode} needs the option scan.snapshot-id")
            # Paimon starts at the earliest snapshot when the one named has expired.
            sid = max(snapshot_id, earliest or 1)
            return StreamPosition(sid, sid) if mode == "from-snapshot-full" else StreamPosition(sid - 1)
        if mode == "from-timestamp":
            if timestamp_millis is None:
                raise InvalidArgumentError(
                    "scan.mode from-timestamp needs the option scan.timestamp-millis or scan.timestamp")
            # The changes of the snapshots committed at or after the timestamp: start after the
            # newest one strictly before it, else before the earliest (every change there is).
            before = self.store.snapshots.at_or_before(timestamp_millis - 1)
            if before is not None:
                return StreamPosition(before.id)
            return StreamPosition((earliest or 1) - 1)
        if latest is None:
            return StreamPosition(0)  # waits for the first snapshot and delivers its changes
        if mode == "latest":
            return StreamPosition(latest - 1)
        if mode == "compacted-full":
            picked = self._latest_compacted(latest, earliest or latest, full_compaction_delta_commits)
            return StreamPosition(picked, picked)
        return StreamPosition(latest, latest)  # latest-full / full

    def _latest_compacted(self, latest: int, earliest: int, delta_commits: int | None) -> int:
        """The newest COMPACT snapshot (with ``delta_commits``: of a full compaction, whose
        identifier is a multiple of it or a batch commit's), else the latest snapshot."""
        for sid in range(latest, earliest - 1, -1):
            if not self.store.snapshots.exists(sid):
                continue
            snap = self.store.snapshots.get(sid)
            if snap.commit_kind is not CommitKind.COMPACT:
                continue
            ident = snap.commit_identifier
            if delta_commits is None or ident == FULL_COMPACTED_IDENTIFIER or ident % delta_commits == 0:
                return sid
        return latest

    def advance(
        self, start: StreamPosition, end_snapshot: int, limits: ReadLimits,
        full_snapshot: Snapshot | None = None,
    ) -> tuple[StreamPosition, int]:
        """The position after the splits from ``start`` up to snapshot ``end_snapshot`` that
        ``limits`` admit, and their row count (``start`` and 0: nothing to read). ``full_snapshot``:
        the snapshot of ``start.full`` when the caller holds it (e.g. read from a tag)."""
        guard = _Admission(limits)
        pos = start
        if start.full is not None:
            content = self.full_splits(full_snapshot or self.snapshot(start.full))
            for i in range(start.split, len(content)):
                if not guard.admit(content[i]):
                    return StreamPosition(start.full, start.full, i), guard.rows
            pos = StreamPosition(start.full)
        first, skip = pos.delivered + 1, pos.split
        for snapshot in self.store.snapshots.iter_range(pos.delivered, end_snapshot):
            splits = change_splits(self.store, snapshot)
            for i in range(skip if snapshot.id == first else 0, len(splits)):
                if not guard.admit(splits[i]):
                    return StreamPosition(snapshot.id - 1, None, i), guard.rows
        return StreamPosition(max(end_snapshot, pos.delivered)), guard.rows

    def splits_between(
        self, start: StreamPosition, end: StreamPosition, full_snapshot: Snapshot | None = None
    ) -> tuple[list[DataSplit], list[ChangeSplit]]:
        """The full-content splits and the change splits a stream reads from ``start`` to ``end``
        (positions of :meth:`advance` or :meth:`start`), in stream order."""
        full: list[DataSplit] = []
        first, skip = start.delivered, start.split
        if start.full is not None:
            content = self.full_splits(full_snapshot or self.snapshot(start.full))
            inside = end.full == start.full  # the batch ends inside the full content
            full = list(content[start.split:end.split if inside else len(content)])
            if inside:
                return full, []
            first, skip = start.full, 0
        last = end.delivered + (1 if end.split else 0)
        changes: list[ChangeSplit] = []
        for snapshot in self.store.snapshots.iter_range(first, last):
            splits = change_splits(self.store, snapshot)
            lo = skip if snapshot.id == first + 1 else 0
            hi = end.split if end.split and snapshot.id == end.delivered + 1 else len(splits)
            changes.extend(splits[lo:hi])
        return full, changes

    def full_splits(self, snapshot: Snapshot) -> tuple[DataSplit, ...]:
        """The splits of ``snapshot``'s whole content (a stream's first, full delivery)."""
        return TableScan(self.store).with_snapshot(snapshot).plan().splits

    def change_splits(self, start_exclusive: int, end_inclusive: int) -> Iterator[ChangeSplit]:
        """The changes of the snapshots ``start < id <= end`` that still exist, in commit order."""
        for snapshot in self.store.snapshots.iter_range(start_exclusive, end_inclusive):
            yield from change_splits(self.store, snapshot)
