"""Paimon's file-index file (``FileIndexFormat``, version 1): one blob holding every index of a data file.

Layout, all integers big-endian::

    magic (8 bytes, 1493475289347502) | version (4) | head length (4)
    column count (4)
    per column:  name (Java writeUTF) | index count (4)
                 per index: type name (writeUTF) | start (4) | length (4)
    redundant length (4, zero) | redundant bytes (none)
    body: the index bytes, in head order

``start`` is absolute (from the blob's first byte); an index whose writer saw no value is stored
with start -1 and length 0. Names are Java "modified UTF-8" with a 2-byte length. The blob is
either embedded in the manifest (``_EMBEDDED_FILE_INDEX``) or written next to the data file as
``<data file>.index`` and named in ``_EXTRA_FILES`` (``file-index.in-manifest-threshold``).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from engine.errors import CorruptMetadataError

MAGIC = 1493475289347502
VERSION_1 = 1
EMPTY_INDEX_FLAG = -1
INDEX_FILE_SUFFIX = ".index"


def java_utf(text: str) -> bytes:
    """``DataOutput.writeUTF``: 2-byte length, then modified UTF-8 (NUL as C0 80, surrogate pairs)."""
    out = bytearray()
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0 < c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    if len(out) > 0xFFFF:
        raise CorruptMetadataError(f"name of {len(out)} encoded bytes is too long for a file index")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_java_utf(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", data, pos)
    raw = data[pos + 2 : pos + 2 + n]
    if len(raw) != n:
        raise CorruptMetadataError("file index head is truncated")
    units = bytearray()
    i = 0
    while i < n:
        b = raw[i]
        if b < 0x80:
            c, i = b, i + 1
        elif b >> 5 == 0b110:
            c, i = ((b & 0x1F) << 6) | (raw[i + 1] & 0x3F), i + 2
        else:
            c, i = ((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F), i + 3
        units += struct.pack(">H", c)
    return bytes(units).decode("utf-16-be", "surrogatepass"), pos + 2 + n


def write_file_index(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Serialize column → index type → index bytes (None = an empty index) in the given order."""
    names = b"".join(java_utf(c) + b"".join(java_utf(t) for t in types) for c, types in indexes.items())
    index_count = sum(len(types) for types in indexes.values())
    head_length = 8 + 4 + 4 + 4 + index_count * 8 + len(indexes) * 4 + 4 + len(names)
    head = [struct.pack(">qii", MAGIC, VERSION_1, head_length), struct.pack(">i", len(indexes))]
    body: list[bytes] = []
    at = head_length
    for column, types in indexes.items():
        head.append(java_utf(column) + struct.pack(">i", len(types)))
        for index_type, data in types.items():
            if data is None:
                head.append(java_utf(index_type) + struct.pack(">ii", EMPTY_INDEX_FLAG, 0))
            else:
                head.append(java_utf(index_type) + struct.pack(">ii", at, len(data)))
                body.append(data)
                at += len(data)
    head.append(struct.pack(">i", 0))
    return b"".join(head) + b"".join(body)


def read_file_index(data: bytes) -> dict[str, dict[str, bytes | None]]:
    """Parse a file-index blob: column → index type → that index's bytes (None when empty), in
    the blob's order.

    Raises:
        CorruptMetadataError: not a file index, an unknown version, or truncated.
    """
    try:
        magic, version, head_length = struct.unpack_from(">qii", data, 0)
        if magic != MAGIC:
            raise CorruptMetadataError("not a Paimon file index (bad magic number)")
        if version != VERSION_1:
            raise CorruptMetadataError(
                f"file index version {version} is not supported (dyntable reads version {VERSION_1})")
        (columns,) = struct.unpack_from(">i", data, 16)
        pos = 20
        out: dict[str, dict[str, bytes | None]] = {}
        for _ in range(columns):
            column, pos = _read_java_utf(data, pos)
            (count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            types = out.setdefault(column, {})
            for _ in range(count):
                index_type, pos = _read_java_utf(data, pos)
                start, length = struct.unpack_from(">ii", data, pos)
                pos += 8
                if start == EMPTY_INDEX_FLAG:
                    types[index_type] = None
                    continue
                if start < head_length or start + length > len(data):
                    raise CorruptMetadataError(
                        f"file index of column '{column}' ({index_type}) lies outside the blob")
                types[index_type] = bytes(data[start : start + length])
    except struct.error as e:
        raise CorruptMetadataError(f"file index is truncated: {e}") from None
    return out
