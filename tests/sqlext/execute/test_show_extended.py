"""The SHOW TABLE EXTENDED planner over a fake context (no JVM): the rows it answers (tables and
dyntable views of the database, then temporary views), the ``information`` text in Spark's order,
one partition's row, and what goes to the SQL engine."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import Column, Rows, ToEngine
from sqlext.execute.show_extended import PLANNERS, spark_pattern_matches
from tests.sqlext.execute.fake_context import FakeContext, fake_context, plan_of, view


@pytest.fixture
def ctx(tmp_path) -> FakeContext:
    ctx = fake_context(tmp_path)
    ctx.catalog.create_table("default.events", pa.schema([("id", pa.int64()), ("dt", pa.string())]),
                             partition_keys=["dt"], options={"bucket": "-1"}, comment="all events")
    ctx.catalog.create_table("default.other", pa.schema([("x", pa.int32())]), options={"bucket": "-1"})
    return ctx


def rows(ctx: FakeContext, sql: str) -> list[dict]:
    p = plan_of(PLANNERS, ctx, sql)
    assert isinstance(p, Rows), p
    assert p.table.column_names == ["namespace", "tableName", "isTemporary", "information"]
    return p.table.to_pylist()


def lines(information: str) -> list[str]:
    return information.split("\n")


def test_a_tables_information_in_sparks_order(ctx):
    [row] = rows(ctx, "SHOW TABLE EXTENDED LIKE 'ev*'")
    assert (row["namespace"], row["tableName"], row["isTemporary"]) == ("default", "events", False)
    text = lines(row["information"])
    keys = [line.split(":")[0] for line in text if ":" in line and not line.startswith(" ")]
    assert keys == ["Catalog", "Database", "Table", "Last Access", "Type", "Provider", "Comment",
                    "Table Properties", "Location", "Partition Provider", "Partition Columns", "Schema"]
    assert "Comment: all events" in text and "Type: MANAGED" in text
    assert "Partition Columns: [`dt`]" in text
    assert text[-4:] == [" |-- id: int64 (nullable = true)", " |-- dt: string (nullable = true)", "", ""]


def test_tables_and_views_sorted_then_temporary_views(ctx):
    ctx.view_definitions.append(view("a_view"))
    ctx.queries["SELECT * FROM `default`.`a_view`"] = (Column("a", "int"),)
    ctx.temp_views["tmp"] = view("Tmp", database=None)
    ctx.queries["SELECT * FROM `Tmp`"] = (Column("a", "int"),)
    ctx.engine_views.extend(["spark_v", "cached_c"])
    ctx.engine_informations["spark_v"] = "Table: spark_v\nType: VIEW\n"
    listed = rows(ctx, "SHOW TABLE EXTENDED IN default LIKE '*'")
    assert [(r["namespace"], r["tableName"], r["isTemporary"]) for r in listed] == [
        ("default", "a_view", False), ("default", "events", False), ("default", "other", False),
        ("", "cached_c", True), ("", "spark_v", True), ("", "Tmp", True),
    ]
    a_view = lines(listed[0]["information"])
    assert "Type: VIEW" in a_view and "View Text: SELECT 1 AS a" in a_view
    assert "View Query Output Columns: [`a`]" in a_view and " |-- a: int (nullable = true)" in a_view
    assert listed[3]["information"] == "Table: cached_c\nLast Access: UNKNOWN\nType: VIEW\n"  # no tree known
    assert listed[4]["information"] == "Table: spark_v\nType: VIEW\n"  # the engine's own text
    assert listed[5]["information"].startswith("Table: Tmp\n")  # a temporary view has no database


def test_a_view_whose_query_no_longer_binds_is_listed_without_a_schema(ctx):
    ctx.view_definitions.append(view("broken"))
    [row] = rows(ctx, "SHOW TABLE EXTENDED LIKE 'broken'")
    assert "Schema" not in row["information"] and "Type: VIEW" in row["information"]


def test_spark_patterns():
    names = ["events", "Other", "e.x"]
    assert spark_pattern_matches(names, "ev*|oth*") == ["events", "Other"]
    assert spark_pattern_matches(names, "e.x") == ["e.x"]  # a regular expression: '.' is any
    assert spark_pattern_matches(names, "[|events") == ["events"]  # an invalid alternative matches nothing


def test_another_database_or_catalog_is_the_engines(ctx):
    assert plan_of(PLANNERS, ctx, "SHOW TABLE EXTENDED IN nope LIKE '*'") == ToEngine()
    assert plan_of(PLANNERS, ctx, "SHOW TABLE EXTENDED IN spark_catalog.default LIKE '*'") == ToEngine()


def test_one_partitions_row(ctx):
    ctx.catalog.get_table("default.events").write_arrow(pa.table({"id": [1, 2], "dt": ["d1", "d1"]}))
    [row] = rows(ctx, "SHOW TABLE EXTENDED LIKE 'events' PARTITION (dt = 'd1')")
    text = lines(row["information"])
    assert text[0] == "Partition Values: [dt=d1]"
    assert text[1].startswith("Location: ") and text[1].endswith("/dt=d1")
    assert text[2].startswith("Partition Parameters: {numFiles=1, numRows=2, totalSize=")
    with pytest.raises(SqlAnalysisError, match="does not exist") as info:
        rows(ctx, "SHOW TABLE EXTENDED LIKE 'events' PARTITION (dt = 'd2')")
    assert info.value.sqlstate == "428FT"


def test_a_partition_of_a_missing_table_or_a_view_is_refused(ctx):
    with pytest.raises(SqlAnalysisError, match="not found") as info:
        plan_of(PLANNERS, ctx, "SHOW TABLE EXTENDED LIKE 'nope' PARTITION (dt = 'd1')")
    assert info.value.sqlstate == "42P01"
    ctx.view_definitions.append(view("v"))
    with pytest.raises(SqlAnalysisError, match="is a view") as info:
        plan_of(PLANNERS, ctx, "SHOW TABLE EXTENDED LIKE 'v' PARTITION (dt = 'd1')")
    assert info.value.sqlstate == "42809"
