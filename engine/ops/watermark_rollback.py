"""Rolling back to a watermark (Paimon's ``rollback_to_watermark``).

One job: find the newest snapshot whose watermark is at or below a given watermark (Paimon's
``SnapshotManager.earlierOrEqualWatermark``: snapshots without a watermark are skipped) and roll
the table back to it with :func:`engine.ops.rollback.rollback_to` (a new snapshot; the replaced
head is kept as a tag).
"""

from __future__ import annotations

from engine.errors import NoSuchSnapshotError
from engine.meta.snapshot import Snapshot
from engine.ops.rollback import RollbackResult, rollback_to
from engine.store import FileStore


def snapshot_at_or_below_watermark(store: FileStore, watermark: int) -> Snapshot | None:
    """The newest existing snapshot with a watermark ``<= watermark`` (None if there is none)."""
    best: Snapshot | None = None
    for snapshot in store.snapshots.all():
        if snapshot.watermark is not None and snapshot.watermark <= watermark:
            if best is None or snapshot.id > best.id:
                best = snapshot
    return best


def rollback_to_watermark(store: FileStore, watermark: int) -> RollbackResult:
    """Roll back to the newest snapshot whose watermark is at or below ``watermark``.

    Raises:
        NoSuchSnapshotError: the table has no snapshot, or none with such a watermark.
    """
    if store.snapshots.latest() is None:
        raise NoSuchSnapshotError(f"{store.paths.root} has no snapshot to roll back")
    target = snapshot_at_or_below_watermark(store, watermark)
    if target is None:
        raise NoSuchSnapshotError(
            f"no snapshot of {store.paths.root} has a watermark at or below {watermark}; "
            "nothing was rolled back"
        )
    return rollback_to(store, target.id)
