"""Arrow → columnar TRowSet conversion, paging and JDBC search patterns (no Spark)."""

from __future__ import annotations

import decimal

import pyarrow as pa
from TCLIService import ttypes as tt

from sqlext.server.metadata import like
from sqlext.server.results import Pager, row_set, table_batches, table_schema


def test_null_bitmap_is_least_significant_bit_first():
    rs = row_set(pa.table({"x": pa.array([1, None, 3, None, None, 6, 7, 8, None], pa.int64())}), 0)
    col = rs.columns[0].i64Val
    assert col.values == [1, 0, 3, 0, 0, 6, 7, 8, 0]
    assert col.nulls == bytes([0b00011010, 0b00000001])


def test_types_map_to_hive_columns():
    table = pa.table({
        "b": pa.array([True, None]), "i8": pa.array([1, 2], pa.int8()), "i32": pa.array([3, 4], pa.int32()),
        "f": pa.array([1.5, None], pa.float32()), "s": pa.array(["x", None]),
        "dec": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(5, 2)),
        "bin": pa.array([b"\x00", None]), "lst": pa.array([[1, 2], None]),
    })
    rs = row_set(table, 7)
    assert rs.startRowOffset == 7
    assert rs.columns[0].boolVal.values == [True, False] and rs.columns[0].boolVal.nulls == b"\x02"
    assert rs.columns[1].byteVal.values == [1, 2]
    assert rs.columns[2].i32Val.values == [3, 4]
    assert rs.columns[3].doubleVal.values == [1.5, 0.0]
    assert rs.columns[4].stringVal.values == ["x", ""]
    assert rs.columns[5].stringVal.values == ["1.50", ""]
    assert rs.columns[6].binaryVal.values == [b"\x00", b""]
    assert rs.columns[7].stringVal.values == ["[1,2]", ""]
    schema = table_schema(table.schema)
    entries = [c.typeDesc.types[0].primitiveEntry for c in schema.columns]
    assert [e.type for e in entries] == [
        tt.TTypeId.BOOLEAN_TYPE, tt.TTypeId.TINYINT_TYPE, tt.TTypeId.INT_TYPE, tt.TTypeId.FLOAT_TYPE,
        tt.TTypeId.STRING_TYPE, tt.TTypeId.DECIMAL_TYPE, tt.TTypeId.BINARY_TYPE, tt.TTypeId.ARRAY_TYPE]
    q = entries[5].typeQualifiers.qualifiers
    assert (q["precision"].i32Value, q["scale"].i32Value) == (5, 2)


def test_pager_pages_and_restarts():
    table = pa.table({"x": pa.array(range(10), pa.int64())})
    opened = []

    def stream():
        opened.append(1)
        return table_batches(pa.Table.from_batches(table.to_batches(max_chunksize=3)))()

    pager = Pager(table.schema, stream)
    pages = []
    while True:
        page, more = pager.next_page(4)
        pages.append(page.column(0).to_pylist())
        if not more:
            break
    assert pages == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    pager.restart()
    assert pager.next_page(2)[0].column(0).to_pylist() == [0, 1] and len(opened) == 2


def test_jdbc_search_patterns():
    assert like(None) is None and like("%") is None
    assert like("t%").fullmatch("T$snapshots") and not like("t_").fullmatch("t")
    assert like("a\\_b").fullmatch("a_b") and not like("a\\_b").fullmatch("axb")
    # The Hive forms: '*' and '.*' (impyla's default) are "any", '$' and '.' stand for themselves.
    assert like("*") is None and like(".*") is None and like("") is None
    assert like("ord*").fullmatch("orders") and like("o.*s").fullmatch("orders")
    assert like("orders$%").fullmatch("orders$files") and not like("orders$%").fullmatch("orders")
    assert like("a.b").fullmatch("a.b") and not like("a.b").fullmatch("axb")


def test_hive_shapes_of_show_tables_and_missing_table_errors():
    from sqlext.server.sessions import Failure, hive_shaped, hive_wording

    class Frame:
        def __init__(self, columns):
            self.columns = columns

        def select(self, column):
            return Frame([column])

    spark_shape = ["namespace", "tableName", "isTemporary"]
    assert hive_shaped("SHOW TABLES IN db", Frame(spark_shape)).columns == ["tableName"]
    assert hive_shaped("/* c */ show views", Frame(["namespace", "viewName", "isTemporary"])).columns == [
        "viewName"]
    assert hive_shaped("SHOW TABLE EXTENDED LIKE 't'", Frame(spark_shape)).columns == spark_shape
    assert hive_shaped("SELECT 1", Frame(spark_shape)).columns == spark_shape

    missing = Failure("42P01", "table or view not found: db.nope")
    hive = "(SemanticException: Table not found db.nope)"
    assert hive_wording(missing, "DESCRIBE db.nope").message == f"table or view not found: db.nope\n{hive}"
    assert hive_wording(missing, "desc table extended nope;").message.endswith("Table not found nope)")
    assert hive_wording(missing, "SELECT * FROM nope") == missing
    assert hive_wording(Failure("42601", "syntax"), "DESCRIBE nope").message == "syntax"


def test_mismatched_transports_are_named():
    from sqlext.server.thrift_service import _transport_mismatch

    assert "auth_mechanism='PLAIN'" in _transport_mismatch("PLAIN", 0x80)
    assert "PyHive auth='NONE'" in _transport_mismatch("NONE", 0x80)
    assert "auth_mechanism='NOSASL'" in _transport_mismatch("NOSASL", 0x01)
    assert _transport_mismatch("PLAIN", 0x01) is None and _transport_mismatch("NOSASL", 0x80) is None
