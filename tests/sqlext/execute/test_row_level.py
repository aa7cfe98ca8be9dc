"""The DELETE, UPDATE and TRUNCATE planners over a fake context (no JVM): the row-level plan each kind of
table gets (append, primary-key by merge engine, deletion vectors), what metadata answers alone
(empty tables, DELETE without WHERE on a DV table), the typed errors with the statement's position,
and that planning changes nothing and runs no query."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engine.types import parse_sql_type
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.dml_common import count_rows
from sqlext.execute.planning import (
    MarkDeletions,
    Matched,
    RowLevelWrite,
    Rows,
    TargetQuery,
    ToEngine,
    TruncateTable,
)
from sqlext.execute.row_level import PLANNERS, check_rewritable
from sqlext.parse.parser import parse_statement
from sqlext.parse.splitter import Statement
from tests.sqlext.execute.fake_context import FakeContext, fake_context

INT, STRING = parse_sql_type("INT"), parse_sql_type("STRING")
AT = (3, 5)  # where the statement starts in its script: errors point there


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    return fake_context(tmp_path)


def plan(ctx: FakeContext, sql: str):
    stmt = Statement(sql, AT[0], AT[1], 0)
    node = parse_statement(sql, AT[0], AT[1], offset=0)
    return PLANNERS[type(node)](ctx, node, stmt)


def create(ctx: FakeContext, name: str, *, pk: bool = False, parted: bool = False, **options: str):
    fields = [("id", INT), ("v", STRING), ("dt", STRING)]
    ctx.catalog.create_table(f"default.{name}", fields, partition_keys=["dt"] if parted else [],
                             primary_keys=["id"] + (["dt"] if parted else []) if pk else [],
                             options={**({"bucket": "1"} if pk else {}), **options})
    return ctx.catalog.get_table(f"default.{name}")


def add(table, ids: list[int], dt: str = "a"):
    data = pa.table({"id": pa.array(ids, pa.int32()), "v": [f"v{i}" for i in ids], "dt": [dt] * len(ids)})
    return table.write_arrow(data).snapshot_ids[-1]


def errors_at_statement(info: pytest.ExceptionInfo) -> None:
    assert (info.value.line, info.value.column) == AT


# -- tables dyntable does not manage, and read-only ones ------------------------------------------
@pytest.mark.parametrize("sql", ["DELETE FROM spark_t WHERE a = 1", "TRUNCATE TABLE spark_t"])
def test_a_table_spark_owns_goes_to_spark_as_a_row_level_change(ctx, sql):
    assert plan(ctx, sql) == ToEngine(bind=True, row_level=True)


@pytest.mark.parametrize("sql", ["DELETE FROM `t$snapshots` WHERE id = 1", "TRUNCATE TABLE `t$files`"])
def test_a_system_table_is_read_only(ctx, sql):
    create(ctx, "t")
    with pytest.raises(SqlAnalysisError, match="read-only") as info:
        plan(ctx, sql)
    assert info.value.sqlstate == "42809"
    errors_at_statement(info)


def test_a_key_table_with_a_rowkind_column_is_refused(ctx):
    ctx.catalog.create_table("default.k", [("id", INT), ("rowkind", STRING)], primary_keys=["id"],
                             options={"bucket": "1"})
    with pytest.raises(UnsupportedStatementError, match="rename that column") as info:
        plan(ctx, "DELETE FROM k WHERE id = 1")
    assert info.value.sqlstate == "0A000"
    errors_at_statement(info)


# -- DELETE on append tables: copy-on-write -------------------------------------------------------
def test_delete_on_an_append_table_rewrites_the_partitions_holding_matched_rows(ctx):
    snapshot = add(create(ctx, "t", parted=True), [1, 2])
    p = plan(ctx, "DELETE FROM t AS x WHERE id = 1")
    assert isinstance(p, RowLevelWrite)
    assert (p.snapshot, p.overwrite, p.verb) == (snapshot, "matched", "deleted")
    assert p.matched == Matched("x", "id = 1")
    assert p.rows == TargetQuery("`x`.*", "x", "NOT (id = 1) OR (id = 1) IS NULL")
    assert p.rows.sql("view7") == "SELECT `x`.* FROM view7 AS `x` WHERE NOT (id = 1) OR (id = 1) IS NULL"
    assert (p.partition_of, dict(p.options)) == ((), {})
    assert ctx.asked == []  # the rows are found by the runner, not while planning


def test_the_alias_defaults_to_the_table_name(ctx):
    add(create(ctx, "t"), [1])
    p = plan(ctx, "DELETE FROM t WHERE id = 1")
    assert isinstance(p, RowLevelWrite) and p.matched == Matched("t", "id = 1")


def test_delete_on_an_empty_table_still_checks_its_condition_at_run_time(ctx):
    # An empty table is planned like any other: the condition is bound (and refused if wrong) when run.
    create(ctx, "t")
    p = plan(ctx, "DELETE FROM t WHERE nope = 1")
    assert isinstance(p, RowLevelWrite) and p.snapshot is None


def test_delete_without_where_counts_the_rows_then_truncates(ctx):
    snapshot = add(create(ctx, "t"), [1, 2, 3])
    p = plan(ctx, "DELETE FROM t")
    assert isinstance(p, TruncateTable) and p.table.name == "default.t"
    assert (p.partition, p.snapshot, p.count, p.count_rows, p.verb) == (None, snapshot, None, True, "deleted")


def test_delete_without_where_on_an_empty_table_is_answered_from_metadata(ctx):
    create(ctx, "t")
    assert plan(ctx, "DELETE FROM t") == count_rows(0, "deleted")


# -- DELETE on primary-key tables, by merge engine -----------------------------------------------
@pytest.mark.parametrize("options", [
    {},
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true"},
])
def test_delete_on_a_key_table_whose_deletes_remove_rows_writes_delete_rows(ctx, options):
    snapshot = add(create(ctx, "k", pk=True, **options), [1, 2])
    p = plan(ctx, "DELETE FROM k WHERE v = 'v1'")
    assert isinstance(p, RowLevelWrite)
    assert (p.snapshot, p.overwrite, p.matched) == (snapshot, "none", None)
    assert p.rows.sql("s") == "SELECT `k`.*, '-D' AS rowkind FROM s AS `k` WHERE v = 'v1'"


@pytest.mark.parametrize("options", [
    {"ignore-delete": "true"},
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation"},
])
def test_delete_on_a_key_table_whose_deletes_would_not_remove_rows_rewrites_partitions(ctx, options):
    add(create(ctx, "k", pk=True, parted=True, **options), [1, 2])
    p = plan(ctx, "DELETE FROM k WHERE id = 2")
    assert isinstance(p, RowLevelWrite) and p.overwrite == "matched" and dict(p.options) == {}
    assert p.matched == Matched("k", "id = 2")


def test_delete_on_a_first_row_table_needs_compacted_files(ctx):
    table = create(ctx, "f", pk=True, **{"merge-engine": "first-row", "write-only": "true"})
    add(table, [1, 2])
    with pytest.raises(SqlAnalysisError, match=r"CALL sys.compact\(table => 'default.f'\)") as info:
        plan(ctx, "DELETE FROM f WHERE id = 1")
    assert info.value.sqlstate == "55000"
    errors_at_statement(info)
    snapshot = table.compact(full=True).snapshot_ids[-1]
    p = plan(ctx, "DELETE FROM f WHERE id = 1")
    # The rewrite goes up as an ordinary write's does: a first-row table's reads skip level 0.
    assert isinstance(p, RowLevelWrite) and p.overwrite == "matched" and p.snapshot == snapshot
    assert dict(p.options) == {"write-only": "false"}


def test_delete_on_an_empty_first_row_table_needs_no_compaction(ctx):
    create(ctx, "f", pk=True, **{"merge-engine": "first-row"})
    p = plan(ctx, "DELETE FROM f WHERE id = 1")
    assert isinstance(p, RowLevelWrite) and p.snapshot is None


# -- DELETE on deletion-vector tables -------------------------------------------------------------
DV = {"deletion-vectors.enabled": "true"}


def test_delete_on_a_dv_table_marks_the_matched_positions(ctx):
    table = create(ctx, "d", **DV)
    add(table, [1, 2])
    p = plan(ctx, "DELETE FROM d AS x WHERE id = 2")
    assert isinstance(p, MarkDeletions)
    assert (p.snapshot.id, p.verb) == (table.latest_snapshot().id, "deleted")
    assert p.matched == Matched("x", "id = 2")


def test_delete_on_an_empty_dv_table_is_answered_from_metadata(ctx):
    create(ctx, "d", **DV)
    assert plan(ctx, "DELETE FROM d WHERE id = 2") == count_rows(0, "deleted")
    assert plan(ctx, "DELETE FROM d") == count_rows(0, "deleted")


def test_delete_without_where_on_a_dv_table_counts_live_rows_from_metadata(ctx):
    table = create(ctx, "d", **DV)
    add(table, [1, 2, 3])
    snapshot = add(table, [4])
    # One row already marked deleted: the count is of live rows.
    builder = table.new_write_builder(None)
    files = builder.deletion_scan_files(table.latest_snapshot())
    first = next(f for f in files if f.row_count == 3)
    deletions = builder.new_deletion_commit(table.latest_snapshot())
    assert deletions.delete({first.name: np.array([0], dtype=np.int64)}) == 1
    builder.new_commit().commit_with_deletions(deletions, [])
    latest = table.latest_snapshot().id
    assert latest > snapshot
    p = plan(ctx, "DELETE FROM d")
    assert isinstance(p, TruncateTable) and p.table.name == "default.d"
    assert (p.partition, p.snapshot, p.count, p.count_rows, p.verb) == (None, latest, 4 - 1, False, "deleted")


# -- planning changes nothing ---------------------------------------------------------------------
def test_planning_a_delete_writes_nothing(ctx):
    table = create(ctx, "t", parted=True)
    add(table, [1, 2])
    before = [s.id for s in table.snapshots()]
    for sql in ("DELETE FROM t", "DELETE FROM t WHERE id = 1", "TRUNCATE TABLE t",
                "TRUNCATE TABLE t PARTITION (dt = 'a')"):
        plan(ctx, sql)
    assert [s.id for s in table.snapshots()] == before


# -- TRUNCATE ---------------------------------------------------------------------------------------
def test_truncate_removes_every_file(ctx):
    create(ctx, "t")
    p = plan(ctx, "TRUNCATE TABLE t")
    assert isinstance(p, TruncateTable)
    assert (p.partition, p.count, p.count_rows, p.message) == (None, None, False, "Table default.t truncated")


def test_truncate_a_partition_types_its_spec(ctx):
    ctx.catalog.create_table("default.p", [("v", STRING), ("n", INT)], partition_keys=["n"])
    p = plan(ctx, "TRUNCATE TABLE p PARTITION (n = '7')")
    assert isinstance(p, TruncateTable) and dict(p.partition) == {"n": 7}


def test_truncate_partition_of_an_unpartitioned_table_is_refused(ctx):
    create(ctx, "t")
    with pytest.raises(SqlAnalysisError, match="not partitioned") as info:
        plan(ctx, "TRUNCATE TABLE t PARTITION (dt = 'a')")
    assert info.value.sqlstate == "42000"
    errors_at_statement(info)


def test_truncate_partition_on_an_unknown_column_is_refused(ctx):
    create(ctx, "t", parted=True)
    with pytest.raises(SqlAnalysisError, match="nope") as info:
        plan(ctx, "TRUNCATE TABLE t PARTITION (nope = 'a')")
    assert info.value.sqlstate == "42703"
    errors_at_statement(info)


# -- the checks UPDATE and MERGE share ------------------------------------------------------------
@pytest.mark.parametrize(("engine", "ok"), [
    ("deduplicate", True), ("partial-update", True), ("first-row", False), ("aggregation", False),
])
def test_update_and_merge_need_a_table_whose_written_row_replaces_the_row(ctx, engine, ok):
    table = create(ctx, "k", pk=True, **{"merge-engine": engine})
    stmt = Statement("UPDATE k SET v = 'x'", *AT, 0)
    if ok:
        assert check_rewritable(table, "UPDATE", stmt) is None  # no refusal
        return
    with pytest.raises(UnsupportedStatementError, match=f"merge engine '{engine}'") as info:
        check_rewritable(table, "UPDATE", stmt)
    errors_at_statement(info)


def test_an_append_table_takes_updates(ctx):
    assert check_rewritable(create(ctx, "t"), "MERGE INTO", Statement("MERGE INTO t ...", *AT, 0)) is None


def test_count_rows_is_sparks_result_row():
    rows = count_rows(2, "deleted")
    assert isinstance(rows, Rows) and rows.message == "2 row(s) deleted"
    assert rows.table.to_pylist() == [{"num_affected_rows": 2}]


# -- UPDATE -----------------------------------------------------------------------------------------
def test_update_on_a_table_spark_owns_goes_to_spark(ctx):
    assert plan(ctx, "UPDATE spark_t SET a = 1") == ToEngine(bind=True, row_level=True)


@pytest.mark.parametrize("engine", ["first-row", "aggregation"])
def test_update_on_a_table_whose_written_row_is_not_the_row_is_refused(ctx, engine):
    create(ctx, "k", pk=True, **{"merge-engine": engine})
    with pytest.raises(UnsupportedStatementError, match=f"UPDATE is not supported.*'{engine}'") as info:
        plan(ctx, "UPDATE k SET v = 'x'")
    assert info.value.sqlstate == "0A000"
    errors_at_statement(info)


def test_update_on_a_key_table_writes_the_new_rows_as_updates(ctx):
    snapshot = add(create(ctx, "k", pk=True), [1, 2])
    p = plan(ctx, "UPDATE k AS x SET v = upper(v), x.id = id WHERE id = 1")
    assert isinstance(p, RowLevelWrite)
    assert (p.snapshot, p.overwrite, p.matched, p.verb) == (snapshot, "none", None, "updated")
    assert p.rows.sql("s") == ("SELECT ((id)) AS `id`, ((upper(v))) AS `v`, `x`.`dt`, '+U' AS rowkind "
                               "FROM s AS `x` WHERE id = 1")


@pytest.mark.parametrize("sql", ["UPDATE k SET id = id + 1", "UPDATE k SET dt = 'b' WHERE id = 1"])
def test_update_may_set_a_key_column_only_to_itself(ctx, sql):
    # With fixed buckets a key table's partition columns are kept like its key.
    create(ctx, "k", pk=True, parted=True)
    with pytest.raises(SqlAnalysisError, match="cannot change key column") as info:
        plan(ctx, sql)
    assert info.value.sqlstate == "42000"
    errors_at_statement(info)


def test_update_without_where_on_an_append_table_replaces_the_table(ctx):
    snapshot = add(create(ctx, "t"), [1])
    p = plan(ctx, "UPDATE t SET v = 'z'")
    assert isinstance(p, RowLevelWrite) and (p.snapshot, p.overwrite, p.matched) == (snapshot, "all", None)
    assert p.rows.sql("s") == "SELECT `t`.`id`, (('z')) AS `v`, `t`.`dt` FROM s AS `t`"


def test_update_with_where_on_an_append_table_rewrites_partitions_by_their_original_values(ctx):
    snapshot = add(create(ctx, "t", parted=True), [1])
    p = plan(ctx, "UPDATE t SET dt = 'b' WHERE id = 1")
    assert isinstance(p, RowLevelWrite)
    assert (p.snapshot, p.overwrite, p.matched) == (snapshot, "matched", Matched("t", "id = 1"))
    assert p.partition_of == ("__dyn_o0",)  # where the rows' partitions were before the change
    assert p.rows.sql("s") == ("SELECT `t`.`id`, `t`.`v`, "
                               "CASE WHEN (id = 1) THEN (('b')) ELSE `t`.`dt` END AS `dt`, "
                               "`t`.`dt` AS __dyn_o0 FROM s AS `t`")


def test_update_on_a_dv_table_marks_the_rows_and_adds_their_new_values(ctx):
    table = create(ctx, "d", **DV)
    add(table, [1, 2])
    p = plan(ctx, "UPDATE d SET v = 'z' WHERE id = 2")
    assert isinstance(p, MarkDeletions) and p.snapshot.id == table.latest_snapshot().id
    assert (p.matched, p.verb) == (Matched("d", "id = 2"), "updated")
    assert p.rows == "`d`.`id`, (('z')) AS `v`, `d`.`dt`"
    every = plan(ctx, "UPDATE d SET v = 'z'")
    assert isinstance(every, MarkDeletions) and every.matched == Matched("d", None)


def test_update_on_an_empty_dv_table_is_answered_from_metadata(ctx):
    create(ctx, "d", **DV)
    assert plan(ctx, "UPDATE d SET v = 'z'") == count_rows(0, "updated")


def test_update_default_writes_the_declared_default_cast_as_the_engine_names_the_type(ctx):
    add(create(ctx, "t", **{"fields.v.default-value": "it's"}), [1])
    p = plan(ctx, "UPDATE t SET v = DEFAULT")
    assert isinstance(p, RowLevelWrite) and "(CAST('it\\'s' AS string)) AS `v`" in p.rows.select


@pytest.mark.parametrize(("sql", "sqlstate", "message"), [
    ("UPDATE t SET nope = 1", "42703", "has no column 'nope'"),
    ("UPDATE t SET v = 'a', v = 'b'", "42701", "assigned more than once"),
    ("UPDATE t SET q.v = 'a'", "42703", "neither the target table nor a column"),
])
def test_update_assignment_errors_point_at_the_statement(ctx, sql, sqlstate, message):
    create(ctx, "t")
    with pytest.raises(SqlAnalysisError, match=message) as info:
        plan(ctx, sql)
    assert info.value.sqlstate == sqlstate
    errors_at_statement(info)
    assert ctx.asked == []
