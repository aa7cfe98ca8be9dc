"""Vectorised BinaryRow hash and fixed-bucket assignment for whole Arrow batches.

One job: for every row of a batch of bucket-key columns, compute exactly
``hash_row_bytes(encode_row(row, types))`` of :mod:`engine.meta.binary_row` (Java's
``BinaryRow.hashCode``) and the bucket ``|hash % N|`` -- with numpy over the whole batch, no
Python loop per row. Only loops over fields, over 32-bit words of the row layout, and over
batch chunks exist.

How (invariants that keep it equal to the scalar codec):

* The fixed part (header/null bitset + one 8-byte slot per field) is built as an
  ``(F, n)`` uint32 matrix, one row of the matrix per 32-bit word of the layout, and the murmur
  word mixing runs over it word by word.
* Variable-part chunks (strings/binaries longer than 7 bytes, 16-byte DECIMAL p > 18 regions,
  8-byte TIMESTAMP p > 3 regions -- reserved for nulls too, as Java does) are appended per
  row in field order into one flat byte buffer, each row's part 8-byte aligned; the slot holds
  ``cursor << 32 | size`` with the cursor counted from the row start.
* The variable words are mixed with rows sorted by their word count, so step ``j`` touches only
  the prefix of rows that still have a word ``j``: total work is proportional to the bytes.
* Input normalisation: chunked arrays are combined, dictionaries decoded, strings (string,
  large_string, string_view) and binaries (incl. fixed-size) cast to large_binary, integers,
  floats and decimals cast to the type's exact Arrow type (Arrow rejects overflow/precision
  loss; that surfaces as :class:`InvalidArgumentError`).

Everything is vectorised, DECIMAL p > 18 included (its minimal big-endian byte length is derived
from the 128-bit value with numpy), so there is no per-row fallback path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError
from engine.meta.binary_row import (
    BODY_ADD,
    C1,
    C2,
    FMIX1,
    FMIX2,
    HASH_SEED,
    MAX_INLINE,
    check_atomic_types,
    fixed_part_size,
    is_compact_decimal,
    is_compact_timestamp,
    null_bits_size,
)
from engine.types import DataType, TypeRoot

__all__ = ["bucket_ids", "hash_codes"]

# Rows hashed per pass: bounds the int64 index temporaries of the byte copies.
_CHUNK_ROWS = 1 << 18

_U32 = np.dtype("<u4")
_C1 = np.uint32(C1)
_C2 = np.uint32(C2)
_N = np.uint32(BODY_ADD)
_F1 = np.uint32(FMIX1)
_F2 = np.uint32(FMIX2)
_FIVE = np.uint32(5)

# Bit length of every byte value, for the minimal two's-complement size of big decimals.
_BYTE_BITLEN = np.array([int(v).bit_length() for v in range(256)], dtype=np.int64)

_ARROW_FIXED = {
    TypeRoot.BOOLEAN: pa.bool_(),
    TypeRoot.TINYINT: pa.int8(),
    TypeRoot.SMALLINT: pa.int16(),
    TypeRoot.INT: pa.int32(),
    TypeRoot.BIGINT: pa.int64(),
    TypeRoot.FLOAT: pa.float32(),
    TypeRoot.DOUBLE: pa.float64(),
}
# Nanoseconds per Arrow time unit.
_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


# --------------------------------------------------------------------------------------------
# Murmur word mixing on uint32 arrays
# --------------------------------------------------------------------------------------------
def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """One murmur3 body step for every row: mix word ``k`` into running hash ``h``."""
    k = k * _C1
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= _C2
    h = h ^ k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    h *= _FIVE
    h += _N
    return h


def _fmix(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = h ^ length
    h ^= h >> np.uint32(16)
    h *= _F1
    h ^= h >> np.uint32(13)
    h *= _F2
    h ^= h >> np.uint32(16)
    return h


# --------------------------------------------------------------------------------------------
# Input normalisation
# --------------------------------------------------------------------------------------------
def _cast(arr: pa.Array, target: pa.DataType, i: int, t: DataType) -> pa.Array:
    if arr.type == target:
        return arr
    try:
        return pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidArgumentError(
            f"bucket key column {i}: cannot use Arrow {arr.type} values as {t.root.value}: {exc}"
        ) from exc


def _normalise(col: pa.Array | pa.ChunkedArray, t: DataType, i: int) -> pa.Array:
    """One contiguous Arrow array in the canonical physical type for ``t``."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if not isinstance(col, pa.Array):
        raise InvalidArgumentError(
            f"bucket key column {i}: expected a pyarrow Array, got {type(col).__name__}"
        )
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    root = t.root
    if t.is_string or t.is_binary:
        return _cast(col, pa.large_binary(), i, t)
    if root in _ARROW_FIXED:
        return _cast(col, _ARROW_FIXED[root], i, t)
    if root is TypeRoot.DECIMAL:
        p = t.precision if t.precision is not None else 10
        return _cast(col, pa.decimal128(p, t.scale if t.scale is not None else 0), i, t)
    if root is TypeRoot.DATE:
        return col if pa.types.is_date64(col.type) else _cast(col, pa.date32(), i, t)
    if root is TypeRoot.TIME:
        return col if pa.types.is_time(col.type) else _cast(col, pa.time32("ms"), i, t)
    if root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        # Tz-aware Arrow timestamps store the UTC instant, which is what LTZ hashes.
        return col if pa.types.is_timestamp(col.type) else _cast(col, pa.timestamp("us"), i, t)
    raise InvalidArgumentError(f"bucket key column {i}: unsupported type {root.value}")


def _ints(arr: pa.Array, width: pa.DataType) -> np.ndarray:
    """Values of a fixed-width array reinterpreted as signed ints, nulls as 0."""
    return pc.fill_null(arr.view(width), 0).to_numpy(zero_copy_only=False)


def _u32_pair(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) uint32 words of 64-bit values, little-endian like the slot."""
    words = np.ascontiguousarray(values).astype("<i8", copy=False).view(_U32).reshape(-1, 2)
    return words[:, 0], words[:, 1]


# --------------------------------------------------------------------------------------------
# Per-field slot and variable-part builders
# --------------------------------------------------------------------------------------------
class _Batch:
    """Fixed-part word matrix and pending variable-part writes of one chunk of rows."""

    def __init__(self, n: int, arity: int) -> None:
        self.n = n
        self.header_words = null_bits_size(arity) // 4
        self.fixed_bytes = fixed_part_size(arity)
        self.words = np.zeros((self.fixed_bytes // 4, n), dtype=np.uint32)
        self.var_used = np.zeros(n, dtype=np.int64)  # variable bytes appended so far per row
        # (rows, offset in the row's variable part, bytes) copies done once sizes are final.
        self.matrix_writes: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.ragged_writes: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def set_null_bits(self, i: int, nulls: np.ndarray) -> None:
        bit = i + 8
        self.words[bit // 32] |= nulls.astype(np.uint32) << np.uint32(bit % 32)

    def set_slot(self, i: int, lo: np.ndarray, hi: np.ndarray | None = None) -> None:
        w = self.header_words + 2 * i
        self.words[w] = lo
        if hi is not None:
            self.words[w + 1] = hi

    def cursor(self) -> np.ndarray:
        return (self.var_used + self.fixed_bytes).astype(np.uint32)

    def reserve_fixed(self, rows: np.ndarray, chunk: np.ndarray) -> None:
        """Append an equal-size chunk (``(len(rows), size)`` uint8, size % 8 == 0) to rows."""
        self.matrix_writes.append((rows, self.var_used[rows].copy(), chunk))
        self.var_used[rows] += chunk.shape[1]

    def reserve_ragged(
        self, rows: np.ndarray, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
    ) -> None:
        """Append ``data[starts[r]:starts[r]+lengths[r]]`` (zero-padded to 8) to each row."""
        self.ragged_writes.append((rows, self.var_used[rows].copy(), data, starts, lengths))
        self.var_used[rows] += (lengths + 7) & ~7

    def build_var(self) -> tuple[np.ndarray, np.ndarray]:
        """The flat variable-part buffer (uint8) and each row's start in it."""
        vstart = np.cumsum(self.var_used) - self.var_used
        buf = np.zeros(int(self.var_used.sum()) + 8, dtype=np.uint8)
        for rows, at, chunk in self.matrix_writes:
            dst = (vstart[rows] + at)[:, None] + np.arange(chunk.shape[1])
            buf[dst] = chunk
        for rows, at, data, starts, lengths in self.ragged_writes:
            _ragged_copy(buf, vstart[rows] + at, data, starts, lengths)
        return buf, vstart


def _ragged_copy(
    dst: np.ndarray, dst_starts: np.ndarray, src: np.ndarray, src_starts: np.ndarray, lengths: np.ndarray
) -> None:
    """``dst[dst_starts[r]:+lengths[r]] = src[src_starts[r]:+lengths[r]]`` for all r at once."""
    total = int(lengths.sum())
    if total == 0:
        return
    seg = np.cumsum(lengths) - lengths  # where each segment starts in the concatenation
    pos = np.arange(total, dtype=np.int64)
    dst[np.repeat(dst_starts - seg, lengths) + pos] = src[np.repeat(src_starts - seg, lengths) + pos]


def _add_bytes(b: _Batch, i: int, arr: pa.Array, valid: np.ndarray) -> None:
    """STRING/BINARY: inline (<= 7 bytes) in the slot, else a reference to the variable part."""
    n = b.n
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype="<i8")[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    lengths = np.where(valid, offsets[1:] - starts, 0)
    short = valid & (lengths <= MAX_INLINE)
    long_rows = np.flatnonzero(valid & (lengths > MAX_INLINE))
    lo = np.zeros(n, dtype=np.uint32)
    hi = np.zeros(n, dtype=np.uint32)
    rows = np.flatnonzero(short)
    if len(rows):
        slot = np.zeros((len(rows), 8), dtype=np.uint8)
        if len(data):
            idx = np.minimum(starts[rows, None] + np.arange(MAX_INLINE), len(data) - 1)
            keep = np.arange(MAX_INLINE) < lengths[rows, None]
            slot[:, :MAX_INLINE] = np.where(keep, data[idx], 0)
        slot[:, 7] = 0x80 | lengths[rows]
        pair = slot.view(_U32)
        lo[rows], hi[rows] = pair[:, 0], pair[:, 1]
    if len(long_rows):
        lo[long_rows] = lengths[long_rows]
        hi[long_rows] = b.cursor()[long_rows]
        b.reserve_ragged(long_rows, data, starts[long_rows], lengths[long_rows])
    b.set_slot(i, lo, hi)


def _add_wide_decimal(b: _Batch, i: int, arr: pa.Array, valid: np.ndarray) -> None:
    """DECIMAL p > 18: minimal big-endian two's complement in a 16-byte variable region."""
    n = b.n
    raw = np.frombuffer(arr.buffers()[1], dtype="<u8").reshape(-1, 2)[arr.offset : arr.offset + n]
    be = np.empty((n, 16), dtype=np.uint8)
    be[:, :8] = raw[:, 1].astype(">u8").view(np.uint8).reshape(n, 8)
    be[:, 8:] = raw[:, 0].astype(">u8").view(np.uint8).reshape(n, 8)
    negative = (raw[:, 1] >> np.uint64(63)).astype(bool)
    # BigInteger.toByteArray length = bitLength // 8 + 1, bitLength measured on v or ~v.
    mag = np.where(negative[:, None], ~be, be)
    nonzero = mag != 0
    first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), 16)
    lead = mag[np.arange(n), np.minimum(first, 15)]
    bitlen = np.where(first == 16, 0, (15 - first) * 8 + _BYTE_BITLEN[lead])
    nbytes = bitlen // 8 + 1
    col = np.arange(16)
    src = np.minimum((16 - nbytes)[:, None] + col, 15)
    chunk = np.where((col < nbytes[:, None]) & valid[:, None], np.take_along_axis(be, src, 1), 0)
    b.set_slot(i, np.where(valid, nbytes, 0).astype(np.uint32), b.cursor())
    b.reserve_fixed(np.arange(n), chunk.astype(np.uint8))


def _timestamp_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(epoch millis, nano of milli) with floor semantics, from any Arrow timestamp unit."""
    per = _UNIT_NANOS[arr.type.unit]
    v = _ints(arr, pa.int64()).astype(np.int64)
    if per >= 1_000_000:
        return v * (per // 1_000_000), np.zeros(len(v), dtype=np.int64)
    div = 1_000_000 // per
    millis, rest = np.divmod(v, div)
    return millis, rest * per


def _add_field(b: _Batch, i: int, arr: pa.Array, t: DataType) -> None:
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else np.zeros(b.n, bool)
    valid = ~nulls
    if arr.null_count:
        b.set_null_bits(i, nulls)
    root = t.root
    if t.is_string or t.is_binary:
        _add_bytes(b, i, arr, valid)
    elif root is TypeRoot.BOOLEAN:
        b.set_slot(i, pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint32))
    elif root is TypeRoot.TINYINT:
        b.set_slot(i, _ints(arr, pa.int8()).view(np.uint8).astype(np.uint32))
    elif root is TypeRoot.SMALLINT:
        b.set_slot(i, _ints(arr, pa.int16()).view(np.uint16).astype(np.uint32))
    elif root is TypeRoot.INT:
        b.set_slot(i, _ints(arr, pa.int32()).view(np.uint32))
    elif root is TypeRoot.FLOAT:
        b.set_slot(i, _ints(arr, pa.int32()).view(np.uint32))
    elif root in (TypeRoot.BIGINT, TypeRoot.DOUBLE):
        b.set_slot(i, *_u32_pair(_ints(arr, pa.int64())))
    elif root is TypeRoot.DATE:
        if pa.types.is_date64(arr.type):
            days = np.floor_divide(_ints(arr, pa.int64()), 86_400_000).astype(np.int32)
        else:
            days = _ints(arr, pa.int32())
        b.set_slot(i, days.view(np.uint32))
    elif root is TypeRoot.TIME:
        width = pa.int32() if arr.type.bit_width == 32 else pa.int64()
        per = _UNIT_NANOS[arr.type.unit]
        v = _ints(arr, width).astype(np.int64)
        millis = v * (per // 1_000_000) if per >= 1_000_000 else v // (1_000_000 // per)
        b.set_slot(i, millis.astype(np.int32).view(np.uint32))
    elif root is TypeRoot.DECIMAL:
        if is_compact_decimal(t):
            raw = np.frombuffer(arr.buffers()[1], dtype="<u8").reshape(-1, 2)
            low = raw[arr.offset : arr.offset + b.n, 0].view(np.int64)
            b.set_slot(i, *_u32_pair(np.where(valid, low, 0)))
        else:
            _add_wide_decimal(b, i, arr, valid)
    elif root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        millis, nano = _timestamp_parts(arr)
        millis = np.where(valid, millis, 0)
        if is_compact_timestamp(t):
            b.set_slot(i, *_u32_pair(millis))
        else:
            # Java reserves the 8-byte millis region for nulls too (zeros, cursor kept).
            b.set_slot(i, np.where(valid, nano, 0).astype(np.uint32), b.cursor())
            chunk = millis.astype("<i8").view(np.uint8).reshape(b.n, 8)
            b.reserve_fixed(np.arange(b.n), chunk)
    else:  # pragma: no cover - check_atomic_types rejects everything else
        raise InvalidArgumentError(f"bucket key column {i}: unsupported type {root.value}")


# --------------------------------------------------------------------------------------------
# Hashing
# --------------------------------------------------------------------------------------------
def _hash_chunk(cols: Sequence[pa.Array], types: Sequence[DataType], n: int) -> np.ndarray:
    b = _Batch(n, len(types))
    for i, (arr, t) in enumerate(zip(cols, types, strict=True)):
        _add_field(b, i, arr, t)
    h = np.full(n, HASH_SEED, dtype=np.uint32)
    for word in b.words:
        h = _mix(h, word)
    var_words = b.var_used >> 2
    if var_words.any():
        buf, vstart = b.build_var()
        words = buf.view(_U32)
        first = vstart >> 2
        if (var_words == var_words[0]).all():
            # Same variable size everywhere: a plain (n, w) matrix, no sorting needed.
            w = int(var_words[0])
            mat = words[: n * w].reshape(n, w)
            for j in range(w):
                h = _mix(h, mat[:, j])
        else:
            # Longest rows first, so rows still having word j are always a prefix.
            order = np.argsort(-var_words, kind="stable")
            counts = var_words[order]
            first = first[order]
            active = np.searchsorted(-counts, -np.arange(int(counts[0])), side="left")
            hs = h[order]
            for j, a in enumerate(active.tolist()):
                hs[:a] = _mix(hs[:a], words[first[:a] + j])
            h[order] = hs
    h = _fmix(h, (b.var_used + b.fixed_bytes).astype(np.uint32))
    return h.view(np.int32)


def hash_codes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]) -> np.ndarray:
    """Java ``BinaryRow.hashCode`` of the row formed by ``columns`` at every row index.

    Args:
        columns: The bucket-key columns, all of one length (Array or ChunkedArray; strings may
            be string, large_string, string_view or dictionary-encoded).
        types: The atomic Paimon type of each column.

    Returns:
        An int32 array with one hash per row, equal to
        ``hash_row_bytes(encode_row(row, types))``.

    Raises:
        InvalidArgumentError: Column/type count mismatch, unequal lengths, a nested type, or
            values the type cannot hold.
    """
    if len(columns) != len(types):
        raise InvalidArgumentError(f"{len(columns)} key columns but {len(types)} key types")
    check_atomic_types(types)
    cols = [_normalise(c, t, i) for i, (c, t) in enumerate(zip(columns, types, strict=True))]
    lengths = {len(c) for c in cols}
    if len(lengths) > 1:
        raise InvalidArgumentError(f"bucket key columns have different lengths {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    out = np.empty(n, dtype=np.int32)
    for start in range(0, n, _CHUNK_ROWS):
        size = min(_CHUNK_ROWS, n - start)
        out[start : start + size] = _hash_chunk([c.slice(start, size) for c in cols], types, size)
    return out


def bucket_ids(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], num_buckets: int
) -> np.ndarray:
    """Fixed bucket of every row: Java's ``Math.abs(hash % num_buckets)``.

    Args:
        columns: The bucket-key columns (see :func:`hash_codes`).
        types: Their Paimon types.
        num_buckets: The table's ``bucket`` option, > 0.

    Returns:
        An int32 array with values in ``[0, num_buckets)``.

    Raises:
        InvalidArgumentError: ``num_buckets`` is not positive, or see :func:`hash_codes`.
    """
    if num_buckets <= 0:
        raise InvalidArgumentError(f"num_buckets must be positive, got {num_buckets}")
    h = hash_codes(columns, types).astype(np.int64)
    return (np.abs(h) % num_buckets).astype(np.int32)
