"""Planners of the DDL: CREATE/DROP/USE DATABASE, CREATE TABLE (with AS SELECT, and … LIKE), DROP
TABLE, ALTER TABLE (options, columns, RENAME TO, DROP PARTITION), and the rewrites (COMPACT, ADD
PRIMARY KEY, CLUSTERED INTO n BUCKETS).

Each checks the statement against the catalog and returns a plan (``planning.py``) that the
session's runner carries out: a catalog action; for CREATE TABLE … AS SELECT, the table to create
and the write INSERT would plan into it; for a rewrite, a table job (the runner's side is
``ddl_jobs.py``). A name dyntable does not own goes to Spark unchanged.

CREATE TABLE accepts the Flink style of the managed-table design (``PRIMARY KEY … NOT
ENFORCED``, ``PARTITIONED BY``, ``WITH (...)``, computed columns, ``WATERMARK FOR``) and the Spark
style (``USING dyntable``, ``TBLPROPERTIES``); a ``USING`` another format goes to Spark. Computed
columns are materialised: their type is the SQL engine's for the expression over typed NULLs,
their expression is stored as the table option ``dyntable.computed-column.<name>`` and evaluated on
every INSERT; the watermark expression is kept as ``dyntable.watermark.<column>`` (metadata for
SHOW CREATE TABLE and streaming readers).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine import FORMAT_TABLE_FORMATS, Identifier, InvalidArgumentError, coerce_spec
from engine.schema_changes import (
    AddColumn,
    ColumnName,
    DropColumn,
    MoveColumn,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnDefault,
    UpdateColumnType,
    UpdateComment,
)
from engine.types import DataField, DataType
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.column_types import TIMESTAMP_TYPE_SETTING, ZONE_SETTING, column_type, stored_default
from sqlext.execute.format_describe import format_table_of
from sqlext.execute.planning import (
    AddPrimaryKey,
    AlterTable,
    Column,
    Compact,
    CreateDatabase,
    CreateFormatTableAs,
    CreateTable,
    CreateTableAs,
    Done,
    DropDatabase,
    DropPartitions,
    DropTable,
    Plan,
    PlannerContext,
    RenameTable,
    Rescale,
    ToEngine,
    UseDatabase,
)
from sqlext.execute.table_options import COMMENT_PROPERTY, COMPUTED_PREFIX, WATERMARK_PREFIX, table_defaults
from sqlext.parse import ast
from sqlext.parse.names import TableName, quoted
from sqlext.parse.splitter import Statement
from sqlext.source.dynamic import session_overrides, table_overrides


def _error(stmt: Statement, message: str, sqlstate: str) -> SqlAnalysisError:
    return SqlAnalysisError(message, line=stmt.line, column=stmt.column, sqlstate=sqlstate)


def require_managed(ctx: PlannerContext, name: TableName, stmt: Statement) -> None:
    """Raises SqlAnalysisError (42P01) unless ``name`` is a managed table."""
    if not ctx.is_managed(name):
        raise SqlAnalysisError(
            f"table or view not found: {ctx.identifier(name).base().full_name}",
            line=name.line or stmt.line, column=name.column or stmt.column, sqlstate="42P01",
        )


# -- databases ----------------------------------------------------------------------------------
def create_database(ctx: PlannerContext, n: ast.CreateDatabase, stmt: Statement) -> Plan:
    if ctx.catalog.database_exists(n.name):
        if n.if_not_exists:
            return Done(f"Database {n.name} already exists; nothing created")
        raise _error(
            stmt,
            f"database '{n.name}' already exists: use CREATE DATABASE IF NOT EXISTS {n.name}, or pick"
            " another name",
            "42710",
        )
    return CreateDatabase(n.name, f"Database {n.name} created")


def drop_database(ctx: PlannerContext, n: ast.DropDatabase, stmt: Statement) -> Plan:
    exists = ctx.catalog.database_exists(n.name)
    if n.if_exists and not exists:
        return Done(f"Database {n.name} does not exist; nothing dropped")
    views = ctx.views(n.name) if exists and not n.cascade else []
    if views:
        names = ", ".join(v.name for v in views)
        raise _error(
            stmt, f"database '{n.name}' is not empty: it has views ({names}); drop them first or use CASCADE",
            "2BP01",
        )
    return DropDatabase(n.name, n.if_exists, n.cascade, f"Database {n.name} dropped")


def use_database(ctx: PlannerContext, n: ast.UseDatabase, stmt: Statement) -> Plan:
    if not ctx.catalog.database_exists(n.name):
        raise _error(stmt, f"database '{n.name}' does not exist", "42P01")
    return UseDatabase(n.name, f"Using database {n.name}")


# -- tables ---------------------------------------------------------------------------------------
MANAGED_FORMATS = ("dyntable", "paimon")


def create_table(ctx: PlannerContext, n: ast.CreateTable, stmt: Statement) -> Plan:
    """CREATE TABLE [AS SELECT] (see the module docstring): a ``CreateTable`` action, or with a
    query a ``CreateTableAs`` whose write is the one INSERT plans; ``USING`` another format goes to
    the SQL engine unchanged."""
    file_format = n.using.lower() if n.using and n.using.lower() in FORMAT_TABLE_FORMATS else None
    if n.using and n.using.lower() not in MANAGED_FORMATS and file_format is None:
        return ToEngine()
    ident = ctx.identifier(n.name)
    if ctx.catalog.table_exists(ident):
        if n.if_not_exists:
            return Done(f"Table {ident.full_name} already exists")
        raise _error(stmt, f"table '{ident.full_name}' already exists", "42710")
    if ctx.view_of(replace(n.name, database=ident.database)) is not None:
        raise _error(stmt, f"'{ident.full_name}' is a view: a table cannot have its name (DROP VIEW first, or"
                     " pick another name)", "42710")
    options = {**table_defaults(ctx.options), **{k: str(v) for k, v in n.options.items()}}
    comment = options.pop(COMMENT_PROPERTY, None)  # TBLPROPERTIES ('comment' = ...), as Paimon's SparkCatalog
    comment = n.comment if n.comment is not None else comment
    if n.buckets is not None:
        options["bucket"] = str(n.buckets)
    if n.bucket_key:
        options["bucket-key"] = ",".join(n.bucket_key)
    fields: list[DataField] = []
    computed: list[ast.ComputedColumn] = []
    for col in n.columns:
        if isinstance(col, ast.ComputedColumn):
            computed.append(col)
            continue
        dtype = column_type(col.type.text, ctx.engine_setting(TIMESTAMP_TYPE_SETTING))
        # DEFAULT is stored as Paimon 1.2+ stores it: the field's defaultValue, the literal's text
        # (the engine refuses text that does not cast to the type, as Paimon); DEFAULT NULL is none.
        default = stored_default(None if col.default is None else col.default.text, dtype,
                                 ctx.engine_setting(ZONE_SETTING))
        fields.append(DataField(len(fields), col.name, dtype if col.nullable else dtype.copy(False),
                                col.comment, default))
    query = None
    if n.query is not None:
        query = ctx.frame(n.query.text)
        if not fields:
            fields = [DataField(i, c.name, _column_type(c)) for i, c in enumerate(query.columns)]
    for col in computed:
        fields.append(DataField(len(fields), col.name, _computed_type(ctx, fields, col.expression.text),
                                col.comment))
        options[COMPUTED_PREFIX + col.name] = col.expression.text
    if n.watermark is not None:
        options[WATERMARK_PREFIX + n.watermark.column] = n.watermark.expression.text
    if not fields:
        raise _error(stmt, "CREATE TABLE needs at least one column", "42601")
    if file_format is not None:
        # A Paimon format table: a directory of files (engine.format_table), no snapshots.
        if computed or n.watermark is not None or n.buckets is not None:
            raise _error(stmt, "a format table has no computed columns, watermarks or buckets", "0A000")
        fmt_options = {**{k: str(v) for k, v in n.options.items()}}
        fmt_options.pop(COMMENT_PROPERTY, None)
        if n.primary_key:
            fmt_options["primary-key"] = ",".join(n.primary_key)
        if n.location is not None:  # an external format table: its files there (Paimon's `path`)
            fmt_options["path"] = n.location
        fmt = CreateTable(ident, tuple(fields), tuple(n.partitioned_by), (), fmt_options, comment,
                          f"Table {ident.full_name} created", file_format)
        if query is None:
            return fmt
        if n.partitioned_by:  # as Paimon's format-table CTAS (an UnsupportedOperationException there)
            raise UnsupportedStatementError(
                "CREATE TABLE … AS SELECT of a partitioned format table is not supported: create it, "
                "then INSERT", line=stmt.line, column=stmt.column)
        if len(query.columns) != len(fields):
            raise _error(stmt, f"'{ident.full_name}' declares {len(fields)} column(s), the query gives "
                         f"{len(query.columns)}", "21S01")
        expressions = tuple(f"CAST(_c{i} AS {ctx.cast_type(f.type)}) AS {quoted(f.name)}"
                            for i, f in enumerate(fields))
        return CreateFormatTableAs(fmt, query, expressions, fmt.message)
    create = CreateTable(ident, tuple(fields), tuple(n.partitioned_by), tuple(n.primary_key), options,
                         comment, f"Table {ident.full_name} created")
    if query is None:
        return create
    # The write's options as INSERT resolves them (the session's spark.paimon.* keys for the table).
    write = {**session_overrides(ctx.options, ident.database, ident.table)}
    table_overrides(write)  # an unknown, immutable or malformed option is refused before the table exists
    return CreateTableAs(create, query, write, create.message)


def _column_type(column: Column) -> DataType:
    """A query column's Paimon type (CREATE TABLE … AS SELECT without a column list)."""
    if column.dtype is None:
        raise InvalidArgumentError(f"Arrow type of column `{column.name}` ({column.type_text}) has no Paimon "
                                   "equivalent; cast the column first")
    return column.dtype


def _computed_type(ctx: PlannerContext, physical: list[DataField], expression: str) -> DataType:
    """A computed column's type: the SQL engine types the expression over typed NULLs."""
    cols = ", ".join(f"CAST(NULL AS {ctx.cast_type(f.type)}) AS {quoted(f.name)}" for f in physical)
    typed = ctx.frame(f"SELECT {expression} AS c FROM (SELECT {cols})")
    return _column_type(typed.columns[0]).copy(True)


# -- rewrites (run by the runner's ddl_jobs.py) -------------------------------------------------------
def compact(ctx: PlannerContext, n: ast.CompactTable, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    table = ctx.table(n.table)
    partitions = (coerce_spec(table.schema, n.partition.values()),) if n.partition else None
    return Compact(table, partitions)


def add_primary_key(ctx: PlannerContext, n: ast.AddPrimaryKey, stmt: Statement) -> Plan:
    """An append table rewritten as a primary-key table (the runner refuses duplicate keys)."""
    require_managed(ctx, n.table, stmt)
    table = ctx.table(n.table)
    if table.primary_keys:
        raise _error(stmt, f"table '{table.name}' already has a primary key {list(table.primary_keys)}",
                     "42000")
    snapshot = table.latest_snapshot()
    # The new table keeps the old one's options but its bucket layout: the session's default, if any.
    options = {k: v for k, v in table.options.items() if k not in ("bucket", "bucket-key")}
    options.update({k: v for k, v in table_defaults(ctx.options).items() if k == "bucket"})
    return AddPrimaryKey(table, tuple(n.columns), snapshot.id if snapshot else None, options)


def rescale(ctx: PlannerContext, n: ast.RescaleBuckets, stmt: Statement) -> Plan:
    """CLUSTERED INTO n BUCKETS: every file rewritten into the new bucket layout in one overwrite."""
    require_managed(ctx, n.table, stmt)
    if n.partition is not None:
        raise UnsupportedStatementError(
            "rescaling a single partition is not supported: dyntable keeps one bucket count per table "
            "(rescale the whole table)", line=stmt.line, column=stmt.column,
        )
    if n.buckets < 1:
        raise _error(stmt, "the bucket count must be at least 1", "22023")
    return Rescale(n.table, n.buckets, f"Table rewritten into {n.buckets} bucket(s)")


def create_table_like(ctx: PlannerContext, n: ast.CreateTableLike, stmt: Statement) -> Plan:
    require_managed(ctx, n.source, stmt)
    ident = ctx.identifier(n.name)
    if ctx.catalog.table_exists(ident) and n.if_not_exists:
        return Done(f"Table {ident.full_name} already exists")
    fmt = format_table_of(ctx, n.source)
    if fmt is not None:  # a format table like another: its format, partitions, options and comment
        options = {k: v for k, v in fmt.options.items() if k not in ("type", "file.format")}
        options.update({k: str(v) for k, v in n.options.items()})
        return CreateTable(ident, fmt.fields, fmt.partition_keys, (), options, fmt.comment,
                           f"Table {ident.full_name} created", fmt.format)
    source = ctx.table(n.source)
    return CreateTable(
        ident,
        tuple(source.schema.fields),
        tuple(source.partition_keys),
        tuple(source.primary_keys),
        {**source.options, **{k: str(v) for k, v in n.options.items()}},
        source.schema.comment,
        f"Table {ident.full_name} created",
    )


def drop_table(ctx: PlannerContext, n: ast.DropTable, stmt: Statement) -> Plan:
    if ctx.is_managed(n.name):
        ident = ctx.identifier(n.name).base()
        return DropTable(ident, f"Table {ident.full_name} dropped")
    if ctx.view_of(n.name) is not None:
        raise _error(stmt, f"{n.name} is a view, not a table: use DROP VIEW", "42809")
    if n.name.database is None and not ctx.engine_has_table(n.name.table):
        if n.if_exists:
            return Done(f"Table {ctx.current_database}.{n.name.table} does not exist; nothing dropped")
        # Spark would name its own current database ('default'), not the session's.
        require_managed(ctx, n.name, stmt)
    return ToEngine()


def rename_table(ctx: PlannerContext, n: ast.RenameTable, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    target = n.new_name
    if target.database is None:  # RENAME TO keeps the database unless it names another
        target = TableName(None, n.table.database, target.table)
    new = ctx.identifier(target)
    return RenameTable(ctx.identifier(n.table), new, f"Table renamed to {new.full_name}")


# -- ALTER TABLE ----------------------------------------------------------------------------------
def _alter(ctx: PlannerContext, name: TableName, stmt: Statement, changes: list[Any], message: str) -> Plan:
    require_managed(ctx, name, stmt)
    return AlterTable(ctx.identifier(name), tuple(changes), message)


def set_options(ctx: PlannerContext, n: ast.SetTableOptions, stmt: Statement) -> Plan:
    changes: list[SchemaChange] = [
        UpdateComment(str(v)) if k == COMMENT_PROPERTY else SetOption(k, str(v)) for k, v in n.options.items()
    ]
    return _alter(ctx, n.table, stmt, changes, "Table options set")


def reset_options(ctx: PlannerContext, n: ast.ResetTableOptions, stmt: Statement) -> Plan:
    changes: list[SchemaChange] = [
        UpdateComment(None) if k == COMMENT_PROPERTY else RemoveOption(k) for k in n.keys
    ]
    return _alter(ctx, n.table, stmt, changes, "Table options reset")


def _shown(column: ast.ColumnPath) -> str:
    return column if isinstance(column, str) else ".".join(column)


def add_columns(ctx: PlannerContext, n: ast.AddColumns, stmt: Statement) -> Plan:
    changes = []
    for added in n.columns:
        c = added.column
        if c.default is not None:  # refused before anything changes, as Paimon refuses it
            raise UnsupportedStatementError(
                f"Unsupported table change: Cannot add column [{_shown((*added.parents, c.name))}] with "
                f"default value {c.default.text}. Add the column without DEFAULT (existing rows read NULL) "
                "and write the value with UPDATE if rows need it",
                line=stmt.line, column=stmt.column,
            )
        dtype = column_type(c.type.text, ctx.engine_setting(TIMESTAMP_TYPE_SETTING))
        position: Any = "first" if added.first else (("after", added.after) if added.after else None)
        name: ColumnName = (*added.parents, c.name) if added.parents else c.name
        changes.append(AddColumn(name, dtype if c.nullable else dtype.copy(False), c.comment, position))
    return _alter(ctx, n.table, stmt, changes, f"Added {len(changes)} column(s)")


def _top_level_type(ctx: PlannerContext, name: TableName, column: ast.ColumnPath) -> DataType | None:
    """A top-level column's type (None for a nested path or an unknown name: the schema change
    itself reports those)."""
    if not isinstance(column, str) or not ctx.is_managed(name):
        return None
    found = [f.type for f in ctx.table(name).schema.fields if f.name.lower() == column.lower()]
    return found[0] if found else None


def _exists(fields: Any, column: ast.ColumnPath) -> bool:
    """Whether ``column`` (a name or a nested path) names a field, for DROP ... IF EXISTS."""
    t: Any = None
    for name in (column,) if isinstance(column, str) else column:
        step = name.lower()
        if t is not None and step in ("element", "value") and getattr(t, step) is not None:
            t = getattr(t, step)
            continue
        match = [f for f in (fields if t is None else t.fields) if f.name.lower() == step]
        if not match:
            return False
        t = match[0].type
    return True


def drop_columns(ctx: PlannerContext, n: ast.DropColumns, stmt: Statement) -> Plan:
    require_managed(ctx, n.table, stmt)
    fields = ctx.table(n.table).schema.fields
    cols = [c for c in n.columns if not n.if_exists or _exists(fields, c)]
    return _alter(ctx, n.table, stmt, [DropColumn(c) for c in cols], f"Dropped {len(cols)} column(s)")


def rename_column(ctx: PlannerContext, n: ast.RenameColumn, stmt: Statement) -> Plan:
    return _alter(
        ctx, n.table, stmt, [RenameColumn(n.old, n.new)], f"Renamed column {_shown(n.old)} to {n.new}"
    )


def alter_column(ctx: PlannerContext, n: ast.AlterColumn, stmt: Statement) -> Plan:
    if n.nullable is not None:
        raise UnsupportedStatementError(
            "ALTER COLUMN supports TYPE, COMMENT, SET/DROP DEFAULT, FIRST and AFTER; nullability changes "
            "are not supported",
            line=stmt.line, column=stmt.column,
        )
    changes: list[SchemaChange] = []
    if n.type is not None:
        new_type = column_type(n.type.text, ctx.engine_setting(TIMESTAMP_TYPE_SETTING))
        changes.append(UpdateColumnType(n.column, new_type))
    if n.comment is not None:
        changes.append(UpdateColumnComment(n.column, n.comment))
    if n.default is not None or n.drop_default:
        stored = None
        if n.default is not None:
            column_now = new_type if n.type is not None else _top_level_type(ctx, n.table, n.column)
            stored = stored_default(n.default.text, column_now, ctx.engine_setting(ZONE_SETTING))
        changes.append(UpdateColumnDefault(n.column, stored))
    if n.first:
        changes.append(MoveColumn(n.column, "first"))
    elif n.after:
        changes.append(MoveColumn(n.column, ("after", n.after)))
    return _alter(ctx, n.table, stmt, changes, f"Altered column {_shown(n.column)}")


def drop_partitions(ctx: PlannerContext, n: ast.DropPartitions, stmt: Statement) -> Plan:
    """ALTER TABLE t DROP [IF EXISTS] PARTITION (...)[, PARTITION (...)]: one commit for all."""
    require_managed(ctx, n.table, stmt)
    table = ctx.table(n.table)
    specs = [coerce_spec(table.schema, p.values()) for p in n.partitions]
    keys = list(table.partition_keys)
    for spec in specs:  # Paimon: a partial spec must name a leading run of the partition columns
        # (a name that is no partition column at all is the engine's error, SQLSTATE 22023)
        if set(spec) <= set(keys) and sorted(spec) != sorted(keys[: len(spec)]):
            raise _error(
                stmt,
                f"partition spec {dict(spec)} is not a prefix of the partition columns {keys} of "
                f"'{table.name}'; give the leading columns ({', '.join(keys[: len(spec)])}) or all of them",
                "42000",
            )
    ident = ctx.identifier(n.table)
    return DropPartitions(
        Identifier(ident.database, ident.table, ident.branch), tuple(specs), n.if_exists,
        f"Dropped {len(specs)} partition spec(s)",
    )


PLANNERS: dict[type, Any] = {
    ast.CreateDatabase: create_database,
    ast.DropDatabase: drop_database,
    ast.UseDatabase: use_database,
    ast.CreateTable: create_table,
    ast.CompactTable: compact,
    ast.AddPrimaryKey: add_primary_key,
    ast.RescaleBuckets: rescale,
    ast.CreateTableLike: create_table_like,
    ast.DropTable: drop_table,
    ast.RenameTable: rename_table,
    ast.SetTableOptions: set_options,
    ast.ResetTableOptions: reset_options,
    ast.AddColumns: add_columns,
    ast.DropColumns: drop_columns,
    ast.RenameColumn: rename_column,
    ast.AlterColumn: alter_column,
    ast.DropPartitions: drop_partitions,
}
