"""Purging a table's data and history (Paimon's ``purge_files``), keeping its schema.

One job: make a table empty and history-free as Paimon's ``FileStoreTable.purgeFiles`` does, in
its order: delete every branch, every tag, every consumer; truncate (one snapshot removing every
live file); expire every snapshot but that latest, empty one; then delete every file nothing
references any more (orphan cleanup with a cutoff of now). The schema, the table's options and
the maintenance log stay. ``dry_run`` changes nothing and reports what would go.

Not for a table being written at the same time: the orphan cleanup at the end uses a cutoff of
now, so files a concurrent writer has not committed yet would be deleted (Paimon's cleanup uses
the same cutoff). Each step is an operation of its own, recorded in the maintenance log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.ops.maintenance_log import recorded_run
from engine.options import INT_MAX

if TYPE_CHECKING:
    from engine.store import FileStore


@dataclass(frozen=True)
class PurgeReport:
    """What a purge removed (or, with ``dry_run``, would remove)."""

    branches: tuple[str, ...]
    tags: tuple[str, ...]
    consumers: tuple[str, ...]
    live_files: int
    snapshots: int
    orphan_files: int
    dry_run: bool

    def lines(self) -> list[str]:
        """One human-readable line per kind of object, for a dry run's output."""

        def names(values: tuple[str, ...]) -> str:
            return f": {', '.join(values)}" if values else ""

        verb = "would delete" if self.dry_run else "deleted"
        return [
            f"{verb} {len(self.branches)} branch(es){names(self.branches)}",
            f"{verb} {len(self.tags)} tag(s){names(self.tags)}",
            f"{verb} {len(self.consumers)} consumer(s){names(self.consumers)}",
            f"{verb} {self.live_files} live data file(s) (truncate) and {self.snapshots} snapshot(s)",
        ]


def purge_files(store: FileStore, *, dry_run: bool = False) -> PurgeReport:
    """Empty ``store``'s table and drop its history (see the module docstring)."""
    from engine.commit import FileStoreCommit
    from engine.meta.refs import ConsumerStore, TagStore
    from engine.ops.branches import BranchOps
    from engine.ops.consumers import clear_consumers
    from engine.ops.expire_snapshots import run_recorded
    from engine.ops.orphan_files import remove_table_orphan_files
    from engine.ops.tags import TagOps

    branch_ops = BranchOps(store)
    branches = tuple(branch_ops.names())
    tags = tuple(TagStore(store.io, store.paths).names())
    consumers = tuple(ConsumerStore(store.io, store.paths).ids())
    latest = store.snapshots.latest()
    live = len(store.live_entries(latest))
    snapshots = len(store.snapshots.all())
    if dry_run:
        return PurgeReport(branches, tags, consumers, live, snapshots, 0, True)
    root = store.paths.root
    with recorded_run(store.io, root, "purge_files", branch=store.branch) as rec:
        for branch in branches:
            branch_ops.delete(branch)
        if tags:
            TagOps(store).delete(list(tags))
        clear_consumers(store)
        if live:
            FileStoreCommit(store).truncate()
        now = int(time.time() * 1000)
        everything_but_latest = store.refresh().with_options(
            {
                "snapshot.num-retained.min": "1",
                "snapshot.num-retained.max": "1",
                "snapshot.expire.limit": str(INT_MAX),
                "changelog.num-retained.min": "1",
                "changelog.num-retained.max": "1",
            }
        )
        run_recorded(everything_but_latest, retain_max=1, retain_min=1, older_than=now, max_deletes=INT_MAX)
        orphans = remove_table_orphan_files(store.io, root, older_than=now, force=True, branch=store.branch)
        rec.deleted_files = orphans.count
        rec.deleted_bytes = orphans.bytes
        rec.details = {
            "branches": list(branches),
            "tags": list(tags),
            "consumers": list(consumers),
            "live_files": live,
            "snapshots": snapshots,
        }
    return PurgeReport(branches, tags, consumers, live, snapshots, orphans.count, False)
