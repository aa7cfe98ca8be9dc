"""SQL writes that evolve the schema (``write.merge-schema``): ``INSERT … BY NAME`` and
``MERGE INTO … UPDATE SET * / INSERT *``.

The cases of Paimon 2.0's ``WriteMergeSchemaTest`` that run SQL, and the schema-evolution cases of
its ``MergeIntoAlignmentTest`` and ``MergeIntoTableTestBase``, with Paimon's expected rows; then
how the option is turned on (session key, per-table key, hint, table option) and what the write
costs and leaves behind (one schema file with the data, none when the write fails).
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pytest

from sqlext.errors import SqlError

pytestmark = pytest.mark.spark

MERGE = "SET spark.paimon.write.merge-schema = true"


def rows(session, sql: str) -> list[tuple]:
    return [tuple(_plain(v) for v in r) for r in session.sql(sql).collect()]


def _plain(value):
    """A Spark Row (struct) as a tuple, recursively; maps and lists as they come."""
    if hasattr(value, "asDict"):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def columns(session, table: str = "t") -> list[str]:
    return session.sql(f"SELECT * FROM {table}").columns


def schema_ids(session, table: str = "default.t") -> list[int]:
    return session.catalog.get_table(table).schemas.list_ids()


@pytest.fixture
def t(session):
    session.sql("CREATE TABLE t (a INT, b STRING)")
    session.sql("INSERT INTO t VALUES (1, '1'), (2, '2')")
    return session


# -- Paimon's SQL cases ---------------------------------------------------------------------------
def test_sql_write(t):
    t.sql(MERGE)
    t.sql("INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, 3 AS c")
    assert rows(t, "SELECT * FROM t ORDER BY a") == [(1, "1", None), (2, "2", None), (3, "3", 3)]
    # missing columns and new columns
    t.sql("INSERT INTO t BY NAME SELECT '4' AS d, '4' AS b, 4 AS c")
    assert rows(t, "SELECT * FROM t ORDER BY a") == [
        (None, "4", 4, "4"), (1, "1", None, None), (2, "2", None, None), (3, "3", 3, None)]


def test_fails_when_merge_schema_is_disabled_but_new_columns_are_provided(t):
    t.sql("SET spark.paimon.write.merge-schema = false")
    with pytest.raises(SqlError, match="extra columns") as info:
        t.sql("INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, 3 AS c")
    assert info.value.sqlstate == "42703"
    assert schema_ids(t) == [0] and rows(t, "SELECT count(*) FROM t") == [(2,)]


def test_numeric_types(t):
    t.sql(MERGE)
    t.sql("INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, cast(10 as byte) AS byte_col, "
          "cast(1000 as short) AS short_col, 100000 AS int_col, 10000000000L AS long_col, "
          "cast(1.23 as float) AS float_col, 4.56D AS double_col, cast(7.89 as decimal(10,2)) AS decimal_col")
    t.sql("INSERT INTO t BY NAME SELECT '4' AS d, '4' AS b, cast(20 as byte) AS byte_col, "
          "cast(2000 as short) AS short_col, 200000 AS int_col, 20000000000L AS long_col, "
          "cast(2.34 as float) AS float_col, 5.67D AS double_col, cast(8.96 as decimal(10,2)) AS decimal_col")
    got = rows(t, "SELECT * FROM t ORDER BY a")
    floats = [None if r[6] is None else round(r[6], 2) for r in got]  # FLOAT 1.23 reads as 1.2300000190734863
    assert floats == [2.34, None, None, 1.23]
    assert [r[:6] + r[7:] for r in got] == [
        (None, "4", 20, 2000, 200000, 20000000000, 5.67, Decimal("8.96"), "4"),
        (1, "1", None, None, None, None, None, None, None),
        (2, "2", None, None, None, None, None, None, None),
        (3, "3", 10, 1000, 100000, 10000000000, 4.56, Decimal("7.89"), None),
    ]
    types = dict(t.sql("SELECT * FROM t").dtypes)
    assert [types[c] for c in ("byte_col", "short_col", "int_col", "long_col", "float_col", "double_col",
                               "decimal_col")] == ["tinyint", "smallint", "int", "bigint", "float", "double",
                                                   "decimal(10,2)"]


def test_date_and_time_types(t):
    t.sql(MERGE)
    t.sql("INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, cast('2023-01-01' as date) AS date_col, "
          "cast('2023-01-01 12:00:00' as timestamp) AS timestamp_col")
    t.sql("INSERT INTO t BY NAME SELECT '4' AS d, '4' AS b, cast('2023-12-31' as date) AS date_col, "
          "cast('2023-12-31 23:59:59' as timestamp) AS timestamp_col")
    assert rows(t, "SELECT * FROM t ORDER BY a") == [
        (None, "4", dt.date(2023, 12, 31), dt.datetime(2023, 12, 31, 23, 59, 59), "4"),
        (1, "1", None, None, None),
        (2, "2", None, None, None),
        (3, "3", dt.date(2023, 1, 1), dt.datetime(2023, 1, 1, 12, 0), None),
    ]


def test_complex_types(t):
    t.sql(MERGE)
    t.sql("INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, array(1, 2, 3) AS array_col, "
          "map('key1', 'value1', 'key2', 'value2') AS map_col, struct('x', 1) AS struct_col")
    t.sql("INSERT INTO t BY NAME SELECT '4' AS d, '4' AS b, array(4, 5, 6) AS array_col, "
          "map('key3', 'value3') AS map_col, struct('y', 2) AS struct_col")
    assert rows(t, "SELECT * FROM t ORDER BY a") == [
        (None, "4", [4, 5, 6], {"key3": "value3"}, ("y", 2), "4"),
        (1, "1", None, None, None, None),
        (2, "2", None, None, None, None),
        (3, "3", [1, 2, 3], {"key1": "value1", "key2": "value2"}, ("x", 1), None),
    ]


def test_nested_struct_with_new_fields_by_name(session):
    session.sql(MERGE)
    session.sql("CREATE TABLE t (id INT, info STRUCT<key1: STRUCT<key2: STRING, key3: STRING>>)")
    session.sql("INSERT INTO t VALUES (1, struct(struct('v2a', 'v3a')))")
    session.sql("INSERT INTO t VALUES (2, struct(struct('v2b', 'v3b')))")
    # key4 comes before key3: fields inside the struct go by name, not by position
    session.sql("INSERT INTO t BY NAME SELECT 3 AS id, "
                "named_struct('key1', named_struct('key2', 'v2c', 'key4', 'v4c', 'key3', 'v3c')) AS info")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [
        (1, (("v2a", "v3a", None),)), (2, (("v2b", "v3b", None),)), (3, (("v2c", "v3c", "v4c"),))]


def test_binary_and_boolean_types(t):
    t.sql(MERGE)
    t.sql("INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, cast('binary_data' as binary) AS binary_col, "
          "true AS boolean_col")
    t.sql("INSERT INTO t BY NAME SELECT '4' AS d, '4' AS b, cast('more_data' as binary) AS binary_col, "
          "false AS boolean_col")
    got = [tuple(bytes(v) if isinstance(v, bytearray) else v for v in r)
           for r in rows(t, "SELECT * FROM t ORDER BY a")]
    assert got == [(None, "4", b"more_data", False, "4"), (1, "1", None, None, None),
                   (2, "2", None, None, None), (3, "3", b"binary_data", True, None)]


def test_deeply_nested_struct_with_new_fields(session):
    session.sql(MERGE)
    session.sql("CREATE TABLE t (id INT, data STRUCT<a: STRUCT<b: STRUCT<c1: STRING, c2: STRING>>>)")
    session.sql("INSERT INTO t VALUES (1, struct(struct(struct('c1v', 'c2v'))))")
    session.sql("INSERT INTO t BY NAME SELECT 2 AS id, "
                "named_struct('a', named_struct('b', "
                "named_struct('c1', 'c1v2', 'c3', 'c3v2', 'c2', 'c2v2'))) AS data")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [
        (1, ((("c1v", "c2v", None),),)), (2, ((("c1v2", "c2v2", "c3v2"),),))]


def test_nested_struct_new_fields_and_top_level_new_column_together(session):
    session.sql(MERGE)
    session.sql("CREATE TABLE t (id INT, info STRUCT<f1: STRING, f2: STRING>)")
    session.sql("INSERT INTO t VALUES (1, struct('a', 'b'))")
    session.sql("INSERT INTO t BY NAME SELECT 2 AS id, "
                "named_struct('f1', 'c', 'f3', 'd', 'f2', 'e') AS info, 'top' AS extra")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [
        (1, ("a", "b", None), None), (2, ("c", "e", "d"), "top")]


def test_nested_struct_with_missing_fields(session):
    session.sql(MERGE)
    session.sql("CREATE TABLE t (id INT, info STRUCT<f1: STRING, f2: STRING, f3: STRING>)")
    session.sql("INSERT INTO t VALUES (1, struct('a', 'b', 'c'))")
    session.sql("INSERT INTO t BY NAME SELECT 2 AS id, named_struct('f2', 'y', 'f3', 'z') AS info")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, ("a", "b", "c")), (2, (None, "y", "z"))]
    session.sql("INSERT INTO t BY NAME SELECT 3 AS id, named_struct('f1', 'x', 'f4', 'w', 'f3', 'z') AS info")
    session.sql("INSERT INTO t BY NAME SELECT 4 AS id, named_struct('f2', 'p', 'f3', 'q', 'f4', 'r') AS info")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [
        (1, ("a", "b", "c", None)), (2, (None, "y", "z", None)), (3, ("x", None, "z", "w")),
        (4, (None, "p", "q", "r"))]


def test_nested_struct_with_type_evolution(session):
    session.sql(MERGE)
    session.sql("SET spark.paimon.write.merge-schema.type-widening = true")
    session.sql("CREATE TABLE t (id INT, info STRUCT<f1: INT, f2: STRING>)")
    session.sql("INSERT INTO t VALUES (1, struct(10, 'a'))")
    session.sql("INSERT INTO t BY NAME SELECT 2 AS id, "
                "named_struct('f1', cast(20 as bigint), 'f3', 'new', 'f2', 'b') AS info")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, (10, "a", None)), (2, (20, "b", "new"))]
    assert dict(session.sql("SELECT * FROM t").dtypes)["info"] == "struct<f1:bigint,f2:string,f3:string>"


def test_case_insensitive_column_matching_with_new_column(session):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    session.sql(MERGE)
    session.sql("INSERT INTO t BY NAME SELECT 3 AS ID, 'c' AS NAME, 100 AS extra")
    assert columns(session) == ["id", "name", "extra"]
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, "a", None), (2, "b", None), (3, "c", 100)]


def test_only_case_differs_no_schema_change(session):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    session.sql(MERGE)
    session.sql("INSERT INTO t BY NAME SELECT 2 AS ID, 'b' AS NAME")
    session.sql("INSERT INTO t BY NAME SELECT 3 AS Id, 'c' AS NaMe")
    session.sql("INSERT INTO t BY NAME SELECT 4 AS iD, 'd' AS nAmE")
    assert columns(session) == ["id", "name"] and schema_ids(session) == [0]
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]


def test_nested_struct_case_mismatch_with_new_sub_field(session):
    session.sql(MERGE)
    session.sql("CREATE TABLE t (id INT, info STRUCT<key1: STRING, key2: STRING>)")
    session.sql("INSERT INTO t VALUES (1, named_struct('key1', 'a', 'key2', 'b'))")
    session.sql("INSERT INTO t BY NAME SELECT 2 AS id, "
                "named_struct('KEY1', 'A', 'KEY2', 'B', 'key3', 'C') AS info")
    info = dict(session.sql("SELECT * FROM t").dtypes)["info"]
    assert info == "struct<key1:string,key2:string,key3:string>"
    assert rows(session, "SELECT id, info.key1, info.key2, info.key3 FROM t ORDER BY id") == [
        (1, "a", "b", None), (2, "A", "B", "C")]


def test_int_to_bigint_keeps_the_target_type(session):
    session.sql("CREATE TABLE t (id INT, value INT)")
    session.sql("INSERT INTO t VALUES (1, 100)")
    session.sql(MERGE)
    session.sql("INSERT INTO t BY NAME SELECT 2 AS id, cast(200 as bigint) AS value")
    assert dict(session.sql("SELECT * FROM t").dtypes)["value"] == "int"
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, 100), (2, 200)]


def test_case_sensitive_mode_refuses_names_that_differ_only_by_case(session):
    # Paimon adds `ID` and `NAME` beside `id` and `name`; dyntable's column names are unique ignoring
    # case, so it refuses the write (typed, nothing written) instead.
    session.sql("CREATE TABLE t (id INT, name STRING)")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    session.sql(MERGE)
    session.sql("SET spark.sql.caseSensitive = true")
    try:
        with pytest.raises(SqlError, match="differs from the table's 'id' only by case"):
            session.sql("INSERT INTO t BY NAME SELECT 2 AS ID, 'b' AS NAME, 100 AS extra")
    finally:
        session.sql("SET spark.sql.caseSensitive = false")
    assert columns(session) == ["id", "name"] and rows(session, "SELECT count(*) FROM t") == [(1,)]


# -- turning it on, and what a write leaves -----------------------------------------------------------
@pytest.mark.parametrize("how", ["table option", "hint", "table key"])
def test_every_way_to_turn_it_on(session, how):
    options = " TBLPROPERTIES ('write.merge-schema' = 'true')" if how == "table option" else ""
    session.sql(f"CREATE TABLE t (a INT, b STRING){options}")
    hint = "/*+ OPTIONS('write.merge-schema' = 'true') */ " if how == "hint" else ""
    if how == "table key":
        session.sql("SET spark.paimon.*.default.t.write.merge-schema = true")
    try:
        session.sql(f"INSERT INTO t {hint}BY NAME SELECT 1 AS a, 'x' AS b, 2.5D AS c")
    finally:
        session.sql("RESET spark.paimon.*.default.t.write.merge-schema")
    assert rows(session, "SELECT * FROM t") == [(1, "x", 2.5)]
    stored = session.catalog.get_table("default.t").options
    assert ("write.merge-schema" in stored) == (how == "table option")  # a write's option is not stored


def test_an_evolving_write_costs_one_schema_file_and_a_plain_one_none(t):
    t.sql(MERGE)
    table_path = t.catalog.get_table("default.t").path
    before = sorted(os.listdir(f"{table_path}/schema"))
    t.sql("INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, 3 AS c")
    after = sorted(os.listdir(f"{table_path}/schema"))
    assert after == [*before, "schema-1"]
    t.sql("INSERT INTO t BY NAME SELECT 4 AS a, 4 AS c")
    assert sorted(os.listdir(f"{table_path}/schema")) == after
    latest = t.catalog.get_table("default.t").latest_snapshot()
    assert latest.schema_id == 1


def test_a_failed_write_leaves_no_schema(t):
    t.sql(MERGE)
    snapshots = [s.id for s in t.catalog.get_table("default.t").snapshots()]
    with pytest.raises(SqlError):
        t.sql("INSERT INTO t BY NAME SELECT 3 AS a, CAST(raise_error('boom') AS STRING) AS c")
    assert schema_ids(t) == [0]
    assert [s.id for s in t.catalog.get_table("default.t").snapshots()] == snapshots
    t.sql("INSERT INTO t BY NAME SELECT 3 AS a, 'c' AS c")  # the next write evolves as if nothing happened
    assert schema_ids(t) == [0, 1] and columns(t) == ["a", "b", "c"]


def test_a_positional_insert_does_not_evolve(t):
    t.sql(MERGE)
    with pytest.raises(SqlError, match="the query produces 3 column"):
        t.sql("INSERT INTO t SELECT 3, '3', 3")
    assert schema_ids(t) == [0]


def test_without_merge_schema_a_struct_missing_a_field_is_refused(session):
    # Paimon's byName rule: a nested field the data lacks is an error unless merge-schema is on.
    session.sql("CREATE TABLE t (id INT, info STRUCT<f1: STRING, f2: STRING>)")
    with pytest.raises(SqlError, match="missing from the data"):
        session.sql("INSERT INTO t BY NAME SELECT 1 AS id, named_struct('f2', 'y') AS info")
    assert rows(session, "SELECT count(*) FROM t") == [(0,)]


def test_a_primary_key_table_evolves_and_upserts(session):
    session.sql("CREATE TABLE k (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
    session.sql("INSERT INTO k VALUES (1, 'a'), (2, 'b')")
    session.sql(MERGE)
    session.sql("INSERT INTO k BY NAME SELECT 2 AS id, 'B' AS v, 20 AS n")
    assert rows(session, "SELECT * FROM k ORDER BY id") == [(1, "a", None), (2, "B", 20)]


# -- MERGE INTO ... UPDATE SET * / INSERT * ---------------------------------------------------------
PK = " TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')"
BOTH = "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"


def source(session, sql: str, name: str = "s") -> None:
    session.spark.sql(sql).createOrReplaceTempView(name)


def test_merge_source_uppercase_creates_no_duplicate_columns(session):
    session.sql(f"CREATE TABLE t (id INT, name STRING, value INT){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20)")
    source(session, "SELECT 1 AS ID, 'A' AS NAME, 100 AS VALUE "
                    "UNION ALL SELECT 3 AS ID, 'c' AS NAME, 30 AS VALUE")
    session.sql(MERGE)
    session.sql(f"MERGE INTO t USING s ON t.id = s.ID {BOTH}")
    assert columns(session) == ["id", "name", "value"] and schema_ids(session) == [0]
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, "A", 100), (2, "b", 20), (3, "c", 30)]


def test_merge_append_only_target_evolves(session):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    source(session, "SELECT 1 AS id, 'a2' AS name, 100 AS value "
                    "UNION ALL SELECT 3 AS id, 'c' AS name, 30 AS value")
    session.sql(MERGE)
    session.sql(f"MERGE INTO t USING s ON t.id = s.id {BOTH}")
    assert columns(session) == ["id", "name", "value"]
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, "a2", 100), (2, "b", None), (3, "c", 30)]


def test_merge_extra_column_with_case_mismatched_existing_columns(session):
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    source(session, "SELECT 1 AS ID, 'A' AS NAME, 100 AS extra_col "
                    "UNION ALL SELECT 3 AS ID, 'c' AS NAME, 30 AS extra_col")
    session.sql(MERGE)
    session.sql(f"MERGE INTO t USING s ON t.id = s.ID {BOTH}")
    assert columns(session) == ["id", "name", "extra_col"]
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, "A", 100), (2, "b", None), (3, "c", 30)]


def test_merge_only_case_differs_changes_no_schema(session):
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    source(session, "SELECT 1 AS ID, 'A' AS NAME")
    session.sql(MERGE)
    session.sql("MERGE INTO t USING s ON t.id = s.ID WHEN MATCHED THEN UPDATE SET *")
    assert columns(session) == ["id", "name"] and schema_ids(session) == [0]
    assert rows(session, "SELECT * FROM t") == [(1, "A")]


def test_merge_nested_struct_fields_case_mismatch(session):
    session.sql(f"CREATE TABLE t (id INT, info STRUCT<key1: STRING, key2: STRING>){PK}")
    session.sql("INSERT INTO t VALUES (1, named_struct('key1', 'a', 'key2', 'b'))")
    source(session, "SELECT 1 AS id, named_struct('KEY1', 'A', 'KEY2', 'B', 'key3', 'C') AS info")
    session.sql(MERGE)
    session.sql(f"MERGE INTO t USING s ON t.id = s.id {BOTH}")
    info = dict(session.sql("SELECT * FROM t").dtypes)["info"]
    assert info == "struct<key1:string,key2:string,key3:string>"
    assert rows(session, "SELECT id, info.key1, info.key2, info.key3 FROM t") == [(1, "A", "B", "C")]


def test_merge_repeated_writes_with_alternating_case(session):
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    session.sql(MERGE)
    source(session, "SELECT 2 AS ID, 'b' AS NAME", "s1")
    session.sql("MERGE INTO t USING s1 ON t.id = s1.ID WHEN NOT MATCHED THEN INSERT *")
    source(session, "SELECT 3 AS Id, 'c' AS NaMe", "s2")
    session.sql("MERGE INTO t USING s2 ON t.id = s2.Id WHEN NOT MATCHED THEN INSERT *")
    assert columns(session) == ["id", "name"]
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]


@pytest.mark.parametrize("merge_schema", [False, True])
def test_merge_array_of_bigint_into_array_of_int_keeps_the_target_type(session, merge_schema):
    session.sql(f"CREATE TABLE t (id INT, ports ARRAY<INT>){PK}")
    session.sql("INSERT INTO t VALUES (1, array(80, 443))")
    source(session, "SELECT 1 AS id, array(cast(8080 as bigint), cast(9090 as bigint)) AS ports")
    if merge_schema:
        session.sql(MERGE)
    session.sql(f"MERGE INTO t USING s ON t.id = s.id {BOTH}")
    assert dict(session.sql("SELECT * FROM t").dtypes)["ports"] == "array<int>"
    assert rows(session, "SELECT * FROM t") == [(1, [8080, 9090])]


def test_merge_type_widening_int_to_bigint(session):
    session.sql(f"CREATE TABLE t (id INT, v INT){PK}")
    session.sql("INSERT INTO t VALUES (1, 10)")
    source(session, "SELECT 1 AS id, cast(200 AS bigint) AS v")
    session.sql(MERGE)
    session.sql("SET spark.paimon.write.merge-schema.type-widening = true")
    session.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    assert dict(session.sql("SELECT * FROM t").dtypes)["v"] == "bigint"
    assert rows(session, "SELECT * FROM t") == [(1, 200)]


def test_merge_case_sensitive_mode_refuses_names_that_differ_only_by_case(session):
    # Paimon adds ID and NAME as new columns; dyntable's column names are unique ignoring case.
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    source(session, "SELECT 1 AS ID, 'A' AS NAME, 100 AS extra")
    session.sql(MERGE)
    session.sql("SET spark.sql.caseSensitive = true")
    try:
        with pytest.raises(SqlError, match="only by case"):
            session.sql(f"MERGE INTO t USING s ON t.id = s.ID {BOTH}")
    finally:
        session.sql("SET spark.sql.caseSensitive = false")
    assert columns(session) == ["id", "name"] and rows(session, "SELECT * FROM t") == [(1, "a")]


@pytest.mark.parametrize("merge_schema", [False, True])
def test_merge_source_extra_columns(session, merge_schema):
    # MergeIntoAlignmentTest: dropped under `*` without merge-schema, evolved into the target with it.
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    source(session, "SELECT 1 AS id, 'A' AS name, 'upd' AS op "
                    "UNION ALL SELECT 2 AS id, 'b' AS name, 'ins' AS op")
    if merge_schema:
        session.sql(MERGE)
    session.sql(f"MERGE INTO t USING s ON t.id = s.id {BOTH}")
    if merge_schema:
        assert rows(session, "SELECT id, name, op FROM t ORDER BY id") == [(1, "A", "upd"), (2, "b", "ins")]
    else:
        assert columns(session) == ["id", "name"]
        assert rows(session, "SELECT * FROM t ORDER BY id") == [(1, "A"), (2, "b")]


def test_merge_target_column_missing_in_source(session):
    session.sql(MERGE)
    session.sql("CREATE TABLE news (newsId STRING, newsName STRING, tenantIds ARRAY<STRING>) "
                "TBLPROPERTIES ('primary-key' = 'newsId', 'bucket' = '1')")
    session.sql("INSERT INTO news VALUES ('n0', 'old', array('t1'))")
    source(session, "SELECT 'n0' AS newsId, 'updated' AS newsName "
                    "UNION ALL SELECT 'n1' AS newsId, 'foo' AS newsName", "checkStatus")
    session.sql("MERGE INTO news a USING checkStatus b ON a.newsId = b.newsId "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert rows(session, "SELECT * FROM news ORDER BY newsId") == [
        ("n0", "updated", ["t1"]), ("n1", "foo", None)]


@pytest.mark.parametrize("clause", ["WHEN MATCHED THEN UPDATE SET *", "WHEN NOT MATCHED THEN INSERT *"])
def test_merge_without_merge_schema_a_target_column_missing_in_source_is_an_error(session, clause):
    session.sql(f"CREATE TABLE t (id INT, name STRING, score INT){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a', 10)")
    source(session, "SELECT 1 AS id, 'A' AS name UNION ALL SELECT 2 AS id, 'b' AS name")
    with pytest.raises(SqlError, match="score") as info:
        session.sql(f"MERGE INTO t USING s ON t.id = s.id {clause}")
    assert info.value.sqlstate == "42703"
    assert rows(session, "SELECT * FROM t") == [(1, "a", 10)]


@pytest.mark.parametrize("merge_schema", [False, True])
def test_merge_update_star_nested_struct_missing_a_leaf(session, merge_schema):
    session.sql(f"CREATE TABLE t (id INT, info STRUCT<a: STRING, b: STRING>){PK}")
    session.sql("INSERT INTO t VALUES (1, named_struct('a', 'oldA', 'b', 'oldB'))")
    source(session, "SELECT 1 AS id, named_struct('a', 'newA') AS info")
    if not merge_schema:
        with pytest.raises(SqlError, match="info.b"):
            session.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
        return
    session.sql(MERGE)
    session.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    assert rows(session, "SELECT id, info.a, info.b FROM t") == [(1, "newA", "oldB")]  # the leaf is kept


@pytest.mark.parametrize("merge_schema", [False, True])
def test_merge_update_star_nested_struct_extra_field(session, merge_schema):
    session.sql(f"CREATE TABLE t (id INT, info STRUCT<a: STRING>){PK}")
    session.sql("INSERT INTO t VALUES (1, named_struct('a', 'oldA'))")
    source(session, "SELECT 1 AS id, named_struct('a', 'newA', 'b', 'newB') AS info")
    if not merge_schema:
        with pytest.raises(SqlError, match="info.b"):
            session.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
        return
    session.sql(MERGE)
    session.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    assert rows(session, "SELECT id, info.a, info.b FROM t") == [(1, "newA", "newB")]


@pytest.mark.parametrize("merge_schema", [False, True])
def test_merge_update_star_null_source_struct_is_a_null_struct(session, merge_schema):
    session.sql(f"CREATE TABLE t (id INT, info STRUCT<a: STRING, b: STRING>){PK}")
    session.sql("INSERT INTO t VALUES (1, named_struct('a', 'oldA', 'b', 'oldB'))")
    source(session, "SELECT 1 AS id, CAST(NULL AS STRUCT<a: STRING, b: STRING>) AS info")
    if merge_schema:
        session.sql(MERGE)
    session.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    assert rows(session, "SELECT id, info FROM t") == [(1, None)]


@pytest.mark.parametrize("merge_schema", [False, True])
def test_merge_insert_star_nested_struct_missing_a_leaf(session, merge_schema):
    session.sql(f"CREATE TABLE t (id INT, info STRUCT<a: STRING, b: STRING>){PK}")
    source(session, "SELECT 2 AS id, named_struct('a', 'newA') AS info")
    if not merge_schema:
        with pytest.raises(SqlError, match="info.b"):
            session.sql("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
        return
    session.sql(MERGE)
    session.sql("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert rows(session, "SELECT id, info.a, info.b FROM t") == [(2, "newA", None)]


def test_merge_struct_fields_reordered_go_by_name_without_merge_schema(session):
    session.sql(f"CREATE TABLE t (id INT, name STRING, address STRUCT<city: STRING, zip: STRING>){PK}")
    session.sql("INSERT INTO t VALUES (1, 'Alice', struct('Shanghai', '200000')), "
                "(2, 'Bob', struct('Beijing', '100000'))")
    session.sql(f"CREATE TABLE src (id INT, name STRING, address STRUCT<zip: STRING, city: STRING>){PK}")
    session.sql("INSERT INTO src VALUES (1, 'Alice_v2', struct('210000', 'Nanjing')), "
                "(3, 'Carol', struct('310000', 'Hangzhou'))")
    session.sql(f"MERGE INTO t USING src ON t.id = src.id {BOTH}")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [
        (1, "Alice_v2", ("Nanjing", "210000")), (2, "Bob", ("Beijing", "100000")),
        (3, "Carol", ("Hangzhou", "310000"))]


def test_merge_nested_and_top_level_new_fields_from_a_managed_source(session):
    session.sql(MERGE)
    session.sql(f"CREATE TABLE t (id INT, info STRUCT<f1: STRING>){PK}")
    session.sql("INSERT INTO t VALUES (1, struct('v1')), (2, struct('v2'))")
    session.sql(f"CREATE TABLE src (id INT, info STRUCT<f1: STRING, f2: STRING>, extra STRING){PK}")
    session.sql("INSERT INTO src VALUES (1, struct('u1', 'new1'), 'e1'), (3, struct('u3', 'new3'), 'e3')")
    session.sql(f"MERGE INTO t USING src ON t.id = src.id {BOTH}")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [
        (1, ("u1", "new1"), "e1"), (2, ("v2", None), None), (3, ("u3", "new3"), "e3")]


def test_merge_with_conditions_deletes_and_new_columns(session):
    session.sql(MERGE)
    session.sql(f"CREATE TABLE t (id INT, name STRING, score INT){PK}")
    session.sql("INSERT INTO t VALUES (1, 'Alice', 80), (2, 'Bob', 70), (3, 'Carol', 60), (4, 'Dave', 50)")
    session.sql(f"CREATE TABLE src (id INT, name STRING, score INT, grade STRING, "
                f"info STRUCT<city: STRING, zip: STRING>){PK}")
    session.sql("INSERT INTO src VALUES (1, 'Alice_v2', 95, 'A', struct('Beijing', '100000')), "
                "(2, 'Bob_v2', 55, 'C', struct('Shanghai', '200000')), "
                "(5, 'Eve', 88, 'B', struct('Hangzhou', '310000')), "
                "(6, 'Frank', 42, 'D', struct('Nanjing', '210000'))")
    session.sql("MERGE INTO t USING src ON t.id = src.id "
                "WHEN MATCHED AND src.score >= 60 THEN UPDATE SET * "
                "WHEN MATCHED AND src.score < 60 THEN DELETE "
                "WHEN NOT MATCHED AND src.score >= 50 THEN INSERT *")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [
        (1, "Alice_v2", 95, "A", ("Beijing", "100000")), (3, "Carol", 60, None, None),
        (4, "Dave", 50, None, None), (5, "Eve", 88, "B", ("Hangzhou", "310000"))]


@pytest.mark.parametrize("layout", ["deletion vectors", "primary key with deletion vectors"])
def test_merge_schema_on_a_deletion_vector_table(session, layout):
    keys = "'primary-key' = 'a', 'bucket' = '1', " if layout.startswith("primary") else ""
    session.sql(MERGE)
    session.sql(f"CREATE TABLE target (a INT, b STRING) "
                f"TBLPROPERTIES ({keys}'deletion-vectors.enabled' = 'true')")
    session.sql("INSERT INTO target VALUES (1, 'v1'), (2, 'v2')")
    session.sql("CREATE TABLE source (a INT, b STRING, c INT)")
    session.sql("INSERT INTO source VALUES (1, 'u1', 10), (3, 'u3', 30)")
    session.sql("MERGE INTO target USING source ON target.a = source.a "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert rows(session, "SELECT * FROM target ORDER BY a") == [(1, "u1", 10), (2, "v2", None), (3, "u3", 30)]
    assert schema_ids(session, "default.target") == [0, 1]


def test_merge_that_fails_its_checks_leaves_no_schema(session):
    session.sql(MERGE)
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    source(session, "SELECT 1 AS id, 'x' AS name, 1 AS n UNION ALL SELECT 1 AS id, 'y' AS name, 2 AS n")
    with pytest.raises(SqlError, match="matched by 2 source rows"):
        session.sql(f"MERGE INTO t USING s ON t.id = s.id {BOTH}")
    assert schema_ids(session) == [0] and columns(session) == ["id", "name"]


# -- explicit assignments to columns the target lacks (MergeIntoAlignmentTest, Paimon 2.0) --------------
def test_merge_explicit_insert_of_a_new_column_evolves_the_target(session):
    session.sql(MERGE)
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    source(session, "SELECT 2 AS id, 'b' AS name, 99 AS score")
    session.sql("MERGE INTO t USING s ON t.id = s.id "
                "WHEN NOT MATCHED THEN INSERT (id, name, score) VALUES (s.id, s.name, s.score)")
    assert rows(session, "SELECT id, name, score FROM t ORDER BY id") == [(2, "b", 99)]
    assert schema_ids(session) == [0, 1]


@pytest.mark.parametrize("key", ["score", "t.score"])
def test_merge_explicit_update_set_of_a_new_column_evolves_the_target(session, key):
    session.sql(MERGE)
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    session.sql("INSERT INTO t VALUES (1, 'a'), (3, 'c')")
    source(session, "SELECT 1 AS id, 'A' AS name, 99 AS score")
    session.sql("MERGE INTO t USING s ON t.id = s.id "
                f"WHEN MATCHED THEN UPDATE SET t.id = s.id, t.name = s.name, {key} = s.score")
    assert rows(session, "SELECT id, name, score FROM t ORDER BY id") == [(1, "A", 99), (3, "c", None)]
    assert session.sql("SELECT score FROM t").schema.fields[0].dataType.simpleString() == "int"


def test_merge_explicit_insert_evolves_only_the_mentioned_columns(session):
    session.sql(MERGE)
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    source(session, "SELECT 2 AS id, 'b' AS name, 10 AS new_col1, 20 AS new_col2")
    session.sql("MERGE INTO t USING s ON t.id = s.id "
                "WHEN NOT MATCHED THEN INSERT (id, name, new_col1) VALUES (s.id, s.name, s.new_col1)")
    assert columns(session) == ["id", "name", "new_col1"]
    assert rows(session, "SELECT id, name, new_col1 FROM t") == [(2, "b", 10)]


def test_merge_explicit_insert_of_a_new_column_without_merge_schema_fails(session):
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    source(session, "SELECT 2 AS id, 'b' AS name, 99 AS score")
    with pytest.raises(SqlError, match="score"):
        session.sql("MERGE INTO t USING s ON t.id = s.id "
                    "WHEN NOT MATCHED THEN INSERT (id, name, score) VALUES (s.id, s.name, s.score)")
    assert schema_ids(session) == [0] and columns(session) == ["id", "name"]


def test_merge_explicit_new_column_the_source_lacks_is_an_error(session):
    # Paimon's new column takes a source column's type; a name the source lacks resolves nowhere.
    session.sql(MERGE)
    session.sql(f"CREATE TABLE t (id INT, name STRING){PK}")
    source(session, "SELECT 2 AS id, 'b' AS name")
    with pytest.raises(SqlError, match="score"):
        session.sql("MERGE INTO t USING s ON t.id = s.id "
                    "WHEN NOT MATCHED THEN INSERT (id, name, score) VALUES (s.id, s.name, 1)")
    assert schema_ids(session) == [0]
