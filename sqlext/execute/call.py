"""Executor of CALL: resolve the procedure, bind the arguments, run it, show its result table.

Invariants: every procedure error carries the CALL statement's position (a
``ProcedureTargetError`` that of the argument it names); an argument problem is a
``ProcedureArgumentError`` (22023) and an unknown procedure a ``SqlAnalysisError`` (42883), both
raised before the procedure does anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlext.errors import ProcedureTargetError, SqlError
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


def argument_starts(text: str) -> list[int]:
    """Offsets in a CALL's ``text`` where each top-level argument's value starts (after ``name =>``)."""
    starts: list[int] = []
    depth, i, quote, start = 0, 0, "", -1
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 1  # an escaped character
            elif c == quote:
                if text[i + 1 : i + 2] == quote:
                    i += 1  # a doubled quote
                else:
                    quote = ""
        elif c in "'\"`":
            quote = c
        elif c == "(":
            depth += 1
            if depth == 1:
                start = i + 1
        elif (c == "," and depth == 1) or (c == ")" and depth == 1):
            arg = text[start:i]
            if arg.strip():
                arrow = arg.find("=>") if arg.lstrip()[:1] not in "'\"`" else -1
                value_at = start + (arrow + 2 if arrow >= 0 else 0)
                starts.append(value_at + len(text[value_at:i]) - len(text[value_at:i].lstrip()))
            if c == ")":
                break
            start = i + 1
        elif c == ")":
            depth -= 1
        i += 1
    return starts


def _argument_offset(n: ast.Call, parameters: list[str], argument: str, text: str) -> int | None:
    """Where the argument for parameter ``argument`` is written in the CALL's ``text`` (None: not given)."""
    starts = argument_starts(text)
    if len(starts) != len(n.args):
        return None  # a comment or unusual spelling: no guess
    for i, arg in enumerate(n.args):
        name = arg.name.lower() if arg.name is not None else (parameters[i] if i < len(parameters) else None)
        if name == argument:
            return starts[i]
    return None


def call(s: SqlSession, n: ast.Call, stmt: Statement) -> StatementResult:
    """CALL [sys.]name(args): the procedure's result table and a status message."""
    try:
        procedure = resolve(n.name, n.qualifier)
        values = bind_arguments(procedure, n.args)
        result = procedure.invoke(s, values)
    except ProcedureTargetError as e:
        at = _argument_offset(n, [p.name for p in procedure.parameters], e.argument, stmt.text)
        if at is None:
            raise _located(e, stmt) from None
        error = ProcedureTargetError.at(
            e.message, stmt.text, at, line=stmt.line, column=stmt.column, sqlstate=e.sqlstate
        )
        error.argument = e.argument
        raise error from None
    except SqlError as e:
        raise _located(e, stmt) from None
    return rows(s, stmt, result, f"Procedure {procedure.name} finished")


HANDLERS: dict[type, Any] = {ast.Call: call}
