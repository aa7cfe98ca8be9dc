"""The JDBC metadata listing of Paimon's global system tables (``sys.tables``, ...), without a JVM."""

from __future__ import annotations

import pyarrow as pa

from sqlext.server import metadata

S = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def _names(table):
    return sorted((r["TABLE_SCHEM"], r["TABLE_NAME"], r["TABLE_TYPE"]) for r in table.to_pylist())


def test_global_tables_are_listed_when_asked_for(catalog):
    catalog.create_table("db.t", S, partition_keys=["dt"])
    # a schema browse of everything sees each table once, no system tables
    assert _names(metadata.tables(catalog, None, None, None)) == [("db", "t", "TABLE")]
    # asked for by schema name, or by type
    expected = [("sys", "all_table_options", "SYSTEM TABLE"), ("sys", "partitions", "SYSTEM TABLE"),
                ("sys", "tables", "SYSTEM TABLE")]
    assert _names(metadata.tables(catalog, "sys", None, None)) == expected
    by_type = _names(metadata.tables(catalog, None, "%", ["SYSTEM TABLE"]))
    assert [n for n in by_type if n[0] == "sys"] == expected
    assert _names(metadata.tables(catalog, "sys", "part%", None)) == [("sys", "partitions", "SYSTEM TABLE")]


def test_global_table_columns(catalog):
    cols = metadata.columns(catalog, "sys", "partitions", None).to_pylist()
    assert [c["COLUMN_NAME"] for c in cols] == [
        "database_name", "table_name", "partition_name", "record_count", "file_size_in_bytes", "file_count",
        "last_file_creation_time", "done"]
    assert [c["TYPE_NAME"] for c in cols][:4] == ["STRING", "STRING", "STRING", "BIGINT"]


def test_a_database_named_sys_keeps_its_own_tables(catalog):
    catalog.create_database("sys")
    catalog.create_table("sys.tables", S)
    assert _names(metadata.tables(catalog, "sys", None, None)) == [("sys", "tables", "TABLE")]
    own = metadata.columns(catalog, "sys", "tables", None).to_pylist()
    assert [c["COLUMN_NAME"] for c in own] == ["id", "dt"]
