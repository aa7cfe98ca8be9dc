"""The ``Table`` facade: one table branch, its schema, and the operations on it.

Everything here delegates. Reads, writes and commits go through the builders
(``engine.builders``: ``new_read_builder``, ``new_write_builder``), which also carry the
post-commit hooks; maintenance goes to ``engine.ops``. A Table object is a view of the schema it
was loaded with; ``refresh()`` loads the latest. It pickles without its catalog (tasks get it).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage, CommitResult, OverwriteShorthand, OverwriteSpec
from engine.count_layout import is_count_layout, logical_schema
from engine.errors import InvalidArgumentError
from engine.identifier import Identifier
from engine.io import FileIO
from engine.meta.paths import TablePaths
from engine.meta.refs import ConsumerStore, TagStore
from engine.meta.snapshot import Snapshot, Tag
from engine.ops.tags import TagDeletion, TagOps, TimeRetained
from engine.options import CoreOptions, validate_options
from engine.read.split_reader import SplitReader
from engine.scan.planner import Plan, TableScan, store_at
from engine.scan.predicate import Predicate
from engine.schema import TableSchema
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore

if TYPE_CHECKING:
    from engine.builders.hooks import CompactionRunner
    from engine.builders.read import ReadBuilder
    from engine.builders.write import WriteBuilder
    from engine.catalog import FileSystemCatalog
    from engine.ops.branches import FastForwardResult
    from engine.ops.compact_manifest import ManifestCompaction
    from engine.ops.consumers import ClearedConsumers
    from engine.ops.expire_partitions import PartitionExpiration
    from engine.ops.expire_snapshots import ExpireReport
    from engine.ops.missing_files import MissingFiles
    from engine.ops.orphan_files import OrphanFilesResult
    from engine.ops.purge import PurgeReport
    from engine.ops.replace_main import ReplaceMainResult
    from engine.ops.retention_mark import MarkResult, RetentionMark
    from engine.ops.rollback import RollbackResult

log = logging.getLogger(__name__)

class Table:
    """A table branch as of one schema version."""

    def __init__(
        self,
        catalog: FileSystemCatalog | None,
        identifier: Identifier,
        io: FileIO,
        paths: TablePaths,
        schema: TableSchema,
    ) -> None:
        self.catalog = catalog
        self.identifier = identifier
        self.store = FileStore(io, paths, schema)
        # Count-layout tables are stored with a key and a count column; users see neither.
        self._logical = logical_schema(schema) if is_count_layout(schema) else schema

    def __getstate__(self) -> dict[str, object]:
        # A table crosses to tasks (builders pickle it) without its catalog: a task needs the
        # files, never the catalog, and a catalog may hold what should not travel.
        return {**self.__dict__, "catalog": None}

    # -- description ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.identifier.full_name

    @property
    def path(self) -> str:
        return self.store.paths.root

    @property
    def branch(self) -> str:
        return self.store.branch

    @property
    def schema(self) -> TableSchema:
        """The schema users see (for count-layout tables, without the stored key and count)."""
        return self._logical

    @property
    def arrow_schema(self) -> pa.Schema:
        return self.schema.arrow_schema()

    @property
    def options(self) -> dict[str, str]:
        return dict(self.schema.options)

    @property
    def core_options(self) -> CoreOptions:
        """The options typed by the option registry (``core_options.write_only`` ...)."""
        return self.store.options

    @property
    def primary_keys(self) -> tuple[str, ...]:
        return self.schema.primary_keys

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return self.schema.partition_keys

    @property
    def schemas(self):
        return self.store.schemas

    @property
    def tags(self) -> TagStore:
        return TagStore(self.store.io, self.store.paths)

    @property
    def consumers(self) -> ConsumerStore:
        return ConsumerStore(self.store.io, self.store.paths)

    def with_options(self, options: Mapping[str, str]) -> Table:
        """This table with ``options`` overriding its own for the operations of the returned
        object only (Paimon's dynamic options); nothing is stored.

        Raises:
            InvalidArgumentError: an unknown option or a bad value.
        """
        validate_options(options)
        stored = self.store.schema
        schema = dataclasses.replace(stored, options={**stored.options, **options})
        return Table(self.catalog, self.identifier, self.store.io, self.store.paths, schema)

    def refresh(self) -> Table:
        latest = self.store.schemas.latest()
        return Table(self.catalog, self.identifier, self.store.io, self.store.paths, latest or self.schema)

    def snapshots(self) -> list[Snapshot]:
        return self.store.snapshots.all()

    def latest_snapshot(self) -> Snapshot | None:
        return self.store.snapshots.latest()

    def snapshot_id_range(self) -> tuple[int | None, int | None]:
        """The earliest and latest existing snapshot ids (None, None for a table without any)."""
        snapshots = self.store.snapshots
        return snapshots.earliest_id(), snapshots.latest_id()

    def snapshots_between(self, start_exclusive: int, end_inclusive: int) -> Iterator[Snapshot]:
        """The snapshots with ``start < id <= end`` that still exist, ascending."""
        return self.store.snapshots.iter_range(start_exclusive, end_inclusive)

    def partition_dir(self, values: Sequence[object]) -> str:
        """The directory (relative to :attr:`path`) of the partition with these values, in
        partition-key order."""
        return self.store.partition_dir(values)

    @property
    def has_primary_key(self) -> bool:
        return self.store.has_primary_key

    # -- reading --------------------------------------------------------------------------------
    def new_read_builder(self) -> ReadBuilder:
        """The distributed read: plan splits (driver), read them (tasks); see engine.builders.read."""
        from engine.builders.read import ReadBuilder

        return ReadBuilder(self)

    def travelled(self, snapshot: Snapshot | None) -> Table:
        """This table as ``snapshot`` was written: in the schema it names (None: this table)."""
        store = store_at(self.store, snapshot)
        if store is self.store:
            return self
        return Table(self.catalog, self.identifier, store.io, store.paths, store.schema)

    def new_scan(self) -> TableScan:
        return TableScan(self.store)

    def new_read(self, columns: Sequence[str] | None = None, filter: Predicate | None = None) -> SplitReader:
        return SplitReader(self.store, columns, filter)

    def _read_builder(
        self,
        snapshot_id: int | None,
        tag: str | None,
        timestamp_millis: int | None,
        columns: Sequence[str] | None,
        filter: Predicate | None,
    ) -> ReadBuilder:
        builder = self.new_read_builder().with_projection(columns).with_filter(filter)
        if snapshot_id is None and tag is None and timestamp_millis is None:
            return builder
        return builder.at(snapshot_id=snapshot_id, tag=tag, timestamp_millis=timestamp_millis)

    def plan(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_millis: int | None = None,
        columns: Sequence[str] | None = None,
        filter: Predicate | None = None,
    ) -> Plan:
        """Plan a read; a time-travel plan's columns and filter are those of the snapshot's schema."""
        return self._read_builder(snapshot_id, tag, timestamp_millis, columns, filter).new_scan().plan()

    def to_arrow(
        self,
        snapshot_id: int | None = None,
        columns: Sequence[str] | None = None,
        filter: Predicate | None = None,
        *,
        tag: str | None = None,
        timestamp_millis: int | None = None,
    ) -> pa.Table:
        """Read the table (latest snapshot, or time travel) as one Arrow table.

        A time-travel read has the columns of the schema the snapshot was written with.
        """
        builder = self._read_builder(snapshot_id, tag, timestamp_millis, columns, filter)
        return builder.new_read().to_arrow(builder.new_scan().plan().splits)

    # -- writing --------------------------------------------------------------------------------
    def new_write_builder(
        self, overwrite: OverwriteSpec | None = None, *, commit_user: str | None = None
    ) -> WriteBuilder:
        """The distributed write: writers (tasks) hand commit messages to one commit that runs the
        post-commit hooks; see engine.builders.write and engine.builders.commit."""
        from engine.builders.write import WriteBuilder

        return WriteBuilder(self, overwrite, commit_user)

    def new_writer(self):
        """A writer for this table's layout (append, primary key, or count layout)."""
        from engine.write.factory import new_writer

        return new_writer(self.store)

    def new_commit(self, commit_user: str | None = None) -> FileStoreCommit:
        return FileStoreCommit(self.store, commit_user)

    def commit(
        self,
        messages: Sequence[CommitMessage],
        overwrite: OverwriteShorthand = False,
        *,
        commit_user: str | None = None,
        identifier: int = BATCH_COMMIT_IDENTIFIER,
        change_tracking: bool | None = None,
        base_snapshot_id: int | None = None,
    ) -> CommitResult:
        """Publish writer output as a snapshot (append, or overwrite of what ``overwrite`` selects),
        without the post-commit hooks (``new_write_builder().new_commit()`` runs them).

        ``base_snapshot_id``: the snapshot an overwrite's new content was computed from; if the
        replaced partitions changed since then, the commit fails with CommitConflictError.
        """
        committer = self.new_commit(commit_user)
        spec = OverwriteSpec.of(overwrite)
        if spec is None:
            if change_tracking is None:
                change_tracking = self.store.options.change_tracking
            return committer.commit(messages, identifier, change_tracking=change_tracking)
        return committer.overwrite(messages, spec, identifier, base_snapshot_id=base_snapshot_id)

    def write_arrow(
        self,
        data: object,
        overwrite: OverwriteShorthand = False,
        *,
        commit_user: str | None = None,
        identifier: int = BATCH_COMMIT_IDENTIFIER,
        change_tracking: bool | None = None,
    ) -> CommitResult:
        """Write Arrow data in one commit. On failure the written files are deleted and nothing is published.

        The outcome is the commit's: once it is published this returns normally, and the
        post-commit hooks that follow (compaction of primary-key tables, automatic tags,
        expiration; engine.builders.hooks) can no longer fail the write.
        With a ``commit_user`` and an ``identifier`` (increasing per user), a retry after
        CommitStateUnknownError is idempotent: a write already published is not applied again.
        """
        builder = self.new_write_builder(OverwriteSpec.of(overwrite), commit_user=commit_user)
        messages = builder.new_write().write_all([data])
        return (builder.new_commit().with_identifier(identifier).with_change_tracking(change_tracking)
                .commit(messages))

    def auto_tag(self) -> list[str]:
        """Create the tags ``tag.automatic-creation`` asks for now (engine.ops.auto_tags); never raises."""
        from engine.ops.auto_tags import run_after_commit

        return run_after_commit(self.store)

    def compact(
        self,
        *,
        full: bool = True,
        partitions: Sequence[Mapping[str, object]] | None = None,
        buckets: set[tuple[bytes, int]] | None = None,
        max_attempts: int = 3,
        runner: CompactionRunner | None = None,
    ) -> CommitResult:
        """Compact the table (primary-key tables: per bucket, full or by the universal strategy).

        A compaction that loses a race against another commit deleting the same files (the
        commit deletes what it wrote) starts over from the new latest snapshot, up to
        ``max_attempts``. ``buckets`` limits it to those (partition, bucket) pairs; ``runner``
        runs the rewrite of each bucket (default: in this process).
        """
        from engine.compaction import compact, run_in_process

        return compact(self, full=full, partitions=partitions, buckets=buckets, max_attempts=max_attempts,
                       runner=runner or run_in_process)

    def drop_partitions(
        self, partitions: Sequence[Mapping[str, object]], *, if_exists: bool = True
    ) -> CommitResult:
        """Drop partitions in one commit; ``if_exists=False`` refuses (dropping nothing) if any is missing."""
        if not self.partition_keys:
            raise InvalidArgumentError(f"table '{self.name}' is not partitioned")
        return self.new_commit().drop_partitions(partitions, if_exists=if_exists)

    def truncate(self) -> CommitResult:
        return self.new_commit().truncate()

    def branch_table(self, branch: str) -> Table:
        """This table as seen from another branch."""
        ident = Identifier(self.identifier.database, self.identifier.table, branch)
        if self.catalog is None:
            raise InvalidArgumentError("this table was opened without a catalog")
        return self.catalog.get_table(ident)

    # -- tags and rollback (engine.ops) -----------------------------------------------------------
    def create_tag(
        self, name: str, snapshot_id: int | None = None, time_retained: TimeRetained = None
    ) -> Tag:
        """Tag a snapshot (default: the latest); TagAlreadyExistsError / NoSuchSnapshotError change
        nothing."""
        return TagOps(self.store).create(name, snapshot_id, time_retained)

    def create_tag_from_timestamp(
        self, name: str, timestamp_millis: int, time_retained: TimeRetained = None
    ) -> Tag:
        """Tag the first snapshot (or tagged snapshot) committed at or after ``timestamp_millis``."""
        return TagOps(self.store).create_from_timestamp(name, timestamp_millis, time_retained)

    def replace_tag(
        self, name: str, snapshot_id: int | None = None, time_retained: TimeRetained = None
    ) -> Tag:
        return TagOps(self.store).replace(name, snapshot_id, time_retained)

    def rename_tag(self, old: str, new: str) -> None:
        TagOps(self.store).rename(old, new)

    def delete_tags(self, names: str | Sequence[str], *, dry_run: bool = False) -> TagDeletion:
        """Delete tags and the files no other snapshot, tag or branch references (``dry_run``: only
        report)."""
        return TagOps(self.store).delete(names, dry_run=dry_run)

    def delete_tag(self, name: str, *, dry_run: bool = False) -> TagDeletion:
        return self.delete_tags([name], dry_run=dry_run)

    def expire_tags(self, older_than: object = None, *, dry_run: bool = False) -> TagDeletion:
        """Delete tags past their retention, or created before ``older_than`` (datetime or epoch ms)."""
        return TagOps(self.store).expire(older_than, dry_run=dry_run)  # type: ignore[arg-type]

    def rollback_to(self, version: int | str) -> RollbackResult:
        """Make a snapshot id's or tag's content the table's, as a new snapshot (metadata only)."""
        from engine.ops.rollback import rollback_to

        return rollback_to(self.store, version)

    def rollback_to_timestamp(self, timestamp_millis: int) -> RollbackResult:
        from engine.ops.rollback import rollback_to_timestamp

        return rollback_to_timestamp(self.store, timestamp_millis)

    # -- expiration and the retention mark (engine.ops.expire_snapshots, engine.ops.retention_mark) --
    def expire_snapshots(
        self,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than: object = None,
        max_deletes: int | None = None,
        dry_run: bool = False,
    ) -> ExpireReport:
        """Expire old snapshots and exactly the files nothing else needs; recorded in the maintenance log.

        Arguments override ``snapshot.num-retained.max/min``, ``now - snapshot.time-retained``
        (``older_than``: epoch ms, datetime, or 'yyyy-MM-dd HH:mm:ss' local time) and
        ``snapshot.expire.limit``. ``dry_run`` changes nothing and reports what would go and why
        the rest stays. Raises UnsafeToDeleteError (naming the file) when a reference is unreadable.
        """
        from engine.ops.expire_snapshots import run_recorded

        return run_recorded(self.store, retain_max=retain_max, retain_min=retain_min, older_than=older_than,
                            max_deletes=max_deletes, dry_run=dry_run)

    def retention_mark(self, retention_ms: int | None = None) -> MarkResult:
        """Advance the retention mark (``retention.time`` unless ``retention_ms``); never backwards."""
        from engine.ops.maintenance_log import recorded_run
        from engine.ops.retention_mark import advance

        with recorded_run(self.store.io, self.path, "retention_mark", branch=self.branch) as record:
            result = advance(self.store, retention_ms)
            record.details = {"advanced": result.advanced,
                              "snapshot_id": None if result.mark is None else result.mark.snapshot_id}
        return result

    def read_retention_mark(self) -> RetentionMark | None:
        from engine.ops.retention_mark import read_mark

        return read_mark(self.store.io, self.store.paths.branch_root)
    # -- cleanup (engine.ops.orphan_files, engine.ops.expire_partitions) --------------------------
    def remove_orphan_files(
        self,
        older_than: object = None,
        dry_run: bool = False,
        force: bool = False,
        *,
        parallelism: int | None = None,
    ) -> OrphanFilesResult:
        """Delete the files no snapshot, tag, branch or changelog references, older than ``older_than``
        (default one day ago; less than one hour ago only with ``force``). Recorded in the maintenance log."""
        from engine.ops.orphan_files import remove_table_orphan_files

        return remove_table_orphan_files(self.store.io, self.path, older_than=older_than, dry_run=dry_run,
                                         force=force, parallelism=parallelism, branch=self.branch)

    def expire_partitions(
        self,
        expiration_time: object = None,
        timestamp_formatter: str | None = None,
        timestamp_pattern: str | None = None,
        max_expires: int | None = None,
        dry_run: bool = False,
        *,
        expire_strategy: str | None = None,
    ) -> PartitionExpiration:
        """Drop (mark-delete) the partitions older than ``expiration_time`` (default: the table's
        ``partition.expiration-time``); the data files go when snapshot expiration removes them."""
        from engine.ops.expire_partitions import expire_table_partitions

        return expire_table_partitions(
            self.store, expiration_time=expiration_time, timestamp_formatter=timestamp_formatter,
            timestamp_pattern=timestamp_pattern, max_expires=max_expires, dry_run=dry_run,
            expire_strategy=expire_strategy)

    # -- Paimon's further maintenance procedures (engine.ops.*) ----------------------------------
    def clear_consumers(self, including: str | None = None, excluding: str | None = None, *,
                        dry_run: bool = False) -> ClearedConsumers:
        """Delete the consumers whose id fully matches ``including`` (all) and not ``excluding``."""
        from engine.ops.consumers import clear_consumers

        return clear_consumers(self.store, including, excluding, dry_run=dry_run)

    def remove_missing_files(self, *, dry_run: bool = False, parallelism: int | None = None) -> MissingFiles:
        """Drop the live files whose file no longer exists, in one snapshot (engine.ops.missing_files)."""
        from engine.ops.missing_files import remove_missing_files

        return remove_missing_files(self.store, dry_run=dry_run, parallelism=parallelism)

    def compact_manifests(self, *, dry_run: bool = False) -> ManifestCompaction:
        """Merge the data manifests into few live-only ones, as a new COMPACT snapshot."""
        from engine.ops.compact_manifest import compact_manifests

        return compact_manifests(self.store, dry_run=dry_run)

    def purge_files(self, *, dry_run: bool = False) -> PurgeReport:
        """Drop branches, tags, consumers, data and history; the schema stays (engine.ops.purge)."""
        from engine.ops.purge import purge_files

        return purge_files(self, dry_run=dry_run)

    def mark_partitions_done(self, partitions: Sequence[Mapping[str, object]]) -> list[str]:
        """Run ``partition.mark-done-action`` on each partition (engine.ops.partition_done)."""
        from engine.ops.partition_done import mark_partitions_done

        return mark_partitions_done(self.store, partitions)

    def rollback_to_watermark(self, watermark: int) -> RollbackResult:
        """Roll back to the newest snapshot whose watermark is at or below ``watermark``."""
        from engine.ops.watermark_rollback import rollback_to_watermark

        return rollback_to_watermark(self.store, watermark)

    def repair_earliest_snapshot(self, snapshot_id: int) -> int:
        """Point the EARLIEST hint past a gap in the history; returns the previous earliest id."""
        from engine.ops.earliest_repair import repair_earliest_snapshot

        return repair_earliest_snapshot(self.store, snapshot_id)

    # -- branches (engine.ops.branches) -----------------------------------------------------------
    def create_branch(self, name: str, from_tag: str | None = None, from_snapshot: int | None = None) -> None:
        """Create a branch: empty (this branch's schemas), from one of this branch's tags, or a snapshot
        id."""
        from engine.ops.branches import BranchOps

        BranchOps(self.store).create(name, from_tag, from_snapshot)

    def branches(self) -> list[str]:
        """The table's branches other than main, by name."""
        from engine.ops.branches import BranchOps

        return BranchOps(self.store).names()

    def delete_branch(self, name: str, *, dry_run: bool = False) -> TagDeletion:
        """Delete a branch and the files no other branch, tag or snapshot references (fail closed)."""
        from engine.ops.branches import BranchOps

        return BranchOps(self.store).delete(name, dry_run=dry_run)

    def rename_branch(self, old: str, new: str) -> None:
        from engine.ops.branches import BranchOps

        BranchOps(self.store).rename(old, new)

    def fast_forward(self, branch: str) -> FastForwardResult:
        """Give main the branch head's content as one new main snapshot (atomic for readers)."""
        from engine.ops.branches import BranchOps

        return BranchOps(self.store).fast_forward(branch)

    def replace_main(self, branch: str, *, keep_backup: bool = True) -> ReplaceMainResult:
        """Give main the branch head's content and schema as one new main snapshot (engine.ops.replace_main).

        Main's superseded head is kept as tag ``replace-main-backup-<id>`` unless ``keep_backup`` is false."""
        from engine.ops.replace_main import replace_main

        return replace_main(self.store, branch, keep_backup=keep_backup)
