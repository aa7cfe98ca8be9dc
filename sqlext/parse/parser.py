"""Parse dyntable's own statements: a parser-driven tokenizer feeding Lark's LALR parser.

How it works: the grammar (``grammar/dyntable.lark``) is compiled once into an LALR table and
driven through Lark's interactive parser. Before each token the tokenizer asks the parser which
terminals it can take next, which gives three things a fixed lexer cannot:

* contextual keywords: a word is a keyword only where the parser takes that keyword, otherwise
  a name (so ``CREATE TABLE comment (date DATE, type STRING)`` works);
* raw regions: where the parser takes QUERY, EXPR or DATA_TYPE, the tokenizer captures Spark's
  text (balanced over quotes, comments, ``()``/``[]``/``{}``, ``CASE ... END`` and, in types,
  ``<>``) up to the first top-level token the parser could take *after* the region;
* precise errors: the expected set is known at the failing token and is named in plain words.

Invariants:
* every failure is a :class:`SqlError` (normally :class:`SqlParseError`, 42601) whose line and
  column are relative to the script (the ``line``/``column`` the statement starts at);
* a raw region's text is exactly the source slice, without surrounding whitespace/comments, and
  its :class:`~sqlext.parse.ast.SqlFragment` records the script offset, line and column;
* the module never returns a lark tree or raises a lark exception.
"""

from __future__ import annotations

import bisect
import functools
import re
from importlib import resources
from typing import Any

from lark import Lark, Token
from lark.exceptions import UnexpectedToken, VisitError
from lark.parsers.lalr_analysis import Shift

from sqlext.errors import SqlError, SqlParseError
from sqlext.parse import ast
from sqlext.parse.splitter import Statement, classify, comment_end, quoted_end, skip_trivia, split_statements
from sqlext.parse.tree import TreeBuilder

# Where a QUERY raw region may start (a Spark query, possibly parenthesised).
_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "FROM", "TABLE", "MAP", "REDUCE"})
_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WORD = re.compile(r"\w[\w$]*")
_CLOSER = {"(": ")", "[": "]", "{": "}", "<": ">"}
_RAW_NOUNS = {
    "QUERY": "a query (SELECT ... or VALUES ...)",
    "EXPR": "an expression",
    "DATA_TYPE": "a data type",
    "STRING": "a string literal",
    "NUMBER": "a number",
    "HINT_END": "'*/'",
    "$END": "the end of the statement",
}
_MAX_EXPECTED = 12
# Words that continue a multi-word data type after its first word.
_TYPE_WORDS = frozenset(
    {
        "WITH",
        "WITHOUT",
        "LOCAL",
        "TIME",
        "ZONE",
        "PRECISION",
        "VARYING",
        "UNSIGNED",
        "YEAR",
        "MONTH",
        "DAY",
        "HOUR",
        "MINUTE",
        "SECOND",
        "TO",
        "ARRAY",
        "MULTISET",
    }
)


_CACHE_LIMIT = 100_000


class _Grammar:
    """The compiled grammar, its keyword and punctuation tables, and exact next-token sets.

    LALR merges the look-ahead sets of similar states, so the parse table row of a state about
    to reduce lists terminals that fail after the reduction. ``accepted`` replays the reductions
    on the state stack alone (as Lark's own ``feed_token`` does, without building trees) to get
    the terminals that really shift; results are cached per stack.
    """

    def __init__(self) -> None:
        text = resources.files("sqlext.parse").joinpath("grammar/dyntable.lark").read_text("utf-8")
        self.lark = Lark(
            text, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True
        )
        self.keywords: dict[str, str] = {}  # upper-case word -> terminal name
        punctuation: list[tuple[str, str]] = []
        for terminal in self.lark.terminals:
            if terminal.pattern.type != "str":
                continue
            value = terminal.pattern.value
            if value.replace("_", "").isalpha():  # FILE_FORMAT, ON_ERROR are words too
                self.keywords[value.upper()] = terminal.name
            else:
                punctuation.append((value, terminal.name))
        punctuation.sort(key=lambda p: -len(p[0]))
        self.punctuation = tuple(punctuation)  # (text, terminal name), longest text first
        conf = self.lark.parse_interactive(start="start").parser_state.parse_conf
        self.states: dict[Any, dict[str, tuple[Any, Any]]] = conf.states
        self.end_state = conf.end_state
        self._accepted: dict[tuple[Any, ...], frozenset[str]] = {}

    def advance(self, stack: tuple[Any, ...], terminal: str) -> tuple[Any, ...] | None:
        """The state stack after taking ``terminal``, or None if the parser would reject it."""
        work = list(stack)
        while True:
            action = self.states[work[-1]].get(terminal)
            if action is None:
                return None
            kind, arg = action
            if kind is Shift:
                work.append(arg)
                return tuple(work)
            if arg.expansion:
                del work[-len(arg.expansion) :]
            work.append(self.states[work[-1]][arg.origin.name][1])
            if terminal == "$END" and work[-1] == self.end_state:
                return tuple(work)

    def accepted(self, stack: tuple[Any, ...]) -> frozenset[str]:
        """The terminals the parser can really take with this state stack."""
        found = self._accepted.get(stack)
        if found is None:
            found = frozenset(
                t for t in self.states[stack[-1]] if t.isupper() and self.advance(stack, t) is not None
            )
            if len(self._accepted) > _CACHE_LIMIT:
                self._accepted.clear()
            self._accepted[stack] = found
        return found


@functools.cache
def _grammar() -> _Grammar:
    return _Grammar()


def keywords() -> frozenset[str]:
    """Every keyword of dyntable's grammar, upper-case."""
    return frozenset(_grammar().keywords)


class _StatementParser:
    """Tokenizes and parses one statement; positions are statement-relative until reported."""

    def __init__(self, text: str, line: int, column: int, offset: int) -> None:
        self.g = _grammar()
        self.text = text
        self.n = len(text)
        self.line = line
        self.column = column
        self.offset = offset
        self.pos = 0
        self.in_hint = False
        self.history: list[str] = []
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    # ------------------------------------------------------------ positions and errors
    def error(self, message: str, pos: int, cls: type[SqlError] = SqlParseError) -> SqlError:
        return cls.at(message, self.text, pos, line=self.line, column=self.column)

    def where(self, pos: int) -> tuple[int, int]:
        row = bisect.bisect_right(self.line_starts, pos) - 1
        base = self.column if row == 0 else 1
        return self.line + row, base + pos - self.line_starts[row]

    def emit(self, kind: str, start: int, end: int) -> Token:
        line, column = self.where(start)
        end_line, end_column = self.where(end)
        self.pos = end
        return Token(
            kind,
            self.text[start:end],
            start_pos=start,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            end_pos=end,
        )

    def unterminated(self, pos: int) -> SqlError:
        if self.text.startswith("/*", pos):
            return self.error("unterminated comment: add the closing */", pos)
        what = {"'": "string literal", '"': "quoted string", "`": "quoted identifier"}[self.text[pos]]
        return self.error(f"unterminated {what}: add the closing {self.text[pos]}", pos)

    # ------------------------------------------------------------ driver
    def parse(self) -> ast.Node:
        ip = self.g.lark.parse_interactive(start="start")
        end = 0
        while True:
            stack = tuple(ip.parser_state.state_stack)
            accepted = self.g.accepted(stack)
            tok = self.next_token(stack, accepted)
            if tok is None:
                break
            self.feed(ip, tok, accepted)
            end = tok.end_pos or end
        stack = tuple(ip.parser_state.state_stack)
        tree = self.feed(ip, self.emit("$END", end, end), self.g.accepted(stack))
        try:
            node: ast.Node = TreeBuilder(self.error_factory, self.offset).transform(tree)
        except VisitError as e:
            if isinstance(e.orig_exc, SqlError):
                raise e.orig_exc from None
            raise
        return node

    def error_factory(self, message: str, pos: int, cls: type[SqlError]) -> SqlError:
        return self.error(message, pos, cls)

    def feed(self, ip: Any, tok: Token, accepted: frozenset[str]) -> Any:
        if tok.type not in accepted:
            raise self.unexpected(tok, accepted)
        try:
            result = ip.feed_token(tok)
        except UnexpectedToken as e:
            raise self.unexpected(tok, e.expected) from None
        self.history.append(tok.type)
        return result

    # ------------------------------------------------------------ tokenizer
    def next_token(self, stack: tuple[Any, ...], choices: frozenset[str]) -> Token | None:
        text = self.text
        hint_ok = "HINT_START" in choices
        pos = skip_trivia(text, self.pos, keep_hints=hint_ok)
        self.pos = pos
        if pos >= self.n:
            return None
        if text.startswith("/*", pos) and (not hint_ok or comment_end(text, pos) < 0):
            raise self.unterminated(pos)
        if hint_ok and text.startswith("/*+", pos):
            self.in_hint = True
            return self.emit("HINT_START", pos, pos + 3)
        if self.in_hint and text.startswith("*/", pos):
            self.in_hint = False
            return self.emit("HINT_END", pos, pos + 2)
        if text[pos] == ";":
            if skip_trivia(text, pos + 1) >= self.n:
                self.pos = self.n
                return None
            raise self.error("unexpected ';': this parses one statement; use parse_script for several", pos)
        if "QUERY" in choices and self.query_starts(pos):
            return self.raw(stack, "QUERY", pos)
        if "DATA_TYPE" in choices and self.type_starts(pos, choices):
            return self.emit("DATA_TYPE", pos, self.scan_type(pos, stack))
        if "EXPR" in choices:
            tok = self.raw(stack, "EXPR", pos)
            if tok is not None:
                return tok
        return self.plain(pos, choices)

    def plain(self, pos: int, choices: frozenset[str]) -> Token:
        text = self.text
        ch = text[pos]
        if ch in "'\"`":
            end = quoted_end(text, pos)
            if end < 0:
                raise self.unterminated(pos)
            if ch == "`" and end == pos + 2:
                raise self.error("empty quoted identifier ``: write a name between the backquotes", pos)
            return self.emit("STRING" if ch != "`" else "IDENT", pos, end)
        number = _NUMBER.match(text, pos)
        word = _WORD.match(text, pos)
        if number and (word is None or number.end() >= word.end()):
            return self.emit("NUMBER", pos, number.end())
        if word:
            keyword = self.g.keywords.get(word.group().upper())
            if keyword is None or (keyword not in choices and "IDENT" in choices):
                return self.emit("IDENT", pos, word.end())
            if "IDENT" in choices and self.name_follows(keyword, word.end()):
                return self.emit("IDENT", pos, word.end())
            return self.emit(keyword, pos, word.end())
        for value, name in self.g.punctuation:
            if text.startswith(value, pos):
                return self.emit(name, pos, pos + len(value))
        raise self.error(f"unexpected character {ch!r}", pos)

    def name_follows(self, keyword: str, end: int) -> bool:
        """Whether a word the parser could take as ``keyword`` or a name must be the name.

        One token of look-ahead settles the two cases LALR(1) cannot: a named CALL argument
        (``timestamp => ...``) and DATE/TIMESTAMP not followed by the string of a typed literal.
        """
        nxt = skip_trivia(self.text, end)
        if self.text.startswith("=>", nxt):
            return True
        return keyword in ("DATE", "TIMESTAMP") and self.text[nxt : nxt + 1] not in ("'", '"')

    def query_starts(self, pos: int) -> bool:
        while pos < self.n and self.text[pos] == "(":
            pos = skip_trivia(self.text, pos + 1)
        word = _WORD.match(self.text, pos)
        return word is not None and word.group().upper() in _QUERY_STARTS

    def type_starts(self, pos: int, choices: frozenset[str]) -> bool:
        word = _WORD.match(self.text, pos)
        if word is None or self.text[pos].isdigit():
            return False
        keyword = self.g.keywords.get(word.group().upper())
        return keyword is None or keyword not in choices

    def scan_type(self, pos: int, stack: tuple[Any, ...]) -> int:
        """The end of the data type starting at ``pos``.

        A type is a word followed by any number of bracket groups (``(10, 2)``, ``<STRING, INT>``)
        and the words that continue multi-word types (``WITH LOCAL TIME ZONE``, ``DOUBLE
        PRECISION``, ``INTERVAL DAY TO SECOND``, suffix ``ARRAY``). Anything else ends it, so a
        misplaced word is reported by the parser instead of being swallowed into the type.
        """
        after = self.g.advance(stack, "DATA_TYPE")
        follow = self.g.accepted(after) if after is not None else frozenset()
        text = self.text
        end = _WORD.match(text, pos).end()  # type: ignore[union-attr]
        while True:
            p = skip_trivia(text, end)
            if p < self.n and text[p] in "(<":
                end = self.group_end(p)
                continue
            word = _WORD.match(text, p)
            if word is None or word.group().upper() not in _TYPE_WORDS:
                return end
            if self.g.keywords.get(word.group().upper()) in follow:
                return end
            end = word.end()

    def group_end(self, pos: int) -> int:
        """The index just past the bracket group opening at ``pos`` (``<>`` nest, as in types)."""
        end = self.scan_raw(pos, frozenset(), types=True, group=True)
        return end

    def raw(self, stack: tuple[Any, ...], kind: str, pos: int) -> Token | None:
        """Capture a raw region of ``kind`` at ``pos``, ending where the parser could continue."""
        after = self.g.advance(stack, kind)
        follow = self.g.accepted(after) if after is not None else frozenset({"$END"})
        end = self.scan_raw(pos, follow, types=kind == "DATA_TYPE")
        if end <= pos:
            return None
        return self.emit(kind, pos, end)

    def scan_raw(self, pos: int, stop: frozenset[str], *, types: bool = False, group: bool = False) -> int:
        """The end of the raw text starting at ``pos``: just past its last significant character.

        The region stops at the end, at a `;`, at an unmatched closing bracket, or at a top-level
        keyword or punctuation in ``stop``; with ``types``, ``<>`` nest too; with ``group``, it
        stops right after the bracket group that opens at ``pos`` closes.
        """
        text, n = self.text, self.n
        stack: list[tuple[str, int]] = []  # expected closer, opener position
        p = last = pos
        after_dot = False
        while True:
            p = skip_trivia(text, p, keep_hints=True)
            if p >= n:
                break
            ch = text[p]
            if text.startswith("/*+", p):  # a hint belongs to the raw text (e.g. after its last table)
                end = comment_end(text, p)
                if end < 0:
                    raise self.unterminated(p)
                p = last = end
                continue
            if text.startswith("/*", p):
                raise self.unterminated(p)
            if ch == ";":
                break
            if ch in "'\"`":
                end = quoted_end(text, p)
                if end < 0:
                    raise self.unterminated(p)
                p = last = end
                after_dot = False
                continue
            word = _WORD.match(text, p)
            if word:
                upper = word.group().upper()
                if not stack and not after_dot and self.g.keywords.get(upper) in stop:
                    break
                if upper == "CASE" and not after_dot:
                    stack.append(("END", p))
                elif upper == "END" and not after_dot and stack and stack[-1][0] == "END":
                    stack.pop()
                p = last = word.end()
                after_dot = False
                continue
            if ch in "([{" or (types and ch == "<"):
                stack.append((_CLOSER[ch], p))
            elif ch in ")]}" or (types and ch == ">"):
                if not stack:
                    break
                if stack[-1][0] != ch:
                    closer, at = stack[-1]
                    opener = "CASE" if closer == "END" else text[at]
                    raise self.error(
                        f"unbalanced {ch!r}: expected {closer!r} first, to close the {opener!r}", p
                    )
                stack.pop()
                if group and not stack:
                    return p + 1
            elif not stack and self.stops_at(p, stop):
                break
            p = last = p + 1
            after_dot = ch == "."
        if stack:
            closer, at = stack[-1]
            opener = "CASE" if closer == "END" else text[at]
            raise self.error(f"{opener!r} is never closed: add the matching {closer!r}", at)
        return last

    def stops_at(self, p: int, stop: frozenset[str]) -> bool:
        text = self.text
        for value, name in self.g.punctuation:
            if text.startswith(value, p):
                if name not in stop:
                    return False
                # `=` inside `==`, `<=`, `>=`, `!=`, `<=>` is a comparison, not the grammar's `=`.
                if value == "=":
                    return (p == 0 or text[p - 1] not in "<>!=") and text[p + 1 : p + 2] not in ("=", ">")
                return True
        return False

    # ------------------------------------------------------------ error messages
    def unexpected(self, tok: Token, expected: Any) -> SqlError:
        """The error for a token the parser cannot take, naming what it could take instead."""
        terminals = sorted({t for t in expected if t.isupper() and t != "HINT_START"}, key=self._order)
        words = [self.describe(t) for t in terminals]
        if len(words) > _MAX_EXPECTED:
            words = words[:_MAX_EXPECTED] + ["..."]
        if not words:
            wanted = "nothing more"
        elif len(words) == 1 or words[-1] == "...":
            wanted = ", ".join(words)
        else:
            wanted = ", ".join(words[:-1]) + " or " + words[-1]
        if tok.type == "$END":
            found = "the end of the statement"
        else:
            value = str(tok)
            found = repr(value if len(value) <= 40 else value[:37] + "...")
        return self.error(f"expected {wanted}, found {found}", tok.start_pos or 0)

    def _order(self, terminal: str) -> tuple[int, str]:
        if terminal in ("IDENT", "STRING", "NUMBER", "QUERY", "EXPR", "DATA_TYPE"):
            return 0, terminal
        if terminal in self.g.keywords.values():
            return 1, terminal
        return (3 if terminal == "$END" else 2), terminal

    def describe(self, terminal: str) -> str:
        if terminal == "IDENT":
            return self.name_noun()
        if terminal in _RAW_NOUNS:
            return _RAW_NOUNS[terminal]
        for value, name in self.g.punctuation:
            if name == terminal:
                return repr(value)
        return terminal

    def name_noun(self) -> str:
        """What kind of name the parser wants, guessed from the tokens before it."""
        h = self.history
        prev = h[-1] if h else ""
        first = h[0] if h else ""
        if prev == "EXISTS" and "IF" in h:  # the name after IF [NOT] EXISTS is named by the word before IF
            i = len(h) - 1 - h[::-1].index("IF")
            prev = h[i - 1] if i else ""
        if prev == "SET" and first in ("UPDATE", "MERGE"):
            return "a column name"
        if prev in ("TAG", "BRANCH"):
            return f"a {prev.lower()} name"
        if prev in ("COLUMN", "COLUMNS", "AFTER", "FOR", "MODIFY"):
            return "a column name"
        if prev in ("DATABASE", "SCHEMA", "USE", "IN") or (prev == "FROM" and first == "SHOW"):
            return "a database name"
        if prev == "USING" and first == "CREATE":
            return "a data source name"
        if prev in ("TABLE", "INTO", "LIKE", "UPDATE", "TAGS", "BRANCHES", "PARTITIONS", "USING", "FROM"):
            return "a table name"
        if prev == "TO":
            for kw, noun in (("TAG", "a tag name"), ("COLUMN", "a column name")):
                if kw in h:
                    return noun
            return "a table name"
        if prev == "CALL":
            return "a procedure name"
        if prev in ("LPAR", "COMMA"):
            opener = self._opener()
            if opener in (
                "WITH",
                "TBLPROPERTIES",
                "OPTIONS",
                "SET",
                "RESET",
                "UNSET",
                "PROPERTIES",
                "DBPROPERTIES",
                "HINT_OPTIONS",
            ):
                return "an option key"
            if first in ("CREATE", "ALTER", "INSERT", "DESCRIBE", "DESC", "SHOW", "TRUNCATE", "MERGE"):
                return "a column name"
        return "a name"

    def _opener(self) -> str:
        depth = 0
        for i in range(len(self.history) - 1, -1, -1):
            t = self.history[i]
            if t == "RPAR":
                depth += 1
            elif t == "LPAR":
                if depth == 0:
                    before = self.history[i - 1] if i else ""
                    return "HINT_OPTIONS" if before == "IDENT" and "HINT_START" in self.history else before
                depth -= 1
        return ""


def parse_statement(text: str, line: int = 1, column: int = 1, *, offset: int = 0) -> ast.Node:
    """Parse one of dyntable's statements.

    Args:
        text: the statement (a trailing `;` is allowed).
        line: the script line where ``text`` starts (error positions are script-relative).
        column: the script column where ``text`` starts.
        offset: the script offset where ``text`` starts (recorded in raw fragments).

    Returns:
        The statement's :mod:`sqlext.parse.ast` node.

    Raises:
        SqlParseError: the text is not one of dyntable's statements (42601).
        ProcedureArgumentError: a CALL mixes positional and named arguments or repeats one (22023).
    """
    return _StatementParser(text, line, column, offset).parse()


def parse_script(script: str) -> list[tuple[Statement, ast.Node | None]]:
    """Split a script and parse each of dyntable's statements; Spark's get ``None``.

    Args:
        script: statements separated by `;`.

    Returns:
        ``(statement, node)`` per statement in order; ``node`` is ``None`` for Spark SQL.

    Raises:
        SqlError: the first statement that fails, located in the script (with the full source line).
    """
    result: list[tuple[Statement, ast.Node | None]] = []
    for statement in split_statements(script):
        if classify(statement.text) == "spark":
            result.append((statement, None))
            continue
        try:
            node = parse_statement(statement.text, statement.line, statement.column, offset=statement.offset)
        except SqlError as e:
            raise e.with_source(script) from None
        result.append((statement, node))
    return result
