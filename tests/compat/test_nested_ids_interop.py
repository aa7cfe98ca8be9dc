"""Paimon readers still read dyntable's files now that list elements and map keys/values carry
Paimon 2.0's Parquet field ids (engine.write.nested_ids): pypaimon 2.1 and Java Paimon 0.9 (which
writes no such ids) read ARRAY, ARRAY<STRUCT>, MAP and collections inside a struct, NULLs
included, row for row, from appends, key-value files and their full compaction."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from engine.types import ARRAY, BIGINT, INT, MAP, ROW, STRING, DataField
from tests.compat.harness import PyPaimon
from tests.compat.java_oracle import JavaPaimon, sort_rows


def _fields(key: bool) -> list[DataField]:
    return [
        DataField(0, "k", INT(nullable=not key)),
        DataField(1, "a", ARRAY(INT())),
        DataField(2, "ar", ARRAY(ROW([DataField(3, "x", INT()), DataField(4, "l", ARRAY(BIGINT()))]))),
        DataField(5, "m", MAP(STRING(), INT())),
        DataField(6, "s", ROW([DataField(7, "mm", MAP(STRING(), ARRAY(INT()))), DataField(8, "n", INT())])),
    ]


def _rows(table, keys: list[int], tag: str = "") -> pa.Table:
    def some(values: list[Any], every: int) -> list[Any]:
        return [None if i % every == every - 1 else v for i, v in enumerate(values)]

    return pa.table(
        {
            "k": keys,
            "a": some([[k, None, k + 1] if k % 2 else [] for k in keys], 3),
            "ar": some([[{"x": k, "l": [k, None] if k % 2 else None}, None] for k in keys], 4),
            "m": some([[(f"a{tag}", k), ("b", None)] for k in keys], 3),
            "s": some([{"mm": [("z", [k, None])] if k % 2 else None, "n": k} for k in keys], 5),
        },
        schema=table.arrow_schema,
    )


def _table(catalog, name: str, key: bool):
    t = catalog.create_table(
        name, _fields(key), primary_keys=["k"] if key else [], options={"bucket": "1"} if key else {}
    )
    t.write_arrow(_rows(t, [1, 2, 3, 4, 5]))
    t.refresh().write_arrow(_rows(t, [2, 6, 7], "u"))
    t.refresh().compact(full=True)
    t.refresh().write_arrow(_rows(t, [3, 8], "v"))
    return t.refresh()


def _java_form(v: Any) -> Any:
    """A value as Java's oracle encodes it: ROW and MAP entries as lists."""
    if isinstance(v, dict):
        return [_java_form(x) for x in v.values()]
    if isinstance(v, list | tuple):
        return [_java_form(x) for x in v]
    return v


@pytest.mark.compat
@pytest.mark.parametrize("key", [True, False], ids=["primary-key", "append"])
def test_pypaimon_reads_collections_with_nested_ids(pypaimon: PyPaimon, catalog, key) -> None:
    t = _table(catalog, "db.c", key)
    ours = sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"])
    assert len(ours) == (8 if key else 10)
    theirs = pypaimon.read(catalog.warehouse, "db.c", schema=t.arrow_schema).to_pylist()
    assert sorted(theirs, key=lambda r: r["k"]) == ours


@pytest.mark.java
@pytest.mark.parametrize("key", [True, False], ids=["primary-key", "append"])
def test_java_reads_collections_with_nested_ids(java: JavaPaimon, catalog, key) -> None:
    t = _table(catalog, "db.c", key)
    ours = t.to_arrow()
    expected = sort_rows(tuple(_java_form(r[c]) for c in ours.column_names) for r in ours.to_pylist())
    assert [tuple(_java_form(v) for v in r) for r in java.read("db.c")] == expected
