"""CALL sys.rebuild_iceberg_metadata (sqlext/execute/procedures/iceberg.py), without a JVM."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from engine import open_catalog
from engine.schema_changes import SetOption
from tests.sqlext.execute.test_procedures import call_procedure, in_db


def test_rebuild_iceberg_metadata_publishes_an_existing_table(tmp_path):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    for i in range(2):
        t.write_arrow(pa.table({"id": [i]}, schema=t.arrow_schema))
    ctx = in_db(cat)
    assert call_procedure(ctx, "rebuild_iceberg_metadata", "t").to_pylist() == [{"metadata_version": None}]
    cat.alter_table("db.t", [SetOption("metadata.iceberg.storage", "table-location")])
    result = call_procedure(ctx, "rebuild_iceberg_metadata", table="db.t")
    assert result.to_pylist() == [{"metadata_version": 2}]
    meta = json.loads((Path(t.path) / "metadata" / "v2.metadata.json").read_text())
    assert meta["current-snapshot-id"] == 2 and meta["snapshots"][0]["summary"]["total-records"] == "2"
