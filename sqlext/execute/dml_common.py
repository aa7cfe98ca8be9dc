"""What the row-level statements (DELETE, UPDATE, MERGE, TRUNCATE) share: the prefix of the
helper columns they add, typed errors, and their result rows (Spark's ``num_*_rows``) as ``Rows``
plans. Used by the planners (``row_level``) and by the Spark side (``row_level_writes``, ``dml``,
``merge_plan``, ``dml_deletion_vectors``); nothing here needs Spark or the session."""

from __future__ import annotations

import pyarrow as pa

from engine import Table
from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import Rows
from sqlext.parse.splitter import Statement

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


def count_rows(count: int, verb: str) -> Rows:
    """DELETE's / UPDATE's result: the rows affected."""
    table = pa.table({"num_affected_rows": pa.array([count], pa.int64())}, schema=_COUNT_SCHEMA)
    return Rows(table, f"{count} row(s) {verb}")


def column_names(table: Table) -> list[str]:
    return list(table.schema.field_names)


def merge_rows(counts: dict[str, int]) -> Rows:
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
    return Rows(
        result,
        f"{total} row(s) affected ({counts['update']} updated, {counts['delete']} "
        f"deleted, {counts['insert']} inserted)",
    )
