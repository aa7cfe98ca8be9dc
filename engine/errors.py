"""The one exception tree of dyntable.

Every error the engine raises derives from :class:`DyntableError`. The kinds are coarse and
prescriptive (what can the caller do?): not found, already exists, invalid argument, commit
conflict (retry), commit state unknown (check before retrying), corrupt metadata, storage.
Messages say what went wrong and what to do; they are not part of the API.
"""

from __future__ import annotations

from typing import ClassVar


class DyntableError(Exception):
    """Base of every dyntable error."""

    retryable: ClassVar[bool] = False


class NotFoundError(DyntableError, LookupError):
    """Something named does not exist: check the name, or create it first."""


class NoSuchDatabaseError(NotFoundError):
    """The database does not exist: create it with CREATE DATABASE."""


class NoSuchTableError(NotFoundError):
    """The table does not exist: check the name or create the table."""


class NoSuchSnapshotError(NotFoundError):
    """The snapshot does not exist (never written, or expired)."""


class SnapshotExpiredConcurrentlyError(NoSuchSnapshotError):
    """The snapshot a new reference (tag, consumer, branch) was to name was expired by another
    process while the reference was being created; the reference was removed again (nothing
    was left behind). Name a newer snapshot."""


class BehindRetentionMarkError(NoSuchSnapshotError):
    """Time travel to a snapshot (or tag, or time) older than the table's retention mark: that
    history is no longer visible. Read a newer snapshot, or lower nothing — the mark only moves up."""


class NoSuchPartitionError(NotFoundError):
    """The partition does not exist (no live file in it)."""


class NoSuchTagError(NotFoundError):
    """The tag does not exist."""


class NoSuchBranchError(NotFoundError):
    """The branch does not exist."""


class NoSuchColumnError(NotFoundError):
    """The column does not exist in the table schema."""


class AlreadyExistsError(DyntableError):
    """Something with that name exists already: pick another name or use IF NOT EXISTS."""


class DatabaseAlreadyExistsError(AlreadyExistsError):
    """The database exists already."""


class TableAlreadyExistsError(AlreadyExistsError):
    """The table exists already."""


class TagAlreadyExistsError(AlreadyExistsError):
    """The tag exists already."""


class BranchAlreadyExistsError(AlreadyExistsError):
    """The branch exists already."""


class InvalidArgumentError(DyntableError, ValueError):
    """A bad schema, option value, predicate or identifier: fix the input and run again."""


class TimeBoundError(InvalidArgumentError):
    """A time argument (``older_than``, ``timestamp``, ``expiration_time``, a retention) that is
    none of the accepted forms (engine.time_bound lists them); ``argument`` names it."""

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument


class UnsupportedTableError(InvalidArgumentError):
    """The table uses a Paimon feature dyntable does not implement (e.g. deletion vectors), so
    reading or writing it here would give results other than Paimon's: use Paimon for it."""


class SchemaMergeError(InvalidArgumentError):
    """A write with ``write.merge-schema`` whose data cannot evolve the table's schema by Paimon's
    rules (a type that does not widen, a lossy change, a key column retyped, two columns differing
    only in case): nothing is written or published."""


class InvalidNameError(InvalidArgumentError):
    """A database, table, branch, tag or consumer name that cannot be a safe path component."""


class CommitConflictError(DyntableError):
    """Another writer changed the table in a conflicting way: refresh and retry the operation."""

    retryable = True


class CommitStateUnknownError(DyntableError):
    """The commit may or may not have been published: check the table before retrying."""


class CorruptMetadataError(DyntableError):
    """A metadata file (snapshot, schema, manifest) is unreadable or inconsistent."""


class SnapshotExpiredDuringReadError(DyntableError):
    """The snapshot (or tag) being read was expired or deleted by another process during the
    read, so files it named are gone. Nothing is damaged: run the read again (it then reads the
    current snapshot), or keep the snapshot with a tag or a consumer-id while reading it.

    SQLSTATE 72000 (PostgreSQL's ``snapshot_too_old``); retryable."""

    retryable = True
    sqlstate: ClassVar[str] = "72000"


class CorruptDataError(CorruptMetadataError):
    """A data file named by a snapshot is unreadable (truncated, not Parquet) or holds values its
    schema cannot describe. A kind of :class:`CorruptMetadataError`, so one handler catches every
    corrupt table; the message names the file."""


class StorageError(DyntableError, OSError):
    """The file system failed (a transient I/O problem is worth a retry)."""

    retryable = True
