"""Publishing versioned metadata: a branch's next snapshot, and reference files (tags, consumers,
the retention mark, the EARLIEST hints).

One job: turn prepared metadata into the table's next version, or leave the table as it was.
Used by the commit pipeline (writes, compaction, overwrite: ``engine.commit``) and by the
operations that republish older content (rollback, fast-forward, replace_main:
``engine.ops.republish``); nothing else creates ``snapshot-<id>`` files.

The protocol, for any versioned metadata file:

1. **read** the current state (the branch's latest snapshot) — the caller;
2. **prepare** the files the new version refers to, recording each file this attempt creates in
   an :class:`Attempt` (manifests, manifest lists, index manifests, data-file links, backup tags);
3. **create-if-absent** ``snapshot-<latest + 1>`` (:func:`publish_snapshot`); a lost race returns
   False and the caller either retries on the new latest or gives up;
4. **verify** what was published: a snapshot of a branch that was deleted meanwhile recreated
   the branch's directory (a store creates parents on write), so the branch's schema is looked
   up after the publish and, if it is gone, the snapshot, the hint and the directories this
   attempt created are removed and :class:`~engine.errors.NoSuchBranchError` is raised (every
   write happens before this check, so a deletion after it finds the snapshot inside the
   branch and removes it with the branch; a branch deleted *and recreated* under the same name
   meanwhile is not told apart from the old one);
5. **undo** only what this attempt created (:meth:`Attempt.undo`) when it did not publish —
   never a file another attempt or another process made (a backup tag that existed already, a
   file a concurrent winner references).

Snapshot times are monotonic per branch (:func:`next_time_millis`): ``max(now, previous + 1)``,
so a writer whose clock is behind cannot publish a snapshot older than its parent, and
timestamp time travel (``SnapshotStore.at_or_before``) and the retention mark can rely on the
order. An I/O error from the create is resolved by reading the file back and comparing the
snapshot's uuid: ours → published; absent → not published; unreadable →
:class:`~engine.errors.CommitStateUnknownError`, and then nothing is undone (the snapshot may
reference the attempt's files). The LATEST hint is written after a verified publish (best
effort: readers verify hints).

References follow the same protocol in :func:`publish_ref`: create-if-absent (or an atomic
replace of a reference that may move, such as a replaced tag), verify what it names still holds
(e.g. the tagged snapshot still exists), and undo only this attempt's own write.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.errors import CommitStateUnknownError, NoSuchBranchError, NoSuchSnapshotError, StorageError
from engine.identifier import MAIN_BRANCH
from engine.io import FileIO
from engine.meta.snapshot import Snapshot
from engine.meta.snapshot_store import SnapshotStore

__all__ = ["Attempt", "next_time_millis", "publish_ref", "publish_snapshot"]


class Attempt:
    """The files one publish attempt created, so that exactly those can be removed again."""

    def __init__(self, io: FileIO) -> None:
        self.io = io
        self.created: list[str] = []

    def record(self, path: str) -> None:
        """``path`` was created by this attempt (a new, uniquely named file)."""
        self.created.append(path)

    def create(self, path: str, data: bytes) -> bool:
        """Create-if-absent ``path``; recorded only if this attempt created it."""
        created = self.io.try_create(path, data)
        if created:
            self.created.append(path)
        return created

    def forget(self, path: str) -> None:
        """Stop owning ``path`` (it is referenced by something published now)."""
        try:
            self.created.remove(path)
        except ValueError:
            pass

    def keep(self) -> None:
        """The attempt was published: every file it made is referenced now."""
        self.created.clear()

    def undo(self) -> None:
        """Delete every file this attempt created, newest first; failures leave orphans, never damage."""
        for path in reversed(self.created):
            try:
                self.io.delete(path)
            except OSError:
                pass  # unreferenced: orphan cleanup collects it
        self.created.clear()


def next_time_millis(previous: Snapshot | None, now_millis: int | None = None) -> int:
    """The commit time of the snapshot after ``previous``: never before it (per-branch monotonic)."""
    now = int(time.time() * 1000) if now_millis is None else now_millis
    return now if previous is None else max(now, previous.time_millis + 1)


def publish_snapshot(
    snapshots: SnapshotStore,
    snapshot: Snapshot,
    *,
    on_storage_error: Callable[[StorageError], None] | None = None,
) -> bool:
    """Publish ``snapshot`` as its branch's version ``snapshot.id``; False if another writer has that id.

    After a successful create the branch is verified to still exist (step 4 of the module
    docstring) and the LATEST hint is moved.

    Raises:
        NoSuchBranchError: the branch was deleted while this snapshot was prepared; the snapshot
            and anything the publish recreated were removed again (nothing was published).
        CommitStateUnknownError: the create failed and reading the file back failed too.
    """
    try:
        created = snapshots.try_publish(snapshot)
    except FileNotFoundError:
        # The branch's directory went away under the create (a deletion moved it to the trash
        # between the temporary file and its link): that is a deleted branch, not a storage fault.
        _verify_branch(snapshots, snapshot)
        raise
    except StorageError as e:
        if on_storage_error is not None:
            on_storage_error(e)
        created = _resolve(snapshots, snapshot, e)
    if not created:
        return False
    snapshots.write_latest_hint(snapshot.id)
    _verify_branch(snapshots, snapshot)
    return True


def _resolve(snapshots: SnapshotStore, snapshot: Snapshot, error: StorageError) -> bool:
    """Whether a create that raised ``error`` published ``snapshot`` after all."""
    try:
        existing = snapshots.read_fresh(snapshot.id)
    except NoSuchSnapshotError:
        return False
    except Exception as unknown:
        raise CommitStateUnknownError(
            f"could not confirm whether snapshot {snapshot.id} of {snapshots.paths.root} was published "
            f"({error}; reading it back failed: {unknown}); check the table before retrying"
        ) from error
    return existing.uuid is not None and existing.uuid == snapshot.uuid


def _verify_branch(snapshots: SnapshotStore, snapshot: Snapshot) -> None:
    """Undo a publish into a branch deleted meanwhile (it recreated a schema-less directory)."""
    paths = snapshots.paths
    if paths.branch == MAIN_BRANCH:
        return  # main cannot be deleted
    io = snapshots.io
    if io.exists(paths.schema_file(snapshot.schema_id)):
        return
    # The branch was deleted (or renamed) while we prepared: what we created is all that is there.
    for path in (paths.snapshot_file(snapshot.id), paths.latest_hint):
        try:
            io.delete(path)
        except OSError:
            pass
    snapshots.forget(snapshot.id)
    for directory in (paths.snapshot_dir, paths.branch_root):
        try:
            io.delete_dir(directory, recursive=False)  # only if empty: another stale writer cleans up its own
        except OSError:
            pass
    raise NoSuchBranchError(
        f"branch '{paths.branch}' of {paths.root} was deleted (or renamed) while this commit ran; nothing "
        "was committed — reopen the table on an existing branch and write again"
    )


def publish_ref(
    io: FileIO, path: str, data: bytes, *, replace: bool = False, verify: Callable[[], None] | None = None
) -> bool:
    """Write one reference file: create-if-absent (or replace) → verify → undo only our own write.

    Args:
        io: The table's FileIO.
        path: The reference file.
        data: Its new content.
        replace: Overwrite an existing file atomically (the previous content is kept for the
            undo) instead of creating it only if absent.
        verify: Called after the write; raising means the reference must not stay. The file is
            then put back as it was — deleted if this call created it, the previous content if it
            replaced one — but only while it still holds ``data`` (a later writer's content is
            never undone), and the error propagates.

    Returns:
        False if ``replace`` is off and the file existed already (nothing was written), else True.
    """
    previous: bytes | None = None
    if replace:
        try:
            previous = io.read_bytes(path)
        except FileNotFoundError:
            previous = None
        io.write_bytes(path, data)
    elif not io.try_create(path, data):
        return False
    if verify is not None:
        try:
            verify()
        except BaseException:
            _undo(io, path, data, previous)
            raise
    return True


def _undo(io: FileIO, path: str, ours: bytes, previous: bytes | None) -> None:
    """Put ``path`` back as it was before this attempt, if it still holds what the attempt wrote.

    Object stores and local disks have no conditional delete: a writer that replaces the file
    between the read and the delete below loses its write. Only a replace of the very reference
    being undone can fall into that window (the creator still holds the call).
    """
    try:
        current = io.read_bytes(path)
    except FileNotFoundError:
        return
    if current != ours:
        return  # someone wrote after us: theirs now, not ours to undo
    if previous is None:
        io.delete(path)
    else:
        io.write_bytes(path, previous)
