"""pyiceberg reads ARRAY, MAP and MULTISET columns of the Iceberg metadata dyntable publishes: the
list element and map key/value ids are Paimon 2.0's, which dyntable's Parquet files carry
(engine.write.nested_ids); the rows are exactly dyntable's at every snapshot, NULLs included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine.types import ARRAY, BIGINT, INT, MAP, MULTISET, ROW, STRING, DataField
from engine.write.nested_ids import array_element_id, map_key_id, map_value_id
from tests.compat.iceberg.oracle import pyiceberg_python, read_iceberg

pytestmark = pytest.mark.compat

ICEBERG = {"metadata.iceberg.storage": "table-location"}


@pytest.fixture(scope="module")
def python() -> str:
    return pyiceberg_python()


def _fields(key: bool = False) -> list[DataField]:
    return [
        DataField(0, "k", INT(nullable=not key)),
        DataField(1, "a", ARRAY(INT())),
        DataField(2, "ar", ARRAY(ROW([DataField(3, "x", INT()), DataField(4, "l", ARRAY(BIGINT()))]))),
        DataField(5, "m", MAP(STRING(), INT())),
        DataField(6, "s", ROW([DataField(7, "mm", MAP(STRING(), ARRAY(INT()))), DataField(8, "n", INT())])),
        DataField(9, "ms", MULTISET(STRING())),
    ]


def _rows(table, keys: list[int], tag: str = "") -> pa.Table:
    def some(values: list[Any], every: int) -> list[Any]:
        return [None if i % every == every - 1 else v for i, v in enumerate(values)]

    return pa.table(
        {
            "k": keys,
            "a": some([[k, None, k + 1] if k % 2 else [] for k in keys], 3),
            # never NULL itself: pyiceberg reads a NULL list of structs as an empty list (its own
            # defect, apache/iceberg-python#3833: the list is rebuilt without its null mask)
            "ar": [[{"x": k, "l": [k, None] if k % 2 else None}, None] if k % 4 else [] for k in keys],
            "m": some([[(f"a{tag}", k), ("b", None)] for k in keys], 3),
            "s": some([{"mm": [("z", [k, None])] if k % 2 else None, "n": k} for k in keys], 5),
            "ms": some([[("p", 2), (f"q{k}", 1)] for k in keys], 2),
        },
        schema=table.arrow_schema,
    )


def _sorted(table: pa.Table, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r[c] for c in columns) for r in table.select(columns).to_pylist()), key=repr)


def _same(iceberg: pa.Table, ours: pa.Table) -> None:
    assert _sorted(iceberg, ours.column_names) == _sorted(ours, ours.column_names)


def _metadata(table) -> Path:
    return Path(table.path) / "metadata" / f"v{table.latest_snapshot().id}.metadata.json"


def test_collections_every_snapshot(catalog, python) -> None:
    t = catalog.create_table("db.coll", _fields(), options=ICEBERG)
    t.write_arrow(_rows(t, [1, 2, 3, 4, 5]))
    t.refresh().write_arrow(_rows(t, [6, 7, 8], "x"))
    t.refresh().write_arrow(_rows(t, [9], "y"), overwrite=True)
    t = t.refresh()
    got = read_iceberg(python, _metadata(t), snapshots=[1, 2, 3])
    for sid in (1, 2, 3):
        ours = t.to_arrow(snapshot_id=sid)
        assert ours.num_rows
        _same(got.at[sid], ours)
    _same(got.current, t.to_arrow())
    fields = {f["name"]: f["type"] for f in got.schema["fields"]}
    assert fields["a"]["element-id"] == array_element_id(1, 1)
    assert (fields["m"]["key-id"], fields["m"]["value-id"]) == (map_key_id(5, 1), map_value_id(5, 1))
    mm = fields["s"]["fields"][0]["type"]
    assert mm["value"]["element-id"] == array_element_id(7, 2)
    assert fields["ms"]["value"] == "int" and fields["ms"]["value-required"] is True


def test_collections_of_a_key_table_after_full_compaction(catalog, python) -> None:
    t = catalog.create_table(
        "db.collpk", _fields(key=True), primary_keys=["k"], options={**ICEBERG, "bucket": "2"}
    )
    t.write_arrow(_rows(t, [1, 2, 3, 4]))
    t.refresh().write_arrow(_rows(t, [2, 3, 6], "u"))
    t.refresh().compact(full=True)
    t = t.refresh()
    got = read_iceberg(python, _metadata(t))
    _same(got.current, t.to_arrow())
    assert got.current.num_rows == 5
