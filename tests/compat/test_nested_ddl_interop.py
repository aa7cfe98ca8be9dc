"""Nested ALTER TABLE changes and column defaults against pypaimon 2.1: pypaimon reads a table whose
nested fields dyntable added, dropped, renamed and widened between writes (old files through
their field ids), and sees the default value dyntable stores in the schema."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.schema_changes import AddColumn, DropColumn, RenameColumn, UpdateColumnDefault, UpdateColumnType
from engine.types import BIGINT, STRING
from tests.compat.harness import PyPaimon

pytestmark = pytest.mark.compat


def _write(t, rows: list[tuple]) -> None:
    names = t.schema.field_names
    t.write_arrow(
        pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows], schema=t.arrow_schema)
    )


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["k"])


@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_pypaimon_reads_old_files_after_nested_changes(pypaimon: PyPaimon, catalog, primary_key):
    catalog.create_table(
        "db.n",
        [
            ("k", "INT NOT NULL"),
            ("v", "STRUCT<f1: INT, f2: STRUCT<f1: STRING, f2: INT>>"),
            ("a", "ARRAY<STRUCT<f1: STRING, f2: INT>>"),
            ("m", "MAP<INT, STRUCT<f1: STRING, f2: INT>>"),
        ],
        primary_keys=["k"] if primary_key else [],
        options={"bucket": "1"} if primary_key else {},
    )
    t = catalog.get_table("db.n")
    _write(
        t,
        [
            (
                1,
                {"f1": 10, "f2": {"f1": "apple", "f2": 100}},
                [{"f1": "x", "f2": 1}],
                [(5, {"f1": "p", "f2": 7})],
            )
        ],
    )
    t = catalog.alter_table(
        "db.n",
        [
            AddColumn(("v", "f3"), STRING()),
            DropColumn(("v", "f2", "f1")),
            AddColumn(("v", "f2", "f1"), STRING(), position="first"),  # a new field under an old name
            RenameColumn(("a", "element", "f1"), "g1"),
            UpdateColumnType(("a", "element", "f2"), BIGINT()),
            DropColumn(("m", "value", "f1")),
            AddColumn(("m", "value", "f3"), STRING()),
        ],
    )
    _write(
        t,
        [
            (
                2,
                {"f1": 20, "f2": {"f1": "NEW", "f2": 200}, "f3": "two"},
                [{"g1": "y", "f2": 2**40}],
                [(6, {"f2": 8, "f3": "q"})],
            )
        ],
    )
    ours = _sorted(t.to_arrow().to_pylist())
    assert ours == [
        {
            "k": 1,
            "v": {"f1": 10, "f2": {"f1": None, "f2": 100}, "f3": None},
            "a": [{"g1": "x", "f2": 1}],
            "m": [(5, {"f2": 7, "f3": None})],
        },
        {
            "k": 2,
            "v": {"f1": 20, "f2": {"f1": "NEW", "f2": 200}, "f3": "two"},
            "a": [{"g1": "y", "f2": 2**40}],
            "m": [(6, {"f2": 8, "f3": "q"})],
        },
    ]
    theirs = _sorted(pypaimon.read(catalog.warehouse, "db.n", schema=t.arrow_schema).to_pylist())
    assert theirs == ours


def test_pypaimon_sees_the_default_value_in_the_schema(pypaimon: PyPaimon, catalog):
    catalog.create_table("db.d", [("a", "INT"), ("b", "INT")])
    catalog.alter_table("db.d", [UpdateColumnDefault("b", "3")])
    fields = {f["name"]: f for f in pypaimon.schema(catalog.warehouse, "db.d")["fields"]}
    assert fields["b"].get("defaultValue") == "3" and "defaultValue" not in fields["a"]
