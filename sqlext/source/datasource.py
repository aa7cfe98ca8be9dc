"""Batch reads and writes of managed tables for the Spark Python data source ``dyntable``.

```
 driver:    DataSource.schema()  ──  reader.partitions() = engine plan → one InputPartition per split
 executors: reader.read(split)   ──  engine SplitReader → Arrow record batches (never rows)
 executors: writer.write(batches) ── engine writer → files + picklable commit messages
 driver*:   writer.commit(messages) ── engine commit: one snapshot   (*a Python worker process)
```
Options are built and parsed only by ``sqlext.source.requests`` (``ReadRequest`` /
``WriteRequest``): the table, projection, pruning filter, time travel, changelog, incremental
range, the native scan's merge-only snapshot (``sqlext.source.native`` reads the other splits
with Spark's Parquet reader), overwrite intent, commit user and identifier, and the storage
options executors need.

The source implements no ``pushFilters``: Spark keeps a relation's pushed filters when the
relation is reused by a query without filters (measured: 1 row instead of 5,000,000), so
pruning arrives only through the explicit ``filter`` option, which the SQL session sets on its
per-statement views (``sqlext.bind.pruning``).

Primary-key writes: each Spark task writes the buckets its rows hash to; tasks never share
sequence numbers because each takes its own range (task partition id << 32 above the bucket's
restored maximum). This avoids a shuffle by bucket (measured: the shuffle costs a full extra
pass of the data through the JVM and back) at the price of one level-0 file per task and
bucket, which the automatic compaction after the commit merges. Tasks do not compact: two
tasks compacting the same bucket would conflict; compaction runs once, after the commit.
"""

from __future__ import annotations

import datetime as dt
import time
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

from engine import (
    BATCH_COMMIT_IDENTIFIER,
    ROWKIND,
    ChangeReader,
    ChangeSplit,
    CommitMessage,
    DataSplit,
    Table,
    delete_uncommitted,
    diff_changes,
    range_splits,
    resolve_between,
    resolve_time_travel,
    store_at,
)
from engine.errors import CommitStateUnknownError, DyntableError, InvalidArgumentError
from engine.scan import predicate as P
from sqlext.source.dynamic import table_overrides
from sqlext.source.requests import ReadRequest, ReadVersion, WriteRequest
from sqlext.source.spark_types import spark_arrow_schema, to_spark_batches

NAME = "dyntable"
SEQUENCE_STRIDE_BITS = 32  # 4G rows per task and commit
FILE_COUNTER_BITS = 24  # 16M files per task attempt
COMMIT_CLOCK_SLACK_MS = 10 * 60 * 1000  # how far before the job's start a commit lookup still searches


def resolve(request: ReadRequest | WriteRequest) -> tuple[Table, str | None]:
    """The table (branch and the request's dynamic table options applied) and the system table
    name, if the request names one."""
    table = request.target.open()
    overrides = table_overrides(request.passthrough)
    return (table.with_options(overrides) if overrides else table), request.target.system_table


def load_table(request: ReadRequest | WriteRequest) -> Table:
    table, system = resolve(request)
    if system is not None:
        raise InvalidArgumentError(f"system table '{request.target.table}' is read-only and cannot be streamed")
    return table


def source_arrow_schema(table: Table, system: str | None, request: ReadRequest) -> pa.Schema:
    """The Arrow schema this source declares for a table or system table."""
    from engine.system_tables import DATA_TABLES, system_table_schema

    if system is not None and system not in DATA_TABLES:
        full = system_table_schema(table, system)
        wanted = list(request.columns or ())
        unknown = [c for c in wanted if c not in full.names]
        if unknown:
            raise InvalidArgumentError(f"unknown column(s) {unknown} of system table '{system}'")
        return pa.schema([full.field(c) for c in wanted]) if wanted else full
    table = travelled(table, time_travel(request.travel, table))  # a snapshot reads in its own schema
    cols = projection(request, table)
    fields = [table.arrow_schema.field(c) for c in cols]
    if system == "audit_log" or request.changelog:
        fields.insert(0, pa.field(ROWKIND, pa.string(), nullable=False))
    return pa.schema(fields)


def projection(request: ReadRequest, table: Table) -> list[str]:
    if not request.columns:
        return list(table.schema.field_names)
    names = set(table.schema.field_names)
    # ``rowkind`` in a projection means the change kind, unless the table has such a column.
    cols = [c for c in request.columns if c != ROWKIND or ROWKIND in names]
    unknown = [c for c in cols if c not in names]
    if unknown:
        raise InvalidArgumentError(f"unknown column(s) {unknown} in option 'columns'")
    return cols


def time_travel(version: ReadVersion | None, table: Table):  # type: ignore[no-untyped-def]
    """The snapshot a batch read is pinned to (None: the latest)."""
    if version is None:
        return resolve_time_travel(table.store, None, None, None)
    snapshot_id, tag, millis = version.snapshot_id, version.tag, version.timestamp_millis
    if version.version is not None:
        if version.version.isdigit() and not table.refs.tags.exists(version.version):
            snapshot_id = int(version.version)
        else:
            tag = version.version
    if version.timestamp is not None and millis is None:
        millis = int(dt.datetime.fromisoformat(version.timestamp).replace(tzinfo=dt.UTC).timestamp() * 1000)
    return resolve_time_travel(table.store, snapshot_id, tag, millis)


def travelled(table: Table, snapshot: Any) -> Table:
    """``table`` with the schema ``snapshot`` was written with (None: the table itself)."""
    store = store_at(table.store, snapshot)
    if store is table.store:
        return table
    return Table(None, table.identifier, store.io, store.paths, store.schema)


def option_filter(request: ReadRequest, table: Table) -> P.Predicate | None:
    """The ``filter`` option: a pruning predicate in the engine's JSON form (see ``sqlext.bind.pruning``).

    Literals are converted to the column types; a leaf whose literal does not fit its column is
    dropped (it could only prune less, never wrongly).
    """
    text = request.filter
    if not text:
        return None
    from engine import coerce_value

    def convert(column: str, value: Any) -> Any:
        try:
            return coerce_value(table.schema, column, value)
        except Exception:  # noqa: BLE001
            return _UNFIT

    pred = P.from_json(text, convert)
    kept = [c for c in P.conjuncts(pred) if not (isinstance(c, P.Leaf) and _UNFIT in c.literals)]
    return P.and_(*kept)


_UNFIT = object()


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    split: Any


def task_split(split: Any) -> Any:
    """``split`` as a read task needs it: the files' key and value statistics left out.

    Spark keeps every
    partition's pickled bytes for as long as the relation lives (a DataFrame, a view) and puts
    them into each task, so they would be about half of what a read holds per file.
    """
    return split.without_stats() if isinstance(split, DataSplit) else split


class DyntableReader(DataSourceReader):
    """Plans once in the driver; each Spark task reads one split."""

    def __init__(self, request: ReadRequest) -> None:
        table, self.system = resolve(request)
        self.identifier = table.identifier
        self.store = table.store
        self.snapshot = time_travel(request.travel, table)
        self.incremental = incremental_range(request, table, self.snapshot)
        if self.system is None or self.system in ("audit_log", "ro"):
            table = travelled(table, self.snapshot)
            self.store = table.store
        self.with_kind = request.changelog or self.system == "audit_log"
        declared = source_arrow_schema(table, self.system, request)
        self.columns = list(declared.names[1:] if self.with_kind else declared.names)
        self.arrow_schema = spark_arrow_schema(declared)
        self.pruning = option_filter(request, table)
        # Set by sqlext.source.native: Spark's Parquet reader reads the rest of this snapshot's plan.
        self.merge_only = request.merge_only

    def _table(self) -> Table:
        return Table(None, self.identifier, self.store.io, self.store.paths, self.store.schema)

    def partitions(self) -> Sequence[InputPartition]:
        from engine import TableScan
        from engine.system_tables import DATA_TABLES, read_optimized_splits, read_system_table

        if self.system is not None and self.system not in DATA_TABLES:
            # Metadata tables are small: computed here, shipped inside the one partition.
            snapshot_id = self.snapshot.id if self.snapshot is not None else None
            return [SplitPartition(read_system_table(self._table(), self.system, snapshot_id).select(self.columns))]
        if self.incremental is not None and self.system in (None, "audit_log"):
            return self._incremental_partitions()
        scan = TableScan(self.store).with_filter(self.pruning)
        if self.snapshot is not None:
            scan = scan.with_snapshot(self.snapshot)
        elif self.merge_only is not None:
            scan = scan.with_snapshot(self.merge_only)
        plan = scan.plan()
        if self.system is None and self.merge_only is None:
            from engine.scan.fallback import with_fallback

            plan = with_fallback(scan, plan)  # scan.fallback-branch: partitions this branch lacks
        splits = list(plan.splits)
        if self.system == "ro":
            splits = read_optimized_splits(self._table(), splits)
        if self.merge_only is not None:
            from engine import needs_merge

            splits = [s for s in splits if needs_merge(self.store, s, read_optimized=self.system == "ro")]
        return [SplitPartition(task_split(s)) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from engine import SplitReader

        split = getattr(partition, "split", None)
        if split is None:  # Spark plans one empty partition when the table has no files
            return
        if isinstance(split, pa.Table):
            yield from to_spark_batches(split, self.arrow_schema)
            return
        if isinstance(split, ChangeSplit):
            for table in ChangeReader(self.store, self.columns).read(split):
                yield from to_spark_batches(self._kinds(table), self.arrow_schema)
            return
        reader = SplitReader(self.store, self.columns, None, row_kind=self.with_kind)
        for table in reader.read(split):
            yield from to_spark_batches(table, self.arrow_schema)

    def _kinds(self, changes: pa.Table) -> pa.Table:
        """Changes as this read shows them: all kinds in ``rowkind``, or only the after-images
        (+I, +U) without it — a batch row cannot retract, so Paimon's batch reads drop -U/-D too."""
        if self.with_kind:
            return changes
        keep = pc.is_in(changes.column(ROWKIND), value_set=pa.array(["+I", "+U"]))
        return changes.filter(keep).drop_columns([ROWKIND])

    def _incremental_partitions(self) -> Sequence[InputPartition]:
        from engine import SplitReader, TableScan

        rng = self.incremental
        if rng.mode != "diff":
            return [SplitPartition(s) for s in range_splits(self.store, rng)]
        # A diff needs both end states side by side: computed here, shipped in one partition.
        # It compares whole rows (a projection could make different rows equal), then projects.
        reader = SplitReader(self.store)

        def state(snapshot: Any) -> pa.Table | None:
            if snapshot is None:
                return None
            splits = TableScan(self.store).with_snapshot(snapshot).plan().splits
            parts = [t for s in splits for t in reader.read(s)]
            return pa.concat_tables(parts) if parts else None

        after, before = state(rng.end), state(rng.start)
        if after is None and before is None:
            return []
        shape = (after if after is not None else before).schema  # type: ignore[union-attr]
        changes = diff_changes(before if before is not None else shape.empty_table(),
                               after if after is not None else shape.empty_table(), self.store.primary_keys)
        changes = changes.select([ROWKIND] + self.columns)
        return [SplitPartition(self._kinds(changes))]


def incremental_range(request: ReadRequest, table: Table, snapshot: Any) -> Any:
    """The ``incremental-between`` range of a batch read (None: not an incremental read)."""
    if request.incremental_between is None:
        return None
    if snapshot is not None:
        raise InvalidArgumentError("incremental-between cannot be combined with time travel options")
    return resolve_between(table.store, request.incremental_between, request.incremental_mode)


@dataclass
class DyntableCommitMessage(WriterCommitMessage):
    messages: list[CommitMessage]


ABORTED_JOBS_DIR = ".dyntable/aborted-jobs"


def abort_marker(table: Table, job_token: str) -> str:
    """The file an aborted batch job leaves so that its still-running tasks delete their own files."""
    return f"{table.store.paths.root}/{ABORTED_JOBS_DIR}/{job_token}"


class JobAbortedError(DyntableError):
    """The write job this task belongs to was aborted; the task deleted what it wrote."""


def cluster_for_writers(frame: Any, table: Table) -> Any:
    """The DataFrame to hand to the write: for dynamic-bucket tables, rows clustered so that the
    tasks never share a key map (engine.write.bucket_assigner.writer_clustering).

    A task assigns new keys from the committed state plus its own rows; it cannot see another
    task's new keys. Hash-partitioning by the partition columns (cross-partition upsert: by the
    key) gives each partition (key) exactly one task, which is what Paimon's single-writer rule
    asks. Other tables are written as they come (no shuffle).
    """
    from engine import writer_clustering

    columns = writer_clustering(table.store)
    if columns is None:
        return frame
    return frame.repartition(*columns) if columns else frame.repartition(1)


def write_task(table: Table, batches: Iterator[pa.RecordBatch], job_token: str, *, abortable: bool = False) -> list[CommitMessage]:
    """The executor side of a write: one engine writer per Spark task.

    Every file the task writes is named ``data-<job token>-<n>`` with ``n`` in the task's own
    range, so the job's abort can find the files of a task that died without cleaning up.

    ``abortable`` (batch jobs): the job's abort writes :func:`abort_marker` before it lists the
    job's files, and the task looks for the marker after its last file is closed. So a task that
    was still running when the abort listed the files sees the marker and deletes its own files:
    every file either existed before the listing or was finished after the marker was written.
    """
    from pyspark import TaskContext

    from engine import FileNamer

    ctx = TaskContext.get()
    task = ctx.partitionId() if ctx is not None else 0
    attempt = ctx.attemptNumber() if ctx is not None else 0
    from engine import new_writer

    namer = FileNamer(job_token, ((task << 8) + attempt) << FILE_COUNTER_BITS)
    writer = new_writer(table.store, compact=False, sequence_offset=task << SEQUENCE_STRIDE_BITS, namer=namer)
    marker = abort_marker(table, job_token) if abortable else None
    try:
        for batch in batches:
            writer.write(batch)
        messages = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    if marker is not None and table.store.io.exists(marker):
        delete_uncommitted(table.store, messages)
        raise JobAbortedError(f"write job {job_token} on {table.name} was aborted; this task deleted its files")
    return messages


def delete_job_files(table: Table, job_token: str) -> None:
    """Delete every data file a write job produced (found by the job's token in the name)."""
    io = table.store.io
    for status in io.list_files_recursive(table.store.paths.root):
        name = status.path.rsplit("/", 1)[-1]
        if job_token in name and (name.startswith("data-") or name.startswith("changelog-")):
            io.delete(status.path)


def job_committed(table: Table, commit_user: str, identifier: int, started_millis: int) -> bool | None:
    """Whether ``commit_user`` published ``identifier`` (since the job started); None when it cannot be told."""
    from engine import FileStoreCommit

    try:
        found = FileStoreCommit(table.store, commit_user).find_own_snapshot(
            identifier, not_before_millis=started_millis - COMMIT_CLOCK_SLACK_MS
        )
    except Exception:  # noqa: BLE001 - unreadable metadata: the outcome is unknown
        return None
    return found is not None


class DyntableWriter(DataSourceArrowWriter):
    """Batch write: Arrow batches in, one snapshot published by the driver-side commit.

    ``commit`` and ``abort`` run in Python worker processes, possibly different ones: whether
    the job's commit was published is read back from the table (by the job's commit user and
    identifier), never kept in memory. Nothing after the publish can raise out of ``commit``,
    and ``abort`` never deletes files once the job's snapshot exists (or may exist).
    """

    def __init__(self, request: WriteRequest) -> None:
        table = load_table(request)
        self.store = table.store
        self.identifier = table.identifier
        self.overwrite = request.overwrite.commit_argument()
        self.commit_user = request.commit_user or str(uuid.uuid4())
        self.change_tracking = request.change_tracking
        self.defer_compaction = request.write_only
        self.job_token = str(uuid.uuid4())
        self.started_millis = int(time.time() * 1000)
        self.base_snapshot_id = request.base_snapshot_id
        self.identifier_value = request.commit_identifier

    def _table(self) -> Table:
        return Table(None, self.identifier, self.store.io, self.store.paths, self.store.schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> DyntableCommitMessage:
        return DyntableCommitMessage(write_task(self._table(), iterator, self.job_token, abortable=True))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        table = self._table()
        flat = [m for msg in messages if msg is not None for m in msg.messages]  # type: ignore[attr-defined]
        try:
            kwargs: dict[str, Any] = {} if self.identifier_value is None else {"identifier": self.identifier_value}
            if self.base_snapshot_id is not None:
                kwargs["base_snapshot_id"] = self.base_snapshot_id
            result = table.commit(flat, self.overwrite, commit_user=self.commit_user,
                                  change_tracking=self.change_tracking, **kwargs)
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: keep them
        except BaseException:
            delete_job_files(table, self.job_token)  # the commit deleted its messages' files; this gets the rest
            raise
        if self.identifier_value is not None and not result.snapshot_ids and flat:
            delete_job_files(table, self.job_token)  # a replayed, already-committed identifier
        if result.snapshot_ids and not self.defer_compaction:
            table.after_commit({(m.partition, m.bucket) for m in flat})

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        table = self._table()
        identifier = BATCH_COMMIT_IDENTIFIER if self.identifier_value is None else self.identifier_value
        if job_committed(table, self.commit_user, identifier, self.started_millis) is not False:
            return  # published (or cannot tell): the files are, or may be, part of the table
        table.store.io.try_create(abort_marker(table, self.job_token), b"aborted")
        delete_job_files(table, self.job_token)
