"""The CALL planner over a fake context (no JVM): the ``CallProcedure`` plan (the resolved
procedure, its bound values, where each argument is written), the argument and name errors it
raises before anything runs, and a metadata-only plan carried out over the same context."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sqlext.errors import ProcedureArgumentError, ProcedureTargetError, SqlAnalysisError
from sqlext.execute.call import PLANNERS, argument_offsets
from sqlext.execute.planning import CallProcedure
from sqlext.execute.procedures.plans import EngineWork
from sqlext.parse.parser import parse_statement
from tests.sqlext.execute.fake_context import FakeContext, carry_out, fake_context, plan_of


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    ctx = fake_context(tmp_path)
    table = ctx.catalog.create_table("default.t", pa.schema([("id", pa.int64())]), options={"bucket": "-1"})
    table.write_arrow(pa.table({"id": [1, 2]}))
    return ctx


def plan(ctx: FakeContext, sql: str) -> CallProcedure:
    p = plan_of(PLANNERS, ctx, sql)
    assert isinstance(p, CallProcedure), p
    return p


def test_a_call_is_its_procedure_and_bound_values(ctx):
    sql = "CALL sys.create_tag('default.t', 'v1', 1)"
    p = plan(ctx, sql)
    assert p.procedure.name == "create_tag"
    assert p.values == {"table": "default.t", "tag": "v1", "snapshot": 1, "time_retained": None}
    assert p.argument_at == {"table": sql.index("'default.t'"), "tag": sql.index("'v1'"),
                             "snapshot": sql.index("1)")}
    assert p.message == "Procedure create_tag finished"
    assert ctx.catalog.get_table("default.t").refs.tags.names() == []  # planning runs nothing


def test_named_arguments_point_at_their_values(ctx):
    sql = "CALL system.create_tag(table => 'default.t', Snapshot => 1, tag => 'v1')"
    p = plan(ctx, sql)
    assert (p.values["tag"], p.values["snapshot"]) == ("v1", 1)
    assert p.argument_at == {"table": sql.index("'default.t'"), "snapshot": sql.index("1,"),
                             "tag": sql.index("'v1'")}


def test_offsets_are_left_out_when_the_text_does_not_split_as_parsed():
    sql = "CALL sys.create_tag('default.t', /* a, b */ 'v1')"
    n = parse_statement(sql, 1, 1, offset=0)
    assert argument_offsets(n, ["table", "tag"], sql) == {}


def test_an_unknown_procedure_is_refused_at_the_statement(ctx):
    with pytest.raises(SqlAnalysisError, match="did you mean create_tag") as info:
        plan_of(PLANNERS, ctx, "CALL sys.create_tags('default.t', 'v1')")
    assert info.value.sqlstate == "42883" and info.value.line == 1


def test_a_bad_argument_is_refused_before_anything_runs(ctx):
    with pytest.raises(ProcedureArgumentError, match="'snapshot' must be an integer") as info:
        plan_of(PLANNERS, ctx, "CALL sys.create_tag('default.t', 'v1', 'latest')")
    assert info.value.sqlstate == "22023" and info.value.line == 1
    with pytest.raises(ProcedureArgumentError, match="required argument 'tag' is missing"):
        plan_of(PLANNERS, ctx, "CALL sys.create_tag('default.t')")


def test_a_metadata_procedures_plan_carries_out_over_the_context(ctx):
    p = plan(ctx, "CALL sys.create_tag('default.t', 'v1', 1)")
    assert isinstance(p.work, EngineWork) and p.work.table.name == "default.t"
    result = carry_out(p)  # what the runner does
    assert result.column(0).to_pylist() == [True]
    assert ctx.catalog.get_table("default.t").refs.tags.names() == ["v1"]


def test_a_missing_snapshot_names_the_argument_the_runner_points_at(ctx):
    sql = "CALL sys.create_tag('default.t', 'v1', 99)"
    p = plan(ctx, sql)
    with pytest.raises(ProcedureTargetError) as info:
        carry_out(p)
    assert info.value.argument == "snapshot" and p.argument_at["snapshot"] == sql.index("99")
