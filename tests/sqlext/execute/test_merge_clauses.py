"""The MERGE INTO planner over a fake context (no JVM): the ``MergeInto`` plan (the target, its
snapshot, whether deletion vectors take the changes), each clause's values and key checks, the
joined query's text, ``MERGE … *`` with and without ``write.merge-schema``, and the typed errors
of what needs no data, pointing at the statement."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.types import parse_sql_type
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.merge_clauses import PLANNERS
from sqlext.execute.planning import Column, MergeInto, ToEngine
from sqlext.parse.parser import parse_statement
from sqlext.parse.splitter import Statement
from tests.sqlext.execute.fake_context import FakeContext, fake_context

INT, STRING = parse_sql_type("INT"), parse_sql_type("STRING")
AT = (2, 7)
ON = "MERGE INTO t USING s ON t.id = s.id "


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    ctx = fake_context(tmp_path)
    ctx.queries["SELECT * FROM s"] = (Column("id", "int", True, INT), Column("v", "string", True, STRING))
    return ctx


def create(ctx: FakeContext, *, pk: bool = False, **options: str):
    ctx.catalog.create_table("default.t", [("id", INT), ("v", STRING)], primary_keys=["id"] if pk else [],
                             options={**({"bucket": "1"} if pk else {}), **options})
    return ctx.catalog.get_table("default.t")


def plan(ctx: FakeContext, sql: str):
    stmt = Statement(sql, AT[0], AT[1], 0)
    node = parse_statement(sql, AT[0], AT[1], offset=0)
    return PLANNERS[type(node)](ctx, node, stmt)


def refused(ctx: FakeContext, sql: str, error: type, sqlstate: str, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        plan(ctx, sql)
    assert info.value.sqlstate == sqlstate
    assert (info.value.line, info.value.column) == AT


def test_a_target_spark_owns_goes_to_spark(ctx):
    assert plan(ctx, ON + "WHEN MATCHED THEN DELETE") == ToEngine(bind=True, row_level=True)


def test_merge_on_an_append_table_is_one_joined_query_at_the_latest_snapshot(ctx):
    table = create(ctx)
    snapshot = table.write_arrow(pa.table({"id": pa.array([1], pa.int32()), "v": ["a"]})).snapshot_ids[-1]
    p = plan(ctx, ON + "WHEN MATCHED AND s.v IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
                  "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, upper(s.v))")
    assert isinstance(p, MergeInto) and p.snapshot.id == snapshot and not p.deletion_vectors
    c = p.clauses
    assert (c.kinds, c.actions) == (["matched"] * 2 + ["not_matched"], ["delete", "update", "insert"])
    assert c.values == [{}, {"v": "(s.v)"}, {"id": "s.id", "v": "upper(s.v)"}]
    assert c.key_checks == {} and ctx.asked == []  # no `*`: the source's columns are not needed
    sql = c.joined_sql("view3")
    # An append table keeps its unmatched rows (they are rewritten with their partition): FULL OUTER.
    assert " FROM view3 AS `t`) AS `t` FULL OUTER JOIN (SELECT `s`.*, true AS __dyn_s, " in sql
    assert "(s.v IS NULL) AS __dyn_c0" in sql and "((s.v)) AS __dyn_v1_1" in sql
    assert "FROM s AS `s`) AS `s` ON t.id = s.id" in sql


def test_merge_on_a_key_table_checks_key_assignments_on_the_data(ctx):
    create(ctx, pk=True)
    p = plan(ctx, ON + "WHEN MATCHED THEN UPDATE SET id = s.id, v = s.v")
    assert isinstance(p, MergeInto) and p.snapshot is None
    check, assigned = p.clauses.key_checks[0]
    assert check == "NOT (((s.id)) <=> `t`.`id`)" and assigned.keys == ["id"]
    # A key table keeps only matched pairs for MATCHED clauses alone: an INNER join.
    assert "INNER JOIN" in p.clauses.joined_sql("v") and "AS __dyn_k0" in p.clauses.joined_sql("v")


def test_merge_on_a_dv_table_marks_deletion_vectors(ctx):
    create(ctx, **{"deletion-vectors.enabled": "true"})
    p = plan(ctx, ON + "WHEN MATCHED THEN DELETE")
    assert isinstance(p, MergeInto) and p.deletion_vectors
    assert ", `t`.`__dyn_file` AS `__dyn_file`" in p.clauses.joined_sql("v", ("__dyn_file",))


@pytest.mark.parametrize("engine", ["first-row", "aggregation"])
def test_merge_on_a_table_whose_written_row_is_not_the_row_is_refused(ctx, engine):
    create(ctx, pk=True, **{"merge-engine": engine})
    refused(ctx, ON + "WHEN MATCHED THEN UPDATE SET v = s.v", UnsupportedStatementError, "0A000",
            f"MERGE INTO is not supported.*'{engine}'")


def test_merge_delete_on_a_key_table_that_ignores_deletes_is_refused(ctx):
    create(ctx, pk=True, **{"ignore-delete": "true"})
    refused(ctx, ON + "WHEN MATCHED THEN DELETE", UnsupportedStatementError, "0A000",
            "run DELETE FROM instead")


@pytest.mark.parametrize(("clause", "sqlstate", "match"), [
    ("WHEN NOT MATCHED THEN INSERT VALUES (s.id)", "21S01", r"lists 2 column\(s\) but 1 value"),
    ("WHEN NOT MATCHED THEN INSERT (id, nope) VALUES (s.id, 1)", "42703", "has no column 'nope'"),
    ("WHEN MATCHED THEN UPDATE SET nope = 1", "42703", "has no column 'nope'"),
])
def test_clause_errors_need_no_data_and_point_at_the_statement(ctx, clause, sqlstate, match):
    create(ctx)
    refused(ctx, ON + clause, SqlAnalysisError, sqlstate, match)


def test_star_clauses_take_the_source_columns_by_name(ctx):
    create(ctx)
    p = plan(ctx, ON + "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert isinstance(p, MergeInto) and ctx.asked == ["SELECT * FROM s"]
    assert p.clauses.values == [{"id": "`s`.`id`", "v": "`s`.`v`"}] * 2


def test_star_needs_every_target_column_in_the_source_without_merge_schema(ctx):
    ctx.catalog.create_table("default.t", [("id", INT), ("v", STRING), ("w", INT)])
    refused(ctx, ON + "WHEN NOT MATCHED THEN INSERT *", SqlAnalysisError, "42703",
            "needs a source column 'w'")


def test_merge_schema_evolves_the_target_for_the_sources_extra_columns(ctx):
    create(ctx, **{"write.merge-schema": "true"})
    ctx.queries["SELECT * FROM s"] += (Column("x", "int", True, INT),)
    p = plan(ctx, ON + "WHEN NOT MATCHED THEN INSERT *")
    assert isinstance(p, MergeInto) and list(p.table.schema.field_names) == ["id", "v", "x"]
    assert p.clauses.values == [{"id": "`s`.`id`", "v": "`s`.`v`", "x": "`s`.`x`"}]
    # The read sees the stored schema: the new column is NULL on the target side.
    assert "CAST(NULL AS int) AS __dyn_t2" in p.clauses.joined_sql("v")
    assert list(ctx.catalog.get_table("default.t").schema.field_names) == ["id", "v"]  # nothing published
