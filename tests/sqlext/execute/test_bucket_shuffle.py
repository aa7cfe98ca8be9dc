"""The JVM bucket column (sqlext.execute.bucket_shuffle) against the engine's Paimon bucket
function (engine.meta.bucket, itself checked against Java's BinaryRow.hashCode), for every key
type it covers, on both of its routes (word arithmetic for fixed-width rows, BINARY bytes and
Spark's hash otherwise), nulls, multi-column keys and many bucket counts; and the shuffle's layout."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from engine.meta.bucket import bucket_ids
from engine.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
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
    VARCHAR,
)
from sqlext.execute.bucket_shuffle import (
    BUCKET_COLUMN,
    MAX_WORD_FIELDS,
    _bytes_bucket,
    _spark_hash_ints,
    stand_ins,
    with_bucket,
)

pytestmark = pytest.mark.spark

N = 2_000
rng = np.random.default_rng(7)


def _nulls(arr: pa.Array, every: int = 11) -> pa.Array:
    mask = np.zeros(len(arr), dtype=bool)
    mask[::every] = True
    return pa.array(arr.to_pylist(), arr.type, mask=mask)


def _strings(n: int) -> pa.Array:
    alphabet = np.array(list("abcdefghij\u00e9\u4e2d\U0001f600"))
    lengths = rng.integers(0, 20, n)
    lengths[:20] = np.arange(20)  # every inline/out-of-line boundary
    return pa.array(["".join(rng.choice(alphabet, k)) for k in lengths], pa.string())


def _columns() -> dict[str, tuple[pa.Array, object]]:
    ints = rng.integers(-(2**62), 2**62, N)
    ints[:4] = [0, -1, 2**63 - 1, -(2**63)]
    days = rng.integers(-50_000, 50_000, N).astype(np.int32)
    micros = rng.integers(-(2**50), 2**50, N)
    return {
        "b": (pa.array(rng.integers(0, 2, N).astype(bool)), BOOLEAN()),
        "i8": (pa.array(rng.integers(-128, 128, N).astype(np.int8)), TINYINT()),
        "i16": (pa.array(rng.integers(-(2**15), 2**15, N).astype(np.int16)), SMALLINT()),
        "i32": (pa.array(rng.integers(-(2**31), 2**31, N).astype(np.int32)), INT()),
        "i64": (pa.array(ints), BIGINT()),
        "s": (_strings(N), STRING()),
        "vc": (_strings(N), VARCHAR(30)),
        "bin": (pa.array([bytes(rng.integers(0, 256, k).astype(np.uint8)) for k in rng.integers(0, 20, N)]),
                BINARY(20)),
        "d": (pa.array(days, pa.date32()), DATE()),
        "dec": (pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-(10**9), 10**9, N)],
                         pa.decimal128(10, 2)), DECIMAL(10, 2)),
        "dec18": (pa.array([Decimal(int(v)).scaleb(-4) for v in rng.integers(-(10**17), 10**17, N)],
                           pa.decimal128(18, 4)), DECIMAL(18, 4)),
        "ltz3": (pa.array((micros // 1000) * 1000, pa.timestamp("us", tz="UTC")), TIMESTAMP_LTZ(3)),
        "ltz6": (pa.array(micros, pa.timestamp("us", tz="UTC")), TIMESTAMP_LTZ(6)),
    }


COLUMNS = _columns()


def _spark_buckets(spark, table: pa.Table, names: list[str], types, counts) -> dict[int, list[int]]:
    """Bucket of every row for each bucket count in ``counts``, from one Spark job."""
    df = spark.createDataFrame(table.append_column("__row", pa.array(np.arange(table.num_rows))))
    for n in counts:
        df = with_bucket(df, [F.col(c) for c in names], types, n, name=f"b{n}")
        assert df is not None
    got = df.select(*[f"b{n}" for n in counts], "__row").orderBy("__row").collect()
    return {n: [r[i] for r in got] for i, n in enumerate(counts)}


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_single_column_keys_match_the_engine(spark, name):
    arr, t = COLUMNS[name]
    arr = _nulls(arr)  # bucket keys of append tables may be NULL; the row bytes mark it
    table = pa.table({name: arr})
    got = _spark_buckets(spark, table, [name], [t], (1, 4, 7, 128))
    for n, buckets in got.items():
        assert buckets == bucket_ids([arr], [t], n).tolist(), n


def test_multi_column_keys_match_the_engine(spark):
    combos = [
        ["i32", "s"],
        ["s", "i64", "d"],
        ["dec", "ltz6", "vc", "i8"],
        ["bin", "s", "ltz6", "dec18", "b", "i16"],
        ["i64", "d", "dec18", "b", "ltz3", "i8", "i16"],  # MAX_WORD_FIELDS fixed-width: word arithmetic
    ]
    for names in combos:
        arrays = [_nulls(COLUMNS[c][0], every=5 + i) for i, c in enumerate(names)]
        types = [COLUMNS[c][1] for c in names]
        table = pa.table(dict(zip(names, arrays, strict=True)))
        expected = bucket_ids(arrays, types, 16).tolist()
        assert _spark_buckets(spark, table, names, types, [16])[16] == expected, names


def test_wide_rows_use_a_second_null_word(spark):
    # 60 fields: the null bits take 16 bytes; nulls in fields 55-59 land in the second word.
    # Beyond MAX_WORD_FIELDS fields, so this is the BINARY route.
    assert MAX_WORD_FIELDS < 60
    arr = _nulls(COLUMNS["i32"][0], every=3)
    names = [f"c{i}" for i in range(60)]
    table = pa.table({c: arr for c in names})
    types = [INT()] * 60
    assert _spark_buckets(spark, table, names, types, [5])[5] == bucket_ids([arr] * 60, types, 5).tolist()


@pytest.mark.parametrize("t", [FLOAT(), DOUBLE(), TIME(), TIMESTAMP(6), DECIMAL(20, 2)])
def test_types_spark_cannot_encode_get_no_bucket(spark, t):
    frame = spark.createDataFrame([(1,)], "k INT")
    assert with_bucket(frame, [F.col("k")], [t], 4) is None


def test_both_routes_agree_on_fixed_width_keys(spark):
    # A fixed-width key goes through the word arithmetic; its BINARY-bytes route must agree.
    names = ["i64", "i32", "d", "dec", "ltz3", "b"]
    arrays = [_nulls(COLUMNS[c][0], every=3 + i) for i, c in enumerate(names)]
    types = [COLUMNS[c][1] for c in names]
    df = spark.createDataFrame(pa.table(dict(zip(names, arrays, strict=True))))
    cols = [F.col(c) for c in names]
    words, binary = with_bucket(df, cols, types, 13), _bytes_bucket(cols, types, 13)
    assert words is not None and binary is not None
    same = words.select((F.col(BUCKET_COLUMN) == binary).alias("same")).collect()
    assert len(same) == N and all(r.same for r in same)


def test_stand_ins_reach_every_spark_partition_once(spark):
    values = [0, 1, -7, 2**31 - 1, -(2**31)]
    expected = spark.sql("SELECT " + ", ".join(f"hash(CAST({v} AS INT))" for v in values)).collect()[0]
    assert _spark_hash_ints(np.array(values)).tolist() == list(expected)
    for n in (1, 2, 3, 4, 16, 200):
        values = stand_ins(n)
        frame = spark.createDataFrame([(v,) for v in values], "v INT")
        got = frame.select(F.pmod(F.hash("v"), F.lit(n))).collect()
        assert [r[0] for r in got] == list(range(n))


def test_dates_before_the_epoch_and_timestamps_with_sub_millis(spark):
    dates = pa.array([dt.date(1900, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), None], pa.date32())
    stamps = pa.array([-1, -999, -1000, 1_000_001], pa.timestamp("us", tz="UTC"))
    table = pa.table({"d": dates, "t": stamps})
    types = [DATE(), TIMESTAMP_LTZ(6)]
    expected = bucket_ids([dates, stamps], types, 3).tolist()
    assert _spark_buckets(spark, table, ["d", "t"], types, [3])[3] == expected
