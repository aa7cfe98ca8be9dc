"""Conformance with Apache Paimon's Spark SQL for VARIANT columns (issue 36).

Each test replays the statements of one case of Paimon's ``VariantTestBase`` (release 2.0,
Spark 4) and expects what Paimon's test expects; the case is named in a comment. Paimon's
``checkAnswer(sql(a), sql(b))`` compares variants by their bytes, so rows here are compared with
each variant as its ``(value, metadata)`` bytes. Left out: the "Paimon Variant pushdown" cases
(they inspect Paimon's scan description and read schema, which dyntable does not have).
"""

from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.sql.types import StructType, VariantType, VariantVal

from tests.integration.sql_helpers import fails, run


def shred(column: str) -> str:
    """Paimon's shredding option of these tests: ``column`` shredded into age INT, city STRING."""
    return ("'parquet.variant.shreddingSchema' = '{\"type\":\"ROW\",\"fields\":[{\"name\":\"" + column
            + '\",\"type\":{\"type\":\"ROW\",\"fields\":[{\"name\":\"age\",\"type\":\"INT\"},'
            '{\"name\":\"city\",\"type\":\"STRING\"}]}}]}\'')


def plain(value):
    """Spark values as plain Python: Rows become tuples, variants their bytes, recursively."""
    if isinstance(value, VariantVal):
        return ("variant", bytes(value.value), bytes(value.metadata))
    if isinstance(value, Row):
        return tuple(plain(v) for v in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def rows(session, sql):
    return [plain(r) for r in list(session.execute(sql))[-1].dataframe.collect()]


def same(session, got_sql, expected_sql):
    """Paimon's ``checkAnswer(sql(got), sql(expected))``: the same rows, in any order."""
    got, expected = rows(session, got_sql), rows(session, expected_sql)
    assert sorted(got, key=repr) == sorted(expected, key=repr)


def test_read_and_write_variant(session):
    # VariantTestBase "Paimon Variant: read and write variant"
    run(session, "CREATE TABLE T (id INT, v VARIANT)")
    run(session, """INSERT INTO T VALUES
        (1, parse_json('{"age":26,"city":"Beijing"}')),
        (2, parse_json('{"age":27,"city":"Hangzhou"}'))""")
    assert run(session, "SELECT id, variant_get(v, '$.age', 'int'), variant_get(v, '$.city', 'string') "
                        "FROM T ORDER BY id") == [(1, 26, "Beijing"), (2, 27, "Hangzhou")]
    assert run(session, "SELECT variant_get(v, '$.city', 'string') FROM T "
                        "WHERE variant_get(v, '$.age', 'int') == 26") == [("Beijing",)]
    same(session, "SELECT * FROM T WHERE variant_get(v, '$.age', 'int') == 27",
         """SELECT 2, parse_json('{"age":27,"city":"Hangzhou"}')""")
    assert run(session, "SELECT id, to_json(v) FROM T ORDER BY id") == [
        (1, '{"age":26,"city":"Beijing"}'), (2, '{"age":27,"city":"Hangzhou"}')]


def test_read_and_write_array_variant(session, spark):
    # VariantTestBase "Paimon Variant: read and write array variant"
    run(session, "CREATE TABLE T (id INT, v ARRAY<VARIANT>)")
    run(session, """INSERT INTO T VALUES
        (1, array(parse_json('{"age":26,"city":"Beijing"}'), parse_json('{"age":27,"city":"Hangzhou"}'))),
        (2, array(parse_json('{"age":27,"city":"Shanghai"}')))""")
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    run(session, "SET spark.sql.ansi.enabled = false")  # Paimon's withSparkSQLConf
    try:
        assert run(session, "SELECT id, variant_get(v[1], '$.age', 'int'), "
                            "variant_get(v[0], '$.city', 'string') FROM T ORDER BY id") == [
            (1, 27, "Beijing"), (2, None, "Shanghai")]
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)


COMPLEX_JSON = """{
  "object" : {"name" : "Apache Paimon", "age" : 2, "address" : {"street" : "Main St", "city" : "Hangzhou"}},
  "array" : [ 1, 2, 3, 4, 5 ], "string" : "Hello, World!", "long" : 12345678901234,
  "double" : 1.0123456789012346, "decimal" : 100.99, "boolean1" : true, "boolean2" : false,
  "nullField" : null
}"""


def test_complex_json(session):
    # VariantTestBase "Paimon Variant: complex json"
    from decimal import Decimal

    run(session, "CREATE TABLE T (v VARIANT)")
    run(session, f"INSERT INTO T VALUES parse_json('{COMPLEX_JSON}')")
    assert run(session, """SELECT
        variant_get(v, '$.object', 'string'), variant_get(v, '$.object.name', 'string'),
        variant_get(v, '$.object.address.street', 'string'),
        variant_get(v, '$["object"]["address"].city', 'string'), variant_get(v, '$.array', 'string'),
        variant_get(v, '$.array[0]', 'int'), variant_get(v, '$.array[3]', 'int'),
        variant_get(v, '$.string', 'string'), variant_get(v, '$.double', 'double'),
        variant_get(v, '$.decimal', 'decimal(5,2)'), variant_get(v, '$.boolean1', 'boolean'),
        variant_get(v, '$.boolean2', 'boolean'), variant_get(v, '$.nullField', 'string')
        FROM T""") == [(
        '{"address":{"city":"Hangzhou","street":"Main St"},"age":2,"name":"Apache Paimon"}', "Apache Paimon",
        "Main St", "Hangzhou", "[1,2,3,4,5]", 1, 4, "Hello, World!", 1.0123456789012346, Decimal("100.99"),
        True, False, None)]


SHREDDED_VALUES = """SELECT id, CASE
    WHEN id = 0 THEN parse_json('{"age":27,"city":"Beijing"}')
    WHEN id = 1 THEN parse_json('{"age":27}')
    WHEN id = 2 THEN parse_json('{"city":"Beijing", "other":"xxx"}')
    WHEN id = 3 THEN parse_json('{"other":"yyy"}')
    WHEN id = 4 THEN parse_json('{"age":"27"}')
    WHEN id = 5 THEN parse_json('"zzz"')
    WHEN id = 6 THEN parse_json('{}')
    END v FROM range(7)"""


def test_read_and_write_shredded_variant(session):
    # VariantTestBase "Paimon Variant: read and write shredded variant". dyntable writes the
    # variant unshredded (Paimon's plain layout, which Paimon reads); the answers are Paimon's.
    run(session, f"CREATE TABLE T (id INT, v VARIANT) TBLPROPERTIES ({shred('v')})")
    run(session, f"INSERT INTO T {SHREDDED_VALUES}")
    same(session, "SELECT * FROM T ORDER BY id", SHREDDED_VALUES)
    assert run(session, "SELECT variant_get(v, '$.age', 'int') FROM T ORDER BY id") == [
        (27,), (27,), (None,), (None,), (27,), (None,), (None,)]
    assert run(session, "SELECT variant_get(v, '$.city', 'string') FROM T "
                        "WHERE variant_get(v, '$.age', 'int') = 27 ORDER BY id") == [
        ("Beijing",), (None,), (None,)]


def test_read_and_write_shredded_and_unshredded_variant(session):
    # VariantTestBase "Paimon Variant: read and write shredded and unshredded variant"
    run(session, f"CREATE TABLE T (id INT, v1 VARIANT, v2 VARIANT, v3 VARIANT) TBLPROPERTIES ({shred('v1')})")
    one = """parse_json('{"age":26,"city":"Beijing"}')"""
    run(session, f"INSERT INTO T VALUES (1, {one}, {one}, {one})")
    same(session, "SELECT * FROM T", f"SELECT 1, {one}, {one}, {one}")
    assert run(session, "SELECT variant_get(v1, '$.age', 'int'), variant_get(v2, '$.age', 'int'), "
                        "variant_get(v3, '$.age', 'int') FROM T") == [(26, 26, 26)]


ALL_TYPES_SHRED = {"type": "ROW", "fields": [{"name": "v", "type": {"type": "ROW", "fields": [
    {"name": "object_col", "type": {"type": "ROW", "fields": [{"name": "name", "type": "STRING"},
                                                              {"name": "age", "type": "INT"}]}},
    {"name": "array_col", "type": {"type": "ARRAY", "element": "INT"}},
    {"name": "string_col", "type": "STRING"}, {"name": "byte_col", "type": "TINYINT"},
    {"name": "short_col", "type": "SMALLINT"}, {"name": "int_col", "type": "INT"},
    {"name": "long_col", "type": "BIGINT"}, {"name": "float_col", "type": "FLOAT"},
    {"name": "double_col", "type": "DOUBLE"}, {"name": "decimal_col", "type": "DECIMAL(5, 2)"},
    {"name": "boolean_col", "type": "BOOLEAN"}]}}]}
ALL_TYPES_JSON = [
    '{"object_col": {"name": "Apache Paimon", "age": 3}, "array_col": [1, 2, 3, 4, 5], '
    '"string_col": "hello", '
    '"byte_col": 1, "short_col": 3000, "int_col": 40000, "long_col": 12345678901234, "float_col": 5.2, '
    '"double_col": 1.012345678901, "decimal_col": 100.99, "boolean_col": true}',
    '{"object_col": {"name": "Tom", "age": 35}, "array_col": [6, 7, 8], "string_col": "hi", "byte_col": 2, '
    '"short_col": 4000, "int_col": 50000, "long_col": 62345678901234, "float_col": 7.2, '
    '"double_col": 2.012345678901, "decimal_col": 111.99, "boolean_col": false}',
]


@pytest.mark.parametrize("pk", [True, False])
def test_read_and_write_shredded_variant_with_all_types(session, pk):
    # VariantTestBase "Paimon Variant: read and write shredded variant with all types"
    import json
    from decimal import Decimal

    pk_props = "'primary-key' = 'id', " if pk else ""
    run(session, f"CREATE TABLE t (id INT, v VARIANT) TBLPROPERTIES ({pk_props}"
                 f"'parquet.variant.shreddingSchema' = '{json.dumps(ALL_TYPES_SHRED)}')")
    run(session, f"""INSERT INTO t SELECT /*+ REPARTITION(1) */ CAST(id AS INT), CASE
        WHEN id = 0 THEN parse_json('{ALL_TYPES_JSON[0]}') WHEN id = 1 THEN parse_json('{ALL_TYPES_JSON[1]}')
        END v FROM range(2)""")
    assert run(session, "SELECT id, CAST(v AS STRING) FROM t ORDER BY id") == [
        (0, '{"array_col":[1,2,3,4,5],"boolean_col":true,"byte_col":1,"decimal_col":100.99,'
            '"double_col":1.012345678901,"float_col":5.2,"int_col":40000,"long_col":12345678901234,'
            '"object_col":{"age":3,"name":"Apache Paimon"},"short_col":3000,"string_col":"hello"}'),
        (1, '{"array_col":[6,7,8],"boolean_col":false,"byte_col":2,"decimal_col":111.99,'
            '"double_col":2.012345678901,"float_col":7.2,"int_col":50000,"long_col":62345678901234,'
            '"object_col":{"age":35,"name":"Tom"},"short_col":4000,"string_col":"hi"}')]
    got = rows(session, """SELECT variant_get(v, '$.object_col', 'struct<name string, age int>'),
        variant_get(v, '$.object_col.name', 'string'), variant_get(v, '$.array_col', 'array<int>'),
        variant_get(v, '$.array_col[2]', 'int'), variant_get(v, '$.array_col[3]', 'int'),
        variant_get(v, '$.string_col', 'string'), variant_get(v, '$.byte_col', 'byte'),
        variant_get(v, '$.short_col', 'short'), variant_get(v, '$.int_col', 'int'),
        variant_get(v, '$.long_col', 'long'), variant_get(v, '$.float_col', 'float'),
        variant_get(v, '$.double_col', 'double'), variant_get(v, '$.boolean_col', 'boolean'),
        variant_get(v, '$.decimal_col', 'decimal(5, 2)') FROM t ORDER BY id""")
    floats = [r[10] for r in got]  # a Spark FLOAT collected as a Python float: compare as float32
    assert [round(f, 5) for f in floats] == [5.2, 7.2]
    assert [r[:10] + r[11:] for r in got] == [
        (("Apache Paimon", 3), "Apache Paimon", [1, 2, 3, 4, 5], 3, 4, "hello", 1, 3000, 40000,
         12345678901234,
         1.012345678901, True, Decimal("100.99")),
        (("Tom", 35), "Tom", [6, 7, 8], 8, None, "hi", 2, 4000, 50000, 62345678901234, 2.012345678901, False,
         Decimal("111.99"))]


def test_read_and_write_variant_with_null_value(session):
    # VariantTestBase "Paimon Variant: read and write variant with null value"
    run(session, "CREATE TABLE source_tbl (id INT, js STRING)")
    values = []
    for i in range(1, 101):
        if i <= 98:
            values.append(f"({i}, null)")
        else:
            values.append(f"""({i}, '{{"id":{i},"name":"user{i}","age":{20 + i % 50},
                "tags":[{{"type":"vip","level":{i}}},{{"type":"premium","level":{i}}}],
                "address":{{"city":"city{i}","street":"street{i}"}}}}')""")
    run(session, "INSERT INTO source_tbl VALUES " + ", ".join(values))
    run(session, "CREATE TABLE target_tbl (id INT, v VARIANT)")
    run(session, "INSERT INTO target_tbl SELECT id, parse_json(js) FROM source_tbl")
    got = rows(session, """SELECT variant_get(v, '$.name', 'string'), variant_get(v, '$.tags', 'string'),
        variant_get(v, '$.tags', 'array<string>'),
        variant_get(v, '$.tags', 'array<struct<type string, level int>>'),
        variant_get(v, '$.tags[0]', 'string'), variant_get(v, '$.tags[0]', 'struct<type string, level int>'),
        variant_get(v, '$.tags[1].type', 'string'), variant_get(v, '$.address', 'string')
        FROM target_tbl where v IS NOT NULL""")

    def expected(i):
        vip, premium = f'{{"level":{i},"type":"vip"}}', f'{{"level":{i},"type":"premium"}}'
        return (f"user{i}", f"[{vip},{premium}]", [vip, premium], [("vip", i), ("premium", i)], vip,
                ("vip", i), "premium", f'{{"city":"city{i}","street":"street{i}"}}')

    assert sorted(got, key=repr) == sorted([expected(99), expected(100)], key=repr)
    assert run(session, "SELECT count(*) FROM target_tbl WHERE v IS NULL") == [(98,)]


def _replayed(session, inserts, checks):
    """Insert each (id, json) row, compare SELECT * with the parse_json union Paimon compares with,
    then the variant_get query and its rows."""
    run(session, "CREATE TABLE T (id INT, v VARIANT)")
    run(session, "INSERT INTO T VALUES " + ", ".join(f"({i}, {e})" for i, e in inserts))
    same(session, "SELECT * FROM T ORDER BY id", " UNION ALL ".join(f"SELECT {i}, {e}" for i, e in inserts))
    query, expected = checks
    assert run(session, query) == expected


def test_edge_case_empty_objects_and_arrays(session):
    # VariantTestBase "Paimon Variant: edge case json - empty objects and arrays"
    inserts = [(1, "parse_json('{}')"), (2, "parse_json('[]')"),
               (3, """parse_json('{"empty_obj":{},"empty_arr":[]}')"""),
               (4, """parse_json('{"nested":{"deep":{"empty":{}}}}')"""), (5, "parse_json('[[[]]]]')")]
    _replayed(session, inserts, (
        "SELECT id, variant_get(v, '$.empty_obj', 'string'), variant_get(v, '$.empty_arr', 'string'), "
        "variant_get(v, '$.nested.deep.empty', 'string') FROM T ORDER BY id",
        [(1, None, None, None), (2, None, None, None), (3, "{}", "[]", None), (4, None, None, "{}"),
         (5, None, None, None)]))


def test_edge_case_special_characters_and_unicode(session):
    # VariantTestBase "Paimon Variant: edge case json - special characters and unicode"
    inserts = [(1, r"""parse_json('{"key":"value with \\"quotes\\""}')"""),
               (2, r"""parse_json('{"key":"line1\\nline2"}')"""),
               (3, r"""parse_json('{"key":"tab\\there"}')"""),
               (4, r"""parse_json('{"key":"backslash\\\\test"}')"""),
               (5, """parse_json('{"chinese":"中文测试","emoji":"😀🎉"}')"""),
               (6, """parse_json('{"special":"!@#$%^&*()_+-={}[]|:;<>?,./"}')""")]
    _replayed(session, inserts, (
        "SELECT id, variant_get(v, '$.key', 'string'), variant_get(v, '$.chinese', 'string'), "
        "variant_get(v, '$.emoji', 'string'), variant_get(v, '$.special', 'string') FROM T ORDER BY id",
        [(1, 'value with "quotes"', None, None, None), (2, "line1\nline2", None, None, None),
         (3, "tab\there", None, None, None), (4, "backslash\\test", None, None, None),
         (5, None, "中文测试", "😀🎉", None), (6, None, None, None, "!@#$%^&*()_+-={}[]|:;<>?,./")]))


def test_edge_case_extreme_numeric_values(session):
    # VariantTestBase "Paimon Variant: edge case json - extreme numeric values"
    inserts = [(1, """parse_json('{"max_long":9223372036854775807}')"""),
               (2, """parse_json('{"min_long":-9223372036854775808}')"""),
               (3, """parse_json('{"zero":0}')"""),
               (4, """parse_json('{"neg_zero":-0}')"""),
               (5, """parse_json('{"large_decimal":123456789012345678901234567890.123456789}')"""),
               (6, """parse_json('{"scientific":1.23e10}')"""),
               (7, """parse_json('{"neg_scientific":-4.56e-7}')""")]
    n = None
    _replayed(session, inserts, (
        "SELECT id, variant_get(v, '$.max_long', 'long'), variant_get(v, '$.min_long', 'long'), "
        "variant_get(v, '$.zero', 'int'), variant_get(v, '$.neg_zero', 'int'), "
        "variant_get(v, '$.large_decimal', 'double'), variant_get(v, '$.scientific', 'double'), "
        "variant_get(v, '$.neg_scientific', 'double') FROM T ORDER BY id",
        [(1, 9223372036854775807, n, n, n, n, n, n), (2, n, -9223372036854775808, n, n, n, n, n),
         (3, n, n, 0, n, n, n, n), (4, n, n, n, 0, n, n, n), (5, n, n, n, n, 1.2345678901234568e29, n, n),
         (6, n, n, n, n, n, 1.23e10, n), (7, n, n, n, n, n, n, -4.56e-7)]))


def test_edge_case_deeply_nested_structures(session):
    # VariantTestBase "Paimon Variant: edge case json - deeply nested structures"
    deep = "{" + "".join(f'"level{i}":{{' for i in range(1, 11)) + '"value":"deep"' + "}" * 10 + "}"
    inserts = [(1, f"parse_json('{deep}')"),
               (2, """parse_json('{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":100}}}}}}}}}}')"""),
               (3, "parse_json('[[[[[[[[[10]]]]]]]]]')")]
    _replayed(session, inserts, (
        "SELECT id, variant_get(v, '$.level1.level2.level3.level4.level5.level6.level7.level8.level9.level10"
        ".value', 'string'), variant_get(v, '$.a.b.c.d.e.f.g.h.i.j', 'int'), "
        "variant_get(v, '$[0][0][0][0][0][0][0][0][0]', 'int') FROM T ORDER BY id",
        [(1, "deep", None, None), (2, None, 100, None), (3, None, None, 10)]))


def test_edge_case_mixed_types_in_arrays(session):
    # VariantTestBase "Paimon Variant: edge case json - mixed types in arrays"
    inserts = [(1, """parse_json('{"mixed":[1, "two", true, null, {"key":"value"}, [7,8,9]]}')"""),
               (2, """parse_json('{"numbers":[1, 2.5, 1e10, -100]}')"""),
               (3, """parse_json('{"nested":[{"a":1},{"b":2},{"c":{"d":3}}]}')""")]
    n = None
    _replayed(session, inserts, (
        "SELECT id, variant_get(v, '$.mixed[0]', 'int'), variant_get(v, '$.mixed[1]', 'string'), "
        "variant_get(v, '$.mixed[2]', 'boolean'), variant_get(v, '$.mixed[4].key', 'string'), "
        "variant_get(v, '$.mixed[5][1]', 'int'), variant_get(v, '$.numbers[2]', 'double'), "
        "variant_get(v, '$.nested[2].c.d', 'int') FROM T ORDER BY id",
        [(1, 1, "two", True, "value", 8, n, n), (2, n, n, n, n, n, 1e10, n), (3, n, n, n, n, n, n, 3)]))


def test_primitive_types_as_variant(session):
    # VariantTestBase "Paimon Variant: primitive types as variant"
    literals = ["42", "-99", "9223372036854775807", "3.14", "1.23e10", "'hello'", "''", "true", "false",
                "null"]
    inserts = [(i, f"CAST({lit} AS VARIANT)") for i, lit in enumerate(literals, 1)]
    _replayed(session, inserts, (
        "SELECT id, variant_get(v, '$', 'string') FROM T ORDER BY id",
        [(1, "42"), (2, "-99"), (3, "9223372036854775807"), (4, "3.14"), (5, "1.23E10"), (6, "hello"),
         (7, ""), (8, "true"), (9, "false"), (10, None)]))


def test_partial_update_with_variant(session):
    # VariantTestBase "Paimon Variant: partial update with variant"
    run(session, """CREATE TABLE t (id INT, ts INT, dt INT, v VARIANT) TBLPROPERTIES (
        'primary-key' = 'id', 'bucket' = '1', 'changelog-producer' = 'lookup',
        'merge-engine' = 'partial-update', 'fields.dt.sequence-group' = 'ts',
        'fields.ts.aggregate-function' = 'max', 'write-only' = 'true')""")
    run(session, """INSERT INTO t VALUES (1, 1, 1, parse_json('{"c":{"a1":1,"a2":2}}'))""")
    run(session, """INSERT INTO t VALUES (1, 2, 2, parse_json('{"c":{"a1":3,"a2":4}}'))""")
    same(session, "SELECT * FROM t", """SELECT 1, 2, 2, parse_json('{"c":{"a1":3,"a2":4}}')""")
    assert run(session, "SELECT variant_get(v, '$.c', 'string') FROM t") == [('{"a1":3,"a2":4}',)]


def test_deduplicate_with_variant(session):
    # VariantTestBase "Paimon Variant: deduplicate with variant"
    run(session, """CREATE TABLE t_dedup (id INT, name STRING, v VARIANT) TBLPROPERTIES (
        'primary-key' = 'id', 'bucket' = '1', 'merge-engine' = 'deduplicate', 'write-only' = 'true')""")
    run(session, """INSERT INTO t_dedup VALUES (1, 'Alice', parse_json('{"age":30,"city":"NYC"}'))""")
    run(session, """INSERT INTO t_dedup VALUES (1, 'Bob', parse_json('{"age":25,"city":"LA"}'))""")
    same(session, "SELECT * FROM t_dedup", """SELECT 1, 'Bob', parse_json('{"age":25,"city":"LA"}')""")
    assert run(session, "SELECT variant_get(v, '$.age', 'int') FROM t_dedup") == [(25,)]


def test_aggregate_with_variant(session):
    # VariantTestBase "Paimon Variant: aggregate with variant"
    run(session, """CREATE TABLE t_agg (id INT, cnt INT, v VARIANT) TBLPROPERTIES (
        'primary-key' = 'id', 'bucket' = '1', 'merge-engine' = 'aggregation',
        'fields.cnt.aggregate-function' = 'sum', 'write-only' = 'true')""")
    run(session, """INSERT INTO t_agg VALUES (1, 10, parse_json('{"data":{"x":1,"y":2}}'))""")
    run(session, """INSERT INTO t_agg VALUES (1, 20, parse_json('{"data":{"x":3,"y":4}}'))""")
    same(session, "SELECT * FROM t_agg", """SELECT 1, 30, parse_json('{"data":{"x":3,"y":4}}')""")
    assert run(session, "SELECT variant_get(v, '$.data.x', 'int') FROM t_agg") == [(3,)]


def test_first_row_with_variant(session):
    # VariantTestBase "Paimon Variant: first-row with variant"
    run(session, """CREATE TABLE t_first (id INT, seq INT, v VARIANT) TBLPROPERTIES (
        'primary-key' = 'id', 'bucket' = '1', 'merge-engine' = 'first-row')""")
    run(session, """INSERT INTO t_first VALUES (1, 100, parse_json('{"status":"active"}'))""")
    run(session, """INSERT INTO t_first VALUES (1, 200, parse_json('{"status":"inactive"}'))""")
    same(session, "SELECT * FROM t_first", """SELECT 1, 100, parse_json('{"status":"active"}')""")
    assert run(session, "SELECT variant_get(v, '$.status', 'string') FROM t_first") == [("active",)]


def test_nested_variant_in_struct(session):
    # VariantTestBase "Paimon Variant: nested variant in struct"
    run(session, "CREATE TABLE T (id INT, data STRUCT<name: STRING, v: VARIANT>)")
    run(session, """INSERT INTO T VALUES
        (1, struct('Alice', parse_json('{"score":95,"grade":"A"}'))),
        (2, struct('Bob', parse_json('{"score":88,"grade":"B"}')))""")
    result = list(session.execute("SELECT * FROM T ORDER BY id"))[-1].dataframe
    assert len(result.collect()) == 2
    assert result.schema.fieldNames() == ["id", "data"]
    data = result.schema["data"].dataType
    assert isinstance(data, StructType) and data.fieldNames() == ["name", "v"]
    assert isinstance(data["v"].dataType, VariantType)
    assert run(session, "SELECT id, data.name, variant_get(data.v, '$.score', 'int'), "
                        "variant_get(data.v, '$.grade', 'string') FROM T ORDER BY id") == [
        (1, "Alice", 95, "A"), (2, "Bob", 88, "B")]
    assert run(session, "SELECT data.name FROM T WHERE variant_get(data.v, '$.score', 'int') > 90") == [
        ("Alice",)]


def test_nested_variant_in_array(session):
    # VariantTestBase "Paimon Variant: nested variant in array"
    run(session, "CREATE TABLE T (id INT, arr ARRAY<VARIANT>)")
    a1 = """array(parse_json('{"x":1,"y":2}'), parse_json('{"x":3,"y":4}'))"""
    a2 = """array(parse_json('{"x":5,"y":6}'))"""
    run(session, f"INSERT INTO T VALUES (1, {a1}), (2, {a2})")
    same(session, "SELECT * FROM T ORDER BY id", f"SELECT 1, {a1} UNION ALL SELECT 2, {a2}")
    assert run(session, "SELECT id, variant_get(arr[0], '$.x', 'int'), variant_get(arr[0], '$.y', 'int') "
                        "FROM T ORDER BY id") == [(1, 1, 2), (2, 5, 6)]
    assert run(session, "SELECT size(arr) FROM T WHERE id = 1") == [(2,)]


def test_nested_variant_in_map(session):
    # VariantTestBase "Paimon Variant: nested variant in map"
    run(session, "CREATE TABLE T (id INT, m MAP<STRING, VARIANT>)")
    m1 = ("""map('key1', parse_json('{"value":100,"type":"int"}'), """
          """'key2', parse_json('{"value":200,"type":"long"}'))""")
    m2 = """map('key3', parse_json('{"value":300,"type":"double"}'))"""
    run(session, f"INSERT INTO T VALUES (1, {m1}), (2, {m2})")
    same(session, "SELECT * FROM T ORDER BY id", f"SELECT 1, {m1} UNION ALL SELECT 2, {m2}")
    assert run(session, "SELECT id, variant_get(m['key1'], '$.value', 'int'), "
                        "variant_get(m['key1'], '$.type', 'string') FROM T WHERE id = 1") == [(1, 100, "int")]
    assert run(session, "SELECT map_keys(m) FROM T WHERE id = 2") == [(["key3"],)]


def test_complex_nested_variant_in_struct_with_array_and_map(session):
    # VariantTestBase "Paimon Variant: complex nested variant in struct with array and map"
    run(session, "CREATE TABLE T (id INT, data STRUCT<tags: ARRAY<VARIANT>, attrs: MAP<STRING, VARIANT>>)")
    tags = ("""array(parse_json('{"tag":"important","priority":1}'), """
            """parse_json('{"tag":"urgent","priority":2}'))""")
    attrs = ("""map('color', parse_json('{"r":255,"g":0,"b":0}'), """
             """'size', parse_json('{"width":100,"height":200}'))""")
    run(session, f"INSERT INTO T VALUES (1, struct({tags}, {attrs}))")
    same(session, "SELECT * FROM T",
         f"SELECT 1 AS id, named_struct('tags', {tags}, 'attrs', {attrs}) AS data")
    assert run(session, "SELECT id, variant_get(data.tags[0], '$.tag', 'string'), "
                        "variant_get(data.attrs['color'], '$.r', 'int') FROM T") == [(1, "important", 255)]
    assert run(session, "SELECT size(data.tags), size(data.attrs) FROM T WHERE id = 1") == [(2, 2)]


# ---- beyond VariantTestBase: what Paimon's variant documentation states ----------------------


def test_variant_keys_partitions_and_non_parquet_formats_are_refused(session):
    # docs/multimodal-table/variant.mdx, "Limitations": no VARIANT primary or partition key, and
    # variant data files must be Parquet.
    fails(session, "CREATE TABLE k (id INT, v VARIANT) TBLPROPERTIES ('primary-key' = 'v', 'bucket' = '1')",
          "VARIANT")
    fails(session, "CREATE TABLE p (id INT, v VARIANT) PARTITIONED BY (v)", "VARIANT")
    fails(session, "CREATE TABLE o (id INT, v VARIANT) TBLPROPERTIES ('file.format' = 'orc')", "'orc'")


def test_alter_table_add_variant_column_and_df_write(session, spark, warehouse):
    # A VARIANT column added later reads NULL in older files; df.write takes Spark's VariantType.
    run(session, "CREATE TABLE T (id INT)")
    run(session, "INSERT INTO T VALUES (1)")
    run(session, "ALTER TABLE T ADD COLUMN v VARIANT")
    run(session, """INSERT INTO T VALUES (2, parse_json('{"a":[1,2]}'))""")
    df = spark.sql("""SELECT 3 AS id, parse_json('{"a":[3]}') AS v""")
    (df.write.format("dyntable").option("warehouse", warehouse).option("table", "default.T")
     .mode("append").save())
    assert run(session, "SELECT id, to_json(v) FROM T ORDER BY id") == [
        (1, None), (2, '{"a":[1,2]}'), (3, '{"a":[3]}')]
    assert run(session, "DESCRIBE T")[1][:2] == ("v", "variant")
    assert "`v` VARIANT" in run(session, "SHOW CREATE TABLE T")[0][0]


def test_create_table_as_select_keeps_the_variant_type(session):
    run(session, """CREATE TABLE c AS SELECT 1 AS id, parse_json('{"k":[1,{"x":null}]}') AS v""")
    assert run(session, "DESCRIBE c")[1][:2] == ("v", "variant")
    assert run(session, "SELECT to_json(v), variant_get(v, '$.k[0]', 'int') FROM c") == [
        ('{"k":[1,{"x":null}]}', 1)]


@pytest.mark.parametrize("props", ["'primary-key' = 'id', 'bucket' = '2'", "'bucket' = '-1'"])
def test_update_delete_merge_and_compact_keep_variants(session, props):
    run(session, f"CREATE TABLE t (id INT, v VARIANT) TBLPROPERTIES ({props})")
    run(session, """INSERT INTO t VALUES (1, parse_json('{"a":1}')), (2, parse_json('{"a":2}')), (3, NULL)""")
    run(session, """UPDATE t SET v = parse_json('{"a":20}') WHERE variant_get(v, '$.a', 'int') = 2""")
    run(session, "DELETE FROM t WHERE id = 1")
    run(session, """MERGE INTO t USING (SELECT 4 AS id, parse_json('[4]') AS v) s ON t.id = s.id
                    WHEN NOT MATCHED THEN INSERT *""")
    run(session, "CALL sys.compact(table => 't')")
    assert run(session, "SELECT id, to_json(v) FROM t ORDER BY id") == [
        (2, '{"a":20}'), (3, None), (4, "[4]")]
