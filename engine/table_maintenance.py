"""``table.maintenance``: expiration, cleanup and repair of a table branch.

One job: group the maintenance operations of ``engine.ops`` behind one small object, each call
recorded in the table's maintenance log where the operation records itself:

```
expire_snapshots / expire_partitions / expire_tags / expire_changelog     what time and counts let go
remove_orphan_files / remove_missing_files / purge_files                  files nothing (or no file) backs
advance_retention_mark / retention_mark                                   the floor of time travel
compact_manifests / mark_partitions_done / repair_earliest_snapshot       metadata upkeep
```

Every "older than" argument takes any form of ``engine.time_bound`` (datetime, date, timedelta,
ISO text, duration text, epoch milliseconds) with the same meaning in each operation; durations
(``retention``) take what ``parse_duration_argument`` takes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from engine.ops.tags import TagDeletion, TagOps
from engine.time_bound import TimeBoundLike, parse_duration_argument

if TYPE_CHECKING:
    from engine.history.retention_mark import MarkResult, RetentionMark
    from engine.ops.compact_manifest import ManifestCompaction
    from engine.ops.expire_changelog import ChangelogExpiry
    from engine.ops.expire_partitions import PartitionExpiration
    from engine.ops.expire_snapshots import ExpireReport
    from engine.ops.maintenance_log import MaintenanceRecord
    from engine.ops.missing_files import MissingFiles
    from engine.ops.orphan_files import OrphanFilesResult
    from engine.ops.purge import PurgeReport
    from engine.ops.rewrite_file_index import FileIndexRewrite
    from engine.store import FileStore


class TableMaintenance:
    """``table.maintenance``: the maintenance operations of one table branch."""

    def __init__(self, store: FileStore) -> None:
        self._store = store

    # -- expiration --------------------------------------------------------------------------------
    def expire_snapshots(
        self,
        *,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than: TimeBoundLike | None = None,
        max_deletes: int | None = None,
        dry_run: bool = False,
    ) -> ExpireReport:
        """Expire old snapshots and exactly the files nothing else needs; recorded in the maintenance log.

        Arguments override ``snapshot.num-retained.max/min``, ``now - snapshot.time-retained``
        (``older_than``) and ``snapshot.expire.limit``. ``dry_run`` changes nothing and reports what
        would go and why the rest stays. Raises UnsafeToDeleteError (naming the file) when a
        reference is unreadable.
        """
        from engine.ops.expire_snapshots import run_recorded

        return run_recorded(self._store, retain_max=retain_max, retain_min=retain_min, older_than=older_than,
                            max_deletes=max_deletes, dry_run=dry_run)

    def expire_partitions(
        self,
        older_than: TimeBoundLike | None = None,
        *,
        timestamp_formatter: str | None = None,
        timestamp_pattern: str | None = None,
        max_expires: int | None = None,
        expire_strategy: str | None = None,
        dry_run: bool = False,
    ) -> PartitionExpiration:
        """Drop (mark-delete) the partitions whose time is before ``older_than`` (default: the
        table's ``partition.expiration-time`` ago; a duration such as ``'7 d'`` means that long
        ago); the data files go when snapshot expiration removes them."""
        from engine.ops.expire_partitions import expire_table_partitions

        return expire_table_partitions(
            self._store, expiration_time=older_than, timestamp_formatter=timestamp_formatter,
            timestamp_pattern=timestamp_pattern, max_expires=max_expires, dry_run=dry_run,
            expire_strategy=expire_strategy)

    def expire_tags(self, older_than: TimeBoundLike | None = None, *, dry_run: bool = False) -> TagDeletion:
        """Delete the tags past their retention, and (with ``older_than``) those created before it."""
        return TagOps(self._store).expire(older_than, dry_run=dry_run)

    def expire_changelog(self, *, dry_run: bool = False) -> ChangelogExpiry:
        """Expire the long-lived changelogs the ``changelog.*`` retention options let go (snapshot
        expiration also does this on each run)."""
        from engine.ops.expire_changelog import expire_changelogs

        return expire_changelogs(self._store, dry_run=dry_run)

    # -- the retention mark ------------------------------------------------------------------------
    def advance_retention_mark(self, retention: int | dt.timedelta | str | None = None) -> MarkResult:
        """Advance the retention mark to the newest snapshot committed at or before now −
        ``retention`` (default: the table's ``retention.time``); never backwards."""
        from engine.history.retention_mark import advance
        from engine.ops.maintenance_log import recorded_run

        retention_ms = None if retention is None else parse_duration_argument(retention, "retention")
        store = self._store
        with recorded_run(store.io, store.paths.root, "retention_mark", branch=store.branch) as record:
            result = advance(store, retention_ms)
            record.details = {"advanced": result.advanced,
                              "snapshot_id": None if result.mark is None else result.mark.snapshot_id}
        return result

    def retention_mark(self) -> RetentionMark | None:
        """The branch's current retention mark (None: none set)."""
        from engine.history.retention_mark import read_mark

        return read_mark(self._store.io, self._store.paths.branch_root)

    # -- cleanup -----------------------------------------------------------------------------------
    def remove_orphan_files(
        self,
        older_than: TimeBoundLike | None = None,
        *,
        dry_run: bool = False,
        force: bool = False,
        parallelism: int | None = None,
    ) -> OrphanFilesResult:
        """Delete the files no snapshot, tag, branch or changelog references, older than ``older_than``
        (default one day ago; less than one hour ago only with ``force``). Recorded in the
        maintenance log."""
        from engine.ops.orphan_files import remove_table_orphan_files

        store = self._store
        return remove_table_orphan_files(store.io, store.paths.root, older_than=older_than, dry_run=dry_run,
                                         force=force, parallelism=parallelism, branch=store.branch)

    def remove_missing_files(self, *, dry_run: bool = False, parallelism: int | None = None) -> MissingFiles:
        """Drop the live files whose file no longer exists, in one snapshot (engine.ops.missing_files)."""
        from engine.ops.missing_files import remove_missing_files

        return remove_missing_files(self._store, dry_run=dry_run, parallelism=parallelism)

    def purge_files(self, *, dry_run: bool = False) -> PurgeReport:
        """Drop branches, tags, consumers, data and history; the schema stays (engine.ops.purge)."""
        from engine.ops.purge import purge_files

        return purge_files(self._store, dry_run=dry_run)

    # -- metadata upkeep ---------------------------------------------------------------------------
    def compact_manifests(self, *, dry_run: bool = False) -> ManifestCompaction:
        """Merge the data manifests into few live-only ones, as a new COMPACT snapshot."""
        from engine.ops.compact_manifest import compact_manifests

        return compact_manifests(self._store, dry_run=dry_run)

    def rebuild_iceberg_metadata(self) -> int | None:
        """Publish the table's Iceberg metadata (``metadata.iceberg.storage``) afresh from its latest
        snapshot: for a table that set the option after its first commits, or whose Iceberg metadata
        was lost. Returns the version published (the latest snapshot id); None when the table
        publishes none (the option unset, or no snapshot yet)."""
        from engine.iceberg import rebuild

        return rebuild(self._store)

    def rewrite_file_index(
        self, partitions: Sequence[Mapping[str, object]] | None = None, *, dry_run: bool = False
    ) -> FileIndexRewrite:
        """Build the configured data-file indexes for existing files (engine.ops.rewrite_file_index)."""
        from engine.ops.rewrite_file_index import rewrite_file_index

        return rewrite_file_index(self._store, partitions, dry_run=dry_run)

    def trigger_tag_automatic_creation(self) -> list[str]:
        """Create the automatic tags due now (``tag.automatic-creation``) and return their names;
        unlike the run after a commit, which never fails the commit, errors are raised."""
        from engine.ops.auto_tags import AutoTagger

        return AutoTagger(self._store).run()

    def recorded(self, operation: str) -> AbstractContextManager[MaintenanceRecord]:
        """A ``$maintenance_log`` record of an operation the engine does not run itself (SQL's
        ``rescale``): ``with table.maintenance.recorded("rescale") as rec: ...; rec.details = {...}``."""
        from engine.ops.maintenance_log import recorded_run

        return recorded_run(self._store.io, self._store.paths.root, operation, branch=self._store.branch)

    def mark_partitions_done(self, partitions: Sequence[Mapping[str, object]]) -> list[str]:
        """Run ``partition.mark-done-action`` on each partition (engine.ops.partition_done)."""
        from engine.ops.partition_done import mark_partitions_done

        return mark_partitions_done(self._store, partitions)

    def repair_earliest_snapshot(self, snapshot_id: int) -> int:
        """Point the EARLIEST hint past a gap in the history; returns the previous earliest id."""
        from engine.ops.earliest_repair import repair_earliest_snapshot

        return repair_earliest_snapshot(self._store, snapshot_id)


__all__ = ["TableMaintenance"]
