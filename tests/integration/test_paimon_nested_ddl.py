"""Conformance with Apache Paimon's Spark SQL: ALTER TABLE on nested columns and column default
values (issue 35, "Nested DDL").

Each test replays statements from Paimon's own Spark tests (release 2.0) and expects what Paimon
gives; the test it comes from is named in a comment. Rows are compared as nested tuples, which is
how Paimon's tests print them (``[1,[11,[APPLE,101,1001],one]]``).
"""

from __future__ import annotations

import json
import os

import pytest
from pyspark.sql import Row

from tests.integration.sql_helpers import fails, run

PK = "TBLPROPERTIES ('bucket' = '1', 'primary-key' = 'k')"


def plain(value):
    """Spark values as plain Python: Rows become tuples, recursively."""
    if isinstance(value, Row):
        return tuple(plain(v) for v in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def rows(session, sql):
    return sorted((plain(r) for r in run(session, sql)), key=repr)


def test_add_and_drop_nested_column(session):
    # SparkSchemaEvolutionITCase.testAddAndDropNestedColumn
    run(session, f"CREATE TABLE t (k INT NOT NULL, v STRUCT<f1: INT, f2: STRUCT<f1: STRING, f2: INT>>) {PK}")
    run(
        session,
        "INSERT INTO t VALUES (1, STRUCT(10, STRUCT('apple', 100))), (2, STRUCT(20, STRUCT('banana', 200)))",
    )
    assert rows(session, "SELECT v.f2.f1, k FROM t") == [("apple", 1), ("banana", 2)]
    run(session, "ALTER TABLE t ADD COLUMN v.f3 STRING")
    run(session, "ALTER TABLE t ADD COLUMN v.f2.f3 BIGINT")
    run(
        session,
        "INSERT INTO t VALUES (1, STRUCT(11, STRUCT('APPLE', 101, 1001), 'one')), "
        "(3, STRUCT(31, STRUCT('CHERRY', 301, 3001), 'three'))",
    )
    assert rows(session, "SELECT * FROM t") == [
        (1, (11, ("APPLE", 101, 1001), "one")),
        (2, (20, ("banana", 200, None), None)),
        (3, (31, ("CHERRY", 301, 3001), "three")),
    ]
    assert rows(session, "SELECT v.f2.f2, v.f3, k FROM t") == [
        (101, "one", 1),
        (200, None, 2),
        (301, "three", 3),
    ]
    run(session, "ALTER TABLE t DROP COLUMN v.f2.f1")
    run(
        session,
        "INSERT INTO t VALUES (1, STRUCT(12, STRUCT(102, 1002), 'one')), "
        "(4, STRUCT(42, STRUCT(402, 4002), 'four'))",
    )
    assert rows(session, "SELECT * FROM t") == [
        (1, (12, (102, 1002), "one")),
        (2, (20, (200, None), None)),
        (3, (31, (301, 3001), "three")),
        (4, (42, (402, 4002), "four")),
    ]
    run(session, "ALTER TABLE t ADD COLUMN v.f2.f1 DECIMAL(5, 2) AFTER f2")
    run(
        session,
        "INSERT INTO t VALUES (1, STRUCT(13, STRUCT(103, 100.03, 1003), 'one')), "
        "(5, STRUCT(53, STRUCT(503, 500.03, 5003), 'five'))",
    )
    got = [
        (k, (a, (b, None if c is None else str(c), d), e))
        for k, (a, (b, c, d), e) in rows(session, "SELECT * FROM t")
    ]
    assert got == [
        (1, (13, (103, "100.03", 1003), "one")),
        (2, (20, (200, None, None), None)),
        (3, (31, (301, None, 3001), "three")),
        (4, (42, (402, None, 4002), "four")),
        (5, (53, (503, "500.03", 5003), "five")),
    ]


def test_add_and_drop_nested_column_in_array(session):
    # SparkSchemaEvolutionITCase.testAddAndDropNestedColumnInArray
    run(session, f"CREATE TABLE t (k INT NOT NULL, v ARRAY<STRUCT<f1: STRING, f2: INT>>) {PK}")
    run(
        session,
        "INSERT INTO t VALUES (1, ARRAY(STRUCT('apple', 100), STRUCT('banana', 101))), "
        "(2, ARRAY(STRUCT('cat', 200), STRUCT('dog', 201)))",
    )
    run(session, "ALTER TABLE t ADD COLUMN v.element.f3 STRING AFTER f2")
    run(session, "ALTER TABLE t DROP COLUMN v.element.f1")
    run(
        session,
        "INSERT INTO t VALUES (1, ARRAY(STRUCT(110, 'APPLE'), STRUCT(111, 'BANANA'))), "
        "(3, ARRAY(STRUCT(310, 'FLOWER')))",
    )
    assert rows(session, "SELECT * FROM t") == [
        (1, [(110, "APPLE"), (111, "BANANA")]),
        (2, [(200, None), (201, None)]),
        (3, [(310, "FLOWER")]),
    ]


def test_add_and_drop_nested_column_in_map(session):
    # SparkSchemaEvolutionITCase.testAddAndDropNestedColumnInMap
    run(session, f"CREATE TABLE t (k INT NOT NULL, v MAP<INT, STRUCT<f1: STRING, f2: INT>>) {PK}")
    run(
        session,
        "INSERT INTO t VALUES (1, MAP(10, STRUCT('apple', 100), 20, STRUCT('banana', 101))), "
        "(2, MAP(10, STRUCT('cat', 200), 20, STRUCT('dog', 201)))",
    )
    assert rows(session, "SELECT k, v[10].f1, v[10].f2 FROM t") == [(1, "apple", 100), (2, "cat", 200)]
    run(session, "ALTER TABLE t ADD COLUMN v.value.f3 STRING AFTER f2")
    run(session, "ALTER TABLE t DROP COLUMN v.value.f1")
    run(
        session,
        "INSERT INTO t VALUES (1, MAP(10, STRUCT(110, 'APPLE'), 20, STRUCT(111, 'BANANA'))), "
        "(3, MAP(10, STRUCT(310, 'FLOWER')))",
    )
    assert rows(session, "SELECT k, v[10].f2, v[10].f3 FROM t") == [
        (1, 110, "APPLE"),
        (2, 200, None),
        (3, 310, "FLOWER"),
    ]


@pytest.mark.parametrize(
    ("column_type", "insert", "rename", "select", "expected"),
    [
        # SparkSchemaEvolutionITCase.testRenameNestedColumn
        (
            "STRUCT<f1: INT, f2: STRUCT<f1: STRING, f2: INT>>",
            "(1, STRUCT(10, STRUCT('apple', 100))), (2, STRUCT(20, STRUCT('banana', 200)))",
            "v.f2.f1 to f100",
            "v.f2.f100",
            ["apple", "banana"],
        ),
        # testRenameNestedColumnInArray
        (
            "ARRAY<STRUCT<f1: STRING, f2: INT>>",
            "(1, ARRAY(STRUCT('apple', 100), STRUCT('banana', 101))), "
            "(2, ARRAY(STRUCT('cat', 200), STRUCT('dog', 201)))",
            "v.element.f1 to f100",
            "v[0].f100",
            ["apple", "cat"],
        ),
        # testRenameNestedColumnInMap
        (
            "MAP<INT, STRUCT<f1: STRING, f2: INT>>",
            "(1, MAP(10, STRUCT('apple', 100), 20, STRUCT('banana', 101))), "
            "(2, MAP(10, STRUCT('cat', 200), 20, STRUCT('dog', 201)))",
            "v.value.f1 to f100",
            "v[10].f100",
            ["apple", "cat"],
        ),
    ],
    ids=["struct", "array", "map"],
)
def test_rename_nested_column(session, column_type, insert, rename, select, expected):
    run(session, f"CREATE TABLE t (k INT NOT NULL, v {column_type})")
    run(session, f"INSERT INTO t VALUES {insert}")
    run(session, f"ALTER TABLE t RENAME COLUMN {rename}")
    assert rows(session, f"SELECT {select}, k FROM t") == [(v, k) for k, v in enumerate(expected, start=1)]


def test_update_nested_column_type(session):
    # SparkSchemaEvolutionITCase.testUpdateNestedColumnType
    run(session, f"CREATE TABLE t (k INT NOT NULL, v STRUCT<f1: INT, f2: STRUCT<f1: STRING, f2: INT>>) {PK}")
    run(
        session,
        "INSERT INTO t VALUES (1, STRUCT(10, STRUCT('apple', 100))), (2, STRUCT(20, STRUCT('banana', 200)))",
    )
    run(session, "ALTER TABLE t CHANGE COLUMN v.f2.f2 f2 BIGINT")
    run(
        session,
        "INSERT INTO t VALUES (1, STRUCT(11, STRUCT('APPLE', 101))), "
        "(3, STRUCT(31, STRUCT('CHERRY', 3000000000000)))",
    )
    assert rows(session, "SELECT v.f2.f2, k FROM t") == [(101, 1), (200, 2), (3000000000000, 3)]


def test_update_nested_column_type_in_array_and_map(session):
    # SparkSchemaEvolutionITCase.testUpdateNestedColumnTypeInArray / ...InMap
    run(
        session,
        f"CREATE TABLE t (k INT NOT NULL, a ARRAY<STRUCT<f1: STRING, f2: INT>>, "
        f"m MAP<INT, STRUCT<f1: STRING, f2: INT>>) {PK}",
    )
    run(
        session,
        "INSERT INTO t VALUES (1, ARRAY(STRUCT('apple', 100), STRUCT('banana', 101)), "
        "MAP(10, STRUCT('apple', 100))), (2, ARRAY(STRUCT('cat', 200)), MAP(10, STRUCT('cat', 200)))",
    )
    run(session, "ALTER TABLE t CHANGE COLUMN a.element.f2 f2 BIGINT")
    run(session, "ALTER TABLE t CHANGE COLUMN m.value.f2 f2 BIGINT")
    run(
        session,
        "INSERT INTO t VALUES (1, ARRAY(STRUCT('APPLE', 1000000000000), STRUCT('BANANA', 111)), "
        "MAP(10, STRUCT('APPLE', 1000000000000))), (3, ARRAY(STRUCT('FLOWER', 3000000000000)), "
        "MAP(10, STRUCT('FLOWER', 3000000000000)))",
    )
    assert rows(session, "SELECT k, a, m[10].f1, m[10].f2 FROM t") == [
        (1, [("APPLE", 1000000000000), ("BANANA", 111)], "APPLE", 1000000000000),
        (2, [("cat", 200)], "cat", 200),
        (3, [("FLOWER", 3000000000000)], "FLOWER", 3000000000000),
    ]


def test_nested_changes_are_refused_where_paimon_refuses_them(session):
    run(session, "CREATE TABLE t (k INT, v STRUCT<f1: INT, f2: STRING>)")
    fails(session, "ALTER TABLE t ADD COLUMN v.f1 STRING", "'v.f1' already exists")
    fails(session, "ALTER TABLE t ADD COLUMN v.x INT NOT NULL", "NOT NULL")
    fails(session, "ALTER TABLE t RENAME COLUMN v.f1 TO f2", "'v.f2' already exists")
    fails(session, "ALTER TABLE t ALTER COLUMN v.f2 TYPE INT", "cannot change column 'v.f2'")
    fails(session, "ALTER TABLE t DROP COLUMN v.nope", "v.nope")
    run(session, "ALTER TABLE t DROP COLUMN v.f1")
    fails(session, "ALTER TABLE t DROP COLUMN v.f2", "last field of 'v'")


def _schema_file(session, table, schema_id):
    root = os.path.join(session.catalog.warehouse, "default.db", table, "schema", f"schema-{schema_id}")
    with open(root) as f:
        return json.load(f)


def test_default_values_on_insert_and_alter(session):
    # Paimon docs spark/default-value "Alter Default Value" and SparkWriteITCase.testWriteWithDefaultValue
    run(session, "CREATE TABLE T (a INT, b INT DEFAULT 2, c STRING DEFAULT 'my_value')")
    fields = {f["name"]: f for f in _schema_file(session, "T", 0)["fields"]}
    assert fields["b"]["defaultValue"] == "2" and fields["c"]["defaultValue"] == "'my_value'"
    assert not any(k.endswith("default-value") for k in _schema_file(session, "T", 0)["options"])
    run(session, "INSERT INTO T (a) VALUES (1)")
    run(session, "ALTER TABLE T ALTER COLUMN b SET DEFAULT 3")
    run(session, "INSERT INTO T (a) VALUES (2)")
    assert rows(session, "SELECT * FROM T") == [(1, 2, "my_value"), (2, 3, "my_value")]
    run(session, "ALTER TABLE T ALTER COLUMN c DROP DEFAULT")
    assert "defaultValue" not in {f["name"]: f for f in _schema_file(session, "T", 2)["fields"]}["c"]
    run(session, "INSERT INTO T (a) VALUES (3)")
    assert (3, 3, None) in rows(session, "SELECT * FROM T")
    described = run(session, "DESCRIBE TABLE EXTENDED T")
    at = described.index(("# Column Default Values", "", ""))
    assert described[at + 1 :] == [("b", "int", "3")]


def test_unsupported_default_values(session):
    # DefaultValueTest "Default Value: unsupported default value"
    fails(
        session,
        "CREATE TABLE t (a INT, b TIMESTAMP DEFAULT current_timestamp())",
        "Unsupported default value `current_timestamp()`",
    )
    run(session, "CREATE TABLE t (a INT DEFAULT 1)")
    fails(
        session,
        "ALTER TABLE t ALTER COLUMN a SET DEFAULT current_timestamp()",
        "Unsupported default value `current_timestamp()`",
    )
    fails(session, "ALTER TABLE t ALTER COLUMN a SET DEFAULT 'x'", "Unsupported default value `'x'`")


def test_a_nested_field_dropped_and_added_again_reads_null_in_old_files(session):
    # The same struct type as before (f1 back in first place), but f1 is a new field (a new id):
    # old files hold the old f1, which no reader may show under the new one's name.
    run(session, "CREATE TABLE t (k INT, v STRUCT<f1: INT, f2: INT>)")
    run(session, "INSERT INTO t VALUES (1, STRUCT(10, 100))")
    run(session, "ALTER TABLE t DROP COLUMN v.f1")
    run(session, "ALTER TABLE t ADD COLUMN v.f1 INT FIRST")
    run(session, "INSERT INTO t VALUES (2, STRUCT(20, 200))")
    assert rows(session, "SELECT * FROM t") == [(1, (None, 100)), (2, (20, 200))]
    assert rows(session, "SELECT v.f1, k FROM t WHERE k = 1") == [(None, 1)]
