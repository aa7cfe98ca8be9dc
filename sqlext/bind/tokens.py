"""Token-level helpers of the binder: which sqlglot tokens can be part of a table name, and where
the query of an ``INSERT OVERWRITE [LOCAL] DIRECTORY`` statement starts."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import Token, TokenType

WORD = re.compile(r"[A-Za-z0-9_]+")
NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER})

__all__ = ["NAME_TOKENS", "WORD", "directory_query_start", "is_name", "word_token"]


def directory_query_start(sql: str) -> int:
    """Where the query of ``INSERT OVERWRITE [LOCAL] DIRECTORY ... <query>`` starts (0: not such)."""
    tokens = sqlglot.tokenize(sql, read="spark")
    words = [t.text.upper() for t in tokens[:4]]
    if "DIRECTORY" not in words:
        return 0
    depth = 0
    for i in range(words.index("DIRECTORY") + 1, len(tokens)):
        text = tokens[i].text.upper() if tokens[i].token_type != TokenType.STRING else ""
        nxt = tokens[i + 1].text.upper() if i + 1 < len(tokens) else ""
        if depth == 0 and (
            text in ("SELECT", "WITH", "FROM", "VALUES", "TABLE")
            or (text == "(" and nxt in ("SELECT", "WITH"))
        ):
            return tokens[i].start
        depth += {"(": 1, ")": -1}.get(text, 0)
    return 0


def is_name(tok: Token) -> bool:
    """Whether a token can be part of a table name (a word or a quoted identifier)."""
    if tok.token_type in NAME_TOKENS:
        return True
    kind = tok.token_type.name
    return "STRING" not in kind and kind != "NUMBER" and WORD.fullmatch(tok.text) is not None


def word_token(m: re.Match[str]) -> Token:
    return Token(TokenType.VAR, m.group(), start=m.start(), end=m.end() - 1)
