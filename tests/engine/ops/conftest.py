"""Fixtures and helpers for tag, rollback and reachability tests: small real tables on local disk."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])

# Per-branch metadata directories: everything else under the root is data or shared metadata.
METADATA_DIRS = ("schema", "snapshot", "tag", "consumer", "branch", "changelog")


def rows(ids, v="x", p="a") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


def content(table, **travel) -> list[tuple]:
    """A table's rows (or a time-travel read's) as a sorted list of tuples."""
    data = table.to_arrow(**travel)
    return sorted(zip(*(data.column(n).to_pylist() for n in data.column_names), strict=True))


def data_and_manifest_files(root: str) -> set[str]:
    """Every file under the table root outside the per-branch metadata directories."""
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel.split(os.sep)[0] in METADATA_DIRS:
            continue
        out.update(os.path.join(dirpath, f) for f in files if not f.startswith("."))
    return out


def expire_snapshot_file(table, snapshot_id: int) -> None:
    """Remove one snapshot's metadata file as an expiration would (files stay: tests decide)."""
    os.remove(table.store.paths.snapshot_file(snapshot_id))
    table.store.snapshots.forget(snapshot_id)
    ids = table.store.snapshots.list_ids()
    if ids:
        table.store.snapshots.write_earliest_hint(ids[0])


@pytest.fixture
def append_table(catalog):
    t = catalog.create_table("db.app", SCHEMA, partition_keys=["p"])
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([3], p="b"))
    t.write_arrow(rows([4, 5]))
    return t


@pytest.fixture
def pk_table(catalog):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(rows(range(6), "a"))
    t.write_arrow(rows([1, 2], "b"))
    return t
