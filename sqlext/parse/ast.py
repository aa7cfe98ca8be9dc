"""The statements dyntable parses itself, as frozen dataclasses (one per statement).

Names, raw SQL fragments and partition specs live in :mod:`sqlext.parse.names` and are re-exported here.

Invariants:
* nodes are immutable values: equal when their content is equal; source positions are carried
  for error messages but never take part in equality (``compare=False``);
* names are plain ``str`` as written (unquoted; case kept); the catalog decides case rules;
* embedded Spark SQL (queries, conditions, expressions) and data types are :class:`SqlFragment`:
  the exact source text plus where it starts in the script, interpreted later by their owners;
* option maps are ``dict[str, str]`` (Paimon's options are strings) and must be treated as
  read-only;
* :func:`dump` renders any node in one canonical line (the fixture tests' expected form).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal, TypeAlias

# The nodes' building blocks are part of this module's API (explicit re-exports).
from sqlext.parse.names import LiteralValue as LiteralValue
from sqlext.parse.names import PartitionEntry as PartitionEntry
from sqlext.parse.names import PartitionSpec as PartitionSpec
from sqlext.parse.names import SqlFragment as SqlFragment
from sqlext.parse.names import TableName as TableName
from sqlext.parse.names import position_field
from sqlext.parse.names import quote_name as quote_name

# ---------------------------------------------------------------- databases and session


@dataclass(frozen=True, slots=True)
class CreateDatabase:
    """CREATE DATABASE|SCHEMA [IF NOT EXISTS] [catalog.]db [COMMENT] [LOCATION] [WITH (...)]."""

    name: str
    catalog: str | None = None
    if_not_exists: bool = False
    comment: str | None = None
    location: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DropDatabase:
    """DROP DATABASE|SCHEMA [IF EXISTS] [catalog.]db [CASCADE|RESTRICT]."""

    name: str
    catalog: str | None = None
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True, slots=True)
class UseDatabase:
    """USE [catalog.]db."""

    name: str
    catalog: str | None = None


@dataclass(frozen=True, slots=True)
class ShowDatabases:
    """SHOW DATABASES|SCHEMAS [LIKE 'pattern']."""

    like: str | None = None


@dataclass(frozen=True, slots=True)
class ShowTables:
    """SHOW TABLES [IN|FROM [catalog.]db] [LIKE 'pattern']."""

    database: str | None = None
    catalog: str | None = None
    like: str | None = None


@dataclass(frozen=True, slots=True)
class DescribeDatabase:
    """DESCRIBE DATABASE [EXTENDED] [catalog.]db."""

    name: str
    catalog: str | None = None
    extended: bool = False


@dataclass(frozen=True, slots=True)
class SetOption:
    """SET (list all), SET key (show one), SET key = value; quotes around key/value are removed."""

    key: str | None = None
    value: str | None = None


@dataclass(frozen=True, slots=True)
class ResetOption:
    """RESET (all session options) or RESET key."""

    key: str | None = None


@dataclass(frozen=True, slots=True)
class ShowJobs:
    """SHOW JOBS: the session's streaming jobs."""


@dataclass(frozen=True, slots=True)
class StopJob:
    """STOP JOB 'id'."""

    job_id: str


# ---------------------------------------------------------------- CREATE / DROP TABLE


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """A physical column: name, type text, nullability, comment, DEFAULT expression."""

    name: str
    type: SqlFragment
    nullable: bool = True
    comment: str | None = None
    default: SqlFragment | None = None
    line: int | None = position_field()
    column: int | None = position_field()


@dataclass(frozen=True, slots=True)
class ComputedColumn:
    """``name AS expression [COMMENT '...']``."""

    name: str
    expression: SqlFragment
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class Watermark:
    """``WATERMARK FOR column AS expression``."""

    column: str
    expression: SqlFragment


@dataclass(frozen=True, slots=True)
class CreateTable:
    """CREATE TABLE, Flink or Spark style, optionally AS <query> (CTAS).

    Column-level and table-level primary keys are merged into ``primary_key``; WITH, OPTIONS and
    TBLPROPERTIES are merged into ``options``; CLUSTERED BY (...) INTO n BUCKETS fills
    ``bucket_key`` and ``buckets``.
    """

    name: TableName
    columns: tuple[ColumnDef | ComputedColumn, ...] = ()
    watermark: Watermark | None = None
    primary_key: tuple[str, ...] = ()
    partitioned_by: tuple[str, ...] = ()
    bucket_key: tuple[str, ...] = ()
    buckets: int | None = None
    comment: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    using: str | None = None
    location: str | None = None
    if_not_exists: bool = False
    query: SqlFragment | None = None


@dataclass(frozen=True, slots=True)
class CreateTableLike:
    """CREATE TABLE [IF NOT EXISTS] t LIKE source [WITH (...)]."""

    name: TableName
    source: TableName
    if_not_exists: bool = False
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DropTable:
    """DROP TABLE [IF EXISTS] t [PURGE]: deletes the table's storage."""

    name: TableName
    if_exists: bool = False
    purge: bool = False


# ---------------------------------------------------------------- partitions and ALTER TABLE


@dataclass(frozen=True, slots=True)
class CompactTable:
    """ALTER TABLE t [PARTITION (...)] COMPACT: synchronous full compaction."""

    table: TableName
    partition: PartitionSpec | None = None


@dataclass(frozen=True, slots=True)
class RescaleBuckets:
    """ALTER TABLE t [PARTITION (...)] CLUSTERED INTO n BUCKETS."""

    table: TableName
    buckets: int
    partition: PartitionSpec | None = None


@dataclass(frozen=True, slots=True)
class SetTableOptions:
    """ALTER TABLE t SET [TBLPROPERTIES] ('k' = 'v', ...)."""

    table: TableName
    options: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class ResetTableOptions:
    """ALTER TABLE t RESET ('k', ...) / UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)."""

    table: TableName
    keys: tuple[str, ...]
    if_exists: bool = False


#: A column: its name, or the path of a nested field (``('v', 'element', 'f1')`` for v.element.f1).
ColumnPath = str | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AddedColumn:
    """One column of ADD COLUMN(S) / MODIFY, with its optional FIRST / AFTER position.

    ``parents`` is the path of the ROW a nested field goes into (``ADD COLUMN v.f3 INT``: ``('v',)``,
    ``column.name`` ``'f3'``); empty for a top-level column.
    """

    column: ColumnDef
    first: bool = False
    after: str | None = None
    parents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AddColumns:
    """ALTER TABLE t ADD [COLUMN|COLUMNS] c type ... | (c type, ...)."""

    table: TableName
    columns: tuple[AddedColumn, ...]


@dataclass(frozen=True, slots=True)
class DropColumns:
    """ALTER TABLE t DROP [COLUMN|COLUMNS] [IF EXISTS] c, ... | (c, ...); a nested field is a path."""

    table: TableName
    columns: tuple[ColumnPath, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class RenameColumn:
    """ALTER TABLE t RENAME COLUMN a TO b (``a`` may be a nested field's path: v.f1 TO f10)."""

    table: TableName
    old: ColumnPath
    new: str


@dataclass(frozen=True, slots=True)
class AlterColumn:
    """ALTER|CHANGE [COLUMN] c {TYPE t | COMMENT 's' | SET/DROP NOT NULL | SET DEFAULT e | DROP DEFAULT
    | FIRST | AFTER x}...

    Also MODIFY [COLUMN] c type [NOT NULL] [COMMENT] [FIRST|AFTER] and Hive's CHANGE [COLUMN] c c
    type [COMMENT] [FIRST|AFTER]. ``c`` may be a nested field's path. ``None`` means unchanged.
    """

    table: TableName
    column: ColumnPath
    type: SqlFragment | None = None
    comment: str | None = None
    nullable: bool | None = None
    first: bool = False
    after: str | None = None
    default: SqlFragment | None = None
    drop_default: bool = False


@dataclass(frozen=True, slots=True)
class RenameTable:
    """ALTER TABLE t RENAME TO t2."""

    table: TableName
    new_name: TableName


@dataclass(frozen=True, slots=True)
class AddPrimaryKey:
    """ALTER TABLE t ADD [CONSTRAINT n] PRIMARY KEY (a, ...) [NOT ENFORCED]."""

    table: TableName
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DropPartitions:
    """ALTER TABLE t DROP [IF EXISTS] PARTITION (...) [, PARTITION (...)] [PURGE]."""

    table: TableName
    partitions: tuple[PartitionSpec, ...]
    if_exists: bool = False
    purge: bool = False


TagMode: TypeAlias = Literal["create", "replace", "create_or_replace"]


@dataclass(frozen=True, slots=True)
class CreateTag:
    """ALTER TABLE t {CREATE | REPLACE | CREATE OR REPLACE} TAG [IF NOT EXISTS] name
    [AS OF VERSION n] [RETAIN n DAYS|HOURS|MINUTES]."""

    table: TableName
    tag: str
    mode: TagMode = "create"
    if_not_exists: bool = False
    version: int | None = None
    retain: timedelta | None = None


@dataclass(frozen=True, slots=True)
class DropTag:
    """ALTER TABLE t {DELETE | DROP} TAG [IF EXISTS] name; a name 'a,b' names several tags (Paimon)."""

    table: TableName
    tags: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class RenameTag:
    """ALTER TABLE t RENAME TAG a TO b."""

    table: TableName
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class CreateBranch:
    """ALTER TABLE t CREATE BRANCH [IF NOT EXISTS] b [FROM TAG tag | AS OF VERSION n]; neither: empty."""

    table: TableName
    branch: str
    if_not_exists: bool = False
    from_tag: str | None = None
    version: int | None = None


@dataclass(frozen=True, slots=True)
class DropBranch:
    """ALTER TABLE t DROP BRANCH [IF EXISTS] b."""

    table: TableName
    branch: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class ShowTags:
    """SHOW TAGS t."""

    table: TableName


@dataclass(frozen=True, slots=True)
class ShowBranches:
    """SHOW BRANCHES t."""

    table: TableName


# ---------------------------------------------------------------- writes


@dataclass(frozen=True, slots=True)
class Insert:
    """INSERT {INTO | OVERWRITE} [TABLE] t [/*+ OPTIONS(...) */] [PARTITION (...)] [(cols) | BY NAME] <query>.

    ``by_name``: the query's columns go to the table columns of the same names (Spark 3.5).
    """

    table: TableName
    query: SqlFragment
    overwrite: bool = False
    partition: PartitionSpec | None = None
    columns: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    by_name: bool = False


@dataclass(frozen=True, slots=True)
class Delete:
    """DELETE FROM t [[AS] alias] [WHERE condition]."""

    table: TableName
    alias: str | None = None
    where: SqlFragment | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    """``column = expression`` of UPDATE / MERGE ... UPDATE SET (``column`` may be qualified: ``t.c``)."""

    column: str
    value: SqlFragment


@dataclass(frozen=True, slots=True)
class Update:
    """UPDATE t [[AS] alias] SET c = expr, ... [WHERE condition]."""

    table: TableName
    assignments: tuple[Assignment, ...]
    alias: str | None = None
    where: SqlFragment | None = None


@dataclass(frozen=True, slots=True)
class MergeUpdate:
    """THEN UPDATE SET c = expr, ... | UPDATE SET * (``all_columns``)."""

    assignments: tuple[Assignment, ...] = ()
    all_columns: bool = False


@dataclass(frozen=True, slots=True)
class MergeDelete:
    """THEN DELETE."""


@dataclass(frozen=True, slots=True)
class MergeInsert:
    """THEN INSERT [(cols)] VALUES (expr, ...) | INSERT * (``all_columns``)."""

    columns: tuple[str, ...] = ()
    values: tuple[SqlFragment, ...] = ()
    all_columns: bool = False


MatchKind: TypeAlias = Literal["matched", "not_matched", "not_matched_by_source"]


@dataclass(frozen=True, slots=True)
class MergeClause:
    """WHEN [NOT] MATCHED [BY SOURCE] [AND condition] THEN action."""

    match: MatchKind
    action: MergeUpdate | MergeDelete | MergeInsert
    condition: SqlFragment | None = None


@dataclass(frozen=True, slots=True)
class Merge:
    """MERGE INTO target [[AS] a] USING {table | (query)} [[AS] b] ON condition WHEN ..."""

    target: TableName
    source: TableName | SqlFragment
    on: SqlFragment
    clauses: tuple[MergeClause, ...]
    target_alias: str | None = None
    source_alias: str | None = None


@dataclass(frozen=True, slots=True)
class FileFormat:
    """``FILE_FORMAT = (TYPE = …, option = value, …)`` of COPY INTO: the type (upper-case, as
    written: checked by the planner) and the other options, keys upper-case, lists (``NULL_IF``)
    as tuples; ``positions``: where each option key was written (line, column), for errors."""

    type: str
    options: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    positions: Mapping[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CopyInto:
    """COPY INTO t [(cols)] FROM 'path' FILE_FORMAT = (…) [PATTERN = '…'] [FORCE = b] [ON_ERROR = m]."""

    table: TableName
    source: str
    file_format: FileFormat
    columns: tuple[str, ...] | None = None
    pattern: str | None = None
    force: bool = False
    on_error: Literal["ABORT_STATEMENT", "CONTINUE", "SKIP_FILE"] = "ABORT_STATEMENT"


@dataclass(frozen=True, slots=True)
class CopyIntoLocation:
    """COPY INTO 'path' FROM {t | (query)} FILE_FORMAT = (…) [OVERWRITE = b]."""

    target: str
    source: TableName | SqlFragment
    file_format: FileFormat
    overwrite: bool = False


@dataclass(frozen=True, slots=True)
class Truncate:
    """TRUNCATE TABLE t [PARTITION (...)]."""

    table: TableName
    partition: PartitionSpec | None = None


# ---------------------------------------------------------------- describe / show / call


@dataclass(frozen=True, slots=True)
class DescribeTable:
    """DESCRIBE|DESC [TABLE] [EXTENDED|FORMATTED] t [PARTITION (...)] [column]."""

    table: TableName
    extended: bool = False
    formatted: bool = False
    partition: PartitionSpec | None = None
    column: str | None = None


@dataclass(frozen=True, slots=True)
class ShowCreateTable:
    """SHOW CREATE TABLE t."""

    table: TableName


@dataclass(frozen=True, slots=True)
class ShowTableProperties:
    """SHOW TBLPROPERTIES t [('key')]: the table's properties (options and primary key), or one of them."""

    table: TableName
    key: str | None = None


@dataclass(frozen=True, slots=True)
class ShowPartitions:
    """SHOW PARTITIONS t [PARTITION (...)]."""

    table: TableName
    partition: PartitionSpec | None = None


@dataclass(frozen=True, slots=True)
class ShowTableExtended:
    """SHOW TABLE EXTENDED [IN|FROM [catalog.]db] LIKE 'pattern' [PARTITION (k = v, ...)].

    With a PARTITION clause ``like`` names one table (Spark's rule), not a pattern.
    """

    like: str
    database: str | None = None
    catalog: str | None = None
    partition: PartitionSpec | None = None


@dataclass(frozen=True, slots=True)
class CallArgument:
    """One CALL argument: ``name => value`` or positional (``name`` None).

    Values are Python literals; an unquoted name (Databend's ``system$retention_mark(db, t)``)
    is taken as its text.
    """

    value: LiteralValue
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """CALL [catalog.][sys|system.]name(args) and ``system$name(args)``.

    ``qualifier`` holds the parts before the name (``('sys',)``, ``('cat', 'system')``, ``()``);
    ``system$name`` is normalised to qualifier ``('system',)``.
    """

    name: str
    qualifier: tuple[str, ...] = ()
    args: tuple[CallArgument, ...] = ()


# -- views and cached tables ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ViewColumn:
    """One entry of a view's column list: ``name [COMMENT '...']``."""

    name: str
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class CreateView:
    """CREATE [OR REPLACE] [[GLOBAL] TEMP] VIEW [IF NOT EXISTS] v [(cols)] [COMMENT] [TBLPROPERTIES] AS q.

    The column list is ``(a [COMMENT '...'], ...)``.
    """

    name: TableName
    query: SqlFragment
    temporary: bool = False
    global_temporary: bool = False
    replace: bool = False
    if_not_exists: bool = False
    columns: tuple[ViewColumn, ...] = ()
    comment: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DropView:
    """DROP VIEW [IF EXISTS] v."""

    name: TableName
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class ShowViews:
    """SHOW VIEWS [IN|FROM [catalog.]db] [LIKE 'pattern']."""

    database: str | None = None
    catalog: str | None = None
    like: str | None = None


@dataclass(frozen=True, slots=True)
class CacheTable:
    """CACHE [LAZY] TABLE t [OPTIONS ('storageLevel' 'LEVEL')] [[AS] query]."""

    name: TableName
    query: SqlFragment | None = None
    lazy: bool = False
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UncacheTable:
    """UNCACHE TABLE [IF EXISTS] t."""

    name: TableName
    if_exists: bool = False


Node: TypeAlias = (
    CreateDatabase
    | CopyInto
    | CopyIntoLocation
    | CreateView
    | DropView
    | ShowViews
    | CacheTable
    | UncacheTable
    | DropDatabase
    | UseDatabase
    | ShowDatabases
    | ShowTables
    | DescribeDatabase
    | SetOption
    | ResetOption
    | ShowJobs
    | StopJob
    | CreateTable
    | CreateTableLike
    | DropTable
    | CompactTable
    | RescaleBuckets
    | SetTableOptions
    | ResetTableOptions
    | AddColumns
    | DropColumns
    | RenameColumn
    | AlterColumn
    | RenameTable
    | AddPrimaryKey
    | DropPartitions
    | CreateTag
    | DropTag
    | RenameTag
    | CreateBranch
    | DropBranch
    | ShowTags
    | ShowBranches
    | Insert
    | Delete
    | Update
    | Merge
    | Truncate
    | DescribeTable
    | ShowCreateTable
    | ShowTableProperties
    | ShowPartitions
    | ShowTableExtended
    | Call
)


def dump(value: object) -> str:
    """One canonical line for a node (or any value inside one): ``Name(field=value, ...)``.

    Fields equal to their default and position fields are left out; tuples print as ``[...]``,
    table names and fragments as their SQL text (``db.t``, ``'a > 1'``), partition specs as
    ``PartitionSpec(dt='2024-01-01', hour)`` (a bare column is dynamic).
    """
    if isinstance(value, TableName):
        return str(value)
    if isinstance(value, PartitionSpec):
        entries = [e.column if e.dynamic else f"{e.column}={dump(e.value)}" for e in value.entries]
        return f"PartitionSpec({', '.join(entries)})"
    if isinstance(value, SqlFragment):
        return repr(value.text)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = []
        for f in dataclasses.fields(value):
            if not f.compare:
                continue
            v = getattr(value, f.name)
            if f.default is not dataclasses.MISSING and v == f.default:
                continue
            if f.default_factory is not dataclasses.MISSING and v == f.default_factory():
                continue
            items.append(f"{f.name}={dump(v)}")
        return f"{type(value).__name__}({', '.join(items)})"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(dump(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{dump(k)}: {dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, timedelta):
        seconds = int(value.total_seconds())
        for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
            if seconds and seconds % size == 0:
                return f"timedelta({unit}={seconds // size})"
        return f"timedelta(seconds={seconds})"
    return repr(value)

