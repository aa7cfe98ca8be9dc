"""Exact filters and split limits on merge-on-read primary-key tables (no JVM).

A key's versions are merged before the filter runs, so a filter on a value column never brings an
older version of a key back (its newest version fails the filter, an older one passes). The rows
must be exactly those of a plain model of the writes (a dict of key → newest row, deletes removed)
filtered as Spark filters: three-valued logic (a comparison with NULL drops the row), and NaN equal
to itself and greater than every other number. A split limit yields the first rows of each split's
filtered output and stops there.
"""

from __future__ import annotations

import itertools
import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.read.section_merge as section_merge
from engine.merge import streaming
from engine.scan import predicate as P

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("x", pa.float64()), ("s", pa.string())])
OPS = ("eq", "ne", "lt", "le", "gt", "ge")
_names = itertools.count()

values = st.one_of(st.none(), st.just(math.nan), st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0]))
# a batch: (key, x, deleted)
batch = st.lists(st.tuples(st.integers(0, 30), values, st.booleans()), min_size=1, max_size=12)
writes = st.lists(batch, min_size=2, max_size=5)
leaves = st.one_of(
    st.tuples(st.sampled_from(OPS), st.just("x"), st.sampled_from([0.0, 0.5, 1.0, math.nan])),
    st.tuples(st.sampled_from(OPS), st.just("s"), st.sampled_from(["a", "v1", "v2"])),
    st.tuples(st.sampled_from(("is_null", "is_not_null")), st.just("x"), st.none()),
)


def _spark_compare(op: str, value, literal) -> bool:
    """Spark's comparison of doubles: NaN equal to itself and above every other value."""
    def key(v):
        return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)
    a, b = key(value), key(literal)
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


def _keeps(leaf, row) -> bool:
    op, column, literal = leaf
    value = row[column]
    if op == "is_null":
        return value is None
    if op == "is_not_null":
        return value is not None
    return value is not None and _spark_compare(op, value, literal)


def _predicate(leaf) -> P.Predicate:
    op, column, literal = leaf
    return P.Leaf(op, column) if literal is None else P.Leaf(op, column, (literal,))


def _table(catalog, batches, options=None):
    """A table with one level-0 file per batch (``write-only``: nothing compacts them), and the model."""
    t = catalog.create_table(f"db.fm{next(_names)}", SCHEMA, primary_keys=["k"],
                             options={"bucket": "2", "write-only": "true", **(options or {})})
    model: dict[int, dict] = {}
    for n, batch in enumerate(batches):
        rows = {k: (x, deleted) for k, x, deleted in batch}  # one version per key and batch
        keys = sorted(rows)
        t.write_arrow(pa.table({
            "k": pa.array(keys, pa.int64()), "x": pa.array([rows[k][0] for k in keys], pa.float64()),
            "s": [f"v{n}" for _ in keys], "rowkind": ["-D" if rows[k][1] else "+I" for k in keys]}))
        for k in keys:
            if rows[k][1]:
                model.pop(k, None)
            else:
                model[k] = {"k": k, "x": rows[k][0], "s": f"v{n}"}
    return t, model


def _canon(rows) -> list[tuple]:
    return sorted((r["k"], "nan" if isinstance(r["x"], float) and math.isnan(r["x"]) else r["x"], r["s"])
                  for r in rows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=writes, conjuncts=st.lists(leaves, min_size=1, max_size=2), chunk=st.sampled_from([None, 4]))
def test_the_filter_runs_after_the_merge_as_spark_evaluates_it(catalog, batches, conjuncts, chunk):
    t, model = _table(catalog, batches)
    predicate = P.and_(*(_predicate(c) for c in conjuncts))
    builder = t.new_read_builder().with_filter(predicate)
    splits = builder.new_scan().plan().splits
    with pytest.MonkeyPatch.context() as mp:
        if chunk is not None:  # sections streamed in key-aligned steps of a few rows
            mp.setattr(streaming, "MERGE_CHUNK_ROWS", chunk)
        got = builder.new_read().to_arrow(splits).to_pylist()
    expected = [r for r in model.values() if all(_keeps(c, r) for c in conjuncts)]
    assert _canon(got) == _canon(expected)


def test_a_value_filter_never_resurrects_an_older_version(catalog):
    # key 1: x = 5.0 first, then 0.0; a filter x > 1 must not show the old version
    t, _ = _table(catalog, [[(1, 5.0, False), (2, 5.0, False)], [(1, 0.0, False), (2, None, True)]])
    builder = t.new_read_builder().with_filter(P.greater_than("x", 1.0))
    splits = builder.new_scan().plan().splits
    assert any(len(s.files) > 1 for s in splits)  # the merge runs
    assert builder.new_read().to_arrow(splits).num_rows == 0
    assert builder.new_read(filter_rows=False).to_arrow(splits).num_rows == 1  # pruning only: Spark filters


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=writes, limit=st.integers(0, 8), leaf=leaves)
def test_a_split_limit_yields_the_first_rows_of_each_split_and_stops(catalog, batches, limit, leaf):
    t, _ = _table(catalog, batches)
    builder = t.new_read_builder().with_filter(_predicate(leaf))
    limited = builder.with_limit(limit).new_read()
    whole = builder.new_read()
    for split in builder.new_scan().plan().splits:
        full = whole.to_arrow([split])
        got = limited.to_arrow([split]).to_pylist()
        assert [r["k"] for r in got] == [r["k"] for r in full.slice(0, limit).to_pylist()]
        assert _canon(got) == _canon(full.slice(0, limit).to_pylist())


def test_a_limited_read_stops_reading_the_split(catalog, monkeypatch):
    import engine.read.split_reader as split_reader

    t, _ = _table(catalog, [[(k, float(k), False) for k in range(0, 30, 3)],
                            [(k, float(k), False) for k in range(60, 90, 3)]], {"bucket": "1"})
    read = split_reader.read_data_file
    calls = []
    monkeypatch.setattr(split_reader, "read_data_file", lambda *a, **kw: calls.append(1) or read(*a, **kw))
    builder = t.new_read_builder()
    (split,) = builder.new_scan().plan().splits
    assert len(split.files) == 2  # two key ranges apart: two sections, read one after the other
    assert builder.with_limit(3).new_read().to_arrow([split]).num_rows == 3
    assert len(calls) == 1


def test_merges_take_only_the_keys_with_a_passing_version(catalog, monkeypatch):
    batches = [[(k, float(k % 50), False) for k in range(200)],
               [(k, float(k % 7), False) for k in range(0, 200, 2)]]
    t, model = _table(catalog, batches, {"bucket": "1"})
    merged = []
    merge = section_merge.merge
    monkeypatch.setattr(section_merge, "merge",
                        lambda rows, *a, **kw: merged.append(rows.num_rows) or merge(rows, *a, **kw))
    builder = t.new_read_builder().with_filter(P.equal("x", 3.0))
    got = builder.new_read().to_arrow(builder.new_scan().plan().splits).to_pylist()
    assert _canon(got) == _canon([r for r in model.values() if r["x"] == 3.0])
    # keys with x = 3 in some version: 3, 53, 103, 153 (first write) and 3, 10, 24, ... (second):
    # their versions go into the merge, not the 300 rows of the section
    assert merged and sum(merged) < 60
