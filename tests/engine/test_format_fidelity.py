"""Format fidelity with Paimon (issue 9): float key order, delete counts, first-row levels,
deletion-vector tables and snapshot uuids. Each test fails without its fix."""

from __future__ import annotations

import math
import uuid

import pyarrow as pa
import pytest

from engine.meta.snapshot import Snapshot


def _rows(table: pa.Table, key: str = "k") -> list[tuple]:
    rows = table.to_pylist()
    return sorted(((r[key], r["v"]) for r in rows), key=lambda kv: (math.isnan(kv[0]) if isinstance(kv[0], float) else False, kv[0]))


# -- float keys ordered like Double.compare ------------------------------------------------------


@pytest.mark.parametrize("arrow_type", [pa.float64(), pa.float32()])
def test_nan_key_in_two_files_is_merged_not_duplicated(catalog, arrow_type):
    schema = pa.schema([pa.field("k", arrow_type, nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.fnan", schema, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(pa.table({"k": [1.0, math.nan], "v": ["a", "a"]}, schema=schema))
    t.write_arrow(pa.table({"k": [math.nan], "v": ["b"]}, schema=schema))
    got = t.to_arrow().to_pylist()
    assert len(got) == 2
    assert {("nan" if math.isnan(r["k"]) else r["k"]): r["v"] for r in got} == {1.0: "a", "nan": "b"}


def test_negative_zero_and_zero_are_distinct_keys_and_updates_merge(catalog):
    schema = pa.schema([pa.field("k", pa.float64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.fzero", schema, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(pa.table({"k": [-1.0, -0.0], "v": ["a", "a"]}, schema=schema))
    t.write_arrow(pa.table({"k": [0.0, 2.0], "v": ["b", "b"]}, schema=schema))
    t.write_arrow(pa.table({"k": [-0.0], "v": ["c"]}, schema=schema))
    got = {(r["k"], math.copysign(1, r["k"])): r["v"] for r in t.to_arrow().to_pylist()}
    assert got == {(-1.0, -1): "a", (0.0, -1): "c", (0.0, 1): "b", (2.0, 1): "b"}
    t.compact(full=True)
    assert {(r["k"], math.copysign(1, r["k"])): r["v"] for r in t.to_arrow().to_pylist()} == got


# -- snapshot uuid -------------------------------------------------------------------------------


def test_snapshots_carry_a_uuid_like_java(catalog):
    t = catalog.create_table("db.u", pa.schema([("a", pa.int64())]))
    t.write_arrow(pa.table({"a": [1]}))
    t.write_arrow(pa.table({"a": [2]}))
    snaps = t.snapshots()
    ids = [s.uuid for s in snaps]
    assert all(ids) and len(set(ids)) == 2
    for s in snaps:
        assert str(uuid.UUID(s.uuid)) == s.uuid  # canonical 8-4-4-4-12 lower-case form
        assert '"uuid" : "' + s.uuid + '"' in s.to_json()
        assert Snapshot.from_json(s.to_json()).uuid == s.uuid


def test_snapshot_without_uuid_reads_back_without_one():
    text = (
        '{"version": 3, "id": 1, "schemaId": 0, "baseManifestList": "b", "deltaManifestList": "d", '
        '"commitUser": "u", "commitIdentifier": 1, "commitKind": "APPEND", "timeMillis": 1, '
        '"totalRecordCount": 0, "deltaRecordCount": 0}'
    )
    snap = Snapshot.from_json(text)
    assert snap.uuid is None and '"uuid"' not in snap.to_json()
