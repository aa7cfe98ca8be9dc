"""Avro data files (``file.format = 'avro'``) between dyntable, pypaimon 2.1 and Java Paimon 0.9.

pypaimon and Java write Avro tables (append and primary-key) that dyntable reads row for row, writes
into and compacts, after which they read dyntable's rows; dyntable's own Avro tables read the same
in pypaimon and Java (Java also compacts them). A postpone-bucket table pypaimon wrote (its pending
Avro files in ``bucket-postpone``) is compacted by dyntable, and pypaimon then reads dyntable's rows.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from tests.compat.harness import PyPaimon
from tests.compat.java_oracle import JavaPaimon, arrow_rows
from tests.compat.test_newer_features import _rows

D = decimal.Decimal

# What pypaimon's Avro writer supports (no maps; array elements without NULLs).
SCHEMA = pa.schema([
    pa.field("k", pa.int32(), nullable=False), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()),
    ("i64", pa.int64()), ("f32", pa.float32()), ("f64", pa.float64()), ("d9", pa.decimal128(9, 2)),
    ("dec30", pa.decimal128(30, 4)), ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()),
    ("ts", pa.timestamp("us")), ("ts3", pa.timestamp("ms")), ("ltz", pa.timestamp("us", "UTC")),
    ("arr", pa.list_(pa.field("element", pa.int32()))),
    ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
])  # fmt: skip
DATA = pa.table({
    "k": [1, 2, 3], "b": [True, False, None], "i8": [1, -1, None], "i16": [2, None, 3],
    "i64": [2**40, None, -5], "f32": [1.5, None, -2.0], "f64": [2.5, 0.0, None],
    "d9": [D("1.25"), None, D("-3.50")], "dec30": [D("12345678901234567890.1234"), None, D("0.0001")],
    "s": ["x", "", None], "bin": [b"\x00\xff", None, b""],
    "d": [dt.date(2024, 1, 2), None, dt.date(1969, 12, 31)],
    "ts": [dt.datetime(2024, 1, 2, 3, 4, 5, 123456), None, dt.datetime(1970, 1, 1)],
    "ts3": [dt.datetime(2024, 1, 2, 3, 4, 5, 123000), None, dt.datetime(2000, 1, 1)],
    "ltz": [dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC), None,
            dt.datetime(1960, 1, 1, tzinfo=dt.UTC)],
    "arr": [[1, 2, 3], None, []], "st": [{"x": 1, "y": "a"}, None, {"x": None, "y": None}],
}, schema=SCHEMA)  # fmt: skip


def _more(ks, s: str) -> pa.Table:
    ks = list(ks)
    rows = DATA.slice(0, 1).take([0] * len(ks))
    return rows.set_column(0, "k", pa.array(ks, pa.int32())).set_column(9, "s", pa.array([s] * len(ks)))


def _formats(t) -> set[str]:
    return {f.file_name.rsplit(".", 1)[1] for s in t.refresh().new_scan().plan().splits for f in s.files}


@pytest.mark.compat
@pytest.mark.parametrize("keys", [["k"], []], ids=["primary-key", "append"])
def test_dyntable_reads_pypaimon_avro_and_pypaimon_reads_dyntables_writes(pypaimon: PyPaimon, catalog, keys):
    wh, name = catalog.warehouse, f"db.pyavro{len(keys)}"
    pypaimon.create_table(wh, name, SCHEMA, primary_keys=keys,
                          options={"file.format": "avro", **({"bucket": "2"} if keys else {})})
    pypaimon.write(wh, name, DATA)
    t = catalog.get_table(name)
    assert _formats(t) == {"avro"}
    assert _rows(t.to_arrow()) == _rows(pypaimon.read(wh, name)) == _rows(DATA)
    t.write_arrow(_more([2, 7], "dyn"))
    t.refresh().compact(full=True)
    ours = _rows(t.refresh().to_arrow())
    assert _formats(t) == {"avro"} and len(ours) == (4 if keys else 5)
    assert _rows(pypaimon.read(wh, name)) == ours
    pypaimon.write(wh, name, _more([9], "again"))
    assert _rows(pypaimon.read(wh, name)) == _rows(t.refresh().to_arrow())


@pytest.mark.compat
@pytest.mark.parametrize("keys", [["k"], []], ids=["primary-key", "append"])
def test_pypaimon_reads_dyntables_avro_tables(pypaimon: PyPaimon, catalog, keys):
    name = f"db.dynavro{len(keys)}"
    t = catalog.create_table(name, SCHEMA, primary_keys=keys,
                             options={"file.format": "avro", **({"bucket": "1"} if keys else {})})
    t.write_arrow(DATA)
    t.write_arrow(_more([3, 4], "second"))
    assert _formats(t) == {"avro"}
    assert _rows(pypaimon.read(catalog.warehouse, name)) == _rows(t.refresh().to_arrow())


@pytest.mark.compat
def test_dyntable_compacts_a_postpone_table_pypaimon_left_pending(pypaimon: PyPaimon, catalog):
    wh, name = catalog.warehouse, "db.post"
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                        pa.field("pt", pa.string(), nullable=False)])
    pypaimon.create_table(wh, name, schema, primary_keys=["k", "pt"], partition_keys=["pt"],
                          options={"bucket": "-2"})
    pypaimon.write(wh, name, pa.table({"k": [1, 2, 3, 4], "v": list("abcd"), "pt": ["x", "x", "y", "y"]},
                                      schema=schema))
    pypaimon.write(wh, name, pa.table({"k": [2, 5], "v": ["B", "e"], "pt": ["x", "x"]}, schema=schema))
    t = catalog.get_table(name)
    pending = [e for e in t.store.live_entries(t.store.snapshots.latest()) if e.bucket == -2]
    assert pending and all(e.file.file_name.endswith(".avro") for e in pending)
    assert t.to_arrow().num_rows == 0 == pypaimon.read(wh, name).num_rows  # pending rows are invisible
    t.compact(full=True)
    t = t.refresh()
    assert all(e.bucket >= 0 for e in t.store.live_entries(t.store.snapshots.latest()))
    expected = [(1, "a", "x"), (2, "B", "x"), (3, "c", "y"), (4, "d", "y"), (5, "e", "x")]
    assert _rows(t.to_arrow()) == expected == _rows(pypaimon.read(wh, name))


JAVA_COLUMNS = [("k", "INT NOT NULL"), ("s", "STRING"), ("d", "DECIMAL(10, 2)"), ("ts", "TIMESTAMP(6)"),
                ("ts3", "TIMESTAMP(3)"), ("dt", "DATE"), ("b", "BYTES"), ("f", "DOUBLE"), ("t", "TINYINT")]


@pytest.mark.java
@pytest.mark.parametrize("keys", [["k"], []], ids=["primary-key", "append"])
def test_dyntable_reads_java_avro_and_java_reads_dyntables(java: JavaPaimon, catalog, keys):
    name = f"db.javro{len(keys)}"
    java.create_table(name, JAVA_COLUMNS, primary_keys=keys,
                      options={"file.format": "avro", **({"bucket": "2"} if keys else {})})
    java.write(name, [[1, "a", "1.25", "2024-01-02T03:04:05.123456", "2024-01-02T03:04:05.123", "2024-01-02",
                       b"\x00\x01", 1.5, -3],
                      [2, None, None, None, None, None, None, None, None]])
    t = catalog.get_table(name)
    assert _formats(t) == {"avro"}
    assert arrow_rows(t.to_arrow()) == java.read(name)
    assert arrow_rows(t.to_arrow())[0][:3] == (1, "a", D("1.25"))
    more = pa.table({"k": pa.array([2, 3], pa.int32()), "s": ["b", "c"], "d": [D("327.68"), D("-9.99")],
                     "ts": [None, dt.datetime(2020, 1, 1)], "ts3": [dt.datetime(1999, 1, 1), None],
                     "dt": [None, dt.date(2000, 1, 1)], "b": [b"", None], "f": [None, -0.5],
                     "t": pa.array([None, 7], pa.int8())}).cast(t.arrow_schema)
    t.write_arrow(more)
    t.refresh().compact(full=True)
    assert _formats(t) == {"avro"}
    assert arrow_rows(t.refresh().to_arrow()) == java.read(name)
    java.compact(name)
    assert arrow_rows(t.refresh().to_arrow()) == java.read(name)


@pytest.mark.java
def test_java_reads_nested_avro_dyntable_writes(java: JavaPaimon, catalog):
    """Arrays and rows with NULLs at every depth (every value a union, as polars encodes it)."""
    schema = pa.schema([
        pa.field("k", pa.int32(), nullable=False), ("a", pa.list_(pa.field("element", pa.string()))),
        ("r", pa.struct([("x", pa.int32()), ("l", pa.list_(pa.field("element", pa.int64())))])),
        ("ar", pa.list_(pa.field("element", pa.struct([("q", pa.decimal128(5, 2))])))),
    ])  # fmt: skip
    data = pa.table({
        "k": [1, 2, 3], "a": [["x", None], None, []],
        "r": [{"x": 1, "l": [1, None]}, None, {"x": None, "l": None}],
        "ar": [[{"q": D("1.50")}, None], [], None],
    }, schema=schema)  # fmt: skip
    t = catalog.create_table("db.nested", schema, primary_keys=["k"],
                             options={"file.format": "avro", "bucket": "1"})
    t.write_arrow(data)
    got = {r[0]: r[1:] for r in java.read("db.nested")}
    assert got == {1: (["x", None], [1, [1, None]], [["1.50"], None]), 2: (None, None, []),
                   3: ([], [None, None], None)}
