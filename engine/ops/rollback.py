"""Rolling a table branch back to an earlier snapshot or tag, atomically for readers.

One job: make the table's content that of a target (snapshot id or tag) without deleting anything.

How (and why not Paimon's way): Paimon deletes every snapshot newer than the target and moves
LATEST, which is several file operations; a reader in between sees a half-rolled-back table and a
crash leaves it so. Here the rollback is **one new snapshot** ``head + 1`` published with
create-if-absent, exactly like a commit:

* base manifest list = the head's data manifests; delta = DELETE entries for the head's live
  files the target lacks and ADD entries for the target's live files the head lacks, each under
  a new file name (a hard link: Paimon's history adds a file once and deletes it once, see
  ``engine.ops.republish``; a target whose files are gone is refused before anything is
  published) (commit kind OVERWRITE, so streaming readers that skip overwrites are not fed the
  restored rows again);
  index manifest = the target's (dynamic-bucket key maps must match the restored data);
  properties ``dyntable.rollback.from`` / ``dyntable.rollback.to`` record what happened.
* Readers see the old head or the new one, never a mix; history stays linear, so time travel to
  the replaced snapshots keeps working while they are retained, and the replaced head is kept
  by a backup tag ``rollback-backup-<head id>`` (created first, removed again if the rollback
  does not happen and no concurrent rollback of the same head reported it) so it stays
  readable after snapshot expiration. Delete the tag to let
  expiration and orphan cleanup reclaim its files.
* Nothing is deleted: files only the replaced snapshots used become garbage for expiration and
  orphan cleanup.
* A commit that lands between reading the head and publishing makes the rollback fail with
  CommitConflictError (nothing changed): rolling back over a commit the caller never saw would
  silently discard it.
* A target (snapshot, tag, or the snapshot a timestamp resolves to) below the branch's
  retention mark is refused with BehindRetentionMarkError before anything is written: a
  rollback would publish history that no read may see any more (``engine.history.retention_mark``).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import InvalidArgumentError, NoSuchSnapshotError
from engine.history.retention_mark import check_visible
from engine.identifier import validate_name
from engine.meta.refs import TagStore
from engine.meta.snapshot import Snapshot
from engine.ops.republish import republish
from engine.store import FileStore

BACKUP_TAG_PREFIX = "rollback-backup-"
ROLLBACK_FROM = "dyntable.rollback.from"
ROLLBACK_TO = "dyntable.rollback.to"


@dataclass(frozen=True, slots=True)
class RollbackResult:
    """``previous_snapshot_id``: the head replaced; ``current_snapshot_id``: the new head."""

    previous_snapshot_id: int | None
    current_snapshot_id: int | None
    backup_tag: str | None = None


def backup_tag_name(head_id: int) -> str:
    return f"{BACKUP_TAG_PREFIX}{head_id}"


def resolve_target(store: FileStore, version: int | str) -> tuple[Snapshot, str]:
    """The snapshot a rollback target names, and a description (``snapshot 3`` / ``tag 't1'``).

    An int (or an all-digit string that is not a tag's name) is a snapshot id; a string a tag.
    A target below the retention mark raises BehindRetentionMarkError.
    """
    snap, what = _named_target(store, version)
    check_visible(store, snap, f"roll back to {what}")
    return snap, what


def _named_target(store: FileStore, version: int | str) -> tuple[Snapshot, str]:
    tags = TagStore(store.io, store.paths)
    if isinstance(version, bool):
        raise InvalidArgumentError(f"rollback target must be a snapshot id or a tag name, not {version!r}")
    if isinstance(version, str) and not (version.isdigit() and not tags.exists(version)):
        validate_name("tag", version)
        return tags.get(version).snapshot, f"tag '{version}'"
    if isinstance(version, str):
        version = int(version)
    if not isinstance(version, int):
        raise InvalidArgumentError(f"rollback target must be a snapshot id or a tag name, not {version!r}")
    try:
        return store.snapshots.get(version), f"snapshot {version}"
    except NoSuchSnapshotError:
        raise NoSuchSnapshotError(
            f"cannot roll back to snapshot {version}: it does not exist in {store.paths.snapshot_dir} "
            "(never written, or expired; roll back to a tag of it instead)"
        ) from None


def rollback_to(store: FileStore, version: int | str, *, backup: bool = True) -> RollbackResult:
    """Make ``version`` (snapshot id or tag name) the table's content as a new snapshot."""
    target, what = resolve_target(store, version)
    head = store.snapshots.latest()
    if head is None:
        raise NoSuchSnapshotError(f"{store.paths.root} has no snapshot to roll back")
    if _same_content(head, target) or (head.properties or {}).get(ROLLBACK_TO) == str(target.id):
        return RollbackResult(head.id, head.id, None)  # the head is the target, or a rollback to it
    latest_schema = store.schemas.latest()
    schema_id = max(head.schema_id, latest_schema.id if latest_schema else 0)
    done = republish(
        store, head, target, store.live_entries(target), schema_id,
        {ROLLBACK_FROM: str(head.id), ROLLBACK_TO: str(target.id)},
        action=f"roll back to {what}",
        backup_tag=backup_tag_name(head.id) if backup else None,
        missing=lambda path: NoSuchSnapshotError(
            f"cannot roll back to {what}: its file {path} is missing (expired, or deleted by orphan "
            "cleanup); nothing was changed"),
    )
    if done.snapshot is None:  # the head already holds the target's files
        return RollbackResult(head.id, head.id, None)
    return RollbackResult(head.id, done.snapshot.id, done.backup_tag)


def rollback_to_timestamp(store: FileStore, timestamp_millis: int, *, backup: bool = True) -> RollbackResult:
    """Roll back to the newest snapshot committed at or before ``timestamp_millis``."""
    snap = store.snapshots.at_or_before(timestamp_millis)
    if snap is None:
        raise NoSuchSnapshotError(
            f"{store.paths.root} has no snapshot committed at or before timestamp {timestamp_millis}"
        )
    check_visible(store, snap, f"roll back to timestamp {timestamp_millis}")
    return rollback_to(store, snap.id, backup=backup)


def _same_content(a: Snapshot, b: Snapshot) -> bool:
    return (a.base_manifest_list, a.delta_manifest_list, a.index_manifest) == (
        b.base_manifest_list, b.delta_manifest_list, b.index_manifest)


__all__ = ["BACKUP_TAG_PREFIX", "RollbackResult", "backup_tag_name", "resolve_target", "rollback_to",
           "rollback_to_timestamp"]
