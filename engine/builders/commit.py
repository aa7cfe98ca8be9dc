"""Committing in one step: publish a write's commit messages as one snapshot, then run the
commit's post-commit hooks (``engine.builders.hooks``) — the one place they run.

```
 CommitBuilder (immutable)  overwrite · commit user · identifier · base snapshot · change tracking · hooks
   .commit(messages)  ─► CommitResult(snapshot ids, rows added)   publish, then PostCommit.run
   .commit_with_deletions(deletions, messages)   the same for a row-level change of a DV append table
   .abort(messages)   ─► the messages' files deleted (nothing refers to them)
   .is_published(identifier, not_before_millis)   did this user publish it (a job's abort asks)
   .latest_committed_identifier()                 exactly-once streaming restarts
```
With a ``commit_user`` and an ``identifier`` (increasing per user), a retry after
CommitStateUnknownError is idempotent: an identifier already published is skipped (an empty
result) and its messages' files are left to the caller (``abort``) to delete.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.builders.hooks import CompactionRunner, PostCommit
from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage, CommitResult, OverwriteSpec, delete_uncommitted
from engine.errors import CommitStateUnknownError
from engine.meta.snapshot import CommitKind
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore
from engine.write.shared_assignment import delete_replaced, merge_task_messages

if TYPE_CHECKING:
    from engine.append_deletions import AppendDeletionCommit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommitBuilder:
    """One commit to ``store``'s table. ``identifier``: None is a batch commit; ``base_snapshot_id``: the
    snapshot an overwrite's new content was computed from (a change to the replaced partitions
    since then is a CommitConflictError); ``change_tracking``: None follows the table option."""

    store: FileStore
    overwrite: OverwriteSpec | None = None
    commit_user: str | None = None
    identifier: int | None = None
    base_snapshot_id: int | None = None
    change_tracking: bool | None = None
    hooks: PostCommit = field(default_factory=PostCommit)

    def with_overwrite(self, overwrite: OverwriteSpec | None) -> CommitBuilder:
        return dataclasses.replace(self, overwrite=overwrite)

    def with_commit_user(self, commit_user: str | None) -> CommitBuilder:
        return dataclasses.replace(self, commit_user=commit_user)

    def with_identifier(self, identifier: int | None) -> CommitBuilder:
        return dataclasses.replace(self, identifier=identifier)

    def with_base_snapshot(self, snapshot_id: int | None) -> CommitBuilder:
        return dataclasses.replace(self, base_snapshot_id=snapshot_id)

    def with_change_tracking(self, change_tracking: bool | None) -> CommitBuilder:
        return dataclasses.replace(self, change_tracking=change_tracking)

    def with_compaction_runner(self, runner: CompactionRunner | None) -> CommitBuilder:
        """Run the post-commit compaction's tasks with ``runner`` (e.g. one Spark task per bucket)."""
        return dataclasses.replace(self, hooks=dataclasses.replace(self.hooks, compaction_runner=runner))

    def with_deferred_compaction(self) -> CommitBuilder:
        """Publish without the post-commit compaction; the caller runs :meth:`compact_deferred`."""
        return dataclasses.replace(self, hooks=dataclasses.replace(self.hooks, defer_compaction=True))

    def compact_deferred(self, after_snapshot_id: int | None) -> CommitResult:
        """The post-commit compaction a commit of this user with deferred compaction left: of the
        buckets its snapshots after ``after_snapshot_id`` (None: all) wrote, with this builder's
        runner. Nothing to do when the user published nothing since. Never raises."""
        store = self.store.refresh()
        buckets: set[tuple[bytes, int]] = set()
        latest = store.snapshots.latest_id()
        first = (after_snapshot_id or 0) + 1
        try:
            earliest = store.snapshots.earliest_id() or first
            for sid in range(max(first, earliest), (latest or 0) + 1):
                snapshot = store.snapshots.get(sid)
                if snapshot.commit_user != self.commit_user or snapshot.commit_kind is CommitKind.COMPACT:
                    continue
                for meta in store.manifests.read_list(snapshot.delta_manifest_list):
                    entries = store.manifests.read_entries(meta.file_name)
                    buckets.update((e.partition, e.bucket) for e in entries)
        except Exception as e:  # noqa: BLE001 - the write is committed; its outcome must not change
            log.warning("the compaction after a write to %s was not run (a later write retries): %s",
                        store.name, e)
            return CommitResult(())
        return self.hooks.compact(store, buckets, self.identifier)

    def _committer(self) -> FileStoreCommit:
        return FileStoreCommit(self.store, self.commit_user)

    def commit(self, messages: Sequence[CommitMessage]) -> CommitResult:
        """Publish ``messages`` (append, or the overwrite), then run the post-commit hooks.

        The outcome is the publish's: once it succeeded nothing that follows can fail it. On a
        failure other than CommitStateUnknownError the messages' files are deleted.
        """
        committer = self._committer()
        identifier = BATCH_COMMIT_IDENTIFIER if self.identifier is None else self.identifier
        # Independent tasks of one write: one HASH file per bucket, and keys left in one place.
        store = self.store
        messages, replaced = merge_task_messages(store, messages)
        try:
            if self.overwrite is None:
                tracking = self.change_tracking
                if tracking is None:
                    tracking = store.options.change_tracking
                result = committer.commit(messages, identifier, change_tracking=tracking)
            else:
                result = committer.overwrite(messages, self.overwrite, identifier,
                                             base_snapshot_id=self.base_snapshot_id)
        except CommitStateUnknownError:
            raise  # the per-task files may be needed to retry: keep them
        except BaseException:
            delete_replaced(store, replaced)
            raise
        delete_replaced(store, replaced)
        if result.snapshot_ids:
            compaction = self.hooks.run(self.store, messages, self.identifier)
            result = CommitResult(result.snapshot_ids + compaction.snapshot_ids, result.rows_added)
        return result

    def commit_with_deletions(
        self, deletions: AppendDeletionCommit, messages: Sequence[CommitMessage] = ()
    ) -> CommitResult:
        """Publish the rows ``deletions`` marks deleted (deletion vectors of an append table) and
        ``messages`` (the new rows of an UPDATE/MERGE) as one snapshot, then run the post-commit
        hooks, as :meth:`commit` does."""
        result = deletions.commit(messages)
        if result.snapshot_ids:
            compaction = self.hooks.run(self.store, messages)
            result = CommitResult(result.snapshot_ids + compaction.snapshot_ids, result.rows_added)
        return result

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files of messages that were never committed."""
        delete_uncommitted(self.store, messages)

    def is_published(self, identifier: int | None = None, *, not_before_millis: int | None = None) -> bool:
        """Whether this commit user published ``identifier`` (None: the batch identifier), looking
        at snapshots committed at or after ``not_before_millis``. Raises on unreadable metadata."""
        ident = BATCH_COMMIT_IDENTIFIER if identifier is None else identifier
        return self._committer().find_own_snapshot(ident, not_before_millis=not_before_millis) is not None

    def latest_committed_identifier(self) -> int | None:
        return self._committer().latest_committed_identifier()
