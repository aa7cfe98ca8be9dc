"""Reading deletion-vector tables without a JVM: the row mask, the split reader and the planner.

dyntable writes no DVs, so the tables here are built as another engine would leave them: data
written by dyntable, ``deletion-vectors.enabled`` set in the schema file, and a DV index file plus
index manifest (``engine.meta.deletion_vectors``, the format Java writes byte for byte) named by
the latest snapshot. Java-written tables are checked in
``tests/compat/test_java_deletion_vectors_read.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptMetadataError
from engine.meta.deletion_vectors import DeletionVector, write_deletion_vectors
from engine.meta.index_files import IndexManifestEntry, IndexStore
from engine.meta.manifest import FileKind
from engine.read.deletion_vectors import apply_deletion_vector
from engine.scan.predicate import greater_than

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.sets(st.integers(0, 299)))
def test_mask_drops_exactly_the_marked_positions(n, deleted):
    deleted = {p for p in deleted if p < n}
    table = pa.table({"i": pa.array(range(n), pa.int64())})
    dv = DeletionVector.from_positions(np.array(sorted(deleted), dtype=np.int64))
    kept = apply_deletion_vector(table, dv, "f").column("i").to_pylist()
    assert kept == [i for i in range(n) if i not in deleted]


def test_mask_refuses_a_position_past_the_end_of_the_file():
    dv = DeletionVector.from_positions(np.array([1, 5], dtype=np.int64))
    with pytest.raises(CorruptMetadataError, match="marks row 5, but the file has 3 rows"):
        apply_deletion_vector(pa.table({"i": [0, 1, 2]}), dv, "data-x.parquet")


def _as_java_would(catalog, name: str, deleted: dict[int, list[int]] | None = None):
    """Turn on DVs in the schema file; with ``deleted`` ({file index in the plan: positions}),
    also write one DV index file and an index manifest and name it in the latest snapshot."""
    t = catalog.get_table(name)
    io, paths = t.store.io, t.store.paths
    doc = json.loads(io.read_bytes(paths.schema_file(t.store.schema.id)))
    doc["options"]["deletion-vectors.enabled"] = "true"
    io.write_bytes(paths.schema_file(t.store.schema.id), json.dumps(doc).encode())
    t = catalog.get_table(name)
    if deleted:
        (split,) = t.plan().splits
        dvs = {split.files[i].file_name: DeletionVector.from_positions(np.array(p, dtype=np.int64))
               for i, p in deleted.items()}
        index = IndexStore(io, paths)
        meta = write_deletion_vectors(index, dvs)
        entry = IndexManifestEntry(FileKind.ADD, split.partition, split.bucket, meta)
        manifest = index.write_manifest([entry])
        latest = t.latest_snapshot().id
        snap = json.loads(io.read_bytes(paths.snapshot_file(latest)))
        snap["indexManifest"] = manifest
        io.write_bytes(paths.snapshot_file(latest), json.dumps(snap).encode())
        t = catalog.get_table(name)
    return t


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_append_table_reads_every_file_minus_its_dv_and_time_travel_uses_that_snapshots_dvs(catalog):
    t = catalog.create_table("db.a", SCHEMA)
    t.write_arrow(pa.table({"k": [1, 2, 3, 4], "v": list("abcd"), "n": [10, 20, 30, 40]}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": [5, 6], "v": list("ef"), "n": [50, 60]}, schema=SCHEMA))
    (split,) = t.plan().splits
    first = [i for i, f in enumerate(split.files) if f.row_count == 4][0]
    second = 1 - first
    t = _as_java_would(catalog, "db.a", {first: [0, 2], second: [1]})
    (split,) = t.plan().splits
    assert sorted(d.cardinality for d in split.deletion_files) == [1, 2]
    assert _rows(t.to_arrow()) == [(2, "b", 20), (4, "d", 40), (5, "e", 50)]
    got = t.to_arrow(columns=["v"], filter=greater_than("n", 30))
    assert _rows(got) == [("d",), ("e",)]
    # Snapshot 1 names no index manifest: its file is read whole.
    assert _rows(t.to_arrow(snapshot_id=1)) == [(1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "d", 40)]


def test_primary_key_table_skips_level0_and_reads_other_levels_raw_minus_dvs(catalog):
    t = catalog.create_table("db.p", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": list("abc"), "n": [1, 2, 3]}, schema=SCHEMA))
    t.compact(full=True)  # one file on the top level
    t = _as_java_would(catalog, "db.p", {0: [1]})  # key 2 deleted by DV
    (split,) = t.plan().splits
    assert split.raw_convertible and split.files[0].level > 0
    assert _rows(t.to_arrow()) == [(1, "a", 1), (3, "c", 3)]
    assert _rows(t.to_arrow(columns=["k"], filter=greater_than("n", 1))) == [(3,)]


def test_level0_of_a_primary_key_dv_table_is_not_read(catalog):
    options = {"bucket": "1", "write-only": "true"}
    t = catalog.create_table("db.l0", SCHEMA, primary_keys=["k"], options=options)
    t.write_arrow(pa.table({"k": [1], "v": ["a"], "n": [1]}, schema=SCHEMA))
    t = _as_java_would(catalog, "db.l0")
    assert [f.level for s in t.plan().splits for f in s.files] == [0]
    assert t.to_arrow().num_rows == 0  # as Java's batch read of a DV table: level 0 is not visible yet


def test_deletion_vectors_cannot_be_turned_off_without_modifiable_but_columns_can_be_added(catalog):
    from engine.errors import InvalidArgumentError
    from engine.schema_changes import AddColumn, RemoveOption, SetOption

    t = catalog.create_table("db.off", SCHEMA)
    t.write_arrow(pa.table({"k": [1, 2], "v": list("ab"), "n": [1, 2]}, schema=SCHEMA))
    t = _as_java_would(catalog, "db.off", {0: [0]})
    for change in (SetOption("deletion-vectors.enabled", "false"), RemoveOption("deletion-vectors.enabled")):
        # Without the option every reader would ignore the DVs: deleted rows would come back.
        with pytest.raises(InvalidArgumentError, match="'deletion-vectors.modifiable' = 'true'"):
            catalog.alter_table("db.off", [change])
    t = catalog.alter_table("db.off", [AddColumn("extra", "INT")])  # schema only: no data rewritten
    assert t.to_arrow().to_pylist() == [{"k": 2, "v": "b", "n": 2, "extra": None}]
