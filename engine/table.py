"""The ``Table`` facade: one table branch, its schema, and the operations on it.

A Table is a store (``engine.store.FileStore``: the table's one identity below this module,
which every module below takes) and the catalog it was opened from; no module below names it.
Everything here delegates. Reads, writes and commits go through the builders
(``engine.builders``: ``new_read_builder``, ``new_write_builder``), which also carry the
post-commit hooks; references and rollback are the ``refs`` group (``engine.table_refs``),
expiration and cleanup the ``maintenance`` group (``engine.table_maintenance``). A Table object
is a view of the schema it was loaded with; ``refresh()`` loads the latest. It pickles without
its catalog (tasks get it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage, CommitResult, OverwriteShorthand, OverwriteSpec
from engine.count_layout import is_count_layout
from engine.errors import InvalidArgumentError, SchemaMergeError
from engine.identifier import Identifier
from engine.io import FileIO
from engine.meta.paths import TablePaths
from engine.meta.schema_store import SchemaStore
from engine.meta.snapshot import Snapshot
from engine.options import CoreOptions
from engine.read.split_reader import SplitReader
from engine.scan.planner import Plan, TableScan, store_at
from engine.scan.predicate import Predicate
from engine.schema import TableSchema
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore
from engine.table_maintenance import TableMaintenance
from engine.table_refs import TableRefs
from engine.write.conform import as_table

if TYPE_CHECKING:
    from engine.builders.hooks import CompactionRunner
    from engine.builders.read import ReadBuilder
    from engine.builders.write import WriteBuilder

log = logging.getLogger(__name__)

class SchemaHistory:
    """The schema versions of a table branch, read-only: ``list_ids``, ``get``, ``latest``, ``all``."""

    def __init__(self, store: SchemaStore) -> None:
        self._store = store

    def list_ids(self) -> list[int]:
        return self._store.list_ids()

    def get(self, schema_id: int) -> TableSchema:
        return self._store.get(schema_id)

    def latest(self) -> TableSchema | None:
        return self._store.latest()

    def all(self) -> list[TableSchema]:
        return self._store.all()


class Catalog(Protocol):
    """What a table asks of the catalog that opened it (``engine.catalog.FileSystemCatalog``,
    which sits above the facade: named here by what it does)."""

    def get_table(self, identifier: str | Identifier) -> Table: ...


class Table:
    """A table branch as of one schema version: the facade over one :class:`FileStore` (the
    table's identity below this module) and the catalog it was opened from."""

    def __init__(
        self,
        catalog: Catalog | None,
        identifier: Identifier,
        io: FileIO,
        paths: TablePaths,
        schema: TableSchema,
        *,
        pending_schema: TableSchema | None = None,
    ) -> None:
        self.catalog = catalog
        self.store = FileStore(io, paths, schema, pending_schema, identifier)

    def over(self, store: FileStore) -> Table:
        """The facade over ``store`` (another view of this table: a snapshot's schema, write
        options), with this table's catalog."""
        table = Table.__new__(Table)
        table.catalog = self.catalog
        table.store = store
        return table

    def __getstate__(self) -> dict[str, object]:
        # A table crosses to tasks (builders pickle it) without its catalog: a task needs the
        # files, never the catalog, and a catalog may hold what should not travel.
        return {**self.__dict__, "catalog": None}

    # -- description ----------------------------------------------------------------------------
    @property
    def identifier(self) -> Identifier:
        assert self.store.identifier is not None  # a Table is always opened by its name
        return self.store.identifier

    @property
    def name(self) -> str:
        return self.store.name

    @property
    def path(self) -> str:
        return self.store.paths.root

    @property
    def branch(self) -> str:
        return self.store.branch

    @property
    def schema(self) -> TableSchema:
        """The schema users see (for count-layout tables, without the stored key and count)."""
        return self.store.logical_schema

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
    def schemas(self) -> SchemaHistory:
        """The table branch's schema versions, read-only (ALTER TABLE goes through the catalog)."""
        return SchemaHistory(self.store.schemas)

    @property
    def refs(self) -> TableRefs:
        """Tags, branches, consumers and rollback (engine.table_refs)."""
        return TableRefs(self.store)

    @property
    def maintenance(self) -> TableMaintenance:
        """Expiration, orphan and missing files, the retention mark, purge (engine.table_maintenance)."""
        return TableMaintenance(self.store)

    def with_options(self, options: Mapping[str, str]) -> Table:
        """This table with ``options`` overriding its own for the operations of the returned
        object only (Paimon's dynamic options); nothing is stored.

        Raises:
            InvalidArgumentError: an unknown option or a bad value.
        """
        return self.over(self.store.with_options(options))

    def for_data(
        self, data_schema: pa.Schema, *, merge_schema: bool | None = None, case_sensitive: bool = False
    ) -> Table:
        """This table ready to write data of ``data_schema``: with ``write.merge-schema``
        (``merge_schema``, else the table's or dynamic option) a table whose schema is the latest
        version merged with the data's (engine.schema_merge), not yet published — the write's
        commit publishes it just before its snapshot, so a write that fails leaves no schema.
        Without it, or when the data changes nothing, this table (at the latest schema when merging).

        Raises:
            SchemaMergeError: the data cannot evolve the schema by Paimon's rules, or the rows the
                table stores forbid a type change (engine.write.type_changes).
        """
        from engine.options import WRITE_MERGE_SCHEMA
        from engine.schema_merge import MergeSchemaFlags
        from engine.schema_merge import merge_schema as merge

        table = self if merge_schema is None else self.with_options(
            {WRITE_MERGE_SCHEMA.key: str(bool(merge_schema)).lower()})
        flags = MergeSchemaFlags.from_options(table.store.options, case_sensitive=case_sensitive)
        if not flags.enabled or self.store.pending_schema is not None:
            return table
        store = table.store
        latest = store.schemas.latest() or store.schema
        # Options given for this write only (dynamic options) are applied on top, never stored.
        stored = store.schemas.get(store.schema.id) if store.schema.id <= latest.id else latest
        dynamic = {k: v for k, v in store.schema.options.items() if stored.options.get(k) != v}
        merged = merge(latest, data_schema, flags)
        if merged is not latest and is_count_layout(latest):
            raise SchemaMergeError(
                f"table '{self.name}' stores rows as counts ('retractions.enabled'): its schema does not "
                "evolve on write; use ALTER TABLE ADD COLUMN"
            )
        if merged is not latest:
            from engine.write.type_changes import check_stored_rows

            check_stored_rows(store, latest, merged)  # a key widened, an explicit cast: per stored row
        evolved = Table(self.catalog, self.identifier, store.io, store.paths, merged,
                        pending_schema=None if merged is latest else merged)
        return evolved.with_options(dynamic) if dynamic else evolved

    def refresh(self) -> Table:
        """This table at its latest schema version (options given for one operation are dropped)."""
        return self.over(self.store.refresh())

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

    def schema_by_id(self, schema_id: int) -> TableSchema:
        """A stored schema version of this branch (the one a snapshot or data file names)."""
        return self.store.schema_by_id(schema_id)

    @property
    def has_primary_key(self) -> bool:
        return self.store.has_primary_key

    # -- reading --------------------------------------------------------------------------------
    def new_read_builder(self) -> ReadBuilder[Table]:
        """The distributed read: plan splits (driver), read them (tasks); see engine.builders.read."""
        from engine.builders.read import ReadBuilder

        return ReadBuilder(self, self.store)

    def travelled(self, snapshot: Snapshot | None) -> Table:
        """This table as ``snapshot`` was written: in the schema it names (None: this table)."""
        store = store_at(self.store, snapshot)
        return self if store is self.store else self.over(store)

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
    ) -> ReadBuilder[Table]:
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
    ) -> WriteBuilder[Table]:
        """The distributed write: writers (tasks) hand commit messages to one commit that runs the
        post-commit hooks; see engine.builders.write and engine.builders.commit.

        Raises:
            UnsupportedTableError: the table uses a newer Paimon feature dyntable's writes would
                not keep (engine.features), refused here, in the driver, before any task runs.
        """
        from engine.builders.write import WriteBuilder
        from engine.features import check_appendable, check_rewritable

        # Row tracking is kept by appends and overwrites (the commit assigns the new rows' ids).
        (check_rewritable if overwrite is not None else check_appendable)(self.store.schema, self.path)
        return WriteBuilder(self, self.store, overwrite, commit_user)

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
        merge_schema: bool | None = None,
        case_sensitive: bool = False,
    ) -> CommitResult:
        """Write Arrow data in one commit. On failure the written files are deleted and nothing is published.

        Columns and struct fields match by name (a name that matches no column exactly matches
        one that differs only by case); a column the data lacks is written as NULL.
        ``merge_schema`` (default: the option ``write.merge-schema``) evolves the schema to take
        the data's new columns and struct fields (:meth:`for_data`; ``case_sensitive`` makes a
        name differing only by case a new column, which is refused); the new version is
        published by this write's commit, just before its snapshot.

        The outcome is the commit's: once it is published this returns normally, and the
        post-commit hooks that follow (compaction of primary-key tables, automatic tags,
        expiration; engine.builders.hooks) can no longer fail the write.
        With a ``commit_user`` and an ``identifier`` (increasing per user), a retry after
        CommitStateUnknownError is idempotent: a write already published is not applied again.
        """
        table = self
        if merge_schema or (merge_schema is None and self.core_options.write_merge_schema):
            arrow = as_table(data)
            table = self.for_data(arrow.schema, merge_schema=merge_schema, case_sensitive=case_sensitive)
            data = arrow
        builder = table.new_write_builder(OverwriteSpec.of(overwrite), commit_user=commit_user)
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
        order_strategy: str | None = None,
        order_by: Sequence[str] = (),
    ) -> CommitResult:
        """Compact the table (primary-key tables: per bucket, full or by the universal strategy).

        ``order_strategy`` (``order``, ``zorder`` or ``hilbert``) with ``order_by`` columns makes it a
        sorted compaction, as Paimon's: every file of each partition of a bucket-unaware append table
        is rewritten with the rows in that order (engine.write.sort_order), in files of the target size.

        A compaction that loses a race against another commit deleting the same files (the
        commit deletes what it wrote) starts over from the new latest snapshot, up to
        ``max_attempts``. ``buckets`` limits it to those (partition, bucket) pairs; ``runner``
        runs the rewrite of each bucket (default: in this process).
        """
        from engine.compaction import compact, run_in_process
        from engine.write.sort_order import sort_order

        order = None
        if order_strategy is not None and order_strategy.strip().lower() != "none":
            order = sort_order(order_strategy, order_by, self.schema.field_names, self.partition_keys)
        elif order_by:
            raise InvalidArgumentError('order_strategy "none" cannot work with order_by columns')
        return compact(self.store, full=full, partitions=partitions, buckets=buckets,
                       max_attempts=max_attempts, runner=runner or run_in_process, order=order)

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
