"""Where an error lies in the user's text: Spark's positions mapped back, carets and snippets.

One job: turn an error raised while running a statement (a ``SqlError`` without a position, an
engine error, Spark's parse/analysis error about the SQL the binder produced, a worker's error
wrapped by Spark) into a typed ``SqlError`` whose line, column and snippet point into the
statement as the user wrote it. Spark's own positions in generated SQL are never shown.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pyspark.errors import PySparkException

from engine import DyntableError
from sqlext.errors import SqlAnalysisError, SqlError, SqlParseError, sqlstate_for
from sqlext.parse.splitter import Statement

if TYPE_CHECKING:
    from sqlext.bind.rewrite import BoundQuery


# "module.ErrorClass: message" lines of the Python tracebacks Spark wraps in its own error: a
# dyntable error raised in a task, or the Spark error a foreachBatch function (a streaming INSERT) hit.
_WORKER_ERROR = re.compile(r"^(?:engine\.errors\.|sqlext\.errors\.)?(\w+(?:Error|Exception)): (.+)$", re.M)
_SPARK_POSITION = re.compile(r"line (\d+),? pos (\d+)")
_SPARK_POSITION_TAIL = re.compile(r"(?:; line \d+ pos \d+;?|\s*\(line \d+, pos \d+\))\s*$")
_NESTED_SPARK_ERROR = re.compile(
    r"^pyspark\.errors\.exceptions\.\w+\.\w+: (\[[\w.]+\] .+?)(?: SQLSTATE: (\w{5}))?\s*$", re.M
)


def in_view(error: SqlError, bound: BoundQuery | None) -> SqlError:
    """Say so when Spark's error lies inside a view's query (it points at the view's name)."""
    if bound is None or not bound.views or error.snippet is None or error.column is None:
        return error
    at = error.snippet[error.column - error.snippet_column :]
    for view in bound.views:
        for name in (view.label, view.name):
            if re.match(re.escape(name) + r"(?![\w$])", at, re.I):
                error.message = f"view {view.label} cannot be read: {error.message}"
                error.args = (error.message,)
                return error
    return error


def is_syntax_error(e: PySparkException) -> bool:
    try:
        state = e.getSqlState() or ""
    except Exception:  # noqa: BLE001
        state = ""
    return state.startswith("42601") or "PARSE_SYNTAX_ERROR" in str(e)


def spark_names(e: PySparkException) -> list[str]:
    """The object names a Spark error is about (an unresolved column, table or function)."""
    try:
        params = e.getMessageParameters() or {}
    except Exception:  # noqa: BLE001
        return []
    names = []
    for key in ("objectName", "relationName", "routineName", "colName", "columnName", "fieldName"):
        if key in params:
            names.append(params[key])
    return names


_QUOTED_NAME = re.compile(r"`((?:[^`]|``)+)`|'([^'\s][^']*)'")


def _name_candidates(names: list[str]) -> list[str]:
    """Names to look for in the statement: each as written, then its last dotted part."""
    out: list[str] = []
    for name in names:
        parts = [a or b for a, b in _QUOTED_NAME.findall(name)] or [name]
        parts = [p.replace("``", "`") for p in parts]
        for candidate in (".".join(parts), parts[-1], *(p.split(".")[-1] for p in parts)):
            if candidate and candidate not in out:
                out.append(candidate)
    return out


def located(error: SqlError, stmt: Statement, names: list[str] | None = None) -> SqlError:
    """``error`` pointing into the user's statement, with the statement's whole line as snippet.

    An error that only knows its statement (an engine error in DDL or CALL, Spark's error in SQL
    an executor generated) points at the first name it quotes that the statement contains.
    Spark's position in generated SQL (``line 1 pos 75``) is dropped: it is not the user's.
    """
    message = _SPARK_POSITION_TAIL.sub("", error.message).rstrip(" ;")
    message = re.sub(r"(SQLSTATE: \w{5}); line \d+ pos \d+;?", r"\1", message)
    offset: int | None = None
    unlocated = error.line is None or (error.line, error.column) == (stmt.line, stmt.column)
    if error.snippet is None and unlocated:
        quoted = [a or b for a, b in _QUOTED_NAME.findall(message)]
        for candidate in _name_candidates(list(names or []) + quoted):
            m = re.search(r"(?<![\w$])" + re.escape(candidate) + r"(?![\w])", stmt.text, re.I)
            if m is not None:
                offset = m.start()
                break
        if offset is None:
            offset = 0
    elif error.line is not None and error.column is not None and (
        error.snippet is None or error.snippet_column != 1
    ):
        lines = stmt.text.split("\n")
        row = error.line - stmt.line
        if 0 <= row < len(lines):
            offset = sum(len(x) + 1 for x in lines[:row]) + error.column - (stmt.column if row == 0 else 1)
            if not 0 <= offset <= len(stmt.text):
                offset = None
    if offset is None:
        if message != error.message:
            error.message = message
            error.args = (message,)
        return error
    return type(error).at(
        message, stmt.text, offset, line=stmt.line, column=stmt.column, sqlstate=error.sqlstate
    )


def worker_error(text: str) -> tuple[str, str] | None:
    """(SQLSTATE, message) of the dyntable error a Python worker raised inside a Spark job, if any."""
    import engine.errors as engine_errors

    found = None
    for m in _WORKER_ERROR.finditer(text):
        cls = getattr(engine_errors, m.group(1), None)
        if isinstance(cls, type) and issubclass(cls, DyntableError):
            found = (sqlstate_for(cls.__new__(cls)), m.group(2).strip())
    if found is None:
        nested = list(_NESTED_SPARK_ERROR.finditer(text))
        if nested:
            found = (nested[-1].group(2) or "XX000", nested[-1].group(1).strip())
    return found


def _spark_offset(e: PySparkException, bound: str) -> int | None:
    """Where in the SQL text Spark ran its error points.

    A syntax error's "line L pos P" (its query context points at the statement's start), else
    the query context, else "line L pos P".
    """
    m = _SPARK_POSITION.search(str(e))
    if m is not None and is_syntax_error(e):
        lines = bound.split("\n")
        row = int(m.group(1)) - 1
        if 0 <= row < len(lines):
            return sum(len(line) + 1 for line in lines[:row]) + min(int(m.group(2)), len(lines[row]))
    try:
        contexts = e.getQueryContext()
        if contexts and contexts[0].contextType().name == "SQL" and contexts[0].startIndex() >= 0:
            return int(contexts[0].startIndex())
    except Exception:  # noqa: BLE001 - an error without a usable context
        pass
    m = _SPARK_POSITION.search(str(e))
    if m is None:
        return None
    lines = bound.split("\n")
    row = int(m.group(1)) - 1
    if not 0 <= row < len(lines):
        return None
    return sum(len(line) + 1 for line in lines[:row]) + min(int(m.group(2)), len(lines[row]))


def _source_offset(source: str, bound: str, offset: int) -> int:
    """The offset in ``source`` of ``bound[offset]`` (the binder only replaced table references)."""
    import difflib

    for tag, s1, _s2, b1, b2 in difflib.SequenceMatcher(None, source, bound, autojunk=False).get_opcodes():
        if b1 <= offset < b2 or (offset == b2 == len(bound)):
            return s1 + (offset - b1 if tag == "equal" else 0)
    return len(source)


def spark_error(
    e: PySparkException, stmt: Statement, *, source: str | None = None, bound: str | None = None
) -> SqlError:
    """Turn a Spark analysis/parse error into dyntable's typed SQL error.

    With the statement's ``source`` text and the ``bound`` text Spark ran, the error points at
    the offending token of the user's statement (script-relative line and column, with caret).
    """
    state = None
    try:
        state = e.getSqlState()
    except Exception:  # noqa: BLE001
        pass
    worker = worker_error(str(e))
    if worker is not None:  # dyntable's own error raised in a task: report it, not Spark's wrapper
        return SqlAnalysisError(worker[1], line=stmt.line, column=stmt.column, sqlstate=worker[0])
    message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    syntax = (state or "").startswith("42601") or "PARSE_SYNTAX_ERROR" in str(e)
    cls = SqlParseError if syntax else SqlAnalysisError
    offset = _spark_offset(e, bound) if source is not None and bound is not None else None
    if source is None or bound is None or offset is None:
        return cls(message, line=stmt.line, column=stmt.column, sqlstate=state or "42000")
    # Spark's own position is relative to the bound text: drop it, the error carries the real one.
    message = _SPARK_POSITION_TAIL.sub("", message).rstrip(" ;")
    at = _source_offset(source, bound, offset)
    return cls.at(message, source, at, line=stmt.line, column=stmt.column, sqlstate=state or "42000")
