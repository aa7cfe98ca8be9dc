"""The Spark Python data source ``dyntable``: batch reads and writes of managed tables.

```
 driver:    DataSource.schema()  ──  reader.partitions() = engine plan → one InputPartition per split
 executors: reader.read(split)   ──  engine SplitReader → Arrow record batches (never rows)
 executors: writer.write(batches) ── engine writer → files + picklable commit messages
 driver*:   writer.commit(messages) ── engine commit: one snapshot   (*a Python worker process)
```
Options: ``warehouse`` and ``table`` (``db.t``, ``db.t$branch_b``, ``db.t$snapshots``) are
required; ``branch``. Reads: ``columns`` (comma list: Spark pushes no column pruning into Python
sources, so the SQL layer passes the projection), ``filter`` (a pruning predicate in the
engine's JSON form, used only to skip partitions, buckets and files: Spark applies the query's
own filter), time travel ``scan.snapshot-id`` / ``scan.tag-name`` / ``scan.timestamp-millis`` /
``scan.timestamp`` / ``scan.version``, ``read.changelog``, ``incremental-between`` ('start,end':
tags or snapshot ids, start exclusive) with ``incremental-between-scan-mode``,
``native-scan.merge-only`` (a snapshot id: read only that snapshot's splits that need a merge;
``sqlext.native_scan`` reads the others with Spark's Parquet reader). Writes:
``overwrite-partition`` (JSON
object, static partition overwrite), ``overwrite-partitions`` (JSON list), ``partitionOverwriteMode``
= ``dynamic``, ``overwrite-base-snapshot``, ``change-tracking``, ``write-only``, and
``commit-user`` with ``commit-identifier`` (a commit with an identifier this user already
committed is skipped: exactly-once ``foreachBatch`` writes). ``catalog-options``: a JSON object
of storage options (endpoint, credentials) for ``open_catalog``, so executors reach the same
storage as the driver without any cluster-wide configuration.

The source implements no ``pushFilters``: Spark keeps a relation's pushed filters when the
relation is reused by a query without filters (measured: 1 row instead of 5,000,000), so
pruning arrives only through the explicit ``filter`` option, which the SQL session sets on its
per-statement views (``sqlext.pruning``).

Primary-key writes: each Spark task writes the buckets its rows hash to; tasks never share
sequence numbers because each takes its own range (task partition id << 32 above the bucket's
restored maximum). This avoids a shuffle by bucket (measured: the shuffle costs a full extra
pass of the data through the JVM and back) at the price of one level-0 file per task and
bucket, which the automatic compaction after the commit merges. Tasks do not compact: two
tasks compacting the same bucket would conflict; compaction runs once, after the commit.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from engine import Identifier, Table, open_catalog
from engine.commit import CommitMessage, delete_uncommitted
from engine.errors import CommitStateUnknownError, DyntableError, InvalidArgumentError
from engine.scan import predicate as P
from engine.scan.incremental import (
    ROWKIND,
    ChangeReader,
    ChangeSplit,
    diff_changes,
    range_splits,
    resolve_between,
)
from engine.scan.planner import resolve_time_travel, store_at
from engine.store import BATCH_COMMIT_IDENTIFIER
from sqlext.spark_types import spark_arrow_schema, spark_schema, to_spark_batches

NAME = "dyntable"
SEQUENCE_STRIDE_BITS = 32  # 4G rows per task and commit
FILE_COUNTER_BITS = 24  # 16M files per task attempt
#: One JSON object of storage/catalog options (s3 endpoint, credentials ...), as given to open_catalog.
CATALOG_OPTIONS = "catalog-options"
COMMIT_CLOCK_SLACK_MS = 10 * 60 * 1000  # how far before the job's start a commit lookup still searches


def wants_row_kind(options: dict[str, str]) -> bool:
    """``read.changelog = true`` (Paimon's option) adds the ``rowkind`` column (+I, -U, +U, -D)."""
    return (options.get("read.changelog") or "false").lower() == "true"


def resolve(options: dict[str, str]) -> tuple[Table, str | None]:
    """The table (branch applied) and the system table name, if the option names one."""
    warehouse = options.get("warehouse")
    name = options.get("table") or options.get("path")
    if not warehouse or not name:
        raise InvalidArgumentError("the dyntable source needs the options 'warehouse' and 'table' (db.table)")
    ident = Identifier.parse(name)
    branch = options.get("branch") or ident.branch
    base = Identifier(ident.database, ident.table, branch if branch and branch != "main" else None)
    return open_catalog(warehouse, **catalog_options(options)).get_table(base), ident.system_table


def catalog_options(options: dict[str, str]) -> dict[str, Any]:
    """Storage/catalog options (endpoint, credentials, ...) the SQL session passes as one JSON option."""
    text = options.get(CATALOG_OPTIONS)
    if not text:
        return {}
    try:
        decoded = json.loads(text)
    except ValueError as e:
        raise InvalidArgumentError(f"option '{CATALOG_OPTIONS}' must be a JSON object: {e}") from None
    if not isinstance(decoded, dict):
        raise InvalidArgumentError(f"option '{CATALOG_OPTIONS}' must be a JSON object")
    return decoded


def load_table(options: dict[str, str]) -> Table:
    table, system = resolve(options)
    if system is not None:
        raise InvalidArgumentError(f"system table '{options.get('table')}' is read-only and cannot be streamed")
    return table


def source_arrow_schema(table: Table, system: str | None, options: dict[str, str]) -> pa.Schema:
    """The Arrow schema this source declares for a table or system table."""
    from engine.system_tables import DATA_TABLES, system_table_schema

    if system is not None and system not in DATA_TABLES:
        full = system_table_schema(table, system)
        wanted = [c.strip() for c in (options.get("columns") or "").split(",") if c.strip()]
        unknown = [c for c in wanted if c not in full.names]
        if unknown:
            raise InvalidArgumentError(f"unknown column(s) {unknown} of system table '{system}'")
        return pa.schema([full.field(c) for c in wanted]) if wanted else full
    table = travelled(table, time_travel(options, table))  # a snapshot reads in its own schema
    cols = projection(options, table)
    fields = [table.arrow_schema.field(c) for c in cols]
    if system == "audit_log" or wants_row_kind(options):
        fields.insert(0, pa.field(ROWKIND, pa.string(), nullable=False))
    return pa.schema(fields)


def projection(options: dict[str, str], table: Table) -> list[str]:
    text = options.get("columns")
    if not text:
        return list(table.schema.field_names)
    names = set(table.schema.field_names)
    # ``rowkind`` in a projection means the change kind, unless the table has such a column.
    cols = [c.strip() for c in text.split(",") if c.strip() and (c.strip() != ROWKIND or ROWKIND in names)]
    unknown = [c for c in cols if c not in names]
    if unknown:
        raise InvalidArgumentError(f"unknown column(s) {unknown} in option 'columns'")
    return cols


def time_travel(options: dict[str, str], table: Table):  # type: ignore[no-untyped-def]
    snapshot_id = options.get("scan.snapshot-id")
    tag = options.get("scan.tag-name")
    millis = options.get("scan.timestamp-millis")
    text = options.get("scan.timestamp")
    version = options.get("scan.version")
    if version is not None:
        if version.isdigit() and not table.tags.exists(version):
            snapshot_id = version
        else:
            tag = version
    if text is not None and millis is None:
        millis = str(int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000))
    return resolve_time_travel(
        table.store,
        int(snapshot_id) if snapshot_id is not None else None,
        tag,
        int(millis) if millis is not None else None,
    )


def travelled(table: Table, snapshot: Any) -> Table:
    """``table`` with the schema ``snapshot`` was written with (None: the table itself)."""
    store = store_at(table.store, snapshot)
    if store is table.store:
        return table
    return Table(None, table.identifier, store.io, store.paths, store.schema)


def option_filter(options: dict[str, str], table: Table) -> P.Predicate | None:
    """The ``filter`` option: a pruning predicate in the engine's JSON form (see ``sqlext.pruning``).

    Literals are converted to the column types; a leaf whose literal does not fit its column is
    dropped (it could only prune less, never wrongly).
    """
    text = options.get("filter")
    if not text:
        return None
    from engine.write.conform import coerce_value

    def convert(column: str, value: Any) -> Any:
        try:
            return coerce_value(table.schema, column, value)
        except Exception:  # noqa: BLE001
            return _UNFIT

    pred = P.from_json(text, convert)
    kept = [c for c in P.conjuncts(pred) if not (isinstance(c, P.Leaf) and _UNFIT in c.literals)]
    return P.and_(*kept)


_UNFIT = object()


class DyntableDataSource(DataSource):
    """``spark.read.format("dyntable")`` / ``df.write.format("dyntable")`` / streaming."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        options = dict(self.options)
        table, system = resolve(options)
        return spark_schema(source_arrow_schema(table, system, options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return DyntableReader(dict(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DyntableWriter:
        return DyntableWriter(dict(self.options), overwrite)

    def streamReader(self, schema: StructType):  # type: ignore[no-untyped-def]
        from sqlext.datasource_stream import DyntableStreamReader

        return DyntableStreamReader(dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool):  # type: ignore[no-untyped-def]
        from sqlext.datasource_stream import DyntableStreamWriter

        return DyntableStreamWriter(dict(self.options), overwrite)


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    split: Any


def task_split(split: Any) -> Any:
    """``split`` as a read task needs it: the files' key and value statistics left out.

    Statistics only prune during planning; readers never look at them. Spark keeps every
    partition's pickled bytes for as long as the relation lives (a DataFrame, a view) and puts
    them into each task, so they would be about half of what a read holds per file.
    """
    from engine.meta.manifest import SimpleStats
    from engine.scan.planner import DataSplit

    if not isinstance(split, DataSplit):
        return split
    empty = SimpleStats.EMPTY
    files = tuple(replace(f, key_stats=empty, value_stats=empty, value_stats_cols=None) for f in split.files)
    return replace(split, files=files)


class DyntableReader(DataSourceReader):
    """Plans once in the driver; each Spark task reads one split."""

    def __init__(self, options: dict[str, str]) -> None:
        table, self.system = resolve(options)
        self.identifier = table.identifier
        self.store = table.store
        self.snapshot = time_travel(options, table)
        self.incremental = incremental_range(options, table, self.snapshot)
        if self.system is None or self.system in ("audit_log", "ro"):
            table = travelled(table, self.snapshot)
            self.store = table.store
        self.with_kind = wants_row_kind(options) or self.system == "audit_log"
        declared = source_arrow_schema(table, self.system, options)
        self.columns = list(declared.names[1:] if self.with_kind else declared.names)
        self.arrow_schema = spark_arrow_schema(declared)
        self.pruning = option_filter(options, table)
        # Set by sqlext.native_scan: Spark's Parquet reader reads the rest of this snapshot's plan.
        merge_only = options.get("native-scan.merge-only")
        self.merge_only = int(merge_only) if merge_only is not None else None

    def _table(self) -> Table:
        return Table(None, self.identifier, self.store.io, self.store.paths, self.store.schema)

    def partitions(self) -> Sequence[InputPartition]:
        from engine.scan.planner import TableScan
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
        splits = list(scan.plan().splits)
        if self.system == "ro":
            splits = read_optimized_splits(self._table(), splits)
        if self.merge_only is not None:
            from engine.scan.raw import needs_merge

            splits = [s for s in splits if needs_merge(self.store, s, read_optimized=self.system == "ro")]
        return [SplitPartition(task_split(s)) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from engine.read.split_reader import SplitReader

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
        from engine.read.split_reader import SplitReader
        from engine.scan.planner import TableScan

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


def incremental_range(options: dict[str, str], table: Table, snapshot: Any) -> Any:
    """The ``incremental-between`` range of a batch read (None: not an incremental read)."""
    between = options.get("incremental-between")
    if between is None:
        return None
    if snapshot is not None:
        raise InvalidArgumentError("incremental-between cannot be combined with time travel options")
    return resolve_between(table.store, between, options.get("incremental-between-scan-mode", "auto"))


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
    from engine.write.bucket_assigner import writer_clustering

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

    from engine.meta.paths import FileNamer

    ctx = TaskContext.get()
    task = ctx.partitionId() if ctx is not None else 0
    attempt = ctx.attemptNumber() if ctx is not None else 0
    from engine.write.factory import new_writer

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


def overwrite_mode(options: dict[str, str], overwrite: bool) -> Any:
    if not overwrite:
        return False
    listed = options.get("overwrite-partitions")
    if listed:
        parsed_list = json.loads(listed)
        if not isinstance(parsed_list, list) or not all(isinstance(p, dict) for p in parsed_list):
            raise InvalidArgumentError("option 'overwrite-partitions' must be a JSON list of partition objects")
        return parsed_list
    spec = options.get("overwrite-partition")
    if spec:
        parsed = json.loads(spec)
        if not isinstance(parsed, dict):
            raise InvalidArgumentError("option 'overwrite-partition' must be a JSON object of partition values")
        return parsed
    # Spark hands options over with lower-cased keys.
    mode = options.get("partitionoverwritemode") or options.get("partitionOverwriteMode") or ""
    if mode.lower() == "dynamic" or options.get("dynamic-partition-overwrite") == "true":
        return "dynamic"
    return True


def parse_bool_option(options: dict[str, str], key: str) -> bool | None:
    value = options.get(key)
    if value is None:
        return None
    if value.lower() not in ("true", "false"):
        raise InvalidArgumentError(f"option '{key}' must be true or false, not '{value}'")
    return value.lower() == "true"


class DyntableWriter(DataSourceArrowWriter):
    """Batch write: Arrow batches in, one snapshot published by the driver-side commit.

    ``commit`` and ``abort`` run in Python worker processes, possibly different ones: whether
    the job's commit was published is read back from the table (by the job's commit user and
    identifier), never kept in memory. Nothing after the publish can raise out of ``commit``,
    and ``abort`` never deletes files once the job's snapshot exists (or may exist).
    """

    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        self.options = options
        table = load_table(options)
        self.store = table.store
        self.identifier = table.identifier
        self.overwrite = overwrite_mode(options, overwrite)
        self.commit_user = options.get("commit-user") or str(uuid.uuid4())
        self.change_tracking = parse_bool_option(options, "change-tracking")
        self.defer_compaction = parse_bool_option(options, "write-only") or False
        self.job_token = str(uuid.uuid4())
        self.started_millis = int(time.time() * 1000)
        base = options.get("overwrite-base-snapshot")
        self.base_snapshot_id = int(base) if base is not None else None
        identifier = options.get("commit-identifier")
        self.identifier_value = int(identifier) if identifier is not None else None

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
