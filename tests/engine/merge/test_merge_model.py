"""Property tests: the vectorised merge against a plain per-key Python model of Paimon's merge
functions, for every engine and the count layout.

Random batches of +I/-U/+U/-D rows over a small key space get increasing sequence numbers and are
split into runs. Each scenario checks merging everything at once against the model; scenarios whose
merge function is associative (as in Paimon, where compaction merges already-merged runs) also
check a random compaction history — flush every run, then repeatedly merge two adjacent runs given
in random order, dropping deletes only when the oldest run takes part (never with sequence fields)
— against the all-at-once result. The count layout (tables without primary key) is checked against
a multiset model, with a few hand cases at the end.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError
from engine.merge.config import MergeConfig
from engine.merge.functions import COUNT_COLUMN, expand_counts, merge, merge_counts

FIELDS = [
    pa.field("_SEQUENCE_NUMBER", pa.int64(), nullable=False),
    pa.field("_VALUE_KIND", pa.int8(), nullable=False),
    pa.field("k1", pa.int32(), nullable=False),
    pa.field("k2", pa.string(), nullable=False),
    pa.field("v1", pa.int64()),
    pa.field("v2", pa.string()),
    pa.field("v3", pa.bool_()),
    pa.field("sf", pa.int64()),
]
SCHEMA = pa.schema(FIELDS)
KEYS = ["k1", "k2"]
VALUES = ["v1", "v2", "v3", "sf"]

row_strategy = st.tuples(
    st.integers(0, 2),
    st.sampled_from(["", "a", "ab", "é"]),
    st.sampled_from([0, 0, 2, 1, 3]),
    st.one_of(st.none(), st.integers(-3, 3)),
    st.sampled_from([None, "", " ", "x", "yy"]),
    st.one_of(st.none(), st.booleans()),
    st.one_of(st.none(), st.integers(0, 3)),
)


@dataclass(frozen=True)
class Scenario:
    name: str
    config: MergeConfig
    adds_only: bool  # the engine rejects retract rows: generate none
    associative: bool


def _agg(functions: dict, **kw) -> MergeConfig:
    return MergeConfig(engine="aggregation", field_aggregates=functions, **kw)


SCENARIOS = [
    Scenario("dedupe", MergeConfig(), False, True),
    Scenario("dedupe-ignore-delete", MergeConfig(ignore_delete=True), False, True),
    Scenario("dedupe-seq-field", MergeConfig(sequence_fields=("sf",)), False, True),
    Scenario(
        "dedupe-seq-field-desc", MergeConfig(sequence_fields=("sf",), sequence_descending=True), False, True
    ),
    Scenario("first-row", MergeConfig(engine="first-row"), True, True),
    Scenario("first-row-ignore-delete", MergeConfig(engine="first-row", ignore_delete=True), False, True),
    Scenario("partial-update", MergeConfig(engine="partial-update"), True, True),
    Scenario(
        "partial-update-ignore-delete", MergeConfig(engine="partial-update", ignore_delete=True), False, True
    ),
    Scenario(
        "partial-update-remove-on-delete",
        MergeConfig(engine="partial-update", partial_update_remove_record_on_delete=True),
        False,
        False,
    ),
    Scenario(
        "partial-update-seq-field", MergeConfig(engine="partial-update", sequence_fields=("sf",)), True, False
    ),
    Scenario("agg-sum-listagg-or", _agg({"v1": "sum", "v2": "listagg", "v3": "bool_or"}), True, True),
    Scenario(
        "agg-product-max-and", _agg({"v1": "product", "v2": "max", "v3": "bool_and", "sf": "min"}), True, True
    ),
    Scenario(
        "agg-first-last",
        _agg({"v1": "first_value", "v2": "first_non_null_value", "v3": "last_value"}),
        True,
        True,
    ),
    Scenario(
        "agg-min-default",
        _agg({"v1": "min", "v3": "first_non_null_value"}, listagg_delimiter={"v2": "|"}),
        True,
        True,
    ),
    Scenario(
        "agg-retract-sum",
        _agg(
            {"v1": "sum", "v2": "listagg", "v3": "bool_or"},
            field_ignore_retract={"v2": True, "v3": True, "sf": True},
        ),
        False,
        True,
    ),
    Scenario(
        "agg-retract-count-last",
        _agg({"v1": "count", "v2": "last_non_null_value", "v3": "last_value"}),
        False,
        False,
    ),
    Scenario(
        "agg-ignore-delete",
        _agg({"v1": "product", "v2": "min", "v3": "bool_and"}, ignore_delete=True),
        False,
        True,
    ),
]


# ----------------------------------------------------------------------------- the model


def _wrap(x: int) -> int:
    """Java long arithmetic."""
    return (x + 2**63) % 2**64 - 2**63


def _java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return _wrap(q if (a >= 0) == (b >= 0) else -q)


def _blank(s: str | None) -> bool:
    return s is None or s.strip() == ""


def _fold(function: str, items: list[tuple], ignore_retract: bool, delimiter: str):
    """Paimon's FieldAggregator applied row by row; items are (value, is_retract)."""
    acc, initialized = None, False
    for value, retract in items:
        if retract:
            if ignore_retract:
                continue
            if function == "sum":
                acc = (
                    (None if value is None else _wrap(-value))
                    if acc is None
                    else (acc if value is None else _wrap(acc - value))
                )
            elif function == "product":
                acc = value if acc is None else (acc if value is None else _java_div(acc, value))
            elif function == "count":
                acc = (0 if value is None else -1) if acc is None else (acc if value is None else acc - 1)
            elif function == "last_value":
                acc = None
            elif function == "last_non_null_value":
                acc = None if value is not None else acc
            else:
                raise AssertionError(f"{function} cannot retract")
            continue
        if function in ("sum", "product"):
            if value is not None:
                acc = value if acc is None else _wrap(acc + value if function == "sum" else acc * value)
        elif function == "count":
            acc = (0 if value is None else 1) if acc is None else (acc if value is None else acc + 1)
        elif function in ("min", "max"):
            if value is not None:
                acc = value if acc is None else (min if function == "min" else max)(acc, value)
        elif function == "last_value":
            acc = value
        elif function == "last_non_null_value":
            acc = value if value is not None else acc
        elif function == "first_value":
            if not initialized:
                acc, initialized = value, True
        elif function == "first_non_null_value":
            if not initialized and value is not None:
                acc, initialized = value, True
        elif function == "listagg":
            if not _blank(value):
                acc = value if _blank(acc) else acc + delimiter + value
        elif function in ("bool_and", "bool_or"):
            if value is not None:
                acc = value if acc is None else (acc and value if function == "bool_and" else acc or value)
    return acc


def _order_key(row: dict, config: MergeConfig) -> tuple:
    if not config.sequence_fields:
        return (row["seq"],)
    sf = row["sf"]
    rank = (0, 0) if sf is None else (1, sf)
    if config.sequence_descending:
        rank = (-rank[0], -rank[1])
    return (*rank, row["seq"])


def model(rows: list[dict], config: MergeConfig) -> list[tuple]:
    """Visible merged rows (seq, kind, k1, k2, v1, v2, v3, sf) in key order."""
    by_key: dict[tuple, list[dict]] = {}
    for row in rows:
        by_key.setdefault((row["k1"], row["k2"]), []).append(row)
    out = []
    for key in sorted(by_key, key=lambda k: (k[0], k[1].encode())):
        group = sorted(by_key[key], key=lambda r: _order_key(r, config))
        if config.ignore_delete:
            group = [r for r in group if r["kind"] in (0, 2)]
        if not group:
            continue
        seq = max(r["seq"] for r in group)
        if config.engine == "deduplicate":
            winner = group[-1]
            if winner["kind"] in (0, 2):
                out.append((seq, winner["kind"], *key, *(winner[c] for c in VALUES)))
        elif config.engine == "first-row":
            winner = group[0]
            out.append((seq, winner["kind"], *key, *(winner[c] for c in VALUES)))
        elif config.engine == "partial-update":
            state, added = dict.fromkeys(VALUES), False
            for r in group:
                if r["kind"] in (1, 3):
                    if r["kind"] == 3:
                        state, added = dict.fromkeys(VALUES), False
                    continue
                added = True
                state.update({c: r[c] for c in VALUES if r[c] is not None})
            if added:
                out.append((seq, 0, *key, *(state[c] for c in VALUES)))
        else:
            values = []
            for c in VALUES:
                function = config.field_aggregates.get(c, config.default_aggregate_function)
                items = [(r[c], r["kind"] in (1, 3)) for r in group]
                values.append(
                    _fold(
                        function,
                        items,
                        config.field_ignore_retract.get(c, False),
                        config.listagg_delimiter.get(c, ","),
                    )
                )
            out.append((seq, 0, *key, *values))
    return out


# ----------------------------------------------------------------------------- harness


def _table(rows: list[dict]) -> pa.Table:
    names = ["seq", "kind", *KEYS, *VALUES]
    return pa.Table.from_arrays(
        [pa.array([r[n] for r in rows], type=f.type) for n, f in zip(names, FIELDS, strict=True)],
        schema=SCHEMA,
    )


def _visible(table: pa.Table) -> list[tuple]:
    names = [f.name for f in FIELDS]
    return [tuple(r[n] for n in names) for r in table.to_pylist()]


def _runs(rows: list[dict], cuts: list[int]) -> list[list[dict]]:
    bounds = [0, *sorted(set(cuts)), len(rows)]
    return [rows[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _compact(runs: list[pa.Table], rnd: random.Random, merge_fn) -> pa.Table:
    """A random compaction history: adjacent runs merge, deletes drop only with the oldest run."""
    runs = list(runs)
    while len(runs) > 1:
        i = rnd.randrange(len(runs) - 1)
        pieces = [runs[i], runs[i + 1]]
        rnd.shuffle(pieces)
        runs[i : i + 2] = [merge_fn(pa.concat_tables(pieces), i == 0)]
    return runs[0]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    raw=st.lists(row_strategy, max_size=30), cuts=st.lists(st.integers(0, 30), max_size=4), rnd=st.randoms()
)
def test_merge_matches_model(scenario: Scenario, raw, cuts, rnd):
    config = scenario.config
    rows = [
        dict(
            seq=i,
            kind=(2 if scenario.adds_only and kind in (1, 3) else kind),
            k1=k1,
            k2=k2,
            v1=v1,
            v2=v2,
            v3=v3,
            sf=sf,
        )
        for i, (k1, k2, kind, v1, v2, v3, sf) in enumerate(raw)
    ]
    table = _table(rows)
    shuffled = _runs(rows, cuts)
    rnd.shuffle(shuffled)  # runs concatenated in any order
    everything = merge(
        _table([r for run in shuffled for r in run]) if rows else table, KEYS, config, drop_deletes=True
    )
    assert everything.schema == SCHEMA
    assert _visible(everything) == model(rows, config)

    if not scenario.associative or not rows:
        return
    # With sequence fields an older run's delete may outrank a newer row, so deletes may only be
    # dropped by the final read (Paimon drops them at the top level and has the same caveat).
    may_drop = not config.sequence_fields
    flushed = [merge(_table(run), KEYS, config, drop_deletes=False) for run in _runs(rows, cuts)]
    final = _compact(flushed, rnd, lambda t, oldest: merge(t, KEYS, config, drop_deletes=oldest and may_drop))
    assert _visible(merge(final, KEYS, config, drop_deletes=True)) == _visible(everything)


def test_rejecting_engines_raise_on_retractions():
    rows = [
        dict(seq=0, kind=0, k1=0, k2="", v1=1, v2=None, v3=None, sf=None),
        dict(seq=1, kind=3, k1=0, k2="", v1=None, v2=None, v3=None, sf=None),
    ]
    for config in (
        MergeConfig(engine="first-row"),
        MergeConfig(engine="partial-update"),
        _agg({"v1": "min"}),
    ):
        with pytest.raises(InvalidArgumentError):
            merge(_table(rows), KEYS, config, drop_deletes=True)


# ----------------------------------------------------------------------------- count layout

count_row = st.tuples(
    st.one_of(st.none(), st.integers(0, 2)),
    st.sampled_from([None, "", "a", "b"]),
    st.booleans(),  # add (+1) or retract (-1)
)


def _rows_of(table: pa.Table, *names: str) -> list[tuple]:
    return [tuple(row[n] for n in names) for row in table.to_pylist()]


def _count_table(rows: list[tuple]) -> pa.Table:
    return pa.table(
        {
            "a": pa.array([r[0] for r in rows], pa.int32()),
            "b": pa.array([r[1] for r in rows], pa.string()),
            COUNT_COLUMN: pa.array([1 if r[2] else -1 for r in rows], pa.int64()),
        }
    )


@settings(max_examples=80, deadline=None)
@given(raw=st.lists(count_row, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=4), rnd=st.randoms())
def test_count_layout_matches_multiset_model(raw, cuts, rnd):
    totals = Counter()
    for a, b, add in raw:
        totals[(a, b)] += 1 if add else -1
    order = sorted(
        totals, key=lambda k: (k[0] is not None, k[0] or 0, k[1] is not None, (k[1] or "").encode())
    )
    expected = [key for key in order for _ in range(max(totals[key], 0))]

    everything = merge_counts(_count_table(raw), ["a", "b"], drop_zero=True)
    assert [tuple(r.values()) for r in expand_counts(everything, ["a", "b"]).to_pylist()] == expected
    assert all(c != 0 for c in everything.column(COUNT_COLUMN).to_pylist())

    bounds = [0, *sorted(set(cuts)), len(raw)]
    runs = [_count_table(raw[x:y]) for x, y in zip(bounds, bounds[1:], strict=False) if y > x]
    if not runs:
        return
    # Dropping zero counts is always safe (they add nothing); negative counts must survive.
    flushed = [merge_counts(r, ["a", "b"], drop_zero=rnd.random() < 0.5) for r in runs]
    final = _compact(
        flushed, rnd, lambda t, _oldest: merge_counts(t, ["a", "b"], drop_zero=rnd.random() < 0.5)
    )
    merged = merge_counts(final, ["a", "b"], drop_zero=True)
    assert [tuple(r.values()) for r in expand_counts(merged, ["a", "b"]).to_pylist()] == expected


# ----------------------------------------------------------------------------- count layout hand cases


def count_table(rows, with_system=False):
    data = {
        "a": pa.array([r[0] for r in rows], pa.int32()),
        "b": pa.array([r[1] for r in rows], pa.string()),
        COUNT_COLUMN: pa.array([r[2] for r in rows], pa.int64()),
    }
    if with_system:
        data["_SEQUENCE_NUMBER"] = pa.array(range(len(rows)), pa.int64())
        data["_VALUE_KIND"] = pa.array([0] * len(rows), pa.int8())
    return pa.table(data)


def test_merge_counts_sums_per_row_and_drops_zero():
    rows = [
        (1, "x", 1),
        (2, "y", 1),
        (1, "x", 2),
        (None, None, 1),
        (2, "y", -1),
        (3, "z", -1),
        (None, None, 1),
    ]
    merged = merge_counts(count_table(rows), ["a", "b"], drop_zero=False)
    assert _rows_of(merged, "a", "b", COUNT_COLUMN) == [
        (None, None, 2),
        (1, "x", 3),
        (2, "y", 0),
        (3, "z", -1),
    ]
    dropped = merge_counts(count_table(rows), ["a", "b"], drop_zero=True)
    assert _rows_of(dropped, "a", "b", COUNT_COLUMN) == [(None, None, 2), (1, "x", 3), (3, "z", -1)]
    assert _rows_of(expand_counts(dropped, ["a", "b"]), "a", "b") == [
        (None, None),
        (None, None),
        (1, "x"),
        (1, "x"),
        (1, "x"),
    ]


def test_merge_counts_keeps_system_columns():
    table = count_table([(1, "x", 1), (1, "x", 1)], with_system=True)
    merged = merge_counts(table, ["a", "b"], drop_zero=True)
    assert merged.schema == table.schema
    assert _rows_of(merged, COUNT_COLUMN, "_SEQUENCE_NUMBER", "_VALUE_KIND") == [(2, 1, 0)]


def test_count_layout_errors():
    with pytest.raises(InvalidArgumentError, match="nulls"):
        merge_counts(count_table([(1, "x", None)]), ["a", "b"], drop_zero=True)
    with pytest.raises(InvalidArgumentError, match="unexpected"):
        merge_counts(count_table([(1, "x", 1)]), ["a"], drop_zero=True)
