"""What follows a published commit, in one place: compaction, automatic tags, partition
expiration, snapshot expiration — the hooks every commit carries (``CommitBuilder.commit``).

* compaction (primary-key tables, of the buckets the commit wrote) unless the table is
  ``write-only``: a full one when ``full-compaction.delta-commits`` asks for it (every batch
  commit, and a streaming commit whose identifier + 1 is a multiple of it: Paimon's Spark
  writer), else as the compaction strategy picks; its runner is pluggable (in process by
  default, one Spark task per bucket in the SQL layer: :class:`PostCommit` ``compaction_runner``);
* automatic tags (``tag.automatic-creation``), always;
* unless ``write-only``: partition expiration when its check interval passed, then snapshot
  expiration. Paimon's ``write-only`` means exactly that: writers never compact and commits never
  expire; a dedicated job does both.

Iceberg metadata (``metadata.iceberg.storage``) is not a hook here: like Paimon's commit callback
it follows every snapshot where snapshots are published (``engine.commit``, ``engine.ops.republish``)
and drops expired snapshots inside expiration, before their files go (``engine.iceberg``).

Each step is guarded on its own: the write is committed, so nothing here can fail it (failures
are logged and the step is tried again after a later commit).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.commit_messages import CommitMessage, CommitResult

if TYPE_CHECKING:
    from engine.compaction import CompactionTask
    from engine.store import FileStore

log = logging.getLogger(__name__)

#: Runs planned compaction tasks and returns their messages (see ``engine.compaction.compact``).
CompactionRunner = Callable[["FileStore", Sequence["CompactionTask"]], list[CommitMessage]]


@dataclass(frozen=True)
class PostCommit:
    """The hooks of one commit. ``compaction_runner``: None compacts in this process;
    ``defer_compaction``: the compaction is left to the caller, who runs :meth:`compact` later
    where it has a better runner (a DataFrame write's driver, while its commit runs in a worker)."""

    compaction_runner: CompactionRunner | None = None
    defer_compaction: bool = False

    def run(
        self, store: FileStore, messages: Sequence[CommitMessage], identifier: int | None = None
    ) -> CommitResult:
        """Run every hook after a commit to ``store``'s table published ``messages`` (with commit
        ``identifier``, None: a batch commit); returns the compaction's result. Never raises."""
        result = CommitResult(())
        if not self.defer_compaction:
            result = self.compact(store, {(m.partition, m.bucket) for m in messages}, identifier)
        from engine.ops.auto_tags import run_after_commit as auto_tags

        auto_tags(store)  # never raises
        if store.options.write_only:
            return result  # Paimon's write-only: compaction and expiration belong to a dedicated job
        from engine.ops.expire_partitions import run_after_commit as expire_partitions
        from engine.ops.expire_snapshots import run_after_commit as expire_snapshots

        # Partitions first: their mark-delete commit is a snapshot the expiration then counts.
        expire_partitions(store)  # never raises
        expire_snapshots(store)  # never raises; sync or async by snapshot.expire.execution-mode
        return result

    def compact(
        self, store: FileStore, buckets: set[tuple[bytes, int]], identifier: int | None
    ) -> CommitResult:
        """The post-commit compaction of ``buckets`` (``(partition, bucket)`` a commit with
        ``identifier`` wrote), as the table's options say. Never raises."""
        if not store.has_primary_key or store.options.write_only or not buckets:
            return CommitResult(())
        full = _full_compaction_due(store, identifier)
        try:
            from engine.compaction import compact, run_in_process

            return compact(store, full=full, buckets=buckets, runner=self.compaction_runner or run_in_process)
        except Exception as e:  # noqa: BLE001 - the write is committed; its outcome must not change
            log.warning(
                "automatic compaction of %s failed and will be retried after a later write: %s", store.name, e
            )
            return CommitResult(())


def _full_compaction_due(store: FileStore, identifier: int | None) -> bool:
    """Whether this commit's compaction is a full one by ``full-compaction.delta-commits``."""
    delta = store.options.full_compaction_delta_commits
    if delta is None:
        return False
    from engine.store import BATCH_COMMIT_IDENTIFIER

    if identifier is None or identifier == BATCH_COMMIT_IDENTIFIER:
        return True
    return (identifier + 1) % int(delta) == 0
