"""Paimon's 64-bit value hashes for bloom-filter file indexes, vectorised over Arrow arrays.

Paimon (``FastHash``) hashes strings and binaries with xxHash64 (seed 0) of their UTF-8 / raw
bytes and every fixed-width type with Thomas Wang's 64-bit integer hash of its Java ``long``
value: integers sign-extended, FLOAT / DOUBLE by their IEEE bits (``floatToIntBits`` sign-extended,
``doubleToLongBits``; NaN canonical), DATE as days, TIME as milliseconds of the day and timestamps as
epoch milliseconds (precision <= 3) or microseconds (above). Both hashes run as numpy passes over
whole arrays: xxHash64 walks the 32-byte stripes of every value in lock step, so the number of
Python steps depends on the longest value, never on the number of values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_EIGHT = np.arange(8, dtype=np.int64)
_FOUR = np.arange(4, dtype=np.int64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def _read64(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(data[pos[:, None] + _EIGHT]).view("<u8").reshape(-1)


def _read32(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(data[pos[:, None] + _FOUR]).view("<u4").reshape(-1).astype(np.uint64)


def xxhash64(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """xxHash64 (seed 0) of every value ``data[offsets[i]:offsets[i+1]]``, as uint64."""
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    n = len(lengths)
    h = np.full(n, _P5, dtype=np.uint64)
    with np.errstate(over="ignore"):
        stripes = lengths // 32
        big = np.flatnonzero(stripes > 0)
        if len(big):
            v1 = np.full(len(big), _P1 + _P2, dtype=np.uint64)
            v2 = np.full(len(big), _P2, dtype=np.uint64)
            v3 = np.zeros(len(big), dtype=np.uint64)
            v4 = np.full(len(big), np.uint64(0) - _P1, dtype=np.uint64)
            big_starts, big_stripes = starts[big], stripes[big]
            for s in range(int(big_stripes.max())):
                sel = np.flatnonzero(big_stripes > s)
                base = big_starts[sel] + s * 32
                v1[sel] = _round(v1[sel], _read64(data, base))
                v2[sel] = _round(v2[sel], _read64(data, base + 8))
                v3[sel] = _round(v3[sel], _read64(data, base + 16))
                v4[sel] = _round(v4[sel], _read64(data, base + 24))
            acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            for v in (v1, v2, v3, v4):
                acc = (acc ^ _round(np.zeros_like(v), v)) * _P1 + _P4
            h[big] = acc
        h += lengths.astype(np.uint64)
        pos = starts + stripes * 32
        rem = lengths - stripes * 32
        for _ in range(3):  # up to three 8-byte words after the stripes
            sel = np.flatnonzero(rem >= 8)
            if not len(sel):
                break
            k1 = _round(np.zeros(len(sel), dtype=np.uint64), _read64(data, pos[sel]))
            h[sel] = _rotl(h[sel] ^ k1, 27) * _P1 + _P4
            pos[sel] += 8
            rem[sel] -= 8
        sel = np.flatnonzero(rem >= 4)
        if len(sel):
            h[sel] = _rotl(h[sel] ^ (_read32(data, pos[sel]) * _P1), 23) * _P2 + _P3
            pos[sel] += 4
            rem[sel] -= 4
        for _ in range(3):
            sel = np.flatnonzero(rem >= 1)
            if not len(sel):
                break
            h[sel] = _rotl(h[sel] ^ (data[pos[sel]].astype(np.uint64) * _P5), 11) * _P1
            pos[sel] += 1
            rem[sel] -= 1
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h


def wang_hash64(keys: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash of Java ``long`` values (int64 in, uint64 out)."""
    key = keys.astype(np.int64, copy=True)
    with np.errstate(over="ignore"):
        key = (~key) + (key << np.int64(21))
        key = key ^ (key >> np.int64(24))
        key = (key + (key << np.int64(3))) + (key << np.int64(8))
        key = key ^ (key >> np.int64(14))
        key = (key + (key << np.int64(2))) + (key << np.int64(4))
        key = key ^ (key >> np.int64(28))
        key = key + (key << np.int64(31))
    return key.view(np.uint64)


def binary_buffers(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets) of a null-free string/binary array."""
    if pa.types.is_string(array.type):
        array = array.cast(pa.binary())
    elif pa.types.is_large_string(array.type):
        array = array.cast(pa.large_binary())
    offsets_buf, data_buf = array.buffers()[1], array.buffers()[2]
    width = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    offsets = np.frombuffer(offsets_buf, dtype=width)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return data, offsets.astype(np.int64)


def java_long_values(array: pa.Array) -> np.ndarray:
    """The Java ``long`` Paimon derives from each value of a null-free fixed-width array.

    Raises:
        InvalidArgumentError: the Arrow type has no Paimon ``long`` form here (boolean, decimal, ...).
    """
    t = array.type
    if pa.types.is_integer(t):
        return array.to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_float32(t):
        values = array.to_numpy(zero_copy_only=False).astype(np.float32)
        bits = np.where(np.isnan(values), np.int32(0x7FC00000), values.view(np.int32))
        return bits.astype(np.int64)  # floatToIntBits, sign-extended to long
    if pa.types.is_float64(t):
        values = array.to_numpy(zero_copy_only=False).astype(np.float64)
        bits = values.view(np.int64)
        return np.where(np.isnan(values), np.int64(0x7FF8000000000000), bits)
    if pa.types.is_date32(t):
        return array.cast(pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_time32(t):
        return array.cast(pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64)  # ms of day
    if pa.types.is_time64(t):
        micros = array.cast(pa.time64("us")).cast(pa.int64()).to_numpy(zero_copy_only=False)
        return micros // 1000
    if pa.types.is_timestamp(t):
        raw = array.cast(pa.int64()).to_numpy(zero_copy_only=False)
        if t.unit == "s":
            return raw * 1000
        if t.unit == "ns":
            return raw // 1000
        return raw  # ms for precision <= 3, us for 4..6: what Paimon hashes
    raise InvalidArgumentError(f"no Paimon file-index hash for Arrow type {t}")


def hash64(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Paimon's ``FastHash`` of every non-null value of ``array`` (uint64, nulls left out)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count:
        array = pc.drop_null(array)
    t = array.type
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) \
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        if pa.types.is_fixed_size_binary(t):
            array = array.cast(pa.binary())
        data, offsets = binary_buffers(array)
        return xxhash64(data, offsets)
    return wang_hash64(java_long_values(array))
