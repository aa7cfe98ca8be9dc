"""The CREATE TABLE planner over a fake context (no JVM): the ``CreateTable`` action of a plain
CREATE (types under the session's settings, defaults, keys, options, computed columns typed by the
SQL engine, watermarks), the ``CreateTableAs`` of CREATE … AS SELECT and the ``Write`` it makes
once the table exists (the one INSERT plans), and the checks, all before anything is created."""

from __future__ import annotations

import pytest

from engine import Identifier, InvalidArgumentError
from engine.types import DataField, parse_sql_type
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute import ddl, insert
from sqlext.execute.planning import (
    Column,
    CreateFormatTableAs,
    CreateTable,
    CreateTableAs,
    Done,
    ToEngine,
    Write,
    WriteShape,
)
from tests.sqlext.execute.fake_context import FakeContext, fake_context, plan_of, view


def col(name: str, sql_type: str, nullable: bool = True) -> Column:
    dtype = parse_sql_type(sql_type)
    return Column(name, sql_type.lower(), nullable, dtype if nullable else dtype.copy(False))


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    return fake_context(tmp_path)


def plan(ctx: FakeContext, sql: str):
    return plan_of(ddl.PLANNERS, ctx, sql)


def created(ctx: FakeContext, sql: str) -> CreateTable:
    p = plan(ctx, sql)
    assert isinstance(p, CreateTable), p
    return p


def apply(ctx: FakeContext, action: CreateTable):
    """What the runner does with the action."""
    return ctx.catalog.create_table(action.identifier, list(action.fields), action.partition_keys,
                                    action.primary_keys, dict(action.options), action.comment)


# -- plain CREATE TABLE -------------------------------------------------------------------------
def test_flink_style_create_is_one_catalog_action(ctx):
    p = created(ctx, "CREATE TABLE t (id BIGINT NOT NULL COMMENT 'the key', v STRING, dt STRING, "
                     "PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) COMMENT 'events' "
                     "WITH ('bucket' = '2')")
    assert p.identifier == Identifier("default", "t")
    assert [(f.id, f.name, f.type, f.description) for f in p.fields] == [
        (0, "id", parse_sql_type("BIGINT NOT NULL"), "the key"),
        (1, "v", parse_sql_type("STRING"), None),
        (2, "dt", parse_sql_type("STRING"), None),
    ]
    assert (p.partition_keys, p.primary_keys, p.comment) == (("dt",), ("id", "dt"), "events")
    assert p.options == {"bucket": "2"}
    assert p.message == "Table default.t created"
    assert not ctx.catalog.table_exists("default.t")  # planning creates nothing
    assert list(apply(ctx, p).primary_keys) == ["id", "dt"]


def test_spark_style_clustered_by_and_tblproperties_comment(ctx):
    p = created(ctx, "CREATE TABLE t (id INT, v STRING) USING dyntable CLUSTERED BY (id) INTO 4 BUCKETS "
                     "TBLPROPERTIES ('comment' = 'from properties', 'file.format' = 'parquet')")
    assert p.options == {"bucket": "4", "bucket-key": "id", "file.format": "parquet"}
    assert p.comment == "from properties"


def test_session_table_storage_options_are_every_new_tables_defaults(ctx):
    ctx.options.update({"table-storage.bucket": "3", "spark.paimon.write-only": "true"})
    p = created(ctx, "CREATE TABLE t (id INT) WITH ('bucket' = '5', 'write-only' = 'false')")
    assert p.options == {"bucket": "5", "write-only": "false"}
    assert created(ctx, "CREATE TABLE u (id INT)").options == {"bucket": "3"}


def test_another_format_goes_to_the_sql_engine(ctx):
    assert plan(ctx, "CREATE TABLE s (id INT) USING avro") == ToEngine()


def test_a_file_format_makes_a_paimon_format_table(ctx):
    created = plan(ctx, "CREATE TABLE s (id INT, p STRING) USING CSV PARTITIONED BY (p) "
                        "OPTIONS ('csv.field-delimiter' ';')")
    assert created.file_format == "csv"
    assert created.partition_keys == ("p",)
    assert created.options == {"csv.field-delimiter": ";"}
    assert created.primary_keys == ()


def test_a_format_table_ctas_writes_the_query_by_position(ctx):
    ctx.queries["SELECT 1 AS id, 'a' AS p"] = (col("id", "INT"), col("p", "STRING"))
    p = plan(ctx, "CREATE TABLE s USING parquet AS SELECT 1 AS id, 'a' AS p")
    assert isinstance(p, CreateFormatTableAs)
    assert p.create.file_format == "parquet" and p.create.partition_keys == ()
    assert [f.name for f in p.create.fields] == ["id", "p"]
    assert p.expressions == ("CAST(_c0 AS int) AS `id`", "CAST(_c1 AS string) AS `p`")
    assert not ctx.catalog.table_exists("default.s")  # planning creates nothing
    # As in Paimon, a partitioned format table is created first, then written.
    with pytest.raises(UnsupportedStatementError, match="partitioned format table"):
        plan(ctx, "CREATE TABLE s USING parquet PARTITIONED BY (p) AS SELECT 1 AS id, 'a' AS p")


def test_a_format_table_ctas_checks_a_declared_column_list(ctx):
    ctx.queries["SELECT 1 AS id"] = (col("id", "INT"),)
    with pytest.raises(SqlAnalysisError, match="declares 2 column"):
        plan(ctx, "CREATE TABLE s (id INT, v STRING) USING csv AS SELECT 1 AS id")


def test_an_existing_table_is_refused_or_skipped(ctx):
    ctx.catalog.create_table("default.t", [("id", parse_sql_type("INT"))])
    with pytest.raises(SqlAnalysisError, match="already exists") as info:
        plan(ctx, "CREATE TABLE t (id INT)")
    assert info.value.sqlstate == "42710"
    assert plan(ctx, "CREATE TABLE IF NOT EXISTS t (id INT)") == Done("Table default.t already exists")


def test_a_view_of_the_name_is_refused(ctx):
    ctx.view_definitions.append(view("v"))
    with pytest.raises(SqlAnalysisError, match="is a view") as info:
        plan(ctx, "CREATE TABLE v (id INT)")
    assert info.value.sqlstate == "42710"


def test_a_table_needs_a_column(ctx):
    with pytest.raises(SqlAnalysisError, match="at least one column") as info:
        plan(ctx, "CREATE TABLE t USING dyntable")
    assert info.value.sqlstate == "42601"


@pytest.mark.parametrize(("setting", "expected"), [
    (None, "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP_LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP_NTZ", "TIMESTAMP(6)"),
])
def test_timestamp_means_what_the_sessions_timestamp_type_says(ctx, setting, expected):
    if setting is not None:
        ctx.settings["spark.sql.timestampType"] = setting
    p = created(ctx, "CREATE TABLE t (ts TIMESTAMP, n TIMESTAMP_NTZ, a ARRAY<TIMESTAMP>)")
    assert p.fields[0].type == parse_sql_type(expected)
    assert p.fields[1].type == parse_sql_type("TIMESTAMP(6)")
    assert p.fields[2].type == parse_sql_type(f"ARRAY<{expected}>")


def test_defaults_are_stored_as_the_fields_default_value(ctx):
    ctx.settings["spark.sql.session.timeZone"] = "Europe/Paris"
    p = created(ctx, "CREATE TABLE t (id INT DEFAULT 7, "
                     "ts TIMESTAMP_LTZ DEFAULT TIMESTAMP '2024-01-01 01:00:00')")
    assert [f.default_value for f in p.fields] == ["7", "'2024-01-01 00:00:00'"]  # Paris is UTC+1


def test_a_computed_column_is_typed_by_the_sql_engine_over_typed_nulls(ctx):
    typing_query = ("SELECT id * 2 AS c FROM "
                    "(SELECT CAST(NULL AS bigint) AS `id`, CAST(NULL AS string) AS `v`)")
    ctx.queries[typing_query] = (col("c", "BIGINT", nullable=False),)
    p = created(ctx, "CREATE TABLE t (id BIGINT, v STRING, d AS id * 2, "
                     "WATERMARK FOR v AS v) WITH ('bucket' = '-1')")
    assert ctx.asked == [typing_query]
    assert p.fields[2] == DataField(2, "d", parse_sql_type("BIGINT"))  # nullable, as the old typing
    assert p.options["dyntable.computed-column.d"] == "id * 2"
    assert p.options["dyntable.watermark.v"] == "v"


# -- CREATE TABLE ... AS SELECT -------------------------------------------------------------------
def test_ctas_takes_the_querys_columns_and_writes_them_as_insert_does(ctx):
    ctx.queries["SELECT 1 AS id, 'x' AS v"] = (col("id", "INT", nullable=False), col("v", "STRING", False))
    p = plan(ctx, "CREATE TABLE t PARTITIONED BY (v) AS SELECT 1 AS id, 'x' AS v")
    assert isinstance(p, CreateTableAs)
    assert [(f.name, f.type) for f in p.create.fields] == [
        ("id", parse_sql_type("INT NOT NULL")), ("v", parse_sql_type("STRING NOT NULL"))]
    assert p.create.partition_keys == ("v",)
    assert not ctx.catalog.table_exists("default.t")
    table = apply(ctx, p.create)  # the runner creates the table, then runs the write
    write = p.write_for(table)
    assert isinstance(write, Write)
    assert write.table.name == "default.t" and write.frame is p.query
    assert write.shape == WriteShape(("id", "v"))
    assert (write.overwrite, write.base_snapshot, write.evolve, write.stream) == (None, None, None, None)
    assert write.message == "Table default.t created"


def test_the_ctas_write_is_the_insert_write_of_the_same_query(ctx):
    ctx.options.update({"spark.paimon.write-only": "true",
                        "spark.paimon.*.default.other.write-only": "false"})
    query = "SELECT 1 AS id, 'x' AS v"
    ctx.queries[query] = (col("id", "INT"), col("v", "STRING"))
    p = plan(ctx, f"CREATE TABLE t AS {query}")
    write = p.write_for(apply(ctx, p.create))
    inserted = plan_of(insert.PLANNERS, ctx, f"INSERT INTO t {query}")
    assert isinstance(inserted, Write)
    assert write.options == inserted.options == {"write-only": "true"}
    assert write.table.options["write-only"] == inserted.table.options["write-only"] == "true"
    assert (write.shape, write.overwrite, write.base_snapshot, write.evolve) == (
        inserted.shape, inserted.overwrite, inserted.base_snapshot, inserted.evolve)
    assert write.frame.columns == inserted.frame.columns


def test_ctas_with_a_column_list_keeps_the_declared_types(ctx):
    ctx.queries["SELECT 1"] = (col("1", "INT"),)
    p = plan(ctx, "CREATE TABLE t (id BIGINT) AS SELECT 1")
    assert isinstance(p, CreateTableAs)
    assert [(f.name, f.type) for f in p.create.fields] == [("id", parse_sql_type("BIGINT"))]


def test_ctas_of_an_untyped_null_is_refused_before_anything_is_created(ctx):
    ctx.queries["SELECT NULL AS n"] = (Column("n", "void", True, None),)
    with pytest.raises(InvalidArgumentError, match="`n` .void. has no Paimon equivalent"):
        plan(ctx, "CREATE TABLE t AS SELECT NULL AS n")
    assert not ctx.catalog.table_exists("default.t")


def test_ctas_refuses_a_bad_session_write_option_before_creating(ctx):
    ctx.options["spark.paimon.write-only"] = "maybe"
    ctx.queries["SELECT 1 AS id"] = (col("id", "INT"),)
    with pytest.raises(InvalidArgumentError, match="write-only"):
        plan(ctx, "CREATE TABLE t AS SELECT 1 AS id")
    assert not ctx.catalog.table_exists("default.t")
