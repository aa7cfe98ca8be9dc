"""data-file.path-directory: data files live under ``<table>/<dir>/<partition>/bucket-N`` (Paimon's
layout), and every reader, writer and cleaner finds them there."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from engine.errors import InvalidArgumentError
from engine.schema_changes import SetOption

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


def batch(ids: list[int], v: str, p: str = "x") -> pa.Table:
    return pa.table({"id": ids, "v": [v] * len(ids), "p": [p] * len(ids)}, schema=SCHEMA)


def data_files(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet"))


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_files_go_under_the_directory_and_every_operation_finds_them(catalog, primary_key):
    t = catalog.create_table(
        f"db.dir_{primary_key}", SCHEMA, partition_keys=["p"],
        primary_keys=("p", "id") if primary_key else (),
        options={"bucket": "2", "data-file.path-directory": "data/files",
                 **({} if primary_key else {"bucket-key": "id"})})
    t.write_arrow(batch([1, 2, 3], "a"))
    t.write_arrow(batch([4], "b", p="y"))
    files = data_files(t.path)
    assert files and all(f.startswith(os.path.join("data", "files", "p=")) for f in files)
    assert "/bucket-" in files[0]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    t.write_arrow(batch([1], "c"))
    t.compact(full=True)
    before = len(data_files(t.path))
    ids = [1, 2, 3, 4] if primary_key else [1, 1, 2, 3, 4]
    assert sorted(t.to_arrow().column("id").to_pylist()) == ids
    # Expiration (one snapshot retained) deletes the compacted-away files under the directory.
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    assert len(t.snapshots()) == 1
    expected_live = len(t.store.live_entries(t.latest_snapshot()))
    assert len(data_files(t.path)) == expected_live < before  # the replaced files were deleted
    # Orphan cleanup looks under the directory: a crashed writer's file there goes, live ones stay.
    orphan = os.path.join(t.path, "data", "files", "p=x", "bucket-0", "data-crashed-0.parquet")
    with open(orphan, "wb") as f:
        f.write(b"x" * 16)
    old = time.time() - 2 * 86_400
    os.utime(orphan, (old, old))
    result = t.maintenance.remove_orphan_files()
    assert [p for p, _ in result.files] == [orphan] and not os.path.exists(orphan)
    assert sorted(t.to_arrow().column("id").to_pylist()) == ids


def test_the_directory_is_fixed_at_creation_and_must_be_relative(catalog):
    t = catalog.create_table("db.fixed", SCHEMA, options={"data-file.path-directory": "d"})
    with pytest.raises(InvalidArgumentError, match="cannot be changed"):
        catalog.alter_table(t.identifier, [SetOption("data-file.path-directory", "e")])
    for bad in ("/abs", "../up", "manifest", "a/./b", "s3://b/x", "k=v"):
        with pytest.raises(InvalidArgumentError, match="data-file.path-directory"):
            catalog.create_table(f"db.bad{abs(hash(bad))}", SCHEMA, options={"data-file.path-directory": bad})


def test_branches_and_time_travel_read_the_directory(catalog):
    t = catalog.create_table("db.br", SCHEMA, options={"data-file.path-directory": "data"})
    t.write_arrow(batch([1], "a"))
    t.refs.tags.create("t1", 1)
    t.refs.branches.create("b", from_tag="t1")
    b = catalog.get_table("db.br$branch_b")
    b.write_arrow(batch([2], "b"))
    assert sorted(b.to_arrow().column("id").to_pylist()) == [1, 2]
    assert all(f.startswith("data" + os.sep) for f in data_files(t.path))
    t.refs.branches.delete("b")
    assert t.to_arrow(snapshot_id=1).column("id").to_pylist() == [1]
    assert len(data_files(t.path)) == 1  # the branch's own file went with it
