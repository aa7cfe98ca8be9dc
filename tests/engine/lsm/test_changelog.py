"""Changelog diffs between merged states, and RowKind conversions."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError
from engine.lsm.changelog import diff_changelog, kinds_to_rowkind, rowkind_to_kinds
from engine.merge.config import MergeConfig
from engine.merge.functions import merge


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


def test_insert_update_delete_in_key_order():
    before = pa.table({"k": [3, 1, 2, 5], "v": ["c", "a", "b", "e"]})
    after = pa.table({"k": [4, 2, 1, 5], "v": ["d", "B", "a", "e"]})
    out = diff_changelog(before, after, ["k"], ["k", "v"])
    assert out.column_names == ["rowkind", "k", "v"]
    assert rows(out) == [("-U", 2, "b"), ("+U", 2, "B"), ("-D", 3, "c"), ("+I", 4, "d")]


def test_empty_before_emits_inserts_and_empty_both_keeps_schema():
    after = pa.table({"k": pa.array([2, 1], pa.int32()), "v": ["b", "a"]})
    assert rows(diff_changelog(after.slice(0, 0), after, ["k"], ["k", "v"])) == [
        ("+I", 1, "a"),
        ("+I", 2, "b"),
    ]
    empty = diff_changelog(after.slice(0, 0), after.slice(0, 0), ["k"], ["v"])
    assert empty.num_rows == 0
    assert empty.schema.names == ["rowkind", "v"] and empty.schema.field("v").type == pa.string()


def test_comparison_is_null_safe_and_nan_equal():
    before = pa.table({"k": [1, 2, 3, 4], "x": [None, None, math.nan, 1.0]})
    after = pa.table({"k": [1, 2, 3, 4], "x": [None, 2.0, math.nan, None]})
    assert [(r[0], r[1]) for r in rows(diff_changelog(before, after, ["k"], ["k", "x"]))] == [
        ("-U", 2),
        ("+U", 2),
        ("-U", 4),
        ("+U", 4),
    ]


def test_null_and_multi_column_keys_match():
    before = pa.table({"a": [None, 1, 1], "b": ["x", None, "y"], "v": [1, 2, 3]})
    after = pa.table({"a": [1, None, 1], "b": [None, "x", "y"], "v": [2, 10, 3]})
    assert rows(diff_changelog(before, after, ["a", "b"], ["a", "b", "v"])) == [
        ("-U", None, "x", 1),
        ("+U", None, "x", 10),
    ]


def test_nested_values_are_compared_deeply():
    point = pa.struct([("x", pa.int64()), ("tags", pa.list_(pa.string()))])
    before = pa.table(
        {
            "k": [1, 2, 3, 4, 5],
            "l": pa.array([[1, 2], [1], None, [], [3]], pa.list_(pa.int64())),
            "m": pa.array(
                [[("a", 1)], [("a", 1)], [("a", 1)], [("a", 1)], [("b", None)]],
                pa.map_(pa.string(), pa.int64()),
            ),
            "s": pa.array([{"x": 1, "tags": ["p"]}] * 4 + [None], point),
        }
    )
    after = pa.table(
        {
            "k": [1, 2, 3, 4, 5],
            "l": pa.array([[1, 2], [1, 2], None, [], [3]], pa.list_(pa.int64())),
            "m": pa.array(
                [[("a", 1)], [("a", 1)], [("a", 2)], [("a", 1)], [("b", None)]],
                pa.map_(pa.string(), pa.int64()),
            ),
            "s": pa.array([{"x": 1, "tags": ["p"]}] * 3 + [{"x": 1, "tags": ["q"]}, None], point),
        }
    )
    out = diff_changelog(before, after, ["k"], ["k", "l", "m", "s"])
    assert [(r["rowkind"], r["k"]) for r in out.to_pylist()] == [
        ("-U", 2),
        ("+U", 2),
        ("-U", 3),
        ("+U", 3),
        ("-U", 4),
        ("+U", 4),
    ]


def test_castable_types_and_errors():
    before = pa.table({"k": pa.array([1], pa.int32()), "v": pa.array([1], pa.int32())})
    after = pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([2], pa.int64())})
    out = diff_changelog(before, after, ["k"], ["k", "v"])
    assert rows(out) == [("-U", 1, 1), ("+U", 1, 2)] and out.schema.field("v").type == pa.int64()
    with pytest.raises(InvalidArgumentError, match="twice"):
        diff_changelog(
            pa.table({"k": [1, 1], "v": [1, 2]}),
            after.cast(pa.schema([("k", pa.int64()), ("v", pa.int64())])),
            ["k"],
            ["v"],
        )
    with pytest.raises(InvalidArgumentError, match="twice"):
        diff_changelog(before, pa.table({"k": [1, 1], "v": [1, 2]}), ["k"], ["v"])
    with pytest.raises(InvalidArgumentError, match="lacks"):
        diff_changelog(before, after, ["k"], ["missing"])
    with pytest.raises(InvalidArgumentError, match="cannot compare"):
        diff_changelog(pa.table({"k": [1], "v": ["x"]}), after, ["k"], ["v"])


def test_row_kind_conversions():
    kinds = pa.array([0, 1, 2, 3, None], pa.int8())
    assert kinds_to_rowkind(kinds).to_pylist() == ["+I", "-U", "+U", "-D", None]
    assert rowkind_to_kinds(kinds_to_rowkind(kinds)).to_pylist() == [0, 1, 2, 3, None]
    assert rowkind_to_kinds(pa.chunked_array([["+U"], ["-D"]])).type == pa.int8()
    with pytest.raises(InvalidArgumentError, match="Unknown row kind '\\+X'"):
        rowkind_to_kinds(pa.array(["+I", "+X"]))
    with pytest.raises(InvalidArgumentError, match="0 \\(\\+I\\)"):
        kinds_to_rowkind(pa.array([4], pa.int8()))


state = st.dictionaries(
    st.tuples(st.integers(0, 6), st.sampled_from(["", "a", "é"])),
    st.tuples(st.one_of(st.none(), st.integers(0, 2)), st.sampled_from([None, "p", "q"])),
    max_size=12,
)


def _state_table(entries: dict, rnd) -> pa.Table:
    items = list(entries.items())
    rnd.shuffle(items)
    return pa.table(
        {
            "k1": pa.array([k[0] for k, _ in items], pa.int64()),
            "k2": pa.array([k[1] for k, _ in items], pa.string()),
            "x": pa.array([v[0] for _, v in items], pa.int64()),
            "y": pa.array([v[1] for _, v in items], pa.string()),
        }
    )


@settings(max_examples=100, deadline=None)
@given(before=state, after=state, rnd=st.randoms())
def test_applying_the_diff_to_before_gives_after(before, after, rnd):
    out = diff_changelog(
        _state_table(before, rnd), _state_table(after, rnd), ["k1", "k2"], ["k1", "k2", "x", "y"]
    )
    current = dict(before)
    keys_seen = []
    pending_update = None
    for kind, k1, k2, x, y in rows(out):
        key = (k1, k2)
        keys_seen.append((k1, k2.encode()))
        if kind == "+I":
            assert key not in current
            current[key] = (x, y)
        elif kind == "-D":
            assert current.pop(key) == (x, y)
        elif kind == "-U":
            assert current.pop(key) == (x, y)
            pending_update = key
        else:
            assert kind == "+U" and pending_update == key  # -U immediately followed by +U
            current[key] = (x, y)
            pending_update = None
    assert current == after
    assert keys_seen == sorted(keys_seen)
    unchanged = sum(1 for k in before.keys() & after.keys() if before[k] == after[k])
    changed = len(before.keys() & after.keys()) - unchanged
    assert out.num_rows == len(before.keys() - after.keys()) + len(after.keys() - before.keys()) + 2 * changed


def test_diff_of_merged_states_is_the_changelog_of_a_commit():
    fields = {"_SEQUENCE_NUMBER": pa.int64(), "_VALUE_KIND": pa.int8(), "k": pa.int64(), "v": pa.string()}
    base = pa.table(
        {"_SEQUENCE_NUMBER": [1, 2, 3], "_VALUE_KIND": [0, 0, 0], "k": [1, 2, 3], "v": ["a", "b", "c"]},
        schema=pa.schema(fields),
    )
    commit = pa.table(
        {"_SEQUENCE_NUMBER": [4, 5, 6], "_VALUE_KIND": [2, 3, 0], "k": [1, 2, 4], "v": ["A", "b", "d"]},
        schema=pa.schema(fields),
    )
    before = merge(base, ["k"], MergeConfig(), drop_deletes=True)
    after = merge(pa.concat_tables([base, commit]), ["k"], MergeConfig(), drop_deletes=True)
    assert rows(diff_changelog(before, after, ["k"], ["k", "v"])) == [
        ("-U", 1, "a"),
        ("+U", 1, "A"),
        ("-D", 2, "b"),
        ("+I", 4, "d"),
    ]
