"""Filtered reads of primary-key tables with deletion vectors (no JVM).

A DV table is read unmerged, so the reader may apply the filter to each file's own rows: it
reads the filter's columns first, keeps the positions that pass the filter, are ``+I``/``+U``
and are not in the file's DV, and reads the other columns only at those positions. The rows must
be exactly those of the merge-on-read table with the same writes, filtered afterwards.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.read.split_reader as split_reader
from engine import open_catalog
from engine.scan import predicate as P

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])
DV = {"deletion-vectors.enabled": "true"}


def _batch(keys, tag: str, kinds=None) -> pa.Table:
    keys = list(keys)
    cols = {"k": pa.array(keys, pa.int64()), "v": pa.array([f"{tag}{k}" for k in keys]),
            "n": pa.array([(k * 7 + len(tag)) % 11 for k in keys], pa.int64())}
    if kinds is not None:
        cols["rowkind"] = pa.array(kinds)
    return pa.table(cols)


def _pair(catalog, suffix: str, options: dict[str, str] | None = None, **kw):
    opts = {"bucket": "2", **(options or {})}
    shape = dict(primary_keys=kw.get("pk", ["k"]), partition_keys=kw.get("parts", ()))
    schema = kw.get("schema", SCHEMA)
    ref = catalog.create_table(f"db.ref{suffix}", schema, options=opts, **shape)
    dv = catalog.create_table(f"db.dv{suffix}", schema, options={**opts, **DV}, **shape)
    return ref, dv


def _read(t, predicate, columns=None, snapshot_id=None) -> list[tuple]:
    builder = t.refresh().new_read_builder()
    if snapshot_id is not None:
        builder = builder.at(snapshot_id=snapshot_id)
    builder = builder.with_projection(columns).with_filter(predicate)
    read = builder.new_read()
    out = read.to_arrow(builder.new_scan().plan().splits)
    return sorted(tuple(r.values()) for r in out.to_pylist())


def _expected(ref, predicate, columns=None, snapshot_id=None) -> list[tuple]:
    builder = ref.refresh().new_read_builder()
    if snapshot_id is not None:
        builder = builder.at(snapshot_id=snapshot_id)
    whole = builder.new_read().to_arrow(builder.new_scan().plan().splits)
    kept = whole.filter(predicate.to_arrow())
    return sorted(tuple(r.values()) for r in kept.select(columns or whole.column_names).to_pylist())


PREDICATES = {
    "value": P.less_than("n", 3),
    "key": P.greater_or_equal("k", 350),
    "string": P.starts_with("v", "b1"),
    "key and value": P.and_(P.less_than("k", 200), P.equal("n", 4)),
    "or": P.or_(P.equal("k", 7), P.is_in("n", [0, 10])),
    "none": P.greater_than("k", 10_000),
}


@pytest.mark.parametrize("name", list(PREDICATES))
@pytest.mark.parametrize("columns", [None, ["v"], ["k", "v"]])
def test_filtered_dv_read_equals_merge_on_read_filtered(catalog, name, columns):
    ref, dv = _pair(catalog, "")
    deletes = range(1, 400, 13)
    for step in (_batch(range(400), "a"), _batch(range(0, 400, 3), "b"),
                 _batch(deletes, "c", ["-D"] * len(deletes)), _batch(range(5, 400, 8), "d")):
        ref.refresh().write_arrow(step)
        dv.refresh().write_arrow(step)
    predicate = PREDICATES[name]
    assert _read(dv, predicate, columns) == _expected(ref, predicate, columns)


def test_a_file_where_nothing_passes_is_read_no_further(catalog, monkeypatch):
    ref, dv = _pair(catalog, "")
    for step in (_batch(range(400), "a"), _batch(range(0, 400, 3), "b")):
        ref.refresh().write_arrow(step)
        dv.refresh().write_arrow(step)
    reads = []
    real = split_reader.read_data_file

    def counting(store, path, f, fields, system=()):
        reads.append([fd.name for fd in fields])
        return real(store, path, f, fields, system)

    monkeypatch.setattr(split_reader, "read_data_file", counting)
    absent = P.equal("v", "a5x")  # inside every file's min/max of v, so no file is pruned
    assert _read(dv, absent) == []
    assert reads and all(names == ["v"] for names in reads), "only the filter's column was read"
    reads.clear()
    predicate = P.equal("k", 3)
    assert _read(dv, predicate) == _expected(ref, predicate)
    assert ["v", "n"] in reads  # the other columns, of the one file holding key 3


def test_time_travel_reads_the_dvs_of_its_snapshot(catalog):
    ref, dv = _pair(catalog, "")
    for t in (ref, dv):
        t.write_arrow(_batch(range(300), "a"))
        t.refresh().write_arrow(_batch(range(0, 300, 2), "b"))
    first = dv.refresh().latest_snapshot().id
    first_ref = ref.refresh().latest_snapshot().id
    for t in (ref, dv):
        t.refresh().write_arrow(_batch(range(0, 300, 5), "c"))
    predicate = P.less_than("n", 4)
    assert _read(dv, predicate) == _expected(ref, predicate)
    assert _read(dv, predicate, snapshot_id=first) == _expected(ref, predicate, snapshot_id=first_ref)
    assert _read(dv, predicate, snapshot_id=first) != _read(dv, predicate)


def test_partitioned_table_and_level0_rows_are_read_as_batch_readers_do(catalog):
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), *SCHEMA])
    ref, dv = _pair(catalog, "p", schema=schema, pk=["p", "k"], parts=["p"])

    def batch(keys, tag, kinds=None):
        b = _batch(keys, tag, kinds)
        return b.add_column(0, "p", pa.array(["x" if k % 3 else "y" for k in keys]))

    for step in (batch(range(600), "a"), batch(range(0, 600, 4), "b"), batch(range(2, 600, 7), "d")):
        ref.refresh().write_arrow(step)
        dv.refresh().write_arrow(step)
    predicate = P.and_(P.equal("p", "x"), P.less_than("n", 5))
    assert _read(dv, predicate, ["k", "v"]) == _expected(ref, predicate, ["k", "v"])
    # a write-only commit leaves level-0 files: DV batch reads skip them, filtered or not
    dv.refresh().write_arrow(batch(range(0, 600, 2), "w"))
    dv_wo = dv.refresh().with_options({"write-only": "true"})
    dv_wo.write_arrow(batch(range(1, 600, 2), "z"))
    assert any(f.level == 0 for s in dv.refresh().plan().splits for f in s.files)
    whole = dv.refresh().to_arrow()
    expected = sorted(tuple(r.values()) for r in whole.filter(predicate.to_arrow()).to_pylist())
    assert _read(dv, predicate) == expected
    assert not any(r[2].startswith("z") for r in expected), "level 0 is not read"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["upsert", "delete", "compact"]),
                  st.lists(st.integers(0, 300), max_size=50)),
        min_size=1, max_size=5,
    ),
    bound=st.integers(0, 11),
    key=st.integers(0, 300),
)
def test_random_writes_filtered_reads_equal_merge_on_read(tmp_path_factory, steps, bound, key):
    catalog = open_catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    ref, dv = _pair(catalog, "", {"num-sorted-run.compaction-trigger": "3"})
    for t in (ref, dv):
        t.write_arrow(_batch(range(0, 300, 2), "a"))
    for i, (op, keys) in enumerate(steps):
        keys = sorted(set(keys))
        for t in (ref, dv):
            if op == "compact":
                t.refresh().compact(full=bool(i % 2))
            elif keys:
                t.refresh().write_arrow(_batch(keys, f"u{i}", ["-D"] * len(keys) if op == "delete" else None))
    for predicate in (P.less_than("n", bound), P.or_(P.greater_or_equal("k", key), P.equal("n", bound))):
        assert _read(dv, predicate, ["v"]) == _expected(ref, predicate, ["v"])
    assert _read(dv, None) == _expected(ref, P.is_not_null("k"))  # and unfiltered (the plain raw path)


def test_append_table_with_dvs_reads_filter_first_too(catalog):
    from engine import AppendDeletionCommit
    from engine.append_deletions import dv_scan_files

    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.app", schema, options={**DV, "bucket": "-1"})
    for lo in (0, 100):
        t.refresh().write_arrow(pa.table({"k": pa.array(range(lo, lo + 100), pa.int64()),
                                          "v": [f"v{k}" for k in range(lo, lo + 100)]}))
    t = t.refresh()
    snapshot = t.latest_snapshot()
    deleted = {f.name: np.arange(0, 100, 3) for f in dv_scan_files(t.store, snapshot)}  # positions
    commit = AppendDeletionCommit(t.store, snapshot)
    commit.delete(deleted)
    commit.commit()
    live = {k for k in range(200) if (k % 100) % 3}
    for predicate, keep in ((P.less_than("k", 50), lambda k: k < 50),
                            (P.starts_with("v", "v1"), lambda k: str(k).startswith("1")),
                            (P.equal("k", 3), lambda k: k == 3)):
        assert _read(t, predicate, ["v"]) == sorted((f"v{k}",) for k in live if keep(k))
