"""Append tables with deletion vectors written by dyntable, read by pypaimon and Java Paimon 0.9.

dyntable writes an append table with ``'deletion-vectors.enabled' = 'true'`` (inserts, row
deletes that write DVs and merge with earlier ones, compaction that applies and drops them), in
both bucket modes (unaware ``-1`` and fixed). After every step, every snapshot reads the same in
dyntable and the other engine. The other engine also writes into the table, and dyntable's later
deletes and compactions keep working on the result (Java also compacts it). The ``rolled`` cases
set ``deletion-vector.index-file.target-size`` so small that every DV gets its own index file:
a partition's DVs then span several index files, each with its own index-manifest entry.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import AppendDeletionCommit, Table, open_catalog
from engine.append_deletions import dv_scan_files
from engine.scan.incremental import ChangeReader
from tests.compat.harness import PyPaimon
from tests.compat.java_oracle import JavaOracle, JavaPaimon, arrow_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])


def _rows(ids, dt="a"):
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids], "dt": [dt] * len(ids)},
                    schema=SCHEMA)


def _delete_where(t: Table, predicate) -> int:
    """Mark the rows whose id satisfies ``predicate`` deleted (positions found per file, vectorised)."""
    snap = t.latest_snapshot()
    found = {}
    for f in dv_scan_files(t.store, snap):
        ids = pq.read_table(io.BytesIO(t.store.io.read_bytes(f.path)), columns=["id"]).column("id").to_numpy()
        pos = np.flatnonzero(predicate(ids))
        if pos.size:
            found[f.name] = pos
    c = AppendDeletionCommit(t.store, snap)
    n = c.delete(found)
    c.commit()
    return n


CASES = [("-1", False), ("2", False), ("-1", True)]
IDS = ["unaware", "fixed", "unaware-rolled"]


def _dv_index_files_per_partition(t: Table) -> list[int]:
    from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexStore

    entries = IndexStore(t.store.io, t.store.paths).read_manifest(t.latest_snapshot().index_manifest)
    per: dict[bytes, int] = {}
    for e in entries:
        if e.file.index_type == DELETION_VECTORS_INDEX:
            per[e.partition] = per.get(e.partition, 0) + 1
    return sorted(per.values())


def _build(catalog, bucket: str, rolled: bool = False) -> Table:
    opts = {"deletion-vectors.enabled": "true", "bucket": bucket}
    if rolled:
        opts["deletion-vector.index-file.target-size"] = "1 b"
    if bucket != "-1":
        opts["bucket-key"] = "id"
    t = catalog.create_table("db.dva", SCHEMA, partition_keys=["dt"], options=opts)
    t.write_arrow(_rows(range(0, 300)))
    t.write_arrow(_rows(range(300, 500), dt="b"))
    t.write_arrow(_rows(range(500, 600)))
    t = t.refresh()
    assert _delete_where(t, lambda k: k % 7 == 0) == len([i for i in range(600) if i % 7 == 0])
    assert _delete_where(t.refresh(), lambda k: (k % 5 == 0) & (k < 400)) > 0
    t = t.refresh()
    if rolled:  # partition a: two data files, two index files
        assert _dv_index_files_per_partition(t) == [1, 2]
    return t


@pytest.mark.parametrize(("bucket", "rolled"), CASES, ids=IDS)
def test_pypaimon_reads_every_snapshot_of_a_dyntable_dv_append_table(pypaimon: PyPaimon, catalog, warehouse,
                                                                     bucket, rolled):
    t = _build(catalog, bucket, rolled)
    wh = warehouse

    def same_everywhere(t: Table) -> None:
        for snap in t.snapshots():
            ours = arrow_rows(t.to_arrow(snapshot_id=snap.id))
            theirs = arrow_rows(pypaimon.read(wh, "db.dva", snapshot_id=snap.id))
            assert theirs == ours, snap.id

    same_everywhere(t)
    pypaimon.write(wh, "db.dva", _rows(range(600, 650), dt="b"))  # pypaimon appends to our DV table
    t = t.refresh()
    _delete_where(t, lambda k: k >= 640)
    t = t.refresh()
    kept = [i for i in range(600) if i % 7 and not (i % 5 == 0 and i < 400)] + list(range(600, 640))
    assert sorted(t.to_arrow().column("id").to_pylist()) == kept
    same_everywhere(t)
    t.compact(full=True)
    same_everywhere(t.refresh())


@pytest.fixture
def java(paimon_java: JavaOracle, warehouse) -> JavaPaimon:
    return JavaPaimon(warehouse, paimon_java)


@pytest.mark.java
@pytest.mark.parametrize(("bucket", "rolled"), CASES, ids=IDS)
def test_java_reads_writes_and_compacts_a_dyntable_dv_append_table(java: JavaPaimon, catalog, bucket, rolled):
    t = _build(catalog, bucket, rolled)

    def same(t: Table) -> None:
        for snap in t.snapshots():
            ours = arrow_rows(t.to_arrow(snapshot_id=snap.id))
            assert java.read("db.dva", snapshot_id=snap.id) == ours, snap.id

    same(t)
    with_dv = {f["file"] for f in java.files("db.dva") if f["deletion_file"] is not None}
    ours = {d.data_file for s in t.new_scan().plan().splits for d in s.deletion_files}
    assert with_dv == ours and len(ours) >= 3  # Java finds each DV dyntable wrote
    java.write("db.dva", [[i, f"v{i}", "b"] for i in range(600, 650)])
    t = open_catalog(java.warehouse).get_table("db.dva")
    _delete_where(t, lambda k: k >= 640)
    t = t.refresh()
    same(t)
    if rolled:  # Java's append kept every index file (it combines an unaware table's by name)
        assert _dv_index_files_per_partition(t) == [2, 2]
    java.compact("db.dva", full=True)  # Java compacts our DVs away (or keeps them) its own way
    t = t.refresh()
    same(t)
    _delete_where(t, lambda k: k < 10)
    t = t.refresh()
    same(t)
    t.compact(full=True)
    t = t.refresh()
    same(t)
    assert all(f["deletion_file"] is None for f in java.files("db.dva"))


def _positions(t: Table, predicate) -> dict[str, list[int]]:
    """Positions of the live rows whose id satisfies ``predicate``, per data file."""
    out = {}
    for f in dv_scan_files(t.store, t.latest_snapshot()):
        ids = pq.read_table(io.BytesIO(t.store.io.read_bytes(f.path)), columns=["id"]).column("id").to_numpy()
        hit = predicate(ids)
        hit[f.deleted] = False
        if hit.any():
            out[f.name] = np.flatnonzero(hit).tolist()
    return out


@pytest.mark.java
def test_dyntable_reads_and_extends_dv_index_files_java_rolled(java: JavaPaimon, catalog):
    """Java Paimon 0.9's own DV maintainer (as its Spark DELETE uses it) writes a partition's DVs
    into several index files at a tiny target size; dyntable reads them, deletes more (rewriting
    only the index file it touches) and compacts; Java reads the same after every step."""
    t = catalog.create_table("db.dva", SCHEMA, partition_keys=["dt"], options={
        "deletion-vectors.enabled": "true", "bucket": "-1", "deletion-vector.index-file.target-size": "1 b"})
    for lo in (0, 100, 200):
        t.write_arrow(_rows(range(lo, lo + 100)))
    t.write_arrow(_rows(range(300, 400), dt="b"))
    t = t.refresh()

    def same(t: Table) -> None:
        for snap in t.snapshots():
            ours = arrow_rows(t.to_arrow(snapshot_id=snap.id))
            assert java.read("db.dva", snapshot_id=snap.id) == ours, snap.id

    java.delete_positions("db.dva", _positions(t, lambda k: k % 10 == 1))
    t = t.refresh()
    assert _dv_index_files_per_partition(t) == [1, 3]  # Java rolled partition a's DVs into 3 files
    ids = sorted(t.to_arrow().column("id").to_pylist())
    assert ids == [i for i in range(400) if i % 10 != 1]
    same(t)
    _delete_where(t, lambda k: k == 150)  # touches one of Java's index files
    t = t.refresh()
    assert _dv_index_files_per_partition(t) == [1, 3]
    java.delete_positions("db.dva", _positions(t, lambda k: k == 250))  # Java merges with its old DV
    t = t.refresh()
    same(t)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [i for i in ids if i not in (150, 250)]
    assert len({f["deletion_file"]["path"] for f in java.files("db.dva") if f["deletion_file"]}) == 4
    t.compact(full=True)
    t = t.refresh()
    same(t)
    assert _dv_index_files_per_partition(t) == []


@pytest.mark.java
@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_incremental_between_on_a_dv_append_table_returns_javas_rows(java: JavaPaimon, catalog, bucket):
    """Batch ``incremental-between`` of an append DV table: the rows of the files the range's
    APPEND snapshots added, whole (a row deleted later in the range is still there); DV-only
    DELETEs and compactions add nothing. Java Paimon 0.9 returns the same rows.

    Not compared: a range in which several APPEND snapshots add files to the same partition and
    bucket (e.g. ``0,9``). Paimon 0.9 groups those files under one snapshot's list of DV files and
    fails (IndexOutOfBoundsException); Paimon 1.x reads delta files without DVs, which is what
    dyntable does."""
    t = _build(catalog, bucket)  # 1-3 appends, 4-5 DV deletes
    t.write_arrow(_rows(range(600, 620), dt="b"))  # 6
    t = t.refresh()
    _delete_where(t, lambda k: k == 605)  # 7
    t.refresh().compact(full=True)  # 8
    t = t.refresh()
    t.write_arrow(_rows(range(700, 705)))  # 9
    t = t.refresh()
    assert t.latest_snapshot().id == 9
    assert sorted(ChangeReader(t.store).read_all(t.new_read_builder().new_incremental("0,9").splits())
                  .column("id").to_pylist()) == [*range(620), *range(700, 705)]
    for between in ("3,9", "4,5", "5,7", "7,8", "6,9"):
        ours = t.new_read_builder().new_incremental(between).splits()
        rows = (ChangeReader(t.store).read_all(ours).drop_columns(["rowkind"]) if ours
                else SCHEMA.empty_table())
        assert java.read_incremental("db.dva", between) == arrow_rows(rows), between
