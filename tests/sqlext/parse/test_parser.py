"""Parser tests: every fixture block in tests/sqlext/parse/fixtures/*.sql, plus positions, names and errors.

Fixture format (sqlglot style): a statement ending with `;`, then on its own line either
``-- => <dump of the AST>`` or ``-- error: <SQLSTATE> line <L> col <C> "<message excerpt>"``
(line and column relative to the statement). Comment lines before a statement are ignored.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from datetime import timedelta
from pathlib import Path

import pytest

from engine.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    CorruptMetadataError,
    InvalidArgumentError,
    NoSuchColumnError,
    NoSuchTableError,
    NoSuchTagError,
    StorageError,
    TableAlreadyExistsError,
)
from sqlext.errors import (
    ProcedureArgumentError,
    SqlAnalysisError,
    SqlError,
    SqlParseError,
    UnsupportedStatementError,
    sqlstate_for,
)
from sqlext.parse import ast
from sqlext.parse.parser import keywords, parse_script, parse_statement
from sqlext.parse.splitter import classify
from sqlext.parse.tree_base import unquote_string

FIXTURES = Path(__file__).parent / "fixtures"
_ERROR = re.compile(r'-- error: (\w{5}) line (\d+) col (\d+)(?: "(.*)")?$')


@dataclasses.dataclass(frozen=True)
class Fixture:
    file: str
    line: int
    text: str
    expected: str  # "-- => ..." or "-- error: ..."

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def load_fixtures() -> list[Fixture]:
    """Every (statement, expectation) block of every fixture file."""
    fixtures = []
    for path in sorted(FIXTURES.glob("*.sql")):
        buf: list[str] = []
        start = 0
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if line.startswith("-- =>") or line.startswith("-- error:"):
                assert buf, f"{path.name}:{number}: expectation without a statement"
                text = "\n".join(buf).rstrip()
                assert text.endswith(";"), f"{path.name}:{start}: statement must end with ';'"
                fixtures.append(Fixture(path.name, start, text[:-1], line))
                buf = []
            elif buf or (line.strip() and not line.startswith("--")):
                if not buf:
                    start = number
                buf.append(line)
        assert not buf, f"{path.name}: statement without an expectation at line {start}"
    return fixtures


ALL_FIXTURES = load_fixtures()


def test_fixtures_cover_every_statement_kind() -> None:
    kinds = set()
    for f in ALL_FIXTURES:
        if f.expected.startswith("-- =>"):
            kinds.add(f.expected[len("-- => ") :].split("(", 1)[0])
    node_kinds = {t.__name__ for t in ast.Node.__args__}  # type: ignore[attr-defined]
    assert node_kinds <= kinds, f"no fixture for {sorted(node_kinds - kinds)}"
    assert sum(f.expected.startswith("-- error:") for f in ALL_FIXTURES) >= 60


@pytest.mark.parametrize("fixture", ALL_FIXTURES, ids=[f.id for f in ALL_FIXTURES])
def test_fixture(fixture: Fixture) -> None:
    assert classify(fixture.text) == "dyntable"
    if fixture.expected.startswith("-- =>"):
        node = parse_statement(fixture.text)
        assert ast.dump(node) == fixture.expected[len("-- => ") :]
        return
    m = _ERROR.match(fixture.expected)
    assert m, f"bad expectation {fixture.expected!r}"
    with pytest.raises(SqlError) as info:
        parse_statement(fixture.text)
    err = info.value
    assert (err.sqlstate, err.line, err.column) == (m.group(1), int(m.group(2)), int(m.group(3))), str(err)
    if m.group(4):
        assert m.group(4) in err.message


# ---------------------------------------------------------------- positions


def test_fragments_locate_their_text_in_the_script() -> None:
    script = (
        "SET 'a' = '1';\n\n  INSERT INTO t\n    SELECT *\n    FROM s WHERE x = ';';\n"
        "DELETE FROM t WHERE a > 1"
    )
    (_, set_node), (ins_stmt, insert), (_, delete) = parse_script(script)
    assert isinstance(insert, ast.Insert) and isinstance(delete, ast.Delete)
    assert ins_stmt.line == 3 and ins_stmt.column == 3
    q = insert.query
    assert q.offset is not None and script[q.offset : q.offset + len(q.text)] == q.text
    assert (q.line, q.column) == (4, 5)
    w = delete.where
    assert w is not None and w.offset is not None and script[w.offset :].startswith("a > 1")
    assert (w.line, w.column) == (6, 21)
    assert insert.table.line == 3 and insert.table.column == 15
    assert isinstance(set_node, ast.SetOption)


def test_error_position_is_relative_to_the_script() -> None:
    script = "SELECT 1;\nSHOW TABLES; ALTER TABLE t\n  ADD COLUMN c INT FIST"
    with pytest.raises(SqlParseError) as info:
        parse_script(script)
    err = info.value
    assert (err.line, err.column) == (3, 20)
    assert err.snippet == "  ADD COLUMN c INT FIST"
    lines = str(err).splitlines()
    assert lines[0].startswith("expected ") and "found 'FIST'" in lines[0]
    assert lines[1].strip() == "line 3, column 20"
    assert lines[3].index("^") == lines[2].index("FIST")


def test_error_on_first_statement_line_uses_the_full_script_line() -> None:
    script = "SELECT 1; DROP TABLE )"
    with pytest.raises(SqlParseError) as info:
        parse_script(script)
    err = info.value
    assert (err.line, err.column) == (1, 22)
    assert err.snippet == script
    text, caret = str(err).splitlines()[2:4]
    assert text[caret.index("^")] == ")"


def test_parse_statement_with_a_start_offset() -> None:
    with pytest.raises(SqlParseError) as info:
        parse_statement("DROP TABLE )", line=7, column=5)
    err = info.value
    assert (err.line, err.column) == (7, 16)
    caret_line = str(err).splitlines()[3]
    snippet_line = str(err).splitlines()[2]
    assert snippet_line[caret_line.index("^")] == ")"


def test_parse_statement_accepts_a_trailing_semicolon() -> None:
    assert parse_statement("DROP TABLE t ; -- done\n") == ast.DropTable(ast.TableName(None, None, "t"))


def test_parse_script_passes_spark_statements_through() -> None:
    result = parse_script("select 1; CREATE FUNCTION f AS 'x'; use db; explain select 3")
    assert [node for _, node in result] == [None, None, ast.UseDatabase("db"), None]
    assert [s.text for s, _ in result][1] == "CREATE FUNCTION f AS 'x'"


def test_long_lines_are_cut_around_the_caret() -> None:
    sql = "INSERT INTO t SELECT " + ", ".join(f"c{i}" for i in range(100)) + " FROM s WHERE (x"
    with pytest.raises(SqlParseError) as info:
        parse_statement(sql)
    text, caret = str(info.value).splitlines()[2:4]
    assert len(text) <= 110
    assert text[caret.index("^")] == "("


# ---------------------------------------------------------------- keywords, names, literals


def test_keywords_are_contextual() -> None:
    node = parse_statement("create table Comment (Date date, Type string, Table int) comment 'c'")
    assert isinstance(node, ast.CreateTable)
    assert node.name.table == "Comment"
    assert [c.name for c in node.columns] == ["Date", "Type", "Table"]
    assert node.comment == "c"
    node = parse_statement("CALL sys.rollback_to_timestamp(table => 't', timestamp => 5)")
    assert isinstance(node, ast.Call)
    assert [a.name for a in node.args] == ["table", "timestamp"]


def test_keywords_are_listed() -> None:
    words = keywords()
    assert {"CREATE", "TABLE", "MERGE", "WATERMARK", "RETAIN", "BRANCH"} <= words
    assert all(w.isupper() for w in words)


def test_grammar_is_lalr_without_conflicts(caplog: pytest.LogCaptureFixture) -> None:
    from importlib import resources

    from lark import Lark

    text = resources.files("sqlext.parse").joinpath("grammar/dyntable.lark").read_text("utf-8")
    with caplog.at_level(logging.DEBUG, logger="lark"):
        Lark(text, parser="lalr", lexer="basic", debug=True)
    assert not [r for r in caplog.records if "conflict" in r.getMessage().lower()]


def test_table_name_parse_and_print() -> None:
    name = ast.TableName.parse("cat.db.`t$branch_dev$tags`")
    assert (name.catalog, name.database, name.table, name.branch, name.system_table) == (
        "cat",
        "db",
        "t",
        "dev",
        "tags",
    )
    assert str(name) == "cat.db.t$branch_dev$tags"
    assert ast.TableName.parse(str(name)) == name
    assert ast.TableName.parse("t$snapshots").system_table == "snapshots"
    assert ast.TableName.parse("`my table`").table == "my table"
    assert str(ast.TableName(None, "a.b", "c")) == "`a.b`.c"
    assert ast.TableName.parse("db.t") == ast.TableName(None, "db", "t", line=9, column=9)


@pytest.mark.parametrize(
    "bad", ["", "a..b", "a.", "a.b.c.d", "a/b", "t$", "t$branch_", "t$a$b", "d$x.t", "`a`b"]
)
def test_table_name_rejects_bad_names(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        ast.TableName.parse(bad)


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("'it''s'", "it's"),
        ("'it\\'s'", "it's"),
        ('"say ""hi"""', 'say "hi"'),
        ("'a\\nb'", "a\nb"),
        ("'100\\%'", "100\\%"),
        ("'C:\\\\dir'", "C:\\dir"),
        ("''", ""),
    ],
)
def test_string_literals_unescape(literal: str, value: str) -> None:
    assert unquote_string(literal) == value
    node = parse_statement(f"STOP JOB {literal}")
    assert node == ast.StopJob(value)


def test_literal_values_in_partitions() -> None:
    node = parse_statement(
        "TRUNCATE TABLE t PARTITION (a = 1, b = -2.50, c = 1e2, d = TIMESTAMP '2024-01-02 03:04:05')"
    )
    assert isinstance(node, ast.Truncate) and node.partition is not None
    values = node.partition.values()
    assert values["a"] == 1 and type(values["a"]) is int
    assert str(values["b"]) == "-2.50"
    assert values["c"] == 100.0
    assert str(values["d"]) == "2024-01-02 03:04:05"


def test_nodes_are_frozen_values() -> None:
    node = parse_statement("ALTER TABLE t CREATE TAG x RETAIN 2 DAYS")
    assert node == ast.CreateTag(ast.TableName(None, None, "t"), "x", retain=timedelta(days=2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.tag = "y"  # type: ignore[misc]
    assert hash(node) == hash(ast.CreateTag(ast.TableName(None, None, "t"), "x", retain=timedelta(days=2)))


def test_names_in_nodes_are_plain_strings() -> None:
    node = parse_statement("MERGE INTO t a USING s b ON a.k = b.k WHEN MATCHED THEN UPDATE SET v = b.v")
    assert isinstance(node, ast.Merge)
    assert type(node.target_alias) is str and type(node.target.table) is str
    update = node.clauses[0].action
    assert isinstance(update, ast.MergeUpdate) and type(update.assignments[0].column) is str


# ---------------------------------------------------------------- errors


def test_sql_error_fields_and_subclasses() -> None:
    assert SqlParseError("x").sqlstate == "42601"
    assert SqlAnalysisError("x").sqlstate == "42000"
    assert SqlAnalysisError("unknown table", sqlstate="42P01").sqlstate == "42P01"
    assert UnsupportedStatementError("x").sqlstate == "0A000"
    assert ProcedureArgumentError("x").sqlstate == "22023"
    err = SqlAnalysisError("no such column 'x'", line=2, column=3, snippet="  x + 1", sqlstate="42703")
    assert str(err).splitlines() == ["no such column 'x'", "  line 2, column 3", "    x + 1", "    ^"]
    assert str(SqlParseError("plain")) == "plain"


@pytest.mark.parametrize(
    ("error", "state"),
    [
        (SqlParseError("x"), "42601"),
        (SqlAnalysisError("x", sqlstate="42P01"), "42P01"),
        (NoSuchTableError("t"), "42P01"),
        (NoSuchTagError("t"), "42P01"),
        (NoSuchColumnError("c"), "42703"),
        (TableAlreadyExistsError("t"), "42710"),
        (InvalidArgumentError("v"), "22023"),
        (CommitConflictError("c"), "40001"),
        (CorruptMetadataError("m"), "XX001"),
        (StorageError("s"), "58030"),
        (CommitStateUnknownError("u"), "XX000"),
        (KeyError("k"), "XX000"),
    ],
)
def test_sqlstate_for(error: Exception, state: str) -> None:
    assert sqlstate_for(error) == state
