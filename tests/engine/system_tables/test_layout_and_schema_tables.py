"""Paimon 2.0's ``$file_key_ranges``, ``$table_indexes``, ``$aggregation_fields`` and ``$statistics``
over tables written by the engine (no JVM)."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pytest

from engine.errors import CorruptMetadataError, NoSuchSnapshotError
from engine.meta.paths import join
from engine.system_tables import read_system_table, system_table_schema
from engine.system_tables.schema_info import paimon_type_string
from engine.types import ARRAY, BIGINT, DECIMAL, INT, MAP, ROW, STRING, TIMESTAMP, DataField

S = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("p", pa.string())])


def _rows(ks, p="x", v="a"):
    return pa.table({"k": ks, "v": [v] * len(ks), "p": [p] * len(ks)}, schema=S)


def read(table, name, snapshot_id=None):
    out = read_system_table(table, name, snapshot_id)
    assert out.schema.equals(system_table_schema(table, name))
    return out


@pytest.fixture
def dv_table(catalog):
    """A partitioned primary-key DV table: a full compaction, then an update compacted into a DV."""
    t = catalog.create_table("db.dv", S, primary_keys=["p", "k"], partition_keys=["p"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows([1, 2, 3]))
    t.refresh().compact(full=True)
    t.refresh().write_arrow(_rows([2], v="b"))
    t.refresh().compact(full=False)
    return t.refresh()


def test_file_key_ranges_are_the_files_without_statistics(dv_table):
    ranges = read(dv_table, "file_key_ranges").to_pylist()
    files = read(dv_table, "files").to_pylist()
    shared = list(system_table_schema(dv_table, "file_key_ranges").names)
    assert ranges == [{c: f[c] for c in shared} for f in files]
    assert sorted((r["min_key"], r["max_key"]) for r in ranges) == [("[1]", "[3]"), ("[2]", "[2]")]
    assert {r["partition"] for r in ranges} == {"{x}"}


def test_file_key_ranges_of_append_table_have_no_keys_and_follow_time_travel(catalog):
    t = catalog.create_table("db.app", S, partition_keys=["p"])
    t.write_arrow(_rows([1, 2]))
    t.refresh().write_arrow(_rows([3], p="y"))
    t = t.refresh()
    now = read(t, "file_key_ranges").to_pylist()
    assert [(r["partition"], r["record_count"], r["min_key"], r["max_key"]) for r in now] == [
        ("{x}", 2, None, None), ("{y}", 1, None, None)]
    assert [r["partition"] for r in read(t, "file_key_ranges", 1).to_pylist()] == ["{x}"]
    with pytest.raises(NoSuchSnapshotError):
        read_system_table(t, "file_key_ranges", 99)


def test_table_indexes_list_deletion_vectors_with_their_ranges(dv_table):
    out = read(dv_table, "table_indexes").to_pylist()
    assert len(out) == 1
    row = out[0]
    assert (row["partition"], row["bucket"], row["index_type"], row["row_count"]) == (
        "{x}", 0, "DELETION_VECTORS", 1)
    assert row["file_name"].startswith("index-") and row["file_size"] > 0
    [dv] = row["dv_ranges"]
    files = {f["file_path"].rsplit("/", 1)[1]: f for f in read(dv_table, "files").to_pylist()}
    # The DV marks the old row of key 2 in the fully compacted file, the one $files counts too.
    assert files[dv["f0"]]["deletion_vector_cardinality"] == dv["_CARDINALITY"] == 1
    assert dv["f2"] > 0
    assert row["row_range_start"] is None and row["index_field_name"] is None
    # before the update, no index at all
    assert read(dv_table, "table_indexes", 2).num_rows == 0


def test_table_indexes_list_dynamic_bucket_hash_indexes(catalog):
    t = catalog.create_table("db.h", S, primary_keys=["k"], options={"bucket": "-1"})
    t.write_arrow(_rows([1, 2, 3]))
    out = read(t.refresh(), "table_indexes").to_pylist()
    assert [(r["partition"], r["bucket"], r["index_type"], r["row_count"], r["dv_ranges"]) for r in out] == [
        ("{}", 0, "HASH", 3, None)]


def test_aggregation_fields_show_each_columns_options(catalog):
    t = catalog.create_table("db.agg", S, primary_keys=["k"], options={
        "merge-engine": "aggregation", "fields.v.aggregate-function": "max",
        "fields.v.ignore-retract": "true", "fields.p.aggregate-function": "last_value"})
    out = read(t, "aggregation_fields").to_pylist()
    assert out == [
        {"field_name": "k", "field_type": "BIGINT NOT NULL", "function": "[]", "function_options": "[]",
         "comment": None},
        {"field_name": "v", "field_type": "STRING", "function": "[max, true]",
         "function_options": "[fields.v.aggregate-function, fields.v.ignore-retract]", "comment": None},
        {"field_name": "p", "field_type": "STRING", "function": "[last_value]",
         "function_options": "[fields.p.aggregate-function]", "comment": None},
    ]


@pytest.mark.parametrize(("dtype", "text"), [
    (INT(False), "INT NOT NULL"),
    (DECIMAL(10, 2), "DECIMAL(10, 2)"),
    (TIMESTAMP(3), "TIMESTAMP(3)"),
    (ARRAY(STRING()), "ARRAY<STRING>"),
    (MAP(STRING(False), BIGINT()), "MAP<STRING NOT NULL, BIGINT>"),
    (ROW((DataField(1, "a", INT()), DataField(2, "b c", STRING(), "it's"))),
     "ROW<`a` INT, `b c` STRING 'it''s'>"),
])
def test_field_type_is_paimons_sql_text(dtype, text):
    assert paimon_type_string(dtype) == text


def _analyze(t, col_stats):
    """Record statistics as Paimon's ANALYZE TABLE does: a statistics file and a snapshot naming it."""
    latest = t.latest_snapshot()
    name = "stats-test-0"
    doc = {"snapshotId": latest.id, "schemaId": latest.schema_id, "mergedRecordCount": 3,
           "mergedRecordSize": 120, "colStats": col_stats}
    t.store.io.write_bytes(join(t.store.paths.root, "statistics", name), json.dumps(doc).encode())
    assert t.store.snapshots.try_publish(dataclasses.replace(latest, id=latest.id + 1, statistics=name))
    return t.refresh()


def test_statistics_show_what_analyze_recorded(catalog):
    t = catalog.create_table("db.st", S)
    t.write_arrow(_rows([1, 2, 3]))
    t = t.refresh()
    assert read(t, "statistics").num_rows == 0  # nothing analyzed yet
    t = _analyze(t, {"k": {"colId": 0, "distinctCount": 3, "nullCount": 0}})
    assert read(t, "statistics").to_pylist() == [{
        "snapshot_id": 1, "schema_id": 0, "mergedRecordCount": 3, "mergedRecordSize": 120,
        "colstat": '{\n  "k" : {\n    "colId" : 0,\n    "distinctCount" : 3,\n    "nullCount" : 0\n  }\n}'}]
    assert read(t, "statistics", 1).num_rows == 0
    t.store.io.delete(join(t.store.paths.root, "statistics", "stats-test-0"))
    with pytest.raises(CorruptMetadataError, match="statistics file"):
        read_system_table(t, "statistics")


def test_empty_statistics_print_as_jackson_does(catalog):
    t = catalog.create_table("db.st", S)
    t.write_arrow(_rows([1]))
    assert read(_analyze(t.refresh(), {}), "statistics").column("colstat").to_pylist() == ["{ }"]
