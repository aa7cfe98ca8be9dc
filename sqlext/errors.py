"""Typed SQL errors: every failure of a SQL statement carries a SQLSTATE and a source position.

Invariants:
* every error raised for bad SQL text is a :class:`SqlError` (never a lark or Python error);
* ``line`` and ``column`` are 1-based and relative to the whole script the user sent;
* ``snippet`` is the source line the error points into (``snippet_column`` is the script column
  of its first character, so the caret lands under ``column`` even for a partial line);
* :func:`sqlstate_for` gives the SQLSTATE the CLI exit code and the HiveServer2 status report,
  for SQL errors and for the engine's own errors alike.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from engine.errors import (
    AlreadyExistsError,
    CommitConflictError,
    CorruptMetadataError,
    DyntableError,
    InvalidArgumentError,
    NoSuchColumnError,
    NotFoundError,
    StorageError,
    UnsupportedTableError,
)

SYNTAX_ERROR = "42601"
ANALYSIS_ERROR = "42000"
UNDEFINED_TABLE = "42P01"
UNDEFINED_COLUMN = "42703"
DUPLICATE_OBJECT = "42710"
FEATURE_NOT_SUPPORTED = "0A000"
INVALID_PARAMETER_VALUE = "22023"
SERIALIZATION_FAILURE = "40001"
DATA_CORRUPTED = "XX001"
SYSTEM_ERROR = "58030"
STATEMENT_TOO_COMPLEX = "54001"
INTERNAL_ERROR = "XX000"

# Long source lines are cut around the caret so a message stays readable in a terminal.
_SNIPPET_WIDTH = 100


class SqlError(DyntableError):
    """A SQL statement failed; the message says what was wrong and where."""

    default_sqlstate: ClassVar[str] = ANALYSIS_ERROR

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        snippet: str | None = None,
        snippet_column: int = 1,
        sqlstate: str | None = None,
    ) -> None:
        """Create the error.

        Args:
            message: what went wrong and what to do, lower-case, without position.
            line: 1-based line in the script, if known.
            column: 1-based column in the script, if known.
            snippet: the source line the error points into.
            snippet_column: the script column of ``snippet[0]`` (1 for a whole line).
            sqlstate: overrides the class's SQLSTATE (e.g. 42P01 for an unknown table).
        """
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.snippet = snippet
        self.snippet_column = snippet_column
        self.sqlstate = sqlstate or self.default_sqlstate

    @classmethod
    def at(
        cls,
        message: str,
        source: str,
        offset: int,
        *,
        line: int = 1,
        column: int = 1,
        sqlstate: str | None = None,
    ) -> Self:
        """An error pointing at ``source[offset]``.

        Args:
            message: what went wrong and what to do.
            source: the statement (or script) text.
            offset: index into ``source`` of the offending character.
            line: the script line where ``source`` starts.
            column: the script column where ``source`` starts.
            sqlstate: overrides the class's SQLSTATE.

        Returns:
            The error, with script-relative line, column and snippet.
        """
        offset = max(0, min(offset, len(source)))
        before = source[:offset]
        row = before.count("\n")
        line_start = before.rfind("\n") + 1
        line_end = source.find("\n", offset)
        snippet = source[line_start : len(source) if line_end < 0 else line_end]
        base = column if row == 0 else 1
        return cls(
            message,
            line=line + row,
            column=base + offset - line_start,
            snippet=snippet.rstrip("\r"),
            snippet_column=base,
            sqlstate=sqlstate,
        )

    def with_source(self, script: str) -> Self:
        """Replace the snippet by the whole script line (the statement alone may hold only part of it)."""
        if self.line is not None:
            lines = script.splitlines()
            if 0 < self.line <= len(lines):
                self.snippet = lines[self.line - 1]
                self.snippet_column = 1
        return self

    def __str__(self) -> str:
        parts = [self.message]
        if self.line is not None and self.column is not None:
            parts.append(f"  line {self.line}, column {self.column}")
            if self.snippet is not None:
                text, caret = _window(self.snippet, self.column - self.snippet_column)
                parts.append(f"  {text}")
                parts.append("  " + " " * caret + "^")
        return "\n".join(parts)


def _window(snippet: str, caret: int) -> tuple[str, int]:
    """Cut ``snippet`` to at most ``_SNIPPET_WIDTH`` characters around ``caret``; tabs become spaces."""
    snippet = snippet.replace("\t", " ")
    caret = max(0, min(caret, len(snippet)))
    if len(snippet) <= _SNIPPET_WIDTH:
        return snippet, caret
    start = max(0, min(caret - _SNIPPET_WIDTH // 2, len(snippet) - _SNIPPET_WIDTH))
    text = snippet[start : start + _SNIPPET_WIDTH]
    shift = start
    if start > 0:
        text = "..." + text
        shift -= 3
    if start + _SNIPPET_WIDTH < len(snippet):
        text += "..."
    return text, caret - shift


class SqlParseError(SqlError):
    """The statement is not valid SQL: fix the syntax at the position shown."""

    default_sqlstate = SYNTAX_ERROR


class SqlAnalysisError(SqlError):
    """The statement is well formed but names something unknown or breaks a rule: fix the name or rule."""

    default_sqlstate = ANALYSIS_ERROR


class UnsupportedStatementError(SqlError):
    """dyntable understands the statement but does not support it: use the alternative the message names."""

    default_sqlstate = FEATURE_NOT_SUPPORTED


class StatementTooComplexError(SqlParseError):
    """The statement nests too deeply to parse (e.g. thousands of parentheses): simplify it."""

    default_sqlstate = STATEMENT_TOO_COMPLEX


class ProcedureArgumentError(SqlError):
    """A CALL has a missing, extra, duplicated or mistyped argument: fix the argument list."""

    default_sqlstate = INVALID_PARAMETER_VALUE


class ProcedureTargetError(SqlAnalysisError):
    """A CALL argument names something its table does not have (a snapshot): ``argument`` is which."""

    def __init__(self, message: str, *, argument: str = "", **position: Any) -> None:
        super().__init__(message, **position)
        self.argument = argument


def sqlstate_for(error: BaseException) -> str:
    """The SQLSTATE to report for ``error``.

    Args:
        error: any exception raised while running a statement.

    Returns:
        The five-character SQLSTATE: the SQL error's own, or the engine error kind's mapping
        (not found 42P01, unknown column 42703, exists 42710, unsupported table feature 0A000,
        invalid 22023, conflict 40001, corrupt XX001, storage 58030), 54001 for a statement too
        deep to parse (RecursionError), or XX000 for anything else.
    """
    if isinstance(error, SqlError):
        return error.sqlstate
    own = getattr(type(error), "sqlstate", None)  # an engine error kind with its own SQLSTATE (72000)
    if isinstance(own, str):
        return own
    if isinstance(error, RecursionError):
        return STATEMENT_TOO_COMPLEX
    if isinstance(error, NoSuchColumnError):
        return UNDEFINED_COLUMN
    if isinstance(error, NotFoundError):
        return UNDEFINED_TABLE
    if isinstance(error, AlreadyExistsError):
        return DUPLICATE_OBJECT
    if isinstance(error, UnsupportedTableError):
        return FEATURE_NOT_SUPPORTED
    if isinstance(error, InvalidArgumentError):
        return INVALID_PARAMETER_VALUE
    if isinstance(error, CommitConflictError):
        return SERIALIZATION_FAILURE
    if isinstance(error, CorruptMetadataError):
        return DATA_CORRUPTED
    if isinstance(error, StorageError):
        return SYSTEM_ERROR
    return INTERNAL_ERROR
