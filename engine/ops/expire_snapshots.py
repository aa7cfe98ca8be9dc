"""Snapshot expiration: drop the oldest snapshots the retention options let go, and exactly the
files nothing else needs.

One job: decide which snapshots of a branch expire (:func:`judge_snapshots`), then remove their
metadata and every file only they referenced (:func:`expire_snapshots`).

Which snapshots (Paimon's rules, ``data-cleanup.txt``, plus the references it left as TODOs):

* never the newest ``snapshot.num-retained.min`` (≥ 1, so never the latest); always those beyond
  the newest ``snapshot.num-retained.max``; in between, those committed before ``now −
  snapshot.time-retained`` (or an explicit ``older_than``);
* the expired ids form one continuous range ``[earliest, end)``: the first snapshot that must
  stay ends it (a young snapshot keeps every newer one);
* at most ``snapshot.expire.limit`` per run; never a snapshot a consumer still needs (its
  ``nextSnapshot`` and later; consumers idle beyond ``consumer.expiration-time`` no longer count);
  never a snapshot at or above the retention mark (``engine.history.retention_mark``).

Which files: the candidates are every file the expired snapshots reference
(``engine.ops.reachability``: manifest lists, manifests, data, extra, changelog, index and
statistics files); a candidate is deleted only if no remaining anchor of any branch (snapshot,
tag, long-lived changelog) references it. This is the document's operation-order rule, made
exact: a file ADDed then DELETEd inside the range is referenced by no survivor and goes; a file
DELETEd then ADDed again is live in the range's end and stays; the manifests of the range end
are the end snapshot's own and stay.

Order (crash safety, ``docs/design/architecture.md`` §7): (1) read every anchor, the candidates and the
keep set (the survivors' files) — an unreadable file raises ``UnsafeToDeleteError`` naming it,
with nothing changed; a file removed meanwhile by a concurrent, legitimate operation re-runs this
step (``reachability.retry_concurrent``, bounded); (2) write the long-lived changelogs that
outlive their snapshots (``engine.ops.expire_changelog``); (3) delete the snapshot files oldest
first; (4) read the consumers again and re-create the snapshot files a consumer recorded
meanwhile needs, then rewrite EARLIEST; (5) list the anchors again and add the files of any
created or re-pointed meanwhile (a tag created or replaced, a branch, a commit: compared by the
snapshot they name, ``reachability.anchor_identity``) to the keep set; (6) delete the unreferenced
candidates in parallel (``delete-file.thread-num``), data first and metadata last; (7) remove
partition and bucket directories left empty.

Fences with reference writers (``engine.meta.publish.publish_ref``): a tag or consumer is written
first and then checks that its snapshot file still exists; this run deletes snapshot files (3)
before it re-reads references (4, 5) and deletes data files (6). So either the writer's check
fails (and it removes its own reference) or this run sees the reference and keeps its files.

A crash at any step leaves every remaining snapshot, tag and branch readable; its leftovers are
only orphans. The document deletes data before snapshot files; doing it after means a crash
never leaves a snapshot naming deleted files.

Empty directories: removed with a non-recursive delete (never a file), unless the table sets
``snapshot.clean-empty-directories = false`` explicitly. On local disk a writer
that created the directory and is about to open its file may then fail its write (it never
loses committed data; the write is retried).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.errors import DyntableError, InvalidArgumentError
from engine.features import check_readable
from engine.history.retention_mark import RetentionMark, mark_dir, mark_root, read_mark
from engine.iceberg import run_after_commit as iceberg_metadata
from engine.identifier import MAIN_BRANCH
from engine.meta.publish import publish_ref
from engine.meta.snapshot import Snapshot
from engine.ops.expiry_files import (
    cleans_empty_directories,
    live_consumers,
    parallel_delete,
    remove_empty_dirs,
    thread_count,
)
from engine.ops.maintenance_log import last_record
from engine.ops.reachability import (
    Anchor,
    DeletionReport,
    FileKindRef,
    ReachabilityCollector,
    Reachable,
    UnsafeToDeleteError,
    all_anchors,
    keep_with_new_anchors,
    retry_concurrent,
    unreferenced,
)
from engine.options import (
    SNAPSHOT_EXPIRE_EXECUTION_MODE,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
)
from engine.store import FileStore
from engine.time_bound import TimeBoundLike, time_bound_millis

OlderThan = TimeBoundLike | None

_logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Policy


@dataclass(frozen=True, slots=True)
class ExpirePolicy:
    """The effective retention of one run (table options, overridden by call arguments)."""

    retain_min: int
    retain_max: int
    older_than_ms: int  # snapshots committed before this may expire
    max_deletes: int
    time_retained_ms: int | None  # None when an explicit older_than replaced the option

    @staticmethod
    def of(
        store: FileStore,
        *,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than: OlderThan = None,
        max_deletes: int | None = None,
        now_ms: int | None = None,
    ) -> ExpirePolicy:
        o = store.options
        rmin = (
            int(o.get(SNAPSHOT_NUM_RETAINED_MIN))
            if retain_min is None
            else _positive("retain_min", retain_min)
        )
        rmax = (
            int(o.get(SNAPSHOT_NUM_RETAINED_MAX))
            if retain_max is None
            else _positive("retain_max", retain_max)
        )
        limit = (
            int(o.get(SNAPSHOT_EXPIRE_LIMIT))
            if max_deletes is None
            else _positive("max_deletes", max_deletes)
        )
        if rmax < rmin:
            if retain_max is not None and retain_min is not None:
                raise InvalidArgumentError(f"retain_max ({rmax}) must be at least retain_min ({rmin})")
            # One bound given explicitly wins over the table's other bound.
            rmin, rmax = (rmax, rmax) if retain_max is not None else (rmin, rmin)
        now = _now_ms() if now_ms is None else now_ms
        if older_than is None:
            retained = int(o.get(SNAPSHOT_TIME_RETAINED))
            return ExpirePolicy(rmin, rmax, now - retained, limit, retained)
        return ExpirePolicy(rmin, rmax, older_than_millis(older_than, now), limit, None)


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive integer, not {value!r}")
    return value


def _now_ms() -> int:
    return int(time.time() * 1000)


def older_than_millis(value: OlderThan, now_ms: int | None = None) -> int:
    """Epoch milliseconds of ``older_than``: any form of ``engine.time_bound`` (an age counts back
    from ``now_ms``)."""
    return time_bound_millis(value, "older_than", now_ms=now_ms)


# ---------------------------------------------------------------------------------------------
# Which snapshots


@dataclass(frozen=True, slots=True)
class SnapshotVerdict:
    """Whether one snapshot expires now; if not, why (``reasons``) and from when it could
    (``collectable_at_ms``: None while a reference or a count holds it)."""

    snapshot_id: int
    expires: bool
    reasons: tuple[str, ...]
    collectable_at_ms: int | None


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def judge_snapshots(
    snapshots: Sequence[Snapshot],
    policy: ExpirePolicy,
    consumers: dict[str, int],
    mark: RetentionMark | None,
) -> list[SnapshotVerdict]:
    """One verdict per snapshot (ascending ids of one branch); the expiring ones are a prefix."""
    if not snapshots:
        return []
    earliest, latest = snapshots[0].id, snapshots[-1].id
    keep_from_max = max(latest - policy.retain_max + 1, earliest)  # older than this always expire
    end = latest - policy.retain_min + 1
    caps: list[tuple[int, str]] = [
        (
            earliest + policy.max_deletes,
            f"snapshot.expire.limit = {policy.max_deletes} (a later run continues)",
        )
    ]
    for cid, nxt in sorted(consumers.items()):
        caps.append((nxt, f"consumer '{cid}' (next snapshot {nxt})"))
    if mark is not None:
        caps.append((mark.snapshot_id, f"retention mark at {mark}"))
    for cap, _ in caps:
        end = min(end, cap)
    young_from: int | None = None
    for s in snapshots:
        if keep_from_max <= s.id < end and s.time_millis >= policy.older_than_ms:
            young_from = s.id
            end = s.id
            break
    out = []
    for s in snapshots:
        if s.id < end:
            out.append(SnapshotVerdict(s.id, True, (), None))
            continue
        reasons: list[str] = []
        held = False  # held by a count or a reference: no time makes it collectable
        if s.id == latest:
            reasons.append("latest snapshot")
            held = True
        elif s.id > latest - policy.retain_min:
            reasons.append(f"snapshot.num-retained.min = {policy.retain_min}")
            held = True
        for cap, why in caps:
            if s.id >= cap and not why.startswith("snapshot.expire.limit"):
                reasons.append(why)
                held = True
        collectable = None
        if s.id >= keep_from_max and s.time_millis >= policy.older_than_ms:
            if policy.time_retained_ms is not None:
                collectable = s.time_millis + policy.time_retained_ms
                reasons.append(f"snapshot.time-retained until {_iso(collectable)}")
            else:
                reasons.append("committed after older_than")
        elif young_from is not None and s.id > young_from:
            reasons.append(
                f"a snapshot before it (snapshot {young_from}) is retained: expiration is a continuous range"
            )
        if not reasons and s.id >= caps[0][0]:
            reasons.append(caps[0][1])
        out.append(SnapshotVerdict(s.id, False, tuple(reasons), None if held else collectable))
    return out


# ---------------------------------------------------------------------------------------------
# Running


@dataclass(frozen=True, slots=True)
class Kept:
    """Something expiration keeps, and why (dry runs and the explain table)."""

    kind: str  # "snapshot" or a FileKindRef value
    name: str  # a snapshot id or a file path
    reason: str


@dataclass(frozen=True)
class ExpireReport:
    """What an expiration did (or, with ``dry_run``, would do)."""

    snapshots: tuple[int, ...]
    files: DeletionReport
    changelogs_written: tuple[int, ...] = ()
    changelogs_expired: tuple[int, ...] = ()
    directories: tuple[str, ...] = ()
    kept: tuple[Kept, ...] = ()  # only for dry runs
    dry_run: bool = False

    @property
    def deleted_snapshots_count(self) -> int:
        return len(self.snapshots)

    @property
    def bytes(self) -> int:
        return self.files.bytes

    @property
    def count(self) -> int:
        return self.files.count


def describe_anchors(anchors: Iterable[Anchor]) -> str:
    """``snapshots 3-5; tag t1; changelog 2 of branch b`` (snapshot ids folded into ranges)."""
    ids: dict[tuple[str, str], list[int]] = {}
    others: list[str] = []
    for a in anchors:
        if a.kind in ("snapshot", "changelog"):
            ids.setdefault((a.kind, a.branch), []).append(int(a.name))
        else:
            others.append(str(a))
    parts = []
    for (kind, branch), values in ids.items():
        values = sorted(set(values))
        runs, start = [], values[0]
        for prev, cur in zip(values, [*values[1:], None], strict=True):
            if cur != prev + 1 if cur is not None else True:
                runs.append(f"{start}" if start == prev else f"{start}-{prev}")
                if cur is not None:
                    start = cur
        plural = "s" if len(values) > 1 else ""
        where = "" if branch == MAIN_BRANCH else f" of branch {branch}"
        parts.append(f"{kind}{plural} {','.join(runs)}{where}")
    return "; ".join(parts + sorted(set(others)))


def expire_snapshots(
    store: FileStore,
    *,
    retain_max: int | None = None,
    retain_min: int | None = None,
    older_than: OlderThan = None,
    max_deletes: int | None = None,
    dry_run: bool = False,
    now_ms: int | None = None,
) -> ExpireReport:
    """Expire the branch's oldest snapshots and the files only they referenced (module docstring).

    Raises:
        UnsafeToDeleteError: an anchor, consumer, retention mark or manifest that the decision
            depends on cannot be read (the error names the file); no data file was deleted.
        InvalidArgumentError: a bad argument (nothing was read or changed).
    """
    from engine.ops import expire_changelog

    # A table with a feature dyntable cannot read may reference files in ways it cannot see.
    check_readable(store.schema, store.paths.root, "expire snapshots of")
    now = _now_ms() if now_ms is None else now_ms
    policy = ExpirePolicy.of(
        store,
        retain_max=retain_max,
        retain_min=retain_min,
        older_than=older_than,
        max_deletes=max_deletes,
        now_ms=now,
    )
    io, root = store.io, store.paths.root
    collector = ReachabilityCollector(io, root)
    decoupled = expire_changelog.decoupled(store)
    # (1) Everything read before anything changes; re-read from the start (bounded) when a
    # concurrent expiration or deletion removed a file while it was read.
    p = retry_concurrent(lambda: _plan(store, collector, policy, now, decoupled, dry_run))
    if p is None:
        changelogs = expire_changelog.expire_changelogs(store, now_ms=now)
        return ExpireReport((), changelogs.files, (), changelogs.changelogs, changelogs.directories)
    going, expiring, new_changelogs = p.going, p.expiring, p.new_changelogs
    candidates, keep = p.candidates, p.keep
    if dry_run:
        doomed = unreferenced(candidates, keep)
        kept = [
            Kept("snapshot", str(v.snapshot_id), "; ".join(v.reasons)) for v in p.verdicts if not v.expires
        ]
        assert keep.reasons is not None
        kept += [
            Kept(ref.kind.value, path, describe_anchors(keep.reasons.get(path, ())))
            for path, ref in sorted(candidates.files.items())
            if path in keep.files
        ]
        files = parallel_delete(io, doomed, thread_count(store), dry_run=True)
        changelog_dry = expire_changelog.expire_changelogs(store, now_ms=now, dry_run=True)
        return ExpireReport(
            tuple(sorted(expiring)),
            files,
            tuple(int(a.name) for a in new_changelogs),
            changelog_dry.changelogs,
            kept=tuple(kept),
            dry_run=True,
        )
    if new_changelogs:
        expire_changelog.write_changelogs(store, [a.snapshot for a in going])
    # (3) The snapshot files go, oldest first (the rest stays continuous).
    snapshots = store.snapshots
    for a in sorted(going, key=lambda a: a.snapshot.id):
        io.delete(store.paths.snapshot_file(a.snapshot.id))
        snapshots.forget(a.snapshot.id)
    # (4) Read the references again, now that the snapshots are gone: a consumer recorded
    # meanwhile gets the snapshots it needs back (this run deleted them; their files are all still
    # here), and an anchor created or re-pointed meanwhile (a tag, a branch, a commit) keeps its
    # files. Creators check their snapshot after publishing (engine.meta.publish.publish_ref), so one
    # of the two sides always sees the other.
    restored = _restore_for_consumers(store, going, now)
    expired = sorted(int(a.name) for a in going if int(a.name) not in restored)
    survivors = [int(a.name) for a in p.mine if int(a.name) not in expiring or int(a.name) in restored]
    _write_earliest(store, min(survivors))
    keep = retry_concurrent(
        lambda: keep_with_new_anchors(collector, keep, p.keep_anchors, all_anchors(io, root))
    )
    # Iceberg metadata (metadata.iceberg.storage) drops the expired snapshots before their files go.
    iceberg_metadata(store)  # never raises
    # (5) Files no anchor needs, data first.
    doomed = unreferenced(candidates, keep)
    files = parallel_delete(io, doomed, thread_count(store))
    dirs = (
        remove_empty_dirs(io, root, files.paths(FileKindRef.DATA) + files.paths(FileKindRef.CHANGELOG))
        if cleans_empty_directories(store)
        else []
    )
    changelogs = expire_changelog.expire_changelogs(store, now_ms=now)
    merged = DeletionReport(files.files + changelogs.files.files)
    return ExpireReport(
        tuple(expired),
        merged,
        tuple(int(a.name) for a in new_changelogs),
        changelogs.changelogs,
        tuple(dirs) + changelogs.directories,
    )


@dataclass
class _Plan:
    mine: list[Anchor]
    verdicts: list[SnapshotVerdict]
    expiring: set[int]
    going: list[Anchor]
    new_changelogs: list[Anchor]
    keep_anchors: list[Anchor]
    candidates: Reachable
    keep: Reachable


def _plan(
    store: FileStore,
    collector: ReachabilityCollector,
    policy: ExpirePolicy,
    now: int,
    decoupled: bool,
    dry_run: bool,
) -> _Plan | None:
    """Which snapshots expire, their files and the survivors' files (None: nothing expires)."""
    io, root, branch = store.io, store.paths.root, store.branch
    anchors = all_anchors(io, root)  # fail closed: every anchor of every branch must be readable
    mine = [a for a in anchors if a.kind == "snapshot" and a.branch == branch]
    consumers = live_consumers(store, now)
    mark = _mark(store)
    verdicts = judge_snapshots([a.snapshot for a in mine], policy, consumers, mark)
    expiring = {v.snapshot_id for v in verdicts if v.expires}
    going = [a for a in mine if int(a.name) in expiring]
    candidates = collector.collect(going)
    new_changelogs = [Anchor("changelog", branch, a.name, a.snapshot) for a in going] if decoupled else []
    if not going and not dry_run:
        return None
    # Fail closed before anything changes: every survivor's manifests must be readable.
    leaving = set(going)
    keep_anchors = [a for a in anchors if a not in leaving] + new_changelogs
    keep = collector.collect(keep_anchors, explain=dry_run)
    return _Plan(mine, verdicts, expiring, going, new_changelogs, keep_anchors, candidates, keep)


def _restore_for_consumers(store: FileStore, going: Sequence[Anchor], now: int) -> set[int]:
    """Re-create the snapshot files this run deleted that a consumer recorded meanwhile needs
    (newest first, so the history stays continuous); their ids."""
    if not going:
        return set()
    needed = min(live_consumers(store, now).values(), default=None)
    if needed is None:
        return set()
    restored: set[int] = set()
    for a in sorted(going, key=lambda a: -a.snapshot.id):
        if a.snapshot.id < needed:
            break
        # Put back as it was (create-if-absent): the snapshot keeps its id, time and content.
        publish_ref(store.io, store.paths.snapshot_file(a.snapshot.id), a.snapshot.to_json().encode())
        restored.add(a.snapshot.id)
    if restored:
        _logger.info("snapshots %s of %s kept: a consumer started reading them while they expired",
                     sorted(restored), store.paths.root)
    return restored


def _write_earliest(store: FileStore, snapshot_id: int) -> None:
    """The EARLIEST hint, through the one reference writer; advisory (readers verify it), so a
    failed write only costs a listing later."""
    try:
        publish_ref(store.io, store.paths.earliest_hint, str(snapshot_id).encode(), replace=True)
    except OSError:
        _logger.warning("could not write the EARLIEST hint of %s", store.paths.root, exc_info=True)


def _mark(store: FileStore) -> RetentionMark | None:
    """The mark of the branch being expired (each branch has its own).

    Fails closed when the mark is lost: the maintenance log records every mark set
    (``retention_mark`` runs); a mark file that is missing, or older than the newest mark the log
    records, refuses the expiration instead of expiring the snapshots the lost mark kept.
    """
    where = mark_dir(mark_root(store))
    try:
        mark = read_mark(store.io, mark_root(store))
        recorded = last_record(store.io, store.paths.root, "retention_mark", store.branch)
    except (DyntableError, OSError) as e:
        raise UnsafeToDeleteError(
            f"cannot read the retention mark under {where} ({e}); it may "
            "protect snapshots, so nothing was deleted",
            where,
        ) from e
    logged = None if recorded is None else recorded.details.get("snapshot_id")
    if isinstance(logged, int) and (mark is None or mark.snapshot_id < logged):
        found = "is missing" if mark is None else f"is at snapshot {mark.snapshot_id}"
        raise UnsafeToDeleteError(
            f"the retention mark under {where} {found}, but the maintenance log records a mark at "
            f"snapshot {logged}: the mark was lost, and the snapshots it protected would be expired, "
            "so nothing was deleted. Restore the mark file, or set the mark again "
            "(table.maintenance.advance_retention_mark / CALL sys.retention_mark).",
            where,
        )
    return mark


__all__ = [
    "ExpirePolicy",
    "ExpireReport",
    "Kept",
    "SnapshotVerdict",
    "describe_anchors",
    "expire_snapshots",
    "judge_snapshots",
    "live_consumers",
    "older_than_millis",
    "parallel_delete",
    "remove_empty_dirs",
    "join_background",
    "run_after_commit",
    "run_recorded",
    "thread_count",
    "worth_running",
]


def worth_running(store: FileStore, now_ms: int | None = None) -> bool:
    """A cheap test (two listings, at most two small reads) for the automatic run after a commit:
    False when the table options cannot expire any snapshot or long-lived changelog now."""
    from engine.ops.expire_changelog import changelog_dir, changelog_ids

    now = _now_ms() if now_ms is None else now_ms
    ids = store.snapshots.list_ids()
    if _snapshots_may_expire(store, ids, ExpirePolicy.of(store, now_ms=now), now):
        return True
    changelogs = changelog_ids(store)
    if not changelogs:
        return False
    o = store.options
    # Changelog ids count together with the snapshots, back from the latest snapshot.
    total = (ids[-1] if ids else changelogs[-1]) - changelogs[0] + 1
    if total <= o.changelog_num_retained_min:
        return False
    if total > o.changelog_num_retained_max:
        return True
    try:
        oldest = Snapshot.from_json(store.io.read_bytes(f"{changelog_dir(store)}/changelog-{changelogs[0]}"))
    except (DyntableError, OSError):
        return True  # let the real run decide (and fail closed)
    return oldest.time_millis < now - o.changelog_time_retained


def _snapshots_may_expire(store: FileStore, ids: list[int], policy: ExpirePolicy, now: int) -> bool:
    """Whether the counts or the age allow expiring the oldest snapshot, and no consumer or
    retention mark holds it: a table held back by one then costs no reference scan per commit."""
    if len(ids) <= policy.retain_min:
        return False
    try:
        if len(ids) <= policy.retain_max and store.snapshots.get(ids[0]).time_millis >= policy.older_than_ms:
            return False
        mark = _mark(store)
        holders = [*live_consumers(store, now).values(), *([mark.snapshot_id] if mark is not None else [])]
    except DyntableError:
        return True  # let the real run decide (and fail closed)
    return all(ids[0] < held for held in holders)


# ---------------------------------------------------------------------------------------------
# Recorded runs (called and automatic)


def run_recorded(store: FileStore, *, trigger: str = "called", **kwargs: object) -> ExpireReport:
    """:func:`expire_snapshots` with a maintenance-log record (``procedure = expire_snapshots``)."""
    from engine.ops.maintenance_log import recorded_run

    with recorded_run(
        store.io,
        store.paths.root,
        "expire_snapshots",
        trigger=trigger,
        branch=store.branch,
        dry_run=bool(kwargs.get("dry_run")),
    ) as record:
        report = expire_snapshots(store, **kwargs)  # type: ignore[arg-type]
        record.deleted_files, record.deleted_bytes = report.count, report.bytes
        record.details = {
            "snapshots": len(report.snapshots),
            "changelogs_expired": len(report.changelogs_expired),
            "changelogs_written": len(report.changelogs_written),
            "directories": len(report.directories),
        }
    return report


_ASYNC_LOCK = threading.Lock()
_ASYNC_RUNNING: set[str] = set()
_ASYNC_THREADS: list[threading.Thread] = []


def join_background(timeout: float | None = None) -> None:
    """Wait for the asynchronous expirations started so far (tests, and clean process exits)."""
    with _ASYNC_LOCK:
        threads, _ASYNC_THREADS[:] = list(_ASYNC_THREADS), []
    for t in threads:
        t.join(timeout)


def run_after_commit(store: FileStore) -> ExpireReport | None:
    """The automatic expiration after a commit; never raises (a failure is logged and recorded in
    the maintenance log, and the next commit tries again).

    ``snapshot.expire.execution-mode``: ``sync`` runs it now, in the committing thread, after the
    commit is published; ``async`` starts a daemon thread and returns None at once (one thread per
    table and branch at a time; a commit that finds one running skips, the next commit retries).
    """
    try:
        if not worth_running(store):
            return None
        if store.options.get(SNAPSHOT_EXPIRE_EXECUTION_MODE) == "async":
            key = f"{store.paths.root}#{store.branch}"
            with _ASYNC_LOCK:
                if key in _ASYNC_RUNNING:
                    return None
                _ASYNC_RUNNING.add(key)

            def work() -> None:
                try:
                    _guarded(store)
                finally:
                    with _ASYNC_LOCK:
                        _ASYNC_RUNNING.discard(key)

            thread = threading.Thread(target=work, name="dyntable-expire", daemon=True)
            with _ASYNC_LOCK:
                _ASYNC_THREADS.append(thread)
            thread.start()
            return None
    except Exception as e:  # noqa: BLE001 - the commit is published; its outcome must not change
        _logger.warning("automatic snapshot expiration of %s could not start: %s", store.paths.root, e)
        return None
    return _guarded(store)


def _guarded(store: FileStore) -> ExpireReport | None:
    try:
        return run_recorded(store, trigger="automatic")
    except Exception as e:  # noqa: BLE001 - recorded in the maintenance log; retried after the next commit
        _logger.warning(
            "automatic snapshot expiration of %s failed and will be retried after a later commit: %s",
            store.paths.root,
            e,
        )
        return None
