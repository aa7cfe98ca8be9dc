"""Planners of views and cached tables: CREATE/DROP VIEW, CACHE/UNCACHE TABLE.

What a dyntable view is, where it is kept and how a cached table is rebuilt is said in
``sqlext.execute.views`` (the session's side, which also carries out these plans). The planners
bind the view's or cached query (through the context: analysed, not run), check names, columns
and what may be replaced, and return a view action (``planning.py``); a view or cache over the
SQL engine's own tables only is the engine's (``ToEngine``).
"""

from __future__ import annotations

import time
from typing import Any

from engine import Identifier
from sqlext.bind.rewrite import BoundQuery
from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import (
    CacheTable,
    CreateView,
    Done,
    DropView,
    Plan,
    Planner,
    PlannerContext,
    ToEngine,
    UncacheTable,
)
from sqlext.parse import ast
from sqlext.parse.names import TableName
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition

ALREADY_EXISTS = "42710"  # the error tree's code for an existing object (as CREATE TABLE)
UNDEFINED = "42P01"
WRONG_OBJECT = "42809"


def _error(message: str, at: TableName | None, stmt: Statement, sqlstate: str) -> SqlAnalysisError:
    line = at.line if at is not None and at.line is not None else stmt.line
    column = at.column if at is not None and at.column is not None else stmt.column
    return SqlAnalysisError(message, line=line, column=column, sqlstate=sqlstate)


def fragment_statement(fragment: Any, stmt: Statement) -> Statement:
    """The query of a CREATE VIEW / CACHE TABLE as a statement of its own, located in the script."""
    return Statement(
        fragment.text,
        fragment.line if fragment.line is not None else stmt.line,
        fragment.column if fragment.column is not None else stmt.column,
        fragment.offset if fragment.offset is not None else stmt.offset,
    )


def reads_dyntable(ctx: PlannerContext, bound: BoundQuery | None) -> bool:
    """Whether a bound query reads a managed table, a dyntable view or a cached table."""
    if bound is None:
        return False
    cached = any(len(t) == 1 and ctx.is_cached(t[0]) for t in bound.other_tables)
    return bool(bound.bindings or bound.views or cached)


def _engine_has_temp_view(ctx: PlannerContext, name: str) -> bool:
    return name.lower() in {n.lower() for n in ctx.engine_temp_views()}


# -- CREATE VIEW -----------------------------------------------------------------------------------
def create_view(ctx: PlannerContext, n: ast.CreateView, stmt: Statement) -> Plan:
    name = n.name
    if name.catalog is not None or name.branch is not None or name.system_table is not None:
        raise _error(f"{name} is not a view name: use [database.]view", name, stmt, "42602")
    if n.temporary and name.database is not None and not n.global_temporary:
        raise _error(
            f"a temporary view has no database: name it {name.table!r} (not {name.database}.{name.table})",
            name, stmt, "42602",
        )
    query = fragment_statement(n.query, stmt)
    frame = ctx.frame(query.text, query)
    bound = frame.query
    if bound is None or not reads_dyntable(ctx, bound):
        return _to_engine(ctx, n, stmt)  # a view over Spark's own tables only
    if n.global_temporary:
        raise _error(
            "a GLOBAL TEMPORARY view cannot read dyntable tables: use CREATE TEMPORARY VIEW (this"
            " session) or CREATE VIEW (kept in the warehouse, for every session)",
            name, stmt, "0A000",
        )
    label = name.table if n.temporary else f"{name.database or ctx.current_database}.{name.table}"
    if any(v.label.lower() == label.lower() for v in bound.views):
        raise _error(f"view {label} would read itself: a view cannot refer to itself", name, stmt, "42K0H")
    query_columns = tuple(c.name for c in frame.columns)
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
        database=None if n.temporary else name.database or ctx.current_database,
        sql=n.query.text,
        current_database=ctx.current_database,
        columns=columns,
        query_columns=query_columns,
        column_comments=comments,
        comment=n.comment,
        properties=dict(n.properties),
        created_millis=int(time.time() * 1000),
    )
    if n.temporary:
        return _create_temporary(ctx, n, view, stmt)
    return _create_permanent(ctx, n, view, bound, stmt)


def _to_engine(ctx: PlannerContext, n: ast.CreateView, stmt: Statement) -> Plan:
    key = n.name.table.lower()
    if n.temporary and n.name.database is None and ctx.temporary_view(key) is not None:
        if not n.replace:
            if n.if_not_exists:
                return Done(f"View {n.name.table} already exists; nothing created")
            raise _error(f"temporary view {n.name.table} already exists: use CREATE OR REPLACE",
                         n.name, stmt, ALREADY_EXISTS)
        return DropView(key, None, "", then_engine=True)  # the engine's view takes the name
    return ToEngine()


def _create_temporary(ctx: PlannerContext, n: ast.CreateView, view: ViewDefinition, stmt: Statement) -> Plan:
    exists = (ctx.temporary_view(view.name) is not None or ctx.is_cached(view.name)
              or _engine_has_temp_view(ctx, view.name))
    if exists and not n.replace:
        if n.if_not_exists:
            return Done(f"View {view.name} already exists; nothing created")
        raise _error(
            f"temporary view {view.name} already exists: use CREATE OR REPLACE TEMPORARY VIEW, or"
            " DROP VIEW first",
            n.name, stmt, ALREADY_EXISTS,
        )
    return CreateView(view, exists, f"Temporary view {view.name} created")


def _create_permanent(
    ctx: PlannerContext, n: ast.CreateView, view: ViewDefinition, bound: BoundQuery, stmt: Statement
) -> Plan:
    assert view.database is not None
    if not ctx.catalog.database_exists(view.database):
        raise _error(f"database '{view.database}' does not exist", n.name, stmt, "3F000")
    temporary = [v.label for v in bound.views if v.temporary]
    engine_temp = {t.lower() for t in ctx.engine_temp_views()}
    temporary += [".".join(t) for t in bound.other_tables
                  if len(t) == 1 and (t[0].lower() in engine_temp or ctx.is_cached(t[0]))]
    if temporary:
        raise _error(
            f"view {view.label} is kept in the warehouse but reads the temporary view {temporary[0]},"
            f" which other sessions do not have: create {temporary[0]} as a view (CREATE VIEW), or"
            f" make {view.label} temporary (CREATE TEMPORARY VIEW)",
            n.name, stmt, "42K0F",
        )
    if ctx.catalog.table_exists(Identifier(view.database, view.name)):
        raise _error(
            f"{view.label} is a table: a view cannot replace it (DROP TABLE first, or pick another name)",
            n.name, stmt, ALREADY_EXISTS,
        )
    stored = any(v.name.lower() == view.name.lower() for v in ctx.views(view.database))
    if stored and not n.replace:
        if n.if_not_exists:
            return Done(f"View {view.label} already exists; nothing created")
        raise _error(
            f"view {view.label} already exists: use CREATE OR REPLACE VIEW, or DROP VIEW first",
            n.name, stmt, ALREADY_EXISTS,
        )
    return CreateView(view, stored, f"View {view.label} created")


# -- DROP VIEW -------------------------------------------------------------------------------------
def drop_view(ctx: PlannerContext, n: ast.DropView, stmt: Statement) -> Plan:
    name = n.name
    key = name.table.lower()
    if name.database is None and name.catalog is None:
        if ctx.temporary_view(key) is not None or ctx.is_cached(key):
            return DropView(key, None, f"View {name.table} dropped")
        if _engine_has_temp_view(ctx, name.table):
            return ToEngine()
    view = ctx.view_of(name)
    if view is not None:
        return DropView(None, view, f"View {view.label} dropped")
    if ctx.is_managed(name) and name.system_table is None:
        raise _error(f"{ctx.identifier(name).full_name} is a table, not a view: use DROP TABLE",
                     name, stmt, WRONG_OBJECT)
    engine_catalog = name.database is not None and not ctx.catalog.database_exists(name.database)
    if name.catalog is not None or engine_catalog:
        return ToEngine()  # Spark's catalogs (global_temp...)
    if n.if_exists:
        return Done(f"View {name} does not exist; nothing dropped")
    raise _error(f"view {name} does not exist; SHOW VIEWS lists the views", name, stmt, UNDEFINED)


# -- CACHE / UNCACHE TABLE ---------------------------------------------------------------------------
def cache_table(ctx: PlannerContext, n: ast.CacheTable, stmt: Statement) -> Plan:
    name = n.name
    if n.query is None:
        if ctx.view_of(name) is None and not ctx.is_managed(name):
            return ToEngine()  # one of Spark's tables
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
        query = fragment_statement(n.query, stmt)
        bound = ctx.frame(query.text, query).query  # binds (and checks) the query
        if not reads_dyntable(ctx, bound):
            return ToEngine()  # over Spark's tables only
    if ctx.temporary_view(name.table) is not None:
        raise _error(
            f"temporary view {name.table} already exists: DROP VIEW it first", name, stmt, ALREADY_EXISTS
        )
    return CacheTable(name.table, sql, ctx.current_database, n.lazy, dict(n.options),
                      f"Table {name.table} cached" + (" (lazily)" if n.lazy else ""))


def uncache_table(ctx: PlannerContext, n: ast.UncacheTable, stmt: Statement) -> Plan:
    if n.name.database is None and ctx.is_cached(n.name.table):
        return UncacheTable(n.name.table, f"Table {n.name.table} uncached")
    return ToEngine()


PLANNERS: dict[type, Planner] = {
    ast.CreateView: create_view,
    ast.DropView: drop_view,
    ast.CacheTable: cache_table,
    ast.UncacheTable: uncache_table,
}
