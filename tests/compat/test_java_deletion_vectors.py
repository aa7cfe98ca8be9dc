"""Deletion vectors written by Java Paimon 0.9, read and re-written by ``engine.meta.deletion_vectors``.

Java writes primary-key tables with ``deletion-vectors.enabled``; dyntable's DV module reads the
snapshot's index manifest and the DV index files it names, and must find the ranges Java's scan
reports, mark exactly the rows Java's read leaves out, and re-serialize each index file to the
bytes Java wrote.
"""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from engine.io.fileio import FileIO
from engine.meta.deletion_vectors import DeletionVector, dv_metas, read_deletion_vectors, write_index_file
from engine.meta.index_files import (
    DELETION_VECTORS_INDEX,
    IndexStore,
    read_index_manifest,
    write_index_manifest,
)
from engine.meta.paths import TablePaths
from tests.compat.java_oracle import JavaOracle, JavaPaimon, sort_rows

pytestmark = pytest.mark.java

OPTIONS = {"bucket": "1", "deletion-vectors.enabled": "true", "file.format": "parquet"}


@pytest.fixture
def java(paimon_java: JavaOracle, tmp_path) -> JavaPaimon:
    return JavaPaimon(str(tmp_path / "wh"), paimon_java)


def _table_root(java: JavaPaimon, table: str) -> str:
    db, name = table.split(".")
    return os.path.join(java.warehouse, f"{db}.db", name)


def _index_state(java: JavaPaimon, table: str):
    """(IndexStore, DELETION_VECTORS entries) of the latest snapshot."""
    root = _table_root(java, table)
    latest = max(java.snapshot_ids(table))
    with open(os.path.join(root, "snapshot", f"snapshot-{latest}")) as f:
        snapshot = json.load(f)
    store = IndexStore(FileIO(), TablePaths(root))
    entries = [e for e in store.read_manifest(snapshot.get("indexManifest"))
               if e.file.index_type == DELETION_VECTORS_INDEX]
    return store, entries


def _live_rows_by_our_dvs(java: JavaPaimon, table: str, dvs: dict[str, DeletionVector]) -> list[tuple]:
    """Every row of the files Java's scan reads, minus the rows our DVs mark deleted."""
    root = _table_root(java, table)
    rows = []
    for f in java.files(table):
        data = pq.read_table(os.path.join(root, "bucket-0", f["file"]), columns=["id", "v"])
        dv = dvs.get(f["file"])
        if dv is not None:
            data = data.filter(dv.keep_mask(data.num_rows))
        rows += list(zip(*(data.column(c).to_pylist() for c in ("id", "v")), strict=True))
    return sort_rows(rows)


def _check_against_java(java: JavaPaimon, table: str) -> dict[str, DeletionVector]:
    store, entries = _index_state(java, table)
    assert entries, "Java wrote no deletion vectors"
    dvs: dict[str, DeletionVector] = {}
    for e in entries:
        file_dvs = read_deletion_vectors(store, e.file)
        assert set(file_dvs).isdisjoint(dvs)
        dvs.update(file_dvs)
        # Re-serializing the DVs in the order of the ranges gives Java's file byte for byte.
        ours, metas = write_index_file(file_dvs)
        with open(store.file_path(e.file), "rb") as fh:
            assert ours == fh.read()
        assert [(m.data_file, m.offset, m.length) for m in metas] == [
            (m.data_file, m.offset, m.length) for m in dv_metas(e.file)]
        assert e.file.row_count == len(metas) and e.file.file_size == len(ours)
        # Paimon 0.9 records no cardinality; the ranges survive our index-manifest serde.
        assert all(m.cardinality is None for m in dv_metas(e.file))
        again = read_index_manifest(write_index_manifest([e]))[0]
        assert [(m.data_file, m.offset, m.length) for m in dv_metas(again.file)] == [
            (m.data_file, m.offset, m.length) for m in dv_metas(e.file)]
    # Java's scan hands each data file exactly the range our manifest reading finds.
    ranges = {m.data_file: (os.path.basename(store.file_path(e.file)), m.offset, m.length)
              for e in entries for m in dv_metas(e.file)}
    scanned = {f["file"]: (os.path.basename(f["deletion_file"]["path"]), f["deletion_file"]["offset"],
                           f["deletion_file"]["length"])
               for f in java.files(table) if f["deletion_file"] is not None}
    assert scanned == {name: r for name, r in ranges.items() if name in scanned}
    # The rows our DVs leave are the rows Java reads.
    assert _live_rows_by_our_dvs(java, table, dvs) == java.read(table)
    return dvs


def test_updates_and_deletes_mark_exactly_the_superseded_positions(java: JavaPaimon):
    java.create_table("db.t", [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
                      options=OPTIONS)
    n = 150_000
    java.write("db.t", [[i, f"a{i}"] for i in range(n)])
    # One Roaring container of each kind: a run in the first 64K positions, a sparse set in the
    # second (array container) and a dense scatter in the third (bitmap container).
    updated = set(range(1000, 4000)) | set(range(70_000, 120_000, 97)) | set(range(131_072, 149_000, 2))
    java.write("db.t", [[i, "B"] for i in sorted(updated)])
    deleted = {7, 65_536, n - 1}
    java.write("db.t", [[i, None] for i in sorted(deleted)], row_kinds=["-D"] * len(deleted))
    dvs = _check_against_java(java, "db.t")
    # The first write's file is sorted by key, so its DV holds the changed keys as positions.
    base = [f["file"] for f in java.files("db.t") if f["row_count"] == n]
    assert len(base) == 1
    assert set(dvs[base[0]].positions().tolist()) == updated | deleted
    assert all(not dv.bitmap64 for dv in dvs.values())


def test_several_data_files_share_one_index_file(java: JavaPaimon):
    java.create_table("db.m", [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
                      options={**OPTIONS, "target-file-size": "1 kb"})
    java.write("db.m", [[i, "x" * 40 + str(i)] for i in range(3000)])
    java.write("db.m", [[i, "y"] for i in range(0, 3000, 7)])
    java.write("db.m", [[i, "z"] for i in range(1, 3000, 11)])
    dvs = _check_against_java(java, "db.m")
    assert len(dvs) > 1
