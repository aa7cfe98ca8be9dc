"""SHOW TABLE EXTENDED [IN db] LIKE pattern [PARTITION (...)] through SqlSession (shared Spark):
Spark's four columns and ``information`` text, as dbt-spark lists and parses relations."""

from __future__ import annotations

import re

import pytest

from sqlext.errors import SqlError
from tests.integration.sql_helpers import run

# dbt-spark's own expressions (SparkAdapter.INFORMATION_COLUMNS_REGEX and its Type/Provider tests).
DBT_COLUMNS = re.compile(r"^ \|-- (.*): (.*) \(nullable = (.*)\b", re.MULTILINE)


@pytest.fixture
def shop(session):
    session.sql("CREATE DATABASE shop")
    session.sql(
        "CREATE TABLE shop.orders (id BIGINT NOT NULL, amount DECIMAL(10, 2), tags ARRAY<STRING>,"
        " dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) COMMENT 'all orders' PARTITIONED BY (dt)"
        " WITH ('bucket' = '2')"
    )
    session.sql(
        "INSERT INTO shop.orders VALUES (1, 1.5, array('a'), 'd1'), (2, 2.5, NULL, 'd1'),"
        " (3, 3.5, NULL, 'd2')"
    )
    session.sql("CREATE TABLE shop.items (sku STRING, qty INT) USING dyntable")
    session.sql(
        "CREATE VIEW shop.big_orders COMMENT 'over 2' AS"
        " SELECT id, amount AS amt FROM shop.orders WHERE amount > 2"
    )
    return session


def info_of(rows, name):
    return next(r[3] for r in rows if r[1] == name)


def test_lists_tables_and_views_with_spark_information(shop, warehouse):
    shop.sql("CREATE TEMPORARY VIEW recent AS SELECT id FROM shop.orders")
    rows = run(shop, "SHOW TABLE EXTENDED IN shop LIKE '*'")
    df = list(shop.execute("SHOW TABLE EXTENDED IN shop LIKE '*'"))[-1].dataframe
    assert df.columns == ["namespace", "tableName", "isTemporary", "information"]
    # The database's tables and views sorted by name, then the temporary views.
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("shop", "big_orders", False),
        ("shop", "items", False),
        ("shop", "orders", False),
        ("", "recent", True),
    ]
    assert info_of(rows, "orders") == (
        "Catalog: dyntable\n"
        "Database: shop\n"
        "Table: orders\n"
        "Last Access: UNKNOWN\n"
        "Type: MANAGED\n"
        "Provider: dyntable\n"
        "Comment: all orders\n"
        "Table Properties: [bucket=2, file.format=parquet, primary-key=id,dt]\n"
        f"Location: {warehouse}/shop.db/orders\n"
        "Partition Provider: Catalog\n"
        "Partition Columns: [`dt`]\n"
        "Schema: root\n"
        " |-- id: long (nullable = false)\n"
        " |-- amount: decimal(10,2) (nullable = true)\n"
        " |-- tags: array (nullable = true)\n"
        " |    |-- element: string (containsNull = true)\n"
        " |-- dt: string (nullable = false)\n"
        "\n"
    )
    view = info_of(rows, "big_orders")
    assert view.startswith("Catalog: dyntable\nDatabase: shop\nTable: big_orders\nCreated Time: ")
    assert (
        "\nType: VIEW\nComment: over 2\n"
        "View Text: SELECT id, amount AS amt FROM shop.orders WHERE amount > 2\n"
    ) in view
    assert view.endswith(
        "View Catalog and Namespace: dyntable.default\n"
        "View Query Output Columns: [`id`, `amt`]\n"
        "Schema: root\n |-- id: long (nullable = true)\n |-- amt: decimal(10,2) (nullable = true)\n\n"
    )
    assert "Provider:" not in view
    assert info_of(rows, "recent").startswith("Table: recent\n")
    # What dbt-spark reads: the relation type, the provider and the top-level columns only.
    kinds = {r[1]: ("view" if "Type: VIEW" in r[3] else "table") for r in rows}
    assert kinds == {"big_orders": "view", "items": "table", "orders": "table", "recent": "view"}
    assert [m.groups() for m in DBT_COLUMNS.finditer(info_of(rows, "orders"))] == [
        ("id", "long", "false"), ("amount", "decimal(10,2)", "true"), ("tags", "array", "true"),
        ("dt", "string", "false"),
    ]
    assert [m.group(1) for m in DBT_COLUMNS.finditer(info_of(rows, "items"))] == ["sku", "qty"]


def test_pattern_is_sparks(shop):
    names = lambda sql: [r[1] for r in run(shop, sql)]  # noqa: E731
    assert names("SHOW TABLE EXTENDED FROM shop LIKE 'ORD*|it*'") == ["items", "orders"]
    assert names("SHOW TABLE EXTENDED IN shop LIKE 'big_orders'") == ["big_orders"]
    assert names("SHOW TABLE EXTENDED IN shop LIKE 'order'") == []  # the whole name must match
    assert names("SHOW TABLE EXTENDED IN shop LIKE '[|items'") == ["items"]  # an invalid part matches nothing
    shop.sql("USE shop")
    assert names("SHOW TABLE EXTENDED LIKE 'i.*'") == ["items"]  # the current database


def test_spark_temporary_views_are_listed(shop):
    shop.spark.sql("CREATE OR REPLACE TEMPORARY VIEW spark_only AS SELECT 1 AS one")
    (row,) = run(shop, "SHOW TABLE EXTENDED IN shop LIKE 'spark_*'")
    assert row[:3] == ("", "spark_only", True)
    # Spark's own text for its own view
    assert row[3].startswith("Table: spark_only\nCreated Time: ")
    assert "\nType: VIEW\nView Text: SELECT 1 AS one\n" in row[3]
    assert row[3].endswith("Schema: root\n |-- one: integer (nullable = false)\n\n")


def test_view_over_a_dropped_table_is_still_listed(shop):
    shop.sql("CREATE TABLE shop.tmp (a INT)")
    shop.sql("CREATE VIEW shop.over_tmp AS SELECT a FROM shop.tmp")
    shop.sql("DROP TABLE shop.tmp")
    (row,) = run(shop, "SHOW TABLE EXTENDED IN shop LIKE 'over_tmp'")
    assert "Type: VIEW" in row[3] and "Schema:" not in row[3]


def test_unknown_database_is_sparks(shop):
    with pytest.raises(SqlError) as info:
        run(shop, "SHOW TABLE EXTENDED IN nowhere LIKE '*'")
    assert "SCHEMA_NOT_FOUND" in str(info.value)  # what dbt-spark reads as an empty schema


def test_partition(shop, warehouse):
    (row,) = run(shop, "SHOW TABLE EXTENDED IN shop LIKE 'orders' PARTITION (dt = 'd1')")
    assert row[:3] == ("shop", "orders", False)
    m = re.fullmatch(
        r"Partition Values: \[dt=d1\]\n"
        rf"Location: {re.escape(warehouse)}/shop\.db/orders/dt=d1\n"
        r"Partition Parameters: \{numFiles=(\d+), numRows=2, totalSize=(\d+)\}\n"
        r"Last Access: UNKNOWN\n"
        r"Partition Statistics: (\d+) bytes, 2 rows\n",
        row[3],
    )
    assert m is not None, row[3]
    assert int(m.group(1)) >= 1 and m.group(2) == m.group(3) and int(m.group(2)) > 0


@pytest.mark.parametrize(
    "sql, sqlstate, words",
    [
        ("SHOW TABLE EXTENDED IN shop LIKE 'orders' PARTITION (dt = 'd9')", "428FT", ["does not exist"]),
        ("SHOW TABLE EXTENDED IN shop LIKE 'big_orders' PARTITION (dt = 'd1')", "42809", ["is a view"]),
        ("SHOW TABLE EXTENDED IN shop LIKE 'ord*' PARTITION (dt = 'd1')", "42P01", ["names one table"]),
        ("SHOW TABLE EXTENDED IN shop LIKE 'items' PARTITION (sku = 'x')", "42000", ["not partitioned"]),
        ("SHOW TABLE EXTENDED IN shop LIKE 'orders' PARTITION (id = 1)", "42703", ["not a partition column"]),
    ],
)
def test_partition_errors(shop, sql, sqlstate, words):
    with pytest.raises(SqlError) as info:
        run(shop, sql)
    assert info.value.sqlstate == sqlstate, str(info.value)
    for w in words:
        assert w in str(info.value)
