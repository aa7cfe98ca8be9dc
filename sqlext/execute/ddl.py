"""Executors of DDL: databases, CREATE/DROP/ALTER TABLE and their variants.

CREATE TABLE accepts the Flink style of the managed-table design (``PRIMARY KEY … NOT
ENFORCED``, ``PARTITIONED BY``, ``WITH (...)``, computed columns, ``WATERMARK FOR``) and the Spark
style (``USING dyntable``, ``TBLPROPERTIES``). A ``USING`` another format goes to Spark unchanged.
Computed columns are materialised: their expression is stored as the table option
``dyntable.computed-column.<name>`` and evaluated on every INSERT; the watermark expression is
kept as ``dyntable.watermark.<column>`` (metadata for SHOW CREATE TABLE and streaming readers).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine import OverwriteSpec, coerce_spec
from engine.errors import NoSuchPartitionError
from engine.schema_changes import (
    AddColumn,
    DropColumn,
    MoveColumn,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnType,
    UpdateComment,
)
from engine.types import parse_sql_type
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.common import (
    COMPUTED_PREFIX,
    WATERMARK_PREFIX,
    done,
    paimon_to_spark_ddl,
    require_managed,
    spark_to_paimon,
    struct_fields,
)
from sqlext.execute.results import StatementResult
from sqlext.execute.views import list_views, view_of
from sqlext.parse import ast
from sqlext.parse.splitter import Statement
from sqlext.source.requests import ReadRequest, ReadVersion

if TYPE_CHECKING:
    from sqlext.parse.names import TableName
    from sqlext.session import SqlSession

MANAGED_FORMATS = ("dyntable", "paimon")


# -- databases ----------------------------------------------------------------------------------
def create_database(s: SqlSession, n: ast.CreateDatabase, stmt: Statement) -> StatementResult:
    if s.catalog.database_exists(n.name):
        if n.if_not_exists:
            return done(stmt, f"Database {n.name} already exists; nothing created")
        raise SqlAnalysisError(
            f"database '{n.name}' already exists: use CREATE DATABASE IF NOT EXISTS {n.name}, or pick"
            " another name",
            line=stmt.line, column=stmt.column, sqlstate="42710",
        )
    s.catalog.create_database(n.name, ignore_if_exists=n.if_not_exists)
    return done(stmt, f"Database {n.name} created")


def drop_database(s: SqlSession, n: ast.DropDatabase, stmt: Statement) -> StatementResult:
    if n.if_exists and not s.catalog.database_exists(n.name):
        return done(stmt, f"Database {n.name} does not exist; nothing dropped")
    if not n.cascade and s.catalog.database_exists(n.name) and list_views(s, n.name):
        names = ", ".join(v.name for v in list_views(s, n.name))
        raise SqlAnalysisError(
            f"database '{n.name}' is not empty: it has views ({names}); drop them first or use CASCADE",
            line=stmt.line, column=stmt.column, sqlstate="2BP01",
        )
    if n.name == s.current_database:
        s.current_database = "default"
    s.catalog.drop_database(n.name, ignore_if_not_exists=n.if_exists, cascade=n.cascade)
    return done(stmt, f"Database {n.name} dropped")


def use_database(s: SqlSession, n: ast.UseDatabase, stmt: Statement) -> StatementResult:
    if not s.catalog.database_exists(n.name):
        raise SqlAnalysisError(f"database '{n.name}' does not exist", line=stmt.line, column=stmt.column,
                               sqlstate="42P01")
    s.current_database = n.name
    return done(stmt, f"Using database {n.name}")


# -- CREATE TABLE ---------------------------------------------------------------------------------
def _computed_type(s: SqlSession, physical: list[tuple[str, Any, str | None]], expression: str) -> Any:
    """Derive a computed column's type by letting Spark type the expression over typed NULLs."""
    cols = ", ".join(f"CAST(NULL AS {paimon_to_spark_ddl(t)}) AS `{name}`" for name, t, _ in physical)
    df = s.spark.sql(f"SELECT {expression} AS c FROM (SELECT {cols})")
    return spark_to_paimon(df.schema.fields[0].dataType)


def create_table(s: SqlSession, n: ast.CreateTable, stmt: Statement) -> StatementResult:
    if n.using and n.using.lower() not in MANAGED_FORMATS:
        return _to_spark(s, stmt)
    ident = s.identifier(n.name)
    if s.catalog.table_exists(ident):
        if n.if_not_exists:
            return done(stmt, f"Table {ident.full_name} already exists")
        raise SqlAnalysisError(
            f"table '{ident.full_name}' already exists", line=stmt.line, column=stmt.column, sqlstate="42710"
        )
    if view_of(s, replace(n.name, database=ident.database)) is not None:
        raise SqlAnalysisError(
            f"'{ident.full_name}' is a view: a table cannot have its name (DROP VIEW first, or pick"
            " another name)",
            line=stmt.line, column=stmt.column, sqlstate="42710",
        )
    options = {**s.table_defaults(), **{k: str(v) for k, v in n.options.items()}}
    comment = options.pop(COMMENT_PROPERTY, None)  # TBLPROPERTIES ('comment' = ...), as Paimon's SparkCatalog
    comment = n.comment if n.comment is not None else comment
    if n.buckets is not None:
        options["bucket"] = str(n.buckets)
    if n.bucket_key:
        options["bucket-key"] = ",".join(n.bucket_key)
    fields: list[tuple[str, Any, str | None]] = []
    computed: list[ast.ComputedColumn] = []
    for col in n.columns:
        if isinstance(col, ast.ComputedColumn):
            computed.append(col)
            continue
        dtype = parse_sql_type(col.type.text)
        fields.append((col.name, dtype if col.nullable else dtype.copy(False), col.comment))
        if col.default is not None:  # stored as Paimon's fields.<c>.default-value (see insert.py)
            from sqlext.execute.insert import default_value_option

            value = default_value_option(s, col.name, dtype, col.default.text, stmt)
            if value is not None:
                options[f"fields.{col.name}.default-value"] = value
    query_df = None
    if n.query is not None:
        query_df = s.frame(n.query.text)
        if not fields:
            fields = [(name, t, None) for name, t in struct_fields(query_df.schema)]
    for col in computed:
        fields.append((col.name, _computed_type(s, fields, col.expression.text), col.comment))
        options[COMPUTED_PREFIX + col.name] = col.expression.text
    if n.watermark is not None:
        options[WATERMARK_PREFIX + n.watermark.column] = n.watermark.expression.text
    if not fields:
        raise SqlAnalysisError("CREATE TABLE needs at least one column", line=stmt.line, column=stmt.column,
                               sqlstate="42601")
    table = s.catalog.create_table(
        ident, _fields(fields), partition_keys=n.partitioned_by, primary_keys=n.primary_key,
        options=options, comment=comment,
    )
    if query_df is not None:
        from sqlext.execute.insert import write_frame

        try:
            write_frame(s, table, query_df, list(table.schema.field_names), overwrite=None)
        except BaseException:
            s.catalog.drop_table(ident, ignore_if_not_exists=True)  # CREATE ... AS SELECT is all or nothing
            raise
    return done(stmt, f"Table {ident.full_name} created")


def _fields(fields: list[tuple[str, Any, str | None]]) -> list[Any]:
    from engine.types import DataField

    return [DataField(i, name, t, comment) for i, (name, t, comment) in enumerate(fields)]


def create_table_like(s: SqlSession, n: ast.CreateTableLike, stmt: Statement) -> StatementResult:
    require_managed(s, n.source, stmt)
    source = s.table(n.source)
    ident = s.identifier(n.name)
    if s.catalog.table_exists(ident) and n.if_not_exists:
        return done(stmt, f"Table {ident.full_name} already exists")
    options = {**source.options, **{k: str(v) for k, v in n.options.items()}}
    s.catalog.create_table(
        ident,
        list(source.schema.fields),
        source.partition_keys,
        source.primary_keys,
        options,
        source.schema.comment,
    )
    return done(stmt, f"Table {ident.full_name} created")


def drop_table(s: SqlSession, n: ast.DropTable, stmt: Statement) -> StatementResult:
    if not s.is_managed(n.name) and view_of(s, n.name) is not None:
        raise SqlAnalysisError(
            f"{n.name} is a view, not a table: use DROP VIEW", line=stmt.line, column=stmt.column,
            sqlstate="42809",
        )
    if not s.is_managed(n.name):
        if n.name.database is None and not _spark_has(s, n.name.table):
            if n.if_exists:
                return done(
                    stmt, f"Table {s.current_database}.{n.name.table} does not exist; nothing dropped"
                )
            # Spark would name its own current database ('default'), not the session's.
            require_managed(s, n.name, stmt)
        return _to_spark(s, stmt)
    s.catalog.drop_table(s.identifier(n.name).base())
    return done(stmt, f"Table {s.identifier(n.name).base().full_name} dropped")


def _spark_has(s: SqlSession, name: str) -> bool:
    try:
        return bool(s.spark.catalog.tableExists(name))
    except Exception:  # noqa: BLE001
        return False


def _to_spark(s: SqlSession, stmt: Statement) -> StatementResult:

    return StatementResult(stmt, s.spark.sql(stmt.text), None)


# -- ALTER TABLE ----------------------------------------------------------------------------------
def _alter(s: SqlSession, name: Any, stmt: Statement, changes: list[Any], message: str) -> StatementResult:
    require_managed(s, name, stmt)
    s.catalog.alter_table(s.identifier(name), changes)
    return done(stmt, message)


# The property that is the table's comment, not an option (Spark's reserved key; Paimon's schema comment).
COMMENT_PROPERTY = "comment"


def set_options(s: SqlSession, n: ast.SetTableOptions, stmt: Statement) -> StatementResult:
    changes: list[Any] = [
        UpdateComment(str(v)) if k == COMMENT_PROPERTY else SetOption(k, str(v)) for k, v in n.options.items()
    ]
    return _alter(s, n.table, stmt, changes, "Table options set")


def reset_options(s: SqlSession, n: ast.ResetTableOptions, stmt: Statement) -> StatementResult:
    changes: list[Any] = [UpdateComment(None) if k == COMMENT_PROPERTY else RemoveOption(k) for k in n.keys]
    return _alter(s, n.table, stmt, changes, "Table options reset")


def add_columns(s: SqlSession, n: ast.AddColumns, stmt: Statement) -> StatementResult:
    changes = []
    for added in n.columns:
        c = added.column
        if c.default is not None:  # refused before anything changes, as Paimon refuses it
            raise UnsupportedStatementError(
                f"Unsupported table change: Cannot add column [{c.name}] with default value "
                f"{c.default.text}. Add the column without DEFAULT (existing rows read NULL) and "
                "write the value with UPDATE if rows need it",
                line=stmt.line, column=stmt.column,
            )
        dtype = parse_sql_type(c.type.text)
        position: Any = "first" if added.first else (("after", added.after) if added.after else None)
        changes.append(AddColumn(c.name, dtype if c.nullable else dtype.copy(False), c.comment, position))
    return _alter(s, n.table, stmt, changes, f"Added {len(changes)} column(s)")


def drop_columns(s: SqlSession, n: ast.DropColumns, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    names = list(s.table(n.table).schema.field_names)
    cols = [c for c in n.columns if c in names or not n.if_exists]
    return _alter(s, n.table, stmt, [DropColumn(c) for c in cols], f"Dropped {len(cols)} column(s)")


def rename_column(s: SqlSession, n: ast.RenameColumn, stmt: Statement) -> StatementResult:
    return _alter(s, n.table, stmt, [RenameColumn(n.old, n.new)], f"Renamed column {n.old} to {n.new}")


def alter_column(s: SqlSession, n: ast.AlterColumn, stmt: Statement) -> StatementResult:
    changes: list[Any] = []
    if n.type is not None:
        changes.append(UpdateColumnType(n.column, parse_sql_type(n.type.text)))
    if n.comment is not None:
        changes.append(UpdateColumnComment(n.column, n.comment))
    if n.first:
        changes.append(MoveColumn(n.column, "first"))
    elif n.after:
        changes.append(MoveColumn(n.column, ("after", n.after)))
    if n.nullable is not None:
        raise UnsupportedStatementError(
            "ALTER COLUMN supports TYPE, COMMENT, FIRST and AFTER; nullability changes are not supported",
            line=stmt.line, column=stmt.column,
        )
    return _alter(s, n.table, stmt, changes, f"Altered column {n.column}")


def rename_table(s: SqlSession, n: ast.RenameTable, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    target = n.new_name
    if target.database is None:
        target = type(target)(None, n.table.database, target.table)
    s.catalog.rename_table(s.identifier(n.table), s.identifier(target))
    return done(stmt, f"Table renamed to {s.identifier(target).full_name}")


def drop_partitions(s: SqlSession, n: ast.DropPartitions, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    table = s.table(n.table)
    specs = [coerce_spec(table.schema, p.values()) for p in n.partitions]
    keys = list(table.partition_keys)
    for spec in specs:  # Paimon: a partial spec must name a leading run of the partition columns
        # (a name that is no partition column at all is the engine's error, SQLSTATE 22023)
        if set(spec) <= set(keys) and sorted(spec) != sorted(keys[: len(spec)]):
            raise SqlAnalysisError(
                f"partition spec {dict(spec)} is not a prefix of the partition columns {keys} of "
                f"'{table.name}'; give the leading columns ({', '.join(keys[: len(spec)])}) or all of them",
                line=stmt.line, column=stmt.column, sqlstate="42000",
            )
    # Paimon: a full spec that matches nothing fails the whole statement (nothing dropped);
    # a partial spec drops every partition it matches, possibly none.
    try:
        result = table.drop_partitions(specs, if_exists=n.if_exists)
    except NoSuchPartitionError as e:
        raise SqlAnalysisError(
            f"{e} (use DROP IF EXISTS PARTITION to skip missing partitions)",
            line=stmt.line, column=stmt.column, sqlstate="428FT",
        ) from None
    return done(
        stmt,
        f"Dropped {len(specs)} partition spec(s)" + ("" if result.snapshot_ids else " (nothing matched)"),
    )


def compact(s: SqlSession, n: ast.CompactTable, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    from sqlext.execute.compaction import compact_distributed

    table = s.table(n.table)
    partitions = [coerce_spec(table.schema, n.partition.values())] if n.partition else None
    result = compact_distributed(s.spark, table, full=True, partitions=partitions)
    return done(stmt, "Compaction committed" if result.snapshot_ids else "Nothing to compact")


def add_primary_key(s: SqlSession, n: ast.AddPrimaryKey, stmt: Statement) -> StatementResult:
    """Rewrite an append table as a primary-key table (fails, changing nothing, on duplicate keys)."""
    require_managed(s, n.table, stmt)
    table = s.table(n.table)
    if table.primary_keys:
        raise SqlAnalysisError(f"table '{table.name}' already has a primary key {list(table.primary_keys)}",
                               line=stmt.line, column=stmt.column, sqlstate="42000")
    snapshot = table.latest_snapshot()

    pinned = ReadRequest(
        s.target(table.name), travel=ReadVersion(snapshot_id=snapshot.id) if snapshot else None
    )

    def fresh() -> Any:  # a new relation per query: never reuse one across queries
        return s.read(pinned)

    dup = fresh().groupBy(*n.columns).count().where("count > 1").limit(1).collect()
    if dup:
        raise SqlAnalysisError(
            f"cannot add primary key ({', '.join(n.columns)}): duplicate key {tuple(dup[0])[:-1]}",
            line=stmt.line,
            column=stmt.column,
            sqlstate="23505",
        )
    nulls = fresh().where(" OR ".join(f"`{c}` IS NULL" for c in n.columns)).count()
    if nulls:
        raise SqlAnalysisError("cannot add a primary key over columns holding NULL values", line=stmt.line,
                               column=stmt.column, sqlstate="23502")
    # A new table with the key is filled by a Spark job, then swapped in place of the old one.
    from sqlext.execute.insert import write_frame

    tmp = s.identifier(n.table).base()
    staging = type(tmp)(tmp.database, f"{tmp.table}__pk_rewrite_{s.next_id()}")
    options = {k: v for k, v in table.options.items() if k not in ("bucket", "bucket-key")}
    options.update(
        {k[len("table-storage.") :]: v for k, v in s.options.items() if k == "table-storage.bucket"}
    )
    new = s.catalog.create_table(staging, list(table.schema.fields), table.partition_keys, n.columns, options,
                                 table.schema.comment)
    try:
        count = write_frame(s, new, fresh(), list(new.schema.field_names), overwrite=None)
    except BaseException:
        s.catalog.drop_table(staging, ignore_if_not_exists=True)
        raise
    s.catalog.drop_table(tmp)
    s.catalog.rename_table(staging, tmp)
    return done(stmt, f"Primary key ({', '.join(n.columns)}) added; {count} row(s) rewritten")


def rescale(s: SqlSession, n: ast.RescaleBuckets, stmt: Statement) -> StatementResult:
    """CLUSTERED INTO n BUCKETS: rewrite every file into the new bucket layout in one overwrite."""
    require_managed(s, n.table, stmt)
    if n.partition is not None:
        raise UnsupportedStatementError(
            "rescaling a single partition is not supported: dyntable keeps one bucket count per table "
            "(rescale the whole table)", line=stmt.line, column=stmt.column,
        )
    if n.buckets < 1:
        raise SqlAnalysisError(
            "the bucket count must be at least 1", line=stmt.line, column=stmt.column, sqlstate="22023"
        )
    rescale_table(s, n.table, n.buckets)
    return done(stmt, f"Table rewritten into {n.buckets} bucket(s)")


def rescale_table(s: SqlSession, name: TableName, buckets: int) -> None:
    """Rewrite a managed table into ``buckets`` buckets (also CALL sys.rescale); on failure the old
    layout and files stay."""
    from sqlext.execute.insert import write_frame

    table = s.table(name)
    # Read everything (pinned to the current snapshot), switch the layout, rewrite in one overwrite.
    latest = table.latest_snapshot()
    pinned = ReadRequest(s.target(table.name), travel=ReadVersion(snapshot_id=latest.id) if latest else None)
    frame = s.read(pinned).localCheckpoint()

    def set_buckets(value: str | None) -> None:
        change = SetOption("bucket", value) if value is not None else RemoveOption("bucket")
        s.catalog.alter_table(table.identifier, [change], allow_immutable={"bucket"})

    old_buckets = table.options.get("bucket")
    set_buckets(str(buckets))
    try:
        table = s.table(name)
        write_frame(s, table, frame, list(table.schema.field_names), overwrite=OverwriteSpec())
    except BaseException:
        set_buckets(old_buckets)  # the rewrite failed: the old files keep their old layout
        raise
