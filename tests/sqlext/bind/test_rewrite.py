"""Binder tests: fixture pairs in tests/sqlext/bind/fixtures/*.sql, positions, options, properties.

Fixture format (one block per statement; comment lines between blocks are ignored):

    SELECT id FROM t;                         -- the statement, ending with ';' at a line end
    -- => SELECT id FROM __dyntable_1_t AS t  -- the rewritten SQL ('-- | ' continues it on a new line)
    -- __dyntable_1_t = db.t [id]             -- every binding, in order (see ``describe``)

or, for a statement that must fail: ``-- error: 42P01 line 1 col 15 "message excerpt"``.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from engine.errors import NoSuchTableError
from sqlext.bind.rewrite import Binding, BoundQuery, TimeTravel, bind, spark_identifier
from sqlext.errors import SqlAnalysisError, SqlError, SqlParseError
from sqlext.parse.names import TableName

FIXTURES = Path(__file__).parent / "fixtures"
_ERROR = re.compile(r'-- error: (\w{5}) line (\d+) col (\d+)(?: "(.*)")?$')
_BINDING = re.compile(r"-- (__dyntable_\S+) = (.*)$")

TABLES = {
    ("db", "t"): ["id", "name", "v", "ts", "s"],
    ("db", "u"): ["id", "k", "w"],
    ("db", "orders"): ["OrderId", "Amount", "Customer"],
    ("db", "order"): ["id", "qty"],
    ("sales", "t"): ["id", "amount"],
}
SYSTEM_TABLES = {
    "snapshots": ["snapshot_id", "schema_id", "commit_time"],
    "tags": ["tag_name", "snapshot_id"],
    "files": ["file_path", "record_count"],
    "branches": ["branch_name", "create_time"],
}


VIEWS: dict = {}  # (database or None, name) -> ViewDefinition; filled by the view tests


class FakeCatalog:
    """The session's view of managed tables: a fixed set of tables and system tables."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def is_managed(self, database: str, table: str) -> bool:
        self.calls.append((database, table))
        return (database.lower(), table.lower()) in TABLES

    def columns(self, name: TableName, time_travel=None) -> list[str]:
        assert name.database is not None
        if time_travel is not None and time_travel.snapshot_id == 100 and name.table.lower() == "t":
            return ["id", "name"]  # snapshot 1 was written before a column was added
        if name.branch is not None and name.branch not in ("dev", "b1"):
            raise NoSuchTableError(f"branch {name.branch!r} of {name.database}.{name.table} does not exist")
        if name.system_table is not None:
            if name.system_table.lower() not in SYSTEM_TABLES:
                raise NoSuchTableError(
                    f"unknown system table {name.system_table!r}: use snapshots, tags, ..."
                )
            return SYSTEM_TABLES[name.system_table.lower()]
        return TABLES[(name.database.lower(), name.table.lower())]

    def shadows(self, name: str) -> bool:
        return False

    def has_tag(self, name: TableName, tag: str) -> bool:
        return False

    def view(self, database: str, name: str, *, temporary: bool):
        return VIEWS.get((None if temporary else database.lower(), name.lower()))


def describe(binding: Binding) -> str:
    """A binding as one fixture line: view = table [columns] @time-travel {options}."""
    text = f"{binding.view} = {binding.table}"
    text += " *" if binding.columns is None else " [" + ", ".join(binding.columns) + "]"
    tt = binding.time_travel
    if tt is not None:
        if tt.snapshot_id is not None:
            text += f" @snapshot {tt.snapshot_id}"
        if tt.tag is not None:
            text += f" @tag {tt.tag!r}"
        if tt.timestamp is not None:
            text += f" @timestamp {tt.timestamp!r}"
        if tt.timestamp_millis is not None:
            text += f" @millis {tt.timestamp_millis}"
    if binding.options:
        text += " {" + ", ".join(f"{k}={v}" for k, v in binding.options.items()) + "}"
    return text


@dataclasses.dataclass(frozen=True)
class Fixture:
    file: str
    line: int
    text: str
    expected_sql: str | None
    expected_bindings: tuple[str, ...]
    error: str | None

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def load_fixtures() -> list[Fixture]:
    """Every block of every fixture file."""
    fixtures: list[Fixture] = []
    for path in sorted(FIXTURES.glob("*.sql")):
        lines = path.read_text("utf-8").splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].strip() or lines[i].startswith("--"):
                i += 1
                continue
            start = i
            while not lines[i].rstrip().endswith(";"):
                i += 1
            text = "\n".join(lines[start : i + 1]).rstrip()[:-1]
            i += 1
            head = lines[i]
            assert head.startswith(("-- =>", "-- error:")), (
                f"{path.name}:{i + 1}: expected '-- =>' or '-- error:'"
            )
            if head.startswith("-- error:"):
                fixtures.append(Fixture(path.name, start + 1, text, None, (), head))
                i += 1
                continue
            sql = [head[len("-- => ") :]]
            i += 1
            while i < len(lines) and lines[i].startswith("-- | "):
                sql.append(lines[i][len("-- | ") :])
                i += 1
            bindings = []
            while i < len(lines) and _BINDING.match(lines[i]):
                bindings.append(lines[i][3:])
                i += 1
            fixtures.append(Fixture(path.name, start + 1, text, "\n".join(sql), tuple(bindings), None))
    return fixtures


ALL_FIXTURES = load_fixtures()


def test_fixture_files_cover_the_brief() -> None:
    names = {f.file for f in ALL_FIXTURES}
    assert names >= {
        "basic.sql",
        "joins.sql",
        "scopes.sql",
        "projection.sql",
        "time_travel.sql",
        "hints.sql",
        "system_tables.sql",
        "statements.sql",
        "errors.sql",
    }
    assert len(ALL_FIXTURES) > 80


@pytest.mark.parametrize("fixture", ALL_FIXTURES, ids=[f.id for f in ALL_FIXTURES])
def test_fixture(fixture: Fixture) -> None:
    if fixture.error is not None:
        m = _ERROR.match(fixture.error)
        assert m, f"bad expectation {fixture.error!r}"
        with pytest.raises(SqlError) as info:
            bind(fixture.text, FakeCatalog(), "db")
        err = info.value
        assert (err.sqlstate, err.line, err.column) == (m.group(1), int(m.group(2)), int(m.group(3))), str(
            err
        )
        if m.group(4):
            assert m.group(4) in err.message
        return
    bound = bind(fixture.text, FakeCatalog(), "db")
    assert bound.sql == fixture.expected_sql
    assert tuple(describe(b) for b in bound.bindings) == fixture.expected_bindings
    for b in bound.bindings:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", b.view)
        assert b.view in bound.sql
    if bound.bindings and not re.match(r"INSERT OVERWRITE DIRECTORY USING|INSERT .* USING", bound.sql):
        sqlglot.parse_one(_for_sqlglot(bound.sql), read="spark")  # the output is still valid SQL


def _for_sqlglot(sql: str) -> str:
    """sqlglot reads EXPLAIN/DESCRIBE QUERY as opaque commands: check the query after the prefix."""
    return re.sub(
        r"^\s*(EXPLAIN(\s+EXTENDED|\s+FORMATTED|\s+CODEGEN|\s+COST)?|DESCRIBE\s+QUERY)\s", "", sql, flags=re.I
    )


# ------------------------------------------------------------------------- API details


def test_bound_query_shape() -> None:
    bound = bind(
        "SELECT id FROM t /*+ OPTIONS('scan.tag-name' = 'v1') */ VERSION AS OF 3", FakeCatalog(), "db"
    )
    assert bound == BoundQuery(
        "SELECT id FROM __dyntable_1_t AS t",
        (
            Binding(
                "__dyntable_1_t",
                TableName(None, "db", "t"),
                ("id",),
                TimeTravel(snapshot_id=3),
                {"scan.tag-name": "v1"},
            ),
        ),
    )
    table = bound.bindings[0].table
    assert (table.line, table.column, table.offset) == (1, 16, 15)


def test_counter_is_shared_across_statements() -> None:
    counter = itertools.count(7)
    first = bind("SELECT * FROM t", FakeCatalog(), "db", counter=counter)
    second = bind("SELECT * FROM u JOIN t USING (id)", FakeCatalog(), "db", counter=counter)
    assert [b.view for b in first.bindings] == ["__dyntable_7_t"]
    assert [b.view for b in second.bindings] == ["__dyntable_8_u", "__dyntable_9_t"]


def test_current_database_fills_names() -> None:
    bound = bind("SELECT amount FROM t", FakeCatalog(), "sales")
    assert describe(bound.bindings[0]) == "__dyntable_1_t = sales.t [amount]"
    assert bind("SELECT * FROM t", FakeCatalog(), "other").bindings == ()


def test_error_positions_are_relative_to_the_script() -> None:
    sql = "SELECT *\n  FROM t JOIN p$snapshots ON 1 = 1"
    with pytest.raises(SqlAnalysisError) as info:
        bind(sql, FakeCatalog(), "db", line=5, column=9)
    assert (info.value.line, info.value.column, info.value.sqlstate) == (6, 15, "42P01")
    with pytest.raises(SqlAnalysisError) as info:
        bind("SELECT * FROM p$snapshots", FakeCatalog(), "db", line=5, column=9)
    assert (info.value.line, info.value.column) == (5, 23)
    with pytest.raises(SqlParseError) as info:
        bind("SELECT id,\n FROM t WHERE", FakeCatalog(), "db", line=3, column=4)
    assert info.value.sqlstate == "42601" and info.value.line == 4


def test_unknown_system_table_is_reported_at_the_reference() -> None:
    with pytest.raises(SqlAnalysisError) as info:
        bind("SELECT 1,\n  2 FROM db.`t$nope`", FakeCatalog(), "db")
    err = info.value
    assert (err.sqlstate, err.line, err.column) == ("42P01", 2, 10)
    assert "unknown system table 'nope'" in err.message


def test_unparseable_sql_without_managed_names_is_passed_through() -> None:
    for sql in ["SELEC 1 FROM nowhere", "SELECT (", "", "SHOW FUNCTIONS", "ADD JAR /tmp/t.jar"]:
        assert bind(sql, FakeCatalog(), "db") == BoundQuery(sql, ())


def test_catalog_is_asked_with_names_as_written() -> None:
    catalog = FakeCatalog()
    bind("SELECT * FROM Sales.T, db.`t$snapshots`", catalog, "db")
    assert catalog.calls == [("Sales", "T"), ("db", "t")]


def test_spark_identifier() -> None:
    assert spark_identifier("t") == "t"
    assert spark_identifier("t$x") == "`t$x`"
    assert spark_identifier("left") == "`left`"
    assert spark_identifier("a`b") == "`a``b`"


# ------------------------------------------------------------------------- property test

# Managed names (several spellings) and what they bind to; Spark names that must stay.
MANAGED = [
    ("t", "db.t"),
    ("T", "db.T"),
    ("db.t", "db.t"),
    ("`db`.`u`", "db.u"),
    ("dyntable.db.u", "db.u"),
    ("sales.t", "sales.t"),
    ("`t$snapshots`", "db.t$snapshots"),
    ("t$branch_dev", "db.t$branch_dev"),
    ("Orders", "db.Orders"),
]
SPARK = ["p", "parquet_tbl", "other.t", "spark_catalog.db.t"]
_KEYWORDS = {
    "select",
    "from",
    "where",
    "join",
    "on",
    "as",
    "with",
    "union",
    "all",
    "and",
    "or",
    "not",
    "in",
    "exists",
    "left",
    "right",
    "inner",
    "outer",
    "full",
    "cross",
    "natural",
    "using",
    "group",
    "by",
    "order",
    "having",
    "limit",
    "lateral",
    "table",
    "values",
    "is",
    "null",
    "true",
    "false",
    "case",
    "when",
    "then",
    "else",
    "end",
    "anti",
    "semi",
    "except",
    "intersect",
    "minus",
    "window",
    "over",
    "distinct",
    "for",
    "version",
    "timestamp",
    "pivot",
    "unpivot",
    "tablesample",
    "qualify",
    "offset",
    "into",
    "asc",
    "desc",
    "like",
    "rlike",
    "between",
    "cluster",
    "distribute",
    "sort",
    "partition",
    "rows",
    "range",
    "interval",
    "cast",
    "if",
    "format",
    "to",
    "of",
    "at",
    "escape",
    "filter",
}


_ALIAS_WORDS = [
    "t",
    "u",
    "T",
    "x",
    "q",
    "db",
    "Orders",
    "snapshots",
    "t_1",
    "_a",
    "sales",
    "p",
    "c",
    "from",
    "select",
    "t$snapshots",
    "a b",
    "dyntable",
    "ORDER",
    "id",
]


@st.composite
def identifiers(draw: st.DrawFn) -> str:
    word = draw(st.sampled_from(_ALIAS_WORDS) | st.text("abcxyzT_09", min_size=1, max_size=5))
    if word.lower() in _KEYWORDS or not re.fullmatch(r"[A-Za-z_]\w*", word) or draw(st.booleans()):
        return "`" + word + "`"
    return word


@st.composite
def queries(
    draw: st.DrawFn, depth: int = 2, ctes: frozenset[str] = frozenset()
) -> tuple[str, list[tuple[str, str]]]:
    """A random query and its managed references as (written name, bound table), in text order."""
    bound: list[tuple[str, str]] = []
    sources = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(["managed", "spark", "cte", "sub"] if depth else ["managed", "spark", "cte"])
        )
        if kind == "managed":
            text, target = draw(st.sampled_from(MANAGED))
            bound.append((text, target))
        elif kind == "spark":
            text = draw(st.sampled_from(SPARK))
        elif kind == "cte" and ctes:
            text = draw(st.sampled_from(sorted(ctes)))
        else:
            inner, inner_bound = draw(queries(depth - 1, ctes))
            text = f"({inner})"
            bound.extend(inner_bound)
        alias = draw(st.none() | identifiers())
        if text.startswith("(") and alias is None:
            alias = "q"
        sources.append(text + (f" AS {alias}" if alias else ""))
    select = draw(st.sampled_from(["*", "id", "count(*)", "1 AS one"]))
    sql = f"SELECT {select} FROM " + " JOIN ".join(
        s if i == 0 else s + " ON 1 = 1" for i, s in enumerate(sources)
    )
    if depth and draw(st.booleans()):
        inner, inner_bound = draw(queries(depth - 1, ctes))
        sql += f" WHERE EXISTS ({inner})"
        bound.extend(inner_bound)
    return sql, bound


@st.composite
def statements(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A random statement and the tables its managed references bind (CTE names shadow tables)."""
    if draw(st.booleans()):
        sql, bound = draw(queries())
        return sql, [target for _, target in bound]
    # A CTE named like a managed table shadows it in the main query, but not in its own body.
    name = draw(st.sampled_from(["t", "u", "c", "Orders", "T"]))
    body, body_bound = draw(queries(1, frozenset()))
    main, main_bound = draw(queries(1, frozenset({name, name.upper(), name.lower()})))
    kept = [target for written, target in main_bound if written.lower() != name.lower()]
    return f"WITH {name} AS ({body}) {main}", [target for _, target in body_bound] + kept


@settings(max_examples=60, deadline=None)
@given(statements())
def test_random_queries_leave_no_managed_name_unbound(case: tuple[str, list[str]]) -> None:
    sql, expected = case
    bound = bind(sql, FakeCatalog(), "db")
    out = bound.sql
    sites = re.findall(r"\b(__dyntable_\d+_\w+)", out)
    by_view = {b.view: b for b in bound.bindings}
    assert sorted(str(by_view[v].table).lower() for v in sites) == sorted(e.lower() for e in expected)
    assert set(sites) == set(by_view)
    # Independent check on the output: no table position still names a managed table,
    # except a single-part name that a CTE of the statement defines.
    tree = sqlglot.parse_one(out, read="spark")
    cte_names = {c.alias.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier) or table.name.startswith("__dyntable_"):
            continue
        db = table.db or "db"
        managed = (db.lower(), table.name.lower()) in TABLES and table.catalog.lower() in ("", "dyntable")
        assert not managed or (not table.db and table.name.lower() in cte_names), (sql, out)


# ---------------------------------------------------------------- views (docs/sql-views.md)


def _view(name, sql, columns, database="db", query_columns=None):
    from sqlext.parse.views import ViewDefinition

    return ViewDefinition(name, database, sql, "db", tuple(columns), tuple(query_columns or columns))


@pytest.fixture
def views():
    VIEWS.clear()
    VIEWS[("db", "pv")] = _view(
        "pv", "SELECT id, name FROM t WHERE id > 1", ["ident", "nm"], query_columns=["id", "name"]
    )
    VIEWS[(None, "tv")] = _view("tv", "SELECT count(*) AS n FROM pv", ["n"], database=None)
    yield VIEWS
    VIEWS.clear()


def test_a_view_is_expanded_into_its_bound_query(views) -> None:
    bound = bind("SELECT ident FROM pv WHERE nm = 'a'", FakeCatalog(), "db")
    assert bound.sql == (
        "SELECT ident FROM (SELECT id AS ident, name AS nm FROM (\n"
        "SELECT id, name FROM __dyntable_1_t AS t WHERE id > 1\n) AS __dyntable_view) AS pv WHERE nm = 'a'"
    )
    assert [describe(b) for b in bound.bindings] == ["__dyntable_1_t = db.t [id, name]"]
    assert [v.label for v in bound.views] == ["db.pv"]


def test_views_over_views_and_the_table_statement(views) -> None:
    bound = bind("TABLE tv", FakeCatalog(), "db")
    assert bound.sql.startswith(
        "SELECT * FROM (SELECT n FROM (\nSELECT count(*) AS n FROM (SELECT id AS ident"
    )
    assert bound.sql.endswith(") AS tv")
    assert [v.label for v in bound.views] == ["tv", "db.pv"]
    assert [b.table.table for b in bound.bindings] == ["t"]
    # a temporary view shadows a table of the same name; a qualified name never names one
    views[(None, "t")] = _view("t", "SELECT 1 AS one FROM u", ["one"], database=None)
    assert "__dyntable_1_u" in bind("SELECT * FROM t", FakeCatalog(), "db").sql
    assert "__dyntable_1_t" in bind("SELECT * FROM db.t", FakeCatalog(), "db").sql


def test_views_refuse_time_travel_hints_and_cycles(views) -> None:
    with pytest.raises(SqlAnalysisError) as e:
        bind("SELECT * FROM pv VERSION AS OF 1", FakeCatalog(), "db")
    assert (e.value.sqlstate, e.value.column) == ("42809", 15)
    with pytest.raises(SqlAnalysisError) as e:
        bind("SELECT * FROM pv /*+ OPTIONS('a' = 'b') */", FakeCatalog(), "db")
    assert e.value.sqlstate == "42809"
    views[("db", "loop")] = _view("loop", "SELECT x FROM loop2", ["x"])
    views[("db", "loop2")] = _view("loop2", "SELECT x FROM loop", ["x"])
    with pytest.raises(SqlAnalysisError) as e:
        bind("SELECT * FROM loop", FakeCatalog(), "db")
    assert e.value.sqlstate == "42P17" and (e.value.line, e.value.column) == (1, 15)
    assert "db.loop -> db.loop2 -> db.loop" in e.value.message
