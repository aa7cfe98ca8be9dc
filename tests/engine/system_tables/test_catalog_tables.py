"""The global system tables ``sys.tables``, ``sys.partitions``, ``sys.all_table_options`` and
``sys.catalog_options`` over a file-system catalog written by the engine (no JVM)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from engine import GLOBAL_TABLES, global_table_schema, read_global_table, read_system_table
from engine.errors import NoSuchTableError

S = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def _rows(ids, day):
    return pa.table({"id": ids, "v": ["x"] * len(ids), "dt": [day] * len(ids)}, schema=S)


@pytest.fixture
def filled(catalog):
    """db.parts (partitioned append, two partitions), db.pk (primary key, one write), db.empty,
    other.t (another database, never written)."""
    parts = catalog.create_table("db.parts", S, partition_keys=["dt"], options={"file.format": "parquet"})
    parts.write_arrow(_rows([1, 2], "d1"))
    parts.refresh().write_arrow(_rows([3], "d2"))
    pk = catalog.create_table("db.pk", S, primary_keys=["id"], options={"bucket": "1"})
    pk.write_arrow(_rows([1, 2, 3], "d1"))
    catalog.create_table("db.empty", S)
    catalog.create_database("other")
    catalog.create_table("other.t", S, partition_keys=["dt"])
    return catalog


def read(catalog, name, options=None):
    out = read_global_table(catalog, name, options or {})
    assert out.schema.equals(global_table_schema(name))
    return out


def test_tables_lists_every_table_with_its_layout_and_size(filled):
    out = read(filled, "tables").to_pylist()
    assert [(r["database_name"], r["table_name"]) for r in out] == [
        ("db", "empty"),
        ("db", "parts"),
        ("db", "pk"),
        ("other", "t"),
    ]
    by = {r["table_name"]: r for r in out}
    assert (by["parts"]["partitioned"], by["parts"]["primary_key"]) == (True, False)
    assert (by["pk"]["partitioned"], by["pk"]["primary_key"]) == (False, True)
    assert {r["table_type"] for r in out} == {"table"}
    assert by["empty"]["record_count"] is None and by["t"]["file_count"] is None
    files = read_system_table(filled.get_table("db.parts"), "files")
    assert by["parts"]["record_count"] == 3 and by["parts"]["file_count"] == files.num_rows == 2
    assert by["parts"]["file_size_in_bytes"] == sum(files.column("file_size_in_bytes").to_pylist())
    newest = max(files.column("creation_time").to_pylist())  # local wall clock
    assert by["parts"]["last_file_creation_time"] == int(newest.astimezone().timestamp() * 1000)
    assert by["pk"]["record_count"] == 3
    assert all(r["owner"] is None and r["created_at"] is None for r in out)


def test_partitions_lists_partitioned_tables_only(filled):
    out = read(filled, "partitions").to_pylist()
    assert [
        (
            r["database_name"],
            r["table_name"],
            r["partition_name"],
            r["record_count"],
            r["file_count"],
            r["done"],
        )
        for r in out
    ] == [("db", "parts", "dt=d1", 2, 1, False), ("db", "parts", "dt=d2", 1, 1, False)]
    now = dt.datetime.now().timestamp() * 1000
    assert all(abs(r["last_file_creation_time"] - now) < 600_000 for r in out)


def test_all_table_options_list_each_tables_options_and_path(filled):
    out = read(filled, "all_table_options").to_pylist()
    assert {"database_name": "db", "table_name": "parts", "key": "file.format", "value": "parquet"} in out
    assert {"database_name": "db", "table_name": "pk", "key": "bucket", "value": "1"} in out
    paths = {r["table_name"]: r["value"] for r in out if r["key"] == "path"}  # as Java's catalog adds it
    assert paths == {n: filled.get_table(f"{d}.{n}").path for d, n in
                     [("db", "parts"), ("db", "pk"), ("db", "empty"), ("other", "t")]}
    assert {r["table_name"] for r in out} <= {"parts", "pk", "empty", "t"}


def test_catalog_options_exist_only_when_enabled(filled):
    with pytest.raises(NoSuchTableError, match="catalog-options-table.enabled"):
        read_global_table(filled, "catalog_options", {"warehouse": "/w"})
    opts = {"warehouse": "/w", "catalog-options-table.enabled": "true"}
    assert read(filled, "catalog_options", opts).to_pylist() == [
        {"key": "catalog-options-table.enabled", "value": "true"},
        {"key": "warehouse", "value": "/w"},
    ]


def test_unknown_global_table_names_the_known_ones(catalog):
    with pytest.raises(NoSuchTableError, match="all_table_options"):
        read_global_table(catalog, "nope", {})
    assert GLOBAL_TABLES == ("tables", "partitions", "all_table_options", "catalog_options")
    empty = read(catalog, "tables")
    assert empty.num_rows == 0
