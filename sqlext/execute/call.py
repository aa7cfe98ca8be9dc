"""The CALL planner: resolve the procedure, bind and check the arguments, plan what it does.

``CALL [sys.]name(args)`` becomes a ``CallProcedure`` plan (``planning.py``): the procedure, its
bound values, the offset of each argument's value in the statement's text, and the procedure's own
plan (``procedures.plans``), made by the procedure over the same narrow context. The session's
runner carries that plan out (``procedure_jobs.py``) and answers with its result table.

Invariants: every procedure error carries the CALL statement's position (a
``ProcedureTargetError`` that of the argument it names: ``located_in_call``, used here and by the
runner); an argument problem is a ``ProcedureArgumentError`` (22023) and an unknown procedure a
``SqlAnalysisError`` (42883), both raised here, before the procedure does anything.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlext.errors import ProcedureTargetError, SqlError
from sqlext.execute.planning import CallProcedure, Plan, Planner, PlannerContext
from sqlext.execute.procedures.registry import bind_arguments, resolve
from sqlext.parse import ast
from sqlext.parse.splitter import Statement


def located_at(error: SqlError, stmt: Statement) -> SqlError:
    """Give an error raised away from the parser the statement's position (if it has none)."""
    if error.line is None:
        error.line, error.column = stmt.line, stmt.column
    return error


def located_in_call(error: SqlError, argument_at: Mapping[str, int], stmt: Statement) -> SqlError:
    """A procedure's error, located: a ``ProcedureTargetError`` where its argument's value is
    written (``argument_at``, by parameter name), any other at the statement."""
    if not isinstance(error, ProcedureTargetError) or error.argument not in argument_at:
        return located_at(error, stmt)
    located = ProcedureTargetError.at(error.message, stmt.text, argument_at[error.argument], line=stmt.line,
                                      column=stmt.column, sqlstate=error.sqlstate)
    located.argument = error.argument
    return located


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


def argument_offsets(n: ast.Call, parameters: list[str], text: str) -> dict[str, int]:
    """Where each given argument's value is written in the CALL's ``text``, by parameter name (as
    written for a named one); empty when the text cannot be split as the parser saw it (a comment
    or an unusual spelling: no guess)."""
    starts = argument_starts(text)
    if len(starts) != len(n.args):
        return {}
    offsets: dict[str, int] = {}
    for i, arg in enumerate(n.args):
        name = arg.name.lower() if arg.name is not None else (parameters[i] if i < len(parameters) else None)
        if name is not None:
            offsets.setdefault(name, starts[i])
    return offsets


def call(ctx: PlannerContext, n: ast.Call, stmt: Statement) -> Plan:
    """CALL [sys.]name(args): the procedure, its arguments bound and checked, and what it does."""
    try:
        procedure = resolve(n.name, n.qualifier)
        values = bind_arguments(procedure, n.args)
    except SqlError as e:
        raise located_at(e, stmt) from None
    offsets = argument_offsets(n, [p.name for p in procedure.parameters], stmt.text)
    try:
        work = procedure.plan(ctx, values)
    except SqlError as e:
        raise located_in_call(e, offsets, stmt) from None
    return CallProcedure(procedure, values, offsets, f"Procedure {procedure.name} finished", work)


PLANNERS: dict[type, Planner] = {ast.Call: call}
