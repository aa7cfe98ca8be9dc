"""Floating-point NaN in predicates compares as Spark and Java Paimon order it: equal to itself and
greater than every other value (IEEE says every comparison with NaN is false).

The exact filter (``filter_table``), the row test (``eval_row``) and statistics skipping
(``might_match``) are checked against a reference written with Python's total order on
``(is_nan, value)`` keys, over generated columns and literals.
"""

from __future__ import annotations

import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.scan.predicate import ColumnStats, Leaf, filter_table, not_

NAN = float("nan")
OPS = ("eq", "ne", "lt", "le", "gt", "ge")
values = st.one_of(st.none(), st.just(NAN), st.sampled_from([-1.5, 0.0, 0.5, 1.0, 2.0]))
literals = st.one_of(st.just(NAN), st.sampled_from([-1.5, 0.0, 0.5, 1.0, 2.0]), st.sampled_from([0, 1, 2]))


def _key(x: float) -> tuple[int, float]:
    return (1, 0.0) if isinstance(x, float) and math.isnan(x) else (0, x)


def spark_compare(op: str, v: float | None, lit: float) -> bool | None:
    if v is None:
        return None
    a, b = _key(v), _key(lit)
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


@settings(max_examples=200, deadline=None)
@given(column=st.lists(values, max_size=12), op=st.sampled_from(OPS), lit=literals)
def test_filter_row_test_and_statistics_agree_with_spark_order(column, op, lit):
    table = pa.table({"x": pa.array(column, pa.float64())})
    leaf = Leaf(op, "x", (lit,))
    expected = [i for i, v in enumerate(column) if spark_compare(op, v, lit) is True]
    indexed = table.append_column("i", pa.array(range(len(column)), pa.int64()))
    assert filter_table(indexed, leaf).column("i").to_pylist() == expected
    assert [i for i, v in enumerate(column) if leaf.eval_row({"x": v}) is True] == expected
    # NOT keeps the rows whose comparison is false (unknown stays dropped)
    negated = [i for i, v in enumerate(column) if spark_compare(op, v, lit) is False]
    assert filter_table(indexed, not_(leaf)).column("i").to_pylist() == negated
    # Statistics as pyarrow writes them (NaN left out of min/max) and as Java does (NaN last) may
    # only skip a file that has no matching row.
    present = [v for v in column if v is not None]
    numbers = [v for v in present if not math.isnan(v)]
    nulls = len(column) - len(present)
    for lo_hi in ((min(numbers), max(numbers)) if numbers else None,
                  (min(present, key=_key), max(present, key=_key)) if present else None):
        if lo_hi is None:
            continue
        stats = {"x": ColumnStats(lo_hi[0], lo_hi[1], nulls)}
        if expected:
            assert leaf.might_match(stats, len(column)), (column, op, lit, lo_hi)


def test_greater_than_keeps_nan_rows_and_statistics_never_hide_them():
    table = pa.table({"x": [0.5, NAN, 2.0, None]})
    kept = filter_table(table, Leaf("gt", "x", (1.0,))).column("x").to_pylist()
    assert len(kept) == 2 and math.isnan(kept[0]) and kept[1] == 2.0
    # A file holding 0.5 and NaN, whose min/max (pyarrow's) are both 0.5, may hold a match.
    assert Leaf("gt", "x", (1.0,)).might_match({"x": ColumnStats(0.5, 0.5, 0)}, 2)
    # ... but a comparison NaN cannot satisfy still skips on them.
    assert not Leaf("lt", "x", (0.1,)).might_match({"x": ColumnStats(0.5, 0.5, 0)}, 2)


def test_a_written_file_holding_nan_is_never_skipped_by_any_reader(tmp_path):
    """The manifest marks a float column holding NaN as unbounded, and the Parquet footer carries
    no float statistics, so neither dyntable's planner nor a Parquet reader (Spark's, Java's) can
    skip the file for ``x > 1.0``."""
    import pyarrow.parquet as pq

    from engine import open_catalog
    from engine.scan.predicate import greater_than

    catalog = open_catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64())])
    table = catalog.create_table("db.t", schema)
    table.write_arrow(pa.table({"id": [1, 2], "x": [0.5, NAN]}, schema=schema))
    builder = table.refresh().new_read_builder().with_filter(greater_than("x", 1.0))
    splits = builder.new_scan().plan().splits
    rows = [r for s in splits for t in builder.new_read().read(s) for r in t.to_pylist()]
    assert [r["id"] for r in rows] == [2]
    (path,) = [f for f in tmp_path.rglob("*.parquet")]
    footer = pq.ParquetFile(path).metadata.row_group(0)
    columns = {footer.column(i).path_in_schema: footer.column(i) for i in range(footer.num_columns)}
    assert not columns["x"].is_stats_set and columns["id"].is_stats_set
