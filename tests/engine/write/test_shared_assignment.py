"""Dynamic buckets written by independent tasks of one commit (engine.write.shared_assignment)."""

from __future__ import annotations

import dataclasses
import uuid

import numpy as np
import pyarrow as pa
import pytest

from engine import InvalidArgumentError, open_catalog
from engine.meta.bucket import hash_codes
from engine.meta.index_files import HASH_INDEX, IndexStore
from engine.types import BIGINT
from engine.write.shared_assignment import open_buckets

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("dt", pa.string())])


@pytest.fixture
def catalog(tmp_path):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _table(catalog, cross: bool, **options: str):
    return catalog.create_table(
        "db.t", SCHEMA, partition_keys=["dt"], primary_keys=["id"] if cross else ["dt", "id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "50", **options},
    )


def _tasks_write(t, task_rows: list[pa.Table]):
    """One commit written by ``len(task_rows)`` independent tasks, as the data source runs them."""
    builder = t.new_write_builder().for_independent_tasks()
    job = str(uuid.uuid4())
    messages = []
    for task, rows in enumerate(task_rows):
        messages += builder.new_task_write(job, task).write_all([rows])
    return builder.new_commit().commit(messages)


def _rows(ids, v, dt) -> pa.Table:
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "v": np.full(len(ids), v, dtype=np.int64), "dt": [dt] * len(ids)})


def _hash_entries(t):
    store = IndexStore(t.store.io, t.store.paths)
    entries = [e for e in store.read_manifest(t.latest_snapshot().index_manifest)
               if e.file.index_type == HASH_INDEX]
    return store, entries


def _check_index_matches_data(t):
    """One HASH file per (partition, bucket); each live key's hash in exactly its bucket's file."""
    store, entries = _hash_entries(t)
    slots = [(e.partition, e.bucket) for e in entries]
    assert len(slots) == len(set(slots))
    index = {(e.partition, e.bucket): set(store.read_hashes(e.file).tolist()) for e in entries}
    reader = t.new_read(["id"])
    checked = 0
    for split in t.plan().splits:
        for part in reader.read(split):
            h = set(hash_codes([part.column("id")], [BIGINT()]).tolist())
            assert h <= index[(split.partition, split.bucket)]
            others = set().union(*(v for k, v in index.items()
                                   if k[0] == split.partition and k != (split.partition, split.bucket)))
            assert not h & others
            checked += part.num_rows
    assert checked == t.to_arrow().num_rows


def _live(t) -> dict:
    rows = t.to_arrow().to_pylist()
    assert len({r["id"] if "dt" not in r else (r["id"], r["dt"]) for r in rows}) == len(rows)
    return {(r["id"], r["dt"]): r["v"] for r in rows}


def test_four_tasks_write_twice_with_overlapping_keys(catalog):
    """Four tasks with overlapping new keys, twice (the second write upserts): plain model rows,
    one HASH file per bucket, every key in one bucket."""
    t = _table(catalog, cross=False)
    model: dict = {}
    for round_ in range(2):
        tasks = [_rows(range(30 * i, 30 * i + 60), 10 * round_ + i, "a") for i in range(4)]
        tasks.append(_rows(range(0, 40), 100 + round_, "b"))
        _tasks_write(t, tasks)
        for task in tasks:  # a later task's rows win (its sequence range is higher)
            for r in task.to_pylist():
                model[(r["id"], r["dt"])] = r["v"]
        assert _live(t) == model
        _check_index_matches_data(t)
    # 150 keys of 'a' in one commit, from an empty table: one lane, one open bucket (past target);
    # the second write finds every key and opens nothing.
    buckets = {(s.partition, s.bucket) for s in t.plan().splits}
    assert len(buckets) == 2


def test_a_full_bucket_sends_new_keys_to_the_next_one(catalog):
    t = _table(catalog, cross=False)
    _tasks_write(t, [_rows(range(0, 30), 1, "a"), _rows(range(30, 60), 1, "a")])  # bucket 0: 60 keys
    _tasks_write(t, [_rows(range(60, 70), 2, "a"), _rows(range(65, 80), 3, "a")])
    by_bucket = {}
    reader = t.new_read(["id"])
    for s in t.plan().splits:
        for p in reader.read(s):
            by_bucket.setdefault(s.bucket, set()).update(p.column("id").to_pylist())
    assert by_bucket == {0: set(range(60)), 1: set(range(60, 80))}
    _check_index_matches_data(t)


def test_lanes_spread_new_keys_as_paimons_assigners(catalog):
    t = _table(catalog, cross=False, **{"dynamic-bucket.assigner-parallelism": "3"})
    _tasks_write(t, [_rows(range(0, 90), 1, "a"), _rows(range(45, 120), 2, "a")])
    assert {s.bucket for s in t.plan().splits} == {0, 1, 2}
    assert len(_live(t)) == 120
    _check_index_matches_data(t)


def test_open_buckets_depends_on_the_base_only():
    counts = {0: 50, 1: 10, 2: 50, 3: 49}
    lanes = np.array([0, 1, 0, 1])
    hashes = np.array([5, 6, 7, 8], dtype=np.int32)
    # two lanes: lane 0 owns 0, 2 (both full: opens 4); lane 1 owns 1, 3 (1 has room)
    assert open_buckets(counts, lanes, hashes, 2, 50, None).tolist() == [4, 1, 4, 1]
    assert open_buckets({}, np.zeros(3, np.int64), hashes[:3], 1, 50, None).tolist() == [0, 0, 0]
    # past max-buckets: by hash over the lane's buckets
    full = {0: 50, 1: 50}
    assert set(open_buckets(full, np.zeros(4, np.int64), hashes, 1, 50, 2).tolist()) <= {0, 1}


def test_single_writer_layout_is_unchanged(catalog):
    """A plain write still fills buckets to the target one by one."""
    t = _table(catalog, cross=False)
    t.write_arrow(_rows(range(120), 1, "a"))
    assert sorted(s.bucket for s in t.plan().splits) == [0, 1, 2]


def test_cross_partition_tasks_with_disjoint_keys_move_keys_once(catalog):
    t = _table(catalog, cross=True)
    t.write_arrow(_rows(range(100), 0, "a"))
    # every key moves to 'b' or 'c'; a key appears in two tasks only with the same partition
    _tasks_write(t, [_rows(range(0, 50), 1, "b"), _rows(range(50, 100), 2, "c"),
                     _rows(range(40, 50), 3, "b")])
    rows = {r["id"]: (r["v"], r["dt"]) for r in t.to_arrow().to_pylist()}
    assert t.to_arrow().num_rows == 100
    expected = {k: (1, "b") for k in range(40)} | {k: (3, "b") for k in range(40, 50)} \
        | {k: (2, "c") for k in range(50, 100)}
    assert rows == expected


def test_cross_partition_key_in_two_partitions_from_two_tasks_is_refused(catalog):
    t = _table(catalog, cross=True)
    t.write_arrow(_rows(range(10), 0, "a"))
    before = t.latest_snapshot().id
    data_files = sorted(p for p in (t.store.io.list_files_recursive(t.path)) if "data-" in p.path)
    with pytest.raises(InvalidArgumentError, match="Repartition the input by the primary key"):
        _tasks_write(t, [_rows([1, 2, 20], 1, "b"), _rows([2, 21], 2, "c")])
    assert t.latest_snapshot().id == before
    after = sorted(p for p in (t.store.io.list_files_recursive(t.path)) if "data-" in p.path)
    assert [p.path for p in after] == [p.path for p in data_files]
    assert {r["id"]: r["dt"] for r in t.to_arrow().to_pylist()} == {k: "a" for k in range(10)}


def test_cross_partition_key_moving_twice_within_one_task_is_not_a_conflict(catalog):
    t = _table(catalog, cross=True)
    _tasks_write(t, [pa.concat_tables([_rows([1, 2], 1, "b"), _rows([1], 2, "c")]), _rows([3], 3, "b")])
    assert {r["id"]: (r["v"], r["dt"]) for r in t.to_arrow().to_pylist()} == {
        1: (2, "c"), 2: (1, "b"), 3: (3, "b")}


def test_a_task_adding_to_a_committed_bucket_keeps_its_hashes(catalog):
    t = _table(catalog, cross=False)
    t.write_arrow(_rows(range(30), 1, "a"))  # bucket 0: 30 of 50 keys, with its HASH file
    _tasks_write(t, [_rows(range(30, 40), 2, "a")])
    store, entries = _hash_entries(t)
    assert [(e.bucket, e.file.row_count) for e in entries] == [(0, 40)]
    _check_index_matches_data(t)


def test_tasks_disagreeing_on_a_bucket_are_refused_before_publishing(catalog):
    t = _table(catalog, cross=False)
    t.write_arrow(_rows(range(50), 1, "a"))  # bucket 0 is full
    before = t.latest_snapshot().id
    pinned = t.new_write_builder().for_independent_tasks()  # new keys open bucket 1
    stale = dataclasses.replace(pinned, shared_base=0)  # a writer that saw no snapshot: bucket 0
    messages = pinned.new_task_write("j1", 0).write_all([_rows([100], 2, "a")])
    messages += stale.new_task_write("j1", 1).write_all([_rows([100], 3, "a")])
    with pytest.raises(InvalidArgumentError, match="into two buckets"):
        pinned.new_commit().commit(messages)
    assert t.latest_snapshot().id == before
    assert 100 not in {r["id"] for r in t.to_arrow().to_pylist()}
