"""Robustness: whatever text the parser gets, it returns a node or raises SqlError, nothing else."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlext.errors import SqlError
from sqlext.parse.parser import keywords, parse_script, parse_statement
from tests.sqlext.parse.test_parser import ALL_FIXTURES

_STATEMENTS = sorted({f.text for f in ALL_FIXTURES})


def _parses_or_sql_error(text: str) -> None:
    try:
        parse_statement(text)
    except SqlError as e:
        assert e.sqlstate and len(e.sqlstate) == 5
        assert e.line is not None and e.column is not None and e.line >= 1 and e.column >= 1
        assert "Traceback" not in str(e)


def test_every_fixture_truncated_at_every_position() -> None:
    for text in _STATEMENTS:
        for end in range(len(text)):
            _parses_or_sql_error(text[:end])


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_random_text(text: str) -> None:
    _parses_or_sql_error(text)
    try:
        parse_script(text)
    except SqlError:
        pass


_WORDS = sorted(keywords())
_TOKENS = st.one_of(
    st.sampled_from(_WORDS),
    st.sampled_from(_WORDS).map(str.lower),
    st.sampled_from(
        ["(", ")", ",", ".", "=", "=>", "*", "-", "+", ";", "<", ">", "/*+", "*/", "$", "`", "'"]
    ),
    st.sampled_from(["t", "db.t", "`a b`", "t$branch_x", "'s'", "'a''b'", '"q"', "42", "1.5", "-3", "x1"]),
    st.sampled_from(["SELECT 1", "a + 1", "INT", "MAP<STRING, INT>", "CASE WHEN a THEN b END", "-- c\n"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=14))
def test_keyword_soup(tokens: list[str]) -> None:
    _parses_or_sql_error(" ".join(tokens))


_EDIT = st.tuples(
    st.integers(0, 10_000),  # where (modulo the text length)
    st.integers(0, 3),  # how many characters to delete there
    st.sampled_from(
        ["", "(", ")", "'", '"', ",", "`", "x", " ", "--", "/*", "*/", ";", "<", ">", "=", "END"]
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_STATEMENTS), st.lists(_EDIT, max_size=3))
def test_mutated_fixtures(text: str, edits: list[tuple[int, int, str]]) -> None:
    for where, length, insert in edits:
        at = where % (len(text) + 1)
        text = text[:at] + insert + text[at + length :]
    _parses_or_sql_error(text)
