"""Long-lived changelogs: changelog metadata that outlives its snapshot, and its own expiration.

One job: when a table's changelog retention (``changelog.num-retained.min/max``,
``changelog.time-retained``) exceeds its snapshot retention and it produces changelog files
(``changelog-producer`` other than ``none``), keep what streaming readers of old changes need
after the snapshot itself expired, as Paimon does; and expire those changelogs by their own
options.

How (``docs/design/format-notes.md`` §4.3): before a snapshot file is deleted, its JSON is published as
``<branch>/changelog/changelog-<id>`` (create-if-absent; the ``changelog/`` EARLIEST and LATEST
hints follow). Reachability treats such a file as an anchor of its delta and changelog manifest
lists, their manifests, the files the delta adds and the changelog files (not the base list).
Expiring changelogs mirrors snapshot expiration: the range is continuous from the oldest
changelog, ids are counted together with the snapshots (``changelog.num-retained.max`` counts
back from the latest snapshot), a consumer's next snapshot and later stay, at most
``snapshot.expire.limit`` per run; the changelog files are deleted oldest first, then exactly
the files no remaining anchor references.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import DyntableError
from engine.io import FileIO
from engine.meta.paths import join, parse_versioned_id
from engine.meta.publish import publish_ref
from engine.meta.snapshot import Snapshot
from engine.ops.expiry_files import (
    cleans_empty_directories,
    live_consumers,
    parallel_delete,
    remove_empty_dirs,
    thread_count,
)
from engine.ops.reachability import (
    Anchor,
    DeletionReport,
    FileKindRef,
    ReachabilityCollector,
    Reachable,
    UnsafeToDeleteError,
    all_anchors,
    retry_concurrent,
    unreferenced,
)
from engine.options import (
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
)
from engine.store import FileStore


@dataclass(frozen=True)
class ChangelogExpiry:
    changelogs: tuple[int, ...]
    files: DeletionReport
    directories: tuple[str, ...] = ()


def changelog_dir(store: FileStore) -> str:
    return join(store.paths.branch_root, "changelog")


def decoupled(store: FileStore) -> bool:
    """True when changelogs must outlive their snapshots (Paimon's ``changelogLifecycleDecoupled``)."""
    o = store.options
    if o.changelog_producer == "none":
        return False
    return (
        o.changelog_num_retained_min > int(o.get(SNAPSHOT_NUM_RETAINED_MIN))
        or o.changelog_num_retained_max > int(o.get(SNAPSHOT_NUM_RETAINED_MAX))
        or o.changelog_time_retained > int(o.get(SNAPSHOT_TIME_RETAINED))
    )


def write_changelogs(store: FileStore, snapshots: Sequence[Snapshot]) -> None:
    """Publish ``changelog-<id>`` for each snapshot about to expire (an existing one is kept)."""
    io, directory = store.io, changelog_dir(store)
    for snap in snapshots:
        publish_ref(io, join(directory, f"changelog-{snap.id}"), snap.to_json().encode())
    if snapshots:
        _hint(io, join(directory, "LATEST"), max(s.id for s in snapshots))
        ids = changelog_ids(store)
        if ids:
            _hint(io, join(directory, "EARLIEST"), ids[0])


def _hint(io: FileIO, path: str, value: int) -> None:
    try:  # hints are advisory, as the snapshot hints are
        publish_ref(io, path, str(value).encode(), replace=True)
    except OSError:
        pass


def changelog_ids(store: FileStore) -> list[int]:
    directory = changelog_dir(store)
    try:
        listed = store.io.list_dir(directory)
    except (DyntableError, OSError) as e:
        raise UnsafeToDeleteError(f"cannot list {directory} ({e}); nothing was deleted", directory) from e
    ids = (parse_versioned_id(s.path.rsplit("/", 1)[-1], "changelog-") for s in listed)
    return sorted(i for i in ids if i is not None)


def expire_changelogs(
    store: FileStore, *, now_ms: int | None = None, dry_run: bool = False
) -> ChangelogExpiry:
    """Expire the long-lived changelogs of the store's branch that its changelog options let go."""
    ids = changelog_ids(store)
    if not ids:
        return ChangelogExpiry((), DeletionReport((), dry_run))
    now = int(time.time() * 1000) if now_ms is None else now_ms
    io, root, branch, o = store.io, store.paths.root, store.branch, store.options
    collector = ReachabilityCollector(io, root)

    def plan() -> tuple[list[Anchor], list[Anchor], Reachable]:
        anchors = all_anchors(io, root)
        snapshot_ids = sorted(int(a.name) for a in anchors if a.kind == "snapshot" and a.branch == branch)
        latest = snapshot_ids[-1] if snapshot_ids else ids[-1]
        earliest_snapshot = snapshot_ids[0] if snapshot_ids else latest + 1
        retain_min, retain_max = o.changelog_num_retained_min, o.changelog_num_retained_max
        older_than = now - o.changelog_time_retained
        end = min(latest - retain_min + 1, earliest_snapshot, ids[0] + int(o.get(SNAPSHOT_EXPIRE_LIMIT)))
        for nxt in live_consumers(store, now).values():
            end = min(end, nxt)
        mine = {int(a.name): a for a in anchors if a.kind == "changelog" and a.branch == branch}
        keep_from_max = latest - retain_max + 1
        for cid in ids:
            a = mine.get(cid)
            if keep_from_max <= cid < end and a is not None and a.snapshot.time_millis >= older_than:
                end = cid
                break
        going = [mine[c] for c in ids if c < end and c in mine]
        return anchors, going, collector.collect(going)

    anchors, going, candidates = retry_concurrent(plan)
    if not going:
        return ChangelogExpiry((), DeletionReport((), dry_run))
    if dry_run:
        keep = retry_concurrent(lambda: collector.collect([a for a in anchors if a not in set(going)]))
        files = parallel_delete(io, unreferenced(candidates, keep), thread_count(store), dry_run=True)
        return ChangelogExpiry(tuple(int(a.name) for a in going), files)
    for a in sorted(going, key=lambda a: int(a.name)):
        io.delete(join(changelog_dir(store), f"changelog-{a.name}"))
    _hint(io, join(changelog_dir(store), "EARLIEST"), int(going[-1].name) + 1)
    keep = retry_concurrent(lambda: collector.collect(all_anchors(io, root)))
    files = parallel_delete(io, unreferenced(candidates, keep), thread_count(store))
    dirs = (
        remove_empty_dirs(io, root, files.paths(FileKindRef.DATA) + files.paths(FileKindRef.CHANGELOG))
        if cleans_empty_directories(store)
        else []
    )
    return ChangelogExpiry(tuple(int(a.name) for a in going), files, tuple(dirs))


__all__ = ["ChangelogExpiry", "changelog_ids", "decoupled", "expire_changelogs", "write_changelogs"]
