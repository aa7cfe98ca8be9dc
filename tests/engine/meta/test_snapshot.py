"""Snapshot / tag / consumer JSON serde against the shapes Java Paimon and pypaimon write."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptMetadataError
from engine.meta.manifest import (
    live_files,
    read_manifest_entries,
    read_manifest_list,
    write_manifest_entries,
    write_manifest_list,
)
from engine.meta.snapshot import (
    BATCH_COMMIT_IDENTIFIER,
    LONG_MIN_VALUE,
    CommitKind,
    Consumer,
    FrozenMap,
    Snapshot,
    Tag,
)
from tests.compat.harness import locate_venv

# A snapshot in the shape Java Paimon writes today (docs/design/format-notes.md §3).
SPEC_EXAMPLE = """{
  "version" : 3,
  "uuid" : "0b1c6e0e-6d0a-4a53-9a6f-3f3b3f4c9a10",
  "id" : 2,
  "schemaId" : 0,
  "baseManifestList" : "manifest-list-5e4f...-0",
  "baseManifestListSize" : 1012,
  "deltaManifestList" : "manifest-list-5e4f...-1",
  "deltaManifestListSize" : 1020,
  "commitUser" : "7d758485-981d-4b1a-a0c6-d34c3eb254bf",
  "commitIdentifier" : 9223372036854775807,
  "commitKind" : "APPEND",
  "timeMillis" : 1724404318750,
  "totalRecordCount" : 10,
  "deltaRecordCount" : 9,
  "nextRowId" : 0
}"""

# Java's declaration order of every key (§3).
JAVA_KEY_ORDER = [
    "version",
    "uuid",
    "id",
    "schemaId",
    "baseManifestList",
    "baseManifestListSize",
    "deltaManifestList",
    "deltaManifestListSize",
    "changelogManifestList",
    "changelogManifestListSize",
    "indexManifest",
    "commitUser",
    "writerVersion",
    "commitIdentifier",
    "commitKind",
    "timeMillis",
    "totalRecordCount",
    "deltaRecordCount",
    "changelogRecordCount",
    "watermark",
    "statistics",
    "properties",
    "nextRowId",
    "operation",
]
REQUIRED_KEYS = [
    "version",
    "id",
    "schemaId",
    "baseManifestList",
    "deltaManifestList",
    "commitUser",
    "commitIdentifier",
    "commitKind",
    "timeMillis",
    "totalRecordCount",
    "deltaRecordCount",
]


def minimal() -> Snapshot:
    return Snapshot(
        id=1,
        schema_id=0,
        base_manifest_list="manifest-list-a-0",
        delta_manifest_list="manifest-list-a-1",
        commit_user="user",
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind=CommitKind.APPEND,
        time_millis=1724404318750,
        total_record_count=3,
        delta_record_count=3,
    )


def populated() -> Snapshot:
    return Snapshot(
        id=7,
        schema_id=2,
        base_manifest_list="manifest-list-b-0",
        delta_manifest_list="manifest-list-b-1",
        commit_user="u-1",
        commit_identifier=42,
        commit_kind=CommitKind.COMPACT,
        time_millis=1,
        total_record_count=100,
        delta_record_count=-4,
        version=3,
        base_manifest_list_size=1012,
        delta_manifest_list_size=1020,
        changelog_manifest_list="manifest-list-b-2",
        changelog_manifest_list_size=999,
        index_manifest="index-manifest-c-0",
        changelog_record_count=5,
        watermark=1700000000000,
        statistics="stat-1",
        properties={"k": "v", "ünï": "çødé"},
        next_row_id=11,
        operation="OVERWRITE",
        writer_version="dyntable-0.1.0",
        uuid="0b1c6e0e-6d0a-4a53-9a6f-3f3b3f4c9a10",
    )


class TestSnapshot:
    def test_spec_example_round_trips_byte_for_byte(self) -> None:
        snap = Snapshot.from_json(SPEC_EXAMPLE)
        assert snap.id == 2 and snap.commit_kind is CommitKind.APPEND
        assert snap.commit_identifier == BATCH_COMMIT_IDENTIFIER
        assert snap.base_manifest_list_size == 1012 and snap.next_row_id == 0
        assert snap.uuid == "0b1c6e0e-6d0a-4a53-9a6f-3f3b3f4c9a10"
        out = snap.to_json()
        assert list(json.loads(out)) == list(json.loads(SPEC_EXAMPLE))
        assert out == SPEC_EXAMPLE  # Jackson's default pretty printer layout

    def test_minimal_writes_only_required_keys(self) -> None:
        text = minimal().to_json()
        assert list(json.loads(text)) == REQUIRED_KEYS
        assert "null" not in text
        assert Snapshot.from_json(text) == minimal()

    def test_populated_round_trip_and_java_key_order(self) -> None:
        snap = populated()
        text = snap.to_json()
        assert list(json.loads(text)) == JAVA_KEY_ORDER
        back = Snapshot.from_json(text)
        assert back == snap
        assert dict(back.properties or {}) == {"k": "v", "ünï": "çødé"}
        assert '"ünï" : "çødé"' in text  # UTF-8, not \\u escapes, like Jackson
        assert '"properties" : {\n    "k" : "v",' in text

    def test_records_are_hashable_picklable_and_immutable(self) -> None:
        snap = populated()
        assert pickle.loads(pickle.dumps(snap)) == snap
        assert hash(snap) == hash(Snapshot.from_json(snap.to_json()))
        assert isinstance(snap.properties, FrozenMap)
        with pytest.raises(TypeError):
            snap.properties["x"] = "y"  # type: ignore[index]
        with pytest.raises(AttributeError):
            snap.id = 3  # type: ignore[misc]

    def test_empty_properties_are_stored_as_none(self) -> None:
        snap = Snapshot(**{**_kwargs(minimal()), "properties": {}})
        assert snap.properties is None
        assert "properties" not in snap.to_json()

    def test_commit_kind_given_as_string_is_normalised(self) -> None:
        snap = Snapshot(**{**_kwargs(minimal()), "commit_kind": "OVERWRITE"})
        assert snap.commit_kind is CommitKind.OVERWRITE

    def test_reads_pypaimon_shape(self) -> None:
        # pypaimon 2.1 writes ", "/": " separators and a different key order.
        text = json.dumps(
            {
                "version": 3,
                "id": 2,
                "schemaId": 0,
                "baseManifestList": "b",
                "deltaManifestList": "d",
                "totalRecordCount": 6,
                "deltaRecordCount": 3,
                "commitUser": "e4",
                "commitIdentifier": BATCH_COMMIT_IDENTIFIER,
                "commitKind": "APPEND",
                "timeMillis": 17,
                "baseManifestListSize": 1355,
                "deltaManifestListSize": 1355,
                "uuid": "x",
                "writerVersion": "python-2.1.0-3a5f",
            },
            indent=2,
        )
        snap = Snapshot.from_json(text)
        assert snap.writer_version == "python-2.1.0-3a5f" and snap.delta_manifest_list_size == 1355

    def test_reads_old_java_shape_and_ignores_unknown_keys(self) -> None:
        # Paimon 1.3 wrote explicit nulls and logOffsets; newer versions add keys we do not know.
        d = json.loads(minimal().to_json())
        d.update(
            changelogManifestList=None,
            logOffsets={},
            changelogRecordCount=0,
            watermark=LONG_MIN_VALUE,
            totalFileSize=123,
            totalDataFiles=4,
            futureKey=[1, {"a": None}],
        )
        snap = Snapshot.from_json(json.dumps(d))
        assert snap.changelog_manifest_list is None
        assert snap.changelog_record_count == 0
        assert snap.watermark is None  # Long.MIN_VALUE means "no watermark"

    def test_accepts_bytes(self) -> None:
        assert Snapshot.from_json(populated().to_json().encode()) == populated()

    def test_every_truncation_is_corrupt(self) -> None:
        text = populated().to_json()
        for cut in range(0, len(text) - 1):
            with pytest.raises(CorruptMetadataError):
                Snapshot.from_json(text[:cut])

    @pytest.mark.parametrize("key", REQUIRED_KEYS)
    def test_missing_required_key_is_corrupt(self, key: str) -> None:
        d = json.loads(minimal().to_json())
        del d[key]
        with pytest.raises(CorruptMetadataError, match=key):
            Snapshot.from_json(json.dumps(d))

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("id", "1"),
            ("id", 1.5),
            ("id", True),
            ("schemaId", None),
            ("commitUser", 3),
            ("commitKind", "MERGE"),
            ("baseManifestListSize", "big"),
            ("properties", {"a": 1}),
            ("properties", [1]),
            ("indexManifest", 5),
        ],
    )
    def test_wrong_value_type_is_corrupt(self, key: str, value: object) -> None:
        d = json.loads(minimal().to_json())
        d[key] = value
        with pytest.raises(CorruptMetadataError, match=key):
            Snapshot.from_json(json.dumps(d))

    @pytest.mark.parametrize("text", ["", "   ", "[]", "null", "3", b"\xff\xfe"])
    def test_not_an_object_is_corrupt(self, text: str | bytes) -> None:
        with pytest.raises(CorruptMetadataError):
            Snapshot.from_json(text)

    @settings(max_examples=75, deadline=None)
    @given(
        st.builds(
            Snapshot,
            id=st.integers(1, 2**63 - 1),
            schema_id=st.integers(0, 2**31),
            base_manifest_list=st.text(min_size=1),
            delta_manifest_list=st.text(min_size=1),
            commit_user=st.text(),
            commit_identifier=st.integers(-(2**63), 2**63 - 1),
            commit_kind=st.sampled_from(CommitKind),
            time_millis=st.integers(0, 2**62),
            total_record_count=st.integers(0, 2**62),
            delta_record_count=st.integers(-(2**62), 2**62),
            base_manifest_list_size=st.none() | st.integers(0, 2**40),
            changelog_manifest_list=st.none() | st.text(min_size=1),
            watermark=st.none() | st.integers(LONG_MIN_VALUE + 1, 2**63 - 1),
            properties=st.none() | st.dictionaries(st.text(), st.text(), max_size=3),
            next_row_id=st.none() | st.integers(0, 2**40),
            operation=st.none() | st.sampled_from(["WRITE", "DELETE", "MERGE"]),
            uuid=st.none() | st.uuids().map(str),
        )
    )
    def test_round_trip_property(self, snap: Snapshot) -> None:
        text = snap.to_json()
        assert Snapshot.from_json(text) == snap
        keys = list(json.loads(text))
        assert keys == [k for k in JAVA_KEY_ORDER if k in keys]


def _kwargs(snap: Snapshot) -> dict[str, object]:
    return {name: getattr(snap, name) for name in Snapshot.__slots__}


class TestTag:
    def test_without_ttl_is_the_snapshot_json(self) -> None:
        tag = Tag(populated())
        assert tag.to_json() == populated().to_json()
        assert Tag.from_json(tag.to_json()) == tag

    def test_with_ttl_java_shape(self) -> None:
        tag = Tag(minimal(), create_time=datetime(2024, 7, 18, 10, 30), time_retained_ms=86_400_000)
        text = tag.to_json()
        assert text.endswith(
            '"tagCreateTime" : [ 2024, 7, 18, 10, 30 ],\n  "tagTimeRetained" : 86400.000000000\n}'
        )
        assert list(json.loads(text))[-2:] == ["tagCreateTime", "tagTimeRetained"]
        assert Tag.from_json(text) == tag
        # Java and pypaimon readers of the snapshot part ignore the two tag keys.
        assert Snapshot.from_json(text) == minimal()

    @pytest.mark.parametrize(
        ("dt", "array"),
        [
            (datetime(2024, 7, 18, 10, 30, 5), [2024, 7, 18, 10, 30, 5]),
            (datetime(2024, 7, 18, 0, 0, 0, 123456), [2024, 7, 18, 0, 0, 0, 123456000]),
            (datetime(2024, 1, 2, 3, 4), [2024, 1, 2, 3, 4]),
        ],
    )
    def test_create_time_drops_trailing_zero_components(self, dt: datetime, array: list[int]) -> None:
        text = Tag(minimal(), create_time=dt).to_json()
        assert json.loads(text)["tagCreateTime"] == array
        assert Tag.from_json(text).create_time == dt

    def test_reads_java_nanos_and_pypaimon_seconds(self) -> None:
        d = json.loads(minimal().to_json())
        d["tagCreateTime"] = [2024, 7, 18, 10, 30, 1, 123456789]  # Java nanos: truncated to micros
        d["tagTimeRetained"] = 3600.5  # pypaimon writes td.total_seconds()
        tag = Tag.from_json(json.dumps(d))
        assert tag.create_time == datetime(2024, 7, 18, 10, 30, 1, 123456)
        assert tag.time_retained_ms == 3_600_500
        d["tagCreateTime"] = "2024-07-18T10:30:00"  # Jackson also accepts ISO strings
        assert Tag.from_json(json.dumps(d)).create_time == datetime(2024, 7, 18, 10, 30)

    def test_sub_second_retention_keeps_nine_digits(self) -> None:
        text = Tag(minimal(), time_retained_ms=1_500).to_json()
        assert '"tagTimeRetained" : 1.500000000' in text
        assert Tag.from_json(text).time_retained_ms == 1_500

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("tagCreateTime", [2024, 13, 1, 0, 0]),
            ("tagCreateTime", [2024]),
            ("tagCreateTime", {"y": 1}),
            ("tagTimeRetained", "PT24H"),
            ("tagTimeRetained", True),
        ],
    )
    def test_bad_tag_keys_are_corrupt(self, key: str, value: object) -> None:
        d = json.loads(minimal().to_json())
        d[key] = value
        with pytest.raises(CorruptMetadataError, match=key):
            Tag.from_json(json.dumps(d))


class TestConsumer:
    def test_round_trip(self) -> None:
        text = Consumer(next_snapshot=12).to_json()
        assert json.loads(text) == {"nextSnapshot": 12}
        assert Consumer.from_json(text) == Consumer(12)
        assert Consumer.from_json('{"nextSnapshot":5}') == Consumer(5)  # pypaimon's compact form

    @pytest.mark.parametrize("text", ["{}", '{"nextSnapshot": "5"}', '{"nextSnapshot"', ""])
    def test_bad_content_is_corrupt(self, text: str) -> None:
        with pytest.raises(CorruptMetadataError):
            Consumer.from_json(text)


# ---- interoperability with pypaimon (its own virtual environment, run as a subprocess)


def _pypaimon_python() -> str:
    """pypaimon's venv as tests/compat finds it ($DYNTABLE_PYPAIMON_PYTHON first); under CI its
    absence is a failure, elsewhere a skip that names how to provide it."""
    python, how = locate_venv()
    if python is not None:
        return python
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"pypaimon unavailable under CI: {how}")
    pytest.skip(f"pypaimon unavailable: {how}")


# Runs inside the pypaimon venv. "write": a partitioned PK table with two commits.
# "read": the table's rows (latest and at tag t1), the tag as pypaimon parses it, and a check of
# every manifest-type file's writer schema against pypaimon's own schema objects.
_PYPAIMON_SCRIPT = r"""
import glob, io, json, os, sys
import fastavro, pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.manifest.schema.manifest_entry import MANIFEST_ENTRY_SCHEMA
from pypaimon.manifest.schema.manifest_file_meta import MANIFEST_FILE_META_SCHEMA

mode, wh = sys.argv[1], sys.argv[2]
cat = CatalogFactory.create({"warehouse": wh})
schema = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.string())])
if mode == "write":
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(
        schema, partition_keys=["p"], primary_keys=["p", "k"], options={"bucket": "2"}), False)
    t = cat.get_table("db.t")
    for i in range(2):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"k": [1, 2, 3], "p": ["a", "b", "a"], "v": [f"x{i}", f"y{i}", f"z{i}"]},
                               schema=schema))
        c.commit(w.prepare_commit())
        w.close(); c.close()
    print(json.dumps({"table_path": t.table_path}))
else:
    t = cat.get_table("db.t")
    def rows(table):
        rb = table.new_read_builder()
        arrow = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        return sorted(tuple(r[c] for c in ("k", "p", "v")) for r in arrow.to_pylist())
    out = {"latest": rows(t)}
    tag = t.tag_manager().get("t1")
    if tag is not None:
        out["tag_rows"] = rows(t.copy({"scan.tag-name": "t1"}))
        out["tag_create_time"] = tag.tag_create_time.isoformat()
        out["tag_retained_s"] = tag.tag_time_retained.total_seconds()
        out["tag_snapshot_id"] = tag.id
    # fastavro's own resolution insists on equal record names, which neither Java nor pypaimon
    # needs; compare field by field instead: every pypaimon field must exist with the same type
    # (record names aside) or be optional with a default.
    def strip(t):
        if isinstance(t, dict):
            return {k: strip(v) for k, v in t.items() if k not in ("name", "namespace")}
        if isinstance(t, list):
            return [strip(v) for v in t]
        return t
    def compare(writer, reader, where, problems):
        fields = {f["name"]: f for f in writer["fields"]}
        for rf in reader["fields"]:
            wf = fields.get(rf["name"])
            if wf is None:
                if "default" not in rf:
                    problems.append(where + rf["name"] + " missing")
            elif isinstance(rf["type"], dict) and rf["type"].get("type") == "record":
                compare(wf["type"], rf["type"], where + rf["name"] + ".", problems)
            elif strip(wf["type"]) != strip(rf["type"]):
                problems.append(where + rf["name"] + " type differs")
    problems, records = [], 0
    for path in glob.glob(os.path.join(t.table_path, "manifest", "*")):
        reader_schema = MANIFEST_FILE_META_SCHEMA if "manifest-list" in path else MANIFEST_ENTRY_SCHEMA
        with open(path, "rb") as f:
            r = fastavro.reader(f)
            compare(r.writer_schema, reader_schema, os.path.basename(path) + ":", problems)
            records += sum(1 for _ in r)
    out["schema_problems"], out["records"] = problems, records
    print(json.dumps(out))
"""


def _run_pypaimon(tmp_path: Path, python: str, *args: str) -> dict[str, Any]:
    script = tmp_path / "pypaimon_h4.py"
    script.write_text(_PYPAIMON_SCRIPT)
    proc = subprocess.run([python, str(script), *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.compat
def test_pypaimon_reads_our_metadata_and_we_read_its(tmp_path: Path) -> None:
    python = _pypaimon_python()
    wh = tmp_path / "wh"
    table = Path(_run_pypaimon(tmp_path, python, "write", str(wh))["table_path"])
    before = _run_pypaimon(tmp_path, python, "read", str(wh))
    assert len(before["latest"]) == 3

    # 1. Read pypaimon's metadata chain with our readers and check it against the files on disk.
    manifest_dir = table / "manifest"
    snapshots = {i: Snapshot.from_json((table / "snapshot" / f"snapshot-{i}").read_text()) for i in (1, 2)}
    data_files = {p.name: p.stat().st_size for p in table.glob("p=*/bucket-*/*.parquet")}
    for snap in snapshots.values():
        metas = [
            m
            for name in (snap.base_manifest_list, snap.delta_manifest_list)
            for m in read_manifest_list((manifest_dir / name).read_bytes())
        ]
        for m in metas:
            assert m.file_size == (manifest_dir / m.file_name).stat().st_size
        live = live_files(
            e for m in metas for e in read_manifest_entries((manifest_dir / m.file_name).read_bytes())
        )
        assert {e.file.file_name for e in live} <= set(data_files)
        assert all(e.file.file_size == data_files[e.file.file_name] for e in live)
        assert sum(e.file.row_count for e in live) == snap.total_record_count

    # 2. Rewrite every manifest, manifest list and snapshot with our writers (exact new sizes),
    #    and add a tag with a retention; pypaimon must read the same table.
    list_names = {n for s in snapshots.values() for n in (s.base_manifest_list, s.delta_manifest_list)}
    sizes: dict[str, int] = {}
    for list_name in sorted(list_names):
        for m in read_manifest_list((manifest_dir / list_name).read_bytes()):
            if m.file_name not in sizes:
                path = manifest_dir / m.file_name
                path.write_bytes(write_manifest_entries(read_manifest_entries(path.read_bytes())))
                sizes[m.file_name] = path.stat().st_size
    list_sizes: dict[str, int] = {}
    for list_name in sorted(list_names):
        path = manifest_dir / list_name
        metas = [replace(m, file_size=sizes[m.file_name]) for m in read_manifest_list(path.read_bytes())]
        path.write_bytes(write_manifest_list(metas))
        list_sizes[list_name] = path.stat().st_size
    for i, snap in snapshots.items():
        snapshots[i] = replace(
            snap,
            base_manifest_list_size=list_sizes[snap.base_manifest_list],
            delta_manifest_list_size=list_sizes[snap.delta_manifest_list],
        )
        (table / "snapshot" / f"snapshot-{i}").write_text(snapshots[i].to_json())
    (table / "tag").mkdir()
    tag = Tag(snapshots[1], create_time=datetime(2024, 7, 18, 10, 30, 5), time_retained_ms=86_400_000)
    (table / "tag" / "tag-t1").write_text(tag.to_json())

    after = _run_pypaimon(tmp_path, python, "read", str(wh))
    assert after["latest"] == before["latest"]
    assert sorted(r[2] for r in after["tag_rows"]) == ["x0", "y0", "z0"]
    assert after["tag_create_time"] == "2024-07-18T10:30:05"
    assert after["tag_retained_s"] == 86400.0 and after["tag_snapshot_id"] == 1
    assert after["schema_problems"] == [] and after["records"] == before["records"]
