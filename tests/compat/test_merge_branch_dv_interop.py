"""merge_branch on tables with deletion vectors, read by pypaimon: main after the merge holds the
branch's changes for every reader at once (no later compaction needed).

dyntable merges a branch that deleted rows (of its base and of its own files, as deletion
vectors) into an append table, and a branch that upserted and deleted keys into a primary-key
table; pypaimon then reads main's latest snapshot and every earlier one with dyntable's rows.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import AppendDeletionCommit, Table
from engine.append_deletions import dv_scan_files
from engine.ops.merge_branch import merge_branch
from tests.compat.harness import PyPaimon
from tests.compat.java_oracle import arrow_rows

APPEND = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
KEYED = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
DV = {"deletion-vectors.enabled": "true"}


def _ids(values, v) -> pa.Table:
    values = list(values)
    return pa.table({"id": pa.array(values, pa.int64()), "v": [f"{v}{i}" for i in values]}, schema=APPEND)


def _delete_where(t: Table, predicate) -> None:
    snap = t.refresh().latest_snapshot()
    found = {}
    for f in dv_scan_files(t.store, snap):
        col = pq.read_table(io.BytesIO(t.store.io.read_bytes(f.path)), columns=["id"]).column("id").to_numpy()
        pos = np.setdiff1d(np.flatnonzero(predicate(col)), f.deleted)
        if pos.size:
            found[f.name] = pos
    c = AppendDeletionCommit(t.store, snap)
    c.delete(found)
    c.commit()


def _same_everywhere(pypaimon: PyPaimon, wh, t: Table, name: str) -> None:
    t = t.refresh()
    for snap in t.snapshots():
        assert arrow_rows(pypaimon.read(wh, name, snapshot_id=snap.id)) == arrow_rows(
            t.to_arrow(snapshot_id=snap.id)), snap.id


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_pypaimon_reads_an_append_dv_merge(pypaimon: PyPaimon, catalog, warehouse, bucket):
    opts = {**DV, "bucket": bucket, **({"bucket-key": "id"} if bucket != "-1" else {})}
    t = catalog.create_table("db.A", APPEND, options=opts)
    t.write_arrow(_ids(range(0, 50), "b"))
    t.refs.tags.create("base", 1)
    t.refs.branches.create("dev", from_tag="base")
    dev = catalog.get_table("db.A$branch_dev")
    dev.write_arrow(_ids(range(100, 150), "n"))
    _delete_where(dev, lambda c: (c % 7 == 0))  # base rows and rows of its own
    t.write_arrow(_ids(range(200, 210), "m"))
    _delete_where(t, lambda c: c % 5 == 0)
    merge_branch(t.store, "dev")
    expected = sorted([i for i in range(50) if i % 7 and i % 5] + [i for i in range(100, 150) if i % 7]
                      + [i for i in range(200, 210) if i % 5])
    assert sorted(pypaimon.read(warehouse, "db.A").column("id").to_pylist()) == expected
    _delete_where(dev, lambda c: c == 101)  # a row of a merged file, merged again
    merge_branch(t.store, "dev")
    expected = [i for i in expected if i != 101]
    assert sorted(pypaimon.read(warehouse, "db.A").column("id").to_pylist()) == expected
    _same_everywhere(pypaimon, warehouse, t, "db.A")


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_pypaimon_reads_a_primary_key_dv_merge(pypaimon: PyPaimon, catalog, warehouse, bucket):
    t = catalog.create_table("db.K", KEYED, primary_keys=["id"], options={**DV, "bucket": bucket})
    t.write_arrow(_ids(range(0, 40), "b"))
    t.refs.tags.create("base", t.latest_snapshot().id)
    t.refs.branches.create("dev", from_tag="base")
    dev = catalog.get_table("db.K$branch_dev")
    kinds = ["+U"] * 10 + ["-D"] * 5 + ["+I"] * 5
    keys = list(range(0, 10)) + list(range(20, 25)) + list(range(100, 105))
    dev.write_arrow(pa.table(
        {"id": pa.array(keys, pa.int64()), "v": [f"d{i}" for i in keys], "rowkind": kinds},
        schema=pa.schema([*KEYED, ("rowkind", pa.string())])))
    merge_branch(t.store, "dev")
    expected = sorted([(i, f"d{i}") for i in range(10)] + [(i, f"d{i}") for i in range(100, 105)]
                      + [(i, f"b{i}") for i in range(10, 40) if not 20 <= i < 25])
    theirs = pypaimon.read(warehouse, "db.K")
    got = zip(theirs.column("id").to_pylist(), theirs.column("v").to_pylist(), strict=True)
    assert sorted(got) == expected
    _same_everywhere(pypaimon, warehouse, t, "db.K")
