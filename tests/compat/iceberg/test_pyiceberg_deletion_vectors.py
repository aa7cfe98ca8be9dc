"""pyiceberg reads the Iceberg v3 deletion vectors dyntable publishes for deletion-vector tables
(``metadata.iceberg.format-version = 3``): primary-key tables (every file above level 0, minus
its DV) and append tables after deletes, at every Iceberg snapshot, for 32- and 64-bit DVs, after
expiration; and orphan cleanup keeps the Puffin files a published version names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import AppendDeletionCommit
from engine.append_deletions import dv_scan_files
from engine.iceberg import live_metadata_files
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexStore
from tests.compat.iceberg.oracle import pyiceberg_python, read_iceberg

pytestmark = pytest.mark.compat

ICEBERG_V3 = {"metadata.iceberg.storage": "table-location", "metadata.iceberg.format-version": "3"}
KV = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("p", pa.string())])


@pytest.fixture(scope="module")
def python() -> str:
    return pyiceberg_python()


def _metadata(table) -> Path:
    return Path(table.path) / "metadata" / f"v{table.latest_snapshot().id}.metadata.json"


def _rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted((tuple(r[c] for c in columns) for r in table.select(columns).to_pylist()), key=repr)


def _has_dvs(t) -> bool:
    entries = IndexStore(t.store.io, t.store.paths).read_manifest(t.latest_snapshot().index_manifest)
    return any(e.file.index_type == DELETION_VECTORS_INDEX for e in entries)


def _kv(ks: list[int], tag: str, p: str = "a") -> pa.Table:
    return pa.table({"k": ks, "v": [f"{tag}{k}" for k in ks], "p": [p] * len(ks)}, schema=KV)


@pytest.mark.parametrize("bitmap64", ["false", "true"])
def test_primary_key_table_with_deletion_vectors(catalog, python, bitmap64) -> None:
    t = catalog.create_table(
        f"db.pkdv{bitmap64}", KV, primary_keys=["k", "p"], partition_keys=["p"],
        options={**ICEBERG_V3, "bucket": "2", "deletion-vectors.enabled": "true",
                 "deletion-vectors.bitmap64": bitmap64},
    )
    t.write_arrow(_kv(list(range(40)), "a"))
    t.write_arrow(_kv(list(range(10)), "b", p="z"))
    t = t.refresh()
    t.compact(full=True)  # every row above level 0: the updates below mark rows of these files
    t.write_arrow(_kv([1, 5, 7, 20, 33], "u"))
    t = t.refresh()
    t.compact()
    t.write_arrow(_kv([2, 5, 39], "w"))
    t = t.refresh()
    t.compact()
    t = t.refresh()
    assert _has_dvs(t)
    ids = [s.id for s in t.snapshots()]
    got = read_iceberg(python, _metadata(t), snapshots=ids)
    cols = ["k", "v", "p"]
    assert _rows(got.current, cols) == _rows(t.to_arrow(), cols)
    keys = [(r["k"], r["p"]) for r in got.current.to_pylist()]
    assert len(keys) == len(set(keys)) == 50  # no key twice: every DV applied
    for sid in ids:  # each Iceberg snapshot shows exactly what Paimon's DV readers read then
        assert _rows(got.at[sid], cols) == _rows(t.to_arrow(snapshot_id=sid), cols)


def _delete_where(t, predicate) -> None:
    snap = t.latest_snapshot()
    found: dict[str, np.ndarray] = {}
    for f in dv_scan_files(t.store, snap):
        k = pq.read_table(f.path, columns=["k"]).column("k").to_numpy()
        pos = np.flatnonzero(predicate(k))
        if pos.size:
            found[f.name] = pos
    c = AppendDeletionCommit(t.store, snap)
    c.delete(found)
    c.commit()


def test_append_table_deletes_expiration_and_orphan_cleanup(catalog, python) -> None:
    schema = pa.schema([("k", pa.int64()), ("p", pa.string())])
    t = catalog.create_table(
        "db.appdv", schema, partition_keys=["p"],
        options={**ICEBERG_V3, "deletion-vectors.enabled": "true", "bucket": "-1"},
    )
    for p in ("x", "y"):
        t.write_arrow(pa.table({"k": list(range(20)), "p": [p] * 20}, schema=schema))
    t = t.refresh()
    _delete_where(t, lambda k: k % 3 == 0)
    t = t.refresh()
    _delete_where(t, lambda k: k == 4)
    t = t.refresh()
    t.write_arrow(pa.table({"k": [100], "p": ["x"]}, schema=schema))
    t = t.refresh()
    ids = [s.id for s in t.snapshots()]
    got = read_iceberg(python, _metadata(t), snapshots=ids)
    for sid in ids:
        assert _rows(got.at[sid], ["k", "p"]) == _rows(t.to_arrow(snapshot_id=sid), ["k", "p"])
    assert got.current.num_rows == 2 * 20 - 2 * 7 - 2 + 1
    # Expire all but the latest: the mirrors only expired snapshots named are gone, the rest
    # stay, and orphan cleanup keeps what the published version still names.
    metadata_dir = Path(t.path) / "metadata"
    before = set(metadata_dir.glob("*.puffin"))
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    t = t.refresh()
    after = set(metadata_dir.glob("*.puffin"))
    assert after and after < before
    assert {str(p) for p in after} <= live_metadata_files(t.store)
    got = read_iceberg(python, _metadata(t))
    assert _rows(got.current, ["k", "p"]) == _rows(t.to_arrow(), ["k", "p"])
