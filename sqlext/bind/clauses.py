"""The clauses a statement may write right after a managed table's name.

An ``/*+ OPTIONS('k' = 'v') */`` hint and a time-travel clause (``VERSION AS OF 3``,
``FOR SYSTEM_TIME AS OF '2024-01-01 00:00:00'``, ``TIMESTAMP AS OF 1700000000``) follow a name in
either order; :class:`NameClauses` reads both from the statement's original text and its tokens,
returning their values and the spans the binder cuts from the output. Errors carry the clause's
position in the statement.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal

import sqlglot
from sqlglot import Token, TokenType, exp
from sqlglot.errors import TokenError

from sqlext.bind.scope import TimeTravel
from sqlext.errors import SqlAnalysisError, SqlError, SqlParseError, UnsupportedStatementError
from sqlext.parse.names import TableName
from sqlext.parse.splitter import comment_end, skip_trivia

OPTIONS_HINT = re.compile(r"\s*OPTIONS\s*\((.*)\)\s*", re.I | re.S)

#: How a clause reports an error: its class, message, offset in the statement, and SQLSTATE.
ErrorAt = Callable[..., SqlError]


def token_index(tokens: list[Token], pos: int) -> int:
    """Index of the first token starting at or after ``pos``."""
    for i, tok in enumerate(tokens):
        if tok.start >= pos:
            return i
    return len(tokens)


class NameClauses:
    """Reads the OPTIONS hint and time-travel clause after one managed name of a statement."""

    def __init__(
        self, sql: str, tokens: list[Token], error: ErrorAt, has_tag: Callable[[TableName, str], bool]
    ) -> None:
        self.sql = sql
        self.tokens = tokens
        self.error = error
        self.has_tag = has_tag  # a tag named like a number wins over the snapshot id, as in Paimon

    def read(
        self, node: exp.Table, pos: int, name: TableName
    ) -> tuple[list[tuple[int, int]], dict[str, str], TimeTravel | None]:
        """The OPTIONS hint and time-travel clause after a managed name: what to cut, and their values."""
        removals: list[tuple[int, int]] = []
        options: dict[str, str] = {}
        travel: TimeTravel | None = None
        version = node.args.get("version")
        for _ in range(3):
            hint_start = skip_trivia(self.sql, pos, keep_hints=True)
            if self.sql.startswith("/*+", hint_start) and not options:
                hint_end = comment_end(self.sql, hint_start)
                body = self.sql[hint_start + 3 : hint_end - 2]
                m = OPTIONS_HINT.fullmatch(body)
                if m is None:
                    break  # another kind of hint: not ours, left in place
                options = self.hint_options(m.group(1), hint_start)
                removals.append((self.gap_start(pos, hint_start), hint_end))
                pos = hint_end
                continue
            if version is not None and travel is None:
                travel, clause_start, clause_end = self.time_travel(version, pos, name)
                removals.append((self.gap_start(pos, clause_start), clause_end))
                pos = clause_end
                continue
            break
        return removals, options, travel

    def gap_start(self, pos: int, start: int) -> int:
        """Where a cut that ends a clause starting at ``start`` begins: eat the blanks before it."""
        return pos if not self.sql[pos:start].strip() else start

    def time_travel(
        self, version: exp.Expression, pos: int, name: TableName
    ) -> tuple[TimeTravel, int, int]:
        i = token_index(self.tokens, pos)
        toks = self.tokens
        start = toks[i].start if i < len(toks) else pos

        def unsupported() -> SqlError:
            return self.error(
                UnsupportedStatementError,
                "time travel needs a literal: use VERSION AS OF <snapshot id> | '<tag>', or"
                " TIMESTAMP AS OF '<yyyy-MM-dd HH:mm:ss>' | <epoch>",
                start,
            )

        if i < len(toks) and toks[i].text.upper() == "FOR":
            i += 1
        if (
            i + 3 >= len(toks)
            or toks[i].text.upper() not in ("VERSION", "TIMESTAMP", "SYSTEM_TIME")
            or toks[i + 1].text.upper() != "AS"
            or toks[i + 2].text.upper() != "OF"
            or str(version.args.get("kind", "")).upper() != "AS OF"
        ):
            raise unsupported()
        i += 3
        value = version.args.get("expression")
        is_version = str(version.this).upper() == "VERSION"
        if isinstance(value, exp.Cast) and isinstance(value.this, exp.Literal) and not is_version:
            if toks[i].text.upper() != "TIMESTAMP" or i + 1 >= len(toks):
                raise unsupported()
            i += 1  # TIMESTAMP '...' typed literal
            value = value.this
        if not isinstance(value, exp.Literal) or i >= len(toks):
            raise unsupported()
        tok = toks[i]
        if tok.token_type not in (TokenType.STRING, TokenType.NUMBER):
            raise unsupported()
        end = tok.end + 1
        if not is_version and not value.is_string:
            # Spark casts a number to a timestamp as seconds since the epoch (fractions allowed).
            try:
                millis = int(Decimal(value.this) * 1000)
            except (ArithmeticError, ValueError):
                raise unsupported() from None
            return TimeTravel(timestamp_millis=millis), start, end
        if not is_version:
            return TimeTravel(timestamp=value.this), start, end
        if value.is_string:
            return TimeTravel(tag=value.this), start, end
        if not re.fullmatch(r"\d+", value.this):
            raise self.error(
                SqlAnalysisError,
                f"VERSION AS OF {value.this} is not a snapshot id: use a whole number or a tag name",
                tok.start,
            )
        if self.has_tag(name, value.this):  # Paimon: a tag named like the number wins
            return TimeTravel(tag=value.this), start, end
        return TimeTravel(snapshot_id=int(value.this)), start, end

    def hint_options(self, body: str, hint_start: int) -> dict[str, str]:
        """``'k' = 'v', ...`` of an OPTIONS hint as a dict."""
        malformed = self.error(
            SqlParseError, "malformed OPTIONS hint: use /*+ OPTIONS('key' = 'value', ...) */", hint_start
        )
        try:
            toks = sqlglot.tokenize(body, read="spark")
        except TokenError:
            raise malformed from None
        options: dict[str, str] = {}
        i = 0
        while i < len(toks):
            if (
                i + 2 >= len(toks)
                or toks[i].token_type != TokenType.STRING
                or toks[i + 1].token_type != TokenType.EQ
            ):
                raise malformed
            value = toks[i + 2]
            if value.token_type not in (TokenType.STRING, TokenType.NUMBER, TokenType.TRUE, TokenType.FALSE):
                raise malformed
            key = toks[i].text
            if key in options:
                raise self.error(
                    SqlParseError, f"option {key!r} is given twice in the hint: keep one", hint_start
                )
            boolean = value.token_type in (TokenType.TRUE, TokenType.FALSE)
            options[key] = value.text.lower() if boolean else value.text
            i += 3
            if i < len(toks):
                if toks[i].token_type != TokenType.COMMA or i + 1 == len(toks):
                    raise malformed
                i += 1
        if not options:
            raise malformed
        return options
