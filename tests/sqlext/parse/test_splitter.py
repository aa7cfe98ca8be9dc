"""Splitter tests: quotes, escapes, comments, hints, positions, classification."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlext.errors import SqlParseError
from sqlext.parse.splitter import Statement, classify, split_statements


def texts(script: str) -> list[str]:
    return [s.text for s in split_statements(script)]


def test_simple_split_and_positions() -> None:
    script = "SELECT 1;\n  SELECT 2 ;SELECT 3\n\n;\n  \tINSERT INTO t VALUES (1)"
    assert split_statements(script) == [
        Statement("SELECT 1", 1, 1, 0),
        Statement("SELECT 2", 2, 3, 12),
        Statement("SELECT 3", 2, 13, 22),
        Statement("INSERT INTO t VALUES (1)", 5, 4, 37),
    ]
    for s in split_statements(script):
        assert script[s.offset : s.offset + len(s.text)] == s.text


def test_semicolons_inside_quotes_do_not_split() -> None:
    script = "SELECT ';', \";\", `a;b` FROM t; SELECT 'x'"
    assert texts(script) == ["SELECT ';', \";\", `a;b` FROM t", "SELECT 'x'"]


@pytest.mark.parametrize(
    "literal",
    ["'it''s; ok'", "'it\\'s; ok'", '"say ""hi""; now"', '"a\\";b"', "`we``ird;name`", "'back\\\\'", "''"],
)
def test_escaped_quotes(literal: str) -> None:
    assert texts(f"SELECT {literal}; SELECT 2") == [f"SELECT {literal}", "SELECT 2"]


def test_comments_containing_semicolons() -> None:
    script = (
        "-- header; not a statement\n"
        "SELECT 1 -- trailing; comment\n"
        ", /* block; comment */ 2;\n"
        "/* nested /* comment; */ still; comment */ SELECT 3;\n"
        "-- only a comment;\n"
    )
    assert texts(script) == ["SELECT 1 -- trailing; comment\n, /* block; comment */ 2", "SELECT 3"]
    assert split_statements(script)[1].line == 4


def test_hints_are_kept() -> None:
    script = "INSERT INTO t /*+ OPTIONS('a'=';') */ SELECT 1; /*+ lonely hint */"
    assert texts(script) == ["INSERT INTO t /*+ OPTIONS('a'=';') */ SELECT 1", "/*+ lonely hint */"]


def test_leading_and_trailing_comments_are_dropped() -> None:
    script = "/* doc */ -- more\n  SELECT 1 /* tail */ -- end\n;"
    [s] = split_statements(script)
    assert s.text == "SELECT 1"
    assert (s.line, s.column, s.offset) == (2, 3, 20)


def test_empty_statements_are_dropped() -> None:
    assert texts(";;  ; -- x\n ;/* y */;") == []
    assert texts("") == []


def test_minus_and_slash_are_plain_characters() -> None:
    assert texts("SELECT 4 - 2 / 1; SELECT a-b") == ["SELECT 4 - 2 / 1", "SELECT a-b"]


@pytest.mark.parametrize(
    ("script", "line", "column", "what"),
    [
        ("SELECT 1;\nSELECT 'abc", 2, 8, "string literal"),
        ('SELECT "abc', 1, 8, "quoted string"),
        ("SELECT `abc", 1, 8, "quoted identifier"),
        ("SELECT 1; /* open", 1, 11, "comment"),
        ("SELECT /* a /* b */ c", 1, 8, "comment"),
        ("SELECT 'it''", 1, 8, "string literal"),
        ("SELECT 'ends with backslash\\'", 1, 8, "string literal"),
    ],
)
def test_unterminated_quote_or_comment(script: str, line: int, column: int, what: str) -> None:
    with pytest.raises(SqlParseError) as info:
        split_statements(script)
    err = info.value
    assert (err.line, err.column) == (line, column)
    assert what in err.message
    assert err.sqlstate == "42601"


@pytest.mark.parametrize(
    "text",
    [
        "CREATE TABLE t (a INT)",
        "create table if not exists t like s",
        "CREATE DATABASE d",
        "CREATE SCHEMA d",
        "DROP TABLE t",
        "DROP DATABASE d",
        "drop schema d",
        "ALTER TABLE t COMPACT",
        "USE db",
        "SHOW TABLES",
        "SHOW DATABASES",
        "show schemas",
        "SHOW CREATE TABLE t",
        "SHOW PARTITIONS t",
        "SHOW TBLPROPERTIES t",
        "SHOW JOBS",
        "SHOW TAGS t",
        "SHOW BRANCHES t",
        "DESCRIBE t",
        "desc t",
        "DESCRIBE TABLE EXTENDED t",
        "DESCRIBE DATABASE d",
        "INSERT INTO t SELECT 1",
        "INSERT OVERWRITE t SELECT 1",
        "DELETE FROM t",
        "UPDATE t SET a = 1",
        "MERGE INTO t USING s ON 1 = 1 WHEN MATCHED THEN DELETE",
        "TRUNCATE TABLE t",
        "SET",
        "SET a = b",
        "RESET",
        "CALL sys.x()",
        "STOP JOB 'x'",
        "/* c */ -- d\n  drop table t",
        "/*+ hint */ SET a = 1",
        # views and cached tables may read managed tables (docs/sql-views.md)
        "CREATE TEMPORARY VIEW v AS SELECT 1",
        "CREATE OR REPLACE GLOBAL TEMP VIEW v AS SELECT 1",
        "CREATE VIEW v AS SELECT 1",
        "DROP VIEW v",
        "CACHE TABLE t",
        "CACHE LAZY TABLE t AS SELECT 1",
        "UNCACHE TABLE t",
        "SHOW VIEWS",
        "SHOW TABLE EXTENDED IN db LIKE '*'",
        "show table extended like 't' partition (dt = 1)",
    ],
)
def test_classify_ours(text: str) -> None:
    assert classify(text) == "dyntable"


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1",
        "with a as (select 1) select * from a",
        "VALUES (1)",
        "EXPLAIN SELECT 1",
        "(SELECT 1)",
        "CREATE FUNCTION f AS 'x'",
        "DROP TEMPORARY VIEW v",
        "CREATE TEMPORARY VIEW v USING parquet OPTIONS (path '/x')",
        "CREATE OR REPLACE TEMP VIEW v (a INT) USING json",
        "ALTER VIEW v AS SELECT 1",
        "SHOW FUNCTIONS",
        "SHOW CREATE VIEW v",
        "SHOW TABLE t",
        "DESCRIBE FUNCTION f",
        "DESCRIBE QUERY SELECT 1",
        "DESC SELECT 1",
        "INSERT OVERWRITE DIRECTORY '/x' SELECT 1",
        "INSERT OVERWRITE LOCAL DIRECTORY '/x' SELECT 1",
        "REFRESH TABLE t",
        "ANALYZE TABLE t COMPUTE STATISTICS",
        "STOP",
        "",
        "  -- just a comment",
        "1",
    ],
)
def test_classify_spark(text: str) -> None:
    assert classify(text) == "spark"


# ---------------------------------------------------------------- property: split(join(x)) == x

_plain = st.text(alphabet="abcXYZ019_ (),.=*<>+", min_size=1, max_size=12).map(lambda s: "w" + s + "w")
_inner = st.text(alphabet="ab;'\"`\\-/*\n ", max_size=10)
_single = _inner.map(lambda s: "'" + s.replace("\\", "\\\\").replace("'", "''") + "'")
_double = _inner.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"')
_back = _inner.map(lambda s: "`" + s.replace("`", "``") + "`")
_line_comment = _inner.map(lambda s: "-- " + s.replace("\n", " ") + "\n")
_block_comment = _inner.map(lambda s: "/* " + s.replace("*/", "* /").replace("/*", "/ *") + " */")
_hint = _inner.map(lambda s: "/*+ " + s.replace("*/", "* /").replace("/*", "/ *") + " */")
_significant = st.one_of(_plain, _single, _double, _back)
_atom = st.one_of(_significant, _hint, _line_comment, _block_comment)


@st.composite
def _statement(draw: st.DrawFn) -> str:
    middle = draw(st.lists(_atom, max_size=5))
    return " ".join([draw(_significant), *middle, draw(_significant)])


@settings(max_examples=100, deadline=None)
@given(st.lists(_statement(), max_size=5), st.sampled_from([";", ";\n", " ;  ", "\n;\n-- c;\n"]))
def test_split_recovers_the_statements(statements: list[str], separator: str) -> None:
    script = separator.join(statements)
    result = split_statements(script)
    assert [s.text for s in result] == statements
    for s in result:
        before = script[: s.offset]
        assert s.line == before.count("\n") + 1
        assert s.column == s.offset - (before.rfind("\n") + 1) + 1


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab ;'\"`-/*\n\\+", max_size=40))
def test_split_never_fails_with_another_error(script: str) -> None:
    try:
        result = split_statements(script)
    except SqlParseError as e:
        assert e.line is not None and e.column is not None
        return
    for s in result:
        assert s.text and s.text == s.text.strip()
        assert script[s.offset : s.offset + len(s.text)] == s.text
