"""``table.refs``: the references of a table branch — tags, branches, consumers — and rollback.

One job: group the reference operations of ``engine.ops`` (tags, branches, replace_main,
rollback, consumers) behind one small object per kind, so ``Table`` stays a short façade:

```
table.refs.tags       create / create_from_timestamp / replace / rename / delete; names / get / exists / all
table.refs.branches   create / delete / rename / fast_forward / replace_main, and names / exists
table.refs.consumers  start / reset / delete / clear, and ids / get / all
table.refs.rollback_to(version) / rollback_to_timestamp(timestamp) / rollback_to_watermark(watermark)
```

Points in time (``create_from_timestamp``, ``rollback_to_timestamp``) go through
``engine.time_bound``, so they accept what every other time argument accepts. The read methods
hand out values (``Tag``, ``Consumer``), never the stores that write them. Expiring tags is
maintenance (``table.maintenance.expire_tags``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.meta.refs import ConsumerStore, TagStore
from engine.ops.branches import BranchDeletion, BranchOps
from engine.ops.tags import TagDeletion, TagOps, TimeRetained
from engine.time_bound import TimeBoundLike, time_bound_millis

if TYPE_CHECKING:
    from engine.meta.snapshot import Consumer, Tag
    from engine.ops.branches import FastForwardResult
    from engine.ops.consumers import ClearedConsumers
    from engine.ops.merge_branch import BranchMerge
    from engine.ops.replace_main import ReplaceMainResult
    from engine.ops.rollback import RollbackResult
    from engine.store import FileStore


class Tags:
    """The tags of one table branch."""

    def __init__(self, store: FileStore) -> None:
        self._store = store
        self._tags = TagStore(store.io, store.paths)

    # -- reading ----------------------------------------------------------------------------------
    def names(self) -> list[str]:
        return self._tags.names()

    def exists(self, name: str) -> bool:
        return self._tags.exists(name)

    def get(self, name: str) -> Tag:
        """The tag ``name``; NoSuchTagError if there is none."""
        return self._tags.get(name)

    def all(self) -> dict[str, Tag]:
        """Tag name → tag, for every tag of the branch."""
        return self._tags.all()

    # -- changing ---------------------------------------------------------------------------------
    def create(self, name: str, snapshot_id: int | None = None, time_retained: TimeRetained = None) -> Tag:
        """Tag a snapshot (default: the latest); TagAlreadyExistsError / NoSuchSnapshotError change
        nothing. ``time_retained``: ms, a timedelta or a duration text such as ``'1 d'``."""
        return TagOps(self._store).create(name, snapshot_id, time_retained)

    def create_from_timestamp(
        self, name: str, timestamp: TimeBoundLike, time_retained: TimeRetained = None
    ) -> Tag:
        """Tag the first snapshot (or tagged snapshot) committed at or after ``timestamp`` (any
        form of ``engine.time_bound``)."""
        millis = time_bound_millis(timestamp, "timestamp")
        return TagOps(self._store).create_from_timestamp(name, millis, time_retained)

    def replace(self, name: str, snapshot_id: int | None = None, time_retained: TimeRetained = None) -> Tag:
        """Point the existing tag ``name`` at another snapshot (default: the latest)."""
        return TagOps(self._store).replace(name, snapshot_id, time_retained)

    def rename(self, old: str, new: str) -> None:
        TagOps(self._store).rename(old, new)

    def delete(self, names: str | Sequence[str], *, dry_run: bool = False) -> TagDeletion:
        """Delete tags and the files no other snapshot, tag or branch references (``dry_run``: only
        report)."""
        return TagOps(self._store).delete(names, dry_run=dry_run)


class Branches:
    """The branches of a table, created from (and fast-forwarded into) this branch."""

    def __init__(self, store: FileStore) -> None:
        self._store = store

    def _ops(self) -> BranchOps:
        return BranchOps(self._store)

    def names(self) -> list[str]:
        """The table's branches other than main, by name."""
        return self._ops().names()

    def exists(self, name: str) -> bool:
        return self._ops().exists(name)

    def create(self, name: str, from_tag: str | None = None, from_snapshot: int | None = None) -> None:
        """Create a branch: empty (this branch's schemas), from one of this branch's tags, or a
        snapshot id."""
        self._ops().create(name, from_tag, from_snapshot)

    def delete(self, name: str, *, dry_run: bool = False) -> BranchDeletion:
        """Delete a branch and the files no other branch, tag or snapshot references (fail closed)."""
        return self._ops().delete(name, dry_run=dry_run)

    def rename(self, old: str, new: str) -> None:
        self._ops().rename(old, new)

    def fast_forward(self, branch: str) -> FastForwardResult:
        """Give main the branch head's content as one new main snapshot (atomic for readers)."""
        return self._ops().fast_forward(branch)

    def replace_main(self, branch: str, *, keep_backup: bool = True) -> ReplaceMainResult:
        """Give main the branch head's content and schema as one new main snapshot
        (engine.ops.replace_main); main's superseded head is kept as tag
        ``replace-main-backup-<id>`` unless ``keep_backup`` is false."""
        from engine.ops.replace_main import replace_main

        return replace_main(self._store, branch, keep_backup=keep_backup)

    def merge(
        self, source: str, target: str | None = None, *, conflict: str = "fail", dry_run: bool = False
    ) -> BranchMerge:
        """Merge branch ``source`` into ``target`` (default main) as one new snapshot of ``target``
        (engine.ops.merge_branch): new files of an append branch, or changed keys of a primary-key
        branch through the merge engine; ``conflict``: ``fail`` | ``source`` | ``target`` for keys
        changed on both sides since the branch base."""
        from engine.identifier import MAIN_BRANCH
        from engine.ops.merge_branch import merge_branch

        return merge_branch(self._store, source, target or MAIN_BRANCH, conflict=conflict, dry_run=dry_run)


class Consumers:
    """The streaming consumers of one table branch (each keeps its next snapshot from expiring)."""

    def __init__(self, store: FileStore) -> None:
        self._store = store
        self._consumers = ConsumerStore(store.io, store.paths)

    def ids(self) -> list[str]:
        return self._consumers.ids()

    def get(self, consumer_id: str) -> Consumer | None:
        return self._consumers.get(consumer_id)

    def all(self) -> dict[str, Consumer]:
        return self._consumers.all()

    def start(self, consumer_id: str, next_snapshot: int) -> Consumer:
        """Record a new consumer at ``next_snapshot`` as its stream starts; an existing one is
        returned unchanged. SnapshotExpiredConcurrentlyError if expiration removed
        ``next_snapshot`` meanwhile (nothing is left behind: start again)."""
        return self._consumers.start(consumer_id, next_snapshot)

    def reset(self, consumer_id: str, next_snapshot: int) -> None:
        """Move (or create) a consumer to ``next_snapshot`` (Paimon's reset_consumer)."""
        self._consumers.record(consumer_id, next_snapshot)

    def delete(self, consumer_id: str) -> None:
        self._consumers.delete(consumer_id)

    def clear(
        self, including: str | None = None, excluding: str | None = None, *, dry_run: bool = False
    ) -> ClearedConsumers:
        """Delete the consumers whose id fully matches ``including`` (all) and not ``excluding``."""
        from engine.ops.consumers import clear_consumers

        return clear_consumers(self._store, including, excluding, dry_run=dry_run)


class TableRefs:
    """``table.refs``: tags, branches and consumers of a table branch, and rollback."""

    def __init__(self, store: FileStore) -> None:
        self._store = store
        self.tags = Tags(store)
        self.branches = Branches(store)
        self.consumers = Consumers(store)

    def rollback_to(self, version: int | str) -> RollbackResult:
        """Make a snapshot id's or tag's content the table's, as a new snapshot (metadata only)."""
        from engine.ops.rollback import rollback_to

        return rollback_to(self._store, version)

    def rollback_to_timestamp(self, timestamp: TimeBoundLike) -> RollbackResult:
        """Roll back to the newest snapshot committed at or before ``timestamp`` (any form of
        ``engine.time_bound``)."""
        from engine.ops.rollback import rollback_to_timestamp

        return rollback_to_timestamp(self._store, time_bound_millis(timestamp, "timestamp"))

    def rollback_to_watermark(self, watermark: int) -> RollbackResult:
        """Roll back to the newest snapshot whose watermark is at or below ``watermark``."""
        from engine.ops.watermark_rollback import rollback_to_watermark

        return rollback_to_watermark(self._store, watermark)


__all__ = ["Branches", "Consumers", "TableRefs", "Tags"]
