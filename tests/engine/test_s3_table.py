"""A whole table lifecycle on object storage: moto's S3 server on loopback (conditional PUTs)."""

from __future__ import annotations

import json
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


def test_a_commit_whose_snapshot_answer_is_lost_is_published_once_and_intact(
    s3_root, s3_endpoint, s3_server
):
    """The snapshot's conditional PUT succeeds but its answer is lost (the client times out): the
    commit reads the snapshot back, finds its own, and keeps every file that snapshot names."""
    options = {**s3_endpoint, "config_kwargs": {"read_timeout": 1}}
    cat = open_catalog(s3_root, **options)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "dt": ["x"]}))
    release = s3_server.hold_answer(t.store.paths.snapshot_file(2))
    try:
        result = t.write_arrow(pa.table({"id": [2], "v": ["b"], "dt": ["x"]}))
    finally:
        release.set()
    assert result.snapshot_ids == (2,)
    fresh = open_catalog(s3_root, **s3_endpoint).get_table("db.t")
    assert [s.id for s in fresh.snapshots()] == [1, 2]
    # Checked on storage: this process may still hold the lists in its manifest cache.
    snapshot = fresh.snapshots()[-1]
    for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
        assert fresh.store.io.exists(fresh.store.paths.manifest_file(name)), name
    assert sorted(fresh.to_arrow().column("id").to_pylist()) == [1, 2]


def _append(root: str, options: dict, worker: int, report: str) -> None:
    """Five commits, each under its own commit user; writes what each commit said it published."""
    t = open_catalog(root, **options).get_table("db.c")
    published = {}
    for i in range(5):
        user = f"writer-{worker}-commit-{i}"
        row = pa.table({"id": [worker * 100 + i], "v": ["w"], "dt": ["x"]})
        result = t.write_arrow(row, commit_user=user)
        published[user] = list(result.snapshot_ids)
    with open(report, "w") as f:
        json.dump(published, f)


def test_concurrent_writers_on_s3_lose_nothing(s3_root, s3_endpoint, tmp_path):
    """Three processes race 15 commits through S3's conditional PUT: every commit that returned is
    the one snapshot it reported, and nothing else is in the history.

    The checks do not depend on the interleaving: whatever order the writers win in, the history
    is snapshots 1..15, one per commit, each holding the commit user that reported it.
    """
    cat = open_catalog(s3_root, **s3_endpoint)
    cat.create_database("db")
    # Retries cannot run out: a commit loses a race only to another writer's commit, 14 at most.
    cat.create_table("db.c", SCHEMA, options={"commit.max-retries": "100", "commit.max-retry-wait": "100 ms"})
    ctx = mp.get_context("spawn")
    reports = [str(tmp_path / f"writer-{w}.json") for w in range(3)]
    procs = [ctx.Process(target=_append, args=(s3_root, s3_endpoint, w, reports[w])) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)  # a hang, not a slow machine, is what outlasts this
        assert p.exitcode == 0, f"writer {p.name} exited with {p.exitcode}"
    published: dict[str, list[int]] = {}
    for report in reports:
        with open(report) as f:
            published.update(json.load(f))
    assert len(published) == 15 and all(len(ids) == 1 for ids in published.values()), published
    # Two commits reporting one id = two writers both won one conditional PUT (one of them is lost).
    assert sorted(ids[0] for ids in published.values()) == list(range(1, 16)), published
    t = cat.get_table("db.c")
    history = {s.id: s.commit_user for s in t.snapshots()}
    assert history == {ids[0]: user for user, ids in published.items()}
    assert sorted(t.to_arrow().column("id").to_pylist()) == sorted(
        w * 100 + i for w in range(3) for i in range(5)
    )
