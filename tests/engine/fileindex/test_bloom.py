"""Bloom-filter file indexes: Paimon's hashes and bit layout, no false negatives, bounded false positives."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptMetadataError
from engine.fileindex.bloom import BloomFilter
from engine.fileindex.hashing import hash64, java_long_values, wang_hash64

M64 = (1 << 64) - 1


def _signed(x: int, bits: int = 64) -> int:
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def java_wang(key: int) -> int:
    """FastHash.getLongHash, written with Java long semantics on Python ints (the reference)."""
    key = _signed((~key) + (key << 21))
    key = _signed(key ^ (key >> 24))
    key = _signed((key + (key << 3)) + (key << 8))
    key = _signed(key ^ (key >> 14))
    key = _signed((key + (key << 2)) + (key << 4))
    key = _signed(key ^ (key >> 28))
    key = _signed(key + (key << 31))
    return key & M64


def java_positions(h: int, k: int, num_bits: int) -> list[int]:
    """BloomFilter64.addHash's bit positions (Java int arithmetic)."""
    h1, h2 = _signed(h, 32), _signed(h >> 32, 32)
    out = []
    for i in range(1, k + 1):
        combined = _signed(h1 + i * h2, 32)
        if combined < 0:
            combined = ~combined
        out.append(combined % num_bits)
    return out


def test_xxhash64_known_vectors():
    assert int(hash64(pa.array([""]))[0]) == 0xEF46DB3751D8E999
    assert int(hash64(pa.array([b"abc"]))[0]) == 0x44BC2CF5AD770999


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=140), max_size=40))
def test_xxhash64_matches_the_reference_for_every_length(values):
    got = hash64(pa.array(values, pa.binary()))
    assert [int(x) for x in got] == [xxhash.xxh64_intdigest(v) for v in values]


def test_strings_hash_their_utf8_bytes_and_nulls_are_left_out():
    values = ["", "é", "日本語", None, "x" * 100]
    got = [int(x) for x in hash64(pa.array(values))]
    assert got == [xxhash.xxh64_intdigest(v.encode()) for v in values if v is not None]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), max_size=30))
def test_wang_hash_matches_java_long_arithmetic(keys):
    got = wang_hash64(np.array(keys, dtype=np.int64))
    assert [int(x) for x in got] == [java_wang(k) for k in keys]


def test_fixed_width_types_hash_the_java_long_paimon_uses():
    ts = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    cases = [
        (pa.array([-1], pa.int8()), -1),
        (pa.array([-2], pa.int32()), -2),
        (pa.array([3.5], pa.float32()), 0x40600000),  # floatToIntBits
        (pa.array([-1.0], pa.float32()), _signed(0xBF800000, 32)),  # sign-extended int bits
        (pa.array([float("nan")], pa.float64()), 0x7FF8000000000000),  # canonical NaN
        (pa.array([dt.date(1970, 1, 11)], pa.date32()), 10),
        (pa.array([dt.time(0, 0, 1, 500000)], pa.time32("ms")), 1500),
        (pa.array([dt.time(0, 0, 1, 500000)], pa.time64("us")), 1500),  # TIME is ms of the day
        (pa.array([ts], pa.timestamp("ms")), int(ts.replace(tzinfo=dt.UTC).timestamp() * 1000)),
        (pa.array([ts], pa.timestamp("us")), int(ts.replace(tzinfo=dt.UTC).timestamp() * 1000) * 1000 + 456),
        (pa.array([-1], pa.timestamp("ns")), -1),  # Timestamp.toMicros floors
    ]
    for array, java_long in cases:
        assert int(java_long_values(array)[0]) == java_long, array
        assert int(hash64(array)[0]) == java_wang(java_long)


def test_sizes_follow_java_bloom_filter64():
    assert BloomFilter.sized(1_000_000, 0.1) == (4792536, 3)
    for items, fpp in ((1, 0.5), (100, 0.01), (12345, 0.03)):
        nb = int(-items * math.log(fpp) / (math.log(2) ** 2))
        bits, k = BloomFilter.sized(items, fpp)
        assert bits == nb + 8 - nb % 8 and bits % 8 == 0
        assert k == max(1, math.floor(bits / items * math.log(2) + 0.5))


def test_bits_are_set_where_java_sets_them():
    values = pa.array([1, 2, 3, 1000, -5], pa.int64())
    f = BloomFilter.build(values, items=50, fpp=0.05)
    expected = bytearray(f.num_bits // 8)
    for h in hash64(values):
        for pos in java_positions(int(h), f.num_hash_functions, f.num_bits):
            expected[pos >> 3] |= 1 << (pos & 7)
    assert f.bits == bytes(expected)
    data = f.serialize()
    assert data[:4] == f.num_hash_functions.to_bytes(4, "big") and len(data) == 4 + f.num_bits // 8
    assert BloomFilter.deserialize(data) == f


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=12) | st.none(), max_size=60))
def test_no_false_negatives(values):
    f = BloomFilter.build(pa.array(values, pa.string()), items=64, fpp=0.1)
    present = [v for v in values if v is not None]
    for v in present:
        assert f.might_contain(pa.array([v]))
    assert not f.might_contain(pa.array([], pa.string()))


def test_false_positive_rate_stays_near_fpp():
    f = BloomFilter.build(pa.array(np.arange(2000), pa.int64()), items=2000, fpp=0.05)
    absent = hash64(pa.array(np.arange(10_000, 30_000), pa.int64()))
    rate = f.might_contain_hashes(absent).mean()
    assert 0 < rate < 0.08  # deterministic hashes: the same rate every run


def test_corrupt_filter_is_refused():
    with pytest.raises(CorruptMetadataError):
        BloomFilter.deserialize(b"\x00\x00")
    with pytest.raises(CorruptMetadataError):
        BloomFilter.deserialize(b"\x00\x00\x00\x00\xff")
