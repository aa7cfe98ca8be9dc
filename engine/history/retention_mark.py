"""The retention mark: the oldest snapshot of a table branch that any read may still see.

One job: read, advance and enforce the mark of Databend's retention proposal, in a file store.

Layout: ``<branch root>/.dyntable/retention-mark/mark-<N>`` (JSON), one file per version
N = 1, 2, …; the highest N present is the mark. For the main branch the branch root is the table
root; a branch ``b`` keeps its own mark under ``branch/branch-b/`` (its snapshot ids and commit
times are its own, so main's mark cannot be compared with them; the mark goes away with the
branch directory when the branch is deleted). Paimon readers never look under ``.dyntable/``.

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
* Everything that names a snapshot of history checks it (:func:`check_visible`) and refuses a
  snapshot below the mark with :class:`~engine.errors.BehindRetentionMarkError` naming the mark:
  time travel by snapshot id, tag or timestamp (``engine.scan.planner.resolve_time_travel``),
  the start of an ``incremental-between`` read (``engine.scan.incremental.resolve_between``) and
  of a stream (``scan.snapshot-id`` / ``scan.timestamp-millis`` / ``scan.tag-name``), rollback to
  a snapshot, tag or timestamp (``engine.ops.rollback``), and creating or replacing a tag or
  creating a branch from a snapshot or tag (``engine.ops.tags``, ``engine.ops.branches``). The
  rule is always "the snapshot the request names must be at or above the mark"; a start before
  the first snapshot (incremental start ``0``, a timestamp older than every snapshot) names
  history below any mark. Snapshot expiration keeps every snapshot at or above the mark
  (``engine.ops.expire_snapshots``).
* A stream that resumes from its checkpoint or its consumer position is not checked again: it
  was started legitimately, and only expiration (not the mark) can take its snapshots away.
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
from engine.meta.publish import publish_ref
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
    """The mark directory under a branch root (for main: the table root)."""
    return join(root.rstrip("/"), MARK_DIR)


def mark_root(store: FileStore) -> str:
    """The directory whose mark applies to ``store``'s branch: its branch root."""
    return store.paths.branch_root


def store_mark(store: FileStore) -> RetentionMark | None:
    """The mark in force on ``store``'s branch (see :func:`read_mark`)."""
    return read_mark(store.io, mark_root(store))


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
            nor ``table_retention_time``.
    """
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
    io, root = store.io, mark_root(store)
    for _ in range(_MAX_ATTEMPTS):
        current = read_mark(io, root)
        if target is None or (current is not None and current.snapshot_id >= target.id):
            return MarkResult(current, False, target)
        version = 1 if current is None else current.version + 1
        mark = RetentionMark(version, target.id, target.time_millis, now, retention_ms)
        if publish_ref(io, join(mark_dir(root), f"mark-{version}"), mark.to_json()):
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


def check_visible(store: FileStore, snapshot: Snapshot | int | None, what: str) -> None:
    """Refuse a request that names ``snapshot`` when it lies below the branch's retention mark.

    ``what`` is the request, for the message (``"time travel to tag 'daily'"``,
    ``"roll back to snapshot 3"``); ``snapshot`` a snapshot or its id (one that may have
    expired). None or id 0 means "before the first snapshot", which lies below any mark. The
    latest snapshot is always visible.

    Raises:
        BehindRetentionMarkError: naming the request, the snapshot and the mark.
    """
    sid = snapshot.id if isinstance(snapshot, Snapshot) else snapshot or None
    mark = store_mark(store)
    if mark is None or (sid is not None and sid >= mark.snapshot_id):
        return
    if sid is not None:
        latest = store.snapshots.latest_id()
        if latest is not None and sid == latest:
            return
        named = f"snapshot {sid} lies"
    else:
        named = "it lies before the first snapshot,"
    root = store.paths.root
    where = root if store.branch == MAIN_BRANCH else f"branch '{store.branch}' of {root}"
    raise BehindRetentionMarkError(
        f"cannot {what}: {named} behind the retention mark of {where} at {mark}; that history is no "
        "longer visible — name a snapshot at or after the mark"
    )


__all__ = [
    "MARK_DIR",
    "MarkResult",
    "RetentionMark",
    "advance",
    "check_visible",
    "mark_root",
    "read_mark",
    "retention_millis",
    "store_mark",
]
