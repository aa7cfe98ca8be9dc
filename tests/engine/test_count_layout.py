"""Tables without a primary key that accept retractions (the design's count layout)."""

from __future__ import annotations

import uuid
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import InvalidArgumentError
from engine.scan.incremental import ChangeReader, incremental_splits

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string())])
OPTS = {"retractions.enabled": "true"}


def rows(table):
    return Counter((r["a"], r["b"]) for r in table.to_pylist())


def test_logical_view_hides_the_stored_key_and_count(catalog):
    t = catalog.create_table("db.c", SCHEMA, options=OPTS)
    assert t.schema.field_names == ("a", "b") and t.primary_keys == ()
    assert t.store.schema.primary_keys == ("a", "b") and "_VALUE_COUNT" in t.store.schema.field_names
    t.write_arrow(pa.table({"a": [1, 1, 2], "b": ["x", "x", None]}))
    t.write_arrow(pa.table({"a": [1, 2], "b": ["x", None], "rowkind": ["-D", "-U"]}))
    assert rows(t.to_arrow()) == Counter({(1, "x"): 1})
    t.compact(full=True)
    assert rows(t.to_arrow()) == Counter({(1, "x"): 1})
    files = [f for s in t.plan().splits for f in s.files]
    assert sum(f.row_count for f in files) == 1  # the zero-count row is gone after full compaction


def test_changes_are_inserts_and_deletes(catalog):
    t = catalog.create_table("db.c", SCHEMA, options=OPTS)
    t.write_arrow(pa.table({"a": [1], "b": ["x"]}))
    start = t.latest_snapshot().id
    t.write_arrow(pa.table({"a": [1, 5], "b": ["x", "y"], "rowkind": ["-D", "+I"]}))
    changes = ChangeReader(t.store).read_all(incremental_splits(t.store, start, t.latest_snapshot().id))
    assert sorted(
        zip(changes.column("rowkind").to_pylist(), changes.column("a").to_pylist(), strict=True)
    ) == [("+I", 5), ("-D", 1)]


def test_nested_columns_cannot_be_counted(catalog):
    schema = pa.schema([("a", pa.int64()), ("l", pa.list_(pa.int64()))])
    with pytest.raises(InvalidArgumentError):
        catalog.create_table("db.n", schema, options=OPTS)
    with pytest.raises(InvalidArgumentError):
        catalog.create_table("db.k", SCHEMA, primary_keys=["a"], options=OPTS)


OPS = st.lists(
    st.tuples(st.sampled_from(["+I", "-D", "+U", "-U"]), st.integers(0, 3), st.sampled_from(["x", "y"])),
    min_size=1,
    max_size=10,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(OPS, st.booleans()), min_size=1, max_size=5))
def test_random_retractions_match_a_multiset_model(catalog, history):
    t = catalog.create_table(f"db.m{uuid.uuid4().hex[:8]}", SCHEMA,
                             options={**OPTS, "num-sorted-run.compaction-trigger": "2"})
    model: Counter = Counter()
    for ops, compact in history:
        t.write_arrow(pa.table({"a": [a for _, a, _ in ops], "b": [b for _, _, b in ops],
                                "rowkind": [k for k, _, _ in ops]}))
        for kind, a, b in ops:
            model[(a, b)] += -1 if kind in ("-D", "-U") else 1
        if compact:
            t.compact(full=True)
        assert rows(t.to_arrow()) == Counter({k: v for k, v in model.items() if v > 0})
