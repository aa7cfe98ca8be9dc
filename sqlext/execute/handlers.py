"""The statement table: which planner plans each dyntable statement (by AST node type)."""

from __future__ import annotations

from typing import Any

from sqlext.execute import (
    call,
    copy_into,
    ddl,
    describe,
    insert,
    merge_clauses,
    refs,
    row_level,
    session_stmts,
    show_extended,
    view_stmts,
)

# Every statement is planned over the narrow context (sqlext.execute.planning); the session's
# runner carries the plans out.
PLANNERS: dict[type, Any] = {
    **ddl.PLANNERS,
    **session_stmts.PLANNERS,
    **describe.PLANNERS,
    **insert.PLANNERS,
    **row_level.PLANNERS,
    **merge_clauses.PLANNERS,
    **call.PLANNERS,
    **copy_into.PLANNERS,
    **refs.PLANNERS,
    **view_stmts.PLANNERS,
    **show_extended.PLANNERS,
}
