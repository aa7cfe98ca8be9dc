"""Tests of the scalar BinaryRow codec and hash against the Java-derived vectors of §7/§9."""

from __future__ import annotations

import datetime as dt
import decimal
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.meta.binary_row import (
    EMPTY_ROW,
    bucket_of,
    decode_row,
    deserialize_row,
    encode_row,
    hash_row_bytes,
    row_arity,
    serialize_row,
)
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
    MAP,
    ROW,
    SMALLINT,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    VARBINARY,
    VARCHAR,
    DataField,
    DataType,
)

D = decimal.Decimal
ROW_74_TYPES = [INT(), STRING(), BIGINT()]
ROW_74_HEX = "00 04 00 00 00 00 00 00 01 00 00 00 00 00 00 00 61 62 63 00 00 00 00 83 00 00 00 00 00 00 00 00"


# ---------------------------------------------------------------------------------------------
# Exact bytes (§7.4, §7.5)
# ---------------------------------------------------------------------------------------------
def test_worked_example_bytes() -> None:
    row = encode_row([1, "abc", None], ROW_74_TYPES)
    assert row == bytes.fromhex(ROW_74_HEX)
    assert decode_row(row, ROW_74_TYPES) == (1, "abc", None)


def test_worked_example_long_string() -> None:
    row = encode_row([1, "hello world!", None], ROW_74_TYPES)
    assert len(row) == 48
    assert row[16:24] == bytes.fromhex("0c 00 00 00 20 00 00 00")
    assert row[32:44] == b"hello world!"
    assert row[44:48] == bytes(4)
    assert decode_row(row, ROW_74_TYPES) == (1, "hello world!", None)


def test_serialized_form_and_empty_row() -> None:
    ser = serialize_row([1, "abc", None], ROW_74_TYPES)
    assert ser == bytes.fromhex("00 00 00 03 " + ROW_74_HEX)
    assert len(ser) == 36
    assert row_arity(ser) == 3
    assert deserialize_row(ser, ROW_74_TYPES) == (1, "abc", None)
    assert EMPTY_ROW == bytes(12)
    assert serialize_row([], []) == EMPTY_ROW
    assert encode_row([], []) == bytes(8)
    assert deserialize_row(EMPTY_ROW, []) == ()
    assert row_arity(EMPTY_ROW) == 0


def test_wide_null_bitset() -> None:
    types = [INT()] * 57
    values = [None if i in (0, 56) else i for i in range(57)]
    row = encode_row(values, types)
    assert len(row) == 16 + 57 * 8
    # field 56 -> bit 64 -> byte 8, bit 0; field 0 -> byte 1 bit 0
    assert row[1] == 0x01 and row[8] == 0x01
    assert decode_row(row, types) == tuple(values)
    assert len(encode_row([1] * 56, [INT()] * 56)) == 8 + 56 * 8


def test_fixed_slot_layouts() -> None:
    types = [BOOLEAN(), TINYINT(), SMALLINT(), INT(), FLOAT(), DOUBLE(), DATE(), TIME(), BIGINT()]
    values = [True, -1, -2, -3, 1.5, -2.25, dt.date(1970, 1, 2), dt.time(0, 0, 1, 5000), -4]
    row = encode_row(values, types)
    slot = lambda i: row[8 + 8 * i : 16 + 8 * i]  # noqa: E731
    assert slot(0) == b"\x01" + bytes(7)
    assert slot(1) == b"\xff" + bytes(7)  # a byte, not sign-extended
    assert slot(2) == b"\xfe\xff" + bytes(6)
    assert slot(3) == b"\xfd\xff\xff\xff" + bytes(4)
    assert slot(4) == struct.pack("<f", 1.5) + bytes(4)
    assert slot(5) == struct.pack("<d", -2.25)
    assert slot(6) == struct.pack("<i", 1) + bytes(4)
    assert slot(7) == struct.pack("<i", 1005) + bytes(4)
    assert slot(8) == struct.pack("<q", -4)
    assert decode_row(row, types) == (
        True,
        -1,
        -2,
        -3,
        1.5,
        -2.25,
        dt.date(1970, 1, 2),
        dt.time(0, 0, 1, 5000),
        -4,
    )


def test_inline_boundary_seven_vs_eight_bytes() -> None:
    seven = encode_row(["abcdefg"], [STRING()])
    assert len(seven) == 16 and seven[15] == 0x87 and seven[8:15] == b"abcdefg"
    eight = encode_row([b"abcdefgh"], [BYTES()])
    assert len(eight) == 24
    assert eight[8:16] == struct.pack("<Q", (16 << 32) | 8)
    assert eight[16:] == b"abcdefgh"


def test_wide_decimal_layout_and_null_reservation() -> None:
    t = DECIMAL(25, 2)
    row = encode_row([D("-1.00"), None, D("0.00")], [t, t, t])
    fixed = 8 + 3 * 8
    assert len(row) == fixed + 48
    assert row[8:16] == struct.pack("<Q", (fixed << 32) | 1)  # -100 -> 1 byte 0x9c
    assert row[fixed : fixed + 16] == b"\x9c" + bytes(15)
    # null: null bit set, cursor kept, 16 zero bytes reserved
    assert row[1] == 0x02
    assert row[16:24] == struct.pack("<Q", (fixed + 16) << 32)
    assert row[fixed + 16 : fixed + 32] == bytes(16)
    assert row[24:32] == struct.pack("<Q", ((fixed + 32) << 32) | 1)
    assert decode_row(row, [t, t, t]) == (D("-1.00"), None, D("0.00"))


def test_wide_timestamp_layout_and_null_reservation() -> None:
    t = TIMESTAMP(6)
    value = dt.datetime(1969, 12, 31, 23, 59, 59, 999_999)  # millis -1, nano of milli 999000
    row = encode_row([None, value], [t, t])
    fixed = 8 + 16
    assert row[8:16] == struct.pack("<Q", fixed << 32)
    assert row[fixed : fixed + 8] == bytes(8)
    assert row[16:24] == struct.pack("<Q", ((fixed + 8) << 32) | 999_000)
    assert row[fixed + 8 :] == struct.pack("<q", -1)
    assert decode_row(row, [t, t]) == (None, value)


def test_compact_timestamp_floors_to_millis() -> None:
    row = encode_row([dt.datetime(1969, 12, 31, 23, 59, 59, 999_999)], [TIMESTAMP(3)])
    assert row[8:16] == struct.pack("<q", -1)
    assert decode_row(row, [TIMESTAMP(3)]) == (dt.datetime(1969, 12, 31, 23, 59, 59, 999_000),)


def test_ltz_is_utc_instant() -> None:
    t = TIMESTAMP_LTZ(3)
    cet = dt.timezone(dt.timedelta(hours=1))
    aware = dt.datetime(2024, 1, 1, 1, 0, tzinfo=cet)
    naive_utc = dt.datetime(2024, 1, 1, 0, 0)
    assert encode_row([aware], [t]) == encode_row([naive_utc], [t])
    assert encode_row([aware], [t]) == encode_row([naive_utc], [TIMESTAMP(3)])
    (back,) = decode_row(encode_row([aware], [t]), [t])
    assert back == aware and back.tzinfo == dt.UTC


def test_nanosecond_timestamp_roundtrip() -> None:
    t = TIMESTAMP(9)
    value = np.datetime64(1_700_000_000_123_456_789, "ns")
    row = encode_row([value], [t])
    assert row[8:16] == struct.pack("<Q", (16 << 32) | 456_789)
    (back,) = decode_row(row, [t])
    assert back == value


def test_decimal_rounding_and_overflow() -> None:
    t = DECIMAL(5, 2)
    assert decode_row(encode_row([D("1.005")], [t]), [t]) == (D("1.01"),)
    assert decode_row(encode_row([D("-1.005")], [t]), [t]) == (D("-1.01"),)
    assert decode_row(encode_row([7], [t]), [t]) == (D("7.00"),)
    with pytest.raises(InvalidArgumentError):
        encode_row([D("1000.00")], [t])
    with pytest.raises(InvalidArgumentError):
        encode_row([D("NaN")], [t])


# ---------------------------------------------------------------------------------------------
# Hash vectors (§7.6, §9.1)
# ---------------------------------------------------------------------------------------------
HASH_VECTORS = [
    (["hello"], [STRING()], 243722546),
    (["hello-java"], [STRING()], -201703277),
    (["hello-java", 42], [STRING(), BIGINT()], -2066620165),
    ([D("12345.67")], [DECIMAL(10, 2)], 754928256),
    ([D("12345678901234567890123.45")], [DECIMAL(25, 2)], 1388205002),
    ([dt.datetime(2026, 1, 2, 3, 4, 5, 123000)], [TIMESTAMP(3)], -1766746798),
    ([dt.datetime(2026, 1, 2, 3, 4, 5, 123456)], [TIMESTAMP(6)], 1245041971),
    ([bytes([0, 1, 0xFF, 0x7F])], [BYTES()], 586821318),
    ([bytes(range(10))], [BYTES()], 1822312655),
    ([1, "abc", None], ROW_74_TYPES, -549791434),
]


@pytest.mark.parametrize(("values", "types", "expected"), HASH_VECTORS)
def test_hash_vectors(values: list[object], types: list[DataType], expected: int) -> None:
    assert hash_row_bytes(encode_row(values, types)) == expected


def test_bucket_examples() -> None:
    assert bucket_of(["hello-java"], [STRING()], 4) == 1
    assert bucket_of([1, "abc", None], ROW_74_TYPES, 4) == 2
    assert bucket_of(["hello-java"], [STRING()], 1) == 0


def test_hash_rejects_odd_length_and_bucket_rejects_bad_count() -> None:
    with pytest.raises(InvalidArgumentError):
        hash_row_bytes(b"\x00" * 6)
    with pytest.raises(InvalidArgumentError):
        bucket_of([1], [INT()], 0)


# ---------------------------------------------------------------------------------------------
# Bad input and corrupt bytes
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "nested",
    [ARRAY(INT()), MAP(STRING(), INT()), ROW([DataField(0, "a", INT())])],
)
def test_nested_types_rejected(nested: DataType) -> None:
    with pytest.raises(InvalidArgumentError):
        encode_row([None], [nested])
    with pytest.raises(InvalidArgumentError):
        decode_row(bytes(16), [nested])


@pytest.mark.parametrize(
    ("value", "t"),
    [
        (128, TINYINT()),
        (2**31, INT()),
        ("x", INT()),
        (1, STRING()),
        ("x", BYTES()),
        (1.5, DATE()),
        ("12:00", TIME()),
        ("2020-01-01", TIMESTAMP()),
        (2, BOOLEAN()),
        ("\ud800", STRING()),
        (1e300, FLOAT()),
    ],
)
def test_bad_values_rejected(value: object, t: DataType) -> None:
    with pytest.raises(InvalidArgumentError):
        encode_row([value], [t])


def test_length_mismatch_rejected() -> None:
    with pytest.raises(InvalidArgumentError):
        encode_row([1, 2], [INT()])


def test_deserialize_arity_rules() -> None:
    ser = serialize_row([1, "abc"], [INT(), STRING()])
    # fewer fields than types: exactly arity values come back
    assert deserialize_row(ser, [INT(), STRING(), BIGINT()]) == (1, "abc")
    with pytest.raises(CorruptMetadataError):
        deserialize_row(ser, [INT()])
    with pytest.raises(CorruptMetadataError):
        row_arity(b"\x00\x00")
    with pytest.raises(CorruptMetadataError):
        row_arity(b"\xff\xff\xff\xff")


def test_truncated_long_string_is_corrupt() -> None:
    ser = serialize_row(["hello world!"], [STRING()])
    for cut in range(len(ser) - 4):  # trailing padding bytes may be cut harmlessly
        with pytest.raises(CorruptMetadataError):
            deserialize_row(ser[:cut], [STRING()])


def test_decode_at_offset() -> None:
    row = encode_row([1, "hello world!", None], ROW_74_TYPES)
    assert decode_row(b"junk" * 3 + row, ROW_74_TYPES, offset=12) == (1, "hello world!", None)
    assert decode_row(memoryview(b"zz" + row)[2:], ROW_74_TYPES) == (1, "hello world!", None)


# ---------------------------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------------------------
_EPOCH = dt.datetime(1970, 1, 1)


def _decimal_field(draw: st.DrawFn) -> tuple[DataType, object]:
    p = draw(st.integers(1, 38))
    s = draw(st.integers(0, p))
    unscaled = draw(st.integers(-(10**p) + 1, 10**p - 1))
    digits = decimal.Decimal(abs(unscaled)).as_tuple().digits
    return DECIMAL(p, s), decimal.Decimal((int(unscaled < 0), digits, -s))


def _timestamp_field(draw: st.DrawFn) -> tuple[DataType, object]:
    p = draw(st.integers(0, 9))
    ltz = draw(st.booleans())
    t = TIMESTAMP_LTZ(p) if ltz else TIMESTAMP(p)
    if p > 6 and draw(st.booleans()):
        nanos = draw(st.integers(-(2**62), 2**62)) // 1000 * 1000 + draw(st.integers(1, 999))
        return t, np.datetime64(nanos, "ns")
    value = draw(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)))
    if p <= 3:
        value = value.replace(microsecond=value.microsecond // 1000 * 1000)
    if ltz:
        value = value.replace(tzinfo=dt.UTC)
    return t, value


@st.composite
def atomic_field(draw: st.DrawFn) -> tuple[DataType, object]:
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
                "str",
                "char",
                "bin",
                "date",
                "time",
                "ts",
            ]
        )
    )
    if kind == "dec":
        return _decimal_field(draw)
    if kind == "ts":
        return _timestamp_field(draw)
    simple = {
        "bool": (BOOLEAN(), st.booleans()),
        "i8": (TINYINT(), st.integers(-(2**7), 2**7 - 1)),
        "i16": (SMALLINT(), st.integers(-(2**15), 2**15 - 1)),
        "i32": (INT(), st.integers(-(2**31), 2**31 - 1)),
        "i64": (BIGINT(), st.integers(-(2**63), 2**63 - 1)),
        "f32": (FLOAT(), st.floats(width=32, allow_nan=False)),
        "f64": (DOUBLE(), st.floats(allow_nan=False)),
        "str": (VARCHAR(100), st.text(max_size=40)),
        "char": (CHAR(10), st.text(alphabet="aé€😀", max_size=10)),
        "bin": (draw(st.sampled_from([BINARY(8), VARBINARY(50)])), st.binary(max_size=40)),
        "date": (DATE(), st.dates()),
        "time": (TIME(3), st.times().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))),
    }
    t, values = simple[kind]
    return t, draw(values)


@st.composite
def rows(draw: st.DrawFn) -> tuple[list[DataType], list[object]]:
    fields = draw(st.lists(atomic_field(), min_size=0, max_size=12))
    nulls = draw(st.lists(st.booleans(), min_size=len(fields), max_size=len(fields)))
    types = [t for t, _ in fields]
    values = [None if null else v for (_, v), null in zip(fields, nulls, strict=True)]
    return types, values


@settings(max_examples=100, deadline=None)
@given(rows())
def test_roundtrip_random_rows(row: tuple[list[DataType], list[object]]) -> None:
    types, values = row
    data = encode_row(values, types)
    assert len(data) % 8 == 0
    assert decode_row(data, types) == tuple(values)
    ser = serialize_row(values, types)
    assert row_arity(ser) == len(types)
    assert deserialize_row(ser, types) == tuple(values)
    # canonical: re-encoding the decoded values yields identical bytes
    assert encode_row(list(decode_row(data, types)), types) == data


@settings(max_examples=60, deadline=None)
@given(rows(), st.data())
def test_garbled_bytes_only_raise_corrupt(
    row: tuple[list[DataType], list[object]], data: st.DataObject
) -> None:
    types, values = row
    ser = bytearray(serialize_row(values, types))
    if data.draw(st.booleans()):
        del ser[data.draw(st.integers(0, len(ser))) :]
    elif len(ser) > 4:
        pos = data.draw(st.integers(4, len(ser) - 1))
        ser[pos] = data.draw(st.integers(0, 255))
    try:
        deserialize_row(bytes(ser), types)
    except CorruptMetadataError:
        pass
