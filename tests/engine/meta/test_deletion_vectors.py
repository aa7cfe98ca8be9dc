"""The deletion-vector format: values, both bitmap encodings and DV index files, byte-exact with
Paimon (two index files written by Java Paimon 0.9 are embedded below)."""

from __future__ import annotations

import io
import struct
import zlib

import fastavro
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.io.fileio import FileIO
from engine.meta.deletion_vectors import (
    MAX_POSITION_32,
    DeletionVector,
    DeletionVectorMeta,
    dv_metas,
    index_file_meta,
    read_deletion_vectors,
    read_index_file,
    write_deletion_vectors,
    write_index_file,
)
from engine.meta.index_files import (
    DELETION_VECTORS_INDEX,
    IndexManifestEntry,
    IndexStore,
    read_index_manifest,
    write_index_manifest,
)
from engine.meta.manifest import FileKind
from engine.meta.paths import TablePaths

# Index files Java Paimon 0.9 wrote for a 200-row primary-key table whose keys were then updated
# (tests/compat/test_java_deletion_vectors.py checks the same against a live JVM).
JAVA_ARRAY = bytes.fromhex(
    "01000000245e43f2d03a3000000100000000000700100000000100030004000500060009009600c70002a08c10")
JAVA_ARRAY_POSITIONS = [1, 3, 4, 5, 6, 9, 150, 199]
JAVA_RUN = bytes.fromhex("01000000175e43f2d03b300000010000320002000a003100640000006b429027")
JAVA_RUN_POSITIONS = [*range(10, 60), 100]


@pytest.mark.parametrize(("data", "positions", "length"), [
    (JAVA_ARRAY, JAVA_ARRAY_POSITIONS, 36), (JAVA_RUN, JAVA_RUN_POSITIONS, 23)], ids=["array", "run"])
def test_index_files_written_by_java_read_and_rewrite_byte_for_byte(data, positions, length):
    metas = [DeletionVectorMeta("data-0.parquet", 1, length, None)]
    dvs = read_index_file(data, metas)
    assert dvs["data-0.parquet"].positions().tolist() == positions
    ours, our_metas = write_index_file({"data-0.parquet": DeletionVector.from_positions(positions)})
    assert ours == data
    assert our_metas == [DeletionVectorMeta("data-0.parquet", 1, length, len(positions))]


def _portable_two_values(a: int, b: int) -> bytes:
    """The portable Roaring bytes of {a, b} (< 65536, not adjacent), written out by the spec:
    cookie 12346, one container, key 0, cardinality-1, offset 16, then the two uint16 values."""
    return struct.pack("<IIHHIHH", 12346, 1, 0, 1, 16, a, b)


def test_bitmap64_encoding_follows_paimons_layout():
    dv = DeletionVector.from_positions([1, 5, (2 << 32) + 7, (2 << 32) + 9], bitmap64=True)
    body = (struct.pack("<i", 1681511377) + struct.pack("<q", 3)
            + struct.pack("<i", 0) + _portable_two_values(1, 5)
            + struct.pack("<i", 1) + struct.pack("<II", 12346, 0)  # key 1 is empty, written anyway
            + struct.pack("<i", 2) + _portable_two_values(7, 9))
    crc = zlib.crc32(body)
    expected = struct.pack(">i", len(body)) + body + struct.pack(">I", crc)
    assert dv.serialize() == expected
    assert dv.range_length() == len(expected)  # 64-bit ranges cover the whole record
    assert DeletionVector.deserialize(expected, len(expected)) == dv


def test_bitmap32_encoding_follows_paimons_layout():
    dv = DeletionVector.from_positions([5, 1])
    body = struct.pack(">i", 1581511376) + _portable_two_values(1, 5)
    assert dv.serialize() == struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    assert dv.range_length() == len(body)  # 32-bit ranges cover magic + bitmap only


@pytest.mark.parametrize("bitmap64", [False, True])
def test_empty_vectors_round_trip(bitmap64):
    dv = DeletionVector.empty(bitmap64=bitmap64)
    assert dv.is_empty() and dv.cardinality == 0
    back = DeletionVector.deserialize(dv.serialize(), dv.range_length())
    assert back == dv and back.bitmap64 == bitmap64
    assert not dv.is_deleted(np.arange(3)).any()


def test_index_file_with_both_kinds_and_store_io(tmp_path):
    store = IndexStore(FileIO(), TablePaths(str(tmp_path / "t")))
    dvs = {"a.parquet": DeletionVector.from_positions(np.arange(0, 100_000, 3)),
           "b.parquet": DeletionVector.from_positions([2**40, 7], bitmap64=True),
           "c.parquet": DeletionVector.from_positions(range(70_000, 80_000))}
    meta = write_deletion_vectors(store, dvs)
    assert meta.index_type == DELETION_VECTORS_INDEX and meta.row_count == 3
    assert [m.data_file for m in dv_metas(meta)] == list(dvs)
    assert [m.cardinality for m in dv_metas(meta)] == [dv.cardinality for dv in dvs.values()]
    assert read_deletion_vectors(store, meta) == dvs
    # The ranges survive the index manifest.
    entry = IndexManifestEntry(FileKind.ADD, b"", 0, meta)
    (back,) = read_index_manifest(write_index_manifest([entry]))
    assert dv_metas(back.file) == dv_metas(meta)
    assert read_deletion_vectors(store, back.file) == dvs


def test_an_empty_index_file_is_the_version_byte():
    data, metas = write_index_file({})
    assert data == b"\x01" and metas == []
    meta = index_file_meta("index-x-0", data, metas)
    assert meta.file_size == 1 and meta.row_count == 0 and dv_metas(meta) == []


def test_corruption_is_reported_typed():
    data = bytearray(JAVA_ARRAY)
    metas = [DeletionVectorMeta("f", 1, 36, None)]
    with pytest.raises(CorruptMetadataError, match="version 2"):
        read_index_file(b"\x02" + bytes(data[1:]), metas)
    with pytest.raises(CorruptMetadataError, match="index entry says 35"):
        read_index_file(bytes(data), [DeletionVectorMeta("f", 1, 35, None)])
    with pytest.raises(CorruptMetadataError, match="says 3"):
        read_index_file(bytes(data), [DeletionVectorMeta("f", 1, 36, 3)])
    flipped = bytes(data[:20]) + bytes([data[20] ^ 1]) + bytes(data[21:])
    with pytest.raises(CorruptMetadataError, match="CRC32"):
        read_index_file(flipped, metas)
    with pytest.raises(CorruptMetadataError, match="magic number"):
        DeletionVector.deserialize(b"\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x00")
    with pytest.raises(CorruptMetadataError, match="truncated"):
        read_index_file(bytes(data[:30]), metas)
    with pytest.raises(CorruptMetadataError, match="outside"):
        read_index_file(bytes(data), [DeletionVectorMeta("f", 99, 36, None)])


def test_positions_out_of_range_are_refused():
    with pytest.raises(InvalidArgumentError, match="bitmap64"):
        DeletionVector.from_positions([MAX_POSITION_32 + 1])
    with pytest.raises(InvalidArgumentError, match="-1"):
        DeletionVector.from_positions([-1], bitmap64=True)
    with pytest.raises(InvalidArgumentError, match="integers"):
        DeletionVector.from_positions(np.array([1.5]))


def test_merging_kinds_needs_a_conversion():
    a, b = DeletionVector.from_positions([1]), DeletionVector.from_positions([2], bitmap64=True)
    with pytest.raises(InvalidArgumentError, match="to_bitmap64"):
        a.merge(b)
    assert a.to_bitmap64().merge(b).positions().tolist() == [1, 2]


positions32 = st.sets(
    st.one_of(st.integers(0, 300), st.integers(0, 200_000), st.integers(0, MAX_POSITION_32)), max_size=300)
positions64 = st.sets(st.one_of(st.integers(0, 300), st.integers(0, 2**34)), max_size=200)


@settings(max_examples=150, deadline=None)
@given(st.booleans(), st.data())
def test_behaves_like_a_set_of_positions(bitmap64, data):
    strategy = positions64 if bitmap64 else positions32
    a, b = data.draw(strategy), data.draw(strategy)
    runs = data.draw(st.lists(st.tuples(st.integers(0, 100_000), st.integers(0, 3000)), max_size=3))
    for start, n in runs:  # long runs exercise run and bitmap containers
        a |= set(range(start, start + n))
    dva = DeletionVector.from_positions(np.array(sorted(a), dtype=np.int64), bitmap64=bitmap64)
    dvb = DeletionVector.from_positions(sorted(b), bitmap64=bitmap64)
    assert dva.cardinality == len(a) and dva.positions().tolist() == sorted(a)
    probe = np.array(sorted(a | b | {0, 1, 299, 2**31 - 1}), dtype=np.int64)
    np.testing.assert_array_equal(dva.is_deleted(probe[::-1]), [p in a for p in probe[::-1]])
    assert dva.merge(dvb).positions().tolist() == sorted(a | b)
    mask = dva.keep_mask(1000)
    assert [i for i in range(1000) if not mask[i]] == sorted(p for p in a if p < 1000)
    record = dva.serialize()
    back = DeletionVector.deserialize(record + b"trailing", dva.range_length(record))
    assert back == dva and back.serialize() == record
    if not bitmap64:  # the 32-bit value converts to 64-bit without losing a position
        assert dva.to_bitmap64().positions().tolist() == sorted(a)


def test_paimon_09_index_manifests_keep_their_ranges():
    # Paimon 0.9's record: the ranges field is spelled _DELETION_VECTORS_RANGES and has no cardinality.
    ranges = {"type": "record", "name": "r", "fields": [
        {"name": "f0", "type": "string"}, {"name": "f1", "type": "int"}, {"name": "f2", "type": "int"}]}
    schema = {"type": "record", "name": "org.apache.paimon.avro.generated.record", "fields": [
        {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"}, {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"}, {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"}, {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_DELETION_VECTORS_RANGES", "type": ["null", {"type": "array", "items": ["null", ranges]}],
         "default": None}]}
    record = {"_VERSION": 2, "_KIND": 0, "_PARTITION": b"", "_BUCKET": 0, "_INDEX_TYPE": "DELETION_VECTORS",
              "_FILE_NAME": "index-x-0", "_FILE_SIZE": len(JAVA_ARRAY), "_ROW_COUNT": 1,
              "_DELETION_VECTORS_RANGES": [{"f0": "data-0.parquet", "f1": 1, "f2": 36}]}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [record])
    (entry,) = read_index_manifest(buf.getvalue())
    assert dv_metas(entry.file) == [DeletionVectorMeta("data-0.parquet", 1, 36, None)]
    assert read_index_file(JAVA_ARRAY, dv_metas(entry.file))["data-0.parquet"].cardinality == 8
    # Written back in the current layout, the ranges survive (with no cardinality).
    (again,) = read_index_manifest(write_index_manifest([entry]))
    assert dv_metas(again.file) == dv_metas(entry.file)


def test_positions_are_cached_and_read_only():
    dv = DeletionVector.from_positions([3, 1, 2])
    assert dv.positions() is dv.positions()
    with pytest.raises(ValueError):
        dv.positions()[0] = 9
