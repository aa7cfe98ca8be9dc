"""Orphan cleanup's lean reachability (manifests decoded without statistics, lists and files
recorded once) finds exactly the files the full computation finds, and fails closed the same way,
whether a manifest is decoded through fastavro's records or through Arrow columns (large ones)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import open_catalog
from engine.meta import manifest_store
from engine.ops.reachability import ReachabilityCollector, UnsafeToDeleteError, all_anchors
from tests.engine.ops.conftest import SCHEMA, rows

FUTURE = 2**62  # an older_than every snapshot is older than


@pytest.fixture(autouse=True, params=["records", "columns"])
def decode(request, monkeypatch):
    """``columns``: every manifest counts as large, so the lean decode takes the Arrow path."""
    if request.param == "columns":
        if not manifest_store.manifest_arrow.USE_POLARS:
            pytest.skip("polars is not installed: the lean decode always takes fastavro's records")
        monkeypatch.setattr(manifest_store, "ARROW_DECODE_MIN_BYTES", 0)
    return request.param


def _cold() -> None:
    manifest_store.clear_caches()


def _both(t):
    anchors = all_anchors(t.store.io, t.path)
    _cold()
    lean = ReachabilityCollector(t.store.io, t.path, lean=True).collect(anchors)
    _cold()
    full = ReachabilityCollector(t.store.io, t.path).collect(anchors)
    warm_lean = ReachabilityCollector(t.store.io, t.path, lean=True).collect(anchors)  # cached entries
    return lean, full, warm_lean


@pytest.fixture
def history(catalog):
    """Compactions (manifest merges restart the fold), deletes, tags, branches and a changelog."""
    t = catalog.create_table(
        "db.h",
        SCHEMA,
        primary_keys=["id"],
        options={
            "bucket": "2",
            "manifest.merge-min-count": "3",
            "changelog-producer": "input",
            "num-sorted-run.compaction-trigger": "3",
        },
    )
    for i in range(12):
        t.write_arrow(rows([i, i + 1, i + 2], f"v{i}"))
        if i == 4:
            t.refs.tags.create("t4")
        if i == 7:
            t.refs.branches.create("b", from_snapshot=t.latest_snapshot().id)
    t.compact(full=True)
    t.write_arrow(rows([1], "x"))
    return t


def test_lean_finds_exactly_the_files_of_the_full_computation(history):
    lean, full, warm = _both(history)
    assert lean.files == full.files == warm.files
    assert len(full.files) > 20


def test_lean_fails_closed_on_a_corrupt_manifest(history):
    t = history
    snap = t.store.snapshots.get(3)
    name = t.store.manifests.read_list(snap.delta_manifest_list)[0].file_name
    path = t.store.paths.manifest_file(name)
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) - 20)
        f.write(b"\xff" * 20)
    _cold()
    with pytest.raises(UnsafeToDeleteError) as err:
        ReachabilityCollector(t.store.io, t.path, lean=True).collect(all_anchors(t.store.io, t.path))
    assert err.value.path == path


def test_lean_fails_closed_on_a_missing_manifest_list(history):
    t = history
    path = t.store.paths.manifest_file(t.store.snapshots.get(2).base_manifest_list)
    os.remove(path)
    _cold()
    with pytest.raises(UnsafeToDeleteError) as err:
        t.maintenance.remove_orphan_files(force=True, older_than=0)
    assert err.value.path == path


# ---- random histories: the columnar lean decode, the record one and the full one agree ------------

_OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("write"), st.lists(st.integers(0, 9), min_size=1, max_size=4), st.sampled_from("ab")
        ),
        st.tuples(st.just("overwrite"), st.lists(st.integers(0, 9), min_size=1, max_size=3)),
        st.tuples(st.just("compact")),
        st.tuples(st.just("tag")),
        st.tuples(st.just("branch")),
        st.tuples(st.just("branch_write"), st.integers(0, 9)),
        st.tuples(st.just("expire")),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_random_histories_give_the_same_reachable_files_every_way(tmp_path_factory, decode, ops):
    catalog = open_catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    t = catalog.create_table(
        "db.r", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
        options={"bucket": "2", "manifest.merge-min-count": "2", "num-sorted-run.compaction-trigger": "2"},
    )
    tags = branches = 0
    for op in ops:
        if op[0] == "write":
            t.write_arrow(rows(op[1], "w", op[2]))
        elif op[0] == "overwrite":  # DELETE entries for the files it replaces
            t.write_arrow(rows(op[1], "o", "a"), overwrite=True)
        elif op[0] == "compact":
            t.compact(full=True)
        elif op[0] == "tag" and t.latest_snapshot() is not None:
            t.refs.tags.create(f"t{tags}")
            tags += 1
        elif op[0] == "branch" and t.latest_snapshot() is not None:
            t.refs.branches.create(f"b{branches}", from_snapshot=t.latest_snapshot().id)
            branches += 1
        elif op[0] == "branch_write" and branches:
            catalog.get_table(f"db.r$branch_b{branches - 1}").write_arrow(rows([op[1]], "b", "a"))
        elif op[0] == "expire" and t.latest_snapshot() is not None:
            t.maintenance.expire_snapshots(retain_max=2, retain_min=1, older_than=FUTURE)
    lean, full, warm = _both(t)
    assert lean.files == full.files == warm.files
    assert not t.latest_snapshot() or len(full.files) >= 3
