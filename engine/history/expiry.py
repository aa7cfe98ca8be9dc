"""Telling "expired while being read" from "damaged" when a file a snapshot names is missing.

One job: :func:`explain_missing` turns the :class:`~engine.errors.CorruptMetadataError` of a
missing manifest or data file into :class:`~engine.errors.SnapshotExpiredDuringReadError` when the
snapshot being read is gone *now* — its snapshot file deleted and no tag of the branch holding it
— because then a concurrent expiration (or tag deletion) removed it during the read, which is a
normal event a reader can retry. If the snapshot or a tag holding it still exists, the file is
missing although something still names it: that is damage and the original error stands.
Only the error path pays for the check (one existence test, one tag listing).
"""

from __future__ import annotations

from engine.errors import (
    CorruptDataError,
    CorruptMetadataError,
    DyntableError,
    SnapshotExpiredDuringReadError,
)
from engine.meta.refs import TagStore
from engine.store import FileStore


def explain_missing(store: FileStore, snapshot_id: int, error: CorruptMetadataError) -> DyntableError:
    """``error``, or a :class:`SnapshotExpiredDuringReadError` if snapshot ``snapshot_id`` of the
    store's branch was expired (or its last tag deleted) since the read began."""
    if isinstance(error, CorruptDataError):
        return error  # a file that is there but unreadable is never an expiration
    io, paths = store.io, store.paths
    try:
        if io.exists(paths.snapshot_file(snapshot_id)):
            return error
        if any(t.snapshot.id == snapshot_id for t in TagStore(io, paths).all().values()):
            return error
    except (DyntableError, OSError):
        return error  # cannot tell: report what was seen
    where = "" if store.branch == "main" else f" of branch {store.branch}"
    return SnapshotExpiredDuringReadError(
        f"snapshot {snapshot_id}{where} of {paths.root} was expired (or the tag holding it deleted) by "
        f"another process while it was being read ({error}); run the read again to read the current "
        "snapshot, or keep the snapshot with a tag or a consumer-id while you read it"
    )


__all__ = ["explain_missing"]
