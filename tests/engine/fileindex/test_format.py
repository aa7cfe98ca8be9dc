"""The file-index blob (Paimon's FileIndexFormat v1): layout, round trip, Java names, corruption."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptMetadataError
from engine.fileindex.format import MAGIC, java_utf, read_file_index, write_file_index


def test_layout_of_one_column_with_one_index():
    blob = write_file_index({"a": {"bloom-filter": b"\x01\x02\x03"}})
    magic, version, head_length, columns = struct.unpack_from(">qiii", blob)
    assert (magic, version, columns) == (MAGIC, 1, 1)
    # magic 8 + version 4 + head length 4 + column count 4 + (name "a": 2+1) + index count 4
    # + (type name: 2+12) + start 4 + length 4 + redundant length 4
    assert head_length == 8 + 4 + 4 + 4 + 3 + 4 + 14 + 4 + 4 + 4 == len(blob) - 3
    start, length = struct.unpack_from(">ii", blob, head_length - 12)
    assert (start, length) == (head_length, 3)
    assert blob[-7:-3] == b"\x00\x00\x00\x00" and blob[head_length:] == b"\x01\x02\x03"


def test_empty_index_is_flagged_minus_one():
    blob = write_file_index({"m[k]": {"bitmap": None}, "b": {"bloom-filter": b"x"}})
    assert read_file_index(blob) == {"m[k]": {"bitmap": None}, "b": {"bloom-filter": b"x"}}
    assert struct.pack(">ii", -1, 0) in blob


def test_java_modified_utf8_names():
    assert java_utf("a") == b"\x00\x01a"
    assert java_utf("\x00") == b"\x00\x02\xc0\x80"  # NUL is two bytes in modified UTF-8
    assert java_utf("é") == b"\x00\x02\xc3\xa9"
    assert java_utf("😀") == b"\x00\x06\xed\xa0\xbd\xed\xb8\x80"  # a surrogate pair, 3 bytes each
    blob = write_file_index({"\x00é😀": {"bitmap": b"z"}})
    assert read_file_index(blob) == {"\x00é😀": {"bitmap": b"z"}}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.dictionaries(st.sampled_from(["bloom-filter", "bitmap", "bsi"]), st.none() | st.binary(max_size=40),
                    min_size=1),
    max_size=5,
))
def test_round_trip_keeps_order_and_bytes(indexes):
    blob = write_file_index(indexes)
    back = read_file_index(blob)
    assert back == indexes
    assert list(back) == list(indexes)
    assert write_file_index(back) == blob  # re-serialising what was parsed gives the same bytes


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda b: b"\x00" * 8 + b[8:], "magic"),
        (lambda b: b[:8] + struct.pack(">i", 2) + b[12:], "version 2"),
        (lambda b: b[:30], "truncated"),
        (lambda b: b[:-1], "outside"),
    ],
)
def test_corrupt_blobs_raise_typed_errors(mutate, words):
    blob = write_file_index({"col": {"bloom-filter": b"abcdef"}})
    with pytest.raises(CorruptMetadataError, match=words):
        read_file_index(mutate(blob))
