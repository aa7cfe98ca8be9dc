"""Split a SQL script into statements and tell dyntable's statements from Spark's.

Also the one home of SQL's lexical rules shared by the parser's tokenizer: quoted text
('...', "...", `...`), `-- line` comments and `/* block */` comments (nested, as in Spark).

Invariants:
* a `;` ends a statement only outside quotes and comments;
* a statement's text runs from its first significant character to its last one: leading and
  trailing whitespace and comments are dropped, comments inside are kept, and optimizer hints
  (`/*+ ... */`) count as significant text;
* ``Statement.line``/``column`` (1-based) and ``offset`` (0-based) locate ``text[0]`` in the script;
* a quote or comment left open fails with :class:`SqlParseError` at its opening character;
* :func:`classify` only looks at the first few keywords; it never parses.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Literal

from sqlext.errors import SqlParseError, StatementTooComplexError

# Quoted text. Inside '...' and "..." a backslash escapes the next character (Spark's rule) and
# a doubled quote stands for itself (the ANSI rule); inside `...` only a doubled backquote does.
# Possessive quantifiers keep a long unterminated literal linear instead of backtracking.
_QUOTED = {
    "'": re.compile(r"'(?:[^'\\]++|\\.|'')*+'", re.S),
    '"': re.compile(r'"(?:[^"\\]++|\\.|"")*+"', re.S),
    "`": re.compile(r"`(?:[^`]++|``)*+`"),
}
_QUOTE_NAMES = {"'": "string literal", '"': "quoted string", "`": "quoted identifier"}
_COMMENT_MARK = re.compile(r"/\*|\*/")
_SPACE = re.compile(r"\s+")
# One step of the splitter: a run of plain characters, or the start of something special.
_STEP = re.compile(r"""[^\s'"`;/-]+|\s+|--|/\*|['"`;/-]""")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a script: its text (without the `;`) and where that text starts."""

    text: str
    line: int
    column: int
    offset: int


def quoted_end(text: str, pos: int) -> int:
    """The index just past the quoted text opening at ``text[pos]``, or -1 if it never closes."""
    m = _QUOTED[text[pos]].match(text, pos)
    return m.end() if m else -1


def comment_end(text: str, pos: int) -> int:
    """The index just past the (possibly nested) block comment opening at ``text[pos]``, or -1."""
    depth = 0
    for m in _COMMENT_MARK.finditer(text, pos):
        depth += 1 if m.group() == "/*" else -1
        if depth == 0:
            return m.end()
    return -1


def skip_trivia(text: str, pos: int, *, keep_hints: bool = False) -> int:
    """The index of the first character at or after ``pos`` that is not whitespace or a comment.

    Args:
        text: the SQL text.
        pos: where to start.
        keep_hints: stop at a `/*+` hint instead of skipping it.

    Returns:
        The index (``len(text)`` at the end). An unterminated block comment is returned as is,
        so that the caller reports it at its start.
    """
    n = len(text)
    while pos < n:
        ch = text[pos]
        if ch.isspace():
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        elif text.startswith("--", pos):
            nl = text.find("\n", pos)
            pos = n if nl < 0 else nl + 1
        elif text.startswith("/*", pos):
            if keep_hints and text.startswith("/*+", pos):
                return pos
            end = comment_end(text, pos)
            if end < 0:
                return pos
            pos = end
        else:
            return pos
    return pos


def _unterminated(script: str, pos: int) -> SqlParseError:
    what = "comment" if script.startswith("/*", pos) else _QUOTE_NAMES[script[pos]]
    closer = "*/" if what == "comment" else script[pos]
    return SqlParseError.at(f"unterminated {what}: add the closing {closer}", script, pos)


# Deeper nesting is refused before any parser sees it: the recursive parsers downstream (sqlglot,
# Spark's) would fail with a RecursionError or a JVM StackOverflowError instead of an answer.
MAX_NESTING = 200


def _nesting(script: str, pos: int, step: str, depth: int) -> int:
    """The nesting depth after ``step`` (at ``pos``); refuses a '(' beyond MAX_NESTING."""
    for i, c in enumerate(step):
        if c == "(":
            depth += 1
            if depth > MAX_NESTING:
                raise StatementTooComplexError.at(
                    f"statement too complex: parentheses nest more than {MAX_NESTING} deep; simplify it",
                    script, pos + i,
                )
        elif c == ")" and depth > 0:
            depth -= 1
    return depth


def split_statements(script: str) -> list[Statement]:
    """Split ``script`` on `;` outside quotes and comments.

    Args:
        script: any number of SQL statements separated by `;` (the last one may omit it).

    Returns:
        The non-empty statements in order, each located in the script.

    Raises:
        SqlParseError: a quote or block comment is never closed.
        StatementTooComplexError: parentheses nest deeper than :data:`MAX_NESTING` (54001).
    """
    line_starts = [0] + [m.end() for m in re.finditer("\n", script)]
    statements: list[Statement] = []
    start = -1  # first significant character of the current statement
    last = -1  # just past its last significant character
    pos, n = 0, len(script)
    depth = 0  # parenthesis nesting of the current statement, outside quotes and comments

    def emit() -> None:
        row = bisect.bisect_right(line_starts, start) - 1
        statements.append(Statement(script[start:last], row + 1, start - line_starts[row] + 1, start))

    while pos < n:
        step = _STEP.match(script, pos).group()  # type: ignore[union-attr]
        ch = step[0]
        if ch.isspace():
            pos += len(step)
            continue
        if step == "--":
            nl = script.find("\n", pos)
            pos = n if nl < 0 else nl + 1
            continue
        if step == ";":
            if start >= 0:
                emit()
            start = last = -1
            depth = 0
            pos += 1
            continue
        if step == "/*":
            end = comment_end(script, pos)
            if end < 0:
                raise _unterminated(script, pos)
            if not script.startswith("/*+", pos):
                pos = end
                continue
        elif ch in _QUOTED:
            end = quoted_end(script, pos)
            if end < 0:
                raise _unterminated(script, pos)
        else:
            end = pos + len(step)
            if "(" in step or ")" in step:
                depth = _nesting(script, pos, step, depth)
        if start < 0:
            start = pos
        last = pos = end
    if start >= 0:
        emit()
    return statements


# First keywords of the statements dyntable parses itself; any other start goes to Spark.
_OURS_ALWAYS = frozenset(
    {"USE", "INSERT", "DELETE", "UPDATE", "MERGE", "TRUNCATE", "SET", "RESET", "CALL", "CACHE", "UNCACHE"}
)
_OURS_AFTER = {
    "COPY": frozenset({"INTO"}),
    "CREATE": frozenset({"TABLE", "DATABASE", "SCHEMA"}),
    "DROP": frozenset({"TABLE", "DATABASE", "SCHEMA", "VIEW"}),
    "ALTER": frozenset({"TABLE"}),
    "SHOW": frozenset({"TABLES", "VIEWS", "DATABASES", "SCHEMAS", "PARTITIONS", "JOBS", "TAGS", "BRANCHES",
                       "CREATE", "TBLPROPERTIES", "TABLE"}),
    "STOP": frozenset({"JOB"}),
}
# CREATE [OR REPLACE] [[GLOBAL] TEMP[ORARY]] VIEW: views may read managed tables.
_VIEW_CREATE = re.compile(r"(?:OR REPLACE )?(?:(?:GLOBAL )?TEMP(?:ORARY)? )?VIEW\b")
# CREATE TEMPORARY VIEW v USING <source> OPTIONS (...): a view over a Spark data source, Spark's.
_VIEW_USING = re.compile(r"\bVIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?[\w.`]+\s+(?:\([^)]*\)\s*)?USING\b", re.I)
# DESCRIBE is ours unless it describes something only Spark knows.
_SPARK_DESCRIBE = frozenset(
    {"FUNCTION", "QUERY", "SELECT", "WITH", "VALUES", "FROM", "CATALOG", "MAP", "REDUCE"}
)


def leading_words(text: str, count: int) -> list[str]:
    """Up to ``count`` upper-cased keywords at the start of ``text``, skipping whitespace and comments."""
    words: list[str] = []
    pos = 0
    while len(words) < count:
        pos = skip_trivia(text, pos)
        m = _WORD.match(text, pos)
        if not m:
            break
        words.append(m.group().upper())
        pos = m.end()
    return words


def classify(text: str) -> Literal["dyntable", "spark"]:
    """Whether a statement is one of dyntable's (parsed by the Lark grammar) or Spark's (passed through).

    Args:
        text: one statement.

    Returns:
        ``"dyntable"`` for CREATE/DROP/ALTER TABLE, CREATE/DROP DATABASE|SCHEMA, CREATE/DROP VIEW,
        USE, SHOW TABLES/VIEWS/DATABASES/CREATE TABLE/PARTITIONS/JOBS/TAGS/BRANCHES, SHOW TABLE
        EXTENDED, DESCRIBE,
        INSERT, DELETE, UPDATE, MERGE, TRUNCATE, SET, RESET, CALL, CACHE/UNCACHE TABLE, COPY INTO and
        STOP JOB;
        ``"spark"`` for everything else (SELECT, WITH, VALUES, EXPLAIN, functions, ALTER VIEW,
        INSERT OVERWRITE DIRECTORY, ...).
    """
    words = leading_words(text, 6)
    if not words:
        return "spark"
    first, rest = words[0], words[1:]
    if first == "CREATE" and _VIEW_CREATE.match(" ".join(rest)):
        return "spark" if _VIEW_USING.search(text) else "dyntable"
    if first in _OURS_ALWAYS:
        if first == "INSERT" and rest[:1] == ["OVERWRITE"] and rest[1:2] in (["DIRECTORY"], ["LOCAL"]):
            return "spark"
        return "dyntable"
    if first in ("DESCRIBE", "DESC"):
        return "spark" if rest[:1] and rest[0] in _SPARK_DESCRIBE else "dyntable"
    if first in _OURS_AFTER and rest and rest[0] in _OURS_AFTER[first]:
        if first == "SHOW" and rest[0] == "CREATE" and rest[1:2] != ["TABLE"]:
            return "spark"
        if first == "SHOW" and rest[0] == "TABLE" and rest[1:2] != ["EXTENDED"]:
            return "spark"
        return "dyntable"
    return "spark"
