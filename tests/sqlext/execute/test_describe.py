"""Planners of DESCRIBE, SHOW CREATE TABLE, SHOW TBLPROPERTIES and SHOW PARTITIONS over a fake
context (no JVM): real tables in a temporary warehouse, metadata answers checked row by row."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from sqlext.errors import SqlAnalysisError
from sqlext.execute import describe
from sqlext.execute.planning import Column, Rows, ToEngine
from sqlext.parse.views import ViewDefinition
from tests.sqlext.execute.fake_context import fake_context, plan_of

PLANNERS = describe.PLANNERS

SNAPSHOTS = "SELECT * FROM orders$snapshots"
SNAPSHOT_COLUMNS = (Column("snapshot_id", "bigint"), Column("kind", "string"))
ORDERS = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("amount", pa.decimal128(10, 2)),
    ("day", pa.date32()),
    ("region", pa.string()),
])


@pytest.fixture
def ctx(tmp_path):
    return fake_context(tmp_path)


@pytest.fixture
def orders(ctx):
    table = ctx.catalog.create_table(
        "default.orders", ORDERS, partition_keys=["day", "region"],
        options={"bucket": "2", "bucket-key": "id", "dyntable.computed-column.cents": "amount * 100"},
        comment="all orders",
    )
    table.write_arrow(pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "amount": pa.array([None] * 3, pa.decimal128(10, 2)),
        "day": [dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 1, 2)],
        "region": ["eu", "us", None],
    }, schema=ORDERS))
    return table


def run(ctx, sql):
    return plan_of(PLANNERS, ctx, sql)


def rows(plan) -> list[dict]:
    assert isinstance(plan, Rows), plan
    return plan.table.to_pylist()


def triples(plan) -> list[tuple]:
    return [(r["col_name"], r["data_type"], r["comment"]) for r in rows(plan)]


# -- names dyntable does not own go to the engine --------------------------------------------------
@pytest.mark.parametrize("sql", [
    "DESCRIBE spark_only", "SHOW CREATE TABLE spark_only", "SHOW TBLPROPERTIES spark_only",
    "SHOW PARTITIONS spark_only", "DESCRIBE EXTENDED spark_only",
])
def test_an_unmanaged_name_goes_to_the_engine(ctx, sql):
    assert run(ctx, sql) == ToEngine()


# -- DESCRIBE -------------------------------------------------------------------------------------
def test_describe_lists_columns_with_the_engine_type_names(ctx, orders):
    got = triples(run(ctx, "DESCRIBE orders"))
    assert got[:4] == [(f.name, ctx.type_text(f.type), None) for f in orders.schema.fields]


def test_describe_adds_partition_information(ctx, orders):
    got = triples(run(ctx, "DESCRIBE orders"))
    at = got.index(("# Partition Information", "", ""))
    assert got[at + 1] == ("# col_name", "data_type", "comment")
    assert [r[0] for r in got[at + 2:]] == ["day", "region"]


def test_describe_unpartitioned_has_no_partition_section(ctx):
    ctx.catalog.create_table("default.plain", pa.schema([("a", pa.int32())]))
    assert triples(run(ctx, "DESCRIBE plain")) == [("a", "int", None)]


def test_describe_shows_column_comments(ctx):
    from engine.types import INT, DataField

    ctx.catalog.create_table("default.c", [DataField(0, "a", INT(), "the a")])
    assert triples(run(ctx, "DESCRIBE c")) == [("a", "int", "the a")]


def test_describe_extended_adds_table_details(ctx, orders):
    details = {r[0]: r[1] for r in triples(run(ctx, "DESCRIBE EXTENDED orders"))}
    assert details["Name"] == "dyntable.default.orders"
    assert details["Type"] == "MANAGED"
    assert details["Comment"] == "all orders"
    assert details["bucket"] == "2"
    assert details["primary-key"] == ""
    assert details["partition"] == "day,region"
    assert details["record-count"] == "3"
    assert details["latest-snapshot-id"] == "1"


def test_describe_formatted_is_extended(ctx, orders):
    assert run(ctx, "DESCRIBE FORMATTED orders") == run(ctx, "DESCRIBE EXTENDED orders")


def test_describe_extended_of_an_empty_table(ctx):
    ctx.catalog.create_table("default.e", pa.schema([("a", pa.int32())]))
    details = {r[0]: r[1] for r in triples(run(ctx, "DESCRIBE EXTENDED e"))}
    assert details["latest-snapshot-id"] == ""
    assert details["record-count"] == "0"


def test_describe_one_column(ctx, orders):
    assert rows(run(ctx, "DESCRIBE orders amount")) == [
        {"info_name": "col_name", "info_value": "amount"},
        {"info_name": "data_type", "info_value": ctx.type_text(orders.schema.field("amount").type)},
        {"info_name": "comment", "info_value": None},
    ]


def test_describe_partition_extended_details_one_partition(ctx, orders):
    got = triples(run(ctx, "DESCRIBE EXTENDED orders PARTITION (day = '2024-01-01', region = 'eu')"))
    details = {r[0]: r[1] for r in got[got.index(("# Detailed Partition Information", "", "")) + 1:]}
    assert details["partition"] == "day=2024-01-01/region=eu"
    assert details["record-count"] == "1"
    assert details["num-files"] == "1"
    assert details["file.path"].startswith(orders.path.rstrip("/") + "/day=")
    assert details["file.path"].endswith("/region=eu")


def test_describe_partition_needs_every_partition_column(ctx, orders):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "DESCRIBE orders PARTITION (day = '2024-01-01')")
    assert e.value.sqlstate == "42000"
    assert "region" in str(e.value)


def test_describe_partition_that_holds_no_data(ctx, orders):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "DESCRIBE orders PARTITION (day = '2030-01-01', region = 'eu')")
    assert e.value.sqlstate == "428FT"


def test_describe_partition_of_an_unknown_column(ctx, orders):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "DESCRIBE orders PARTITION (nope = 1, day = '2024-01-01', region = 'eu')")
    assert e.value.sqlstate == "42703"


def test_describe_partition_of_an_unpartitioned_table(ctx):
    ctx.catalog.create_table("default.plain", pa.schema([("a", pa.int32())]))
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "DESCRIBE plain PARTITION (a = 1)")
    assert e.value.sqlstate == "42000"


def test_describe_a_system_table_asks_the_engine_for_its_columns(ctx, orders):
    ctx.queries[SNAPSHOTS] = SNAPSHOT_COLUMNS
    got = triples(run(ctx, "DESCRIBE orders$snapshots"))
    assert got == [("snapshot_id", "bigint", None), ("kind", "string", None)]
    assert ctx.asked == [SNAPSHOTS]


def test_describe_one_column_of_a_system_table(ctx, orders):
    ctx.queries[SNAPSHOTS] = SNAPSHOT_COLUMNS
    assert triples(run(ctx, "DESCRIBE orders$snapshots KIND")) == [("kind", "string", None)]


# -- SHOW CREATE TABLE ----------------------------------------------------------------------------
def test_show_create_table_recreates_keys_partitions_and_options(ctx, orders):
    (row,) = rows(run(ctx, "SHOW CREATE TABLE orders"))
    text = row["createtab_stmt"]
    assert text.startswith("CREATE TABLE default.orders (\n")
    assert "PRIMARY KEY" not in text
    assert "PARTITIONED BY (`day`, `region`)" in text
    assert "COMMENT 'all orders'" in text
    assert "'bucket' = '2'" in text


def test_show_create_table_writes_computed_columns_back_and_hides_their_option(ctx, orders):
    text = rows(run(ctx, "SHOW CREATE TABLE orders"))[0]["createtab_stmt"]
    assert "dyntable.computed-column" not in text


def test_show_create_table_shows_the_watermark(ctx):
    ctx.catalog.create_table("default.w", pa.schema([("ts", pa.timestamp("us"))]),
                             options={"dyntable.watermark.ts": "ts - INTERVAL '5' SECOND"})
    text = rows(run(ctx, "SHOW CREATE TABLE w"))[0]["createtab_stmt"]
    assert "WATERMARK FOR `ts` AS ts - INTERVAL '5' SECOND" in text
    assert "dyntable.watermark" not in text


def test_show_create_table_escapes_quotes_in_comments(ctx):
    ctx.catalog.create_table("default.q", pa.schema([("a", pa.int32())]), comment="it's")
    assert "COMMENT 'it\\'s'" in rows(run(ctx, "SHOW CREATE TABLE q"))[0]["createtab_stmt"]


def test_show_create_table_of_a_system_table_is_refused(ctx, orders):
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "SHOW CREATE TABLE orders$snapshots")
    assert e.value.sqlstate == "42809"


# -- SHOW TBLPROPERTIES ---------------------------------------------------------------------------
def test_show_tblproperties_lists_options_and_primary_key_sorted(ctx, orders):
    got = rows(run(ctx, "SHOW TBLPROPERTIES orders"))
    assert got == sorted(got, key=lambda r: r["key"])
    props = {r["key"]: r["value"] for r in got}
    assert props["bucket"] == "2"
    assert "primary-key" not in props
    assert not any(k.startswith("dyntable.computed-column.") for k in props)


def test_keys_show_in_details_statement_and_properties(ctx):
    schema = pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.int32())])
    ctx.catalog.create_table("default.k", schema, primary_keys=["a"])
    assert {r[0]: r[1] for r in triples(run(ctx, "DESCRIBE EXTENDED k"))}["primary-key"] == "a"
    assert "PRIMARY KEY (`a`) NOT ENFORCED" in rows(run(ctx, "SHOW CREATE TABLE k"))[0]["createtab_stmt"]
    assert {"key": "primary-key", "value": "a"} in rows(run(ctx, "SHOW TBLPROPERTIES k"))


def test_show_tblproperties_one_key(ctx, orders):
    assert rows(run(ctx, "SHOW TBLPROPERTIES orders ('bucket')")) == [{"key": "bucket", "value": "2"}]


def test_show_tblproperties_missing_key_says_so(ctx, orders):
    (row,) = rows(run(ctx, "SHOW TBLPROPERTIES orders ('nope')"))
    assert row["value"].endswith("does not have property: nope")


# -- SHOW PARTITIONS ------------------------------------------------------------------------------
def test_show_partitions_lists_live_partitions_with_null_as_null(ctx, orders):
    got = sorted(r["partition"] for r in rows(run(ctx, "SHOW PARTITIONS orders")))
    assert got == ["day=2024-01-01/region=eu", "day=2024-01-01/region=us", "day=2024-01-02/region=null"]


def test_show_partitions_filtered_by_a_partial_spec(ctx, orders):
    plan = run(ctx, "SHOW PARTITIONS orders PARTITION (day = '2024-01-01')")
    got = sorted(r["partition"] for r in rows(plan))
    assert got == ["day=2024-01-01/region=eu", "day=2024-01-01/region=us"]


def test_show_partitions_of_an_unpartitioned_table_is_refused(ctx):
    ctx.catalog.create_table("default.plain", pa.schema([("a", pa.int32())]))
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "SHOW PARTITIONS plain")
    assert e.value.sqlstate == "42000"


def test_show_partitions_escapes_values_as_hive_does(ctx):
    table = ctx.catalog.create_table("default.p", pa.schema([("k", pa.string()), ("v", pa.int32())]),
                                     partition_keys=["k"])
    table.write_arrow(pa.table({"k": ["a/b"], "v": pa.array([1], pa.int32())}))
    assert rows(run(ctx, "SHOW PARTITIONS p")) == [{"partition": "k=a%2Fb"}]


def test_show_partitions_of_an_empty_table_is_empty(ctx):
    schema = pa.schema([("k", pa.string()), ("v", pa.int32())])
    ctx.catalog.create_table("default.p", schema, partition_keys=["k"])
    plan = run(ctx, "SHOW PARTITIONS p")
    assert plan.table.num_rows == 0
    assert plan.table.column_names == ["partition"]


# -- dyntable views -------------------------------------------------------------------------------
def _view(**kw):
    base = dict(name="v", database="default", sql="SELECT id FROM orders", current_database="default",
                columns=("id",), query_columns=("id",))
    return ViewDefinition(**{**base, **kw})


def test_describe_a_view_lists_the_columns_its_query_returns(ctx):
    ctx.view_definitions = [_view(column_comments=("the id",))]
    ctx.queries["SELECT * FROM default.v"] = (Column("id", "bigint"),)
    assert triples(run(ctx, "DESCRIBE v")) == [("id", "bigint", "the id")]


def test_describe_a_view_comes_before_a_table_of_the_engine(ctx):
    ctx.view_definitions = [_view()]
    ctx.queries["SELECT * FROM default.v"] = (Column("id", "bigint"),)
    assert isinstance(run(ctx, "DESCRIBE v"), Rows)  # not ToEngine: the view is dyntable's


def test_describe_extended_view_details(ctx):
    ctx.view_definitions = [_view(comment="ids", properties={"k": "1"}, created_millis=0)]
    ctx.queries["SELECT * FROM default.v"] = (Column("id", "bigint"),)
    details = {r[0]: r[1] for r in triples(run(ctx, "DESCRIBE EXTENDED v"))}
    assert details["Type"] == "VIEW"
    assert details["View Text"] == "SELECT id FROM orders"
    assert details["Comment"] == "ids"
    assert details["Table Properties"] == "[k=1]"
    assert details["Created Time"] == "Thu Jan 01 00:00:00 UTC 1970"


def test_describe_a_temporary_view(ctx):
    ctx.view_definitions = [_view(database=None)]
    ctx.queries["SELECT * FROM v"] = (Column("id", "bigint"),)
    details = {r[0]: r[1] for r in triples(run(ctx, "DESCRIBE EXTENDED v"))}
    assert details["Type"] == "TEMPORARY VIEW"
    assert details["Database"] == ""


def test_describe_a_missing_column_of_a_view(ctx):
    ctx.view_definitions = [_view()]
    ctx.queries["SELECT * FROM default.v"] = (Column("id", "bigint"),)
    with pytest.raises(SqlAnalysisError) as e:
        run(ctx, "DESCRIBE v nope")
    assert e.value.sqlstate == "42703"


def test_show_create_view(ctx):
    ctx.view_definitions = [_view(columns=("my id",), column_comments=("it's",), comment="c")]
    (row,) = rows(run(ctx, "SHOW CREATE TABLE v"))
    assert row["createtab_stmt"] == (
        "CREATE VIEW default.v (\n  `my id` COMMENT 'it\\'s')\nCOMMENT 'c'\nAS SELECT id FROM orders\n"
    )


def test_show_create_temporary_view_with_properties(ctx):
    ctx.view_definitions = [_view(database=None, properties={"b": "2", "a": "1"})]
    text = rows(run(ctx, "SHOW CREATE TABLE v"))[0]["createtab_stmt"]
    assert text.startswith("CREATE TEMPORARY VIEW v (\n  id)\n")
    assert "TBLPROPERTIES (\n  'a' = '1',\n  'b' = '2')\n" in text


def test_describe_a_table_of_another_database(ctx):
    ctx.catalog.create_database("other")
    ctx.catalog.create_table("other.x", pa.schema([("a", pa.int32())]))
    assert triples(run(ctx, "DESCRIBE other.x")) == [("a", "int", None)]


def test_describe_nested_types_use_the_engine_names(ctx):
    schema = pa.schema([("s", pa.struct([("a", pa.int32())])), ("l", pa.list_(pa.string()))])
    table = ctx.catalog.create_table("default.n", schema)
    expected = [ctx.type_text(f.type) for f in table.schema.fields]
    assert [r[1] for r in triples(run(ctx, "DESCRIBE n"))] == expected


def test_show_create_table_quotes_odd_column_names(ctx):
    ctx.catalog.create_table("default.odd", pa.schema([("my col", pa.int32()), ("x`y", pa.int32())]))
    text = rows(run(ctx, "SHOW CREATE TABLE odd"))[0]["createtab_stmt"]
    assert "  `my col` INT" in text
    assert "  `x``y` INT" in text


@pytest.mark.parametrize("comment", ["  ", ""])
def test_describe_extended_shows_a_blank_or_empty_comment(ctx, comment):
    # DescribeTableTestBase "describe table comment": '  ' and '' are comments too; none shows no row
    ctx.catalog.create_table("default.b", pa.schema([("a", pa.int32())]), comment=comment)
    ctx.catalog.create_table("default.n", pa.schema([("a", pa.int32())]))
    assert [r[1] for r in triples(run(ctx, "DESCRIBE EXTENDED b")) if r[0] == "Comment"] == [comment]
    assert [r for r in triples(run(ctx, "DESCRIBE EXTENDED n")) if r[0] == "Comment"] == []


def test_describe_extended_lists_column_default_values(ctx):
    # DescribeTableTestBase: the default shows as stored ('Bob'), in Spark's "# Column Default Values"
    from engine.types import INT, STRING, DataField

    fields = [DataField(0, "id", INT()), DataField(1, "name", STRING(), None, "'Bob'")]
    ctx.catalog.create_table("default.d", fields)
    got = triples(run(ctx, "DESCRIBE EXTENDED d"))
    at = got.index(("# Column Default Values", "", ""))
    assert got[at - 1] == ("", "", "") and got[at + 1:] == [("name", ctx.type_text(STRING()), "'Bob'")]
    assert ("# Column Default Values", "", "") not in triples(run(ctx, "DESCRIBE d"))
    assert "`name` STRING DEFAULT 'Bob'" in rows(run(ctx, "SHOW CREATE TABLE d"))[0]["createtab_stmt"]
