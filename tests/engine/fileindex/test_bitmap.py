"""Bitmap file indexes (Paimon's format version 1): exact bytes, row sets, nulls and types."""

from __future__ import annotations

import datetime as dt
import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.fileindex import bitmap
from engine.types import BIGINT, BOOLEAN, DECIMAL, DOUBLE, INT, SMALLINT, STRING, TIMESTAMP, TINYINT


def test_exact_bytes_of_a_small_int_column():
    data = bitmap.build(pa.array([7, 7, None, 9], pa.int32()), INT())
    rows_of_7 = BitMap([0, 1])
    rows_of_7.run_optimize()
    expected = (
        struct.pack(">bii?", 1, 4, 2, True)  # version, rows, distinct values, has null
        + struct.pack(">i", -1 - 2)  # one null, in row 2: no bitmap
        + struct.pack(">ii", 7, 0)  # 7 in rows 0 and 1: a bitmap at body offset 0
        + struct.pack(">ii", 9, -1 - 3)  # 9 in row 3 only
        + rows_of_7.serialize()
    )
    assert data == expected


def test_several_nulls_get_a_bitmap_before_the_values():
    data = bitmap.build(pa.array([None, 5, None, 5], pa.int64()), BIGINT())
    index = bitmap.BitmapIndex.parse(data, BIGINT())
    assert index.has_null and index.null_offset == 0 and index.offsets[5] > 0
    assert index.rows(None) == BitMap([0, 2]) and index.rows(5) == BitMap([1, 3])
    assert index.row_count == 4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.none() | st.sampled_from(["a", "bb", "", "é", "日本"]), max_size=50))
def test_strings_round_trip_to_the_same_row_sets(values):
    data = bitmap.build(pa.array(values, pa.string()), STRING())
    index = bitmap.BitmapIndex.parse(data, STRING())
    assert index.row_count == len(values)
    for v in set(values):
        expected = BitMap(i for i, x in enumerate(values) if x == v)
        assert index.rows(None if v is None else v.encode()) == expected
    assert index.has_null == (None in values)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.none() | st.integers(-128, 127), max_size=60))
def test_tinyint_and_smallint_widths(values):
    for dtype, arrow in ((TINYINT(), pa.int8()), (SMALLINT(), pa.int16())):
        index = bitmap.BitmapIndex.parse(bitmap.build(pa.array(values, arrow), dtype), dtype)
        assert set(index.offsets) == {v for v in values if v is not None}
        for v in index.offsets:
            assert index.rows(v) == BitMap(i for i, x in enumerate(values) if x == v)


def test_floats_key_by_ieee_bits_and_timestamps_by_epoch_unit():
    data = bitmap.build(pa.array([0.0, -0.0, 1.5], pa.float64()), DOUBLE())
    index = bitmap.BitmapIndex.parse(data, DOUBLE())
    assert len(index.offsets) == 3  # 0.0 and -0.0 are different keys, as in Java's HashMap<Double>
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    for precision, unit, key in ((3, "ms", 1704164645678), (6, "us", 1704164645678000)):
        dtype = TIMESTAMP(precision)
        index = bitmap.BitmapIndex.parse(bitmap.build(pa.array([ts], pa.timestamp(unit)), dtype), dtype)
        assert list(index.offsets) == [key]


def test_unsupported_types_are_refused():
    for dtype in (BOOLEAN(), DECIMAL(10, 2)):
        assert not bitmap.supports(dtype)
        with pytest.raises(InvalidArgumentError, match="bitmap"):
            bitmap.build(pa.array([1], pa.int64()), dtype)


def test_other_versions_and_truncation_are_refused():
    data = bitmap.build(pa.array(["x", "y"]), STRING())
    with pytest.raises(CorruptMetadataError, match="version 2"):
        bitmap.BitmapIndex.parse(b"\x02" + data[1:], STRING())
    with pytest.raises(CorruptMetadataError, match="truncated"):
        bitmap.BitmapIndex.parse(data[:12], STRING())


def test_a_unique_column_needs_no_bitmaps():
    n = 10_000
    data = bitmap.build(pa.array(range(n), pa.int32()), INT())
    index = bitmap.BitmapIndex.parse(data, INT())
    assert len(data) == 10 + n * 8 and index.body == b""
    assert index.rows(1234) == BitMap([1234])
