"""Executors of views and cached tables: CREATE/DROP VIEW, CACHE/UNCACHE TABLE (SHOW VIEWS, DESCRIBE and
SHOW CREATE of a view are planned in session_stmts.py and describe.py).

A view whose query reads a managed table (directly or through another view) is dyntable's: its
query text is kept (:class:`sqlext.parse.views.ViewDefinition`) and the binder expands it at
every statement that reads the view, so the view reads its tables as they are then. Where:

* ``CREATE TEMPORARY VIEW``: in the session (``SqlSession.temp_views``), gone when it ends, as
  Spark's temporary views;
* ``CREATE VIEW``: in the warehouse, ``<db>.db/.views/<name>.json``, seen by every session on the
  warehouse (a name starting with '.' is never a table, so the file cannot clash with one).

A view over Spark's own tables only is Spark's: the statement goes to Spark unchanged.

``CACHE TABLE c AS <query over managed tables>`` registers a Spark temporary view built from the
query's plan and caches it in Spark; the session keeps the query and the versions (snapshot and
schema ids) of the tables it read, and rebuilds the cache lazily when a later statement reads
``c`` after one of them changed, as Spark re-caches after a write to a cached table.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine import DyntableError, Identifier
from sqlext.bind.rewrite import BoundQuery
from sqlext.errors import SqlAnalysisError
from sqlext.execute.common import done
from sqlext.execute.results import StatementResult
from sqlext.parse import ast
from sqlext.parse.names import TableName
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition

if TYPE_CHECKING:
    from sqlext.session import SqlSession

VIEWS_DIR = ".views"
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTERNAL_PREFIX = "__dyntable_"
ALREADY_EXISTS = "42710"  # the error tree's code for an existing object (as CREATE TABLE)
UNDEFINED = "42P01"
WRONG_OBJECT = "42809"


# -- storage of permanent views -------------------------------------------------------------------
def _view_path(s: SqlSession, database: str, name: str) -> str:
    Identifier(database, name)  # refuses a name that cannot be a path component
    return f"{s.catalog.database_path(database)}/{VIEWS_DIR}/{name.lower()}.json"


def load_view(s: SqlSession, database: str, name: str) -> ViewDefinition | None:
    """The permanent view ``database.name``, or None."""
    try:
        path = _view_path(s, database, name)
        return ViewDefinition.from_json(s.catalog.io.read_text(path))
    except FileNotFoundError:
        return None
    except DyntableError:  # a name that cannot be stored is no stored view
        return None


def list_views(s: SqlSession, database: str) -> list[ViewDefinition]:
    """The permanent views of ``database``, by name."""
    found = []
    for status in s.catalog.io.list_dir(f"{s.catalog.database_path(database)}/{VIEWS_DIR}"):
        if not status.is_dir and status.path.endswith(".json"):
            try:
                found.append(ViewDefinition.from_json(s.catalog.io.read_text(status.path)))
            except (FileNotFoundError, ValueError, KeyError):
                continue  # dropped meanwhile, or not a view file
    return sorted(found, key=lambda v: v.name.lower())


def _save_view(s: SqlSession, view: ViewDefinition) -> None:
    assert view.database is not None
    path = _view_path(s, view.database, view.name)
    s.catalog.io.write_text(path, view.to_json(), overwrite=True)


def _delete_view(s: SqlSession, view: ViewDefinition) -> None:
    assert view.database is not None
    s.catalog.io.delete(_view_path(s, view.database, view.name))


# -- helpers ------------------------------------------------------------------------------------
def _error(message: str, at: TableName | None, stmt: Statement, sqlstate: str) -> SqlAnalysisError:
    line = at.line if at is not None and at.line is not None else stmt.line
    column = at.column if at is not None and at.column is not None else stmt.column
    return SqlAnalysisError(message, line=line, column=column, sqlstate=sqlstate)


def _fragment_statement(fragment: Any, stmt: Statement) -> Statement:
    """The query of a CREATE VIEW / CACHE TABLE as a statement of its own, located in the script."""
    return Statement(
        fragment.text,
        fragment.line if fragment.line is not None else stmt.line,
        fragment.column if fragment.column is not None else stmt.column,
        fragment.offset if fragment.offset is not None else stmt.offset,
    )


def spark_temp_views(s: SqlSession) -> list[str]:
    """Spark's own temporary views (the session's internal per-statement ones left out)."""
    names = [r[1] for r in s.spark.sql("SHOW VIEWS").collect() if r[2]]
    return [n for n in names if not n.startswith(_INTERNAL_PREFIX)]


def _spark_has_temp_view(s: SqlSession, name: str) -> bool:
    return name.lower() in {n.lower() for n in spark_temp_views(s)}


def view_of(s: SqlSession, name: TableName) -> ViewDefinition | None:
    """The dyntable view a name refers to (Spark's order: a temporary view first), or None."""
    if name.catalog is not None or name.branch is not None or name.system_table is not None:
        return None
    if name.database is None and name.table.lower() in s.temp_views:
        return s.temp_views[name.table.lower()]
    database = name.database or s.current_database
    if not s.catalog.database_exists(database) or s.is_managed(name):
        return None
    return load_view(s, database, name.table)


def reads_dyntable(s: SqlSession, bound: BoundQuery) -> bool:
    """Whether a bound query reads a managed table, a dyntable view or a cached table."""
    cached = any(len(t) == 1 and t[0].lower() in s.cached for t in bound.other_tables)
    return bool(bound.bindings or bound.views or cached)


def _like(names: Iterable[str], pattern: str | None) -> set[str]:
    names = list(names)
    if not pattern:
        return set(names)
    pattern = pattern.replace("%", "*").replace("_", "?")
    alternatives = [p.strip() for p in pattern.split("|")]
    return {n for n in names if any(fnmatch.fnmatch(n.lower(), p.lower()) for p in alternatives)}


# -- CREATE VIEW -----------------------------------------------------------------------------------
def create_view(s: SqlSession, n: ast.CreateView, stmt: Statement) -> StatementResult:
    name = n.name
    if name.catalog is not None or name.branch is not None or name.system_table is not None:
        raise _error(f"{name} is not a view name: use [database.]view", name, stmt, "42602")
    if n.temporary and name.database is not None and not n.global_temporary:
        raise _error(
            f"a temporary view has no database: name it {name.table!r} (not {name.database}.{name.table})",
            name, stmt, "42602",
        )
    query = _fragment_statement(n.query, stmt)
    frame, bound = s.bound_frame(query.text, query)
    if not reads_dyntable(s, bound):
        return _to_spark(s, n, stmt)  # a view over Spark's own tables only
    if n.global_temporary:
        raise _error(
            "a GLOBAL TEMPORARY view cannot read dyntable tables: use CREATE TEMPORARY VIEW (this"
            " session) or CREATE VIEW (kept in the warehouse, for every session)",
            name, stmt, "0A000",
        )
    label = name.table if n.temporary else f"{name.database or s.current_database}.{name.table}"
    if any(v.label.lower() == label.lower() for v in bound.views):
        raise _error(f"view {label} would read itself: a view cannot refer to itself", name, stmt, "42K0H")
    query_columns = tuple(f.name for f in frame.schema.fields)
    seen: set[str] = set()
    for column in query_columns:
        if column.lower() in seen and not n.columns:
            raise _error(
                f"the query of view {label} has two columns named {column!r}: give them distinct"
                " aliases or list the view's columns",
                name, stmt, "42711",
            )
        seen.add(column.lower())
    if n.columns and len(n.columns) != len(query_columns):
        raise _error(
            f"view {label} lists {len(n.columns)} column(s) but its query returns {len(query_columns)}:"
            f" {', '.join(query_columns)}",
            name, stmt, "21S01",
        )
    if n.columns:
        # Duplicated query names would be ambiguous when selected by name: select by position.
        if len({c.lower() for c in query_columns}) != len(query_columns):
            raise _error(
                f"the query of view {label} has duplicate column names: alias them in the query",
                name, stmt, "42711",
            )
    columns = tuple(c.name for c in n.columns) if n.columns else query_columns
    comments = tuple(c.comment for c in n.columns) if n.columns else ()
    view = ViewDefinition(
        name=name.table,
        database=None if n.temporary else name.database or s.current_database,
        sql=n.query.text,
        current_database=s.current_database,
        columns=columns,
        query_columns=query_columns,
        column_comments=comments,
        comment=n.comment,
        properties=dict(n.properties),
        created_millis=int(time.time() * 1000),
    )
    if n.temporary:
        return _create_temporary(s, n, view, stmt)
    return _create_permanent(s, n, view, bound, stmt)


def _to_spark(s: SqlSession, n: ast.CreateView, stmt: Statement) -> StatementResult:
    key = n.name.table.lower()
    if n.temporary and n.name.database is None and key in s.temp_views:
        if not n.replace:
            if n.if_not_exists:
                return done(stmt, f"View {n.name.table} already exists; nothing created")
            raise _error(f"temporary view {n.name.table} already exists: use CREATE OR REPLACE",
                         n.name, stmt, ALREADY_EXISTS)
        del s.temp_views[key]
    return StatementResult(stmt, s.spark.sql(stmt.text), None)


def _create_temporary(
    s: SqlSession, n: ast.CreateView, view: ViewDefinition, stmt: Statement
) -> StatementResult:
    key = view.name.lower()
    exists = key in s.temp_views or key in s.cached or _spark_has_temp_view(s, view.name)
    if exists and not n.replace:
        if n.if_not_exists:
            return done(stmt, f"View {view.name} already exists; nothing created")
        raise _error(
            f"temporary view {view.name} already exists: use CREATE OR REPLACE TEMPORARY VIEW, or"
            " DROP VIEW first",
            n.name, stmt, ALREADY_EXISTS,
        )
    if exists:
        s.uncache(key)
        s.spark.catalog.dropTempView(view.name)
    s.temp_views[key] = view
    return done(stmt, f"Temporary view {view.name} created")


def _create_permanent(
    s: SqlSession, n: ast.CreateView, view: ViewDefinition, bound: Any, stmt: Statement
) -> StatementResult:
    assert view.database is not None
    if not s.catalog.database_exists(view.database):
        raise _error(f"database '{view.database}' does not exist", n.name, stmt, "3F000")
    temporary = [v.label for v in bound.views if v.temporary]
    spark_temp = {t.lower() for t in spark_temp_views(s)} | set(s.cached)
    temporary += [".".join(t) for t in bound.other_tables if len(t) == 1 and t[0].lower() in spark_temp]
    if temporary:
        raise _error(
            f"view {view.label} is kept in the warehouse but reads the temporary view {temporary[0]},"
            f" which other sessions do not have: create {temporary[0]} as a view (CREATE VIEW), or"
            f" make {view.label} temporary (CREATE TEMPORARY VIEW)",
            n.name, stmt, "42K0F",
        )
    if s.catalog.table_exists(Identifier(view.database, view.name)):
        raise _error(
            f"{view.label} is a table: a view cannot replace it (DROP TABLE first, or pick another name)",
            n.name, stmt, ALREADY_EXISTS,
        )
    if load_view(s, view.database, view.name) is not None and not n.replace:
        if n.if_not_exists:
            return done(stmt, f"View {view.label} already exists; nothing created")
        raise _error(
            f"view {view.label} already exists: use CREATE OR REPLACE VIEW, or DROP VIEW first",
            n.name, stmt, ALREADY_EXISTS,
        )
    _save_view(s, view)
    return done(stmt, f"View {view.label} created")


# -- DROP VIEW / SHOW VIEWS ----------------------------------------------------------------------------
def drop_view(s: SqlSession, n: ast.DropView, stmt: Statement) -> StatementResult:
    name = n.name
    key = name.table.lower()
    if name.database is None and name.catalog is None:
        if key in s.temp_views:
            del s.temp_views[key]
            return done(stmt, f"View {name.table} dropped")
        if key in s.cached:
            s.uncache(key)
            return done(stmt, f"View {name.table} dropped")
        if _spark_has_temp_view(s, name.table):
            return StatementResult(stmt, s.spark.sql(stmt.text), None)
    view = view_of(s, name)
    if view is not None:
        _delete_view(s, view)
        return done(stmt, f"View {view.label} dropped")
    if s.is_managed(name) and name.system_table is None:
        raise _error(f"{s.identifier(name).full_name} is a table, not a view: use DROP TABLE",
                     name, stmt, WRONG_OBJECT)
    spark_catalog = name.database is not None and not s.catalog.database_exists(name.database)
    if name.catalog is not None or spark_catalog:
        return StatementResult(stmt, s.spark.sql(stmt.text), None)  # Spark's catalogs (global_temp...)
    if n.if_exists:
        return done(stmt, f"View {name} does not exist; nothing dropped")
    raise _error(f"view {name} does not exist; SHOW VIEWS lists the views", name, stmt, UNDEFINED)


def temporary_names(s: SqlSession) -> list[str]:
    """The session's temporary views: dyntable's, cached tables and Spark's own, by name."""
    names = {v.name.lower(): v.name for v in s.temp_views.values()}
    for name in spark_temp_views(s):
        names.setdefault(name.lower(), name)
    return [names[k] for k in sorted(names)]


def view_listing(s: SqlSession, database: str, like: str | None) -> list[tuple[str, str, bool]]:
    """(namespace, name, isTemporary) of the views of ``database`` and every temporary view."""
    permanent = [v.name for v in list_views(s, database)]
    temporary = temporary_names(s)
    keep_p, keep_t = _like(permanent, like), _like(temporary, like)
    return [(database, v, False) for v in permanent if v in keep_p] + [
        ("", v, True) for v in temporary if v in keep_t
    ]


# -- CACHE / UNCACHE TABLE ---------------------------------------------------------------------------
@dataclass
class CachedQuery:
    """A cached table over managed tables: its query and what it read when it was built."""

    name: str
    sql: str
    current_database: str
    lazy: bool
    options: dict[str, str]
    tables: tuple[Identifier, ...] = ()  # the managed tables it reads (not time-travelled)
    views: tuple[tuple[str | None, str], ...] = ()  # the dyntable views it reads
    nested: tuple[str, ...] = ()  # the cached tables it reads
    versions: tuple[Any, ...] = ()  # what those were when it was built


def cache_table(s: SqlSession, n: ast.CacheTable, stmt: Statement) -> StatementResult:
    name = n.name
    if n.query is None:
        view = view_of(s, name)
        managed = s.is_managed(name)
        if view is None and not managed:
            return StatementResult(stmt, s.spark.sql(stmt.text), None)  # one of Spark's tables
        if name.database is not None or name.catalog is not None:
            raise _error(
                f"CACHE TABLE of a dyntable table or view takes the name as the session reads it:"
                f" USE {name.database} first, or cache a query:"
                f" CACHE TABLE {name.table} AS SELECT * FROM {name}",
                name, stmt, "0A000",
            )
        sql = f"SELECT * FROM {name}"
    else:
        if name.database is not None or name.catalog is not None or name.branch or name.system_table:
            raise _error(f"a cached query is a temporary view: name it {name.table!r}, without a database",
                         name, stmt, "42602")
        sql = n.query.text
        query = _fragment_statement(n.query, stmt)
        _, bound = s.bound_frame(query.text, query)  # binds (and checks) the query
        if not reads_dyntable(s, bound):
            return StatementResult(stmt, s.spark.sql(stmt.text), None)  # over Spark's tables only
    key = name.table.lower()
    if key in s.temp_views:
        raise _error(
            f"temporary view {name.table} already exists: DROP VIEW it first", name, stmt, ALREADY_EXISTS
        )
    entry = CachedQuery(name.table, sql, s.current_database, n.lazy, dict(n.options))
    s.uncache(key)
    s.build_cache(entry)
    return done(stmt, f"Table {name.table} cached" + (" (lazily)" if n.lazy else ""))


def uncache_table(s: SqlSession, n: ast.UncacheTable, stmt: Statement) -> StatementResult:
    key = n.name.table.lower()
    if n.name.database is None and key in s.cached:
        s.uncache(key)
        return done(stmt, f"Table {n.name.table} uncached")
    return StatementResult(stmt, s.spark.sql(stmt.text), None)


HANDLERS: dict[type, Any] = {
    ast.CreateView: create_view,
    ast.DropView: drop_view,
    ast.CacheTable: cache_table,
    ast.UncacheTable: uncache_table,
}
