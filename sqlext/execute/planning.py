"""What a statement planner reads and what it returns: the narrow context and the typed plans.

A planner is ``planner(ctx, node, stmt) -> Plan``: it reads the warehouse and the session through
``PlannerContext`` alone, checks the statement, and says what is to happen as a plain value. It
runs nothing on Spark and changes nothing; the session's runner (``sqlext.execute.runner``)
carries the plan out. Planners therefore import without pyspark and are tested against a fake
context (docs/design/planners.md). Nothing here imports pyspark or the session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import pyarrow as pa

from engine import FileSystemCatalog, FormatTable, Identifier, OverwriteSpec, Snapshot, Table, TableSchema
from engine.schema_changes import SchemaChange
from engine.types import DataField, DataType
from sqlext.bind.rewrite import BoundQuery
from sqlext.parse.names import TableName, quoted
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition
from sqlext.source.dynamic import table_overrides

if TYPE_CHECKING:  # the MERGE planner's own value type (it imports this module), CALL's procedures
    from sqlext.execute.merge_clauses import MergeClauses
    from sqlext.execute.procedures.plans import ProcedurePlan
    from sqlext.execute.procedures.registry import Procedure


@dataclass(frozen=True)
class Column:
    """A column of a query's result, as the SQL engine types it (``bigint``, ``struct<a:int>``)."""

    name: str
    type_text: str
    nullable: bool = True
    dtype: DataType | None = None  # the column's type as a Paimon type (None: not known)


@dataclass(frozen=True)
class BoundFrame:
    """A query bound to the managed tables it reads: the engine's lazy result and what it reads.

    ``frame`` is opaque to planners (a Spark DataFrame under the session): they pass it on in a
    plan. ``query`` says which tables, views and cached tables the query reads; it is handed back
    with the frame instead of being left on the session for the next caller to find.
    """

    frame: Any
    query: BoundQuery | None
    columns: tuple[Column, ...]
    streaming: bool = False  # an unbounded query (it reads a table's changes continuously)


@dataclass(frozen=True)
class JobStatus:
    """One continuous job of the session."""

    job_id: str
    status: str  # RUNNING, FINISHED or FAILED
    statement: str


class PlannerContext(Protocol):
    """All a planner may know: the catalog, the session's names and options, and queries.

    Deliberately not the session: no Spark, no caches, no writes. A planner that needs more asks
    for one more method here, with a fake of it in the tests.
    """

    @property
    def catalog(self) -> FileSystemCatalog: ...

    @property
    def current_database(self) -> str: ...

    @property
    def options(self) -> Mapping[str, str]:
        """The session's options (SET key = value)."""
        ...

    @property
    def streaming(self) -> bool:
        """Whether the session runs in streaming mode (``execution.runtime-mode``)."""
        ...

    def is_managed(self, name: TableName) -> bool: ...

    def identifier(self, name: TableName) -> Identifier:
        """The full identifier of a name (the current database filled in)."""
        ...

    def table(self, name: TableName) -> Table:
        """The managed table (at its branch) a name refers to."""
        ...

    def engine_has_table(self, name: str) -> bool:
        """Whether the SQL engine itself knows a table or view of this name (Spark's catalog)."""
        ...

    def frame(self, sql: str, stmt: Statement | None = None, *, streaming: bool = False) -> BoundFrame:
        """A query over managed tables and the engine's own, bound (and analysed, not run);
        ``streaming``: managed tables are read as unbounded changelogs."""
        ...

    def type_text(self, dtype: DataType) -> str:
        """How the SQL engine names a Paimon type (Spark's ``simpleString``)."""
        ...

    def cast_type(self, dtype: DataType) -> str:
        """How the SQL engine names a Paimon type in a CAST, the same under any session setting
        (Spark's ``timestamp_ltz``, not the session-dependent ``timestamp``)."""
        ...

    def engine_setting(self, key: str) -> str | None:
        """The SQL engine's own setting ``key`` (a Spark conf), or None when unset."""
        ...

    def jobs(self) -> list[JobStatus]: ...

    def view_listing(self, database: str, like: str | None) -> list[tuple[str, str, bool]]:
        """(namespace, name, isTemporary) of the views of ``database`` and every temporary view."""
        ...

    def views(self, database: str) -> list[ViewDefinition]:
        """The permanent dyntable views of ``database``, by name."""
        ...

    def view_of(self, name: TableName) -> ViewDefinition | None:
        """The dyntable view a name refers to (a temporary view first, as Spark resolves), or None."""
        ...

    def temporary_views(self) -> list[ViewDefinition]:
        """The session's own temporary dyntable views."""
        ...

    def temporary_view(self, name: str) -> ViewDefinition | None:
        """The session's own temporary dyntable view of this name, or None."""
        ...

    def is_cached(self, name: str) -> bool:
        """Whether ``name`` is a cached table of the session (CACHE TABLE over managed tables)."""
        ...

    def engine_temp_views(self) -> list[str]:
        """The SQL engine's own temporary views (cached tables among them), by name."""
        ...

    # How the SQL engine shows schemas and its own views (SHOW TABLE EXTENDED answers in its words).
    def schema_tree(self, schema: pa.Schema) -> str | None:
        """The engine's tree text of a table's columns (Spark's ``treeString``); None: no columns."""
        ...

    def query_tree(self, sql: str) -> str | None:
        """The tree text of a query's result columns; None when it does not bind or has none."""
        ...

    def engine_view_tree(self, name: str) -> str | None:
        """The tree text of one of the engine's temporary views; None when it no longer resolves."""
        ...

    def engine_view_information(self, pattern: str) -> dict[str, str]:
        """The engine's own SHOW TABLE EXTENDED ``information`` of its temporary views matching
        ``pattern``, by name (those it describes)."""
        ...


# -- plans ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rows:
    """Answer with these rows (metadata results: small, built in Arrow)."""

    table: pa.Table
    message: str | None = None


@dataclass(frozen=True)
class Done:
    """Nothing more to do: answer with a status message."""

    message: str


@dataclass(frozen=True)
class ToEngine:
    """Run the statement's own text on the SQL engine: it names nothing dyntable owns (as its
    target; with ``bind``, managed tables it reads are bound first)."""

    bind: bool = False
    row_level: bool = False  # a row-level change: Spark's bare refusal becomes a typed error


@dataclass(frozen=True)
class SetOption:
    """Set a session option (and the engine setting of the same key, where it has one)."""

    key: str
    value: str


@dataclass(frozen=True)
class ResetOption:
    """Reset one session option, or all of them (``key`` None)."""

    key: str | None


@dataclass(frozen=True)
class StopJob:
    """Stop a continuous job of the session (the planner checked that it exists)."""

    job_id: str


SessionAction: TypeAlias = SetOption | ResetOption | StopJob


# Metadata actions: catalog changes, carried out by the runner; each says what to report.
@dataclass(frozen=True)
class CreateDatabase:
    name: str
    message: str


@dataclass(frozen=True)
class DropDatabase:
    """Drop a database (the session moves to ``default`` if it was the current one)."""

    name: str
    if_exists: bool
    cascade: bool
    message: str


@dataclass(frozen=True)
class UseDatabase:
    name: str
    message: str


@dataclass(frozen=True)
class CreateTable:
    """Create an empty managed table (no query to run: CREATE TABLE ... LIKE, plain CREATE TABLE)."""

    identifier: Identifier
    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    comment: str | None
    message: str
    file_format: str | None = None  # csv, parquet, json, orc: a Paimon format table of those files


@dataclass(frozen=True)
class FormatWrite:
    """INSERT into a format table (``engine.FormatTable``): the query's columns (``_c0`` …) shaped
    onto the table's by ``expressions`` (casts, static partition values), written by the SQL
    engine's file writer; ``overwrite``: ``none``, ``static`` (under ``static``, or everything) or
    ``dynamic`` (the partitions written)."""

    table: FormatTable
    frame: BoundFrame
    expressions: tuple[str, ...]
    overwrite: str
    static: Mapping[str, str]
    message: str


@dataclass(frozen=True)
class AlterTable:
    """Apply schema changes to a table, in one schema commit."""

    identifier: Identifier
    changes: tuple[SchemaChange, ...]
    message: str


@dataclass(frozen=True)
class RenameTable:
    source: Identifier
    target: Identifier
    message: str


@dataclass(frozen=True)
class DropTable:
    identifier: Identifier
    message: str


@dataclass(frozen=True)
class DropPartitions:
    """Drop partitions of a table in one commit (``specs`` typed, each a prefix of the partition
    columns). The runner reports how many specs matched; a full spec that matches nothing fails
    the whole statement unless ``if_exists``."""

    identifier: Identifier
    specs: tuple[Mapping[str, Any], ...]
    if_exists: bool
    message: str


CatalogAction: TypeAlias = (
    CreateDatabase | DropDatabase | UseDatabase | CreateTable | AlterTable | RenameTable | DropTable
    | DropPartitions
)


# Views and cached tables (docs: sqlext.execute.views); the runner keeps them in the session or
# the warehouse.
@dataclass(frozen=True)
class CreateView:
    """Keep a dyntable view: a temporary one (``view.database`` None) in the session, replacing,
    with ``replaces``, the session's temporary view, cached table or engine view of the name; a
    permanent one in the warehouse (the planner checked what may be replaced)."""

    view: ViewDefinition
    replaces: bool
    message: str


@dataclass(frozen=True)
class DropView:
    """Forget the session's temporary view or cached table ``temporary``, or delete the
    warehouse's view ``stored``. With ``then_engine`` the statement's text then runs on the SQL
    engine (CREATE OR REPLACE of a view of its own over a name the session's view had)."""

    temporary: str | None
    stored: ViewDefinition | None
    message: str
    then_engine: bool = False


@dataclass(frozen=True)
class CacheTable:
    """Cache the query ``sql`` (bound in ``current_database``) as the temporary table ``name``,
    replacing a cached table of the name; rebuilt when a table it reads changes."""

    name: str
    sql: str
    current_database: str
    lazy: bool
    options: Mapping[str, str]
    message: str


@dataclass(frozen=True)
class UncacheTable:
    """Release the session's cached table ``name`` and its temporary view."""

    name: str
    message: str


ViewAction: TypeAlias = CreateView | DropView | CacheTable | UncacheTable


# Table rewrites: DDL that runs Spark jobs over a table's data (the runner's ``ddl_jobs.py``).
@dataclass(frozen=True)
class Compact:
    """Compact ``table`` fully (only ``partitions``, typed, when given) in one distributed job."""

    table: Table
    partitions: tuple[Mapping[str, Any], ...] | None


@dataclass(frozen=True)
class AddPrimaryKey:
    """Rewrite the append ``table``, read at ``snapshot``, as a table keyed by ``columns`` with
    ``options``, swapped in place of it; the runner first checks the data (no duplicate key, no
    NULL in a key column) and changes nothing when it fails."""

    table: Table
    columns: tuple[str, ...]
    snapshot: int | None
    options: Mapping[str, str]


@dataclass(frozen=True)
class Rescale:
    """Rewrite every file of the table ``name`` into ``buckets`` buckets, in one overwrite."""

    name: TableName
    buckets: int
    message: str


TableJob: TypeAlias = Compact | AddPrimaryKey | Rescale


# Tags and branches of a table (metadata only); the runner reports what happened.
@dataclass(frozen=True)
class CreateTag:
    """Create (or, with ``replace``, replace) a tag of ``table`` at snapshot ``version`` (None: the
    latest), kept for ``retain`` (None: until dropped). With ``if_not_exists`` an existing tag is
    left as it is."""

    table: Table
    tag: str
    version: int | None
    retain: timedelta | None
    replace: bool
    if_not_exists: bool


@dataclass(frozen=True)
class DropTags:
    """Delete tags of ``table`` (each exists: the planner left out the missing ones it may skip)."""

    table: Table
    tags: tuple[str, ...]


@dataclass(frozen=True)
class RenameTag:
    table: Table
    old: str
    new: str
    message: str


@dataclass(frozen=True)
class CreateBranch:
    """Create a branch of ``table`` from a tag, a snapshot or the latest snapshot; with
    ``if_not_exists`` an existing branch is left as it is."""

    table: Table
    branch: str
    from_tag: str | None
    from_snapshot: int | None
    if_not_exists: bool


@dataclass(frozen=True)
class DropBranch:
    """Delete a branch of ``table`` (the planner checked it exists)."""

    table: Table
    branch: str
    message: str


RefAction: TypeAlias = CreateTag | DropTags | RenameTag | CreateBranch | DropBranch


# Writes: one plan for every statement that writes rows (docs/design/planners.md, "Writes").
@dataclass(frozen=True)
class WriteShape:
    """How the runner maps the query's output onto the table's columns.

    ``columns``: the table columns the output fills, by position; ``static``: static partition
    values; the other columns get their default, their computed value or NULL. ``by_name``:
    struct fields are matched by name (the engine's writers align them), not cast by position.
    """

    columns: tuple[str, ...]
    static: Mapping[str, Any] = field(default_factory=dict)
    by_name: bool = False


@dataclass(frozen=True)
class StreamSettings:
    """A continuous write: its pipeline (checkpoint and commit user, the same on every run of the
    same statement), its trigger and the tables it reads (a checkpoint older than one is stale)."""

    pipeline: str
    checkpoint: str
    trigger: str  # 'processing-time' or 'available-now'
    interval: str  # the engine's interval text
    reads: tuple[Table, ...]


@dataclass(frozen=True)
class Write:
    """Write a query's rows into a table in one commit (or, with ``stream``, start a continuous job).

    ``table``: the target, with the write's dynamic options applied and, when ``evolve`` is set,
    at that schema version (not yet published: the write's commit publishes it just before its
    snapshot, so a failed write leaves no schema); ``frame``: the bound input; ``overwrite``: what
    the commit replaces (None: append); ``base_snapshot``: the snapshot an overwrite was computed
    from (a later change to the replaced partitions is a conflict); ``options``: the write's
    resolved options (session ``spark.paimon.*`` keys, then hints); ``shape``: how to map the
    output (None: the frame has the table's columns already); ``message``: the status, with
    ``{count}`` standing for the rows written.
    """

    table: Table
    frame: BoundFrame
    overwrite: OverwriteSpec | None
    base_snapshot: int | None
    options: Mapping[str, str]
    evolve: TableSchema | None
    shape: WriteShape | None
    message: str
    stream: StreamSettings | None = None


@dataclass(frozen=True)
class CopyIntoTable:
    """COPY INTO a table from files (Paimon 2.0): what the runner reads, checks and writes.

    ``source``: the directory (its direct files; ``pattern`` a regex over their base names);
    ``format``: CSV, JSON or PARQUET; ``reader_options``: Spark's reader options for it;
    ``null_if`` / ``empty_as_null``: values read as NULL; ``columns``: the table columns the
    files fill (CSV by position, JSON and Parquet by name), each cast to ``casts`` (a CAST's type
    text; ``strings``: which are strings, never a cast failure); ``force``: ignore the load
    history; ``on_error``: ABORT_STATEMENT, CONTINUE or SKIP_FILE; ``options``: the write's
    resolved options. The rows go through the ``Write`` an INSERT with that column list plans.
    """

    table: Table
    source: str
    format: str
    reader_options: Mapping[str, str]
    null_if: tuple[str, ...]
    empty_as_null: bool
    columns: tuple[str, ...]
    casts: tuple[str, ...]
    strings: tuple[bool, ...]
    pattern: str | None
    force: bool
    on_error: str
    options: Mapping[str, str]

    def write_for(self, frame: BoundFrame) -> Write:
        """The ``Write`` of the checked rows (``frame`` has ``columns``, already cast)."""
        return Write(self.table, frame, None, None, self.options, None, WriteShape(self.columns),
                     "{count} rows loaded")


@dataclass(frozen=True)
class CopyToLocation:
    """COPY INTO a location from a table or query: Spark writes ``frame`` as ``format`` files
    (``options``: Spark's writer options) into ``target``; without ``overwrite`` an existing
    target is refused."""

    frame: BoundFrame
    target: str
    format: str
    options: Mapping[str, str]
    overwrite: bool


@dataclass(frozen=True)
class CreateTableAs:
    """CREATE TABLE … AS SELECT: create ``create``'s table, then carry out ``write_for(table)``,
    the ``Write`` an ``INSERT INTO t SELECT`` of the same query plans (every column by position,
    the write's resolved ``options``); a failed write drops the table again (all or nothing).

    The write needs the created table, so the plan names the write's parts and ``write_for``
    assembles it once the runner has the table; deciding nothing there, it stays a value.
    """

    create: CreateTable
    query: BoundFrame
    options: Mapping[str, str]
    message: str

    def write_for(self, table: Table) -> Write:
        overrides = table_overrides(self.options)
        target = table.with_options(overrides) if overrides else table
        return Write(target, self.query, None, None, self.options, None,
                     WriteShape(tuple(table.schema.field_names)), self.message)


@dataclass(frozen=True)
class CreateFormatTableAs:
    """CREATE TABLE … USING <format> AS SELECT: create ``create``'s format table, then write the
    query's columns (``_c0`` …) onto it by position through ``expressions``, as an INSERT into a
    format table does (:class:`FormatWrite`); a failed write drops the table again."""

    create: CreateTable
    query: BoundFrame
    expressions: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class CallProcedure:
    """CALL: ``procedure`` with its bound and checked ``values``, and ``work``, what it planned
    (``procedures.plans``: metadata work through the engine, compactions, rewrites); the runner
    carries ``work`` out and answers its table, cast to the procedure's output, with ``message``.
    ``argument_at``: where each given argument's value is written in the statement (by parameter
    name), so an error about one (``ProcedureTargetError``) points there."""

    procedure: Procedure
    values: Mapping[str, Any]
    argument_at: Mapping[str, int]
    message: str
    work: ProcedurePlan


# Row-level DML (docs/design/planners.md, "Row-level DML"): what is changed depends on the data,
# so these plans name the queries that find it and leave the finding to the runner. Their queries
# read the target through the runner: a fresh read of the table at the plan's ``snapshot`` for each
# query, so every read of one statement sees one version.
@dataclass(frozen=True)
class TargetQuery:
    """``SELECT <select> FROM <the target> AS <alias> [WHERE <where>]``: SQL text over the target."""

    select: str
    alias: str
    where: str | None = None

    def sql(self, source: str) -> str:
        """The query with ``source`` (a view of the target) in its FROM clause."""
        where = f" WHERE {self.where}" if self.where is not None else ""
        return f"SELECT {self.select} FROM {source} AS {quoted(self.alias)}{where}"


@dataclass(frozen=True)
class Matched:
    """The rows a row-level statement changes: the target's rows (read as ``alias``) where
    ``condition`` (SQL text) is true (None: every row; only ``MarkDeletions`` takes that)."""

    alias: str
    condition: str | None


@dataclass(frozen=True)
class RowLevelWrite:
    """A DELETE/UPDATE written as rows into a table read at ``snapshot``, in one commit.

    ``rows``: the query over the target of the rows to write. ``overwrite``:

    * ``"none"``: append them (a primary-key table's changes, with the ``rowkind`` column); the
      count reported is the rows written;
    * ``"matched"``: the partitions holding ``matched`` rows (the whole table if unpartitioned)
      are replaced by those of ``rows`` that were in them (``partition_of``: the columns of
      ``rows`` holding each row's partition values before the change, default the partition
      columns); the count reported is the matched rows, and none matched writes nothing;
    * ``"all"``: they replace the whole table; the count reported is the rows written.

    An overwrite is based on ``snapshot``: a later change to what it replaces fails the statement.
    ``options``: the write's options beyond the session's. ``verb``: the result says
    ``{count} row(s) <verb>``.
    """

    table: Table
    snapshot: int | None
    rows: TargetQuery
    overwrite: Literal["none", "matched", "all"]
    matched: Matched | None
    verb: str
    partition_of: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MarkDeletions:
    """Mark the ``matched`` rows of a deletion-vector table at ``snapshot`` deleted: one snapshot
    of new deletion vectors, no data file rewritten; the count reported is the rows marked.

    ``rows`` (UPDATE): the select list, over the matched rows, of the rows that replace them; they
    are added in the same snapshot.
    """

    table: Table
    snapshot: Snapshot
    matched: Matched
    verb: str
    rows: str | None = None
    #: a data-evolution table: the rows are found by row id and marked on their ranges' anchor files
    by_row_id: bool = False


@dataclass(frozen=True)
class UpdateColumns:
    """UPDATE of a data-evolution table read at ``snapshot``: the ``columns`` it sets written, for
    every row-id range holding a matched row, as one file of those columns over the whole range
    (Paimon 2.0's rule; no row is rewritten), in one commit; the count reported is the rows matched.

    ``rows``: the query over the target giving every row's ``_ROW_ID``, whether it matches
    (``matched_column``) and each set column's value after the statement (the current one for a
    row that does not match).
    """

    table: Table
    snapshot: Snapshot | None
    rows: TargetQuery
    matched_column: str
    columns: tuple[str, ...]
    verb: str


@dataclass(frozen=True)
class TruncateTable:
    """Remove every file of a table (or of one ``partition``, typed) in one snapshot.

    ``count``: for DELETE without WHERE, the rows removed, when metadata knows it (an append table
    with deletion vectors); ``count_rows``: the runner counts them with a query first (and commits
    nothing when there are none); the result is then ``{count} row(s) <verb>``. Without either
    (TRUNCATE) the result is ``message``, with " (it was empty)" when nothing was removed.
    """

    table: Table
    partition: Mapping[str, Any] | None
    snapshot: int | None
    count: int | None
    count_rows: bool
    verb: str
    message: str


@dataclass(frozen=True)
class MergeInto:
    """MERGE INTO: the target at ``snapshot`` joined with the source in one query (``clauses``:
    its text, each clause's values and key checks), evaluated once by the runner, which checks it
    (one source row per target row, keys unchanged), counts the outcome and writes it in one
    commit: a key table's changes, a deletion-vector table's marked rows and new rows, or an append
    table's rewritten partitions (an overwrite based on ``snapshot``). ``table`` is at the schema
    the write publishes when ``write.merge-schema`` evolves it."""

    table: Table
    snapshot: Snapshot | None
    clauses: MergeClauses
    deletion_vectors: bool
    #: a data-evolution table: updated columns written over their row-id ranges, deleted rows
    #: marked on the ranges' anchor files, inserted rows appended (``update_columns``: the set ones)
    data_evolution: bool = False
    update_columns: tuple[str, ...] = ()


RowLevelPlan: TypeAlias = RowLevelWrite | MarkDeletions | UpdateColumns | TruncateTable | MergeInto

Plan: TypeAlias = (
    Rows | Done | ToEngine | SessionAction | CatalogAction | RefAction | ViewAction | TableJob
    | Write | FormatWrite | CreateTableAs | CreateFormatTableAs | CallProcedure | RowLevelPlan
    | CopyIntoTable | CopyToLocation
)
Planner: TypeAlias = Callable[[PlannerContext, Any, Statement], Plan]


def message_of(action: SessionAction) -> str:
    """The status message of a session action once carried out."""
    if isinstance(action, SetOption):
        return f"{action.key} = {action.value}"
    if isinstance(action, ResetOption):
        return "Reset " + (action.key or "all session options")
    return f"Job {action.job_id} stopped"
