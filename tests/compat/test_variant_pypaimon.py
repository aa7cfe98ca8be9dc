"""VARIANT columns between pypaimon 2.1 and dyntable, both ways (issue 36).

pypaimon writes a VARIANT column (``pypaimon_features.py``): dyntable reads the same value and
metadata bytes, appends its own rows and compacts, and pypaimon reads every row back. A variant
column pypaimon shreds (``variant.shreddingSchema``) is refused at read with SQLSTATE 0A000 naming
the shredding, and nothing is damaged.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.arrow_types import VARIANT_ARROW
from engine.errors import UnsupportedTableError
from sqlext.errors import sqlstate_for
from tests.compat.harness import PyPaimon
from tests.compat.test_newer_features import pypaimon_writes

pytestmark = pytest.mark.compat

# Parquet Variant binary encoding, spelled out: metadata version 1 with an empty key dictionary;
# an int8 (header 0x0C) and a short string (header = length << 2 | 1).
_EMPTY_METADATA = b"\x01\x00\x00"


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True),
                  key=repr)


def test_pypaimon_variant_read_by_dyntable_and_dyntable_rows_read_by_pypaimon(pypaimon: PyPaimon, tmp_path):
    warehouse = tmp_path / "wh"
    pypaimon_writes(warehouse, "variant_column")
    name = "db.variant_column"
    theirs = _rows(pypaimon.read(warehouse, name))
    assert len(theirs) == 4 and sum(r[1] is None for r in theirs) == 1
    table = open_catalog(str(warehouse)).get_table(name)
    assert table.schema.field("x").type.root.value == "VARIANT"
    assert _rows(table.to_arrow()) == theirs

    ours = pa.array([{"value": b"\x0c\x05", "metadata": _EMPTY_METADATA},
                     {"value": b"\x09hi", "metadata": _EMPTY_METADATA}], VARIANT_ARROW)
    table.write_arrow(pa.table({"id": pa.array([10, 11], pa.int64()), "x": ours}))
    table.compact(full=True)
    everything = _rows(table.refresh().to_arrow())
    assert len(everything) == 6
    assert _rows(pypaimon.read(warehouse, name)) == everything


def test_dyntable_variant_table_read_by_pypaimon(pypaimon: PyPaimon, tmp_path):
    warehouse = tmp_path / "wh"
    catalog = open_catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("x", VARIANT_ARROW)])
    table = catalog.create_table("db.v", schema)
    values = pa.array([{"value": b"\x0c\x05", "metadata": _EMPTY_METADATA}, None], VARIANT_ARROW)
    table.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "x": values}, schema=schema))
    assert pypaimon.schema(warehouse, "db.v")["fields"][1]["type"] == "VARIANT"
    assert _rows(pypaimon.read(warehouse, "db.v")) == [
        (1, {"value": b"\x0c\x05", "metadata": _EMPTY_METADATA}), (2, None)]


def test_shredded_variant_is_refused_and_left_intact(pypaimon: PyPaimon, tmp_path):
    warehouse = tmp_path / "wh"
    pypaimon_writes(warehouse, "variant_shredded")
    name = "db.variant_shredded"
    theirs = _rows(pypaimon.read(warehouse, name))
    table = open_catalog(str(warehouse)).get_table(name)
    with pytest.raises(UnsupportedTableError) as e:
        table.to_arrow()
    assert sqlstate_for(e.value) == "0A000" and "shredded VARIANT" in str(e.value)
    assert _rows(pypaimon.read(warehouse, name)) == theirs
