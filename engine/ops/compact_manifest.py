"""Compacting a table's manifests (Paimon's ``compact_manifest``).

One job: rewrite the latest snapshot's data manifests into few manifests holding only the live
files (the commit's full manifest merge, forced whatever ``manifest.merge-min-count`` says), as
one new COMPACT snapshot with no data change. Planning then reads those few manifests instead of
the whole history of small ones. ``dry_run`` only counts. Recorded in the maintenance log.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.commit import FileStoreCommit
from engine.ops.maintenance_log import recorded_run
from engine.store import FileStore


@dataclass(frozen=True)
class ManifestCompaction:
    """Data manifests before and after (after = before for a dry run or a table without snapshot)."""

    manifests_before: int
    manifests_after: int
    snapshot_id: int | None
    dry_run: bool


def compact_manifests(store: FileStore, *, dry_run: bool = False) -> ManifestCompaction:
    """Merge the latest snapshot's data manifests into a new COMPACT snapshot (see module docstring)."""
    with recorded_run(
        store.io, store.paths.root, "compact_manifest", branch=store.branch, dry_run=dry_run
    ) as rec:
        latest = store.snapshots.latest()
        before = len(store.manifests.data_manifests(latest)) if latest is not None else 0
        if latest is None or dry_run or before == 0:
            rec.details = {"manifests_before": before}
            return ManifestCompaction(before, before, None, dry_run)
        sid = FileStoreCommit(store).compact_manifests()
        after = len(store.manifests.data_manifests(store.snapshots.get(sid)))
        rec.details = {"manifests_before": before, "manifests_after": after, "snapshot_id": sid}
        return ManifestCompaction(before, after, sid, False)
