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
