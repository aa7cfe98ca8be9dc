"""Writing a table in the steps a distributed engine spreads out: tasks write files and hand back
commit messages; one commit (``engine.builders.commit``) publishes them.

```
 WriteBuilder (immutable, picklable)  overwrite · commit user
   .new_write(sequence_offset=, namer=)      ─► TableWrite   one writer, e.g. Table.write_arrow
   .new_task_write(job, task, attempt)       ─► TableWrite   one task of a distributed job
   .new_commit()                             ─► CommitBuilder
   .new_kv_import(job)                       ─► KvFileImport  level-0 files another Parquet writer wrote
   .abort_job(job) / .delete_job_files(job)     a failed job's files, found by its token
```
Tasks of one job never share file names or sequence numbers: each task writes ``data-<job>-<n>``
with ``n`` in its own range (task and attempt in the high bits) and takes its own sequence range
(task id << 32 above the bucket's restored maximum), so no shuffle by bucket is needed and a
job's abort finds the files of a task that died without cleaning up. Tasks never compact (two
tasks compacting one bucket would conflict): compaction is a post-commit hook.

A job's abort first writes a marker (``.dyntable/aborted-jobs/<job>``), then deletes the job's
files; a task of an aborted job looks for the marker after its last file is closed and deletes
its own files: every file either existed before the listing or was finished after the marker.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from engine.append_deletions import (
    AppendDeletionCommit,
    DvScanFile,
    dv_scan_files,
    writes_append_deletion_vectors,
)
from engine.commit_messages import CommitMessage, OverwriteSpec, delete_uncommitted
from engine.errors import DyntableError
from engine.features import check_appendable, check_rewritable
from engine.meta.external_paths import ExternalPaths
from engine.meta.paths import FileNamer
from engine.options import DYNAMIC_BUCKET_ASSIGNER_PARALLELISM
from engine.store import FileStore, OverStore
from engine.write.bucket_assigner import is_dynamic_bucket, writer_clustering
from engine.write.factory import new_writer
from engine.write.kv_import import KvFileImport

if TYPE_CHECKING:
    from engine.builders.commit import CommitBuilder
    from engine.meta.snapshot import Snapshot

T = TypeVar("T", bound=OverStore)

SEQUENCE_STRIDE_BITS = 32  # 4G rows per task and commit
FILE_COUNTER_BITS = 24  # 16M files per task attempt
ABORTED_JOBS_DIR = ".dyntable/aborted-jobs"


class JobAbortedError(DyntableError):
    """The write job this task belongs to was aborted; the task deleted what it wrote."""


@dataclass(frozen=True)
class WriteBuilder(Generic[T]):
    """One write (one commit) of ``store``'s table: ``overwrite`` (None: append) and the commit
    user. ``source`` is the facade the builder was made from, whose view of ``store`` (with the
    write's options) is :attr:`table`."""

    source: T
    store: FileStore
    overwrite: OverwriteSpec | None = None
    commit_user: str | None = None
    # Independent tasks (rows not clustered for the writers): the snapshot every task assigns
    # dynamic buckets from (0: the table had none; -1: the latest when the task starts, for
    # micro-batches, which start after the previous one committed); None: a single writer.
    shared_base: int | None = None
    # Rows of a row-tracking table that come with their _ROW_ID / _SEQUENCE_NUMBER keep them
    # (DELETE/UPDATE/MERGE rewriting rows; engine.row_tracking); other writes refuse such columns.
    row_ids: bool = False

    @property
    def table(self) -> T:
        """The caller's table as this write sees it (with the write's options)."""
        return self.source if self.source.store is self.store else self.source.over(self.store)

    def with_overwrite(self, overwrite: OverwriteSpec | None) -> WriteBuilder[T]:
        return dataclasses.replace(self, overwrite=overwrite)

    def with_commit_user(self, commit_user: str | None) -> WriteBuilder[T]:
        return dataclasses.replace(self, commit_user=commit_user)

    # -- row-level changes of append tables with deletion vectors (engine.append_deletions) ----------
    def keeping_row_ids(self) -> WriteBuilder[T]:
        """This write, for rows that keep their row ids (see ``row_ids``)."""
        return dataclasses.replace(self, row_ids=True)

    def writes_deletion_vectors(self) -> bool:
        """Whether DELETE/UPDATE/MERGE of this table mark rows in deletion vectors (an append table
        with ``deletion-vectors.enabled``) instead of rewriting files."""
        return writes_append_deletion_vectors(self.store)

    def deletion_scan_files(self, snapshot: Snapshot) -> list[DvScanFile]:
        """Every live data file of ``snapshot`` with its path, schema version and deleted positions."""
        return dv_scan_files(self.store, snapshot)

    def new_deletion_commit(self, snapshot: Snapshot | None) -> AppendDeletionCommit:
        """Rows of ``snapshot``'s files to mark deleted; publish it with
        ``new_commit().commit_with_deletions``."""
        store = self.store
        check_rewritable(store.schema, store.paths.root)  # deletion vectors keep every other row's id
        return AppendDeletionCommit(store, snapshot, self.commit_user)

    def for_independent_tasks(self, *, pin: bool = True) -> WriteBuilder[T]:
        """This write, for tasks that receive rows as they come (a DataFrame's own partitions):
        dynamic buckets are assigned by rules every task agrees on from one base snapshot (``pin``:
        the latest as of now; else the latest when each task starts, for streaming micro-batches),
        and the commit joins their index files (``engine.write.shared_assignment``)."""
        if not pin:
            return dataclasses.replace(self, shared_base=-1)
        latest = self.store.snapshots.latest()
        return dataclasses.replace(self, shared_base=latest.id if latest is not None else 0)

    def with_job_parallelism(self, parallelism: int | None) -> WriteBuilder[T]:
        """This write as a job of ``parallelism`` tasks lays out dynamic buckets:
        ``dynamic-bucket.assigner-parallelism`` = ``parallelism`` when neither the table nor the
        write's options set it (Paimon's Spark writer defaults it to the job's parallelism, so new
        keys spread over that many assigners' buckets; cross-partition upsert tables too, as
        Paimon's ``GlobalIndexAssigner`` job). Other bucket modes are unchanged."""
        store = self.store
        if (parallelism is None or not is_dynamic_bucket(store)
                or store.options.get(DYNAMIC_BUCKET_ASSIGNER_PARALLELISM) is not None):
            return self
        lanes = str(max(1, int(parallelism)))
        store = store.with_options({DYNAMIC_BUCKET_ASSIGNER_PARALLELISM.key: lanes})
        return dataclasses.replace(self, store=store)

    def clustering(self) -> list[str] | None:
        """Columns a distributed write must cluster rows by (dynamic-bucket tables: no two tasks may
        share a key map; ``[]``: one task), None when rows may go to tasks as they come."""
        return writer_clustering(self.store)

    def new_write(self, *, sequence_offset: int = 0, namer: FileNamer | None = None) -> TableWrite:
        """A writer of this table; UnsupportedTableError (engine.features) for a table whose newer
        Paimon features dyntable's writes would not keep."""
        store = self.store
        (check_rewritable if self.overwrite is not None else check_appendable)(store.schema, store.paths.root)
        writer = new_writer(self.store, compact=False, sequence_offset=sequence_offset, namer=namer,
                            shared_base=self.shared_base, keep_row_ids=self.row_ids)
        return TableWrite(self.store, writer)

    def new_task_write(self, job: str, task: int, attempt: int = 0, *, abortable: bool = False) -> TableWrite:
        """The writer of one task (``task``: its index in the job, ``attempt``: its try).
        ``abortable``: refuse to hand back messages once the job was aborted (see the module doc)."""
        namer = FileNamer(job, ((task << 8) + attempt) << FILE_COUNTER_BITS)
        write = self.new_write(sequence_offset=task << SEQUENCE_STRIDE_BITS, namer=namer)
        write.abort_marker = self.abort_marker(job) if abortable else None
        write.job = job
        return write

    # -- level-0 files written outside the engine (engine.write.kv_import) --------------------------
    def kv_import_unsupported(self) -> str | None:
        """Why this write cannot import level-0 files written by another Parquet writer (None: it can)."""
        return KvFileImport.unsupported(self.store)

    def new_kv_import(self, job: str) -> KvFileImport:
        """An import of job ``job``'s outside-written level-0 files; UnsupportedTableError as
        :meth:`new_write`."""
        store = self.store
        (check_rewritable if self.overwrite is not None else check_appendable)(store.schema, store.paths.root)
        return KvFileImport(store, job)

    def new_commit(self) -> CommitBuilder:
        from engine.builders.commit import CommitBuilder

        return CommitBuilder(self.store, self.overwrite, self.commit_user)

    # -- a distributed job's files ---------------------------------------------------------------
    def abort_marker(self, job: str) -> str:
        return f"{self.store.paths.root}/{ABORTED_JOBS_DIR}/{job}"

    def abort_job(self, job: str) -> None:
        """Abort a job that published nothing: the marker first, then every file of the job."""
        self.store.io.try_create(self.abort_marker(job), b"aborted")
        self.delete_job_files(job)

    def delete_job_files(self, job: str) -> None:
        """Delete every data and changelog file the job wrote (found by its token in the name)."""
        store = self.store
        io = store.io
        external = ExternalPaths.of(store.schema.options)
        roots = [store.paths.root,
                 *(store.paths.external_file(r) for r in (external.roots if external else ()))]
        for status in (s for root in roots for s in io.list_files_recursive(root)):
            name = status.path.rsplit("/", 1)[-1]
            if job in name and (name.startswith("data-") or name.startswith("changelog-")):
                io.delete(status.path)


class TableWrite:
    """One writer of ``store``'s table: ``write`` Arrow data, then ``prepare_commit`` (messages)
    or ``abort``."""

    def __init__(self, store: FileStore, writer: object) -> None:
        self.store = store
        self.writer = writer
        self.abort_marker: str | None = None
        self.job: str | None = None

    def write(self, data: object) -> None:
        self.writer.write(data)  # type: ignore[attr-defined]

    def prepare_commit(self) -> list[CommitMessage]:
        """The commit messages of everything written; the writer is finished.

        Raises:
            JobAbortedError: the task's job was aborted meanwhile (its files are deleted).
        """
        messages: list[CommitMessage] = self.writer.prepare_commit()  # type: ignore[attr-defined]
        if self.abort_marker is not None and self.store.io.exists(self.abort_marker):
            delete_uncommitted(self.store, messages)
            raise JobAbortedError(
                f"write job {self.job} on {self.store.name} was aborted; this task deleted its files")
        return messages

    def abort(self) -> None:
        """Delete what this writer wrote (nothing was committed)."""
        self.writer.abort()  # type: ignore[attr-defined]

    def write_all(self, batches: object) -> list[CommitMessage]:
        """Write every batch of an iterable and prepare the commit; on any failure, abort."""
        try:
            for batch in batches:  # type: ignore[attr-defined]
                self.write(batch)
            return self.prepare_commit()
        except JobAbortedError:
            raise
        except BaseException:
            self.abort()
            raise
