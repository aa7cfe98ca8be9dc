"""What the row-level statements (DELETE, UPDATE, MERGE, TRUNCATE) share: the prefix of the
helper columns they add, typed errors, and their result rows (Spark's ``num_*_rows``).
Used by ``dml`` (copy-on-write and key tables), ``merge_plan`` and ``dml_deletion_vectors``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from engine import Table
from sqlext.errors import SqlAnalysisError
from sqlext.execute.common import rows
from sqlext.execute.results import StatementResult
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.session import SqlSession

HELPER = "__dyn_"  # prefix of the helper columns the row-level statements add (never written)
_COUNT_SCHEMA = pa.schema([("num_affected_rows", pa.int64())])
_MERGE_SCHEMA = pa.schema(
    [
        ("num_affected_rows", pa.int64()),
        ("num_updated_rows", pa.int64()),
        ("num_deleted_rows", pa.int64()),
        ("num_inserted_rows", pa.int64()),
    ]
)


def analysis_error(stmt: Statement, message: str, sqlstate: str) -> SqlAnalysisError:
    return SqlAnalysisError(message, line=stmt.line, column=stmt.column, sqlstate=sqlstate)


def _message(count: int, verb: str) -> str:
    return f"{count} row(s) {verb}"


def count_result(s: SqlSession, stmt: Statement, count: int, verb: str) -> StatementResult:
    return rows(
        s,
        stmt,
        pa.table({"num_affected_rows": pa.array([count], pa.int64())}, schema=_COUNT_SCHEMA),
        _message(count, verb),
    )


def column_names(table: Table) -> list[str]:
    return list(table.schema.field_names)


def merge_result(s: SqlSession, stmt: Statement, counts: dict[str, int]) -> StatementResult:
    """MERGE's result row: affected, updated, deleted and inserted rows."""
    total = counts["update"] + counts["delete"] + counts["insert"]
    result = pa.table(
        {
            "num_affected_rows": [total],
            "num_updated_rows": [counts["update"]],
            "num_deleted_rows": [counts["delete"]],
            "num_inserted_rows": [counts["insert"]],
        },
        schema=_MERGE_SCHEMA,
    )
    return rows(
        s,
        stmt,
        result,
        f"{total} row(s) affected ({counts['update']} updated, {counts['delete']} "
        f"deleted, {counts['insert']} inserted)",
    )
