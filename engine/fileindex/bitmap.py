"""Paimon's bitmap file index, format version 1 (``BitmapFileIndex`` / ``BitmapFileIndexMeta``).

Layout (all integers big-endian): version byte (1), row count, number of distinct non-null
values, has-null byte, the null bitmap's offset (when there are nulls), then per distinct value its
encoded value and offset, then the body of serialized Roaring bitmaps (portable format, run
optimised). A value found in one row only has no bitmap: its offset is ``-1 - row``; otherwise the
offset is relative to the body start. Values encode by Paimon type: CHAR/VARCHAR as a 4-byte length
and UTF-8 bytes, TINYINT 1 byte, SMALLINT 2, INT / DATE / TIME (ms) 4, BIGINT and timestamps (ms
for precision <= 3, else µs) 8, FLOAT / DOUBLE by their IEEE bits. BOOLEAN is refused: Paimon
0.9's writer cannot encode it (it casts the value to a byte and fails).

Building groups a whole column by value in numpy (one stable sort; not ``np.unique``, which is
many times slower on this numpy); the only Python loop is over the distinct values that occur in
more than one row (one Roaring bitmap each, as the format needs).
"""

from __future__ import annotations

import array
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.fileindex.hashing import binary_buffers, java_long_values
from engine.types import DataType, TypeRoot

VERSION_1 = 1
_FOUR = np.arange(4, dtype=np.int64)
TYPE_NAME = "bitmap"

# Paimon type → width of the encoded value in bytes (0 = length-prefixed string).
_WIDTH = {
    TypeRoot.CHAR: 0, TypeRoot.VARCHAR: 0, TypeRoot.TINYINT: 1, TypeRoot.SMALLINT: 2,
    TypeRoot.INT: 4, TypeRoot.DATE: 4, TypeRoot.TIME: 4, TypeRoot.FLOAT: 4, TypeRoot.BIGINT: 8,
    TypeRoot.TIMESTAMP: 8, TypeRoot.TIMESTAMP_LTZ: 8, TypeRoot.DOUBLE: 8,
}  # fmt: skip


def supports(dtype: DataType) -> bool:
    return dtype.root in _WIDTH


def _width(dtype: DataType) -> int:
    try:
        return _WIDTH[dtype.root]
    except KeyError:
        raise InvalidArgumentError(f"a bitmap file index does not support type {dtype.root.value}") from None


def keys_of(values: pa.Array, dtype: DataType) -> list[object]:
    """The bitmap keys of null-free ``values``: UTF-8 bytes for strings, the Java long (IEEE bits
    for floating point) otherwise."""
    if _width(dtype) == 0:
        return [v.encode() if isinstance(v, str) else bytes(v) for v in values.to_pylist()]
    return [int(v) for v in java_long_values(values)]


def _roaring(rows: np.ndarray) -> bytes:
    # pyroaring copies an array.array('I') in bulk; a numpy array is iterated value by value.
    bm = BitMap(array.array("I", rows.astype(np.uint32).tobytes()))
    bm.run_optimize()
    return bm.serialize()


def _entries(dictionary: pa.Array | np.ndarray, dtype: DataType, offsets: np.ndarray) -> bytes:
    """The head's (value, offset) entries of every distinct value, built without a Python loop."""
    off = offsets.astype(">i4").view(np.uint8).reshape(-1, 4)
    width = _width(dtype)
    if width:
        fmt = {1: ">i1", 2: ">i2", 4: ">i4", 8: ">i8"}[width]
        keys = np.asarray(dictionary).astype(fmt).view(np.uint8).reshape(-1, width)
        return np.concatenate([keys, off], axis=1).tobytes()
    assert isinstance(dictionary, pa.Array)
    data, bounds = binary_buffers(dictionary)
    lens = np.diff(bounds)
    starts = np.concatenate([[0], np.cumsum(8 + lens)])
    out = np.zeros(int(starts[-1]), dtype=np.uint8)
    starts = starts[:-1]
    out[starts[:, None] + _FOUR] = lens.astype(">i4").view(np.uint8).reshape(-1, 4)
    total = int(lens.sum())
    if total:
        dest = np.repeat(starts + 4 - (bounds[:-1] - bounds[0]), lens) + np.arange(total)
        out[dest] = data[bounds[0] : bounds[-1]]
    out[(starts + 4 + lens)[:, None] + _FOUR] = off
    return out.tobytes()


def build(values: pa.Array | pa.ChunkedArray, dtype: DataType) -> bytes:
    """The serialized V1 bitmap index of one file's column (row ``i`` is the file's row ``i``)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    _width(dtype)
    n = len(values)
    valid = values.is_valid().to_numpy(zero_copy_only=False) if values.null_count else np.ones(n, bool)
    null_rows = np.flatnonzero(~valid)
    value_rows = np.flatnonzero(valid)
    present = pc.drop_null(values) if values.null_count else values
    dictionary: pa.Array | np.ndarray
    # Arrow's hash-based dictionary encoding, then a stable sort of the codes (a radix sort when
    # they fit 16 bits) keeps each value's rows ascending.
    if _width(dtype) == 0:
        encoded = present.cast(pa.string()).dictionary_encode()
        dictionary = encoded.dictionary
    else:
        encoded = pa.array(java_long_values(present)).dictionary_encode()
        dictionary = encoded.dictionary.to_numpy(zero_copy_only=False)
    count = len(dictionary)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    codes = codes.astype(np.uint16 if count <= 0xFFFF else np.int64)
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=count)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    sorted_rows = value_rows[order]

    null_bytes = _roaring(null_rows) if len(null_rows) > 1 else b""
    # One row: the offset is -1 - row, no bitmap. Several: a Roaring bitmap in the body.
    offsets = np.where(sizes == 1, -1 - sorted_rows[bounds[:-1]], 0)
    body = [null_bytes]
    at = len(null_bytes)
    for i in np.flatnonzero(sizes > 1):
        data = _roaring(sorted_rows[bounds[i] : bounds[i + 1]])
        offsets[i] = at
        body.append(data)
        at += len(data)
    head = struct.pack(">bii?", VERSION_1, n, count, len(null_rows) > 0)
    if len(null_rows):
        head += struct.pack(">i", -1 - int(null_rows[0]) if len(null_rows) == 1 else 0)
    return head + _entries(dictionary, dtype, offsets) + b"".join(body)


@dataclass(frozen=True, slots=True)
class BitmapIndex:
    """A decoded V1 bitmap index: row count, null info and value → offset (in file order)."""

    row_count: int
    has_null: bool
    null_offset: int
    offsets: dict[object, int]
    body: bytes

    @classmethod
    def parse(cls, data: bytes, dtype: DataType) -> BitmapIndex:
        try:
            version = data[0]
            if version != VERSION_1:
                raise CorruptMetadataError(
                    f"bitmap file index version {version} is not supported (dyntable reads version 1)")
            row_count, count, has_null = struct.unpack_from(">ii?", data, 1)
            pos = 10
            null_offset = 0
            if has_null:
                (null_offset,) = struct.unpack_from(">i", data, pos)
                pos += 4
            width = _width(dtype)
            offsets: dict[object, int] = {}
            for _ in range(count):
                key: object
                if width == 0:
                    (length,) = struct.unpack_from(">i", data, pos)
                    key = bytes(data[pos + 4 : pos + 4 + length])
                    pos += 4 + length
                else:
                    key = int.from_bytes(data[pos : pos + width], "big", signed=True)
                    pos += width
                (offsets[key],) = struct.unpack_from(">i", data, pos)
                pos += 4
        except (IndexError, struct.error) as e:
            raise CorruptMetadataError(f"bitmap file index is truncated: {e}") from None
        return cls(row_count, bool(has_null), null_offset, offsets, bytes(data[pos:]))

    def rows(self, key: object) -> BitMap:
        """The rows holding ``key`` (None = the null rows)."""
        if key is None:
            if not self.has_null:
                return BitMap()
            off = self.null_offset
        else:
            if key not in self.offsets:
                return BitMap()
            off = self.offsets[key]
        if off < 0:
            return BitMap([-1 - off])
        return BitMap.deserialize(self.body[off:])

    def might_contain_keys(self, keys: list[object]) -> bool:
        return any(k in self.offsets for k in keys)
