"""Executor of CALL: resolve the procedure, bind the arguments, run it, show its result table.

Invariants: every procedure error carries the CALL statement's position; an argument problem is
a ``ProcedureArgumentError`` (22023) and an unknown procedure a ``SqlAnalysisError`` (42883),
both raised before the procedure does anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlext.errors import SqlError
from sqlext.execute.common import rows
from sqlext.execute.procedures import bind_arguments, resolve
from sqlext.execute.results import StatementResult
from sqlext.parse import ast
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession


def _located(error: SqlError, stmt: Statement) -> SqlError:
    """Give an error raised away from the parser the statement's position (if it has none)."""
    if error.line is None:
        error.line, error.column = stmt.line, stmt.column
    return error


def call(s: SqlSession, n: ast.Call, stmt: Statement) -> StatementResult:
    """CALL [sys.]name(args): the procedure's result table and a status message."""
    try:
        procedure = resolve(n.name, n.qualifier)
        values = bind_arguments(procedure, n.args)
        result = procedure.invoke(s, values)
    except SqlError as e:
        raise _located(e, stmt) from None
    return rows(s, stmt, result, f"Procedure {procedure.name} finished")


HANDLERS: dict[type, Any] = {ast.Call: call}
