"""The planner of SHOW TABLE EXTENDED [IN|FROM db] LIKE 'pattern' [PARTITION (k = v, ...)].

Answers Spark's four columns ``namespace, tableName, isTemporary, information`` the way Spark's
session catalog does (``ShowTablesCommand``), because clients parse the ``information`` text:
dbt-spark lists a schema's relations with ``show table extended in <db> like '*'`` and reads
``Type: VIEW``, ``Provider: …`` and the `` |-- col: type (nullable = …)`` lines of the schema
from it (its catalog for ``dbt docs generate`` comes from those lines alone).

Invariants:
* a row per managed table and dyntable view of the database whose name matches, then a row per
  temporary view (the session's and Spark's), each group sorted by name, as Spark lists them;
* ``information`` is ``Key: value`` lines in Spark's order (Catalog, Database, Table, …, Type,
  Provider, Comment, view lines, Table Properties, Location, Partition Provider, Partition
  Columns, Schema) ending with the schema's tree and a blank line, exactly like Spark's;
* the pattern is Spark's: ``|`` separates alternatives, ``*`` matches any run of characters,
  the rest is a case-insensitive regular expression matched against the whole name; an
  alternative that is no valid expression matches nothing;
* with a PARTITION clause the pattern names one table and the row describes that partition
  (values, location, file count and size, row count); the partition must exist;
* a database dyntable does not know goes to Spark unchanged (its own tables, and its
  ``SCHEMA_NOT_FOUND`` error, which dbt-spark reads as an empty schema).

Metadata only: the tables' schemas and options, the views' bound queries; no Spark job runs. The
answer is ``Rows``; what only the SQL engine knows (how it prints a schema tree, its own temporary
views and their descriptions) the planner asks of its context.
"""

from __future__ import annotations

import re
import time

import pyarrow as pa

from engine import FormatTable, Table, partition_value_string
from engine.arrow_types import to_arrow_field
from sqlext.errors import SqlAnalysisError
from sqlext.execute import format_describe
from sqlext.execute.describe import CATALOG_NAME, table_properties
from sqlext.execute.format_describe import format_table_of
from sqlext.execute.partitions import checked_spec, partition_details
from sqlext.execute.planning import Plan, Planner, PlannerContext, Rows, ToEngine
from sqlext.parse import ast
from sqlext.parse.names import TableName, quoted
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition

_SCHEMA = pa.schema(
    [
        ("namespace", pa.string()),
        ("tableName", pa.string()),
        ("isTemporary", pa.bool_()),
        ("information", pa.string()),
    ]
)


def spark_pattern_matches(names: list[str], pattern: str) -> list[str]:
    """The names ``pattern`` matches, by Spark's rule for SHOW TABLE(S) patterns, in input order."""
    regexes = []
    for alternative in pattern.strip().split("|"):
        try:
            regexes.append(re.compile(alternative.replace("*", ".*"), re.IGNORECASE))
        except re.error:
            continue  # Spark skips an alternative that is no valid expression
    return [n for n in names if any(r.fullmatch(n) for r in regexes)]


def _information(items: list[tuple[str, str]], tree: str | None) -> str:
    """``Key: value`` lines, then the schema's tree (None: no columns, or none known)."""
    lines = [key if not value else f"{key}: {value}" for key, value in items]
    if tree is not None:
        lines.append(f"Schema: {tree}")
        return "\n".join(lines) + "\n"  # the tree ends with its own newline, as Spark's does
    return "\n".join(lines) + "\n"


def _date_text(millis: int) -> str:
    """A time as Java's ``Date.toString`` prints it (Spark's ``Created Time``), in UTC."""
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(millis // 1000))


def _bracketed(values: list[str]) -> str:
    return "[" + ", ".join(values) + "]"


def table_information(ctx: PlannerContext, table: Table) -> str:
    """The ``information`` text of a managed table."""
    ident = table.identifier
    schema = table.schema
    items: list[tuple[str, str]] = [
        ("Catalog", CATALOG_NAME),
        ("Database", ident.database),
        ("Table", ident.table),
        ("Last Access", "UNKNOWN"),
        ("Type", "MANAGED"),
        ("Provider", CATALOG_NAME),
    ]
    if schema.comment:
        items.append(("Comment", schema.comment))
    props = table_properties(table)
    if props:
        items.append(("Table Properties", _bracketed([f"{k}={v}" for k, v in sorted(props.items())])))
    items.append(("Location", table.path))
    if table.partition_keys:
        items.append(("Partition Provider", "Catalog"))
        items.append(("Partition Columns", _bracketed([f"`{k}`" for k in table.partition_keys])))
    return _information(items, ctx.schema_tree(table.arrow_schema))


def format_table_information(ctx: PlannerContext, table: FormatTable) -> str:
    """The ``information`` text of a format table: its file format as the provider."""
    ident = table.identifier
    items: list[tuple[str, str]] = [
        ("Catalog", CATALOG_NAME), ("Database", ident.database), ("Table", ident.table),
        ("Last Access", "UNKNOWN"), ("Type", "MANAGED"), ("Provider", table.format),
    ]
    if table.comment:
        items.append(("Comment", table.comment))
    props = format_describe.properties(table)
    if props:
        items.append(("Table Properties", _bracketed([f"{k}={v}" for k, v in sorted(props.items())])))
    items.append(("Location", table.location))
    if table.partition_keys:
        items.append(("Partition Columns", _bracketed([f"`{k}`" for k in table.partition_keys])))
    return _information(items, ctx.schema_tree(pa.schema([to_arrow_field(f) for f in table.fields])))


def view_information(ctx: PlannerContext, view: ViewDefinition) -> str:
    """The ``information`` text of a dyntable view (permanent or temporary)."""
    items: list[tuple[str, str]] = []
    if view.database is not None:
        items += [("Catalog", CATALOG_NAME), ("Database", view.database)]
    items += [
        ("Table", view.name),
        ("Created Time", _date_text(view.created_millis)),
        ("Last Access", "UNKNOWN"),
        ("Type", "VIEW"),
    ]
    if view.comment:
        items.append(("Comment", view.comment))
    items += [
        ("View Text", view.sql),
        ("View Catalog and Namespace", f"{CATALOG_NAME}.{view.current_database}"),
        ("View Query Output Columns", _bracketed([f"`{c}`" for c in view.query_columns])),
    ]
    if view.properties:
        pairs = [f"{k}={v}" for k, v in sorted(view.properties.items())]
        items.append(("Table Properties", _bracketed(pairs)))
    # A view whose query no longer binds (a table under it was dropped) has no tree: the listing
    # still names it, as Spark's does, and reading it gives the error.
    return _information(items, ctx.query_tree(f"SELECT * FROM {_reference(view.database, view.name)}"))


def _reference(database: str | None, name: str) -> str:
    return ".".join(quoted(p) for p in ([database] if database else []) + [name])


def _result(entries: list[tuple[str, str, bool, str]]) -> Rows:
    columns = [[e[i] for e in entries] for i in range(len(_SCHEMA))]
    arrays = [pa.array(c, f.type) for c, f in zip(columns, _SCHEMA, strict=True)]
    return Rows(pa.Table.from_arrays(arrays, schema=_SCHEMA))


def show_table_extended(ctx: PlannerContext, n: ast.ShowTableExtended, stmt: Statement) -> Plan:
    """SHOW TABLE EXTENDED [IN|FROM db] LIKE 'pattern' [PARTITION (...)]."""
    database = n.database or ctx.current_database
    other_catalog = n.catalog is not None and n.catalog.lower() != CATALOG_NAME
    if other_catalog or not ctx.catalog.database_exists(database):
        return ToEngine()
    if n.partition is not None:
        return _partition_row(ctx, n, database, stmt)
    tables = {name: TableName(None, database, name) for name in ctx.catalog.list_tables(database)}
    views = {v.name: v for v in ctx.views(database) if v.name not in tables}
    entries: list[tuple[str, str, bool, str]] = []
    for name in sorted(spark_pattern_matches([*tables, *views], n.like)):
        fmt = format_table_of(ctx, tables[name]) if name in tables else None
        if fmt is not None:
            text = format_table_information(ctx, fmt)
        elif name in tables:
            text = table_information(ctx, ctx.table(tables[name]))
        else:
            text = view_information(ctx, views[name])
        entries.append((database, name, False, text))
    # Temporary views: the session's over managed tables, then Spark's own (and cached tables).
    session_views = {v.name: v for v in ctx.temporary_views()}
    spark_views = [name for name in ctx.engine_temp_views() if name not in session_views]
    spark_texts = ctx.engine_view_information(n.like) if spark_views else {}
    for name in sorted(spark_pattern_matches([*session_views, *spark_views], n.like), key=str.lower):
        view = session_views.get(name)
        if view is not None:
            text = view_information(ctx, view)
        else:
            # A temporary view the engine did not describe (a cached table's): its own lines.
            text = spark_texts.get(name) or _information(
                [("Table", name), ("Last Access", "UNKNOWN"), ("Type", "VIEW")], ctx.engine_view_tree(name))
        entries.append(("", name, True, text))
    return _result(entries)


def _partition_row(ctx: PlannerContext, n: ast.ShowTableExtended, database: str, stmt: Statement) -> Plan:
    """One partition of the table ``n.like`` names: Spark's ``Partition Values`` … lines."""
    name = TableName(None, database, n.like)
    if not ctx.is_managed(name):
        if any(v.name.lower() == n.like.lower() for v in ctx.views(database)):
            raise SqlAnalysisError(
                f"{database}.{n.like} is a view: SHOW TABLE EXTENDED … PARTITION needs a partitioned table",
                line=stmt.line, column=stmt.column, sqlstate="42809",
            )
        raise SqlAnalysisError(
            f"table {database}.{n.like} not found: with a PARTITION clause LIKE names one table"
            " (SHOW TABLES lists them)",
            line=stmt.line, column=stmt.column, sqlstate="42P01",
        )
    assert n.partition is not None
    if format_table_of(ctx, name) is not None:
        raise SqlAnalysisError(
            f"{database}.{n.like} is a format table: SHOW TABLE EXTENDED … PARTITION is not supported"
            " for it (SHOW PARTITIONS lists its partitions)",
            line=stmt.line, column=stmt.column, sqlstate="0A000")
    table = ctx.table(name)
    spec = checked_spec(table, n.partition, stmt, full=True)
    details = dict(partition_details(table, spec, stmt))
    keys = table.partition_keys
    default_name = "null"
    values = [
        f"{k}={partition_value_string(spec[k], table.schema.field(k).type, default_name, legacy=False)}"
        for k in keys
    ]
    size, count, files = details["size-in-bytes"], details["record-count"], details["num-files"]
    items = [
        ("Partition Values", _bracketed(values)),
        ("Location", details["file.path"]),
        ("Partition Parameters", f"{{numFiles={files}, numRows={count}, totalSize={size}}}"),
        ("Last Access", "UNKNOWN"),
        ("Partition Statistics", f"{size} bytes, {count} rows"),
    ]
    information = _information(items, None)
    return _result([(database, table.identifier.table, False, information)])


PLANNERS: dict[type, Planner] = {ast.ShowTableExtended: show_table_extended}
