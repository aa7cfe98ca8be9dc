"""Dynamic-bucket primary-key tables ('bucket' = '-1'): partition-local and cross-partition upsert."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from engine import open_catalog
from engine.meta.bucket import hash_codes
from engine.meta.index_files import HASH_INDEX, IndexStore
from engine.types import BIGINT

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("dt", pa.string())])


@pytest.fixture
def catalog(tmp_path):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _rows(t) -> dict:
    return {r["id"]: (r["v"], r["dt"]) for r in t.to_arrow().to_pylist()}


def _batch(ops):
    return pa.table({"id": [o[0] for o in ops], "v": [o[1] for o in ops], "dt": [o[2] for o in ops],
                     "rowkind": [o[3] for o in ops]})


def _hash_index(t) -> dict[tuple[bytes, int], set[int]]:
    snap = t.latest_snapshot()
    store = IndexStore(t.store.io, t.store.paths)
    return {(e.partition, e.bucket): set(store.read_hashes(e.file).tolist())
            for e in store.read_manifest(snap.index_manifest) if e.file.index_type == HASH_INDEX}


def _check_index_matches_data(t):
    """Every live key's hash is in the HASH file of exactly the bucket that holds it."""
    index = _hash_index(t)
    reader = t.new_read(["id"])
    for split in t.plan().splits:
        for part in reader.read(split):
            h = hash_codes([part.column("id")], [BIGINT()])
            held = index[(split.partition, split.bucket)]
            assert set(h.tolist()) <= held
            others = set().union(
                *(v for k, v in index.items() if k[0] == split.partition and k[1] != split.bucket)
            )
            assert not (set(h.tolist()) & others)


@pytest.mark.parametrize("cross", [False, True])
def test_model_of_upserts_and_deletes(catalog, cross):
    """Random upserts/deletes (keys moving partitions when the key lacks the partition) equal a dict model."""
    rng = random.Random(7 + cross)
    t = catalog.create_table(
        "db.m",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id"] if cross else ["dt", "id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "5"},
    )
    model: dict = {}
    for step in range(12):
        ops = []
        for _ in range(rng.randint(1, 25)):
            k, dt = rng.randint(0, 30), rng.choice("abc")
            if rng.random() < 0.2:
                ops.append((k, 0, dt, "-D"))
            else:
                ops.append((k, rng.randint(0, 999), dt, "+I"))
        t.write_arrow(_batch(ops))
        for k, v, dt, kind in ops:
            key = k if cross else (k, dt)
            if kind == "-D":
                model.pop(key, None)
            else:
                model[key] = (v, dt)
        got = {
            (r["id"] if cross else (r["id"], r["dt"])): (r["v"], r["dt"]) for r in t.to_arrow().to_pylist()
        }
        assert got == model, step
        if step == 6:
            t.compact(full=True)
    assert len({s.bucket for s in t.plan().splits}) > 1  # new keys opened new buckets
    if not cross:
        _check_index_matches_data(t)
    else:
        assert t.latest_snapshot().index_manifest is None  # Java keeps no HASH index in this mode


def test_existing_keys_keep_their_bucket_and_buckets_fill_to_target(catalog):
    t = catalog.create_table("db.b", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "3"})
    t.write_arrow(pa.table({"id": list(range(7)), "v": [0] * 7, "dt": ["a"] * 7}, schema=SCHEMA))
    before = {s.bucket: s.row_count for s in t.plan().splits}
    assert before == {0: 3, 1: 3, 2: 1}
    t.write_arrow(pa.table({"id": list(range(7)), "v": [1] * 7, "dt": ["a"] * 7}, schema=SCHEMA))
    t.compact(full=True)
    assert {s.bucket: s.row_count for s in t.plan().splits} == before
    t.write_arrow(pa.table({"id": [100, 101, 102], "v": [2] * 3, "dt": ["a"] * 3}, schema=SCHEMA))
    t.compact(full=True)
    assert {s.bucket: s.row_count for s in t.plan().splits} == {0: 3, 1: 3, 2: 3, 3: 1}
    _check_index_matches_data(t)


def test_overwrite_drops_the_hash_index_of_replaced_partitions(catalog):
    t = catalog.create_table("db.o", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "2"})
    t.write_arrow(
        pa.table({"id": [1, 2, 3, 4, 5], "v": [0] * 5, "dt": ["a", "a", "a", "b", "b"]}, schema=SCHEMA)
    )
    t.write_arrow(pa.table({"id": [9], "v": [1], "dt": ["a"]}, schema=SCHEMA), overwrite={"dt": "a"})
    index = _hash_index(t)
    part_a = next(s.partition for s in t.plan().splits if s.partition_values == ("a",))
    # Partition a keeps only the bucket written by the overwrite (its other buckets' files went with
    # their data); the writer started from the old index, so a replaced key's hash may linger there
    # (harmless: it maps to a bucket the key is not in).
    assert len([k for k in index if k[0] == part_a]) == 1
    assert sorted(len(v) for k, v in index.items() if k[0] != part_a) == [2]
    _check_index_matches_data(t)
    assert _rows(t) == {9: (1, "a"), 4: (0, "b"), 5: (0, "b")}
    t.truncate()
    assert t.latest_snapshot().index_manifest is None


@pytest.mark.parametrize(
    "engine, expected",
    [
        ("deduplicate", {1: (20, "b")}),
        ("partial-update", {1: (20, "a")}),
        ("first-row", {1: (10, "a")}),
    ],
)
def test_cross_partition_key_move_follows_the_merge_engine(catalog, engine, expected):
    t = catalog.create_table("db.x", SCHEMA, partition_keys=["dt"], primary_keys=["id"],
                             options={"bucket": "-1", "merge-engine": engine})
    t.write_arrow(pa.table({"id": [1], "v": [10], "dt": ["a"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [1], "v": [20], "dt": ["b"]}, schema=SCHEMA))
    assert _rows(t) == expected
    t.compact(full=True)
    assert _rows(t) == expected


def test_key_moving_twice_within_one_batch(catalog):
    t = catalog.create_table(
        "db.y", SCHEMA, partition_keys=["dt"], primary_keys=["id"], options={"bucket": "-1"}
    )
    t.write_arrow(pa.table({"id": [1, 2], "v": [1, 2], "dt": ["a", "a"]}, schema=SCHEMA))
    w = t.new_writer()
    w.write(pa.table({"id": [1, 1, 1], "v": [3, 4, 5], "dt": ["b", "c", "a"]}, schema=SCHEMA))
    w.write(pa.table({"id": [2], "v": [6], "dt": ["c"]}, schema=SCHEMA))  # a later batch sees the map
    t.commit(w.prepare_commit())
    assert _rows(t) == {1: (5, "a"), 2: (6, "c")}


def test_writer_abort_deletes_index_files(catalog):
    t = catalog.create_table(
        "db.z", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "-1"}
    )
    w = t.new_writer()
    w.write(pa.table({"id": [1], "v": [1], "dt": ["a"]}, schema=SCHEMA))
    messages = w.prepare_commit()
    assert any(m.new_index_files for m in messages)
    from engine.commit_messages import delete_uncommitted

    delete_uncommitted(t.store, messages)
    io = t.store.io
    assert not [s for s in io.list_files_recursive(t.path) if "/index/" in s.path]


# -- defaults and bucket fill (Paimon's PartitionIndex / crosspartition.BucketAssigner) --------------


def test_bucket_defaults_to_dynamic_as_paimon(catalog):
    """No 'bucket' option: -1, stored explicitly; a key lacking the partition column is a
    cross-partition upsert table, no longer refused."""
    keyed = catalog.create_table("db.k", SCHEMA, primary_keys=["id"])
    plain = catalog.create_table("db.a", SCHEMA)
    cross = catalog.create_table("db.c", SCHEMA, partition_keys=["dt"], primary_keys=["id"])
    for t in (keyed, plain, cross):
        assert t.store.schema.options["bucket"] == "-1"
    cross.write_arrow(pa.table({"id": [1, 2], "v": [1, 2], "dt": ["a", "a"]}, schema=SCHEMA))
    cross.write_arrow(pa.table({"id": [1], "v": [3], "dt": ["b"]}, schema=SCHEMA))
    assert _rows(cross) == {1: (3, "b"), 2: (2, "a")}


def test_fixed_buckets_with_a_key_not_covering_the_partition(catalog):
    """Paimon 1.3+ ('Cross Partitions Upsert' with bucket N > 0): no global index, each partition
    keeps its own keys; a key moves only when the input deletes it in its old partition."""
    f = catalog.create_table("db.f", SCHEMA, partition_keys=["dt"], primary_keys=["id"],
                             options={"bucket": "2"})
    f.write_arrow(pa.table({"id": [1, 2], "v": [1, 2], "dt": ["a", "a"]}, schema=SCHEMA))
    f.write_arrow(pa.table({"id": [1, 2], "v": [3, 20], "dt": ["b", "a"]}, schema=SCHEMA))
    got = sorted(tuple(r.values()) for r in f.refresh().to_arrow().to_pylist())
    assert got == [(1, 1, "a"), (1, 3, "b"), (2, 20, "a")]
    with_kind = pa.schema([*SCHEMA, ("rowkind", pa.string())])
    f.write_arrow(pa.table({"id": [1], "v": [1], "dt": ["a"], "rowkind": ["-D"]}, schema=with_kind))
    got = sorted(tuple(r.values()) for r in f.refresh().to_arrow().to_pylist())
    assert got == [(1, 3, "b"), (2, 20, "a")]
    assert {s.bucket for s in f.refresh().plan().splits} <= {0, 1}


def test_a_sequence_field_with_a_cross_partition_key_is_refused(catalog):
    from engine.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="sequence.field"):
        catalog.create_table("db.s", SCHEMA, partition_keys=["dt"], primary_keys=["id"],
                             options={"sequence.field": "v"})


@pytest.mark.parametrize("cross", [False, True])
def test_three_row_target_over_nine_keys_makes_three_buckets(catalog, cross):
    keys = ["id"] if cross else ["dt", "id"]
    opts = {"dynamic-bucket.target-row-num": "3"}
    t = catalog.create_table("db.n", SCHEMA, partition_keys=["dt"], primary_keys=keys, options=opts)
    t.write_arrow(pa.table({"id": list(range(9)), "v": [0] * 9, "dt": ["a"] * 9}, schema=SCHEMA))
    assert {s.bucket: s.row_count for s in t.plan().splits} == {0: 3, 1: 3, 2: 3}
    # One more key opens a fourth bucket; updates of the nine stay where they are.
    t.write_arrow(pa.table({"id": list(range(10)), "v": [1] * 10, "dt": ["a"] * 10}, schema=SCHEMA))
    t.compact(full=True)
    assert {s.bucket: s.row_count for s in t.plan().splits} == {0: 3, 1: 3, 2: 3, 3: 1}


def test_max_buckets_bounds_the_buckets_of_a_partition(catalog):
    opts = {"dynamic-bucket.target-row-num": "2", "dynamic-bucket.max-buckets": "2"}
    t = catalog.create_table("db.mx", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=opts)
    t.write_arrow(pa.table({"id": list(range(6)), "v": [0] * 6, "dt": ["a"] * 6}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": list(range(6, 12)), "v": [0] * 6, "dt": ["a"] * 6}, schema=SCHEMA))
    assert {s.bucket for s in t.plan().splits} == {0, 1}
    assert len(_rows(t)) == 12
    _check_index_matches_data(t)


def test_fill_rule_refuses_more_buckets_than_java_allows():
    from engine.errors import InvalidArgumentError
    from engine.write.bucket_assigner import fill_buckets

    counts = {0: 2}
    assert fill_buckets(counts, 5, 2, None, np.zeros(5, np.int32)).tolist() == [1, 1, 2, 2, 3]
    assert counts == {0: 2, 1: 2, 2: 2, 3: 1}
    with pytest.raises(InvalidArgumentError, match="target-row-num"):
        fill_buckets({}, 5, 1, None, np.zeros(5, np.int32), hard_limit=3)
    capped = fill_buckets({}, 5, 1, 3, np.arange(5, dtype=np.int32), hard_limit=3)
    assert capped[:3].tolist() == [0, 1, 2] and set(capped[3:].tolist()) <= {0, 1, 2}


def test_a_key_moving_out_frees_its_place_in_the_old_bucket(catalog):
    """deduplicate: the key leaves bucket 0 of 'a' (Java's BucketAssigner.decrement), so the next
    new key of 'a' takes the freed place instead of opening bucket 1."""
    t = catalog.create_table("db.d", SCHEMA, partition_keys=["dt"], primary_keys=["id"],
                             options={"dynamic-bucket.target-row-num": "3"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": [0] * 3, "dt": ["a"] * 3}, schema=SCHEMA))
    w = t.new_writer()
    w.write(pa.table({"id": [1], "v": [1], "dt": ["b"]}, schema=SCHEMA))
    w.write(pa.table({"id": [4], "v": [1], "dt": ["a"]}, schema=SCHEMA))
    t.commit(w.prepare_commit())
    t.compact(full=True)
    got = {(s.partition_values, s.bucket): s.row_count for s in t.plan().splits}
    assert got == {(("a",), 0): 3, (("b",), 0): 1}
    # A new writer bootstraps the same counts from the table.
    t.write_arrow(pa.table({"id": [5], "v": [2], "dt": ["a"]}, schema=SCHEMA))
    assert {s.bucket for s in t.plan().splits if s.partition_values == ("a",)} == {0, 1}


STR_SCHEMA = pa.schema(
    [pa.field("pk", pa.string(), False), ("v", pa.string()), pa.field("pt", pa.string(), False)]
)


@pytest.mark.parametrize(
    "options, buckets",
    [
        # Paimon's DynamicBucketTableTest: three assigners over five keys open buckets 0, 1 and 2 ...
        ({"dynamic-bucket.target-row-num": "3", "dynamic-bucket.assigner-parallelism": "3"}, {0, 1, 2}),
        # ... and so do ten channels limited to three assigners by the initial buckets.
        (
            {
                "dynamic-bucket.target-row-num": "3",
                "dynamic-bucket.initial-buckets": "3",
                "dynamic-bucket.assigner-parallelism": "10",
            },
            {0, 1, 2},
        ),
        ({"dynamic-bucket.target-row-num": "3"}, {0, 1}),  # one assigner (dyntable's default)
    ],
)
def test_assigners_as_paimons_spark_writer(catalog, options, buckets):
    t = catalog.create_table(
        "db.p", STR_SCHEMA, partition_keys=["pt"], primary_keys=["pk", "pt"], options=options
    )
    t.write_arrow(pa.table({"pk": list("12345"), "v": list("abcde"), "pt": ["p"] * 5}, schema=STR_SCHEMA))
    assert {s.bucket for s in t.plan().splits} == buckets
    # Later writes (a new writer, loading the HASH files per assigner) keep every key in its bucket.
    before = {s.bucket: s.row_count for s in t.plan().splits}
    t.write_arrow(pa.table({"pk": list("12345"), "v": list("ABCDE"), "pt": ["p"] * 5}, schema=STR_SCHEMA))
    t.compact(full=True)
    assert {s.bucket: s.row_count for s in t.plan().splits} == before


def _buckets_of_keys(t) -> dict[int, int]:
    return {k: s.bucket for s in t.plan().splits for part in t.new_read().read(s)
            for k in part.column("id").to_pylist()}


def test_cross_partition_assigners_each_fill_their_own_buckets(catalog):
    """Paimon's GlobalIndexAssigner with dynamic-bucket.assigner-parallelism = 3: a key's assigner
    is |hash(key) % 3| (Paimon's shuffle by key hash), and assigner i counts only its keys and
    fills and opens only buckets b with b % 3 == i."""
    opts = {"dynamic-bucket.target-row-num": "2", "dynamic-bucket.assigner-parallelism": "3"}
    t = catalog.create_table("db.x", SCHEMA, partition_keys=["dt"], primary_keys=["id"], options=opts)
    ids = list(range(1, 13))
    t.write_arrow(pa.table({"id": ids, "v": ids, "dt": ["a"] * 12}, schema=SCHEMA))
    lanes = np.abs(np.fmod(hash_codes([pa.array(ids, pa.int64())], [BIGINT(False)]).astype(np.int64), 3))
    where = _buckets_of_keys(t)
    per_lane: dict[int, dict[int, int]] = {}
    for k, lane in zip(ids, lanes.tolist(), strict=True):
        assert where[k] % 3 == lane
        per_lane.setdefault(lane, {}).setdefault(where[k], 0)
        per_lane[lane][where[k]] += 1
    for lane, buckets in per_lane.items():  # each assigner: 2 keys per bucket, its ids in order
        n = sum(buckets.values())
        assert sorted(buckets) == [lane + 3 * i for i in range((n + 1) // 2)]
        assert all(c == 2 for b, c in buckets.items() if b != max(buckets))
    # A new writer bootstraps per assigner: an existing key stays, a new key joins its assigner's buckets.
    t.write_arrow(pa.table({"id": [1, 100], "v": [0, 0], "dt": ["a", "a"]}, schema=SCHEMA))
    lane_100 = int(abs(np.fmod(int(hash_codes([pa.array([100], pa.int64())], [BIGINT(False)])[0]), 3)))
    after = _buckets_of_keys(t)
    assert after[1] == where[1] and after[100] % 3 == lane_100
    assert _rows(t)[1] == (0, "a")


def test_assigners_are_capped_by_max_buckets(catalog):
    opts = {"dynamic-bucket.max-buckets": "2", "dynamic-bucket.assigner-parallelism": "5"}
    t = catalog.create_table(
        "db.c", STR_SCHEMA, partition_keys=["pt"], primary_keys=["pk", "pt"], options=opts
    )
    for keys in (list("123456"), ["11", "22", "33", "44", "55", "66"]):
        t.write_arrow(pa.table({"pk": keys, "v": keys, "pt": ["p"] * 6}, schema=STR_SCHEMA))
    assert {s.bucket for s in t.plan().splits} == {0, 1}


def test_empty_partition_hash_is_javas():
    from engine.meta.bucket import _fmix, _mix
    from engine.write.bucket_assigner import EMPTY_ROW_HASH

    zero = np.zeros(1, dtype=np.uint32)
    h = _fmix(_mix(_mix(np.full(1, 42, dtype=np.uint32), zero), zero), np.full(1, 8, dtype=np.uint32))
    assert int(h.view(np.int32)[0]) == EMPTY_ROW_HASH


def test_writer_clustering_gives_each_key_map_one_writer(catalog):
    from engine.write.bucket_assigner import writer_clustering

    fixed = catalog.create_table("db.w1", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                 options={"bucket": "2"})
    local = catalog.create_table("db.w2", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"])
    cross = catalog.create_table("db.w3", SCHEMA, partition_keys=["dt"], primary_keys=["id"])
    assert writer_clustering(fixed.store) is None
    assert writer_clustering(local.store) == ["dt"]  # one writer per partition
    assert writer_clustering(cross.store) == []  # one writer for the table's global key index
