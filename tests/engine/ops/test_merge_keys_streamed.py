"""merge_branch's key plan with the three states narrowed in a streamed pass (engine.ops.merge_keys).

The plan must equal the one computed from the three states read whole (forced here by treating
the table as a deletion-vector one, whose states are read whole): random changes on both
branches with 16-row merge chunks, over several buckets, a branch whose bucket count changed,
and the peak memory of planning a merge of a large table with few changes.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.merge import streaming
from engine.ops import merge_keys
from engine.ops.merge_keys import plan_key_merge
from engine.write import kv_rolling

KEYED = pa.schema([pa.field("id", pa.int32(), False), ("v", pa.string()), ("n", pa.int64())])


def _setup(catalog, name: str, options: dict[str, str], base_keys):
    t = catalog.create_table(name, KEYED, primary_keys=["id"], options=options)
    t.write_arrow(_rows(base_keys, "a"))
    t.refs.tags.create("t1", t.latest_snapshot().id)
    t.refs.branches.create("dev", from_tag="t1")
    return t, catalog.get_table(f"{name}$branch_dev")


def _rows(keys, tag: str, kinds=None) -> pa.Table:
    keys = list(keys)
    data = {"id": pa.array(keys, pa.int32()), "v": [f"{tag}{k}" for k in keys], "n": [k % 5 for k in keys]}
    if kinds is not None:
        return pa.table({**data, "rowkind": kinds})
    return pa.table(data, schema=KEYED)


def _key_plan(t, dev, conflict: str):
    t, dev = t.refresh(), dev.refresh()
    base = t.refs.tags.get("t1").snapshot
    return plan_key_merge(dev.store, t.store, dev.latest_snapshot(), t.latest_snapshot(), base, conflict)


def _same(a, b) -> None:
    def rows(plan) -> list[tuple]:
        return sorted(tuple(r.values()) for r in plan.rows.to_pylist())

    assert rows(a) == rows(b)
    assert (a.deletes, a.conflict_count, a.conflicts) == (b.deletes, b.conflict_count, b.conflicts)


def _both_plans(monkeypatch, t, dev, conflict: str):
    """(streamed with 16-row chunks, whole) plans, and how many narrowing steps the first took."""
    steps: list[int] = []
    real = merge_keys._keys_not_alike

    def counting(sides, keys):
        steps.append(sum(s.num_rows for s in sides))
        return real(sides, keys)

    with monkeypatch.context() as m:
        m.setattr(streaming, "MERGE_CHUNK_ROWS", 16)
        m.setattr(merge_keys, "_keys_not_alike", counting)
        streamed = _key_plan(t, dev, conflict)
    with monkeypatch.context() as m:
        m.setattr(merge_keys, "reads_in_key_order", lambda store, splits: False)  # read whole
        whole = _key_plan(t, dev, conflict)
    return streamed, whole, steps


changes = st.lists(st.tuples(st.integers(0, 150), st.sampled_from(["+I", "-D"]), st.sampled_from("xyz")),
                   max_size=40)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(on_dev=changes, on_main=changes, conflict=st.sampled_from(["source", "target", "fail"]),
       engine=st.sampled_from([{}, {"merge-engine": "partial-update"}]))
def test_streamed_plan_equals_the_whole_one(tmp_path_factory, on_dev, on_main, conflict, engine):
    from engine import open_catalog

    catalog = open_catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    if engine:
        on_dev = [(k, "+I", tag) for k, _, tag in on_dev]  # (partial-update refuses -D by default)
        on_main = [(k, "+I", tag) for k, _, tag in on_main]
    t, dev = _setup(catalog, "db.K", {"bucket": "3", **engine}, range(0, 120, 2))
    for table, writes in ((dev, on_dev), (t, on_main)):
        for chunk in (writes[: len(writes) // 2], writes[len(writes) // 2:]):
            if chunk:
                keys = [k for k, _, _ in chunk]
                batch = _rows(keys, chunk[0][2], [kind for _, kind, _ in chunk])
                table.refresh().write_arrow(batch)
    mp = pytest.MonkeyPatch()
    try:
        streamed, whole, _ = _both_plans(mp, t, dev, conflict)
    finally:
        mp.undo()
    _same(streamed, whole)


@pytest.mark.parametrize("options", [{"bucket": "2"}, {"bucket": "1", "write-only": "true"}],
                         ids=["two-buckets", "write-only"])
def test_streamed_plan_runs_in_many_steps(catalog, monkeypatch, options):
    t, dev = _setup(catalog, "db.K", options, range(400))
    dev.refresh().write_arrow(_rows(range(0, 400, 7), "d"))
    dev.refresh().write_arrow(_rows(range(3, 400, 31), "x", ["-D"] * len(range(3, 400, 31))))
    t.refresh().write_arrow(_rows(range(0, 400, 11), "m"))
    t.refresh().write_arrow(_rows(range(400, 450), "new"))
    for conflict in ("source", "target"):
        streamed, whole, steps = _both_plans(monkeypatch, t, dev, conflict)
        _same(streamed, whole)
        assert len(steps) > 20 and max(steps) <= 3 * 64, "narrowed in many small steps"
        assert streamed.conflict_count > 0 and streamed.deletes > 0


def test_a_branch_whose_buckets_changed_plans_like_whole(catalog, monkeypatch):
    """Rows of one key in other buckets on the two branches: each bucket's step keeps them, and
    the plan of the narrowed states is the whole one."""
    from engine.schema_changes import SetOption

    t, dev = _setup(catalog, "db.K", {"bucket": "2"}, range(200))
    catalog.alter_table("db.K$branch_dev", [SetOption("bucket", "3")], allow_immutable={"bucket"})
    dev = catalog.get_table("db.K$branch_dev")
    dev.refresh().write_arrow(_rows(range(200), "a"), overwrite=True)  # the same rows, 3 buckets
    dev.refresh().write_arrow(_rows(range(0, 200, 9), "d"))
    t.refresh().write_arrow(_rows(range(0, 200, 13), "m"))
    streamed, whole, _ = _both_plans(monkeypatch, t, dev, "source")
    _same(streamed, whole)
    assert streamed.rows.num_rows == len(range(0, 200, 9))


POOLS: list[pa.MemoryPool] = []


def test_peak_memory_of_a_streamed_plan_follows_the_changes(catalog, monkeypatch):
    """400,000 keys in small files over 4 buckets, 1% changed on the branch and on main: the
    whole plan holds the three states; the streamed one a merge chunk or file per state and the
    changed keys' rows (measured: 46.3 and 3.5 MB)."""
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 10_000)
    monkeypatch.setattr(kv_rolling, "ROWS_PER_SLICE", 4_096)  # (files roll at a row group's end)
    t = catalog.create_table("db.M", KEYED, primary_keys=["id"],
                             options={"bucket": "4", "target-file-size": "128kb"})
    t.write_arrow(_rows(range(400_000), "value-"))
    t.refresh().compact(full=True)  # (a compaction rolls files at the target size; a flush does not)
    t.refs.tags.create("t1", t.refresh().latest_snapshot().id)
    t.refs.branches.create("dev", from_tag="t1")
    dev = catalog.get_table("db.M$branch_dev")
    dev.refresh().write_arrow(_rows(range(0, 400_000, 100), "dev-"))
    t.refresh().write_arrow(_rows(range(50, 400_000, 100), "main-"))

    def peak(whole: bool):
        default = pa.default_memory_pool()
        pool = pa.proxy_memory_pool(default)
        POOLS.append(pool)  # never freed: buffers allocated through it may outlive the test
        with monkeypatch.context() as m:
            if whole:
                m.setattr(merge_keys, "reads_in_key_order", lambda store, splits: False)
            pa.set_memory_pool(pool)
            try:
                plan = _key_plan(t, dev, "source")
            finally:
                pa.set_memory_pool(default)
        return pool.max_memory(), plan

    whole, expected = peak(True)
    streamed, plan = peak(False)
    _same(plan, expected)
    assert plan.rows.num_rows == 4_000 and plan.conflict_count == 0
    assert streamed * 4 < whole, (streamed, whole)


def test_rows_arrow_cannot_compare_are_refused_as_before(catalog, monkeypatch):
    """An ARRAY value column: the streamed pass refuses it with merge_branch's message, as the
    whole plan does."""
    from engine.errors import InvalidArgumentError

    schema = pa.schema([pa.field("id", pa.int32(), False), ("tags", pa.list_(pa.string()))])
    t = catalog.create_table("db.L", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "tags": [["a"], ["b"]]}, schema=schema))
    t.refs.tags.create("t1", t.latest_snapshot().id)
    t.refs.branches.create("dev", from_tag="t1")
    dev = catalog.get_table("db.L$branch_dev")
    dev.write_arrow(pa.table({"id": pa.array([2], pa.int32()), "tags": [["c"]]}, schema=schema))
    for whole in (False, True):
        with monkeypatch.context() as m:
            if whole:
                m.setattr(merge_keys, "reads_in_key_order", lambda store, splits: False)
            with pytest.raises(InvalidArgumentError, match="merge_branch cannot compare the rows"):
                _key_plan(t, dev, "source")
