"""Planners of SET/RESET, SHOW DATABASES/TABLES, SHOW JOBS and STOP JOB over a fake context (no JVM)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import JobStatus, ResetOption, Rows, SetOption, StopJob, message_of
from sqlext.execute.session_stmts import PLANNERS
from tests.sqlext.execute.fake_context import fake_context, plan_of


@pytest.fixture
def ctx(tmp_path):
    return fake_context(tmp_path)


def run(ctx, sql):
    return plan_of(PLANNERS, ctx, sql)


def rows(plan) -> list[dict]:
    assert isinstance(plan, Rows), plan
    return plan.table.to_pylist()


# -- SET / RESET ----------------------------------------------------------------------------------
def test_set_key_value_is_an_action_not_a_change(ctx):
    plan = run(ctx, "SET spark.sql.shuffle.partitions = 4")
    assert plan == SetOption("spark.sql.shuffle.partitions", "4")
    assert ctx.options == {}  # the runner sets it, not the planner
    assert message_of(plan) == "spark.sql.shuffle.partitions = 4"


def test_set_lists_every_session_option_sorted(ctx):
    ctx.options.update({"b.key": "2", "a.key": "1"})
    assert rows(run(ctx, "SET")) == [{"key": "a.key", "value": "1"}, {"key": "b.key", "value": "2"}]


def test_set_with_no_options_is_an_empty_key_value_table(ctx):
    plan = run(ctx, "SET")
    assert plan.table.schema == pa.schema([("key", pa.string()), ("value", pa.string())])
    assert plan.table.num_rows == 0


def test_set_key_shows_the_session_value_first(ctx):
    ctx.options["x.y"] = "session"
    ctx.settings["x.y"] = "engine"
    assert rows(run(ctx, "SET x.y")) == [{"key": "x.y", "value": "session"}]


def test_set_key_falls_back_to_the_engine_setting(ctx):
    ctx.settings["spark.sql.ansi.enabled"] = "true"
    got = rows(run(ctx, "SET spark.sql.ansi.enabled"))
    assert got == [{"key": "spark.sql.ansi.enabled", "value": "true"}]


def test_set_key_unknown_everywhere_is_undefined(ctx):
    assert rows(run(ctx, "SET no.such.key")) == [{"key": "no.such.key", "value": "<undefined>"}]


def test_reset_one_key(ctx):
    plan = run(ctx, "RESET a.b")
    assert plan == ResetOption("a.b")
    assert message_of(plan) == "Reset a.b"


def test_reset_all(ctx):
    plan = run(ctx, "RESET")
    assert plan == ResetOption(None)
    assert message_of(plan) == "Reset all session options"


# -- SHOW DATABASES -------------------------------------------------------------------------------
def test_show_databases_lists_the_catalog(ctx):
    ctx.catalog.create_database("sales")
    assert {r["namespace"] for r in rows(run(ctx, "SHOW DATABASES"))} == {"default", "sales"}


@pytest.mark.parametrize(("like", "expected"), [("sa%", {"sales"}), ("s_les", {"sales"}), ("x*", set())])
def test_show_databases_like(ctx, like, expected):
    ctx.catalog.create_database("sales")
    assert {r["namespace"] for r in rows(run(ctx, f"SHOW DATABASES LIKE '{like}'"))} == expected


def test_show_databases_column_is_a_string_even_when_empty(ctx):
    plan = run(ctx, "SHOW DATABASES LIKE 'none'")
    assert plan.table.schema.field("namespace").type == pa.string()


# -- SHOW TABLES ----------------------------------------------------------------------------------
def _tables(ctx, *names, database="default"):
    for name in names:
        ctx.catalog.create_table(f"{database}.{name}", pa.schema([("id", pa.int64())]))


def test_show_tables_of_the_current_database(ctx):
    _tables(ctx, "b", "a")
    assert [(r["namespace"], r["tableName"], r["isTemporary"]) for r in rows(run(ctx, "SHOW TABLES"))] == [
        ("default", "a", False), ("default", "b", False),
    ]


def test_show_tables_in_another_database(ctx):
    ctx.catalog.create_database("other")
    _tables(ctx, "t", database="other")
    assert [r["tableName"] for r in rows(run(ctx, "SHOW TABLES IN other"))] == ["t"]


def test_show_tables_like(ctx):
    _tables(ctx, "orders", "items")
    assert [r["tableName"] for r in rows(run(ctx, "SHOW TABLES LIKE 'ord%'"))] == ["orders"]


def test_show_tables_puts_temporary_views_last_each_group_by_name(ctx):
    _tables(ctx, "Zed", "alpha")
    ctx.views_listed = [("", "tmp_b", True), ("default", "view_a", False), ("", "Tmp_a", True)]
    got = [(r["tableName"], r["isTemporary"]) for r in rows(run(ctx, "SHOW TABLES"))]
    assert got == [("alpha", False), ("view_a", False), ("Zed", False), ("Tmp_a", True), ("tmp_b", True)]


def test_show_tables_current_database_follows_the_context(ctx):
    ctx.catalog.create_database("mine")
    _tables(ctx, "m", database="mine")
    ctx.current_database = "mine"
    assert [(r["namespace"], r["tableName"]) for r in rows(run(ctx, "SHOW TABLES"))] == [("mine", "m")]


# -- SHOW JOBS / STOP JOB -------------------------------------------------------------------------
def test_show_jobs_lists_each_job(ctx):
    ctx.job_list = [JobStatus("j1", "RUNNING", "INSERT INTO a SELECT 1"), JobStatus("j2", "FAILED", "x")]
    assert rows(run(ctx, "SHOW JOBS")) == [
        {"job_id": "j1", "status": "RUNNING", "statement": "INSERT INTO a SELECT 1"},
        {"job_id": "j2", "status": "FAILED", "statement": "x"},
    ]


def test_show_jobs_without_jobs_keeps_its_columns(ctx):
    plan = run(ctx, "SHOW JOBS")
    assert plan.table.column_names == ["job_id", "status", "statement"]
    assert plan.table.num_rows == 0


def test_stop_job_plans_the_stop(ctx):
    ctx.job_list = [JobStatus("abc", "RUNNING", "s")]
    plan = run(ctx, "STOP JOB 'abc'")
    assert plan == StopJob("abc")
    assert message_of(plan) == "Job abc stopped"


def test_stop_unknown_job_is_a_typed_error(ctx):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "STOP JOB 'nope'")
    assert e.value.sqlstate == "42704"
    assert "SHOW JOBS" in str(e.value)


# -- SHOW VIEWS -----------------------------------------------------------------------------------
def test_show_views_lists_the_database_views_then_temporary_ones(ctx):
    ctx.views_listed = [("default", "v1", False), ("", "tmp", True), ("other", "x", False)]
    got = [(r["namespace"], r["viewName"], r["isTemporary"]) for r in rows(run(ctx, "SHOW VIEWS"))]
    assert got == [("default", "v1", False), ("", "tmp", True)]


def test_show_views_in_a_missing_database(ctx):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "SHOW VIEWS IN nope")
    assert e.value.sqlstate == "3F000"


def test_show_views_without_views_keeps_its_columns(ctx):
    plan = run(ctx, "SHOW VIEWS")
    assert plan.table.column_names == ["namespace", "viewName", "isTemporary"]
    assert plan.table.num_rows == 0
