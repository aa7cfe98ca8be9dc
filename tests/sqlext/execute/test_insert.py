"""The INSERT planner over a fake context (no JVM): the ``Write`` plan it returns (shape, overwrite,
options, the schema change of ``write.merge-schema``), its checks and typed errors, and that
planning changes nothing in the warehouse."""

from __future__ import annotations

import pytest

from engine import InvalidArgumentError, OverwriteSpec, SchemaMergeError
from engine.types import DataField, parse_sql_type, type_to_sql
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.insert import PLANNERS
from sqlext.execute.planning import Column, FormatWrite, ToEngine, Write, WriteShape
from sqlext.parse.names import TableName
from tests.sqlext.execute.fake_context import FakeContext, fake_context, plan_of


def col(name: str, sql_type: str, nullable: bool = True) -> Column:
    dtype = parse_sql_type(sql_type)
    return Column(name, sql_type.lower(), nullable, dtype if nullable else dtype.copy(False))


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    ctx = fake_context(tmp_path)
    ctx.catalog.create_table("default.t", [("a", parse_sql_type("INT")), ("b", parse_sql_type("STRING"))])
    return ctx


def plan(ctx: FakeContext, sql: str):
    return plan_of(PLANNERS, ctx, sql)


def schema_files(ctx: FakeContext, name: str = "default.t") -> list[int]:
    return ctx.catalog.get_table(name).schemas.list_ids()


# -- the plain write ----------------------------------------------------------------------------
def test_insert_values_is_one_append_of_every_column(ctx):
    ctx.queries["VALUES (1, 'x')"] = (col("col1", "INT"), col("col2", "STRING"))
    p = plan(ctx, "INSERT INTO t VALUES (1, 'x')")
    assert isinstance(p, Write)
    assert p.shape == WriteShape(("a", "b"), {}, by_name=False)
    assert (p.overwrite, p.base_snapshot, p.evolve, p.stream) == (None, None, None, None)
    assert p.table.name == "default.t" and p.frame.columns[0].name == "col1"
    assert p.message == "{count} row(s) inserted into default.t"


def test_a_table_spark_owns_goes_to_spark_with_managed_reads_bound(ctx):
    assert plan(ctx, "INSERT INTO spark_t SELECT * FROM t") == ToEngine(bind=True)


def test_a_system_table_is_read_only(ctx):
    with pytest.raises(SqlAnalysisError, match="read-only") as info:
        plan(ctx, "INSERT INTO `t$snapshots` VALUES (1)")
    assert info.value.sqlstate == "42809"


def test_an_unknown_column_in_the_list_is_refused(ctx):
    with pytest.raises(SqlAnalysisError, match=r"unknown column\(s\) \['z'\]") as info:
        plan(ctx, "INSERT INTO t (a, z) VALUES (1, 2)")
    assert info.value.sqlstate == "42703"


def test_default_keywords_are_filled_before_the_query_is_bound(ctx):
    ctx.catalog.create_table("default.d", [("a", parse_sql_type("INT")), ("b", parse_sql_type("INT"))],
                             options={"fields.b.default-value": "7"})
    filled = "VALUES (1, CAST('7' AS int))"
    ctx.queries[filled] = (col("col1", "INT"), col("col2", "INT"))
    p = plan(ctx, "INSERT INTO d VALUES (1, DEFAULT)")
    assert isinstance(p, Write) and ctx.asked == [filled]


# -- overwrite ----------------------------------------------------------------------------------
@pytest.fixture
def parted(ctx) -> FakeContext:
    ctx.catalog.create_table("default.p", [("v", parse_sql_type("STRING")), ("dt", parse_sql_type("STRING"))],
                             partition_keys=["dt"])
    ctx.queries["SELECT 'x'"] = (col("x", "STRING"),)
    ctx.queries["SELECT 'x', '2024'"] = (col("x", "STRING"), col("d", "STRING"))
    return ctx


def test_overwrite_of_a_static_partition(parted):
    p = plan(parted, "INSERT OVERWRITE p PARTITION (dt = '2024') SELECT 'x'")
    assert p.overwrite == OverwriteSpec(static={"dt": "2024"})
    assert p.shape == WriteShape(("v",), {"dt": "2024"})
    assert p.message.endswith("row(s) written into default.p")


def test_overwrite_is_static_unless_a_setting_says_dynamic(parted):
    assert plan(parted, "INSERT OVERWRITE p SELECT 'x', '2024'").overwrite == OverwriteSpec(static={})
    parted.settings["spark.sql.sources.partitionOverwriteMode"] = "dynamic"
    assert plan(parted, "INSERT OVERWRITE p SELECT 'x', '2024'").overwrite == OverwriteSpec(dynamic=True)
    # the hint wins, and does not travel on as a write option
    p = plan(parted, "INSERT OVERWRITE p /*+ OPTIONS('dynamic-partition-overwrite' = 'false') */ "
                     "SELECT 'x', '2024'")
    assert p.overwrite == OverwriteSpec(static={}) and "dynamic-partition-overwrite" not in p.options


def test_a_bad_overwrite_mode_is_a_typed_error(parted):
    parted.options["spark.sql.sources.partitionOverwriteMode"] = "sometimes"
    with pytest.raises(SqlAnalysisError, match="must be 'static' or 'dynamic'") as info:
        plan(parted, "INSERT OVERWRITE p SELECT 'x', '2024'")
    assert info.value.sqlstate == "22023"


# -- options ------------------------------------------------------------------------------------
def test_session_keys_then_hints_are_the_writes_options(ctx):
    ctx.queries["VALUES (1, 'x')"] = (col("col1", "INT"), col("col2", "STRING"))
    ctx.options.update({"spark.paimon.write-only": "true", "spark.paimon.*.default.t.write-only": "false",
                        "spark.paimon.*.default.other.target-file-size": "1 mb"})
    p = plan(ctx, "INSERT INTO t /*+ OPTIONS('sink.parallelism' = '2') */ VALUES (1, 'x')")
    assert p.options == {"write-only": "false", "sink.parallelism": "2"}
    assert p.table.options["write-only"] == "false"  # applied to the plan's table, stored nowhere
    assert "write-only" not in ctx.catalog.get_table("default.t").options


def test_a_hint_that_cannot_apply_is_refused_when_planning(ctx):
    ctx.queries["VALUES (1, 'x')"] = (col("col1", "INT"), col("col2", "STRING"))
    with pytest.raises(InvalidArgumentError, match="option 'bucket' cannot change for a statement"):
        plan(ctx, "INSERT INTO t /*+ OPTIONS('bucket' = '4') */ VALUES (1, 'x')")
    with pytest.raises(InvalidArgumentError, match="write.merge-schema"):
        plan(ctx, "INSERT INTO t /*+ OPTIONS('write.merge-schema' = 'maybe') */ VALUES (1, 'x')")


# -- BY NAME and write.merge-schema --------------------------------------------------------------
NEW_COLUMN = "SELECT 3 AS a, '3' AS b, 3 AS c"


def test_by_name_maps_columns_by_their_names_ignoring_case(ctx):
    ctx.queries["SELECT 'x' AS B, 1 AS a"] = (col("B", "STRING"), col("a", "INT"))
    p = plan(ctx, "INSERT INTO t BY NAME SELECT 'x' AS B, 1 AS a")
    assert p.shape == WriteShape(("b", "a"), {}, by_name=True) and p.evolve is None


def test_by_name_with_a_new_column_is_refused_without_merge_schema(ctx):
    ctx.queries[NEW_COLUMN] = (col("a", "INT", False), col("b", "STRING", False), col("c", "INT", False))
    with pytest.raises(SqlAnalysisError, match="extra columns: `c`") as info:
        plan(ctx, f"INSERT INTO t BY NAME {NEW_COLUMN}")
    assert info.value.sqlstate == "42703"


@pytest.mark.parametrize("how", ["session", "session-table", "hint", "table"])
def test_merge_schema_evolves_the_table_in_the_plan_only(ctx, how):
    ctx.queries[NEW_COLUMN] = (col("a", "INT", False), col("b", "STRING", False), col("c", "INT", False))
    hint = ""
    if how == "session":
        ctx.options["spark.paimon.write.merge-schema"] = "true"
    elif how == "session-table":
        ctx.options["spark.paimon.*.default.t.write.merge-schema"] = "true"
    elif how == "hint":
        hint = "/*+ OPTIONS('write.merge-schema' = 'true') */ "
    else:
        ctx.catalog.alter_table("default.t", [_set("write.merge-schema", "true")])
    before = schema_files(ctx)
    p = plan(ctx, f"INSERT INTO t {hint}BY NAME {NEW_COLUMN}")
    assert p.evolve is not None and p.evolve.id == before[-1] + 1
    assert [(f.name, type_to_sql(f.type)) for f in p.evolve.fields] == [("a", "INT"), ("b", "STRING"),
                                                                          ("c", "INT")]
    assert p.evolve.fields[2].type.nullable  # a new column is nullable, whatever the data
    # the plan's table writes at the new version; options given to this write are not stored in it
    assert p.table.store.pending_schema is p.evolve and p.table.schema.fields == p.evolve.fields
    assert ("write.merge-schema" in p.evolve.options) == (how == "table")
    assert p.shape == WriteShape(("a", "b", "c"), {}, by_name=True)
    assert schema_files(ctx) == before  # planning publishes nothing: the write's commit will


def test_merge_schema_with_missing_and_new_columns(ctx):
    ctx.options["spark.paimon.write.merge-schema"] = "true"
    query = "SELECT '4' AS d, '4' AS b, 4 AS c"
    ctx.queries[query] = (col("d", "STRING"), col("b", "STRING"), col("c", "INT"))
    p = plan(ctx, f"INSERT INTO t BY NAME {query}")
    assert [f.name for f in p.evolve.fields] == ["a", "b", "d", "c"]  # new columns in the query's order
    assert p.shape.columns == ("d", "b", "c")  # `a` is left out: NULL


def test_merge_schema_adds_a_struct_field(ctx):
    ctx.catalog.create_table("default.n", [("id", parse_sql_type("INT")),
                                           ("info", parse_sql_type("ROW<f1 STRING, f2 STRING>"))])
    ctx.options["spark.paimon.write.merge-schema"] = "true"
    query = "SELECT 2 AS id, named_struct('f1', 'c', 'f3', 'd', 'f2', 'e') AS info, 'top' AS extra"
    ctx.queries[query] = (col("id", "INT"), col("info", "ROW<f1 STRING, f3 STRING, f2 STRING>"),
                          col("extra", "STRING"))
    p = plan(ctx, f"INSERT INTO n BY NAME {query}")
    info = p.evolve.fields[1].type
    assert [f.name for f in info.fields] == ["f1", "f2", "f3"]
    assert list(p.evolve.field_names) == ["id", "info", "extra"]


def test_merge_schema_with_only_case_differences_changes_nothing(ctx):
    ctx.options["spark.paimon.write.merge-schema"] = "true"
    ctx.queries["SELECT 'b' AS B, 2 AS A"] = (col("B", "STRING"), col("A", "INT"))
    p = plan(ctx, "INSERT INTO t BY NAME SELECT 'b' AS B, 2 AS A")
    assert p.evolve is None and p.shape.columns == ("b", "a")  # names matched ignoring case


def test_merge_schema_refuses_a_name_given_twice(ctx):
    ctx.options["spark.paimon.write.merge-schema"] = "true"
    ctx.queries["SELECT 1 AS a, 2 AS A"] = (col("a", "INT"), col("A", "INT"))
    with pytest.raises(SqlAnalysisError, match="ambiguous column name `A`") as info:
        plan(ctx, "INSERT INTO t BY NAME SELECT 1 AS a, 2 AS A")
    assert info.value.sqlstate == "42702"


def test_merge_schema_needs_a_typed_new_column(ctx):
    ctx.options["spark.paimon.write.merge-schema"] = "true"
    ctx.queries["SELECT 1 AS a, NULL AS n"] = (col("a", "INT"), Column("n", "void", True, None))
    with pytest.raises(SqlAnalysisError, match="column `n` \\(void\\) has no table type") as info:
        plan(ctx, "INSERT INTO t BY NAME SELECT 1 AS a, NULL AS n")
    assert info.value.sqlstate == "42804"


def test_type_widening_needs_its_own_option(ctx):
    ctx.options["spark.paimon.write.merge-schema"] = "true"
    ctx.queries["SELECT 1L AS a"] = (col("a", "BIGINT"),)
    assert plan(ctx, "INSERT INTO t BY NAME SELECT 1L AS a").evolve is None  # cast to INT on write
    ctx.options["spark.paimon.write.merge-schema.type-widening"] = "true"
    p = plan(ctx, "INSERT INTO t BY NAME SELECT 1L AS a")
    assert type_to_sql(p.evolve.fields[0].type) == "BIGINT"


def test_a_change_paimon_refuses_fails_the_plan(ctx):
    ctx.options.update({"spark.paimon.write.merge-schema": "true",
                        "spark.paimon.write.merge-schema.type-widening": "true"})
    ctx.queries["SELECT DATE'2024-01-01' AS b"] = (col("b", "DATE"),)
    with pytest.raises(SchemaMergeError, match="cannot widen 'b' from STRING to DATE"):
        plan(ctx, "INSERT INTO t BY NAME SELECT DATE'2024-01-01' AS b")


def test_a_positional_insert_never_evolves(ctx):
    ctx.options["spark.paimon.write.merge-schema"] = "true"
    ctx.queries["SELECT 1, 'x', 3"] = (col("1", "INT"), col("x", "STRING"), col("3", "INT"))
    p = plan(ctx, "INSERT INTO t SELECT 1, 'x', 3")
    assert p.evolve is None and p.shape.columns == ("a", "b")  # the runner reports the column count


# -- streaming ----------------------------------------------------------------------------------
@pytest.fixture
def streaming(ctx) -> FakeContext:
    ctx.catalog.create_table("default.src", [("a", parse_sql_type("INT")), ("b", parse_sql_type("STRING"))],
                             primary_keys=["a"], options={"bucket": "1"})
    ctx.streaming = True
    return ctx


def test_a_continuous_insert_is_a_streaming_write(streaming):
    query = "SELECT rowkind, a, b FROM src"
    streaming.streams[query] = ((col("rowkind", "STRING"), col("a", "INT"), col("b", "STRING")),
                                (TableName.parse("default.src"),))
    p = plan(streaming, f"INSERT INTO t {query}")
    assert p.frame.streaming and p.stream is not None
    assert p.stream.trigger == "processing-time" and p.stream.interval == "1000 milliseconds"
    assert p.stream.checkpoint.endswith(f"/.streaming/{p.stream.pipeline}")
    assert [t.name for t in p.stream.reads] == ["default.src"]
    again = plan(streaming, f"INSERT   INTO t {query}")
    assert again.stream.pipeline == p.stream.pipeline  # the same statement resumes the same pipeline


def test_a_continuous_insert_from_a_key_table_needs_the_kind_column(streaming):
    streaming.streams["SELECT a, b FROM src"] = ((col("a", "INT"), col("b", "STRING")),
                                                 (TableName.parse("default.src"),))
    with pytest.raises(SqlAnalysisError, match="must carry each row's kind") as info:
        plan(streaming, "INSERT INTO t SELECT a, b FROM src")
    assert info.value.sqlstate == "42000"


def test_a_bad_trigger_is_a_typed_error(streaming):
    streaming.options["execution.streaming.trigger"] = "sometimes"
    streaming.streams["SELECT rowkind, a, b FROM src"] = (
        (col("rowkind", "STRING"), col("a", "INT"), col("b", "STRING")), (TableName.parse("src"),))
    with pytest.raises(SqlAnalysisError, match="must be 'processing-time' or 'available-now'"):
        plan(streaming, "INSERT INTO t SELECT rowkind, a, b FROM src")


def test_a_continuous_insert_does_not_evolve_the_schema(streaming):
    streaming.options["spark.paimon.write.merge-schema"] = "true"
    query = "SELECT rowkind, a, b, b AS c FROM src"
    columns = (col("rowkind", "STRING"), col("a", "INT"), col("b", "STRING"), col("c", "STRING"))
    streaming.queries[query] = columns
    streaming.streams[query] = (columns, (TableName.parse("default.src"),))
    with pytest.raises(UnsupportedStatementError, match="does not evolve the schema"):
        plan(streaming, f"INSERT INTO t BY NAME {query}")


def test_a_bounded_query_in_streaming_mode_is_a_batch_write(streaming):
    streaming.queries["VALUES (1, 'x')"] = (col("col1", "INT"), col("col2", "STRING"))
    p = plan(streaming, "INSERT INTO t VALUES (1, 'x')")
    assert p.stream is None and not p.frame.streaming


def _set(key: str, value: str):
    from engine.schema_changes import SetOption

    return SetOption(key, value)


# -- format tables ------------------------------------------------------------------------------
@pytest.fixture
def fmt_ctx(ctx: FakeContext) -> FakeContext:
    ctx.catalog.create_format_table("default.f", [DataField(0, "id", parse_sql_type("INT")),
                                                  DataField(1, "ds", parse_sql_type("BIGINT")),
                                                  DataField(2, "hh", parse_sql_type("INT"))],
                                    "csv", ["ds", "hh"])
    return ctx


def test_a_format_table_insert_casts_by_position(fmt_ctx):
    fmt_ctx.queries["VALUES (1, 2, 3)"] = (col("col1", "INT"), col("col2", "INT"), col("col3", "INT"))
    p = plan(fmt_ctx, "INSERT INTO f VALUES (1, 2, 3)")
    assert isinstance(p, FormatWrite)
    assert p.expressions == ("CAST(_c0 AS int) AS `id`", "CAST(_c1 AS bigint) AS `ds`",
                             "CAST(_c2 AS int) AS `hh`")
    assert (p.overwrite, dict(p.static)) == ("none", {})


def test_a_format_table_overwrite_by_static_partition_else_the_partitions_written(fmt_ctx):
    fmt_ctx.queries["VALUES (1, 10)"] = (col("col1", "INT"), col("col2", "INT"))
    p = plan(fmt_ctx, "INSERT OVERWRITE f PARTITION (ds=2024, hh) VALUES (1, 10)")
    assert p.expressions[1] == "CAST('2024' AS bigint) AS `ds`"
    assert (p.overwrite, dict(p.static)) == ("static", {"ds": "2024"})
    # Without static values Paimon replaces the partitions written, under any Spark mode.
    fmt_ctx.queries["VALUES (1, 2, 10)"] = (col("col1", "INT"), col("col2", "INT"), col("col3", "INT"))
    assert plan(fmt_ctx, "INSERT OVERWRITE f VALUES (1, 2, 10)").overwrite == "dynamic"


def test_a_format_table_insert_checks_the_column_count(fmt_ctx):
    fmt_ctx.queries["VALUES (1)"] = (col("col1", "INT"),)
    with pytest.raises(SqlAnalysisError, match="expects 3 column"):
        plan(fmt_ctx, "INSERT INTO f VALUES (1)")
