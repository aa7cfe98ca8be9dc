"""Planners of session statements: SET/RESET, SHOW DATABASES/TABLES/VIEWS, SHOW JOBS, STOP JOB.

Each reads the session through the planner context and returns a plan: rows to show, or a
session action (set or reset an option, stop a job) that the runner carries out.
"""

from __future__ import annotations

import fnmatch

import pyarrow as pa

from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import Plan, PlannerContext, ResetOption, Rows, SetOption, StopJob
from sqlext.parse import ast
from sqlext.parse.splitter import Statement

_KEY_VALUE = pa.schema([("key", pa.string()), ("value", pa.string())])


def _like(names: list[str], like: str | None) -> list[str]:
    """The names a SHOW ... LIKE pattern keeps (``%``/``*`` any run, ``_``/``?`` one character)."""
    if not like:
        return names
    pattern = like.replace("%", "*").replace("_", "?")
    return [n for n in names if fnmatch.fnmatch(n, pattern)]


def set_option(ctx: PlannerContext, n: ast.SetOption, stmt: Statement) -> Plan:
    """SET (every session option), SET key (one value: the session's, else the engine's), SET key = value."""
    if n.key is None:
        items = sorted(ctx.options.items())
        return Rows(pa.table([[k for k, _ in items], [v for _, v in items]], schema=_KEY_VALUE))
    if n.value is None:
        value = ctx.options.get(n.key)
        if value is None:
            value = ctx.engine_setting(n.key)
        return Rows(pa.table([[n.key], [value if value is not None else "<undefined>"]], schema=_KEY_VALUE))
    return SetOption(n.key, n.value)


def reset_option(ctx: PlannerContext, n: ast.ResetOption, stmt: Statement) -> Plan:
    return ResetOption(n.key)


def show_databases(ctx: PlannerContext, n: ast.ShowDatabases, stmt: Statement) -> Plan:
    names = _like(ctx.catalog.list_databases(), n.like)
    return Rows(pa.table({"namespace": pa.array(names, pa.string())}))


def show_tables(ctx: PlannerContext, n: ast.ShowTables, stmt: Statement) -> Plan:
    """Tables and views of a database, then the session's temporary views (as Spark lists them)."""
    db = n.database or ctx.current_database
    names = _like(ctx.catalog.list_tables(db), n.like)
    entries = [(db, t, False) for t in names] + ctx.view_listing(db, n.like)
    entries.sort(key=lambda e: (e[2], e[1].lower()))
    return Rows(pa.table({
        "namespace": pa.array([e[0] for e in entries], pa.string()),
        "tableName": pa.array([e[1] for e in entries], pa.string()),
        "isTemporary": pa.array([e[2] for e in entries], pa.bool_()),
    }))


def show_views(ctx: PlannerContext, n: ast.ShowViews, stmt: Statement) -> Plan:
    """The dyntable views of a database, then every temporary view (the session's and Spark's)."""
    database = n.database or ctx.current_database
    if not ctx.catalog.database_exists(database):
        raise SqlAnalysisError(f"database '{database}' does not exist",
                               line=stmt.line, column=stmt.column, sqlstate="3F000")
    entries = ctx.view_listing(database, n.like)
    return Rows(pa.table({
        "namespace": pa.array([e[0] for e in entries], pa.string()),
        "viewName": pa.array([e[1] for e in entries], pa.string()),
        "isTemporary": pa.array([e[2] for e in entries], pa.bool_()),
    }))


def show_jobs(ctx: PlannerContext, n: ast.ShowJobs, stmt: Statement) -> Plan:
    jobs = ctx.jobs()
    return Rows(pa.table({
        "job_id": pa.array([j.job_id for j in jobs], pa.string()),
        "status": pa.array([j.status for j in jobs], pa.string()),
        "statement": pa.array([j.statement for j in jobs], pa.string()),
    }))


def stop_job(ctx: PlannerContext, n: ast.StopJob, stmt: Statement) -> Plan:
    if all(j.job_id != n.job_id for j in ctx.jobs()):
        raise SqlAnalysisError(f"no job '{n.job_id}'; SHOW JOBS lists the jobs of this session",
                               line=stmt.line, column=stmt.column, sqlstate="42704")
    return StopJob(n.job_id)


PLANNERS = {
    ast.SetOption: set_option,
    ast.ResetOption: reset_option,
    ast.ShowDatabases: show_databases,
    ast.ShowTables: show_tables,
    ast.ShowViews: show_views,
    ast.ShowJobs: show_jobs,
    ast.StopJob: stop_job,
}
