"""Batch reads and writes of managed tables for the Spark Python data source ``dyntable``.

```
 driver:    DataSource.schema()  ──  reader.partitions() = ReadBuilder.new_scan().plan() → one per split
 executors: reader.read(split)   ──  ReadBuilder.new_read() → Arrow record batches (never rows)
 executors: writer.write(batches) ── WriteBuilder.new_task_write() → files + picklable commit messages
 driver*:   writer.commit(messages) ── CommitBuilder.commit: one snapshot, then the post-commit hooks
            (*a Python worker process; with ``sqlext.source.session_conf`` installed, the
            compaction is left to the writing driver, which runs it as one Spark task per bucket)
```
Options are built and parsed only by ``sqlext.source.requests`` (``ReadRequest`` /
``WriteRequest``): the table, projection, filter (pruning; exact when the SQL session says the
query implies it), split limit, time travel, changelog, incremental
range, the native scan's merge-only snapshot (``sqlext.source.native`` reads the other splits
with Spark's Parquet reader), overwrite intent, commit user and identifier, and the storage
options executors need.

The source implements no ``pushFilters``: Spark keeps a relation's pushed filters when the
relation is reused by a query without filters (measured: 1 row instead of 5,000,000), so
pruning arrives only through the explicit ``filter`` option, which the SQL session sets on its
per-statement views (``sqlext.bind.pruning``).

The engine's builders (``engine.builders``) are the only way in: this module builds no scan,
reader, writer or commit of its own. Primary-key writes: each Spark task writes the buckets its
rows hash to with its own file names and sequence range (``WriteBuilder.new_task_write``;
dynamic buckets: by rules all tasks agree on, ``WriteBuilder.for_independent_tasks``), which
avoids a shuffle by bucket (measured: the shuffle costs a full extra pass of the data through
the JVM and back) at the price of one level-0 file per task and bucket, which the post-commit
compaction merges. Tasks do not compact: two tasks compacting the same bucket would conflict.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from engine import (
    ROWKIND,
    CommitMessage,
    Identifier,
    InvalidArgumentError,
    JobTasks,
    NoSuchColumnError,
    NoSuchSnapshotError,
    NoSuchTableError,
    ReadBuilder,
    Table,
    TableAlreadyExistsError,
    TableRead,
    TableSchema,
    WriteJob,
    binlog_schema,
    coerce_value,
    metadata_fields,
    metadata_names,
    open_catalog,
    system_table_columns,
    to_binlog,
)
from engine import predicate as P
from engine.arrow_types import to_arrow_field
from engine.options import WRITE_MERGE_SCHEMA, find_option
from sqlext.source.dynamic import table_overrides
from sqlext.source.requests import ReadRequest, ReadVersion, WriteRequest
from sqlext.source.spark_types import spark_arrow_schema, to_spark_batches

NAME = "dyntable"


def resolve(request: ReadRequest | WriteRequest) -> tuple[Table, str | None]:
    """The table (branch and the request's dynamic table options applied) and the system table
    name, if the request names one."""
    table = request.target.open()
    dynamic = request.dynamic if isinstance(request, WriteRequest) else {}
    overrides = table_overrides({**dynamic, **request.passthrough})
    return (table.with_options(overrides) if overrides else table), request.target.system_table


def load_table(request: ReadRequest | WriteRequest) -> Table:
    table, system = resolve(request)
    if system is not None:
        raise InvalidArgumentError(
            f"system table '{request.target.table}' is read-only and cannot be streamed")
    return table


def writable_table(request: WriteRequest, schema: StructType | None) -> Table:
    """The table a DataFrame write goes to, in the driver: created from the DataFrame's schema
    when it does not exist (Paimon's ``saveAsTable``: table options among the write's options
    are stored, ``write.merge-schema*`` are not), and with ``write.merge-schema`` (a write or
    table option) evolved to take the DataFrame's new columns and fields — the new schema
    version is published by the job's commit, just before its snapshot (``Table.for_data``)."""
    if schema is None:
        return load_table(request)
    try:
        table = load_table(request)
    except NoSuchTableError:
        request = create_for_write(request, to_arrow_schema(schema))
        table = load_table(request)
    if not table.core_options.write_merge_schema:
        return table
    return table.for_data(to_arrow_schema(schema))


def create_for_write(request: WriteRequest, data_schema: pa.Schema) -> WriteRequest:
    """Create the missing table of ``request`` (and its database); returns the request without the
    options the table now stores (they would be refused as dynamic options: ``bucket``, ...)."""
    target = request.target
    ident = Identifier.parse(target.table)
    if ident.branch or ident.system_table or target.branch:
        raise NoSuchTableError(f"table '{target.table}' does not exist; create the table before writing "
                               "to a branch or system table of it")
    stored = {k: v for k, v in request.passthrough.items()
              if find_option(k) is not None and not k.startswith(WRITE_MERGE_SCHEMA.key)}
    catalog = open_catalog(target.warehouse, **dict(target.storage))
    catalog.create_database(ident.database, ignore_if_exists=True)
    try:
        catalog.create_table(Identifier(ident.database, ident.table), data_schema, options=stored)
    except TableAlreadyExistsError:
        pass  # another writer created it first: write into that one
    kept = {k: v for k, v in request.passthrough.items() if k not in stored}
    return dataclasses.replace(request, passthrough=kept)


def read_builder(request: ReadRequest, table: Table) -> ReadBuilder:
    """The engine read of a batch request, pinned to its time travel (none: the latest); its
    ``table`` is seen in the schema the snapshot was written with."""
    return read_builder_at(request.travel, table)


def read_builder_at(version: ReadVersion | None, table: Table) -> ReadBuilder:
    """The engine read of ``table`` pinned to ``version`` (None: the latest)."""
    if version is None:
        return table.new_read_builder()
    millis = version.timestamp_millis
    if version.timestamp is not None and millis is None:
        millis = int(dt.datetime.fromisoformat(version.timestamp).replace(tzinfo=dt.UTC).timestamp() * 1000)
    return table.new_read_builder().at(snapshot_id=version.snapshot_id, tag=version.tag,
                                       timestamp_millis=millis, version=version.version,
                                       in_current_schema=version.current_schema)


def source_arrow_schema(table: Table, system: str | None, request: ReadRequest) -> pa.Schema:
    """The Arrow schema this source declares for a table or system table."""
    from engine import DATA_TABLES, system_table_schema

    if system is not None and system not in DATA_TABLES:
        full = system_table_schema(table, system)
        wanted = list(request.columns or ())
        unknown = [c for c in wanted if c not in full.names]
        if unknown:
            raise InvalidArgumentError(f"unknown column(s) {unknown} of system table '{system}'")
        return pa.schema([full.field(c) for c in wanted]) if wanted else full
    try:
        table = read_builder(request, table).table  # a snapshot reads in its own schema
    except NoSuchSnapshotError:
        # Not written yet (a stream from a later snapshot, or from a time before the first one,
        # waits for it) or expired: declare today's schema; a batch reader resolves the same
        # version when it is created and fails there.
        pass
    cols = projection(request, table)
    meta = {f.name: f for f in metadata_fields(table.schema)}
    fields = [to_arrow_field(meta[c]).with_metadata(None) if c in meta and c not in table.arrow_schema.names
              else table.arrow_schema.field(c) for c in cols]
    if system in ("audit_log", "binlog") or request.changelog:
        fields.insert(0, pa.field(ROWKIND, pa.string(), nullable=False))
    return binlog_schema(pa.schema(fields)) if system == "binlog" else pa.schema(fields)


def projection(request: ReadRequest, table: Table) -> list[str]:
    if not request.columns:
        if (request.target.system_table or "").lower() == "row_tracking":  # the rows with their ids
            return system_table_columns(table, "row_tracking")
        return list(table.schema.field_names)
    names = set(table.schema.field_names)
    # ``rowkind`` in a projection means the change kind, unless the table has such a column.
    cols = [c for c in request.columns if c != ROWKIND or ROWKIND in names]
    names |= set(metadata_names(table.schema))  # Paimon's metadata columns, named explicitly
    unknown = [c for c in cols if c not in names]
    if unknown:
        raise InvalidArgumentError(f"unknown column(s) {unknown} in option 'columns'")
    return cols


def option_filter(request: ReadRequest, table: Table) -> P.Predicate | None:
    """The ``filter`` option: a pruning predicate in the engine's JSON form (see ``sqlext.bind.pruning``).

    Literals are converted to the column types; a leaf whose literal does not fit its column is
    dropped (it could only prune less, never wrongly).
    """
    text = request.filter
    if not text:
        return None

    def convert(column: str, value: Any) -> Any:
        try:
            return coerce_value(table.schema, column, value)
        except Exception:  # noqa: BLE001
            return _UNFIT

    pred = P.from_json(text, convert)
    kept = [c for c in P.conjuncts(pred) if not (isinstance(c, P.Leaf) and _UNFIT in c.literals)]
    return P.and_(*kept)


def _same_types(columns: set[str], latest: TableSchema, read: TableSchema) -> bool:
    """Whether ``columns`` have the same kind of type in the read's schema as in the latest one,
    whose types the SQL session checked the filter against (a time-travel read may see an older
    type: a FLOAT since widened to DOUBLE compares otherwise in Spark)."""
    try:
        return all(latest.field(c).type.root == read.field(c).type.root for c in columns)
    except NoSuchColumnError:
        return False


_UNFIT = object()
_DATA_READS = ("audit_log", "binlog", "ro", "row_tracking")  # system tables that read the table's rows


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    split: Any  # an engine split, or a computed Arrow table (metadata tables, diffs)
    changes: bool = False  # a change split (rowkind first) rather than a data split


class DyntableReader(DataSourceReader):
    """Plans once in the driver; each Spark task reads one split."""

    def __init__(self, request: ReadRequest) -> None:
        table, self.system = resolve(request)
        latest = table.schema
        builder = read_builder(request, table)
        self.snapshot = builder.snapshot
        if self.system is None or self.system in _DATA_READS:
            table = builder.table
        self.table = table  # metadata tables: the table itself; data: as of the snapshot's schema
        self.with_kind = request.changelog or self.system in ("audit_log", "binlog")
        self.binlog = self.system == "binlog"  # audit-log rows, every column an array
        declared = source_arrow_schema(table, self.system, request)
        self.columns = list(declared.names[1:] if self.with_kind else declared.names)
        self.arrow_schema = spark_arrow_schema(declared)
        self.builder = (
            builder.with_projection(self.columns if self.system in (None, *_DATA_READS) else None)
            .with_filter(option_filter(request, table)).with_row_kind(self.with_kind)
            # Set by sqlext.source.native: Spark's Parquet reader reads the rest of this snapshot's plan.
            .with_merge_only(request.merge_only).with_read_optimized(self.system == "ro")
            .with_limit(request.limit if not self.with_kind else None)
        )
        # The SQL session's filter is implied by the query: rows that fail it are dropped here,
        # after the merge, rather than handed to the JVM for Spark to drop (not for reads whose
        # rows carry change kinds: a -D row's values say nothing about the key's live row).
        self.exact = (request.filter_exact and not self.with_kind and self.builder.filter is not None
                      and _same_types(self.builder.filter.columns(), latest, self.builder.schema))
        self.incremental = None
        if request.incremental is not None:
            self.incremental = self.builder.new_incremental(request.incremental)
        self._read: TableRead | None = None

    def partitions(self) -> Sequence[InputPartition]:
        from engine import DATA_TABLES, read_system_table

        if self.system is not None and self.system not in DATA_TABLES:
            # Metadata tables are small: computed here, shipped inside the one partition.
            snapshot_id = self.snapshot.id if self.snapshot is not None else None
            rows = read_system_table(self.table, self.system, snapshot_id).select(self.columns)
            return [SplitPartition(rows)]
        if self.incremental is not None and self.system in (None, "audit_log", "binlog"):
            if not self.incremental.is_diff:
                return [SplitPartition(s, changes=True) for s in self.incremental.splits()]
            # A diff needs both end states side by side: computed here, shipped in one partition.
            changes = self.incremental.diff()
            return [] if changes is None else [SplitPartition(self._kinds(changes))]
        scan = self.builder.new_scan()
        return [SplitPartition(s) for s in scan.task_splits(scan.plan())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        split = getattr(partition, "split", None)
        if split is None:  # Spark plans one empty partition when the table has no files
            return
        if isinstance(split, pa.Table):
            if self.binlog:
                split = to_binlog(split, pack_updates=False)  # a diff: no -U to pack
            yield from to_spark_batches(split, self.arrow_schema)
            return
        if self._read is None:
            # Spark applies the query's filter again. A deletion-vector read is unmerged, so its
            # rows are filtered here first: handing rows to the JVM costs more than filtering them
            # (not $audit_log / changelog reads, whose rows carry kinds the filter cannot see).
            b = self.builder
            first = self.exact or (b.uses_deletion_vectors() and not self.with_kind and b.filter is not None
                                   and b.filter.columns() <= set(b.schema.field_names))
            self._read = b.new_read(filter_rows=first)
        changes = getattr(partition, "changes", False)
        for table in self._read.read(split):
            table = self._kinds(table) if changes else table
            if self.binlog:  # change splits pack each -U with its +U, as Paimon's streaming splits
                table = to_binlog(table, pack_updates=changes)
            yield from to_spark_batches(table, self.arrow_schema)

    def _kinds(self, changes: pa.Table) -> pa.Table:
        """Changes as this read shows them: all kinds in ``rowkind``, or only the after-images
        (+I, +U) without it — a batch row cannot retract, so Paimon's batch reads drop -U/-D too."""
        if self.with_kind:
            return changes
        keep = pc.is_in(changes.column(ROWKIND), value_set=pa.array(["+I", "+U"]))
        return changes.filter(keep).drop_columns([ROWKIND])


@dataclass
class DyntableCommitMessage(WriterCommitMessage):
    messages: list[CommitMessage]


def cluster_for_writers(frame: Any, table: Table) -> Any:
    """The DataFrame to hand to the write: for dynamic-bucket tables, rows clustered so that the
    tasks never share a key map (``WriteBuilder.clustering``).

    A task assigns new keys from the committed state plus its own rows; it cannot see another
    task's new keys. Hash-partitioning by the partition columns (cross-partition upsert: by the
    key) gives each partition (key) exactly one task, which is what Paimon's single-writer rule
    asks. Other tables are written as they come (no shuffle).
    """
    columns = table.new_write_builder().clustering()
    if columns is None:
        return frame
    return frame.repartition(*columns) if columns else frame.repartition(1)


def write_task(job: JobTasks, batches: Iterator[pa.RecordBatch]) -> list[CommitMessage]:
    """The executor side of a write: one engine writer per Spark task, named by the task's index
    and attempt (``engine.JobTasks``)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    task = ctx.partitionId() if ctx is not None else 0
    attempt = ctx.attemptNumber() if ctx is not None else 0
    return job.write(task, attempt, batches)


class DyntableWriter(DataSourceArrowWriter):
    """Batch write: Arrow batches in, one snapshot published by the driver-side commit.

    ``commit`` and ``abort`` run in Python worker processes, possibly different ones; the job's
    rules for cleanup, replays and aborts are ``engine.WriteJob``'s.
    """

    def __init__(self, request: WriteRequest, schema: StructType | None = None) -> None:
        table = writable_table(request, schema)
        user = request.commit_user or str(uuid.uuid4())
        # Spark hands the tasks the DataFrame's own partitions (a Python data source cannot ask for
        # a distribution): the tasks are independent writers of dynamic buckets, from the snapshot
        # that is the latest now (engine.write.shared_assignment).
        builder = (table.new_write_builder(request.overwrite, commit_user=user).for_independent_tasks()
                   .with_job_parallelism(request.job_parallelism))
        commit = (
            builder.new_commit().with_identifier(request.commit_identifier)
            .with_base_snapshot(request.base_snapshot_id).with_change_tracking(request.change_tracking)
        )
        if request.compaction_by_driver:  # the writing driver compacts as Spark tasks after the job
            commit = commit.with_deferred_compaction()
        self.job = WriteJob.for_batch(builder, commit)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> DyntableCommitMessage:
        return DyntableCommitMessage(write_task(self.job.tasks(), iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.job.commit(flat_messages(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.job.abort(flat_messages(messages))


def flat_messages(messages: Sequence[WriterCommitMessage | None]) -> list[CommitMessage]:
    return [m for msg in messages if msg is not None for m in msg.messages]  # type: ignore[attr-defined]
