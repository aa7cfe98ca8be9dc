"""Reading splits: time travel in the snapshot's own schema, and the audit log's retractions."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import NoSuchColumnError
from engine.meta.refs import TagStore
from engine.meta.snapshot import Tag
from engine.read.split_reader import SplitReader
from engine.schema_changes import AddColumn, DropColumn, MoveColumn, RenameColumn, UpdateColumnType

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _evolve(catalog, name, changes):
    catalog.alter_table(name, changes)
    return catalog.get_table(name)


def test_time_travel_reads_the_schema_the_snapshot_was_written_with(catalog):
    t = catalog.create_table("db.tt", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t = _evolve(catalog, "db.tt", [AddColumn("n", "INT"), RenameColumn("v", "w")])
    t.write_arrow(pa.table({"id": [2], "w": ["b"], "n": [7]}))
    old = t.to_arrow(snapshot_id=1)
    assert old.column_names == ["id", "v"] and old.to_pylist() == [{"id": 1, "v": "a"}]
    assert t.plan(snapshot_id=1, columns=["v"]).snapshot_id == 1  # the old name is the column
    with pytest.raises(NoSuchColumnError):
        t.plan(snapshot_id=1, columns=["n"])
    latest = t.to_arrow().sort_by("id").to_pylist()
    assert latest == [{"id": 1, "w": "a", "n": None}, {"id": 2, "w": "b", "n": 7}]
    assert t.to_arrow(snapshot_id=2).column_names == ["id", "w", "n"]


def test_time_travel_after_drop_shows_the_dropped_column(catalog):
    t = catalog.create_table("db.td", pa.schema([("id", pa.int64()), ("x", pa.int64()), ("y", pa.int64())]))
    t.write_arrow(pa.table({"id": [1], "x": [10], "y": [100]}))
    t = _evolve(catalog, "db.td", [DropColumn("x")])
    assert t.to_arrow().column_names == ["id", "y"]
    assert t.to_arrow(snapshot_id=1).to_pylist() == [{"id": 1, "x": 10, "y": 100}]
    TagStore(t.store.io, t.store.paths).write("t1", Tag(t.store.snapshots.get(1)))
    assert t.to_arrow(tag="t1").column_names == ["id", "x", "y"]


def _audit(t):
    reader = SplitReader(t.store, row_kind=True)
    out = pa.concat_tables([reader.read_table(s) for s in t.plan().splits])
    return sorted(zip(out.column("rowkind").to_pylist(), out.column("id").to_pylist(), strict=True),
                  key=lambda r: r[1])


def test_audit_log_keeps_the_latest_retraction_of_each_key(catalog):
    # Paimon's AuditLogTable reads with deletes kept: a deleted key shows as -D until a full
    # compaction drops it (merged sections and single-run sections alike).
    t = catalog.create_table("db.al", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [2], "v": [None], "rowkind": ["-D"]}))  # overlaps: merged
    t.write_arrow(pa.table({"id": [9], "v": [None], "rowkind": ["-D"]}))  # alone: read raw
    assert _audit(t) == [("+I", 1), ("-D", 2), ("+I", 3), ("-D", 9)]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 3]
    t.compact(full=True)
    assert _audit(t) == [("+I", 1), ("+I", 3)]


def test_old_files_read_through_type_changes_and_a_renamed_key(catalog):
    # Paimon's schema evolution: old files are read by field id and cast to the new type.
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("big", pa.int64()), ("i", pa.int32())])
    t = catalog.create_table("db.ev", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "big": [2**53 + 1, 7], "i": [123456789, 3]}, schema=schema))
    t = _evolve(catalog, "db.ev", [UpdateColumnType("big", "DOUBLE"), UpdateColumnType("i", "FLOAT"),
                                   RenameColumn("id", "key"), MoveColumn("i", "first")])
    assert t.primary_keys == ("key",) and t.schema.field_names == ("i", "key", "big")
    t.write_arrow(pa.table({"i": [1.5], "key": [2], "big": [0.25]}))  # upserts key 2 under its new name
    got = {r["key"]: (r["i"], r["big"]) for r in t.to_arrow().to_pylist()}
    assert got == {1: (123456792.0, 9007199254740992.0), 2: (1.5, 0.25)}
    t.compact(full=True)
    assert {r["key"]: (r["i"], r["big"]) for r in t.to_arrow().to_pylist()} == got
    assert t.to_arrow(snapshot_id=1).column_names == ["id", "big", "i"]
