"""The row-level planners on data-evolution tables over a fake context (no JVM): UPDATE becomes an
``UpdateColumns`` plan of only the changed columns, DELETE with deletion vectors marks rows by row
id, MERGE INTO a ``MergeInto`` plan by row id with its changed columns; and what Paimon refuses on
such a table (DELETE without deletion vectors, NOT MATCHED BY SOURCE other than DELETE, a
partition column set) is refused with SQLSTATE 0A000 at the statement, before anything runs."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.types import parse_sql_type
from sqlext.errors import UnsupportedStatementError
from sqlext.execute import merge_clauses, row_level
from sqlext.execute.dml_common import count_rows
from sqlext.execute.planning import Column, MarkDeletions, Matched, MergeInto, UpdateColumns
from sqlext.parse.parser import parse_statement
from sqlext.parse.splitter import Statement
from tests.sqlext.execute.fake_context import FakeContext, fake_context

INT, STRING = parse_sql_type("INT"), parse_sql_type("STRING")
AT = (4, 2)
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    ctx = fake_context(tmp_path)
    ctx.queries["SELECT * FROM s"] = (Column("id", "int", True, INT), Column("v", "string", True, STRING))
    return ctx


def plan(ctx: FakeContext, sql: str):
    stmt = Statement(sql, AT[0], AT[1], 0)
    node = parse_statement(sql, AT[0], AT[1], offset=0)
    planners = {**row_level.PLANNERS, **merge_clauses.PLANNERS}
    return planners[type(node)](ctx, node, stmt)


def create(ctx: FakeContext, *, rows: bool = True, parted: bool = False, **options: str):
    fields = [("id", INT), ("v", STRING), ("n", INT), ("dt", STRING)]
    ctx.catalog.create_table("default.t", fields, partition_keys=["dt"] if parted else [],
                             options={**EVOLUTION, **options})
    table = ctx.catalog.get_table("default.t")
    if rows:
        table.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"],
                                    "n": pa.array([1, 2], pa.int32()), "dt": ["x", "x"]}))
    return table


def refused(ctx: FakeContext, sql: str, match: str) -> None:
    with pytest.raises(UnsupportedStatementError, match=match) as info:
        plan(ctx, sql)
    assert info.value.sqlstate == "0A000"
    assert (info.value.line, info.value.column) == AT


def test_update_writes_only_the_changed_columns_by_row_id(ctx):
    table = create(ctx)
    p = plan(ctx, "UPDATE t SET v = upper(v), id = id, n = t.n WHERE id = 2")
    assert isinstance(p, UpdateColumns)
    assert p.columns == ("v",)  # SET id = id and n = t.n change nothing: not written
    assert p.snapshot == table.latest_snapshot()
    select = p.rows.select
    assert "`t`._ROW_ID AS _ROW_ID" in select
    assert f"coalesce((id = 2), false) AS {p.matched_column}" in select
    assert "CASE WHEN coalesce((id = 2), false) THEN ((upper(v))) ELSE `t`.`v` END AS `v`" in select
    assert ctx.asked == []  # planning ran no query


def test_update_without_where_matches_every_row(ctx):
    create(ctx)
    p = plan(ctx, "UPDATE t SET n = 0")
    assert isinstance(p, UpdateColumns) and p.columns == ("n",)
    assert f"true AS {p.matched_column}" in p.rows.select


def test_update_of_an_empty_table_reports_no_rows(ctx):
    create(ctx, rows=False)
    assert plan(ctx, "UPDATE t SET n = 0") == count_rows(0, "updated")


def test_update_of_a_partition_column_is_refused(ctx):
    create(ctx, parted=True)
    refused(ctx, "UPDATE t SET dt = 'y' WHERE id = 1", "partition column 'dt'")


def test_delete_needs_deletion_vectors(ctx):
    create(ctx)
    refused(ctx, "DELETE FROM t WHERE id = 1", "data-evolution.enabled.*deletion-vectors.enabled")


def test_delete_with_deletion_vectors_marks_rows_by_row_id(ctx):
    table = create(ctx, **{"deletion-vectors.enabled": "true"})
    p = plan(ctx, "DELETE FROM t WHERE id = 1")
    assert isinstance(p, MarkDeletions) and p.by_row_id and p.rows is None
    assert (p.snapshot, p.matched, p.verb) == (table.latest_snapshot(), Matched("t", "id = 1"), "deleted")


def test_merge_is_planned_by_row_id_with_the_changed_columns(ctx):
    create(ctx)
    p = plan(ctx, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.v = 'q' THEN UPDATE SET t.n = s.id "
                  "WHEN MATCHED THEN UPDATE SET v = s.v, id = t.id WHEN NOT MATCHED THEN INSERT (id, v) "
                  "VALUES (s.id, s.v)")
    assert isinstance(p, MergeInto) and p.data_evolution
    assert p.update_columns == ("v", "n")  # in the table's order; id = t.id changes nothing


def test_merge_delete_needs_deletion_vectors(ctx):
    create(ctx)
    refused(ctx, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "deletion-vectors.enabled")


def test_merge_not_matched_by_source_may_only_delete(ctx):
    create(ctx, **{"deletion-vectors.enabled": "true"})
    refused(ctx, "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET n = 0",
            "NOT MATCHED BY SOURCE supports only DELETE")
    p = plan(ctx, "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert isinstance(p, MergeInto) and p.data_evolution and p.update_columns == ()


def test_a_self_merge_on_row_id_selects_the_sources_metadata_column(ctx):
    """Paimon's self-merge (``USING t AS source ON t._ROW_ID = source._ROW_ID``): the source's
    ``_ROW_ID`` is selected by name in the joined query (a star never shows a metadata column)."""
    create(ctx)
    p = plan(ctx, "MERGE INTO t USING t AS source ON t._ROW_ID = source._ROW_ID "
                  "WHEN MATCHED THEN UPDATE SET t.n = source.n + 1")
    assert isinstance(p, MergeInto) and p.clauses.source_metadata == ("_ROW_ID",)
    assert "(SELECT `source`.*, `source`.`_ROW_ID`, true AS __dyn_s" in p.clauses.joined_sql("v")
