"""Planners of views and cached tables over a fake context (no JVM): the view action of CREATE/DROP
VIEW and CACHE/UNCACHE TABLE, what goes to the SQL engine, and the checks (names, columns, what a
view may replace, temporary reads of a permanent view), all before anything is kept."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sqlext.bind.rewrite import Binding, BoundQuery
from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import CacheTable, Column, CreateView, Done, DropView, ToEngine, UncacheTable
from sqlext.execute.view_stmts import PLANNERS
from sqlext.parse.names import TableName
from tests.sqlext.execute.fake_context import FakeContext, fake_context, plan_of, view

QUERY = "SELECT id, v FROM t"


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    ctx = fake_context(tmp_path)
    ctx.catalog.create_table("default.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                             options={"bucket": "-1"})
    reads_t = BoundQuery("SELECT id, v FROM __v0",
                         (Binding("__v0", TableName.parse("default.t"), None, None, {}),))
    ctx.queries[QUERY] = (Column("id", "bigint"), Column("v", "string"))
    ctx.bound[QUERY] = reads_t
    ctx.queries["SELECT 1 AS a"] = (Column("a", "int"),)  # reads nothing managed
    return ctx


def plan(ctx: FakeContext, sql: str):
    return plan_of(PLANNERS, ctx, sql)


# -- CREATE VIEW -----------------------------------------------------------------------------------
def test_a_permanent_view_over_a_managed_table(ctx):
    p = plan(ctx, f"CREATE VIEW w COMMENT 'c' AS {QUERY}")
    assert isinstance(p, CreateView) and p.message == "View default.w created"
    v = p.view
    assert (v.name, v.database, v.sql, v.current_database) == ("w", "default", QUERY, "default")
    assert (v.columns, v.query_columns, v.comment) == (("id", "v"), ("id", "v"), "c")
    assert ctx.views("default") == []  # planning keeps nothing


def test_a_temporary_view_with_a_column_list(ctx):
    p = plan(ctx, f"CREATE TEMPORARY VIEW w (a COMMENT 'first', b) AS {QUERY}")
    assert isinstance(p, CreateView) and p.view.database is None and not p.replaces
    assert (p.view.columns, p.view.column_comments) == (("a", "b"), ("first", None))
    assert p.message == "Temporary view w created"


def test_a_view_over_engine_tables_only_is_the_engines(ctx):
    assert plan(ctx, "CREATE VIEW w AS SELECT 1 AS a") == ToEngine()


def test_replacing_the_sessions_temporary_view_by_an_engine_one_forgets_it_first(ctx):
    ctx.temp_views["w"] = view("w", database=None)
    assert plan(ctx, "CREATE OR REPLACE TEMPORARY VIEW w AS SELECT 1 AS a") == DropView(
        "w", None, "", then_engine=True)
    with pytest.raises(SqlAnalysisError, match="already exists") as info:
        plan(ctx, "CREATE TEMPORARY VIEW w AS SELECT 1 AS a")
    assert info.value.sqlstate == "42710"


@pytest.mark.parametrize("holder", ["temp_views", "cached", "engine_views"])
def test_a_temporary_view_replaces_any_temporary_name_only_when_asked(ctx, holder):
    if holder == "temp_views":
        ctx.temp_views["w"] = view("w", database=None)
    elif holder == "cached":
        ctx.cached.add("w")
    else:
        ctx.engine_views.append("W")
    with pytest.raises(SqlAnalysisError, match="CREATE OR REPLACE TEMPORARY VIEW"):
        plan(ctx, f"CREATE TEMPORARY VIEW w AS {QUERY}")
    assert plan(ctx, f"CREATE TEMPORARY VIEW IF NOT EXISTS w AS {QUERY}") == Done(
        "View w already exists; nothing created")
    p = plan(ctx, f"CREATE OR REPLACE TEMPORARY VIEW w AS {QUERY}")
    assert isinstance(p, CreateView) and p.replaces


def test_column_checks(ctx):
    ctx.queries["SELECT id, id FROM t"] = (Column("id", "bigint"), Column("id", "bigint"))
    ctx.bound["SELECT id, id FROM t"] = ctx.bound[QUERY]
    with pytest.raises(SqlAnalysisError, match="two columns named 'id'") as info:
        plan(ctx, "CREATE VIEW w AS SELECT id, id FROM t")
    assert info.value.sqlstate == "42711"
    with pytest.raises(SqlAnalysisError, match="lists 1 column") as info:
        plan(ctx, f"CREATE VIEW w (a) AS {QUERY}")
    assert info.value.sqlstate == "21S01"


def test_a_view_cannot_read_itself(ctx):
    ctx.bound[QUERY] = BoundQuery("…", (), (view("w"),))
    with pytest.raises(SqlAnalysisError, match="would read itself") as info:
        plan(ctx, f"CREATE OR REPLACE VIEW w AS {QUERY}")
    assert info.value.sqlstate == "42K0H"


def test_a_permanent_view_cannot_read_a_temporary_one(ctx):
    ctx.cached.add("c")
    ctx.bound[QUERY] = BoundQuery("…", ctx.bound[QUERY].bindings, (), (("c",),))
    with pytest.raises(SqlAnalysisError, match="reads the temporary view c") as info:
        plan(ctx, f"CREATE VIEW w AS {QUERY}")
    assert info.value.sqlstate == "42K0F"
    assert isinstance(plan(ctx, f"CREATE TEMPORARY VIEW w AS {QUERY}"), CreateView)


def test_a_permanent_view_cannot_take_a_tables_name_or_an_existing_views(ctx):
    with pytest.raises(SqlAnalysisError, match="is a table"):
        plan(ctx, f"CREATE VIEW t AS {QUERY}")
    ctx.view_definitions.append(view("W"))
    with pytest.raises(SqlAnalysisError, match="CREATE OR REPLACE VIEW"):
        plan(ctx, f"CREATE VIEW w AS {QUERY}")
    p = plan(ctx, f"CREATE OR REPLACE VIEW w AS {QUERY}")
    assert isinstance(p, CreateView) and p.replaces
    with pytest.raises(SqlAnalysisError, match="database 'nope' does not exist") as info:
        plan(ctx, f"CREATE VIEW nope.w AS {QUERY}")
    assert info.value.sqlstate == "3F000"


def test_view_names(ctx):
    with pytest.raises(SqlAnalysisError, match="has no database") as info:
        plan(ctx, f"CREATE TEMPORARY VIEW default.w AS {QUERY}")
    assert info.value.sqlstate == "42602"
    with pytest.raises(SqlAnalysisError, match="GLOBAL TEMPORARY") as info:
        plan(ctx, f"CREATE GLOBAL TEMPORARY VIEW w AS {QUERY}")
    assert info.value.sqlstate == "0A000"


# -- DROP VIEW -------------------------------------------------------------------------------------
def test_drop_view_finds_what_the_name_is(ctx):
    ctx.temp_views["a"] = view("a", database=None)
    ctx.cached.add("b")
    ctx.engine_views.append("c")
    ctx.view_definitions.append(view("d"))
    assert plan(ctx, "DROP VIEW a") == DropView("a", None, "View a dropped")
    assert plan(ctx, "DROP VIEW b") == DropView("b", None, "View b dropped")
    assert plan(ctx, "DROP VIEW c") == ToEngine()
    p = plan(ctx, "DROP VIEW default.d")
    assert isinstance(p, DropView) and p.stored is not None and p.stored.name == "d"
    assert plan(ctx, "DROP VIEW global_temp.g") == ToEngine()
    assert plan(ctx, "DROP VIEW IF EXISTS e") == Done("View e does not exist; nothing dropped")
    with pytest.raises(SqlAnalysisError, match="SHOW VIEWS lists the views") as info:
        plan(ctx, "DROP VIEW e")
    assert info.value.sqlstate == "42P01"
    with pytest.raises(SqlAnalysisError, match="use DROP TABLE") as info:
        plan(ctx, "DROP VIEW t")
    assert info.value.sqlstate == "42809"


# -- CACHE / UNCACHE -------------------------------------------------------------------------------
def test_cache_a_query_over_managed_tables(ctx):
    p = plan(ctx, f"CACHE LAZY TABLE c OPTIONS ('storageLevel' 'DISK_ONLY') AS {QUERY}")
    assert p == CacheTable("c", QUERY, "default", True, {"storageLevel": "DISK_ONLY"},
                           "Table c cached (lazily)")
    assert plan(ctx, "CACHE TABLE c AS SELECT 1 AS a") == ToEngine()


def test_cache_a_managed_table_by_the_name_the_session_reads(ctx):
    p = plan(ctx, "CACHE TABLE t")
    assert isinstance(p, CacheTable) and p.sql == "SELECT * FROM t" and p.message == "Table t cached"
    with pytest.raises(SqlAnalysisError, match="USE default first") as info:
        plan(ctx, "CACHE TABLE default.t")
    assert info.value.sqlstate == "0A000"
    assert plan(ctx, "CACHE TABLE spark_table") == ToEngine()


def test_a_cache_cannot_take_a_temporary_views_name(ctx):
    ctx.temp_views["c"] = view("c", database=None)
    with pytest.raises(SqlAnalysisError, match="DROP VIEW it first"):
        plan(ctx, f"CACHE TABLE c AS {QUERY}")
    with pytest.raises(SqlAnalysisError, match="without a database") as info:
        plan(ctx, f"CACHE TABLE default.c AS {QUERY}")
    assert info.value.sqlstate == "42602"


def test_uncache(ctx):
    ctx.cached.add("c")
    assert plan(ctx, "UNCACHE TABLE c") == UncacheTable("c", "Table c uncached")
    assert plan(ctx, "UNCACHE TABLE IF EXISTS other") == ToEngine()
