"""A distributed write job's lifecycle, in one place: tasks write, one commit publishes, or the job
is aborted — with one rule for cleanup and for replays.

```
 WriteJob.batch(builder, commit) / WriteJob.micro_batch(builder, commit)   (immutable, picklable)
   .tasks().write(task, attempt, batches)  ─► commit messages  in each task (executors)
   .commit(messages, identifier)        ─► CommitResult        once, where the job is driven
   .tasks_failed()                         the job never reached its commit
   .abort(messages, identifier)            the engine driving the job gave up (any process)
```
Every writer of the SQL layer and the data source uses it: SQL writes (one job and one commit),
``df.write`` (Spark's DataSourceWriter commit/abort, in worker processes), each micro-batch of a
streaming sink, and the new rows of a deletion-vector UPDATE/MERGE.

The rules:

* **A failed commit** deletes what the job wrote, unless its outcome is unknown
  (``CommitStateUnknownError``: the snapshot may name the files, so they stay).
* **A replay** — a commit whose identifier this commit user already published (Spark retrying a
  job's commit, a stream restarted from its checkpoint) — publishes nothing and deletes this
  attempt's files.
* **An abort** deletes nothing once the job's snapshot exists or might exist (the table's
  metadata cannot be read): files named by a snapshot belong to the table. Whether it exists is
  read back from the table by commit user and identifier, never remembered, because Spark may
  call commit and abort in different processes.
* **How files are found.** A batch job's files carry its token in their names: its abort writes
  the job's marker, then deletes every file with the token, so a task still running finds the
  marker and deletes its own (``WriteBuilder.abort_job``). Micro-batches of one stream share
  their writer's token, so a micro-batch's files are deleted by its messages.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.commit_messages import CommitMessage, CommitResult
from engine.errors import CommitStateUnknownError

if TYPE_CHECKING:
    import pyarrow as pa

    from engine.builders.commit import CommitBuilder
    from engine.builders.write import WriteBuilder

#: How far before a job's start its commit is still searched for (clocks of the processes differ).
COMMIT_CLOCK_SLACK_MS = 10 * 60 * 1000


@dataclass(frozen=True)
class JobTasks:
    """The task side of a :class:`WriteJob` (picklable)."""

    builder: WriteBuilder
    token: str
    abortable: bool

    def write(self, task: int, attempt: int, batches: Iterable[pa.RecordBatch]) -> list[CommitMessage]:
        """Write one task's batches (``task``: its index in the job, ``attempt``: its try); its
        messages. A batch job's task that finishes after the job was aborted deletes its files and
        raises JobAbortedError."""
        write = self.builder.new_task_write(self.token, task, attempt, abortable=self.abortable)
        return write.write_all(batches)


@dataclass(frozen=True)
class WriteJob:
    """One write job of ``builder``'s table, committed by ``committer``. ``batch``: one commit for
    the whole job (files found by the job's token); else one commit per micro-batch."""

    builder: WriteBuilder
    committer: CommitBuilder
    token: str
    started_millis: int
    batch: bool = True

    @classmethod
    def for_batch(cls, builder: WriteBuilder, committer: CommitBuilder | None = None,
                  prefix: str = "") -> WriteJob:
        return cls(builder, committer or builder.new_commit(), f"{prefix}{uuid.uuid4()}",
                   int(time.time() * 1000))

    @classmethod
    def for_stream(cls, builder: WriteBuilder, committer: CommitBuilder | None = None) -> WriteJob:
        return cls(builder, committer or builder.new_commit(), str(uuid.uuid4()),
                   int(time.time() * 1000), batch=False)

    def with_committer(self, committer: CommitBuilder) -> WriteJob:
        return dataclasses.replace(self, committer=committer)

    # -- tasks ---------------------------------------------------------------------------------
    def tasks(self) -> JobTasks:
        """What the job's tasks need, and nothing of the commit (whose hooks may hold a Spark
        session): the object to ship to executors."""
        return JobTasks(self.builder, self.token, self.batch)

    def write_task(self, task: int, attempt: int, batches: Iterable[pa.RecordBatch]) -> list[CommitMessage]:
        return self.tasks().write(task, attempt, batches)

    def tasks_failed(self) -> None:
        """The job failed before its commit: nothing was published; delete what its tasks wrote."""
        self.builder.abort_job(self.token)

    # -- commit and abort ------------------------------------------------------------------------
    def commit(self, messages: Sequence[CommitMessage], identifier: int | None = None) -> CommitResult:
        """Publish ``messages`` as one snapshot (``identifier``: None for a batch commit, else this
        commit user's increasing id), then the post-commit hooks; the cleanup rules above."""
        committer = self.committer if identifier is None else self.committer.with_identifier(identifier)
        try:
            result = committer.commit(messages)
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: keep them
        except BaseException:
            if self.batch:  # the commit deleted its messages' files; this gets the rest
                self.builder.delete_job_files(self.token)
            raise
        if committer.identifier is not None and not result.snapshot_ids and messages:
            # A replayed, already-published identifier: this attempt's files are nobody's.
            if self.batch:
                self.builder.delete_job_files(self.token)
            else:
                committer.abort(messages)
        return result

    def abort(self, messages: Sequence[CommitMessage], identifier: int | None = None) -> None:
        """Give the job up: delete its files, unless its snapshot exists or may exist."""
        if self._published(identifier) is not False:
            return
        if self.batch:
            self.builder.abort_job(self.token)
        else:
            self.committer.abort(messages)

    def _published(self, identifier: int | None) -> bool | None:
        """Whether this commit user published ``identifier``; None when it cannot be told."""
        ident = identifier if identifier is not None else self.committer.identifier
        try:
            if not self.batch:
                done = self.committer.latest_committed_identifier()
                return done is not None and ident is not None and done >= ident
            since = self.started_millis - COMMIT_CLOCK_SLACK_MS
            return self.committer.is_published(ident, not_before_millis=since)
        except Exception:  # noqa: BLE001 - unreadable metadata: the outcome is unknown
            return None
