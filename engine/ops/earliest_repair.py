"""Repairing the earliest snapshot after a gap (Paimon's ``repair_earliest_snapshot``).

One job: when snapshot files were lost in the middle of the history (ids 1-3 and 5-10 exist, 4
is gone), readers that start at the earliest snapshot and walk forward fail at the gap. Paimon's
repair moves the ``EARLIEST`` hint to the first snapshot of the unbroken run that ends at the
latest one; this does the same with Paimon's checks: the new earliest must exist, lie between
the current earliest and the latest, every snapshot from it to the latest must exist, and it must
be the current earliest or follow a gap. The snapshot files before it are left in place (snapshot
expiration or orphan cleanup does not need them to be read). Recorded in the maintenance log.
"""

from __future__ import annotations

from engine.errors import InvalidArgumentError, NoSuchSnapshotError
from engine.ops.maintenance_log import recorded_run
from engine.store import FileStore


def repair_earliest_snapshot(store: FileStore, snapshot_id: int) -> int:
    """Make ``snapshot_id`` the earliest snapshot readers see; returns the previous earliest id.

    Raises:
        NoSuchSnapshotError: the table has no snapshot.
        InvalidArgumentError: one of Paimon's checks fails (nothing is changed).
    """
    snapshots = store.snapshots
    ids = snapshots.list_ids()
    if not ids:
        raise NoSuchSnapshotError(
            f"cannot repair the earliest snapshot of the empty table {store.paths.root}"
        )
    previous = snapshots.earliest_id()
    assert previous is not None
    latest = ids[-1]
    if snapshot_id < previous:
        raise InvalidArgumentError(
            f"snapshot {snapshot_id} must not be earlier than the current earliest snapshot {previous}"
        )
    if snapshot_id > latest:
        raise InvalidArgumentError(
            f"snapshot {snapshot_id} must not be later than the latest snapshot {latest}"
        )
    present = set(ids)
    missing = next((i for i in range(snapshot_id, latest + 1) if i not in present), None)
    if missing is not None:
        raise InvalidArgumentError(
            f"snapshot {missing} does not exist: snapshot {snapshot_id} does not start "
            "an unbroken run of snapshots up to the latest"
        )
    if snapshot_id != previous and snapshot_id - 1 in present:
        raise InvalidArgumentError(f"snapshot {snapshot_id} does not immediately follow a snapshot gap")
    with recorded_run(store.io, store.paths.root, "repair_earliest_snapshot", branch=store.branch) as rec:
        snapshots.write_earliest_hint(snapshot_id)
        rec.details = {"previous_earliest": previous, "current_earliest": snapshot_id}
    return previous
