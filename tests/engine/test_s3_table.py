"""A whole table lifecycle on object storage: moto's S3 server on loopback (conditional PUTs)."""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest

from engine import open_catalog

pytestmark = pytest.mark.s3
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def test_append_and_primary_key_tables_on_s3(s3_root, s3_endpoint):
    cat = open_catalog(s3_root, **s3_endpoint)
    cat.create_database("db")
    a = cat.create_table("db.a", SCHEMA, partition_keys=["dt"])
    a.write_arrow(pa.table({"id": [1, 2], "v": ["x", "y"], "dt": ["d1", "d2"]}))
    a.write_arrow(pa.table({"id": [3], "v": ["z"], "dt": ["d1"]}), overwrite={"dt": "d1"})
    assert sorted(a.to_arrow().column("id").to_pylist()) == [2, 3]
    pk = cat.create_table(
        "db.pk", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    pk.write_arrow(pa.table({"id": [1, 2], "v": ["x", "y"], "dt": ["d", "d"]}))
    pk.write_arrow(pa.table({"id": [2], "v": ["Y"], "dt": ["d"]}))
    pk.compact(full=True)
    assert {r["id"]: r["v"] for r in pk.to_arrow().to_pylist()} == {1: "x", 2: "Y"}
    fresh = open_catalog(s3_root, **s3_endpoint).get_table("db.pk")
    assert fresh.latest_snapshot().id == pk.latest_snapshot().id
    assert cat.list_tables("db") == ["a", "pk"]
    cat.drop_table("db.a")
    assert cat.list_tables("db") == ["pk"]


def _append(root: str, options: dict, worker: int) -> None:
    t = open_catalog(root, **options).get_table("db.c")
    for i in range(5):
        t.write_arrow(pa.table({"id": [worker * 100 + i], "v": ["w"], "dt": ["x"]}))


def test_concurrent_writers_on_s3_lose_nothing(s3_root, s3_endpoint):
    cat = open_catalog(s3_root, **s3_endpoint)
    cat.create_database("db")
    cat.create_table("db.c", SCHEMA, options={"commit.max-retries": "100", "commit.max-retry-wait": "100 ms"})
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append, args=(s3_root, s3_endpoint, w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    t = cat.get_table("db.c")
    assert len(t.snapshots()) == 15
    assert sorted(t.to_arrow().column("id").to_pylist()) == sorted(
        w * 100 + i for w in range(3) for i in range(5)
    )
