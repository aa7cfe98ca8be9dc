"""Row orders for sorted compaction: lexicographic, z-order and Hilbert, computed with numpy.

``sort_indices(table, order)`` returns the permutation that puts an Arrow table's rows in the
order Paimon's sorted compaction (``order_strategy`` of ``sys.compact``) writes them:

* ``order``: by the columns, lexicographically, nulls first (Spark's ascending sort);
* ``zorder``: each column is mapped to an order-preserving 64-bit word (integers with the sign
  bit flipped, floats by their IEEE bits made monotonic, strings and binaries by their first 8
  bytes, nulls as 0, as Paimon's ``ZOrderByteUtils`` does), and the words' bits are interleaved,
  the first column's bit most significant at every level;
* ``hilbert``: each column becomes a 63-bit coordinate as Paimon's ``HilbertIndexer`` makes it
  (the value itself for integers, the first 8 bytes for strings, ``Long.MAX_VALUE`` for null) and
  the rows are sorted by their position on the Hilbert curve (Skilling's transform, then the same
  interleaving).

Interleaving works on bytes: a 256-entry table spreads a byte's bits ``n`` apart, so each byte
level of the ``n`` columns becomes one integer key and ``numpy.lexsort`` sorts by the levels.
No per-row Python anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError, NoSuchColumnError

STRATEGIES = ("order", "zorder", "hilbert")
_SIGN = np.uint64(1 << 63)
_LOW63 = np.uint64((1 << 63) - 1)


@dataclass(frozen=True, slots=True)
class SortOrder:
    """How a sorted compaction orders rows: a strategy and the columns (picklable)."""

    strategy: str
    columns: tuple[str, ...]


def sort_order(strategy: str, columns: Sequence[str], field_names: Sequence[str],
               partition_keys: Sequence[str] = ()) -> SortOrder:
    """A checked ``SortOrder``: known strategy, existing non-partition columns, two for Hilbert."""
    name = strategy.strip().lower()
    if name not in STRATEGIES:
        raise InvalidArgumentError(
            f"order_strategy must be one of {', '.join(STRATEGIES)} (or none), not {strategy!r}")
    cols = tuple(c.strip() for c in columns if c.strip())
    if not cols:
        raise InvalidArgumentError(f"order_strategy {name!r} needs order_by columns")
    for c in cols:
        if c not in field_names:
            raise NoSuchColumnError(f"order_by column {c!r} is not a column of the table "
                                    f"(columns: {', '.join(field_names)})")
    in_partition = [c for c in cols if c in partition_keys]
    if in_partition:
        raise InvalidArgumentError(
            f"order_by should not contain partition columns (it is meaningless): {', '.join(in_partition)}")
    if len(set(cols)) != len(cols):
        raise InvalidArgumentError(f"order_by names a column twice: {', '.join(cols)}")
    if name == "hilbert" and len(cols) < 2:
        raise InvalidArgumentError("order_strategy 'hilbert' needs at least two order_by columns")
    return SortOrder(name, cols)


def sort_indices(table: pa.Table, order: SortOrder) -> np.ndarray:
    """The permutation of ``table``'s rows in ``order`` (stable: ties keep their input order)."""
    if order.strategy == "order":
        keys = [(c, "ascending", "at_start") for c in order.columns]
        return pc.sort_indices(table, sort_keys=keys).to_numpy()
    columns = [_column(table, c) for c in order.columns]
    if order.strategy == "zorder":
        words = [_zorder_word(col) for col in columns]
    else:
        words = [w << np.uint64(1) for w in _hilbert_transpose([_hilbert_coordinate(c) for c in columns])]
    return _interleaved_argsort(words, table.num_rows)


def _column(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _unsupported(arr: pa.Array) -> InvalidArgumentError:
    return InvalidArgumentError(f"cannot order by a column of type {arr.type} (z-order / hilbert take "
                                "numbers, strings, binaries, booleans, dates and timestamps)")


def _as_int64(arr: pa.Array) -> np.ndarray | None:
    """Integer-like values as int64 (nulls 0; the caller handles them), or None for other types."""
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        storage = pa.int32() if pa.types.is_date32(t) or t == pa.time32("s") or t == pa.time32("ms") \
            else pa.int64()
        return pc.fill_null(arr.view(storage) if arr.type.bit_width == storage.bit_width
                            else arr.cast(storage), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return None


def _float_bits(arr: pa.Array) -> np.ndarray:
    """Doubles' IEEE bits made order-preserving as unsigned words (negative: all bits flipped)."""
    values = pc.fill_null(arr.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False)
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    negative = (bits & _SIGN) != 0
    return np.where(negative, ~bits, bits | _SIGN)


def _prefix8(arr: pa.Array) -> np.ndarray:
    """The first 8 bytes of each string / binary, big-endian, zero-padded (nulls: 0)."""
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    arr = arr.cast(pa.large_binary() if large else pa.binary())
    offset_type = np.dtype(np.int64 if large else np.int32)
    n = len(arr)
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type, count=n + 1,
                            offset=arr.offset * offset_type.itemsize)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    if arr.null_count:
        lengths = np.where(arr.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
    out = np.zeros(n, dtype=np.uint64)
    if not len(data):
        return out
    for k in range(8):  # 8 vectorised steps, one per byte position
        present = lengths > k
        byte = data[np.minimum(starts + k, len(data) - 1)].astype(np.uint64)
        out |= np.where(present, byte, np.uint64(0)) << np.uint64(56 - 8 * k)
    return out


def _valid(arr: pa.Array) -> np.ndarray | None:
    return None if not arr.null_count else arr.is_valid().to_numpy(zero_copy_only=False)


def _zorder_word(arr: pa.Array) -> np.ndarray:
    """One order-preserving 64-bit word per row, as Paimon's z-order byte encoding (nulls: 0)."""
    ints = _as_int64(arr)
    if ints is not None:
        word = ints.view(np.uint64) ^ _SIGN
    elif pa.types.is_floating(arr.type) or pa.types.is_decimal(arr.type):
        word = _float_bits(arr)
    elif pa.types.is_string(arr.type) or pa.types.is_binary(arr.type) or pa.types.is_large_string(arr.type) \
            or pa.types.is_large_binary(arr.type):
        return _prefix8(arr)  # nulls already 0
    else:
        raise _unsupported(arr)
    valid = _valid(arr)
    return word if valid is None else np.where(valid, word, np.uint64(0))


def _hilbert_coordinate(arr: pa.Array) -> np.ndarray:
    """A 63-bit coordinate per row as Paimon's HilbertIndexer takes it (nulls: Long.MAX_VALUE)."""
    ints = _as_int64(arr)
    if ints is not None:
        word = ints.view(np.uint64)
    elif pa.types.is_floating(arr.type) or pa.types.is_decimal(arr.type):
        word = _float_bits(arr) >> np.uint64(1)
    elif pa.types.is_string(arr.type) or pa.types.is_binary(arr.type) or pa.types.is_large_string(arr.type) \
            or pa.types.is_large_binary(arr.type):
        word = _prefix8(arr)
    else:
        raise _unsupported(arr)
    valid = _valid(arr)
    if valid is not None:
        word = np.where(valid, _LOW63, word)
    return word & _LOW63  # 63-bit curve: a negative number wraps above every positive one


def _hilbert_transpose(axes: list[np.ndarray], bits: int = 63) -> list[np.ndarray]:
    """Skilling's AxesToTranspose on ``bits``-bit coordinates: the transposed Hilbert index."""
    x = [a.copy() for a in axes]
    n = len(x)
    m = np.uint64(1 << (bits - 1))
    q = m
    while q > 1:  # inverse undo
        p = q - np.uint64(1)
        for i in range(n):
            set_ = (x[i] & q) != 0
            t = (x[0] ^ x[i]) & p
            x0 = np.where(set_, x[0] ^ p, x[0] ^ t)
            if i:
                x[i] = np.where(set_, x[i], x[i] ^ t)
            x[0] = x0
        q >>= np.uint64(1)
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = m
    while q > 1:
        t = np.where((x[n - 1] & q) != 0, t ^ (q - np.uint64(1)), t)
        q >>= np.uint64(1)
    return [xi ^ t for xi in x]


def _spread_table(n: int) -> np.ndarray:
    """For each byte, its 8 bits placed ``n`` apart (bit 7 highest), as uint64."""
    table = np.zeros(256, dtype=np.uint64)
    values = np.arange(256, dtype=np.uint64)
    for bit in range(8):
        table |= ((values >> np.uint64(bit)) & np.uint64(1)) << np.uint64(bit * n)
    return table


def _interleaved_argsort(words: list[np.ndarray], rows: int) -> np.ndarray:
    """Argsort of the bit-interleaving of ``words`` (word 0's bit first at every level), stable."""
    n = len(words)
    if n == 1:
        return np.argsort(words[0], kind="stable")
    per_level = 8 * n
    levels = []
    if per_level <= 64:
        spread = _spread_table(n)
        for level in range(8):  # byte 0 = most significant
            shift = np.uint64(56 - 8 * level)
            key = np.zeros(rows, dtype=np.uint64)
            for i, w in enumerate(words):
                key |= spread[((w >> shift) & np.uint64(0xFF)).astype(np.intp)] << np.uint64(n - 1 - i)
            levels.append(key)
    else:  # more than 8 columns: one level per bit position, a column's bits side by side
        for bit in range(63, -1, -1):
            key = np.zeros(rows, dtype=np.uint64)
            for i, w in enumerate(words):
                key |= ((w >> np.uint64(bit)) & np.uint64(1)) << np.uint64(n - 1 - i)
            levels.append(key)
    return np.lexsort(levels[::-1])  # lexsort: last key is the primary one
