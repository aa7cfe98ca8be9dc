"""Partial-update sequence groups: Paimon's documented examples, retractions, the option checks,
and a property test against a row-by-row model of Paimon's PartialUpdateMergeFunction."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import open_catalog
from engine.errors import InvalidArgumentError
from engine.merge.config import MergeConfig
from engine.merge.functions import merge
from tests.engine.merge.test_merge import kv_table, rows_of, run

INT = pa.int64()
DOC = [pa.field("k", INT, nullable=False)] + [pa.field(n, INT) for n in ("a", "b", "g_1", "c", "d", "g_2")]
DOC_GROUPS = ((("g_1",), ("a", "b")), (("g_2",), ("c", "d")))


def doc_config(**kwargs: Any) -> MergeConfig:
    return MergeConfig(engine="partial-update", sequence_groups=DOC_GROUPS, **kwargs)


def test_paimon_documented_example():
    first = [(1, "+I", 1, 1, 1, 1, 1, 1, 1)]
    null_group = first + [(2, "+I", 1, 2, 2, 2, 2, 2, None)]  # g_2 is null: c, d stay
    assert rows_of(run(null_group, doc_config(), fields=DOC), "k", "a", "b", "g_1", "c", "d", "g_2") == [
        (1, 2, 2, 2, 1, 1, 1)
    ]
    older = null_group + [(3, "+I", 1, 3, 3, 1, 3, 3, 3)]  # g_1 is lower: a, b stay
    assert rows_of(run(older, doc_config(), fields=DOC), "k", "a", "b", "g_1", "c", "d", "g_2") == [
        (1, 2, 2, 2, 3, 3, 3)
    ]


def test_a_winning_row_writes_its_nulls_and_an_equal_sequence_wins():
    rows = [(1, "+I", 1, 5, 5, 7, None, None, None), (2, "+I", 1, None, 6, 7, None, None, None)]
    assert rows_of(run(rows, doc_config(), fields=DOC), "a", "b", "g_1") == [(None, 6, 7)]


def test_columns_outside_groups_keep_the_last_non_null_value():
    fields = [*DOC, pa.field("x", pa.string())]
    rows = [(1, "+I", 1, 1, 1, 1, None, None, None, "first"), (2, "+I", 1, None, None, None, 1, 1, 1, None)]
    assert rows_of(run(rows, doc_config(), fields=fields), "a", "c", "x") == [(1, 1, "first")]


def test_multi_column_sequence_compares_in_order_with_nulls_first():
    fields = [pa.field("k", INT, nullable=False), pa.field("v", pa.string())]
    fields += [pa.field("s1", INT), pa.field("s2", INT)]
    config = MergeConfig(engine="partial-update", sequence_groups=((("s1", "s2"), ("v",)),))
    rows = [(1, "+I", 1, "a", 2, 5), (2, "+I", 1, "b", 2, None), (3, "+I", 1, "c", 1, 9)]
    assert rows_of(run(rows, config, fields=fields), "v", "s1", "s2") == [("a", 2, 5)]
    rows.append((4, "+I", 1, "d", 2, 5))
    assert rows_of(run(rows, config, fields=fields), "v", "s1", "s2") == [("d", 2, 5)]


def test_retractions_clear_their_group_only_when_not_older():
    rows = [
        (1, "+I", 1, 1, 1, 5, 1, 1, 5),
        (2, "-U", 1, None, None, 6, None, None, 4),  # clears a, b (6 >= 5); c, d stay (4 < 5)
    ]
    out = run(rows, doc_config(), fields=DOC, drop=False)
    assert rows_of(out, "k", "a", "b", "g_1", "c", "d", "g_2", "_VALUE_KIND") == [
        (1, None, None, 6, 1, 1, 5, 0)
    ]


def test_a_key_with_only_retractions_merges_into_a_delete():
    rows = [(1, "-D", 7, None, None, 3, None, None, None)]
    kept = run(rows, doc_config(), fields=DOC, drop=False)
    assert rows_of(kept, "k", "g_1", "_VALUE_KIND") == [(7, 3, 3)]
    assert run(rows, doc_config(), fields=DOC).num_rows == 0


@pytest.mark.parametrize(
    "options, message",
    [
        ({"fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "b,c"}, "defined repeatedly"),
        ({"fields.g_1.sequence-group": "a", "fields.a.aggregate-function": "last_value"}, "inside a partial"),
        ({"fields.g_1.sequence-group": "a", "fields.g_1.aggregate-function": "sum"}, "cannot be aggregated"),
        ({"fields.c.aggregate-function": "sum"}, "Must use sequence group"),
        ({"fields.g_1.sequence-group": "a", "partial-update.remove-record-on-delete": "true"}, "conflicting"),
    ],
)
def test_bad_sequence_group_options_are_refused(options: dict[str, str], message: str, tmp_path):
    options = {"merge-engine": "partial-update", **options}
    with pytest.raises(InvalidArgumentError, match=message):
        MergeConfig.from_options(options, ["k"])
    catalog = open_catalog(str(tmp_path))
    catalog.create_database("db")
    with pytest.raises(InvalidArgumentError, match=message):  # at CREATE TABLE, not at the first write
        catalog.create_table("db.t", pa.schema(DOC), primary_keys=["k"], options=options)
    assert not catalog.list_tables("db")


def test_a_projected_read_brings_the_group_sequence_along(tmp_path):
    catalog = open_catalog(str(tmp_path))
    catalog.create_database("db")
    options = {"merge-engine": "partial-update", "bucket": "1", "fields.g_1.sequence-group": "a,b"}
    t = catalog.create_table("db.t", pa.schema(DOC), primary_keys=["k"], options=options)
    for row in ({"a": 1, "g_1": 2}, {"a": 9, "g_1": 1}, {"b": 4, "g_1": 2}):
        t.write_arrow(pa.Table.from_pylist([{"k": 1, **row}], schema=pa.schema(DOC)))
    assert t.to_arrow(columns=["a"]).to_pylist() == [{"a": None}]  # the last g_1 = 2 row wins, a null
    assert t.to_arrow(columns=["k", "b"]).to_pylist() == [{"k": 1, "b": 4}]
    t.compact(full=True)
    assert t.refresh().to_arrow(columns=["a", "b", "g_1"]).to_pylist() == [{"a": None, "b": 4, "g_1": 2}]


def test_aggregated_members_fold_every_row_of_their_group():
    # Paimon's documentation: 'fields.a.aggregate-function' = 'sum' inside the group of g_1.
    config = doc_config(field_aggregates={"a": "sum"})
    rows = [
        (1, "+I", 1, 1, 1, 1, None, None, None),
        (2, "+I", 1, 2, 2, 2, None, None, None),
        (3, "+I", 1, 3, 3, 0, None, None, None),  # older g_1: still summed, b stays 2
        (4, "+I", 1, 4, 4, None, None, None, None),  # no g_1: not in the group at all
        (5, "-U", 1, 2, None, 1, None, None, None),  # a retraction retracts from the sum
    ]
    assert rows_of(run(rows, config, fields=DOC), "a", "b", "g_1") == [(4, 2, 2)]
    with pytest.raises(InvalidArgumentError, match="does not support retraction"):
        run(rows, doc_config(field_aggregates={"a": "max"}), fields=DOC)
    config = doc_config(field_aggregates={"a": "max"}, field_ignore_retract={"a": True})
    ignored = run(rows, config, fields=DOC)
    assert rows_of(ignored, "a") == [(3,)]


# ------------------------------------------------------------------ the row-by-row model


def _order(values: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, 0) if v is None else (1, v) for v in values)  # ascending, nulls first


def _sum(acc: Any, value: Any, retract: bool) -> Any:
    """Paimon's FieldSumAgg.agg / retract."""
    if value is None:
        return acc
    if retract:
        return -value if acc is None else acc - value
    return value if acc is None else acc + value


def paimon_model(rows: list[tuple], groups, columns: list[str], summed=()) -> tuple[dict[str, Any], int]:
    """Paimon's partial-update with sequence groups, one row at a time (rows in merge order);
    ``summed`` members aggregate with ``sum``."""
    row: dict[str, Any] = dict.fromkeys(columns)
    grouped = {c for seq, members in groups for c in (*seq, *members)}
    met_insert = False
    for _seq, kind, *values in rows:
        record = dict(zip(columns, values, strict=True))
        retract = kind in ("-U", "-D")
        for seq, members in groups:
            incoming = tuple(record[c] for c in seq)
            if all(v is None for v in incoming):
                continue
            for c in members:
                if c in summed:  # agg and aggReversed agree for sum; a retraction always retracts
                    row[c] = _sum(row[c], record[c], retract)
            if _order(incoming) >= _order(tuple(row[c] for c in seq)):
                row.update({c: record[c] for c in seq})
                row.update({c: None if retract else record[c] for c in members if c not in summed})
        if not retract:
            row.update({c: v for c, v in record.items() if c not in grouped and v is not None})
            met_insert = True
    return row, 0 if met_insert else 3


small = st.one_of(st.none(), st.integers(0, 3))
row_values = st.tuples(st.integers(0, 2), small, small, small, small, small, small)
history = st.lists(st.tuples(st.sampled_from(["+I", "+I", "+U", "-U", "-D"]), row_values), max_size=14)


@settings(max_examples=200, deadline=None)
@given(history, st.integers(0, 14))
def test_matches_the_row_by_row_model_and_merges_associatively(events, cut: int):
    rows = [(i + 1, kind, *values) for i, (kind, values) in enumerate(events)]
    if not rows:
        return
    names = [f.name for f in DOC]
    merged = run(rows, doc_config(), fields=DOC, drop=False)
    expected = {}
    for key in sorted({r[2] for r in rows}):
        values, kind = paimon_model([r for r in rows if r[2] == key], DOC_GROUPS, names)
        expected[key] = (values, kind)
    got = {r["k"]: r for r in merged.to_pylist()}
    assert sorted(got) == sorted(expected)
    for key, (values, kind) in expected.items():
        assert got[key]["_VALUE_KIND"] == kind
        if kind == 0:
            assert {n: got[key][n] for n in names} == values
    summed = run(rows, doc_config(field_aggregates={"c": "sum"}), fields=DOC, drop=False)
    got = {r["k"]: r for r in summed.to_pylist()}
    for key in expected:
        values, kind = paimon_model([r for r in rows if r[2] == key], DOC_GROUPS, names, summed={"c"})
        assert got[key]["_VALUE_KIND"] == kind
        if kind == 0:
            assert {n: got[key][n] for n in names} == values
    # A compaction of older rows, merged again with the newer ones, gives the same rows (not with
    # aggregated members: like Paimon, a key that only retracted merges into a -D row, and merging
    # that row again retracts its sum a second time).
    cut = min(cut, len(rows))
    pieces = [run(rows[:cut], doc_config(), fields=DOC, drop=False)] if cut else []
    if cut < len(rows):
        pieces.append(kv_table(rows[cut:], DOC))
    again = merge(pa.concat_tables(pieces), ["k"], doc_config(), drop_deletes=False)
    assert again.drop(["_SEQUENCE_NUMBER"]).to_pylist() == merged.drop(["_SEQUENCE_NUMBER"]).to_pylist()
