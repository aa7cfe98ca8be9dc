"""The retention mark: the oldest snapshot of a table that time travel may still see.

One job: read, advance and enforce the per-table mark of Databend's retention proposal, in a
file store.

Layout: ``<table>/.dyntable/retention-mark/mark-<N>`` (JSON), one file per version N = 1, 2, …;
the highest N present is the mark. Paimon readers never look under ``.dyntable/``.

Rules:

* **Only increases, across processes.** A marker reads the newest version N, and publishes its
  new mark as ``mark-<N+1>`` with create-if-absent (``FileIO.try_create``; conditional put on
  S3). Losing that race means another marker published N+1 first: it re-reads and publishes
  only if its target is still newer. So every version names a snapshot newer than the version
  before it, and the highest version is the newest mark ever published.
* **A snapshot's time, never the marker's clock.** The mark is the newest snapshot committed at
  or before ``now − retention.time`` (alias ``table_retention_time``): its id and *commit time*
  are recorded. A marker whose clock runs ahead can at worst mark the newest snapshot that
  exists, never a time in the future, so history written after the mark stays visible once
  clocks agree again (the proposal's mitigation).
* **The current snapshot is always visible**: time travel to the latest snapshot is allowed even
  if it lies below the mark (it cannot, except after a rollback rewound history).
* Time travel (snapshot id, tag, timestamp) to a snapshot below the mark raises
  :class:`~engine.errors.BehindRetentionMarkError` naming the mark (:func:`check_visible`,
  called by ``engine.scan.planner.resolve_time_travel``). Snapshot expiration keeps every
  snapshot at or above the mark (``engine.ops.expire_snapshots``).
* The mark belongs to the table's main branch (snapshot ids of other branches are not
  comparable with it); time travel on other branches is not checked.
* Old versions beyond the newest :data:`KEEP_VERSIONS` are pruned after a publish; never the
  newest.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from engine.errors import BehindRetentionMarkError, CorruptMetadataError, InvalidArgumentError
from engine.identifier import MAIN_BRANCH
from engine.io import FileIO
from engine.meta.paths import join, parse_versioned_id
from engine.meta.snapshot import Snapshot
from engine.options import RETENTION_TIME, TABLE_RETENTION_TIME
from engine.store import FileStore

MARK_DIR = ".dyntable/retention-mark"
KEEP_VERSIONS = 10
_MAX_ATTEMPTS = 100

_logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RetentionMark:
    """One published mark: time travel below ``snapshot_id`` is refused."""

    version: int
    snapshot_id: int
    commit_time_ms: int  # the marked snapshot's commit time (never the marker's clock)
    marked_at_ms: int  # when it was published (the marker's clock; informative only)
    retention_ms: int

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": self.version,
                "snapshotId": self.snapshot_id,
                "commitTimeMillis": self.commit_time_ms,
                "markedAtMillis": self.marked_at_ms,
                "retentionMillis": self.retention_ms,
            },
            sort_keys=True,
        ).encode()

    @staticmethod
    def from_json(raw: bytes, path: str) -> RetentionMark:
        try:
            d = json.loads(raw)
            return RetentionMark(
                int(d["version"]),
                int(d["snapshotId"]),
                int(d["commitTimeMillis"]),
                int(d["markedAtMillis"]),
                int(d["retentionMillis"]),
            )
        except (ValueError, TypeError, KeyError) as e:
            raise CorruptMetadataError(
                f"retention mark file {path} is corrupt ({e}); restore or delete it"
            ) from e

    def __str__(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.commit_time_ms / 1000))
        return f"snapshot {self.snapshot_id} (committed {when} UTC, mark version {self.version})"


@dataclass(frozen=True, slots=True)
class MarkResult:
    """What advancing did: the mark now in force, and whether this call moved it."""

    mark: RetentionMark | None
    advanced: bool
    target: Snapshot | None  # the snapshot the retention pointed at (None: nothing old enough)


def mark_dir(root: str) -> str:
    return join(root.rstrip("/"), MARK_DIR)


def _versions(io: FileIO, root: str) -> list[tuple[int, str]]:
    out = []
    for status in io.list_dir(mark_dir(root)):
        n = parse_versioned_id(status.path.rstrip("/").rsplit("/", 1)[-1], "mark-")
        if n is not None and not status.is_dir:
            out.append((n, status.path))
    return sorted(out)


def read_mark(io: FileIO, root: str) -> RetentionMark | None:
    """The mark in force (the highest version), or None if the table was never marked.

    Raises:
        CorruptMetadataError: the newest version cannot be parsed (it is never skipped: an older
            version would move the mark backwards).
    """
    for _ in range(_MAX_ATTEMPTS):
        versions = _versions(io, root)
        if not versions:
            return None
        n, path = versions[-1]
        try:
            return RetentionMark.from_json(io.read_bytes(path), path)
        except FileNotFoundError:
            continue  # pruned between listing and reading: a newer version exists; list again
    raise CorruptMetadataError(f"the retention mark under {mark_dir(root)} keeps disappearing while read")


def retention_millis(store: FileStore) -> int | None:
    """``retention.time``, else its alias ``table_retention_time`` (milliseconds), else None."""
    options = store.options
    value = options.get(RETENTION_TIME)
    return value if value is not None else options.get(TABLE_RETENTION_TIME)


def advance(store: FileStore, retention_ms: int | None = None, *, now_ms: int | None = None) -> MarkResult:
    """Move the mark to the newest snapshot committed at or before ``now − retention`` if that is
    newer than the mark in force; never backwards (see the module docstring).

    Raises:
        InvalidArgumentError: no retention is given and the table sets neither ``retention.time``
            nor ``table_retention_time``; or this is not the main branch.
    """
    if store.branch != MAIN_BRANCH:
        raise InvalidArgumentError(
            "the retention mark belongs to the table's main branch; call it on the table"
        )
    if retention_ms is None:
        retention_ms = retention_millis(store)
    if retention_ms is None:
        raise InvalidArgumentError(
            f"table {store.paths.root} has no retention: set the table option 'retention.time' (e.g. '7 d') "
            "or pass a retention"
        )
    if retention_ms < 0:
        raise InvalidArgumentError(f"retention must not be negative, not {retention_ms} ms")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    target = store.snapshots.at_or_before(now - retention_ms)
    io, root = store.io, store.paths.root
    for _ in range(_MAX_ATTEMPTS):
        current = read_mark(io, root)
        if target is None or (current is not None and current.snapshot_id >= target.id):
            return MarkResult(current, False, target)
        version = 1 if current is None else current.version + 1
        mark = RetentionMark(version, target.id, target.time_millis, now, retention_ms)
        if io.try_create(join(mark_dir(root), f"mark-{version}"), mark.to_json()):
            _prune(io, root, version)
            return MarkResult(mark, True, target)
        # Another marker published this version first: re-read, and publish only if still newer.
    raise CorruptMetadataError(
        f"could not publish a retention mark under {mark_dir(root)}: "
        f"{_MAX_ATTEMPTS} concurrent markers won in a row"
    )


def _prune(io: FileIO, root: str, newest: int) -> None:
    try:
        for n, path in _versions(io, root):
            if n <= newest - KEEP_VERSIONS:
                io.delete(path)
    except OSError:  # old versions only cost a listing entry
        _logger.warning("could not prune old retention mark versions of %s", root, exc_info=True)


def check_visible(store: FileStore, snapshot: Snapshot, what: str) -> None:
    """Refuse time travel to ``snapshot`` when it lies below the table's retention mark.

    ``what`` describes the request for the message (``"snapshot 3"``, ``"tag 'daily'"``).
    The latest snapshot is always visible; branches other than main are not checked.
    """
    if store.branch != MAIN_BRANCH:
        return
    mark = read_mark(store.io, store.paths.root)
    if mark is None or snapshot.id >= mark.snapshot_id:
        return
    latest = store.snapshots.latest_id()
    if latest is not None and snapshot.id == latest:
        return
    raise BehindRetentionMarkError(
        f"{what} is snapshot {snapshot.id}, which lies behind the retention mark of {store.paths.root} "
        f"at {mark}: that history is no longer visible; read a snapshot at or after the mark"
    )


__all__ = [
    "MARK_DIR",
    "MarkResult",
    "RetentionMark",
    "advance",
    "check_visible",
    "read_mark",
    "retention_millis",
]
