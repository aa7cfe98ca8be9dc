"""The shared half of the parse-tree builder: helpers, names, literals, options and partitions.

Invariants:
* every check the grammar cannot express raises a :class:`SqlError` located at the offending
  token (through the error factory the parser passes in), never a Python error;
* names and strings travel as lark ``Token`` (a ``str`` that knows its position) until they are
  stored in a node, where they become plain ``str``;
* string literals are unescaped the way Spark does (:func:`unquote_string`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from lark import Token, Transformer, v_args

from engine.errors import InvalidArgumentError
from sqlext.errors import SqlError, SqlParseError
from sqlext.parse import ast

# Builds an error located at a statement-relative offset: (message, offset, error class).
ErrorFactory = Callable[[str, int, type[SqlError]], SqlError]

_CLAUSE_NAMES = {
    "comment": "COMMENT",
    "location": "LOCATION",
    "partitioned_by": "PARTITIONED BY",
    "clustered_by": "CLUSTERED BY",
    "using": "USING",
}
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def unquote_string(literal: str) -> str:
    """The value of a '...' or "..." literal: doubled quotes and backslash escapes resolved.

    Backslash escapes follow Spark: \\n \\t \\r \\b \\0 \\Z are control characters, \\% and \\_ keep
    their backslash (they are LIKE escapes), any other escaped character stands for itself.
    """
    quote, body = literal[0], literal[1:-1]
    if "\\" not in body:
        return body.replace(quote * 2, quote)
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch == "\\" and i + 1 < n:
            nxt = body[i + 1]
            out.append("\\" + nxt if nxt in "%_" else _ESCAPES.get(nxt, nxt))
            i += 2
        elif ch == quote and i + 1 < n and body[i + 1] == quote:
            out.append(quote)
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _option_text(value: object) -> str:
    """An option value as the string Paimon stores: booleans lower-case, numbers as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@v_args(inline=True)
class BuilderBase(Transformer[Token, Any]):
    """Helpers and the rules shared by many statements (names, literals, options, partitions)."""

    def __init__(self, error: ErrorFactory, base_offset: int) -> None:
        super().__init__()
        self._error = error
        self._base_offset = base_offset

    # ------------------------------------------------------------ helpers
    def _fail(self, message: str, at: Any, cls: type[SqlError] = SqlParseError) -> SqlError:
        pos = getattr(at, "start_pos", None)
        return self._error(message, pos if isinstance(pos, int) else 0, cls)

    def _fragment(self, tok: Token) -> ast.SqlFragment:
        return ast.SqlFragment(str(tok), self._base_offset + (tok.start_pos or 0), tok.line, tok.column)

    def _once(self, clauses: list[tuple[Any, ...]], allowed: frozenset[str]) -> dict[str, Any]:
        """Collect tagged clauses; each kind at most once, option lists merged without duplicate keys."""
        seen: dict[str, Any] = {}
        options: dict[str, str] = {}
        for kind, value, at in clauses:
            if kind == "options":
                self._merge_options(options, value)
                continue
            if kind not in allowed:
                raise self._fail(f"{_CLAUSE_NAMES[kind]} is not allowed here", at)
            if kind in seen:
                raise self._fail(f"{_CLAUSE_NAMES[kind]} is given twice: keep one", at)
            seen[kind] = value
        seen["options"] = options
        return seen

    def _merge_options(self, into: dict[str, str], pairs: list[tuple[Token, str]]) -> None:
        for key, value in pairs:
            if str(key) in into:
                raise self._fail(f"option {str(key)!r} is given twice: keep one", key)
            into[str(key)] = value

    def _table(self, parts: list[Token]) -> ast.TableName:
        first = parts[0]
        try:
            return ast.TableName.from_parts(
                [str(p) for p in parts],
                line=first.line,
                column=first.column,
                offset=self._base_offset + (first.start_pos or 0),
            )
        except InvalidArgumentError as e:
            raise self._fail(str(e), first) from None

    def _database(self, parts: list[Token]) -> tuple[str, str | None]:
        for part in parts:
            if not str(part).strip() or any(c in str(part) for c in "/\\$"):
                raise self._fail(f"{str(part)!r} is not a valid database name", part)
        if len(parts) > 2:
            raise self._fail("a database name has at most two parts: [catalog.]database", parts[0])
        return str(parts[-1]), (str(parts[0]) if len(parts) == 2 else None)

    # ------------------------------------------------------------ shared pieces
    def start(self, node: Any) -> Any:
        return node

    def name(self, tok: Token) -> Token:
        text = str(tok)
        if text.startswith("`"):
            text = text[1:-1].replace("``", "`")
        return Token.new_borrow_pos("IDENT", text, tok)

    def qualified_name(self, *names: Token) -> list[Token]:
        return list(names)

    def table_name(self, parts: list[Token]) -> ast.TableName:
        return self._table(parts)

    def name_list(self, *names: Token) -> tuple[str, ...]:
        seen: set[str] = set()
        for n in names:
            if str(n).lower() in seen:
                raise self._fail(f"column {str(n)!r} is listed twice", n)
            seen.add(str(n).lower())
        return tuple(str(n) for n in names)

    def string(self, tok: Token) -> Token:
        return Token.new_borrow_pos("STRING", unquote_string(str(tok)), tok)

    def number(self, sign: str | None, tok: Token) -> int | Decimal | float:
        text = str(tok)
        value: int | Decimal | float
        if text.isdigit():
            value = int(text)
        elif "e" in text.lower():
            value = float(text)
        else:
            value = Decimal(text)
        return -value if sign == "-" else value

    def minus(self) -> str:
        return "-"

    def plus(self) -> str:
        return "+"

    def integer(self, tok: Token) -> int:
        if not str(tok).isdigit():
            raise self._fail(f"expected a whole number, found {str(tok)!r}", tok)
        return int(str(tok))

    def true(self) -> bool:
        return True

    def false(self) -> bool:
        return False

    def null(self) -> None:
        return None

    def date_literal(self, tok: Token) -> date:
        try:
            return date.fromisoformat(unquote_string(str(tok)))
        except ValueError:
            raise self._fail(f"{str(tok)} is not a date: use DATE 'yyyy-mm-dd'", tok) from None

    def timestamp_literal(self, tok: Token) -> datetime:
        try:
            return datetime.fromisoformat(unquote_string(str(tok)))
        except ValueError:
            raise self._fail(
                f"{str(tok)} is not a timestamp: use TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.fff]'", tok
            ) from None

    def property(self, key: Token | list[Token], value: object) -> tuple[Token, str]:
        if isinstance(key, list):
            key = Token.new_borrow_pos("IDENT", ".".join(str(k) for k in key), key[0])
        return key, _option_text(value)

    def property_list(self, *pairs: tuple[Token, str]) -> list[tuple[Token, str]]:
        merged: dict[str, str] = {}
        self._merge_options(merged, list(pairs))
        return list(pairs)

    def key_list(self, *keys: Token | list[Token]) -> tuple[str, ...]:
        return tuple(".".join(str(p) for p in k) if isinstance(k, list) else str(k) for k in keys)

    def if_exists(self) -> bool:
        return True

    def if_not_exists(self) -> bool:
        return True

    def partition_spec(self, *entries: tuple[ast.PartitionEntry, Token]) -> ast.PartitionSpec:
        seen: set[str] = set()
        for entry, column in entries:
            if entry.column.lower() in seen:
                raise self._fail(f"partition column {entry.column!r} is given twice", column)
            seen.add(entry.column.lower())
        return ast.PartitionSpec(tuple(entry for entry, _ in entries))

    def static_partition(self, column: Token, value: ast.LiteralValue) -> tuple[ast.PartitionEntry, Token]:
        return ast.PartitionEntry(str(column), str(value) if isinstance(value, Token) else value), column

    def dynamic_partition(self, column: Token) -> tuple[ast.PartitionEntry, Token]:
        return ast.PartitionEntry(str(column), None, dynamic=True), column

    insert_partition = partition_spec

    def like_pattern(self, pattern: Token) -> str:
        return str(pattern)
