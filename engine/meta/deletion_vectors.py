"""Paimon deletion vectors: the bitmap value, its two byte encodings, and DV index files.

One job: the on-disk format of deletion vectors, read and written byte for byte as Paimon
(0.9 to 2.x) does (``docs/deletion-vectors.md``). Nothing here decides *which* rows to delete or
when index files are written; the read, write and commit paths build on these pieces.

* A :class:`DeletionVector` is the set of deleted row positions (0-based row numbers) of one data
  file, held in a Roaring bitmap (``pyroaring``, whose portable serialization is the format Java's
  RoaringBitmap writes). It has one of Paimon's two kinds: 32-bit (``BitmapDeletionVector``,
  positions up to 2^31-1, the only kind before Paimon 1.2 and the default since) or 64-bit
  (``Bitmap64DeletionVector``, ``deletion-vectors.bitmap64 = true``).
* Encodings (what ``DeletionVector.serializeTo`` writes; all framing ints big-endian except
  inside the 64-bit body):

  - 32-bit: ``int32 size | int32 magic 1581511376 | portable RoaringBitmap | int32 CRC32``,
    where size and CRC cover ``magic + bitmap``. The range length recorded for it in the index
    manifest is that *size* (without the size and CRC words).
  - 64-bit: ``int32 size | magic 1681511377 little-endian | uint64 LE count | per high-32-bit key
    k = 0..count-1: uint32 LE k, portable RoaringBitmap of the low 32 bits | int32 CRC32``;
    Java writes every key from 0 to the highest, empty ones included. The range length recorded
    for it is the *whole* record (size + 8).

  Java runs run-length optimisation on every bitmap before serializing; so does this module.
* A DV index file (``index/index-<uuid>-<n>``) is the version byte ``1`` followed by the records
  of several data files' DVs. Its index-manifest entry (type ``DELETION_VECTORS``) lists, per data
  file, ``(name, offset, length, cardinality)`` (:class:`DeletionVectorMeta`; Paimon 0.9 wrote no
  cardinality and named the manifest field ``_DELETION_VECTORS_RANGES``).
"""

from __future__ import annotations

import array
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from pyroaring import BitMap, BitMap64

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.meta.index_files import (
    DELETION_VECTORS_INDEX,
    INDEX_DIR,
    IndexFileMeta,
    IndexManifestEntry,
    IndexStore,
)
from engine.meta.paths import join

MAGIC_32 = 1581511376
MAGIC_64 = 1681511377
VERSION_V1 = 1
MAX_POSITION_32 = 2**31 - 1
# OptimizedRoaringBitmap64.MAX_VALUE: the high 32 bits (the key) may not exceed 2^31 - 2.
MAX_POSITION_64 = ((2**31 - 2) << 32) | 0xFFFFFFFF

_MAGIC_64_AS_BE = struct.unpack(">i", struct.pack("<i", MAGIC_64))[0]
_INT = struct.Struct(">i")


def _crc(data: bytes | memoryview) -> int:
    """Java's ``(int) CRC32.getValue()``: the CRC32 as a signed 32-bit int."""
    value = zlib.crc32(data)
    return value - (1 << 32) if value >= 1 << 31 else value


class DeletionVector:
    """The deleted row positions of one data file (immutable; operations return new values)."""

    __slots__ = ("_bitmap", "_positions", "bitmap64")

    def __init__(self, bitmap: BitMap | BitMap64, bitmap64: bool) -> None:
        self._bitmap = bitmap
        self.bitmap64 = bitmap64
        # Sorted int64 positions, built on first use: a reader masks many batches of one file.
        self._positions: np.ndarray | None = None

    # ---- construction --------------------------------------------------------------------------

    @classmethod
    def from_positions(
        cls, positions: Iterable[int] | np.ndarray, *, bitmap64: bool = False
    ) -> DeletionVector:
        """A DV marking ``positions`` (any integer array; duplicates allowed) deleted.

        Raises:
            InvalidArgumentError: a position is negative or beyond what the kind can hold
                (2^31-1 for 32-bit, as Java's ``BitmapDeletionVector`` refuses larger ones).
        """
        pos = np.asarray(positions if isinstance(positions, np.ndarray) else list(positions))
        if pos.size == 0:
            return cls(BitMap64() if bitmap64 else BitMap(), bitmap64)
        if not np.issubdtype(pos.dtype, np.integer):
            raise InvalidArgumentError(f"deletion-vector positions must be integers, not {pos.dtype}")
        pos = pos.ravel()
        low, high = int(pos.min()), int(pos.max())
        limit = MAX_POSITION_64 if bitmap64 else MAX_POSITION_32
        if low < 0 or high > limit:
            bad = low if low < 0 else high
            kind = "64-bit" if bitmap64 else "32-bit"
            hint = "" if bitmap64 else " (set 'deletion-vectors.bitmap64' = 'true' for larger files)"
            raise InvalidArgumentError(
                f"row position {bad} cannot be held by a {kind} deletion vector: "
                f"positions run from 0 to {limit}{hint}"
            )
        if bitmap64:
            buf = array.array("Q")
            buf.frombytes(np.ascontiguousarray(pos, dtype=np.uint64).tobytes())
            return cls(BitMap64(buf), True)
        buf = array.array("I")
        buf.frombytes(np.ascontiguousarray(pos, dtype=np.uint32).tobytes())
        return cls(BitMap(buf), False)

    @classmethod
    def empty(cls, *, bitmap64: bool = False) -> DeletionVector:
        return cls(BitMap64() if bitmap64 else BitMap(), bitmap64)

    # ---- queries -------------------------------------------------------------------------------

    @property
    def cardinality(self) -> int:
        """Number of deleted rows."""
        return len(self._bitmap)

    def __len__(self) -> int:
        return len(self._bitmap)

    def is_empty(self) -> bool:
        return len(self._bitmap) == 0

    def positions(self) -> np.ndarray:
        """The deleted positions, ascending, as a read-only int64 array."""
        if self._positions is None:
            dtype = np.uint64 if self.bitmap64 else np.uint32
            positions = np.frombuffer(self._bitmap.to_array(), dtype=dtype).astype(np.int64)
            positions.flags.writeable = False
            self._positions = positions
        return self._positions

    def is_deleted(self, positions: np.ndarray) -> np.ndarray:
        """Boolean mask: which of ``positions`` (an integer array, any order) are deleted."""
        pos = np.asarray(positions, dtype=np.int64)
        deleted = self.positions()
        if deleted.size == 0 or pos.size == 0:
            return np.zeros(pos.shape, dtype=bool)
        idx = np.searchsorted(deleted, pos)
        np.minimum(idx, deleted.size - 1, out=idx)
        return deleted[idx] == pos

    def keep_mask(self, row_count: int) -> np.ndarray:
        """Boolean mask over rows ``0..row_count-1`` of the data file: True where the row is live."""
        mask = np.ones(row_count, dtype=bool)
        deleted = self.positions()
        mask[deleted[deleted < row_count]] = False
        return mask

    # ---- combination ---------------------------------------------------------------------------

    def merge(self, other: DeletionVector) -> DeletionVector:
        """The union of both DVs (Java ``DeletionVector.merge``: both must be of the same kind)."""
        if other.bitmap64 != self.bitmap64:
            raise InvalidArgumentError(
                "cannot merge a 32-bit and a 64-bit deletion vector; convert with to_bitmap64() first"
            )
        if self.bitmap64:
            return DeletionVector(cast(BitMap64, self._bitmap) | cast(BitMap64, other._bitmap), True)
        return DeletionVector(cast(BitMap, self._bitmap) | cast(BitMap, other._bitmap), False)

    def to_bitmap64(self) -> DeletionVector:
        """The same positions as a 64-bit DV (Java ``Bitmap64DeletionVector.fromBitmapDeletionVector``)."""
        if self.bitmap64:
            return self
        buf = array.array("Q")
        buf.frombytes(self.positions().astype(np.uint64).tobytes())
        return DeletionVector(BitMap64(buf), True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeletionVector):
            return NotImplemented
        return self.bitmap64 == other.bitmap64 and np.array_equal(self.positions(), other.positions())

    def __hash__(self) -> int:
        return hash((self.bitmap64, self.positions().tobytes()))

    def __repr__(self) -> str:
        kind = "64" if self.bitmap64 else "32"
        return f"DeletionVector(bitmap{kind}, cardinality={self.cardinality})"

    # ---- encoding ------------------------------------------------------------------------------

    def serialize(self) -> bytes:
        """The record Java's ``serializeTo`` writes: size, body, CRC32."""
        if self.bitmap64:
            body = self._body64()
        else:
            body = _INT.pack(MAGIC_32) + _portable(cast(BitMap, self._bitmap))
        return _INT.pack(len(body)) + body + _INT.pack(_crc(body))

    def range_length(self, record: bytes | None = None) -> int:
        """The length Paimon records for this DV's range: the body size (32-bit) or the whole
        record (64-bit), as ``serializeTo`` returns them."""
        size = len(record if record is not None else self.serialize())
        return size if self.bitmap64 else size - 8

    def _body64(self) -> bytes:
        pos = self.positions().astype(np.uint64)
        keys = (pos >> np.uint64(32)).astype(np.int64)
        parts = [struct.pack("<i", MAGIC_64)]
        count = int(keys[-1]) + 1 if pos.size else 0
        parts.append(struct.pack("<q", count))
        # Java's bitmap array is dense from key 0 to the highest key; empty keys are written too.
        bounds = np.searchsorted(keys, np.arange(count + 1))
        for key in range(count):
            low = (pos[bounds[key]:bounds[key + 1]] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            buf = array.array("I")
            buf.frombytes(low.tobytes())
            parts.append(struct.pack("<i", key))
            parts.append(_portable(BitMap(buf)))
        return b"".join(parts)

    @classmethod
    def deserialize(
        cls, data: bytes | memoryview, length: int | None = None, *, what: str = "deletion vector"
    ) -> DeletionVector:
        """Read one record (as :meth:`serialize` writes it) from the start of ``data``.

        Args:
            length: the range length from the index manifest, checked against the record.
            what: names the record in errors.

        Raises:
            CorruptMetadataError: bad magic, size, checksum or bitmap.
        """
        view = memoryview(data)
        if len(view) < 8:
            raise CorruptMetadataError(f"{what} is truncated ({len(view)} bytes)")
        size = _INT.unpack_from(view, 0)[0]
        magic = _INT.unpack_from(view, 4)[0]
        if magic == MAGIC_32:
            bitmap64, expected = False, length
        elif magic == _MAGIC_64_AS_BE:
            bitmap64, expected = True, None if length is None else length - 8
        else:
            raise CorruptMetadataError(
                f"{what} has magic number {magic}, neither a 32-bit ({MAGIC_32}) "
                f"nor a 64-bit ({MAGIC_64}) deletion vector"
            )
        if expected is not None and size != expected:
            raise CorruptMetadataError(f"{what} holds {size} bytes but its index entry says {expected}")
        if size < 4 or len(view) < size + 8:
            raise CorruptMetadataError(
                f"{what} is truncated: {size} body bytes announced, {len(view) - 8} present")
        body = view[4:4 + size]
        if _INT.unpack_from(view, 4 + size)[0] != _crc(body):
            raise CorruptMetadataError(f"{what} fails its CRC32 checksum: the index file is corrupt")
        try:
            if not bitmap64:
                return cls(BitMap.deserialize(bytes(body[4:])), False)
            return cls(_read_body64(body[4:]), True)
        except CorruptMetadataError:
            raise
        except Exception as e:  # noqa: BLE001 -- CRoaring reports bad bytes as ValueError and others
            raise CorruptMetadataError(f"{what} holds an unreadable Roaring bitmap ({e})") from e


def _portable(bitmap: BitMap) -> bytes:
    """Java's serialization: run-length optimise, then the portable Roaring format."""
    bitmap = bitmap.copy()
    bitmap.run_optimize()
    return bitmap.serialize()


def _read_body64(body: memoryview) -> BitMap64:
    count = struct.unpack_from("<q", body, 0)[0]
    if count < 0 or count > 2**31 - 1:
        raise CorruptMetadataError(f"64-bit deletion vector announces {count} bitmaps")
    offset, last = 8, -1
    result = BitMap64()
    for _ in range(count):
        key = struct.unpack_from("<i", body, offset)[0]
        if key <= last:
            raise CorruptMetadataError("64-bit deletion vector keys are not ascending")
        bitmap = BitMap.deserialize(bytes(body[offset + 4:]))
        # A deserialized bitmap keeps its containers, so re-serializing gives the bytes consumed.
        offset += 4 + len(bitmap.serialize())
        if len(bitmap):
            low = np.frombuffer(bitmap.to_array(), dtype=np.uint32).astype(np.uint64)
            buf = array.array("Q")
            buf.frombytes((low | np.uint64(key << 32)).tobytes())
            result |= BitMap64(buf)
        last = key
    if offset != len(body):
        raise CorruptMetadataError(
            f"64-bit deletion vector has {len(body) - offset} stray bytes after its bitmaps")
    return result


# ---- index files ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeletionVectorMeta:
    """Where one data file's DV lives in an index file (Java ``DeletionVectorMeta``)."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None

    def to_record(self) -> dict[str, Any]:
        """The ``_DELETIONS_VECTORS_RANGES`` element of the index manifest."""
        return {"f0": self.data_file, "f1": self.offset, "f2": self.length, "_CARDINALITY": self.cardinality}


def dv_metas(meta: IndexFileMeta) -> list[DeletionVectorMeta]:
    """The per-data-file ranges of a ``DELETION_VECTORS`` index file, in file order."""
    if meta.index_type != DELETION_VECTORS_INDEX:
        raise InvalidArgumentError(
            f"index file {meta.file_name} is a {meta.index_type} index, not deletion vectors")
    out = []
    for rec in meta.dv_ranges or ():
        if rec is None:
            raise CorruptMetadataError(f"index file {meta.file_name} has a null deletion-vector range")
        out.append(DeletionVectorMeta(rec["f0"], rec["f1"], rec["f2"], rec.get("_CARDINALITY")))
    return out


def index_file_meta(name: str, data: bytes, metas: Sequence[DeletionVectorMeta],
                    external_path: str | None = None) -> IndexFileMeta:
    """The IndexFileMeta Java records for a DV index file (row count = number of DVs)."""
    return IndexFileMeta(DELETION_VECTORS_INDEX, name, len(data), len(metas),
                         [m.to_record() for m in metas], external_path)


def write_index_file(dvs: Mapping[str, DeletionVector]) -> tuple[bytes, list[DeletionVectorMeta]]:
    """The bytes of one DV index file holding ``dvs`` (data-file name -> DV, in mapping order)
    and each DV's range, as Java's ``DeletionFileWriter`` writes them."""
    parts = [bytes([VERSION_V1])]
    offset = 1
    metas = []
    for name, dv in dvs.items():
        record = dv.serialize()
        metas.append(DeletionVectorMeta(name, offset, dv.range_length(record), dv.cardinality))
        parts.append(record)
        offset += len(record)
    return b"".join(parts), metas


def read_index_file(
    data: bytes, metas: Sequence[DeletionVectorMeta], what: str = "deletion-vector index file"
) -> dict[str, DeletionVector]:
    """Every DV of an index file, by data-file name (``metas`` from :func:`dv_metas`).

    Raises:
        CorruptMetadataError: wrong version byte, a range outside the file, or a bad record.
    """
    if not data or data[0] != VERSION_V1:
        version = data[0] if data else "none"
        raise CorruptMetadataError(f"{what} has version {version}, expected {VERSION_V1}")
    view = memoryview(data)
    out = {}
    for m in metas:
        if m.offset < 1 or m.offset >= len(data):
            raise CorruptMetadataError(
                f"{what}: the range of {m.data_file} starts at {m.offset}, outside its {len(data)} bytes")
        dv = DeletionVector.deserialize(view[m.offset:], m.length, what=f"{what} (DV of {m.data_file})")
        if m.cardinality is not None and dv.cardinality != m.cardinality:
            raise CorruptMetadataError(
                f"{what}: the DV of {m.data_file} marks {dv.cardinality} rows "
                f"but its index entry says {m.cardinality}"
            )
        out[m.data_file] = dv
    return out


def write_deletion_vectors(store: IndexStore, dvs: Mapping[str, DeletionVector]) -> IndexFileMeta:
    """Write one new DV index file under ``index/`` and return its index-manifest record.

    Java writes an index file even for no DVs when a compaction removed a bucket's last one
    (its record then lists no ranges); this does the same for an empty ``dvs``.
    """
    data, metas = write_index_file(dvs)
    name = store.new_index_file_name()
    store.io.write_new(join(store.paths.root, INDEX_DIR, name), data)
    return index_file_meta(name, data, metas)


def write_index_files_rolling(
    dvs: Mapping[str, DeletionVector], target_size: int
) -> list[tuple[bytes, list[DeletionVectorMeta]]]:
    """The bytes and ranges of the DV index files ``dvs`` roll into at ``target_size`` bytes.

    As Java's rolling ``DeletionVectorIndexFileWriter``: DVs are written in mapping order, and a
    file is closed as soon as its size (version byte included) exceeds the target, so each file
    holds at least one DV and may pass the target by its last one. No DVs give no file.
    """
    out: list[tuple[bytes, list[DeletionVectorMeta]]] = []
    parts: list[bytes] = []
    metas: list[DeletionVectorMeta] = []
    offset = 1
    for name, dv in dvs.items():
        record = dv.serialize()
        metas.append(DeletionVectorMeta(name, offset, dv.range_length(record), dv.cardinality))
        parts.append(record)
        offset += len(record)
        if offset > target_size:
            out.append((b"".join([bytes([VERSION_V1]), *parts]), metas))
            parts, metas, offset = [], [], 1
    if metas:
        out.append((b"".join([bytes([VERSION_V1]), *parts]), metas))
    return out


def write_deletion_vectors_rolling(
    store: IndexStore, dvs: Mapping[str, DeletionVector], target_size: int
) -> list[IndexFileMeta]:
    """Write ``dvs`` into as many new index files as the target size asks for (none for no
    DVs); their index-manifest records, in order."""
    out: list[IndexFileMeta] = []
    try:
        for data, metas in write_index_files_rolling(dvs, target_size):
            name = store.new_index_file_name()
            store.io.write_new(join(store.paths.root, INDEX_DIR, name), data)
            out.append(index_file_meta(name, data, metas))
    except BaseException:
        for meta in out:  # nothing refers to them yet
            store.delete_file(meta)
        raise
    return out


def read_deletion_vectors(store: IndexStore, meta: IndexFileMeta) -> dict[str, DeletionVector]:
    """Every DV of one ``DELETION_VECTORS`` index file, by data-file name."""
    path = store.file_path(meta)
    try:
        data = store.io.read_bytes(path)
    except FileNotFoundError:
        raise CorruptMetadataError(
            f"deletion-vector index file {path} is listed in the index manifest but missing") from None
    return read_index_file(data, dv_metas(meta), what=f"deletion-vector index file {path}")


@dataclass(frozen=True, slots=True)
class DeletionFile:
    """Where one data file's DV lives, as a read split carries it (Java ``DeletionFile``).

    ``path`` is the index file (resolved against the table, or its external path); ``offset``
    and ``length`` are the range from the index manifest.
    """

    data_file: str
    path: str
    offset: int
    length: int
    cardinality: int | None


def deletion_files(
    store: IndexStore, entries: Iterable[IndexManifestEntry]
) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
    """Every data file's DV location named by an index manifest, by (partition, bucket), then by
    data-file name. Entries of other index types are skipped."""
    out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
    for e in entries:
        if e.file.index_type != DELETION_VECTORS_INDEX:
            continue
        path = store.file_path(e.file)
        slot = out.setdefault((e.partition, e.bucket), {})
        for m in dv_metas(e.file):
            slot[m.data_file] = DeletionFile(m.data_file, path, m.offset, m.length, m.cardinality)
    return out


def read_deletion_file(data: bytes, file: DeletionFile) -> DeletionVector:
    """The DV at ``file``'s range of the index file whose bytes are ``data``.

    Raises:
        CorruptMetadataError: wrong version byte, a range outside the file, or a bad record.
    """
    meta = DeletionVectorMeta(file.data_file, file.offset, file.length, file.cardinality)
    return read_index_file(data, [meta], what=f"deletion-vector index file {file.path}")[file.data_file]
