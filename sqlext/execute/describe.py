"""Planners of DESCRIBE [TABLE] [EXTENDED] t [PARTITION (...)] [col], SHOW CREATE TABLE, SHOW PARTITIONS.

Everything here reads metadata only (schema, latest snapshot, planned files): no Spark job runs.
Invariants:
* DESCRIBE answers ``col_name, data_type, comment`` rows like Spark: the columns with the type
  Spark reads them as, in Spark's lower-case text (``bigint``, ``decimal(10,2)``,
  ``timestamp_ntz``, ``struct<a:int>``; nullability shows in SHOW CREATE TABLE), which is what
  Hive clients parse (PyHive's SQLAlchemy dialect reflects column types from it), then
  ``# Partition Information``, then (EXTENDED) ``# Detailed Table Information`` key/value rows,
  or with a PARTITION ``# Detailed Partition Information``, then (EXTENDED) ``# Column Default
  Values`` when a column has a default;
* SHOW CREATE TABLE prints a Flink/dyntable-style statement that creates an equal schema when run
  under another name (computed columns and the watermark come back from their
  ``dyntable.computed-column.*`` / ``dyntable.watermark.*`` options, which are not repeated in WITH);
* partitions print the way Spark prints them: ``k1=v1/k2=v2`` with ISO dates and Hive escaping.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from engine import Table
from engine.options import format_duration
from engine.types import type_to_sql
from sqlext.errors import SqlAnalysisError
from sqlext.execute import format_describe
from sqlext.execute.format_describe import format_table_of
from sqlext.execute.partitions import (
    checked_spec,
    live_partitions,
    matches,
    partition_details,
    partition_text,
)
from sqlext.execute.planning import Plan, PlannerContext, Rows, ToEngine
from sqlext.execute.table_options import INTERNAL_OPTION_PREFIXES, computed_columns, watermarks
from sqlext.parse import ast
from sqlext.parse.names import TableName, quote_name, quoted, spark_quote_name, sql_string
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition

CATALOG_NAME = "dyntable"
_DESCRIBE_SCHEMA = pa.schema(
    [("col_name", pa.string()), ("data_type", pa.string()), ("comment", pa.string())]
)


def show_partitions(ctx: PlannerContext, n: ast.ShowPartitions, stmt: Statement) -> Plan:
    """SHOW PARTITIONS t [PARTITION (...)]: one ``partition`` row per live partition."""
    if not ctx.is_managed(n.table):
        return ToEngine()
    fmt = format_table_of(ctx, n.table)
    if fmt is not None:
        return format_describe.show_partitions(ctx, fmt, n, stmt)
    table = ctx.table(n.table)
    keys = table.partition_keys
    if not keys:
        raise SqlAnalysisError(
            f"SHOW PARTITIONS needs a partitioned table; '{table.name}' is not partitioned",
            line=stmt.line,
            column=stmt.column,
            sqlstate="42000",
        )
    spec = checked_spec(table, n.partition, stmt) if n.partition else {}
    types = [table.schema.field(k).type for k in keys]
    # Spark's (and so Paimon's) SHOW PARTITIONS prints a NULL value as ``null``, not as the
    # table's partition.default-name (which is only the directory name).
    texts = [
        partition_text(keys, [p[k] for k in keys], types, "null")
        for p in live_partitions(table)
        if matches(p, spec)
    ]
    return Rows(pa.table({"partition": pa.array(texts, pa.string())}))


# -- DESCRIBE ---------------------------------------------------------------------------------------
def describe_table(ctx: PlannerContext, n: ast.DescribeTable, stmt: Statement) -> Plan:
    """DESCRIBE [TABLE] [EXTENDED] t [PARTITION (...)] [col] of a table or a dyntable view."""
    view = ctx.view_of(n.table) if n.partition is None else None
    if view is not None:
        return describe_view(ctx, view, n, stmt)
    if not ctx.is_managed(n.table):
        return ToEngine()
    if n.table.system_table is not None or _is_global_system_table(ctx, n.table):
        return _describe_frame_columns(ctx, n, stmt)
    fmt = format_table_of(ctx, n.table)
    if fmt is not None:
        return format_describe.describe(ctx, fmt, n)
    table = ctx.table(n.table)
    schema = table.schema
    if n.column is not None:
        f = schema.field(n.column)
        return Rows(
            pa.table(
                {
                    "info_name": ["col_name", "data_type", "comment"],
                    "info_value": pa.array([f.name, ctx.type_text(f.type), f.description], pa.string()),
                }
            ),
        )
    out: list[tuple[str, str, str | None]] = [
        (f.name, ctx.type_text(f.type), f.description) for f in schema.fields
    ]
    if table.partition_keys:
        out.append(("# Partition Information", "", ""))
        out.append(("# col_name", "data_type", "comment"))
        out.extend(
            (f.name, ctx.type_text(f.type), f.description)
            for f in schema.fields
            if f.name in table.partition_keys
        )
    if n.partition is not None:
        spec = checked_spec(table, n.partition, stmt, full=True)
        details = partition_details(table, spec, stmt)
        if n.extended or n.formatted:
            out.append(("", "", ""))
            out.append(("# Detailed Partition Information", "", ""))
            out.extend((k, v, "") for k, v in details)
    elif n.extended or n.formatted:
        out.append(("", "", ""))
        out.append(("# Detailed Table Information", "", ""))
        out.extend((k, v, "") for k, v in table_details(table))
    if n.extended or n.formatted:
        out.extend(_default_values(ctx, schema.fields))
    return Rows(
        pa.Table.from_pylist(
            [dict(zip(_DESCRIBE_SCHEMA.names, r, strict=True)) for r in out], schema=_DESCRIBE_SCHEMA
        ),
    )


def _default_values(ctx: PlannerContext, fields: Any) -> list[tuple[str, str, str | None]]:
    """Spark's ``# Column Default Values`` section of DESCRIBE EXTENDED: each column's default as
    stored (the ``defaultValue`` text, e.g. ``'Bob'``); nothing when no column has one."""
    defaults = [
        (f.name, ctx.type_text(f.type), f.default_value) for f in fields if f.default_value is not None
    ]
    return [("", "", ""), ("# Column Default Values", "", ""), *defaults] if defaults else []


def _is_global_system_table(ctx: PlannerContext, name: TableName) -> bool:
    """``sys.tables``, ``sys.partitions``, ...: Paimon's global system tables (a managed database
    named ``sys`` keeps its own tables of those names)."""
    from engine import GLOBAL_TABLES, SYSTEM_DATABASE

    if (name.database or "").lower() != SYSTEM_DATABASE or name.table.lower() not in GLOBAL_TABLES:
        return False
    return not ctx.catalog.table_exists(ctx.identifier(name))


def _describe_frame_columns(ctx: PlannerContext, n: ast.DescribeTable, stmt: Statement) -> Plan:
    """A system table: its columns as Spark sees them."""
    columns = ctx.frame(f"SELECT * FROM {n.table}", stmt).columns
    fields = [c for c in columns if n.column is None or c.name.lower() == n.column.lower()]
    return Rows(
        pa.table(
            {
                "col_name": pa.array([c.name for c in fields], pa.string()),
                "data_type": pa.array([c.type_text for c in fields], pa.string()),
                "comment": pa.array([None] * len(fields), pa.string()),
            }
        )
    )


def table_details(table: Table) -> list[tuple[str, str]]:
    """The ``# Detailed Table Information`` key/value pairs of DESCRIBE TABLE EXTENDED."""
    schema = table.schema
    opts = table.core_options
    ident = table.identifier
    name = f"{CATALOG_NAME}.{ident.database}.{ident.table}"
    if ident.branch and ident.branch != "main":
        name += f"$branch_{ident.branch}"
    latest = table.latest_snapshot()
    bucket_key = ",".join(schema.logical_bucket_keys) if opts.bucket > 0 else ""
    items: list[tuple[str, str]] = [
        ("Name", name),
        ("Type", "MANAGED"),
        ("Provider", CATALOG_NAME),
    ]
    if schema.comment is not None:  # an empty or blank comment is still a comment (Paimon, Spark)
        items.append(("Comment", schema.comment))
    items += [
        ("file.path", table.path),
        ("file.format", opts.file_format),
        ("bucket", str(opts.bucket)),
        ("bucket-key", bucket_key),
        ("change-tracking", "true" if opts.change_tracking else "false"),
        ("primary-key", ",".join(schema.primary_keys)),
        ("partition", ",".join(schema.partition_keys)),
        ("schema-id", str(schema.id)),
        ("latest-snapshot-id", "" if latest is None else str(latest.id)),
        ("record-count", "0" if latest is None else str(latest.total_record_count)),
        ("merge-engine", opts.merge_engine if schema.primary_keys else ""),
        ("changelog-producer", opts.changelog_producer),
        # The design's log system is Kafka; dyntable keeps changes in the table's own snapshots
        # and changelog files, so there is no external log and changes live as long as those.
        ("log.system", "none"),
        ("log.retention", format_duration(opts.changelog_time_retained)),
        ("options", "[" + ", ".join(f"{k}={v}" for k, v in sorted(table.options.items())) + "]"),
    ]
    return items


# -- SHOW CREATE TABLE ------------------------------------------------------------------------------
def create_table_statement(table: Table) -> str:
    """A CREATE TABLE statement that recreates ``table``'s schema (columns, keys, options)."""
    schema = table.schema
    options = dict(schema.options)
    computed = computed_columns(options)
    marks = watermarks(options)
    lines = []
    for f in schema.fields:
        if f.name in computed:
            line = f"  {quoted(f.name)} AS {computed[f.name]}"
        else:
            line = f"  {quoted(f.name)} {type_to_sql(f.type)}"
        if f.default_value is not None:
            line += f" DEFAULT {f.default_value}"
        if f.description is not None:
            line += f" COMMENT {sql_string(f.description)}"
        lines.append(line)
    for column, expression in sorted(marks.items()):
        lines.append(f"  WATERMARK FOR {quoted(column)} AS {expression}")
    if schema.primary_keys:
        lines.append(f"  PRIMARY KEY ({', '.join(quoted(k) for k in schema.primary_keys)}) NOT ENFORCED")
    ident = table.identifier
    name = ".".join(quote_name(p) for p in (ident.database, ident.table))
    text = f"CREATE TABLE {name} (\n" + ",\n".join(lines) + "\n)"
    if schema.comment is not None:
        text += f"\nCOMMENT {sql_string(schema.comment)}"
    if schema.partition_keys:
        text += f"\nPARTITIONED BY ({', '.join(quoted(k) for k in schema.partition_keys)})"
    visible = sorted((k, v) for k, v in options.items() if not k.startswith(INTERNAL_OPTION_PREFIXES))
    if visible:
        text += (
            "\nWITH (\n" + ",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in visible) + "\n)"
        )
    return text


def show_create_table(ctx: PlannerContext, n: ast.ShowCreateTable, stmt: Statement) -> Plan:
    """SHOW CREATE TABLE t: one ``createtab_stmt`` row (a dyntable view's CREATE VIEW too)."""
    view = ctx.view_of(n.table)
    if view is not None:
        return show_create_view(view)
    if not ctx.is_managed(n.table):
        return ToEngine()
    if n.table.system_table is not None:
        raise SqlAnalysisError(
            f"'{n.table}' is a system table; SHOW CREATE TABLE needs a table",
            line=stmt.line,
            column=stmt.column,
            sqlstate="42809",
        )
    fmt = format_table_of(ctx, n.table)
    if fmt is not None:
        return format_describe.show_create(fmt)
    return Rows(pa.table({"createtab_stmt": [create_table_statement(ctx.table(n.table))]}))


# -- views ----------------------------------------------------------------------------------------
def describe_view(ctx: PlannerContext, view: ViewDefinition, n: ast.DescribeTable, stmt: Statement) -> Plan:
    """DESCRIBE [EXTENDED] of a dyntable view: its columns as its query returns them, then (EXTENDED)
    Spark's ``# Detailed Table Information`` of a view."""
    columns = ctx.frame(f"SELECT * FROM {view_reference(view)}").columns
    comments = dict(zip(view.columns, view.column_comments, strict=False))
    fields = [c for c in columns if n.column is None or c.name.lower() == n.column.lower()]
    if n.column is not None and not fields:
        raise SqlAnalysisError(
            f"view {view.label} has no column {n.column!r}",
            line=n.table.line or stmt.line, column=n.table.column or stmt.column, sqlstate="42703",
        )
    out: list[tuple[str, str, str | None]] = [(c.name, c.type_text, comments.get(c.name)) for c in fields]
    if (n.extended or n.formatted) and n.column is None:
        out += [("", "", ""), ("# Detailed Table Information", "", "")]
        details = [
            ("Catalog", CATALOG_NAME),
            ("Database", view.database or ""),
            ("Table", view.name),
            ("Created Time", _created(view)),
            ("Type", "TEMPORARY VIEW" if view.temporary else "VIEW"),
            ("Comment", view.comment or ""),
            ("View Text", view.sql),
            ("View Current Database", view.current_database),
            ("View Query Output Columns", "[" + ", ".join(view.query_columns) + "]"),
        ]
        if view.properties:
            pairs = ", ".join(f"{k}={v}" for k, v in sorted(view.properties.items()))
            details.append(("Table Properties", f"[{pairs}]"))
        out += [(k, v, "") for k, v in details if v or k == "Database"]
    return Rows(
        pa.Table.from_pylist(
            [dict(zip(_DESCRIBE_SCHEMA.names, r, strict=True)) for r in out], schema=_DESCRIBE_SCHEMA
        )
    )


def _created(view: ViewDefinition) -> str:
    """When the view was created, as Java's ``Date.toString`` prints it (Spark's ``Created Time``), in UTC."""
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(view.created_millis // 1000))


def show_create_view(view: ViewDefinition) -> Plan:
    """SHOW CREATE TABLE of a dyntable view: the CREATE [TEMPORARY] VIEW that recreates it."""
    head = "CREATE TEMPORARY VIEW" if view.temporary else "CREATE VIEW"
    columns = []
    for i, c in enumerate(view.columns):
        comment = view.column_comments[i] if i < len(view.column_comments) else None
        columns.append(spark_quote_name(c) + (f" COMMENT {sql_string(comment)}" if comment else ""))
    text = f"{head} {view_reference(view)} (\n  " + ",\n  ".join(columns) + ")\n"
    if view.comment:
        text += f"COMMENT {sql_string(view.comment)}\n"
    if view.properties:
        props = ",\n  ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in sorted(view.properties.items()))
        text += f"TBLPROPERTIES (\n  {props})\n"
    text += f"AS {view.sql}\n"
    return Rows(pa.table({"createtab_stmt": pa.array([text], pa.string())}))


def view_reference(view: ViewDefinition) -> str:
    """How SQL names the view: ``db.v`` (permanent) or ``v`` (temporary), quoted as Spark needs."""
    return ".".join(spark_quote_name(p) for p in ([view.database] if view.database else []) + [view.name])


def table_properties(table: Table) -> dict[str, str]:
    """The properties Paimon's Spark table reports: the options plus ``primary-key``, less the
    internal computed-column and watermark options."""
    props = {k: v for k, v in table.options.items() if not k.startswith(INTERNAL_OPTION_PREFIXES)}
    if table.primary_keys:
        props["primary-key"] = ",".join(table.primary_keys)
    return props


def show_tblproperties(ctx: PlannerContext, n: ast.ShowTableProperties, stmt: Statement) -> Plan:
    """SHOW TBLPROPERTIES t [('key')]: ``key``/``value`` rows sorted by key.

    The properties are those Paimon's Spark table reports: the options plus ``primary-key``,
    less Spark's reserved keys (the comment is shown by DESCRIBE). A key the table lacks gives
    one row saying so, as Spark does.
    """
    if not ctx.is_managed(n.table):
        return ToEngine()
    fmt = format_table_of(ctx, n.table)
    if fmt is not None:
        return format_describe.show_tblproperties(fmt, n)
    table = ctx.table(n.table)
    props = table_properties(table)
    if n.key is not None:
        value = props.get(n.key, f"Table {table.name} does not have property: {n.key}")
        pairs = [(n.key, value)]
    else:
        pairs = sorted(props.items())
    return Rows(pa.table({"key": [k for k, _ in pairs], "value": [v for _, v in pairs]},
                                  schema=pa.schema([("key", pa.string()), ("value", pa.string())])))


PLANNERS: dict[type, Any] = {
    ast.DescribeTable: describe_table,
    ast.ShowCreateTable: show_create_table,
    ast.ShowTableProperties: show_tblproperties,
    ast.ShowPartitions: show_partitions,
}
