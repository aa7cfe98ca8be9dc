"""Hand cases for the vectorised LSM merge: every engine, every aggregate function, key order,
sequence fields and options, plus a printed throughput benchmark (count layout: test_merge_model)."""

from __future__ import annotations

import decimal
import math
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from engine.errors import InvalidArgumentError
from engine.merge.config import MergeConfig
from engine.merge.functions import key_sort_codes, merge, sort_kv

SYSTEM = [
    pa.field("_SEQUENCE_NUMBER", pa.int64(), nullable=False),
    pa.field("_VALUE_KIND", pa.int8(), nullable=False),
]
KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


def kv_table(rows: Sequence[tuple], value_fields: Sequence[pa.Field]) -> pa.Table:
    """A kv table from (seq, kind, *values) tuples; kinds may be '+I', '-U', '+U', '-D'."""
    schema = pa.schema([*SYSTEM, *value_fields])
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    arrays = []
    for i, field in enumerate(schema):
        values = list(columns[i])
        if field.name == "_VALUE_KIND":
            values = [KINDS.get(v, v) for v in values]
        arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def rows_of(table: pa.Table, *names: str) -> list[tuple]:
    return [tuple(row[n] for n in names) for row in table.select(list(names)).to_pylist()]


KV = [pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())]


def run(rows: Sequence[tuple], config: MergeConfig, drop: bool = True, fields=KV, keys=("k",)) -> pa.Table:
    table = kv_table(rows, fields)
    out = merge(table, list(keys), config, drop_deletes=drop)
    assert out.schema == table.schema
    return out


# ----------------------------------------------------------------------------- deduplicate


def test_deduplicate_keeps_last_and_delete_shadows_until_read():
    rows = [(1, "+I", 1, "a"), (2, "+I", 2, "b"), (3, "+U", 1, "a2"), (4, "-D", 2, "b"), (5, "+I", 3, "c")]
    kept = run(rows, MergeConfig(), drop=False)
    assert rows_of(kept, "k", "_VALUE_KIND", "_SEQUENCE_NUMBER", "v") == [
        (1, 2, 3, "a2"),
        (2, 3, 4, "b"),
        (3, 0, 5, "c"),
    ]
    read = run(rows, MergeConfig(), drop=True)
    assert rows_of(read, "k", "v") == [(1, "a2"), (3, "c")]


def test_deduplicate_update_before_winner_is_dropped_on_read():
    rows = [(1, "+I", 1, "a"), (2, "-U", 1, "a")]
    assert rows_of(run(rows, MergeConfig(), drop=False), "_VALUE_KIND") == [(1,)]
    assert run(rows, MergeConfig()).num_rows == 0


def test_deduplicate_ignore_delete_keeps_older_value():
    rows = [(1, "+I", 1, "a"), (2, "-D", 1, "a"), (3, "-U", 2, "x")]
    out = run(rows, MergeConfig(ignore_delete=True), drop=False)
    assert rows_of(out, "k", "v", "_SEQUENCE_NUMBER") == [(1, "a", 1)]


def test_runs_in_any_order_give_the_same_result():
    old = [(1, "+I", 1, "old1"), (2, "+I", 2, "old2"), (3, "+I", 3, "old3")]
    new = [(10, "+U", 1, "new1"), (11, "-D", 3, "old3")]
    forward = run(old + new, MergeConfig())
    backward = run(new + old, MergeConfig())
    assert rows_of(forward, "k", "v") == rows_of(backward, "k", "v") == [(1, "new1"), (2, "old2")]


def test_sequence_field_orders_before_sequence_number():
    fields = [*KV, pa.field("ts", pa.int64())]
    rows = [
        (1, "+I", 1, "late-ts", 9),
        (2, "+I", 1, "early-ts", 3),
        (3, "+I", 2, "tie-a", 5),
        (4, "+I", 2, "tie-b", 5),
    ]
    out = run(rows, MergeConfig(sequence_fields=("ts",)), fields=fields)
    assert rows_of(out, "k", "v", "_SEQUENCE_NUMBER") == [(1, "late-ts", 2), (2, "tie-b", 4)]
    desc = run(rows, MergeConfig(sequence_fields=("ts",), sequence_descending=True), fields=fields)
    assert rows_of(desc, "k", "v") == [(1, "early-ts"), (2, "tie-b")]


def test_null_sequence_field_sorts_first():
    fields = [*KV, pa.field("ts", pa.int64())]
    rows = [(1, "+I", 1, "has-ts", 1), (2, "+I", 1, "null-ts", None)]
    assert rows_of(run(rows, MergeConfig(sequence_fields=("ts",)), fields=fields), "v") == [("has-ts",)]


def test_empty_input_keeps_schema():
    table = kv_table([], KV)
    for engine in ("deduplicate", "first-row", "partial-update", "aggregation"):
        out = merge(table, ["k"], MergeConfig(engine=engine), drop_deletes=True)
        assert out.num_rows == 0 and out.schema == table.schema


def test_chunked_input_and_parquet_round_trip(tmp_path):
    first = kv_table([(1, "+I", 2, "a"), (2, "+I", 5, "b")], KV)
    second = kv_table([(3, "+U", 2, "c"), (4, "+I", 1, "d")], KV)
    for i, run_table in enumerate((first, second)):
        pq.write_table(run_table, tmp_path / f"run-{i}.parquet")
    table = pa.concat_tables([pq.read_table(tmp_path / f"run-{i}.parquet") for i in (1, 0)])
    assert table.column("k").num_chunks == 2
    out = merge(table, ["k"], MergeConfig(), drop_deletes=True)
    assert rows_of(out, "k", "v") == [(1, "d"), (2, "c"), (5, "b")]


# ----------------------------------------------------------------------------- key order


def _order_of(values: list, arrow_type: pa.DataType) -> list:
    fields = [pa.field("k", arrow_type), pa.field("v", pa.string())]
    rows = [(i, "+I", value, str(i)) for i, value in enumerate(values)]
    out = merge(kv_table(rows, fields), ["k"], MergeConfig(), drop_deletes=True)
    return out.column("k").to_pylist()


def test_string_keys_order_by_utf8_bytes_with_nulls_first():
    values = ["b", "a\x00", "", None, "a", "\U0001f600", "\uffff", "ab", "a"]
    assert _order_of(values, pa.string()) == [None, "", "a", "a\x00", "ab", "b", "\uffff", "\U0001f600"]


def test_long_string_keys_use_the_rank_fallback():
    long = ["x" * 100 + c for c in "cab"] + ["x" * 100 + "a", "y", None]
    assert _order_of(long, pa.string()) == [None, "x" * 100 + "a", "x" * 100 + "b", "x" * 100 + "c", "y"]


def test_binary_and_fixed_width_keys():
    assert _order_of([b"\xff", b"\x00\x01", b"\x00", b""], pa.binary()) == [
        b"",
        b"\x00",
        b"\x00\x01",
        b"\xff",
    ]
    assert _order_of([b"ba", b"ab", b"ab"], pa.binary(2)) == [b"ab", b"ba"]
    uniform = [f"{i:016d}" for i in (5, 3, 9, 3)]
    assert _order_of(uniform, pa.string()) == sorted(set(uniform))


def test_float_keys_follow_double_compare():
    values = [0.0, -0.0, math.nan, -math.inf, 1.5, None, -2.0, math.nan]
    ordered = _order_of(values, pa.float64())
    assert ordered[:5] == [None, -math.inf, -2.0, -0.0, 0.0]
    assert math.copysign(1, ordered[3]) == -1 and math.copysign(1, ordered[4]) == 1
    assert ordered[5] == 1.5 and math.isnan(ordered[6]) and len(ordered) == 7


def test_decimal_temporal_and_bool_keys():
    d = decimal.Decimal
    decimals = [d("1.50"), d("-3.25"), d("-100000000000000000000.00"), d("0.01"), None, d("1.50")]
    assert _order_of(decimals, pa.decimal128(30, 2)) == [
        None,
        d("-100000000000000000000.00"),
        d("-3.25"),
        d("0.01"),
        d("1.50"),
    ]
    import datetime as dt

    dates = [dt.date(2024, 1, 2), dt.date(1969, 12, 31), dt.date(2024, 1, 2)]
    assert _order_of(dates, pa.date32()) == [dt.date(1969, 12, 31), dt.date(2024, 1, 2)]
    stamps = [dt.datetime(2024, 1, 1, 0, 0, 1), dt.datetime(2023, 5, 5)]
    assert _order_of(stamps, pa.timestamp("us")) == sorted(stamps)
    assert _order_of([True, None, False, True], pa.bool_()) == [None, False, True]


def test_multi_column_keys_with_nulls():
    fields = [pa.field("a", pa.int32()), pa.field("b", pa.string()), pa.field("v", pa.int64())]
    rows = [
        (1, "+I", 1, "y", 1),
        (2, "+I", None, "z", 2),
        (3, "+I", 1, None, 3),
        (4, "+I", 1, "x", 4),
        (5, "+U", 1, "y", 5),
    ]
    out = merge(kv_table(rows, fields), ["a", "b"], MergeConfig(), drop_deletes=True)
    assert rows_of(out, "a", "b", "v") == [(None, "z", 2), (1, None, 3), (1, "x", 4), (1, "y", 5)]


def test_nested_key_is_rejected():
    with pytest.raises(InvalidArgumentError, match="cannot be part of a key"):
        key_sort_codes([pa.array([[1], [2]])])


def test_sort_kv_is_stable_by_key_then_sequence():
    rows = [(5, "+I", 2, "a"), (1, "+I", 2, "b"), (3, "-D", 1, "c"), (2, "+I", 1, "d")]
    out = sort_kv(kv_table(rows, KV), ["k"], MergeConfig())
    assert rows_of(out, "k", "_SEQUENCE_NUMBER") == [(1, 2), (1, 3), (2, 1), (2, 5)]


def test_bad_input_is_rejected():
    table = kv_table([(1, "+I", 1, "a")], KV)
    with pytest.raises(InvalidArgumentError, match="lacks column"):
        merge(table, ["missing"], MergeConfig(), drop_deletes=True)
    bad_kind = table.set_column(1, SYSTEM[1], pa.array([7], pa.int8()))
    with pytest.raises(InvalidArgumentError, match="_VALUE_KIND"):
        merge(bad_kind, ["k"], MergeConfig(), drop_deletes=True)


# ----------------------------------------------------------------------------- first-row


def test_first_row_keeps_first_with_max_sequence():
    rows = [(1, "+I", 1, "first"), (2, "+U", 1, "second"), (3, "+I", 2, "only")]
    out = run(rows, MergeConfig(engine="first-row"))
    assert rows_of(out, "k", "v", "_SEQUENCE_NUMBER", "_VALUE_KIND") == [
        (1, "first", 2, 0),
        (2, "only", 3, 0),
    ]


def test_first_row_rejects_or_ignores_deletes():
    rows = [(1, "+I", 1, "first"), (2, "-D", 1, "first"), (3, "+I", 1, "later")]
    with pytest.raises(InvalidArgumentError, match="ignore-delete"):
        run(rows, MergeConfig(engine="first-row"))
    assert rows_of(run(rows, MergeConfig(engine="first-row", ignore_delete=True)), "v") == [("first",)]


# ----------------------------------------------------------------------------- partial-update

PU = [
    pa.field("k", pa.int64(), nullable=False),
    pa.field("a", pa.float64()),
    pa.field("b", pa.int32()),
    pa.field("c", pa.string()),
]


def test_partial_update_paimon_doc_example():
    rows = [
        (1, "+I", 1, 23.0, 10, None),
        (2, "+I", 1, None, None, "This is a book"),
        (3, "+I", 1, 25.2, None, None),
    ]
    out = run(rows, MergeConfig(engine="partial-update"), fields=PU)
    assert rows_of(out, "k", "a", "b", "c", "_SEQUENCE_NUMBER", "_VALUE_KIND") == [
        (1, 25.2, 10, "This is a book", 3, 0)
    ]


def test_partial_update_delete_handling():
    rows = [
        (1, "+I", 1, 1.0, 1, "x"),
        (2, "-D", 1, None, None, None),
        (3, "+I", 1, None, 7, None),
        (4, "+I", 2, 2.0, 2, "y"),
    ]
    with pytest.raises(InvalidArgumentError, match="remove-record-on-delete"):
        run(rows, MergeConfig(engine="partial-update"), fields=PU)
    ignored = run(rows, MergeConfig(engine="partial-update", ignore_delete=True), fields=PU)
    assert rows_of(ignored, "k", "a", "b", "c") == [(1, 1.0, 7, "x"), (2, 2.0, 2, "y")]
    removed = run(
        rows, MergeConfig(engine="partial-update", partial_update_remove_record_on_delete=True), fields=PU
    )
    assert rows_of(removed, "k", "a", "b", "c") == [(1, None, 7, None), (2, 2.0, 2, "y")]


def test_partial_update_trailing_delete_shadows_then_drops():
    rows = [
        (1, "+I", 1, 1.0, 1, "x"),
        (2, "-U", 1, 1.0, 1, "x"),
        (3, "-D", 1, 1.0, 1, "x"),
        (4, "-U", 2, None, None, None),
    ]
    config = MergeConfig(engine="partial-update", partial_update_remove_record_on_delete=True)
    kept = run(rows, config, drop=False, fields=PU)
    assert rows_of(kept, "k", "_VALUE_KIND", "_SEQUENCE_NUMBER") == [(1, 3, 3)]  # key 2 had only a -U
    assert run(rows, config, fields=PU).num_rows == 0


def test_partial_update_with_sequence_field():
    fields = [*PU, pa.field("ts", pa.int64())]
    rows = [(1, "+I", 1, 1.0, None, "new", 9), (2, "+I", 1, 2.0, 5, "old", 1)]
    out = run(rows, MergeConfig(engine="partial-update", sequence_fields=("ts",)), fields=fields)
    assert rows_of(out, "a", "b", "c", "ts", "_SEQUENCE_NUMBER") == [(1.0, 5, "new", 9, 2)]


# ----------------------------------------------------------------------------- aggregation


def agg(rows, functions, fields, **options) -> list[tuple]:
    config = MergeConfig(engine="aggregation", field_aggregates=functions, **options)
    out = run(rows, config, fields=fields)
    assert set(out.column("_VALUE_KIND").to_pylist()) <= {0}
    return rows_of(out, *[f.name for f in fields])


def test_aggregation_paimon_doc_example_and_default_function():
    fields = [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("price", pa.float64()),
        pa.field("sales", pa.int64()),
        pa.field("note", pa.string()),
    ]
    rows = [(1, "+I", 1, 23.0, 15, "n1"), (2, "+I", 1, 30.2, 20, None)]
    assert agg(rows, {"price": "max", "sales": "sum"}, fields) == [(1, 30.2, 35, "n1")]


NUM = [pa.field("k", pa.int64(), nullable=False), pa.field("x", pa.int64())]


def test_sum_with_nulls_retraction_and_wrap_around():
    rows = [(1, "+I", 1, 5), (2, "+I", 1, None), (3, "-U", 1, 2), (4, "+I", 2, None), (5, "-D", 3, 4)]
    assert agg(rows, {"x": "sum"}, NUM) == [(1, 3), (2, None), (3, -4)]
    small = [pa.field("k", pa.int64(), nullable=False), pa.field("x", pa.int8())]
    assert agg([(1, "+I", 1, 100), (2, "+I", 1, 100)], {"x": "sum"}, small) == [(1, -56)]
    floats = [pa.field("k", pa.int64(), nullable=False), pa.field("x", pa.float32())]
    assert agg([(1, "+I", 1, 1.5), (2, "-D", 1, 0.25)], {"x": "sum"}, floats) == [(1, 1.25)]


def test_aggregation_remove_record_on_delete():
    """'aggregation.remove-record-on-delete': a -D removes the row (kept as -D until dropped) and a
    later add folds onto the -D row's values (Paimon's AggregateMergeFunction); max needs no retraction."""
    fields = [pa.field("k", pa.int64(), nullable=False), pa.field("x", pa.int64()), pa.field("m", pa.int64())]
    rows = [
        (1, "+I", 1, 5, 9), (2, "-D", 1, 5, 9),  # key 1: deleted
        (3, "+I", 2, 1, 1), (4, "-D", 2, 1, 1), (5, "+I", 2, 3, 0),  # key 2: re-added after the delete
        (6, "+I", 3, 4, 4), (7, "-U", 3, 1, 1),  # key 3: -U still retracts
    ]
    config = MergeConfig.from_options(
        {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
         "fields.x.aggregate-function": "sum", "fields.m.aggregate-function": "max",
         "fields.m.ignore-retract": "true"}, ["k"])
    assert config.aggregation_remove_record_on_delete
    kept = run(rows, config, drop=False, fields=fields)
    assert rows_of(kept, "k", "_VALUE_KIND", "x", "m") == [(1, 3, 5, 9), (2, 0, 4, 1), (3, 0, 3, 4)]
    assert rows_of(run(rows, config, fields=fields), "k", "x", "m") == [(2, 4, 1), (3, 3, 4)]


def test_decimal_sum_and_overflow_to_null():
    d = decimal.Decimal
    fields = [pa.field("k", pa.int64(), nullable=False), pa.field("x", pa.decimal128(4, 2))]
    rows = [
        (1, "+I", 1, d("10.25")),
        (2, "-U", 1, d("0.50")),
        (3, "+I", 2, d("99.99")),
        (4, "+I", 2, d("0.01")),
    ]
    assert agg(rows, {"x": "sum"}, fields) == [(1, d("9.75")), (2, None)]


def test_product_with_retraction():
    rows = [
        (1, "+I", 1, 3),
        (2, "+I", 1, 4),
        (3, "-U", 1, 2),
        (4, "-D", 2, 5),
        (5, "+I", 2, 3),
        (6, "+I", 3, -7),
        (7, "-U", 3, 2),
    ]
    # key 2: a retract meeting a null accumulator multiplies (Paimon); key 3: truncation toward zero.
    assert agg(rows, {"x": "product"}, NUM) == [(1, 6), (2, 15), (3, -3)]
    with pytest.raises(InvalidArgumentError, match="divides by zero"):
        agg([(1, "+I", 1, 3), (2, "-U", 1, 0)], {"x": "product"}, NUM)
    floats = [pa.field("k", pa.int64(), nullable=False), pa.field("x", pa.float64())]
    assert agg([(1, "+I", 1, 3.0), (2, "-D", 1, 2.0), (3, "+I", 1, None)], {"x": "product"}, floats) == [
        (1, 1.5)
    ]


def test_count_counts_non_null_rows():
    rows = [
        (1, "+I", 1, 7),
        (2, "+I", 1, None),
        (3, "+I", 1, 9),
        (4, "-D", 1, 9),
        (5, "+I", 2, None),
        (6, "-U", 3, 1),
    ]
    assert agg(rows, {"x": "count"}, NUM) == [(1, 1), (2, 0), (3, -1)]


def test_min_max_on_numbers_strings_and_dates():
    import datetime as dt

    fields = [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("x", pa.int64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
    ]
    rows = [
        (1, "+I", 1, 5, "b", dt.date(2024, 1, 1)),
        (2, "+I", 1, None, None, None),
        (3, "+I", 1, -2, "ab", dt.date(2020, 1, 1)),
        (4, "+I", 2, None, None, None),
    ]
    assert agg(rows, {"x": "min", "s": "max", "d": "max"}, fields) == [
        (1, -2, "b", dt.date(2024, 1, 1)),
        (2, None, None, None),
    ]
    assert agg(rows, {"x": "max", "s": "min", "d": "min"}, fields) == [
        (1, 5, "ab", dt.date(2020, 1, 1)),
        (2, None, None, None),
    ]


def test_non_retractable_functions_raise_unless_ignore_retract():
    rows = [(1, "+I", 1, 5), (2, "-U", 1, 5), (3, "+I", 1, 3)]
    for function in ("min", "max", "first_value", "first_non_null_value"):
        with pytest.raises(InvalidArgumentError, match="ignore-retract"):
            agg(rows, {"x": function}, NUM)
    assert agg(rows, {"x": "max"}, NUM, field_ignore_retract={"x": True}) == [(1, 5)]
    assert agg(rows, {"x": "first_value"}, NUM, field_ignore_retract={"x": True}) == [(1, 5)]


def test_last_and_first_value_functions():
    rows = [
        (1, "+I", 1, None),
        (2, "+I", 1, 4),
        (3, "+I", 1, None),
        (4, "+I", 2, 8),
        (5, "-D", 2, 8),
        (6, "+I", 3, 1),
        (7, "-U", 3, None),
    ]
    assert agg(rows, {"x": "last_value"}, NUM) == [(1, None), (2, None), (3, None)]
    # last_non_null_value: a retract of a non-null value clears it; a retract of null changes nothing.
    assert agg(rows, {"x": "last_non_null_value"}, NUM) == [(1, 4), (2, None), (3, 1)]
    adds = [r for r in rows if r[1] == "+I"]
    assert agg(adds, {"x": "first_value"}, NUM) == [(1, None), (2, 8), (3, 1)]
    assert agg(adds, {"x": "first_non_null_value"}, NUM) == [(1, 4), (2, 8), (3, 1)]
    assert agg(adds, {"x": "first_not_null_value"}, NUM) == [(1, 4), (2, 8), (3, 1)]


def test_listagg_skips_null_and_blank_values():
    fields = [pa.field("k", pa.int64(), nullable=False), pa.field("s", pa.string())]
    rows = [
        (1, "+I", 1, "a"),
        (2, "+I", 1, None),
        (3, "+I", 1, " "),
        (4, "+I", 1, "b"),
        (5, "+I", 1, ""),
        (6, "+I", 1, "c"),
        (7, "+I", 2, None),
    ]
    assert agg(rows, {"s": "listagg"}, fields) == [(1, "a,b,c"), (2, None)]
    assert agg(rows, {"s": "listagg"}, fields, listagg_delimiter={"s": " | "}) == [
        (1, "a | b | c"),
        (2, None),
    ]


def test_bool_and_or():
    fields = [pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.bool_()), pa.field("q", pa.bool_())]
    rows = [
        (1, "+I", 1, True, False),
        (2, "+I", 1, None, None),
        (3, "+I", 1, False, True),
        (4, "+I", 2, True, None),
    ]
    assert agg(rows, {"p": "bool_and", "q": "bool_or"}, fields) == [(1, False, True), (2, True, None)]


def test_only_retract_rows_still_produce_an_insert():
    rows = [(1, "-D", 1, 4), (2, "-U", 1, 1)]
    out = run(rows, MergeConfig(engine="aggregation", field_aggregates={"x": "sum"}), fields=NUM)
    assert rows_of(out, "k", "x", "_VALUE_KIND", "_SEQUENCE_NUMBER") == [(1, -5, 0, 2)]


def test_aggregate_type_errors():
    fields = [pa.field("k", pa.int64(), nullable=False), pa.field("s", pa.string())]
    for function in ("sum", "product", "count", "bool_and"):
        with pytest.raises(InvalidArgumentError, match="needs"):
            agg([(1, "+I", 1, "a")], {"s": function}, fields)
    with pytest.raises(InvalidArgumentError, match="needs"):
        agg([(1, "+I", 1, 3)], {"x": "listagg"}, NUM)


# ----------------------------------------------------------------------------- options


def test_from_options_reads_paimon_keys():
    config = MergeConfig.from_options(
        {
            "merge-engine": "aggregation",
            "fields.x.aggregate-function": "sum",
            "fields.k.aggregate-function": "max",  # key columns never aggregate
            "fields.s.aggregate-function": "listagg",
            "fields.s.list-agg-delimiter": ";",
            "fields.y.ignore-retract": "TRUE",
            "fields.default-aggregate-function": "last_value",
            "sequence.field": "ts, seq2",
            "sequence.field.sort-order": "descending",
        },
        ["k"],
    )
    assert config.engine == "aggregation"
    assert config.field_aggregates == {"x": "sum", "s": "listagg"}
    assert config.listagg_delimiter == {"s": ";"}
    assert config.field_ignore_retract == {"y": True}
    assert config.default_aggregate_function == "last_value"
    assert config.sequence_fields == ("ts", "seq2") and config.sequence_descending
    assert MergeConfig.from_options({}, ["k"]) == MergeConfig()
    assert MergeConfig.from_options({"partial-update.ignore-delete": "true"}, ["k"]).ignore_delete
    assert not MergeConfig.from_options(
        {"ignore-delete": "false", "first-row.ignore-delete": "true"}, []
    ).ignore_delete
    pu = MergeConfig.from_options(
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, ["k"]
    )
    assert pu.partial_update_remove_record_on_delete


@pytest.mark.parametrize(
    "options, message",
    [
        ({"merge-engine": "last-row"}, "'merge-engine' = 'last-row' is invalid: expected one of deduplicate"),
        ({"merge-engine": "aggregation", "fields.x.aggregate-function": "collect"}, "Unsupported aggregate"),
        ({"ignore-delete": "yes"}, "'ignore-delete' = 'yes' is invalid: expected a boolean"),
        ({"first-row.ignore-delete": "maybe"}, "'first-row.ignore-delete' = 'maybe'"),
        ({"aggregation.remove-record-on-delete": "1"}, "'aggregation.remove-record-on-delete' = '1'"),
        ({"merge-engine": "partial-update", "partial-update.remove-record-on-sequence-group": "g"},
         "remove-record-on-sequence-group"),
        ({"merge-engine": "partial-update", "fields.a.aggregate-function": "sum"}, "Must use sequence group"),
        ({"merge-engine": "first-row", "sequence.field": "ts"}, "sequence.field"),
        ({"sequence.field.sort-order": "sideways"}, "sort-order"),
    ],
)
def test_from_options_rejects_bad_options(options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        MergeConfig.from_options(options, ["k"])


def test_config_is_picklable():
    import pickle

    config = MergeConfig(engine="aggregation", field_aggregates={"x": "sum"}, sequence_fields=["ts"])
    assert pickle.loads(pickle.dumps(config)) == config
    assert config.sequence_fields == ("ts",)


# ----------------------------------------------------------------------------- throughput


def _runs_table(n: int, runs: int, string_keys: bool) -> pa.Table:
    rng = np.random.default_rng(7)
    per = n // runs
    tables, seq = [], 0
    for _ in range(runs):
        keys = np.sort(rng.choice(n, per, replace=False)).astype(np.int64)
        key_array = pa.array(keys)
        if string_keys:
            key_array = pc.utf8_lpad(key_array.cast(pa.string()), 16, "0")
        tables.append(
            pa.table(
                {
                    "_SEQUENCE_NUMBER": pa.array(seq + rng.permutation(per), pa.int64()),
                    "_VALUE_KIND": pa.array(np.zeros(per, np.int8)),
                    "k": key_array,
                    "v": pa.array(rng.integers(0, 1000, per)),
                }
            )
        )
        seq += per
    return pa.concat_tables(tables).combine_chunks()


def test_print_merge_throughput(capsys):
    n = 2_000_000
    lines = []
    for label, string_keys in (("int64 keys", False), ("16-char string keys", True)):
        table = _runs_table(n, 5, string_keys)
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            out = merge(table, ["k"], MergeConfig(), drop_deletes=True)
            best = min(best, time.perf_counter() - start)
        assert out.num_rows == pc.count_distinct(table.column("k")).as_py()
        rate = n / best / 1e6
        ms = best * 1000
        lines.append(f"merge deduplicate, {n:,} rows in 5 runs, {label}: {ms:.0f} ms = {rate:.1f}M rows/s")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
