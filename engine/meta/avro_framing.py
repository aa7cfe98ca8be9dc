"""The framing of Avro object-container files: varints, the header, and the blocks.

What dyntable re-frames a file with before or after polars encodes or decodes its records
(manifests in ``engine.meta.manifest_arrow``, data files in ``engine.meta.avro_data``): the header's
metadata map and sync marker read and written, each block's record count and stored bytes
listed, and the codecs polars lacks (zstandard, bzip2, xz) decompressed. Malformed framing raises
``ValueError``; callers say which file it was.
"""

from __future__ import annotations

import bz2
import importlib
import lzma
from collections.abc import Callable, Iterator, Mapping
from typing import Any

MAGIC = b"Obj\x01"


def read_long(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """An Avro zig-zag varint at ``pos`` → (value, next position)."""
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def write_long(out: bytearray, n: int) -> None:
    """Append ``n`` as an Avro zig-zag varint."""
    n = (n << 1) ^ (n >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def read_header(data: bytes) -> tuple[dict[bytes, bytes], bytes, int]:
    """(metadata, sync marker, position of the first block) of an object-container file."""
    if data[:4] != MAGIC:
        raise ValueError("not an Avro object-container file (no magic)")
    pos = 4
    meta: dict[bytes, bytes] = {}
    while True:
        count, pos = read_long(data, pos)
        if count == 0:
            break
        if count < 0:  # a block of the map given with its size in bytes
            count = -count
            _, pos = read_long(data, pos)
        for _ in range(count):
            n, pos = read_long(data, pos)
            key = data[pos : pos + n]
            pos += n
            n, pos = read_long(data, pos)
            meta[key] = data[pos : pos + n]
            pos += n
    return meta, data[pos : pos + 16], pos + 16


def header(meta: Mapping[bytes, bytes], sync: bytes) -> bytearray:
    """The magic, the metadata map and the sync marker that open a container."""
    out = bytearray(MAGIC)
    write_long(out, len(meta))
    for key, value in meta.items():
        write_long(out, len(key))
        out += key
        write_long(out, len(value))
        out += value
    write_long(out, 0)
    out += sync
    return out


def iter_blocks(data: bytes, pos: int, sync: bytes) -> Iterator[tuple[int, bytes]]:
    """(record count, stored bytes) of each block from ``pos``."""
    end = len(data)
    while pos < end:
        count, pos = read_long(data, pos)
        size, pos = read_long(data, pos)
        block = data[pos : pos + size]
        pos += size
        if len(block) != size or data[pos : pos + 16] != sync:
            raise ValueError("Avro block is truncated or its sync marker is wrong")
        pos += 16
        yield count, block


def block(count: int, stored: bytes, sync: bytes) -> bytes:
    """One framed block: its record count, size, bytes and the file's sync marker."""
    out = bytearray()
    write_long(out, count)
    write_long(out, len(stored))
    return bytes(out) + stored + sync


def zstd() -> Any:
    """The zstandard module of this Python (3.14's ``compression.zstd``, else its backport)."""
    for name in ("compression.zstd", "backports.zstd"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("no zstd module")


#: How to decompress the blocks of each codec polars cannot read itself.
DECOMPRESS: dict[bytes, Callable[[], Callable[[bytes], bytes]]] = {
    b"zstandard": lambda: zstd().decompress,
    b"bzip2": lambda: bz2.decompress,
    b"xz": lambda: lzma.decompress,
}

#: The codecs polars reads itself.
POLARS_CODECS = (b"null", b"deflate", b"snappy")
