"""Fitting user data to a table schema: the casts Arrow lacks (time-of-day text to TIME)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from engine.errors import InvalidArgumentError
from engine.schema import TableSchema
from engine.write.conform import conform

SCHEMA = TableSchema.create([("id", "INT"), ("t0", "TIME"), ("t6", "TIME(6)")])


def test_time_text_becomes_time_values_and_nulls_stay_null():
    data = pa.table({
        "id": pa.array([1, 2, 3], pa.int32()),
        "t0": pa.array(["12:34:56", None, "00:00"], pa.string()),
        "t6": pa.array(["01:02:03.456", None, "23:59:59.999"], pa.large_string()),
    })
    out = conform(data, SCHEMA)
    assert out.column("t0").to_pylist() == [dt.time(12, 34, 56), None, dt.time(0, 0)]
    assert out.column("t6").to_pylist() == [dt.time(1, 2, 3, 456000), None, dt.time(23, 59, 59, 999000)]


def test_a_time_finer_than_a_millisecond_is_refused_as_paimon_stores_milliseconds():
    # TIME(6) is stored as Paimon stores every TIME: milliseconds of the day (Parquet TIME_MILLIS).
    data = pa.table({"id": pa.array([1], pa.int32()), "t6": pa.array(["01:02:03.456789"])})
    stored_in_millis = "column 't6' is TIME\\(6\\), which Paimon stores in milliseconds"
    with pytest.raises(InvalidArgumentError, match=stored_in_millis):
        conform(data, SCHEMA)
    micros = pa.table({"id": pa.array([1], pa.int32()), "t6": pa.array([1_000], pa.time64("us"))})
    assert conform(micros, SCHEMA).column("t6").to_pylist() == [dt.time(0, 0, 0, 1000)]


def test_an_all_null_text_column_fits_a_time_column():
    out = conform(pa.table({"id": pa.array([1], pa.int32()), "t0": pa.nulls(1, pa.string())}), SCHEMA)
    assert out.column("t0").to_pylist() == [None]


@pytest.mark.parametrize("text", ["25:00:00", "noon", "12:61:00"])
def test_text_that_is_not_a_time_of_day_is_refused_naming_the_column(text):
    with pytest.raises(InvalidArgumentError, match="column 't0'"):
        conform(pa.table({"id": pa.array([1], pa.int32()), "t0": [text]}), SCHEMA)


@pytest.mark.parametrize("value", ["12:00:00.0001", "12:00:00.5"])
def test_a_fraction_finer_than_the_column_is_refused_not_truncated(value):
    with pytest.raises(InvalidArgumentError, match="column 't0'"):
        conform(pa.table({"id": pa.array([1], pa.int32()), "t0": [value]}), SCHEMA)


def test_time_values_of_a_coarse_column_are_checked_whatever_their_source():
    ok = conform(pa.table({"id": pa.array([1], pa.int32()), "t0": [dt.time(12, 0, 1)]}), SCHEMA)
    assert ok.column("t0").to_pylist() == [dt.time(12, 0, 1)]
    with pytest.raises(InvalidArgumentError, match=r"TIME\(0\)"):
        conform(pa.table({"id": pa.array([1], pa.int32()), "t0": [dt.time(12, 0, 1, 250_000)]}), SCHEMA)
