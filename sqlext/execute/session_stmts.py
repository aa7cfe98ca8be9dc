"""Executors of session statements: SET/RESET, SHOW DATABASES/TABLES, SHOW JOBS, STOP JOB."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from sqlext.errors import SqlAnalysisError
from sqlext.execute.common import done, rows
from sqlext.execute.results import StatementResult
from sqlext.execute.views import view_listing
from sqlext.parse import ast
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession


def set_option(s: SqlSession, n: ast.SetOption, stmt: Statement) -> StatementResult:
    if n.key is None:
        items = sorted(s.options.items())
        return rows(s, stmt, pa.table({"key": [k for k, _ in items], "value": [v for _, v in items]},
                                      schema=pa.schema([("key", pa.string()), ("value", pa.string())])))
    if n.value is None:
        value = s.options.get(n.key)
        if value is None:
            try:
                value = s.spark.conf.get(n.key, None)
            except Exception:  # noqa: BLE001
                value = None
        return rows(
            s, stmt, pa.table({"key": [n.key], "value": [value if value is not None else "<undefined>"]})
        )
    s.set_option(n.key, n.value)
    return done(stmt, f"{n.key} = {n.value}")


def reset_option(s: SqlSession, n: ast.ResetOption, stmt: Statement) -> StatementResult:
    s.reset_option(n.key)
    return done(stmt, "Reset " + (n.key or "all session options"))


def show_databases(s: SqlSession, n: ast.ShowDatabases, stmt: Statement) -> StatementResult:
    names = s.catalog.list_databases()
    if n.like:
        import fnmatch

        pattern = n.like.replace("%", "*").replace("_", "?")
        names = [d for d in names if fnmatch.fnmatch(d, pattern)]
    return rows(s, stmt, pa.table({"namespace": pa.array(names, pa.string())}))


def show_tables(s: SqlSession, n: ast.ShowTables, stmt: Statement) -> StatementResult:
    """Tables and views of a database, then the session's temporary views (as Spark lists them)."""
    db = n.database or s.current_database
    names = s.catalog.list_tables(db)
    if n.like:
        import fnmatch

        pattern = n.like.replace("%", "*").replace("_", "?")
        names = [t for t in names if fnmatch.fnmatch(t, pattern)]
    entries = [(db, t, False) for t in names] + view_listing(s, db, n.like)
    entries.sort(key=lambda e: (e[2], e[1].lower()))
    return rows(s, stmt, pa.table({
        "namespace": pa.array([e[0] for e in entries], pa.string()),
        "tableName": pa.array([e[1] for e in entries], pa.string()),
        "isTemporary": pa.array([e[2] for e in entries], pa.bool_()),
    }))


def show_jobs(s: SqlSession, n: ast.ShowJobs, stmt: Statement) -> StatementResult:
    jobs = list(s.jobs.values())
    return rows(s, stmt, pa.table({
        "job_id": pa.array([j.job_id for j in jobs], pa.string()),
        "status": pa.array([j.status for j in jobs], pa.string()),
        "statement": pa.array([j.statement for j in jobs], pa.string()),
    }))


def stop_job(s: SqlSession, n: ast.StopJob, stmt: Statement) -> StatementResult:
    job = s.jobs.get(n.job_id)
    if job is None:
        raise SqlAnalysisError(f"no job '{n.job_id}'; SHOW JOBS lists the jobs of this session",
                               line=stmt.line, column=stmt.column, sqlstate="42704")
    if job.query.isActive:
        job.query.stop()
    return done(stmt, f"Job {n.job_id} stopped")
