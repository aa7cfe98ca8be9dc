"""Iceberg metadata publishing (engine.iceberg) without an Iceberg reader: the files and their
contents, incremental manifests, catch-up after a failed step, refusals, orphan cleanup and the
rebuild. tests/compat/iceberg checks the same metadata with pyiceberg."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import time
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

import engine.iceberg.commit as iceberg_commit
from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.files.reader import data_file_path
from engine.iceberg import live_metadata_files, rebuild, sync
from engine.iceberg.avro import manifest_list_schema, read_container, write_container
from engine.ops.orphan_files import remove_orphan_files
from engine.schema_changes import SetOption

ICEBERG = {"metadata.iceberg.storage": "table-location"}
_VALUES = {pa.time64("us").id: dt.time(1), pa.int64().id: 1}
SCHEMA = pa.schema([("a", pa.int64()), ("p", pa.string())])


def _rows(*a: int, p: str = "x") -> pa.Table:
    return pa.table({"a": list(a), "p": [p] * len(a)}, schema=SCHEMA)


def _meta_dir(table) -> Path:
    return Path(table.path) / "metadata"


def _metadata(table, version: int | None = None) -> dict:
    version = version or int((_meta_dir(table) / "version-hint.text").read_text())
    return json.loads((_meta_dir(table) / f"v{version}.metadata.json").read_text())


def _manifest_list(snapshot: dict) -> list[dict]:
    return read_container(Path(snapshot["manifest-list"]).read_bytes(), "list")[0]


def _entries(snapshot: dict) -> list[dict]:
    out = []
    for m in _manifest_list(snapshot):
        out.extend(read_container(Path(m["manifest_path"]).read_bytes(), "manifest")[0])
    return out


def _live_paths(snapshot: dict) -> set[str]:
    return {e["data_file"]["file_path"] for e in _entries(snapshot) if e["status"] != 2}


def _data_paths(table, snapshot_id: int | None = None) -> set[str]:
    """The live data files of a snapshot as dyntable's scan plans them."""
    plan = table.new_read_builder()
    if snapshot_id is not None:
        plan = plan.at(snapshot_id=snapshot_id)
    store = table.store
    return {
        data_file_path(store, store.partition_dir(s.partition_values), s.bucket, f)
        for s in plan.new_scan().plan().splits
        for f in s.files
    }


def test_layout_and_paimon_names(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=ICEBERG)
    t.write_arrow(_rows(1, 2))
    t.write_arrow(_rows(3, p="y"))
    names = sorted(os.listdir(_meta_dir(t)))
    assert "version-hint.text" in names and "v2.metadata.json" in names
    assert "v1.metadata.json" not in names  # delete-after-commit, previous-versions-max 0
    assert any(n.startswith("snap-") and n.endswith(".avro") for n in names)
    assert any(n.endswith("-m1.avro") for n in names)
    meta = _metadata(t)
    assert meta["format-version"] == 2 and meta["location"] == t.path
    assert meta["current-snapshot-id"] == 2 and [s["snapshot-id"] for s in meta["snapshots"]] == [1, 2]
    assert meta["partition-specs"] == [
        {
            "spec-id": 0,
            "fields": [
                {"name": "p", "transform": "identity", "source-id": t.schema.field("p").id, "field-id": 1000}
            ],
        }
    ]
    assert [f["id"] for f in meta["schemas"][0]["fields"]] == [f.id for f in t.schema.fields]
    snap = meta["snapshots"][1]
    assert snap["parent-snapshot-id"] == 1 and snap["sequence-number"] == 2
    assert snap["summary"]["operation"] == "append" and snap["summary"]["total-records"] == "3"
    assert _live_paths(snap) == _data_paths(t.refresh())


def test_manifests_are_reused_and_readable_by_fastavro(catalog) -> None:
    t = catalog.create_table(
        "db.t", SCHEMA, options={**ICEBERG, "metadata.iceberg.manifest-compression": "deflate"}
    )
    for i in range(3):
        t.write_arrow(_rows(i))
    snaps = _metadata(t)["snapshots"]
    lists = [[m["manifest_path"] for m in _manifest_list(s)] for s in snaps]
    assert (
        lists[1][:1] == lists[0] and lists[2][:2] == lists[1]
    )  # an append adds one manifest, reuses the rest
    with open(lists[2][0], "rb") as f:
        reader = fastavro.reader(f)
        fields = {fd["name"]: fd["field-id"] for fd in reader.writer_schema["fields"]}
        assert fields == {
            "status": 0,
            "snapshot_id": 1,
            "sequence_number": 3,
            "file_sequence_number": 4,
            "data_file": 2,
        }
        assert reader.metadata["format-version"] == "2" and reader.metadata["content"] == "data"
        (entry,) = list(reader)
        assert entry["status"] == 1 and entry["snapshot_id"] == 1


def test_overwrite_rewrites_only_manifests_holding_deleted_files(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=ICEBERG)
    t.write_arrow(_rows(1, p="x"))
    t.write_arrow(_rows(2, p="y"))
    t.write_arrow(_rows(3, p="x"), overwrite="dynamic")  # replaces partition x only
    t = t.refresh()
    snaps = _metadata(t)["snapshots"]
    before = {m["manifest_path"] for m in _manifest_list(snaps[1])}
    after = _manifest_list(snaps[2])
    assert snaps[2]["summary"]["operation"] == "overwrite"
    kept = [m for m in after if m["manifest_path"] in before]
    assert len(kept) == 1 and kept[0]["added_snapshot_id"] == 2  # y's manifest, untouched
    statuses = sorted(e["status"] for e in _entries(snaps[2]))
    assert statuses == [1, 1, 2]  # y's reused manifest (ADDED by 2), x's old file DELETED, x's new ADDED
    assert _live_paths(snaps[2]) == _data_paths(t)


def test_small_manifests_are_merged(catalog) -> None:
    opts = {
        **ICEBERG,
        "metadata.iceberg.compaction.min.file-num": "2",
        "metadata.iceberg.compaction.max.file-num": "3",
    }
    t = catalog.create_table("db.t", SCHEMA, options=opts)
    for i in range(6):
        t.write_arrow(_rows(i))
    t = t.refresh()
    last = _metadata(t)["snapshots"][-1]
    assert len(_manifest_list(last)) < 3
    assert _live_paths(last) == _data_paths(t)
    assert len(_live_paths(last)) == 6


def test_a_failed_iceberg_step_never_fails_the_commit_and_the_next_catches_up(
    catalog, monkeypatch, caplog
) -> None:
    t = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    t.write_arrow(_rows(1))
    real = iceberg_commit.write_container
    monkeypatch.setattr(
        iceberg_commit, "write_container", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full"))
    )
    with caplog.at_level(logging.WARNING, logger="engine.iceberg"):
        t.write_arrow(_rows(2))  # committed all the same
    assert "disk full" in caplog.text
    t = t.refresh()
    assert t.latest_snapshot().id == 2 and sorted(t.to_arrow().column("a").to_pylist()) == [1, 2]
    assert (_meta_dir(t) / "version-hint.text").read_text() == "1"
    assert not (_meta_dir(t) / "v2.metadata.json").exists()
    monkeypatch.setattr(iceberg_commit, "write_container", real)
    t.write_arrow(_rows(3))
    meta = _metadata(t.refresh())
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [1, 2, 3]  # snapshot 2 caught up too
    assert _live_paths(meta["snapshots"][1]) == _data_paths(t, 2)
    assert _live_paths(meta["snapshots"][2]) == _data_paths(t)


def test_primary_key_tables_publish_the_top_level_only(catalog) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.pk", schema, primary_keys=["k"], options={**ICEBERG, "write-only": "true"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=schema))
    assert _live_paths(_metadata(t)["snapshots"][-1]) == set()
    t.compact(full=True)
    t = t.refresh()
    top = t.core_options.num_levels - 1
    assert all(f.level == top for s in t.new_scan().plan().splits for f in s.files)
    assert _live_paths(_metadata(t)["snapshots"][-1]) == _data_paths(t)


@pytest.mark.parametrize(
    ("schema", "options", "why"),
    [
        (pa.schema([("a", pa.time64("us"))]), {}, "describes TIME of precision 0 to 3 only"),
        (pa.schema([("a", pa.int64())]), {"deletion-vectors.enabled": "true"}, "deletion-vectors.enabled"),
        (pa.schema([("a", pa.int64())]), {"retractions.enabled": "true"}, "retractions.enabled"),
    ],
)
def test_what_iceberg_cannot_describe_is_refused_without_failing_writes(
    catalog, caplog, schema, options, why
) -> None:
    t = catalog.create_table("db.t", schema, options={**ICEBERG, **options})
    with caplog.at_level(logging.WARNING, logger="engine.iceberg"):
        t.write_arrow(pa.table({"a": [_VALUES[schema.field("a").type.id]]}, schema=schema))
    assert why in caplog.text
    assert t.refresh().to_arrow().num_rows == 1
    assert not _meta_dir(t).exists()
    with pytest.raises(InvalidArgumentError, match=why):
        sync(t.store)


def test_unsupported_storage_and_format_version_are_refused(catalog) -> None:
    with pytest.raises(InvalidArgumentError, match="files only"):
        catalog.create_table("db.t", SCHEMA, options={"metadata.iceberg.storage": "hive-catalog"})
    with pytest.raises(InvalidArgumentError, match="format versions 2 and 3"):
        catalog.create_table("db.t", SCHEMA, options={**ICEBERG, "metadata.iceberg.format-version": "4"})


def test_format_version_3_publishes_puffin_deletion_vectors(catalog) -> None:
    """A v3 delete entry names a Puffin file holding a deletion-vector-v1 blob at its range, for the
    data file it references (pyiceberg reads them in tests/compat/iceberg)."""
    import struct

    t = catalog.create_table(
        "db.t", SCHEMA, primary_keys=["a", "p"],
        options={**ICEBERG, "metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true",
                 "bucket": "1"},
    )
    t.write_arrow(_rows(1, 2, 3))
    t.refresh().compact(full=True)
    t.write_arrow(_rows(2))  # its compaction after the commit marks the old row 2 in a DV
    t = t.refresh()
    meta = _metadata(t)
    assert meta["format-version"] == 3
    current = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    listed = _manifest_list(current)
    deletes = [m for m in listed if m["content"] == 1]
    assert deletes and current["summary"]["total-delete-files"] == "1"
    entry = read_container(Path(deletes[0]["manifest_path"]).read_bytes(), "manifest")[0][0]
    df = entry["data_file"]
    assert (df["content"], df["file_format"], df["record_count"]) == (1, "PUFFIN", 1)
    data = Path(df["file_path"]).read_bytes()
    assert data[:4] == data[-4:] == b"PFA1"
    blob = data[df["content_offset"] : df["content_offset"] + df["content_size_in_bytes"]]
    assert blob[4:8] == bytes([0xD1, 0xD3, 0x39, 0x64])  # the spec's deletion-vector magic
    assert struct.unpack(">i", blob[:4])[0] == len(blob) - 8
    assert df["referenced_data_file"] in _live_paths(current)
    footer_size = struct.unpack("<i", data[-12:-8])[0]
    footer = json.loads(data[-12 - footer_size : -12])
    assert footer["blobs"][0]["properties"]["referenced-data-file"] == df["referenced_data_file"]


def test_previous_versions_max(catalog) -> None:
    t = catalog.create_table(
        "db.t", SCHEMA, options={**ICEBERG, "metadata.iceberg.previous-versions-max": "2"}
    )
    for i in range(5):
        t.write_arrow(_rows(i))
    versions = sorted(n for n in os.listdir(_meta_dir(t)) if n.endswith(".metadata.json"))
    assert versions == ["v3.metadata.json", "v4.metadata.json", "v5.metadata.json"]


def test_expiration_deletes_iceberg_files_only_expired_snapshots_used(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={**ICEBERG, "write-only": "true"})
    for i in range(4):
        t.write_arrow(_rows(i), overwrite=True)
    t = t.refresh()
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    meta = _metadata(t)
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [4]
    live = live_metadata_files(t.store)
    on_disk = {str(p) for p in _meta_dir(t).iterdir()}
    assert on_disk == live  # the expired snapshots' lists and manifests are gone, nothing live went
    assert _live_paths(meta["snapshots"][0]) == _data_paths(t)
    assert all(Path(p).exists() for p in _live_paths(meta["snapshots"][0]))


def test_orphan_cleanup_keeps_live_iceberg_files_and_removes_the_rest(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    t.write_arrow(_rows(1))
    t.write_arrow(_rows(2))
    stray_list = _meta_dir(t) / "snap-9-0000.avro"
    stray_list.write_bytes(write_container(manifest_list_schema(), [], "snappy", {}))
    old = time.time() - 3 * 86_400
    for p in _meta_dir(t).iterdir():
        os.utime(p, (old, old))
    live = live_metadata_files(t.store)
    result = remove_orphan_files(t.store.io, t.path)
    assert str(stray_list) in {p for p, _ in result.files}
    assert {str(p) for p in _meta_dir(t).iterdir()} == live
    assert not stray_list.exists()
    t.write_arrow(_rows(3))  # the table's Iceberg metadata still advances from what was kept
    assert [s["snapshot-id"] for s in _metadata(t)["snapshots"]] == [1, 2, 3]


def test_rebuild_publishes_an_existing_table_afresh(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(_rows(1))
    t.write_arrow(_rows(2))
    assert not _meta_dir(t).exists()  # the option was not set: nothing published
    catalog.alter_table("db.t", [SetOption("metadata.iceberg.storage", "table-location")])
    t = catalog.get_table("db.t")
    assert rebuild(t.store) == 2
    meta = _metadata(t)
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [2]
    assert _live_paths(meta["snapshots"][0]) == _data_paths(t)
    t.write_arrow(_rows(3))
    assert [s["snapshot-id"] for s in _metadata(t)["snapshots"]] == [2, 3]


def test_hadoop_catalog_directory(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={"metadata.iceberg.storage": "hadoop-catalog"})
    t.write_arrow(_rows(1))
    d = Path(catalog.warehouse) / "iceberg" / "db" / "t" / "metadata"
    assert (d / "version-hint.text").read_text() == "1" and (d / "v1.metadata.json").exists()
    assert not _meta_dir(t).exists()


def test_tags_are_iceberg_refs_as_soon_as_they_change(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    t.write_arrow(_rows(1))
    t.write_arrow(_rows(2))
    t.refs.tags.create("first", 1)
    assert _metadata(t)["refs"] == {"first": {"snapshot-id": 1, "type": "tag"}}
    t.refs.tags.rename("first", "one")
    assert _metadata(t)["refs"] == {"one": {"snapshot-id": 1, "type": "tag"}}
    t.refs.tags.delete("one")
    assert _metadata(t)["refs"] == {}


def test_orphan_cleanup_fails_closed_on_an_unreadable_version(catalog) -> None:
    t = catalog.create_table(
        "db.t", SCHEMA, options={**ICEBERG, "metadata.iceberg.previous-versions-max": "1"}
    )
    t.write_arrow(_rows(1))
    t.write_arrow(_rows(2))
    (_meta_dir(t) / "v1.metadata.json").write_text("{not json")
    before = sorted(os.listdir(_meta_dir(t)))
    old = time.time() - 3 * 86_400
    for p in _meta_dir(t).iterdir():
        os.utime(p, (old, old))
    with pytest.raises(CorruptMetadataError, match="v1.metadata.json"):
        remove_orphan_files(t.store.io, t.path)
    assert sorted(os.listdir(_meta_dir(t))) == before


def test_metadata_of_a_dropped_table_of_the_same_name_is_replaced(catalog) -> None:
    opts = {"metadata.iceberg.storage": "hadoop-catalog"}
    t = catalog.create_table("db.t", SCHEMA, options=opts)
    for i in range(3):
        t.write_arrow(_rows(i))
    catalog.drop_table("db.t")
    d = Path(catalog.warehouse) / "iceberg" / "db" / "t" / "metadata"
    assert (d / "v3.metadata.json").exists()  # outside the table: dropping it leaves it
    t = catalog.create_table("db.t", SCHEMA, options=opts)
    t.write_arrow(_rows(7))
    assert sorted(n for n in os.listdir(d) if n.endswith(".json")) == ["v1.metadata.json"]
    meta = json.loads((d / "v1.metadata.json").read_text())
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [1]
    assert _live_paths(meta["snapshots"][0]) == _data_paths(t)


def test_bounds_only_for_exact_statistics(catalog) -> None:
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("f", pa.float64()), ("d", pa.date32())])
    t = catalog.create_table("db.t", schema, options=ICEBERG)
    day = dt.date(2024, 2, 3)
    t.write_arrow(
        pa.table(
            {"a": [5, None, -3], "s": ["x" * 40, "b", None], "f": [1.0, None, 2.0], "d": [day, None, day]},
            schema=schema,
        )
    )
    (entry,) = _entries(_metadata(t)["snapshots"][0])
    ids = {f.name: f.id for f in t.schema.fields}
    data_file = entry["data_file"]
    lower = {kv["key"]: kv["value"] for kv in data_file["lower_bounds"]}
    upper = {kv["key"]: kv["value"] for kv in data_file["upper_bounds"]}
    assert lower == {
        ids["a"]: (-3).to_bytes(8, "little", signed=True),
        ids["d"]: (19756).to_bytes(4, "little"),
    }
    assert upper == {ids["a"]: (5).to_bytes(8, "little"), ids["d"]: (19756).to_bytes(4, "little")}
    nulls = {kv["key"]: kv["value"] for kv in data_file["null_value_counts"]}
    assert nulls == {ids["a"]: 1, ids["s"]: 1, ids["f"]: 1, ids["d"]: 1}


def test_key_table_writes_below_the_top_level_reuse_every_manifest(catalog) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.pk", schema, primary_keys=["k"], options={**ICEBERG, "write-only": "true"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.compact(full=True)
    t = t.refresh()
    published = _manifest_list(_metadata(t)["snapshots"][-1])
    for i in range(3):
        t.write_arrow(pa.table({"k": [10 + i], "v": ["x"]}, schema=schema))
    snaps = _metadata(t.refresh())["snapshots"]
    assert len(snaps) == 5
    for s in snaps[-3:]:  # level-0 files: nothing Iceberg sees changes, no manifest is written
        assert _manifest_list(s) == published
        assert s["summary"]["added-data-files"] == "0" and s["summary"]["total-data-files"] == "1"
