"""Manifest / manifest-list Avro serde (exact Paimon schemas, tolerant reads) and merge semantics."""

from __future__ import annotations

import importlib.util
import io
import json
import pickle
import time
from dataclasses import replace
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.meta.manifest import (
    EMPTY_ROW_BYTES,
    DataFileMeta,
    FileKind,
    FileSource,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    live_files,
    merge_entries,
    read_manifest_entries,
    read_manifest_list,
    write_manifest_entries,
    write_manifest_list,
)

# ---- Paimon's manifest records (docs/design/format-notes.md §6), written out independently of
#      engine/meta/avro_schemas.py

NULLABLE_LONG_ARRAY = ["null", {"type": "array", "items": ["null", "long"]}]
STRING_ARRAY = {"type": "array", "items": "string"}
STATS = [("_MIN_VALUES", "bytes"), ("_MAX_VALUES", "bytes"), ("_NULL_COUNTS", NULLABLE_LONG_ARRAY)]
DATA_FILE_META = [
    ("_FILE_NAME", "string"),
    ("_FILE_SIZE", "long"),
    ("_ROW_COUNT", "long"),
    ("_MIN_KEY", "bytes"),
    ("_MAX_KEY", "bytes"),
    ("_KEY_STATS", STATS),
    ("_VALUE_STATS", STATS),
    ("_MIN_SEQUENCE_NUMBER", "long"),
    ("_MAX_SEQUENCE_NUMBER", "long"),
    ("_SCHEMA_ID", "long"),
    ("_LEVEL", "int"),
    ("_EXTRA_FILES", STRING_ARRAY),
    ("_CREATION_TIME", ["null", {"type": "long", "logicalType": "timestamp-millis"}]),
    ("_DELETE_ROW_COUNT", ["null", "long"]),
    ("_EMBEDDED_FILE_INDEX", ["null", "bytes"]),
    ("_FILE_SOURCE", ["null", "int"]),
    ("_VALUE_STATS_COLS", ["null", STRING_ARRAY]),
    ("_EXTERNAL_PATH", ["null", "string"]),
    ("_FIRST_ROW_ID", ["null", "long"]),
    ("_WRITE_COLS", ["null", STRING_ARRAY]),
]
MANIFEST_ENTRY = [
    ("_VERSION", "int"),
    ("_KIND", "int"),
    ("_PARTITION", "bytes"),
    ("_BUCKET", "int"),
    ("_TOTAL_BUCKETS", "int"),
    ("_FILE", DATA_FILE_META),
]
MANIFEST_FILE_META = [
    ("_VERSION", "int"),
    ("_FILE_NAME", "string"),
    ("_FILE_SIZE", "long"),
    ("_NUM_ADDED_FILES", "long"),
    ("_NUM_DELETED_FILES", "long"),
    ("_PARTITION_STATS", STATS),
    ("_SCHEMA_ID", "long"),
    ("_MIN_BUCKET", ["null", "int"]),
    ("_MAX_BUCKET", ["null", "int"]),
    ("_MIN_LEVEL", ["null", "int"]),
    ("_MAX_LEVEL", ["null", "int"]),
    ("_MIN_ROW_ID", ["null", "long"]),
    ("_MAX_ROW_ID", ["null", "long"]),
]


def assert_record_matches(schema: dict[str, Any], expected: list[tuple[str, Any]]) -> None:
    """The written record has exactly these fields, in order, with these Avro types."""
    assert schema["type"] == "record"
    fields = schema["fields"]
    assert [f["name"] for f in fields] == [name for name, _ in expected]
    for field, (name, typ) in zip(fields, expected, strict=True):
        actual = field["type"]
        if isinstance(typ, list) and typ and isinstance(typ[0], tuple):  # nested record
            assert_record_matches(actual, typ)
            assert "default" not in field, name
            continue
        assert actual == typ, name
        if isinstance(typ, list):  # nullable: null-first union with default null
            assert typ[0] == "null" and field["default"] is None, name
        else:
            assert "default" not in field, name


def header(data: bytes) -> tuple[str, dict[str, Any]]:
    reader = fastavro.reader(io.BytesIO(data))
    return reader.codec, json.loads(reader.metadata["avro.schema"])


# ---- builders

PART = b"\x00\x00\x00\x01" + bytes(8) + bytes(8)  # an arity-1 BinaryRow-shaped value (opaque here)


def make_file(name: str = "data-1.parquet", level: int = 0, **kw: Any) -> DataFileMeta:
    base: dict[str, Any] = dict(
        file_name=name,
        file_size=1024,
        row_count=10,
        min_key=EMPTY_ROW_BYTES,
        max_key=EMPTY_ROW_BYTES,
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=0,
        max_sequence_number=9,
        schema_id=0,
        level=level,
    )
    base.update(kw)
    return DataFileMeta(**base)


def add(name: str, partition: bytes = PART, bucket: int = 0, **kw: Any) -> ManifestEntry:
    return ManifestEntry(FileKind.ADD, partition, bucket, 2, make_file(name, **kw))


def delete(entry: ManifestEntry) -> ManifestEntry:
    return replace(entry, kind=FileKind.DELETE)


def populated_entry() -> ManifestEntry:
    stats = SimpleStats(b"\x00\x00\x00\x02" + bytes(24), b"\x00\x00\x00\x02" + b"\x01" * 24, (0, None))
    f = make_file(
        "data-populated-0.parquet",
        level=3,
        extra_files=("data-populated-0.parquet.index",),
        min_key=b"\x00\x00\x00\x01" + b"\x05" * 16,
        max_key=b"\x00\x00\x00\x01" + b"\x09" * 16,
        key_stats=stats,
        value_stats=SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, None),
        creation_time_millis=1724404318750,
        delete_row_count=2,
        embedded_file_index=b"\x00idx\xff",
        file_source=FileSource.COMPACT,
        value_stats_cols=("a", "b"),
        external_path="s3://b/x/data-0.parquet",
        first_row_id=100,
        write_cols=("a", "b", "c"),
    )
    return ManifestEntry(FileKind.DELETE, PART, 5, 8, f)


ALL_NONE_META = ManifestFileMeta("manifest-a-0", 4096, 3, 1, SimpleStats.EMPTY, 0)
POPULATED_META = ManifestFileMeta(
    "manifest-b-0",
    2**40,
    7,
    0,
    SimpleStats(PART, PART, (0,)),
    3,
    min_bucket=0,
    max_bucket=7,
    min_level=0,
    max_level=5,
    min_row_id=0,
    max_row_id=2**40,
)


# ---- schema / header


class TestWrittenSchema:
    def test_manifest_schema_matches_spec_tables(self) -> None:
        codec, schema = header(write_manifest_entries([add("f")]))
        assert codec == "zstandard"
        assert_record_matches(schema, MANIFEST_ENTRY)

    def test_manifest_list_schema_matches_spec_table(self) -> None:
        codec, schema = header(write_manifest_list([ALL_NONE_META]))
        assert codec == "zstandard"
        assert_record_matches(schema, MANIFEST_FILE_META)

    def test_every_record_has_format_identifier_2(self) -> None:
        data = write_manifest_entries([add("a"), populated_entry()])
        assert [r["_VERSION"] for r in fastavro.reader(io.BytesIO(data))] == [2, 2]
        lst = write_manifest_list([ALL_NONE_META, POPULATED_META])
        assert [r["_VERSION"] for r in fastavro.reader(io.BytesIO(lst))] == [2, 2]

    @pytest.mark.parametrize(
        ("codec", "avro"),
        [
            ("none", "null"),
            ("NULL", "null"),
            ("deflate", "deflate"),
            ("ZSTD", "zstandard"),
            ("xz", "xz"),
            ("bzip2", "bzip2"),
        ],
    )
    def test_codecs(self, codec: str, avro: str) -> None:
        entries = [add("a"), populated_entry()]
        data = write_manifest_entries(entries, codec=codec)
        assert header(data)[0] == avro
        assert read_manifest_entries(data) == entries

    def test_unknown_codec_is_invalid(self) -> None:
        with pytest.raises(InvalidArgumentError, match="lz5"):
            write_manifest_entries([], codec="lz5")

    @pytest.mark.skipif(
        importlib.util.find_spec("cramjam") is not None or importlib.util.find_spec("snappy") is not None,
        reason="a snappy library is installed",
    )
    def test_snappy_without_library_is_invalid(self) -> None:
        with pytest.raises(InvalidArgumentError, match="snappy"):
            write_manifest_list([], codec="snappy")


# ---- round trips


class TestRoundTrip:
    def test_all_none_and_populated_entries(self) -> None:
        entries = [add("a"), populated_entry(), add("b", partition=EMPTY_ROW_BYTES, bucket=-1)]
        back = read_manifest_entries(write_manifest_entries(entries))
        assert back == entries
        assert back[1].file.file_source is FileSource.COMPACT and back[1].kind is FileKind.DELETE
        assert back[0].file.key_stats is SimpleStats.EMPTY  # shared, not re-allocated

    def test_creation_time_is_timestamp_millis_on_disk(self) -> None:
        entry = populated_entry()
        rec = next(iter(fastavro.reader(io.BytesIO(write_manifest_entries([entry])))))
        assert rec["_FILE"]["_CREATION_TIME"].timestamp() * 1000 == 1724404318750
        assert rec["_FILE"]["_KEY_STATS"]["_NULL_COUNTS"] == [0, None]

    def test_empty_manifest(self) -> None:
        assert read_manifest_entries(write_manifest_entries([])) == []
        assert read_manifest_list(write_manifest_list([])) == []

    def test_manifest_list(self) -> None:
        metas = [ALL_NONE_META, POPULATED_META]
        assert read_manifest_list(write_manifest_list(metas)) == metas

    def test_records_are_picklable_and_hashable(self) -> None:
        entry = populated_entry()
        assert pickle.loads(pickle.dumps(entry)) == entry
        assert len({entry, read_manifest_entries(write_manifest_entries([entry]))[0]}) == 1
        assert SimpleStats.EMPTY == SimpleStats(bytes(12), bytes(12), ())

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.builds(
                ManifestEntry,
                kind=st.sampled_from(FileKind),
                partition=st.binary(max_size=24),
                bucket=st.integers(-2, 2**31 - 1),
                total_buckets=st.integers(-2, 1024),
                file=st.builds(
                    DataFileMeta,
                    file_name=st.text(min_size=1, max_size=20),
                    file_size=st.integers(0, 2**62),
                    row_count=st.integers(0, 2**62),
                    min_key=st.binary(max_size=20),
                    max_key=st.binary(max_size=20),
                    key_stats=st.builds(
                        SimpleStats,
                        st.binary(max_size=16),
                        st.binary(max_size=16),
                        st.none() | st.tuples(st.none() | st.integers(0, 2**62)),
                    ),
                    value_stats=st.just(SimpleStats.EMPTY),
                    min_sequence_number=st.integers(-(2**63), 2**63 - 1),
                    max_sequence_number=st.integers(-(2**63), 2**63 - 1),
                    schema_id=st.integers(0, 2**40),
                    level=st.integers(0, 9),
                    extra_files=st.lists(st.text(max_size=8), max_size=2).map(tuple),
                    creation_time_millis=st.none() | st.integers(-(2**40), 2**42),
                    delete_row_count=st.none() | st.integers(0, 2**40),
                    embedded_file_index=st.none() | st.binary(max_size=8),
                    file_source=st.none() | st.sampled_from(FileSource),
                    value_stats_cols=st.none() | st.lists(st.text(max_size=5), max_size=3).map(tuple),
                    external_path=st.none() | st.text(max_size=10),
                    first_row_id=st.none() | st.integers(0, 2**62),
                    write_cols=st.none() | st.lists(st.text(max_size=5), max_size=3).map(tuple),
                ),
            ),
            max_size=5,
        )
    )
    def test_round_trip_property(self, entries: list[ManifestEntry]) -> None:
        assert read_manifest_entries(write_manifest_entries(entries)) == entries

    def test_unencodable_entry_is_invalid_argument(self) -> None:
        with pytest.raises(InvalidArgumentError):
            write_manifest_entries([add("a", file_size=None)])
        with pytest.raises(InvalidArgumentError):
            write_manifest_entries([add("a", row_count=2**64)])

    def test_read_throughput(self) -> None:
        entries = [
            add(
                f"data-{i:08d}-0.parquet",
                bucket=i % 8,
                creation_time_millis=1724404318750 + i,
                delete_row_count=0,
                file_source=FileSource.APPEND,
                value_stats=SimpleStats(PART, PART, (0,)),
            )
            for i in range(20_000)
        ]
        data = write_manifest_entries(entries)
        start = time.perf_counter()
        back = read_manifest_entries(data)
        elapsed = time.perf_counter() - start
        assert back == entries
        print(f"\nread_manifest_entries: {len(entries) / elapsed:,.0f} entries/s ({len(data):,} bytes)")


# ---- tolerant reading of other writers' files


def raw_file(schema: dict[str, Any], records: list[Any], codec: str = "null") -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    return buf.getvalue()


def stats_schema(name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {"name": "_NULL_COUNTS", "type": NULLABLE_LONG_ARRAY, "default": None},
        ],
    }


EMPTY_STATS_REC = {"_MIN_VALUES": EMPTY_ROW_BYTES, "_MAX_VALUES": EMPTY_ROW_BYTES, "_NULL_COUNTS": []}


def old_file_schema(extra_fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Paimon 0.8-style _FILE record: only the NOT NULL fields 0-11."""
    return {
        "type": "record",
        "name": "F",
        "fields": [
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_ROW_COUNT", "type": "long"},
            {"name": "_MIN_KEY", "type": "bytes"},
            {"name": "_MAX_KEY", "type": "bytes"},
            {"name": "_KEY_STATS", "type": stats_schema("K")},
            {"name": "_VALUE_STATS", "type": stats_schema("V")},
            {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_SCHEMA_ID", "type": "long"},
            {"name": "_LEVEL", "type": "int"},
            {"name": "_EXTRA_FILES", "type": STRING_ARRAY},
            *(extra_fields or []),
        ],
    }


def old_file_record(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "_FILE_NAME": name,
        "_FILE_SIZE": 5,
        "_ROW_COUNT": 1,
        "_MIN_KEY": EMPTY_ROW_BYTES,
        "_MAX_KEY": EMPTY_ROW_BYTES,
        "_KEY_STATS": EMPTY_STATS_REC,
        "_VALUE_STATS": EMPTY_STATS_REC,
        "_MIN_SEQUENCE_NUMBER": 0,
        "_MAX_SEQUENCE_NUMBER": 0,
        "_SCHEMA_ID": 0,
        "_LEVEL": 0,
        "_EXTRA_FILES": [],
        **extra,
    }


def entry_schema(file_schema: dict[str, Any], with_version: bool = True) -> dict[str, Any]:
    fields = [{"name": "_VERSION", "type": "int"}] if with_version else []
    fields += [
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": file_schema},
    ]
    return {"type": "record", "name": "E", "fields": fields}


def entry_record(file_rec: dict[str, Any], version: int | None = 2, kind: int = 0) -> dict[str, Any]:
    rec = {
        "_KIND": kind,
        "_PARTITION": EMPTY_ROW_BYTES,
        "_BUCKET": 0,
        "_TOTAL_BUCKETS": -1,
        "_FILE": file_rec,
    }
    if version is not None:
        rec["_VERSION"] = version
    return rec


class TestTolerantRead:
    def test_missing_optional_fields_read_as_none(self) -> None:
        data = raw_file(entry_schema(old_file_schema()), [entry_record(old_file_record("old"))])
        (entry,) = read_manifest_entries(data)
        assert entry.file == make_file("old", file_size=5, row_count=1, max_sequence_number=0)
        assert entry.total_buckets == -1

    def test_missing_version_field_is_accepted(self) -> None:
        data = raw_file(
            entry_schema(old_file_schema(), with_version=False),
            [entry_record(old_file_record("v"), version=None)],
        )
        assert read_manifest_entries(data)[0].file.file_name == "v"

    def test_top_level_null_union_and_plain_long_creation_time(self) -> None:
        schema = entry_schema(old_file_schema([{"name": "_CREATION_TIME", "type": ["null", "long"]}]))
        data = raw_file(["null", schema], [entry_record(old_file_record("u", _CREATION_TIME=123))])
        assert read_manifest_entries(data)[0].file.creation_time_millis == 123

    def test_unknown_and_reordered_fields_are_ignored(self) -> None:
        extra = [
            {"name": "_WRITE_COLS_SEQUENCES", "type": ["null", {"type": "array", "items": "long"}]},
            {"name": "_FILE_SOURCE", "type": ["null", "int"]},
        ]
        schema = entry_schema(old_file_schema(extra))
        schema["fields"].reverse()
        rec = entry_record(old_file_record("n", _WRITE_COLS_SEQUENCES=[1, 2], _FILE_SOURCE=1))
        (entry,) = read_manifest_entries(raw_file(schema, [rec], codec="deflate"))
        assert entry.file.file_source is FileSource.COMPACT and entry.file.file_name == "n"

    def test_pypaimon_style_manifest_list_with_extra_fields(self) -> None:
        schema = {
            "type": "record",
            "name": "ManifestFileMeta",
            "fields": [
                {"name": "_VERSION", "type": "int"},
                {"name": "_FILE_NAME", "type": "string"},
                {"name": "_FILE_SIZE", "type": "long"},
                {"name": "_NUM_ADDED_FILES", "type": "long"},
                {"name": "_NUM_DELETED_FILES", "type": "long"},
                {"name": "_PARTITION_STATS", "type": stats_schema("P")},
                {"name": "_SCHEMA_ID", "type": "long"},
                {"name": "_MIN_ROW_ID", "type": ["null", "long"]},
                {"name": "_MAX_ROW_ID", "type": ["null", "long"]},
                {"name": "_TOTAL_BUCKETS", "type": ["null", "int"]},
                {"name": "_EXTRA_FILES", "type": ["null", STRING_ARRAY]},
            ],
        }
        rec = {
            "_VERSION": 2,
            "_FILE_NAME": "m",
            "_FILE_SIZE": 9,
            "_NUM_ADDED_FILES": 1,
            "_NUM_DELETED_FILES": 0,
            "_PARTITION_STATS": EMPTY_STATS_REC,
            "_SCHEMA_ID": 0,
            "_MIN_ROW_ID": None,
            "_MAX_ROW_ID": 4,
            "_TOTAL_BUCKETS": 2,
            "_EXTRA_FILES": None,
        }
        (meta,) = read_manifest_list(raw_file(schema, [rec], codec="zstandard"))
        assert meta == ManifestFileMeta("m", 9, 1, 0, SimpleStats.EMPTY, 0, max_row_id=4)


# ---- corrupt input


class TestCorrupt:
    def test_truncated_manifest_is_corrupt(self) -> None:
        data = write_manifest_entries([add(f"f{i}") for i in range(50)] + [populated_entry()])
        for cut in (0, 3, 20, len(data) // 2, len(data) - 17, len(data) - 1):
            with pytest.raises(CorruptMetadataError, match="manifest file"):
                read_manifest_entries(data[:cut])

    def test_truncated_manifest_list_is_corrupt(self) -> None:
        data = write_manifest_list([POPULATED_META] * 10)
        for cut in (0, len(data) // 2, len(data) - 1):
            with pytest.raises(CorruptMetadataError, match="manifest list"):
                read_manifest_list(data[:cut])

    def test_flipped_payload_byte_is_corrupt(self) -> None:
        data = bytearray(write_manifest_entries([add(f"f{i}") for i in range(20)], codec="zstd"))
        data[-40] ^= 0xFF  # inside the compressed block
        with pytest.raises(CorruptMetadataError):
            read_manifest_entries(bytes(data))

    def test_garbage_is_corrupt(self) -> None:
        with pytest.raises(CorruptMetadataError):
            read_manifest_entries(b"not an avro file at all")
        with pytest.raises(CorruptMetadataError):
            read_manifest_list(write_manifest_entries([add("x")]))  # a manifest is not a manifest list

    @pytest.mark.parametrize(
        ("version", "kind", "match"), [(1, 0, "recreate"), (3, 0, "_VERSION"), (2, 7, "KeyError")]
    )
    def test_bad_version_or_kind_is_corrupt(self, version: int, kind: int, match: str) -> None:
        data = raw_file(entry_schema(old_file_schema()), [entry_record(old_file_record("x"), version, kind)])
        with pytest.raises(CorruptMetadataError, match=match):
            read_manifest_entries(data)

    def test_null_record_is_corrupt(self) -> None:
        data = raw_file(["null", entry_schema(old_file_schema())], [None])
        with pytest.raises(CorruptMetadataError, match="null record"):
            read_manifest_entries(data)

    def test_missing_required_field_is_corrupt(self) -> None:
        schema = entry_schema(old_file_schema())
        schema["fields"][-1]["type"]["fields"] = [
            f for f in schema["fields"][-1]["type"]["fields"] if f["name"] != "_LEVEL"
        ]
        rec = entry_record({k: v for k, v in old_file_record("x").items() if k != "_LEVEL"})
        with pytest.raises(CorruptMetadataError, match="_LEVEL"):
            read_manifest_entries(raw_file(schema, [rec]))


# ---- merge semantics (§6.5)


class TestMerge:
    def test_delete_cancels_add_and_order_is_kept(self) -> None:
        a, b, c = add("a"), add("b"), add("c")
        assert merge_entries([a, b, delete(a), c]) == [b, c]
        assert live_files([a, b, delete(a), c]) == [b, c]

    def test_unmatched_delete_is_kept_so_deltas_merge_on_base(self) -> None:
        a, b, c = add("a"), add("b"), add("c")
        base = merge_entries([a, b])
        delta = merge_entries([delete(a), c])
        assert delta == [delete(a), c]
        assert merge_entries(base + delta) == merge_entries([a, b, delete(a), c]) == [b, c]

    def test_duplicate_add_is_corrupt(self) -> None:
        with pytest.raises(CorruptMetadataError, match="added twice"):
            merge_entries([add("a"), add("a")])

    def test_dangling_delete_in_live_files_is_corrupt(self) -> None:
        with pytest.raises(CorruptMetadataError, match="never added"):
            live_files([add("b"), delete(add("a"))])

    @pytest.mark.parametrize(
        "other",
        [
            lambda: add("a", partition=b"\x00\x00\x00\x01" + bytes(15) + b"\x01"),
            lambda: add("a", bucket=1),
            lambda: add("a", level=1),
            lambda: add("a", extra_files=("a.index",)),
            lambda: add("a", embedded_file_index=b"\x01"),
            lambda: add("a", external_path="s3://x/a"),
        ],
    )
    def test_identifier_components_must_all_match(self, other: Any) -> None:
        a = add("a")
        assert live_files([a, other(), delete(a)]) == [other()]
        with pytest.raises(CorruptMetadataError):
            live_files([a, delete(other())])

    def test_identifier_ignores_stats_and_sizes(self) -> None:
        a = add("a", row_count=10, creation_time_millis=5)
        assert live_files([a, delete(add("a", row_count=10))]) == []
        assert a.identifier == (PART, 0, 0, "a", (), None, None)

    def test_upgrade_moves_level_only(self) -> None:
        f = populated_entry().file
        up = f.upgrade(5)
        assert up.level == 5 and replace(up, level=f.level) == f
        with pytest.raises(InvalidArgumentError, match="higher level"):
            f.upgrade(f.level)

    @settings(max_examples=80, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from("abcde"), st.booleans()), max_size=30), st.integers(0, 30))
    def test_split_merge_equals_whole_merge(self, ops: list[tuple[str, bool]], split: int) -> None:
        # Build a legal history against a set model (file names are never reused, as in Paimon),
        # then merge it whole and in two halves.
        live: set[str] = set()
        used: set[str] = set()
        history: list[ManifestEntry] = []
        for name, want_add in ops:
            if want_add and name not in used:
                live.add(name)
                used.add(name)
                history.append(add(name))
            elif not want_add and name in live:
                live.discard(name)
                history.append(delete(add(name)))
        whole = live_files(history)
        assert {e.file.file_name for e in whole} == live
        halves = merge_entries(merge_entries(history[:split]) + merge_entries(history[split:]))
        assert live_files(halves) == whole
