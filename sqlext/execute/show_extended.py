"""Executor of SHOW TABLE EXTENDED [IN|FROM db] LIKE 'pattern' [PARTITION (k = v, ...)].

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

Metadata only: the tables' schemas and options, the views' bound queries; no Spark job runs.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql.types import StructType

from engine import Table, partition_value_string
from sqlext.errors import SqlAnalysisError, SqlError
from sqlext.execute.common import rows
from sqlext.execute.describe import CATALOG_NAME, checked_spec, partition_details, table_properties
from sqlext.execute.results import StatementResult
from sqlext.execute.views import list_views, spark_temp_views
from sqlext.parse import ast
from sqlext.parse.names import TableName
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition
from sqlext.source.spark_types import spark_schema

if TYPE_CHECKING:
    from sqlext.session import SqlSession

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


def _information(items: list[tuple[str, str]], schema: StructType | None) -> str:
    lines = [key if not value else f"{key}: {value}" for key, value in items]
    if schema is not None and schema.fields:
        lines.append(f"Schema: {schema.treeString()}")
        return "\n".join(lines) + "\n"  # the tree ends with its own newline, as Spark's does
    return "\n".join(lines) + "\n"


def _date_text(millis: int) -> str:
    """A time as Java's ``Date.toString`` prints it (Spark's ``Created Time``), in UTC."""
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(millis // 1000))


def _bracketed(values: list[str]) -> str:
    return "[" + ", ".join(values) + "]"


def table_information(table: Table) -> str:
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
    return _information(items, spark_schema(table.arrow_schema))


def _view_schema(s: SqlSession, reference: str) -> StructType | None:
    """The columns a view returns, or None when its query no longer binds (a table under it was
    dropped): the listing still names the view, as Spark's does, and reading it gives the error."""
    try:
        return s.frame(f"SELECT * FROM {reference}", None).schema
    except (SqlError, PySparkException):
        return None


def view_information(s: SqlSession, view: ViewDefinition) -> str:
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
    return _information(items, _view_schema(s, _reference(view.database, view.name)))


def _spark_view_informations(s: SqlSession, pattern: str) -> dict[str, str]:
    """Spark's own ``information`` of its temporary views matching ``pattern`` (temporary views are
    listed whatever the database, so Spark's ``default`` is asked)."""
    escaped = pattern.replace("\\", "\\\\").replace("'", "\\'")
    try:
        found = s.spark.sql(f"SHOW TABLE EXTENDED IN default LIKE '{escaped}'").collect()
    except PySparkException:
        return {}
    return {r[1]: r[3] for r in found if r[2]}


def _spark_view_information(s: SqlSession, name: str) -> str:
    """The ``information`` text of a temporary view Spark did not describe (a cached table's)."""
    try:
        schema: StructType | None = s.spark.table(_quote(name)).schema
    except PySparkException:  # a view Spark can no longer resolve still gets its row
        schema = None
    return _information([("Table", name), ("Last Access", "UNKNOWN"), ("Type", "VIEW")], schema)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _reference(database: str | None, name: str) -> str:
    return ".".join(_quote(p) for p in ([database] if database else []) + [name])


def _to_spark(s: SqlSession, stmt: Statement) -> StatementResult:
    return StatementResult(stmt, s.spark.sql(stmt.text), None)


def _result(s: SqlSession, stmt: Statement, entries: list[tuple[str, str, bool, str]]) -> StatementResult:
    columns = [[e[i] for e in entries] for i in range(len(_SCHEMA))]
    arrays = [pa.array(c, f.type) for c, f in zip(columns, _SCHEMA, strict=True)]
    return rows(s, stmt, pa.Table.from_arrays(arrays, schema=_SCHEMA))


def show_table_extended(s: SqlSession, n: ast.ShowTableExtended, stmt: Statement) -> StatementResult:
    """SHOW TABLE EXTENDED [IN|FROM db] LIKE 'pattern' [PARTITION (...)]."""
    database = n.database or s.current_database
    other_catalog = n.catalog is not None and n.catalog.lower() != CATALOG_NAME
    if other_catalog or not s.catalog.database_exists(database):
        return _to_spark(s, stmt)
    if n.partition is not None:
        return _partition_row(s, n, database, stmt)
    tables = {name: TableName(None, database, name) for name in s.catalog.list_tables(database)}
    views = {v.name: v for v in list_views(s, database) if v.name not in tables}
    entries: list[tuple[str, str, bool, str]] = []
    for name in sorted(spark_pattern_matches([*tables, *views], n.like)):
        if name in tables:
            text = table_information(s.table(tables[name]))
        else:
            text = view_information(s, views[name])
        entries.append((database, name, False, text))
    # Temporary views: the session's over managed tables, then Spark's own (and cached tables).
    session_views = {v.name: v for v in s.temp_views.values()}
    spark_views = [name for name in spark_temp_views(s) if name not in session_views]
    spark_texts = _spark_view_informations(s, n.like) if spark_views else {}
    for name in sorted(spark_pattern_matches([*session_views, *spark_views], n.like), key=str.lower):
        view = session_views.get(name)
        if view is not None:
            text = view_information(s, view)
        else:
            text = spark_texts.get(name) or _spark_view_information(s, name)
        entries.append(("", name, True, text))
    return _result(s, stmt, entries)


def _partition_row(
    s: SqlSession, n: ast.ShowTableExtended, database: str, stmt: Statement
) -> StatementResult:
    """One partition of the table ``n.like`` names: Spark's ``Partition Values`` … lines."""
    name = TableName(None, database, n.like)
    if not s.is_managed(name):
        if any(v.name.lower() == n.like.lower() for v in list_views(s, database)):
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
    table = s.table(name)
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
    return _result(s, stmt, [(database, table.identifier.table, False, information)])


HANDLERS: dict[type, Any] = {ast.ShowTableExtended: show_table_extended}
