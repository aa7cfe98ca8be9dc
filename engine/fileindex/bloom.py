"""Paimon's bloom-filter file index (``BloomFilterFileIndex`` over ``BloomFilter64``), bit-exact.

Layout of one column's index: the number of hash functions (4-byte big-endian int), then the bit
set, bit ``i`` in byte ``i >> 3`` at position ``i & 7``. The size comes from the expected items
(``file-index.bloom-filter.<col>.items``, default 1,000,000) and false-positive probability
(``.fpp``, default 0.1) exactly as Java computes it, and bit ``i`` of hash function ``k`` is
``(low32 + k * high32)`` of the 64-bit value hash, as a Java int, bit-flipped when negative, modulo
the bit count. Building sets every bit of a whole column in one numpy pass; testing a literal
hashes it the same way (:mod:`engine.fileindex.hashing`), so a written filter is byte-identical to
the one Java Paimon writes for the same values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from engine.errors import CorruptMetadataError
from engine.fileindex.hashing import hash64

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
TYPE_NAME = "bloom-filter"


def _positions(hashes: np.ndarray, num_hash_functions: int, num_bits: int) -> np.ndarray:
    """Bit positions of every hash function for every hash (Java int arithmetic)."""
    words = np.ascontiguousarray(hashes, dtype="<u8").view("<i4").reshape(-1, 2)  # (low, high) 32 bits
    h1, h2 = words[:, 0], words[:, 1]
    out = np.empty((num_hash_functions, len(hashes)), dtype=np.int32)
    with np.errstate(over="ignore"):
        for i in range(1, num_hash_functions + 1):
            combined = h1 + np.int32(i) * h2  # int32 arithmetic wraps like Java's int overflow
            np.bitwise_xor(combined, combined >> 31, out=combined)  # ~x for negative x
            np.remainder(combined, np.int32(num_bits), out=out[i - 1])
    return out.reshape(-1)


@dataclass(frozen=True, slots=True)
class BloomFilter:
    """A decoded (or built) bloom filter: hash function count and the bit set bytes."""

    num_hash_functions: int
    bits: bytes

    @property
    def num_bits(self) -> int:
        return len(self.bits) * 8

    @staticmethod
    def sized(items: int, fpp: float) -> tuple[int, int]:
        """(bit count, hash function count) of Java's ``BloomFilter64(items, fpp)``."""
        nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
        num_bits = nb + (8 - nb % 8)
        k = max(1, int(math.floor(num_bits / items * math.log(2) + 0.5)))
        return num_bits, k

    @classmethod
    def build(cls, values: pa.Array | pa.ChunkedArray, items: int = DEFAULT_ITEMS,
              fpp: float = DEFAULT_FPP) -> BloomFilter:
        """The filter Java writes for ``values`` (nulls are not added, as in Java)."""
        num_bits, k = cls.sized(items, fpp)
        bitmap = np.zeros(num_bits, dtype=bool)
        hashes = hash64(values)
        if len(hashes):
            bitmap[_positions(hashes, k, num_bits)] = True
        return cls(k, np.packbits(bitmap, bitorder="little").tobytes())

    def serialize(self) -> bytes:
        return self.num_hash_functions.to_bytes(4, "big", signed=True) + self.bits

    @classmethod
    def deserialize(cls, data: bytes) -> BloomFilter:
        if len(data) < 5:
            raise CorruptMetadataError(f"bloom-filter file index of {len(data)} bytes is too short")
        k = int.from_bytes(data[:4], "big", signed=True)
        if k < 1:
            raise CorruptMetadataError(f"bloom-filter file index with {k} hash functions")
        return cls(k, bytes(data[4:]))

    def might_contain_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash: False only when the value is certainly absent."""
        if not len(hashes):
            return np.zeros(0, dtype=bool)
        data = np.frombuffer(self.bits, dtype=np.uint8)
        pos = _positions(hashes, self.num_hash_functions, self.num_bits).reshape(self.num_hash_functions, -1)
        bits = (data[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1
        return bits.astype(bool).all(axis=0)

    def might_contain(self, values: pa.Array) -> bool:
        """False only when no non-null value of ``values`` can be in the filtered file."""
        hashes = hash64(values)
        return bool(self.might_contain_hashes(hashes).any())
