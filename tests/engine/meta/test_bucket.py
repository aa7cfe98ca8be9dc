"""Tests that the vectorised bucket hash equals the scalar BinaryRow hash on every row."""

from __future__ import annotations

import datetime as dt
import decimal
import time

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.meta.bucket as bucket_mod
from engine.errors import InvalidArgumentError
from engine.meta.binary_row import bucket_of, encode_row, hash_row_bytes
from engine.meta.bucket import bucket_ids, hash_codes
from engine.types import (
    ARRAY,
    BIGINT,
    BINARY,
    BOOLEAN,
    BYTES,
    CHAR,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    DataType,
    TypeRoot,
)

D = decimal.Decimal


def scalar_hashes(values_by_column: list[list[object]], types: list[DataType]) -> list[int]:
    return [hash_row_bytes(encode_row(list(r), types)) for r in zip(*values_by_column, strict=True)]


# ---------------------------------------------------------------------------------------------
# Known vectors through the vectorised path
# ---------------------------------------------------------------------------------------------
def test_vectors_and_bucket_examples() -> None:
    cols = [pa.array(["hello", "hello-java", "hello-java"])]
    assert hash_codes(cols, [STRING()]).tolist() == [243722546, -201703277, -201703277]
    assert bucket_ids(cols, [STRING()], 4).tolist()[1] == 1
    row = [pa.array([1], pa.int32()), pa.array(["abc"]), pa.array([None], pa.int64())]
    types = [INT(), STRING(), BIGINT()]
    assert hash_codes(row, types).tolist() == [-549791434]
    assert bucket_ids(row, types, 4).tolist() == [2]
    assert hash_codes([pa.array(["hello-java"]), pa.array([42])], [STRING(), BIGINT()]).tolist() == [
        -2066620165
    ]
    assert hash_codes([pa.array([D("12345.67")], pa.decimal128(10, 2))], [DECIMAL(10, 2)]).tolist() == [
        754928256
    ]
    wide = pa.array([D("12345678901234567890123.45")], pa.decimal128(25, 2))
    assert hash_codes([wide], [DECIMAL(25, 2)]).tolist() == [1388205002]
    ts3 = pa.array([dt.datetime(2026, 1, 2, 3, 4, 5, 123000)], pa.timestamp("ms"))
    assert hash_codes([ts3], [TIMESTAMP(3)]).tolist() == [-1766746798]
    ts6 = pa.array([dt.datetime(2026, 1, 2, 3, 4, 5, 123456)], pa.timestamp("us"))
    assert hash_codes([ts6], [TIMESTAMP(6)]).tolist() == [1245041971]
    blobs = pa.array([bytes([0, 1, 0xFF, 0x7F]), bytes(range(10))])
    assert hash_codes([blobs], [BYTES()]).tolist() == [586821318, 1822312655]


# ---------------------------------------------------------------------------------------------
# Property: vectorised == scalar, row by row
# ---------------------------------------------------------------------------------------------
def _ts_value(draw: st.DrawFn, p: int) -> tuple[object, object]:
    """(arrow-side int in the column's unit, scalar-side value)."""
    if p > 6:
        nanos = draw(st.integers(-(2**62), 2**62))
        return nanos, np.datetime64(nanos, "ns")
    micros = draw(st.integers(-(2**50), 2**50))
    return micros, np.datetime64(micros, "us")


@st.composite
def column(draw: st.DrawFn, n: int) -> tuple[pa.Array | pa.ChunkedArray, DataType, list[object]]:
    """A random key column of n rows: (arrow column, paimon type, scalar values)."""
    kind = draw(
        st.sampled_from(
            [
                "bool",
                "i8",
                "i16",
                "i32",
                "i64",
                "f32",
                "f64",
                "dec",
                "wdec",
                "str",
                "bin",
                "date",
                "time",
                "ts",
            ]
        )
    )
    nulls = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if draw(st.booleans()) else [False] * n

    def vals(strategy: st.SearchStrategy) -> list[object]:
        drawn = draw(st.lists(strategy, min_size=n, max_size=n))
        return [None if null else v for v, null in zip(drawn, nulls, strict=True)]

    if kind == "ts":
        p = draw(st.integers(0, 9))
        t = draw(st.sampled_from([TIMESTAMP(p), TIMESTAMP_LTZ(p)]))
        pairs = [_ts_value(draw, p) for _ in range(n)]
        unit = "ns" if p > 6 else "us"
        tz = "UTC" if t.root is TypeRoot.TIMESTAMP_LTZ else None
        ints = [None if null else a for (a, _), null in zip(pairs, nulls, strict=True)]
        arr = pa.array(ints, pa.int64()).cast(pa.timestamp(unit, tz=tz))
        return arr, t, [None if null else b for (_, b), null in zip(pairs, nulls, strict=True)]
    if kind in ("dec", "wdec"):
        p = draw(st.integers(1, 18) if kind == "dec" else st.integers(19, 38))
        s = draw(st.integers(0, p))
        unscaled = vals(st.integers(-(10**p) + 1, 10**p - 1))
        values = [None if u is None else D(u).scaleb(-s, decimal.Context(prec=50)) for u in unscaled]
        return pa.array(values, pa.decimal128(p, s)), DECIMAL(p, s), values
    if kind in ("str", "bin"):
        long_ = draw(st.booleans())
        if kind == "str":
            values = vals(st.text(min_size=0, max_size=40 if long_ else 7))
            t = draw(st.sampled_from([STRING(), CHAR(5)]))
            form = draw(st.sampled_from(["string", "large", "dict", "view"]))
            arr = pa.array(values, pa.string())
            if form == "large":
                arr = arr.cast(pa.large_string())
            elif form == "dict":
                arr = arr.dictionary_encode()
            elif form == "view" and hasattr(pa, "string_view"):
                arr = arr.cast(pa.string_view())
        else:
            values = vals(st.binary(min_size=0, max_size=40 if long_ else 7))
            t = draw(st.sampled_from([BYTES(), BINARY(4)]))
            arr = pa.array(values, pa.binary())
        return arr, t, values
    simple = {
        "bool": (BOOLEAN(), pa.bool_(), st.booleans()),
        "i8": (TINYINT(), pa.int8(), st.integers(-(2**7), 2**7 - 1)),
        "i16": (SMALLINT(), pa.int16(), st.integers(-(2**15), 2**15 - 1)),
        "i32": (INT(), pa.int32(), st.integers(-(2**31), 2**31 - 1)),
        "i64": (BIGINT(), pa.int64(), st.integers(-(2**63), 2**63 - 1)),
        "f32": (FLOAT(), pa.float32(), st.floats(width=32, allow_nan=False)),
        "f64": (DOUBLE(), pa.float64(), st.floats(allow_nan=False)),
        "date": (DATE(), pa.date32(), st.dates()),
        "time": (
            TIME(),
            pa.time32("ms"),
            st.times().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000)),
        ),
    }
    t, arrow_type, strategy = simple[kind]
    values = vals(strategy)
    return pa.array(values, arrow_type), t, values


def _reshape(arr: pa.Array, how: str) -> pa.Array | pa.ChunkedArray:
    if how == "chunked" and len(arr) > 1:
        return pa.chunked_array([arr.slice(0, len(arr) // 2), arr.slice(len(arr) // 2)])
    return arr


@st.composite
def batch(draw: st.DrawFn) -> tuple[list[pa.Array | pa.ChunkedArray], list[DataType], list[list[object]]]:
    n = draw(st.integers(1, 40))
    k = draw(st.integers(1, 4))
    # Build one extra leading row and slice it off so non-zero array offsets are exercised.
    cols = [draw(column(n + 1)) for _ in range(k)]
    how = draw(st.sampled_from(["plain", "chunked"]))
    arrays = [_reshape(a.slice(1), how) for a, _, _ in cols]
    return arrays, [t for _, t, _ in cols], [v[1:] for _, _, v in cols]


@settings(max_examples=100, deadline=None)
@given(batch(), st.integers(1, 64))
def test_vectorised_equals_scalar(data: tuple, num_buckets: int) -> None:
    arrays, types, values = data
    expected = scalar_hashes(values, types)
    assert hash_codes(arrays, types).tolist() == expected
    got = bucket_ids(arrays, types, num_buckets)
    assert got.dtype == np.int32
    assert got.tolist() == [bucket_of(list(r), types, num_buckets) for r in zip(*values, strict=True)]


@settings(max_examples=30, deadline=None)
@given(batch())
def test_chunk_boundaries(
    data: tuple,
) -> None:
    arrays, types, values = data
    old = bucket_mod._CHUNK_ROWS
    bucket_mod._CHUNK_ROWS = 3
    try:
        assert hash_codes(arrays, types).tolist() == scalar_hashes(values, types)
    finally:
        bucket_mod._CHUNK_ROWS = old


def test_mixed_var_lengths_multi_column() -> None:
    rng = np.random.default_rng(7)
    n = 500
    lens = rng.integers(0, 60, n)
    s1 = ["x" * int(v) for v in lens]
    s2 = [
        None if i % 5 == 0 else bytes(rng.integers(0, 256, int(lens[-i - 1]), dtype=np.uint8))
        for i in range(n)
    ]
    d = [None if i % 7 == 0 else D(int(rng.integers(-(10**15), 10**15))) * D(10) ** 10 for i in range(n)]
    ts = [None if i % 3 == 0 else np.datetime64(int(rng.integers(-(2**60), 2**60)), "ns") for i in range(n)]
    types = [STRING(), DECIMAL(30, 0), BYTES(), TIMESTAMP(9), INT()]
    ints = list(range(n))
    arrays = [
        pa.array(s1),
        pa.array(d, pa.decimal128(30, 0)),
        pa.array(s2, pa.binary()),
        pa.array([None if v is None else int(v.astype(np.int64)) for v in ts], pa.int64()).cast(
            pa.timestamp("ns")
        ),
        pa.array(ints, pa.int32()),
    ]
    assert hash_codes(arrays, types).tolist() == scalar_hashes([s1, d, s2, ts, ints], types)


def test_other_arrow_physical_forms() -> None:
    days = [0, -1, 19000, None]
    date64 = pa.array([None if v is None else v * 86_400_000 for v in days], pa.date64())
    pydates = [None if v is None else dt.date(1970, 1, 1) + dt.timedelta(days=v) for v in days]
    assert hash_codes([date64], [DATE()]).tolist() == scalar_hashes([pydates], [DATE()])

    t64 = pa.array([1_500_000_123, None], pa.time64("ns"))  # 1.5 s + 123 ns
    t32 = pa.array([1, None], pa.time32("s"))
    assert hash_codes([t64], [TIME()]).tolist() == scalar_hashes([[1500, None]], [TIME()])
    assert hash_codes([t32], [TIME()]).tolist() == scalar_hashes([[1000, None]], [TIME()])

    secs = pa.array([-1, 5, None], pa.timestamp("s"))
    expect = [np.datetime64(-1, "s"), np.datetime64(5, "s"), None]
    for p in (3, 6, 9):
        assert hash_codes([secs], [TIMESTAMP(p)]).tolist() == scalar_hashes([expect], [TIMESTAMP(p)])

    fixed = pa.array([b"abcdefghij", None, b"0123456789"], pa.binary(10))
    vals = [b"abcdefghij", None, b"0123456789"]
    assert hash_codes([fixed], [BINARY(10)]).tolist() == scalar_hashes([vals], [BINARY(10)])

    ints = pa.array([1, 2, None], pa.int64())  # wider arrow type than the key type
    assert hash_codes([ints], [TINYINT()]).tolist() == scalar_hashes([[1, 2, None]], [TINYINT()])
    allnull = pa.array([None, None])
    assert hash_codes([allnull], [STRING()]).tolist() == scalar_hashes([[None, None]], [STRING()])


def test_empty_batch() -> None:
    out = bucket_ids([pa.array([], pa.int64())], [BIGINT()], 8)
    assert out.dtype == np.int32 and len(out) == 0


def test_invalid_inputs() -> None:
    with pytest.raises(InvalidArgumentError):
        hash_codes([pa.array([1]), pa.array([1, 2])], [INT(), INT()])
    with pytest.raises(InvalidArgumentError):
        hash_codes([pa.array([1])], [INT(), INT()])
    with pytest.raises(InvalidArgumentError):
        hash_codes([pa.array([[1]])], [ARRAY(INT())])
    with pytest.raises(InvalidArgumentError):
        hash_codes([pa.array([300])], [TINYINT()])
    with pytest.raises(InvalidArgumentError):
        hash_codes([pa.array([D("1.234")], pa.decimal128(5, 3))], [DECIMAL(5, 2)])
    with pytest.raises(InvalidArgumentError):
        bucket_ids([pa.array([1])], [INT()], 0)


def test_speed_sanity(capsys: pytest.CaptureFixture[str]) -> None:
    n = 1_000_000
    keys = pa.array(np.random.default_rng(1).integers(-(2**62), 2**62, n))
    t0 = time.perf_counter()
    ids = bucket_ids([keys], [BIGINT()], 16)
    t_int = time.perf_counter() - t0
    strings = pa.array([f"key-{i:08d}" for i in range(n)])
    t0 = time.perf_counter()
    sids = bucket_ids([strings], [STRING()], 16)
    t_str = time.perf_counter() - t0
    assert ids.min() >= 0 and ids.max() < 16 and sids.max() < 16
    for i in (0, 123_456, n - 1):
        assert sids[i] == bucket_of([f"key-{i:08d}"], [STRING()], 16)
        assert ids[i] == bucket_of([keys[i].as_py()], [BIGINT()], 16)
    with capsys.disabled():
        print(f"\nbucket_ids 1M BIGINT: {t_int:.3f}s, 1M 12-char STRING: {t_str:.3f}s")
