"""Metadata system tables ($snapshots, $files, ...) over real tables written by the engine."""

from __future__ import annotations

import datetime as dt
import json
import math
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import CommitKind, InvalidArgumentError, NoSuchSnapshotError
from engine.meta.refs import TagStore
from engine.meta.schema_store import SchemaStore
from engine.meta.snapshot import Tag
from engine.schema_changes import AddColumn, SetOption
from engine.system_tables import METADATA_TABLES, read_system_table, system_table_schema
from engine.system_tables.render import (
    duration_string,
    java_float_string,
    java_string,
    key_string,
    row_string,
    sql_string,
)
from engine.types import (
    BIGINT,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    field_to_json,
)

TS = pa.timestamp("ms")
LIST_STR = pa.list_(pa.field("element", pa.string()))

I64, I32, STR, BOOL = pa.int64(), pa.int32(), pa.string(), pa.bool_()
N, NN = True, False  # nullable, NOT NULL

# Paimon's system table row types (docs/design/format-notes.md §12): (name, arrow type, nullable)
# per column, in order.
EXPECTED = {
    "snapshots": [
        ("snapshot_id", I64, NN), ("schema_id", I64, NN), ("commit_user", STR, NN),
        ("commit_identifier", I64, NN), ("commit_kind", STR, NN), ("commit_time", TS, NN),
        ("base_manifest_list", STR, NN), ("delta_manifest_list", STR, NN),
        ("changelog_manifest_list", STR, N), ("total_record_count", I64, N),
        ("delta_record_count", I64, N), ("changelog_record_count", I64, N),
        ("watermark", I64, N), ("next_row_id", I64, N), ("operation", STR, N),
        ("writer_version", STR, N),
    ],
    "schemas": [
        ("schema_id", I64, NN), ("fields", STR, NN), ("partition_keys", STR, NN),
        ("primary_keys", STR, NN), ("options", STR, NN), ("comment", STR, N),
        ("update_time", TS, NN),
    ],
    "options": [("key", STR, NN), ("value", STR, NN)],
    "tags": [
        ("tag_name", STR, NN), ("snapshot_id", I64, NN), ("schema_id", I64, NN),
        ("commit_time", TS, NN), ("record_count", I64, N), ("create_time", TS, N),
        ("time_retained", STR, N),
    ],
    "branches": [("branch_name", STR, NN), ("create_time", TS, NN)],
    "files": [
        ("partition", STR, N), ("bucket", I32, NN), ("file_path", STR, NN),
        ("file_format", STR, NN), ("schema_id", I64, NN), ("level", I32, NN),
        ("record_count", I64, NN), ("file_size_in_bytes", I64, NN),
        ("min_key", STR, N), ("max_key", STR, N), ("null_value_counts", STR, NN),
        ("min_value_stats", STR, NN), ("max_value_stats", STR, NN),
        ("min_sequence_number", I64, N), ("max_sequence_number", I64, N),
        ("creation_time", TS, N), ("deleteRowCount", I64, N), ("file_source", STR, N),
        ("first_row_id", I64, N), ("write_cols", LIST_STR, N), ("deletion_vector_cardinality", I64, N),
    ],
    "manifests": [
        ("file_name", STR, NN), ("file_size", I64, NN), ("num_added_files", I64, NN),
        ("num_deleted_files", I64, NN), ("schema_id", I64, NN),
        ("min_partition_stats", STR, N), ("max_partition_stats", STR, N),
        ("min_row_id", I64, N), ("max_row_id", I64, N),
    ],
    "partitions": [
        ("partition", STR, N), ("record_count", I64, NN),
        ("file_size_in_bytes", I64, NN), ("file_count", I64, NN),
        ("last_update_time", TS, N), ("created_at", TS, N), ("created_by", STR, N),
        ("updated_by", STR, N), ("options", STR, N), ("total_buckets", I32, NN),
        ("done", BOOL, NN), ("deleted_record_count", I64, N),
    ],
    "buckets": [
        ("partition", STR, N), ("bucket", I32, NN), ("record_count", I64, NN),
        ("file_size_in_bytes", I64, NN), ("file_count", I64, NN),
        ("last_update_time", TS, N),
    ],
    "consumers": [("consumer_id", STR, NN), ("next_snapshot_id", I64, NN)],
    "file_key_ranges": [
        ("partition", STR, N), ("bucket", I32, NN), ("file_path", STR, NN),
        ("file_format", STR, NN), ("schema_id", I64, NN), ("level", I32, NN),
        ("record_count", I64, NN), ("file_size_in_bytes", I64, NN),
        ("min_key", STR, N), ("max_key", STR, N), ("first_row_id", I64, N),
    ],
    "table_indexes": [
        ("partition", STR, N), ("bucket", I32, NN), ("index_type", STR, NN), ("file_name", STR, NN),
        ("file_size", I64, NN), ("row_count", I64, NN),
        ("dv_ranges", pa.list_(pa.field("element", pa.struct([
            pa.field("f0", STR, NN), pa.field("f1", I32, NN), pa.field("f2", I32, NN),
            pa.field("_CARDINALITY", I64, N)]))), N),
        ("row_range_start", I64, N), ("row_range_end", I64, N), ("index_field_id", I32, N),
        ("index_field_name", STR, N),
    ],
    "aggregation_fields": [
        ("field_name", STR, NN), ("field_type", STR, NN), ("function", STR, N),
        ("function_options", STR, N), ("comment", STR, N),
    ],
    "statistics": [
        ("snapshot_id", I64, NN), ("schema_id", I64, NN), ("mergedRecordCount", I64, N),
        ("mergedRecordSize", I64, N), ("colstat", STR, N),
    ],
    # dyntable's own: engine.system_tables.maintenance
    "maintenance_log": [
        ("procedure", STR, NN), ("trigger", STR, NN), ("branch", STR, NN), ("started_at", TS, NN),
        ("duration_ms", I64, NN), ("dry_run", BOOL, NN), ("deleted_files", I64, NN),
        ("deleted_bytes", I64, NN), ("details", STR, N), ("error", STR, N),
    ],
}  # fmt: skip

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])


def rows(ids, dt_value="a", names=None):
    names = names if names is not None else [f"n{i}" for i in ids]
    return pa.table({"id": list(ids), "name": names, "dt": [dt_value] * len(ids)}, schema=SCHEMA)


def read(table, name, snapshot_id=None):
    out = read_system_table(table, name, snapshot_id)
    assert out.schema.equals(system_table_schema(table, name))
    return out


@pytest.fixture
def append_table(catalog):
    """Partitioned append table: 3 appends then an overwrite of partition a (4 snapshots)."""
    t = catalog.create_table("db.app", SCHEMA, partition_keys=["dt"])
    t.write_arrow(rows([1, 2], "a"))
    t.write_arrow(rows([3], "b", names=[None]))
    t.write_arrow(rows([4, 5, 6], "a"))
    t.write_arrow(rows([7], "a"), overwrite={"dt": "a"})
    return t


@pytest.fixture
def pk_table(catalog):
    t = catalog.create_table(
        "db.pk", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    t.write_arrow(pa.concat_tables([rows(range(10), "a"), rows(range(5), "b")]))
    t.write_arrow(rows([1, 2, 3], "a", names=["x", "y", "z"]))
    return t


# -- schemas ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [*METADATA_TABLES, "maintenance_log"])
def test_schema_matches_paimon_columns(catalog, name):
    t = catalog.create_table("db.s", SCHEMA)
    schema = system_table_schema(t, name)
    assert [(f.name, f.type, f.nullable) for f in schema] == EXPECTED[name]
    empty = read_system_table(t, name)  # a table without snapshots
    assert empty.schema.equals(schema)


def test_names_are_case_insensitive_and_unknown_names_list_the_known_ones(catalog):
    t = catalog.create_table("db.s", SCHEMA)
    assert system_table_schema(t, "$Snapshots").equals(system_table_schema(t, "snapshots"))
    assert read_system_table(t, "FILES").num_rows == 0
    with pytest.raises(InvalidArgumentError) as err:
        read_system_table(t, "audit")
    assert all(n in str(err.value) for n in METADATA_TABLES)
    with pytest.raises(InvalidArgumentError):
        system_table_schema(t, "snapshotz")
    assert set(METADATA_TABLES) | {"maintenance_log"} == set(EXPECTED)


# -- $snapshots / $schemas / $options -----------------------------------------------------------
def test_snapshots_one_row_per_version(append_table):
    out = read(append_table, "snapshots").to_pylist()
    snaps = append_table.snapshots()
    assert [r["snapshot_id"] for r in out] == [1, 2, 3, 4]
    assert [r["commit_kind"] for r in out] == ["APPEND", "APPEND", "APPEND", "OVERWRITE"]
    assert snaps[-1].commit_kind is CommitKind.OVERWRITE
    for r, s in zip(out, snaps, strict=True):
        assert r["commit_time"] == dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=s.time_millis)
        assert r["schema_id"] == s.schema_id and r["commit_user"] == s.commit_user
        assert r["commit_identifier"] == s.commit_identifier
        assert (
            r["base_manifest_list"] == s.base_manifest_list
            and r["delta_manifest_list"] == s.delta_manifest_list
        )
        assert (
            r["total_record_count"] == s.total_record_count
            and r["delta_record_count"] == s.delta_record_count
        )
        assert r["writer_version"] == s.writer_version
    assert [r["total_record_count"] for r in out] == [2, 3, 6, 2]


def test_schemas_and_options_follow_alter_table(catalog, append_table):
    catalog.alter_table("db.app", [AddColumn("score", "DOUBLE"), SetOption("snapshot.num-retained.min", "5")])
    out = read(append_table, "schemas").to_pylist()  # the stale Table object still sees every version
    assert [r["schema_id"] for r in out] == [0, 1]
    latest = catalog.get_table("db.app").schema
    assert json.loads(out[1]["fields"]) == [field_to_json(f) for f in latest.fields]
    assert " " not in out[1]["fields"] and out[1]["fields"].startswith('[{"id":0,"name":"id","type":')
    assert out[1]["partition_keys"] == '["dt"]' and out[1]["primary_keys"] == "[]"
    assert json.loads(out[1]["options"]) == dict(latest.options)
    assert out[1]["update_time"] == dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=latest.time_millis)
    assert out[0]["comment"] is None
    options = dict(zip(*read(append_table, "options").to_pydict().values(), strict=True))
    assert options == dict(latest.options) and options["snapshot.num-retained.min"] == "5"


# -- $files -------------------------------------------------------------------------------------
def test_files_of_append_table(append_table):
    files = read(append_table, "files")
    out = files.to_pylist()
    # After the overwrite of dt=a only its new file and dt=b's file are live.
    assert sorted(r["partition"] for r in out) == ["{a}", "{b}"]
    assert sum(r["record_count"] for r in out) == append_table.to_arrow().num_rows == 2
    for r in out:
        assert os.path.isfile(r["file_path"]) and os.path.getsize(r["file_path"]) == r["file_size_in_bytes"]
        assert (
            r["file_path"].startswith(append_table.path)
            and f"/dt={r['partition'][1:-1]}/bucket-0/" in r["file_path"]
        )
        assert r["file_format"] == "parquet" and r["bucket"] == 0 and r["level"] == 0 and r["schema_id"] == 0
        assert r["min_key"] is None and r["max_key"] is None  # append tables have no key
        assert r["file_source"] == "APPEND" and r["creation_time"] is not None and r["write_cols"] is None
    b = next(r for r in out if r["partition"] == "{b}")
    assert b["null_value_counts"] == "{dt=0, id=0, name=1}"
    assert b["min_value_stats"] == "{dt=b, id=3, name=null}" == b["max_value_stats"]
    a = next(r for r in out if r["partition"] == "{a}")
    assert a["min_value_stats"] == "{dt=a, id=7, name=n7}"


def test_files_time_travel_and_missing_snapshot(append_table):
    first = read(append_table, "files", snapshot_id=1).to_pylist()
    assert [(r["partition"], r["record_count"]) for r in first] == [("{a}", 2)]
    assert first[0]["min_value_stats"] == "{dt=a, id=1, name=n1}"
    assert first[0]["max_value_stats"] == "{dt=a, id=2, name=n2}"
    assert read(append_table, "files", snapshot_id=3).num_rows == 3
    with pytest.raises(NoSuchSnapshotError):
        read_system_table(append_table, "files", snapshot_id=99)
    with pytest.raises(InvalidArgumentError):
        read_system_table(append_table, "files", snapshot_id="1")  # type: ignore[arg-type]


def test_files_of_primary_key_table_show_keys(pk_table):
    out = read(pk_table, "files").to_pylist()
    assert {r["bucket"] for r in out} <= {0, 1} and {r["partition"] for r in out} == {"{a}", "{b}"}
    for r in out:
        assert r["min_key"].startswith("[") and r["max_key"].endswith("]")
        assert int(r["min_key"][1:-1]) <= int(r["max_key"][1:-1])
        assert f"/bucket-{r['bucket']}/" in r["file_path"] and os.path.isfile(r["file_path"])
        assert r["min_sequence_number"] <= r["max_sequence_number"]
    assert sum(r["record_count"] for r in out) == 18  # both commits' files stay until compaction


def test_files_stats_after_add_column(catalog, append_table):
    catalog.alter_table("db.app", [AddColumn("score", "DOUBLE")])
    t = catalog.get_table("db.app")
    t.write_arrow(pa.table({"id": [8], "name": ["n8"], "dt": ["c"], "score": [1e7]}))
    out = {r["partition"]: r for r in read(t, "files").to_pylist()}
    old = out["{b}"]  # written before the column existed: every row is null in it
    assert old["null_value_counts"] == "{dt=0, id=0, name=1, score=1}"
    assert old["min_value_stats"] == "{dt=b, id=3, name=null, score=null}"
    new = out["{c}"]
    assert new["schema_id"] == 1 and new["max_value_stats"] == "{dt=c, id=8, name=n8, score=1.0E7}"


def test_files_read_only_the_chosen_snapshot(append_table, monkeypatch):
    store = append_table.store
    store.snapshots._cache.clear()
    seen = []
    original = type(store.snapshots).get

    def counting_get(self, snapshot_id):
        seen.append(snapshot_id)
        return original(self, snapshot_id)

    monkeypatch.setattr(type(store.snapshots), "get", counting_get)
    read_system_table(append_table, "files")
    read_system_table(append_table, "partitions", snapshot_id=2)
    assert set(seen) == {4, 2}


# -- $manifests ---------------------------------------------------------------------------------
def test_manifests_of_snapshot(append_table):
    store = append_table.store
    for sid in (1, 4):
        snap = store.snapshots.get(sid)
        metas = store.manifests.read_list(snap.base_manifest_list) + store.manifests.read_list(
            snap.delta_manifest_list
        )
        out = read(append_table, "manifests", snapshot_id=sid).to_pylist()
        assert [r["file_name"] for r in out] == [m.file_name for m in metas]
        assert [r["num_added_files"] for r in out] == [m.num_added_files for m in metas]
        assert [r["num_deleted_files"] for r in out] == [m.num_deleted_files for m in metas]
        assert [r["file_size"] for r in out] == [
            os.path.getsize(store.paths.manifest_file(m.file_name)) for m in metas
        ]
        assert all(r["schema_id"] == 0 and r["min_row_id"] is None for r in out)
    latest = read(append_table, "manifests").to_pylist()
    assert sum(r["num_added_files"] - r["num_deleted_files"] for r in latest) == 2
    assert {(r["min_partition_stats"], r["max_partition_stats"]) for r in latest} >= {
        ("{a}", "{a}"),
        ("{b}", "{b}"),
    }
    assert read(append_table, "manifests", snapshot_id=1).to_pylist()[0]["min_partition_stats"] == "{a}"


# -- $partitions / $buckets ---------------------------------------------------------------------
def _files_grouped(table, keys):
    files = read(table, "files")
    part = pc.replace_substring_regex(files.column("partition"), r"^\{(.*)\}$", r"dt=\1")
    files = files.append_column("p", part)
    return files.group_by(["p", *keys]).aggregate(
        [
            ("record_count", "sum"),
            ("file_size_in_bytes", "sum"),
            ("file_path", "count"),
            ("creation_time", "max"),
        ]
    )


def test_partitions_aggregate_live_files(pk_table):
    out = read(pk_table, "partitions").to_pylist()
    assert [r["partition"] for r in out] == ["dt=a", "dt=b"]
    expected = {r["p"]: r for r in _files_grouped(pk_table, []).to_pylist()}
    for r in out:
        e = expected[r["partition"]]
        assert (
            r["record_count"] == e["record_count_sum"]
            and r["file_size_in_bytes"] == e["file_size_in_bytes_sum"]
        )
        assert r["file_count"] == e["file_path_count"] and r["last_update_time"] == e["creation_time_max"]
        assert r["total_buckets"] == 2 and r["done"] is False and r["deleted_record_count"] == 0
        assert (
            r["created_at"] is None
            and r["created_by"] is None
            and r["updated_by"] is None
            and r["options"] is None
        )
    assert [r["record_count"] for r in out] == [13, 5]


def test_partitions_of_older_snapshot_and_after_overwrite(append_table):
    assert [
        (r["partition"], r["record_count"], r["file_count"])
        for r in read(append_table, "partitions").to_pylist()
    ] == [("dt=a", 1, 1), ("dt=b", 1, 1)]
    old = read(append_table, "partitions", snapshot_id=3).to_pylist()
    assert [(r["partition"], r["record_count"], r["file_count"]) for r in old] == [
        ("dt=a", 5, 2),
        ("dt=b", 1, 1),
    ]


def test_buckets_aggregate_per_partition_and_bucket(pk_table):
    out = read(pk_table, "buckets").to_pylist()
    keys = [(r["partition"], r["bucket"]) for r in out]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    # $buckets prints the partition as a row, exactly as $files does, so the two join.
    assert {p for p, _ in keys} == {"{a}", "{b}"}
    expected = {
        ("{" + r["p"][len("dt=") :] + "}", r["bucket"]): r
        for r in _files_grouped(pk_table, ["bucket"]).to_pylist()
    }
    assert set(keys) == set(expected)
    for r in out:
        e = expected[(r["partition"], r["bucket"])]
        assert r["record_count"] == e["record_count_sum"] and r["file_count"] == e["file_path_count"]
        assert (
            r["file_size_in_bytes"] == e["file_size_in_bytes_sum"]
            and r["last_update_time"] == e["creation_time_max"]
        )
    assert sum(r["record_count"] for r in out) == 18


def test_partition_text_for_typed_null_and_no_partitions(catalog):
    schema = pa.schema([("v", pa.int64()), ("d", pa.date32()), ("n", pa.int32())])
    t = catalog.create_table("db.typed", schema, partition_keys=["d", "n"])
    t.write_arrow(pa.table({"v": [1, 2], "d": [dt.date(2024, 1, 2), None], "n": [5, 6]}, schema=schema))
    files = sorted(r["partition"] for r in read(t, "files").to_pylist())
    assert files == ["{2024-01-02, 5}", "{null, 6}"]
    parts = [r["partition"] for r in read(t, "partitions").to_pylist()]
    assert parts == ["d=2024-01-02/n=5", "d=__DEFAULT_PARTITION__/n=6"]
    # Paimon's PaimonSystemTableTest "date partition table": $buckets shows the row text.
    assert [r["partition"] for r in read(t, "buckets").to_pylist()] == ["{2024-01-02, 5}", "{null, 6}"]
    paths = [r["file_path"] for r in read(t, "files").to_pylist()]
    assert all(os.path.isfile(p) for p in paths) and any(
        "/d=19724/n=5/" in p for p in paths
    )  # legacy dir name
    manifest = read(t, "manifests").to_pylist()[0]
    assert (manifest["min_partition_stats"], manifest["max_partition_stats"]) == (
        "{2024-01-02, 5}",
        "{2024-01-02, 6}",
    )

    flat = catalog.create_table("db.flat", SCHEMA)
    flat.write_arrow(rows([1, 2]))
    assert read(flat, "files").column("partition").to_pylist() == ["{}"]
    assert read(flat, "partitions").column("partition").to_pylist() == [""]
    assert read(flat, "buckets").select(["partition", "bucket", "record_count"]).to_pylist() == [
        {"partition": "{}", "bucket": 0, "record_count": 2}
    ]
    assert read(flat, "manifests").column("min_partition_stats").to_pylist() == ["{}"]


# -- $tags / $branches / $consumers -------------------------------------------------------------
def test_tags(append_table):
    snaps = append_table.snapshots()
    tags = TagStore(append_table.store.io, append_table.store.paths)
    tags.write("t2", Tag(snaps[1]))
    created = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    tags.write("t1", Tag(snaps[0], create_time=created, time_retained_ms=24 * 3600 * 1000))
    out = read(append_table, "tags").to_pylist()
    assert [r["tag_name"] for r in out] == ["t1", "t2"]
    t1, t2 = out
    assert (t1["snapshot_id"], t1["schema_id"], t1["record_count"]) == (1, 0, 2)
    assert t1["commit_time"] == dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=snaps[0].time_millis)
    assert t1["create_time"] == dt.datetime(2024, 5, 6, 7, 8, 9, 123000) and t1["time_retained"] == "PT24H"
    assert (t2["snapshot_id"], t2["record_count"], t2["create_time"], t2["time_retained"]) == (
        2,
        3,
        None,
        None,
    )


def test_branches_and_per_branch_metadata(catalog, append_table):
    assert read(append_table, "branches").num_rows == 0
    for name in ("zeta", "alpha"):
        SchemaStore(append_table.store.io, append_table.store.paths.for_branch(name)).write_copy(
            append_table.schema
        )
    with open(os.path.join(append_table.path, "branch", "not-a-branch"), "w"):
        pass  # a stray file is not a branch
    out = read(append_table, "branches").to_pylist()
    assert [r["branch_name"] for r in out] == ["alpha", "zeta"]
    for r in out:
        mtime_ms = int(
            os.stat(os.path.join(append_table.path, "branch", f"branch-{r['branch_name']}")).st_mtime * 1000
        )
        assert r["create_time"] == dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=mtime_ms)
    branch = catalog.get_table("db.app$branch_alpha")
    assert read(branch, "snapshots").num_rows == 0 and read(branch, "files").num_rows == 0
    assert read(branch, "schemas").column("schema_id").to_pylist() == [0]
    assert read(branch, "branches").column("branch_name").to_pylist() == ["alpha", "zeta"]


def test_consumers(append_table):
    assert read(append_table, "consumers").num_rows == 0
    append_table.refs.consumers.reset("job-b", 4)
    append_table.refs.consumers.reset("job-a", 2)
    assert read(append_table, "consumers").to_pylist() == [
        {"consumer_id": "job-a", "next_snapshot_id": 2},
        {"consumer_id": "job-b", "next_snapshot_id": 4},
    ]


# -- rendering ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "single", "text"),
    [
        (1e7, False, "1.0E7"), (9999999.0, False, "9999999.0"), (0.001, False, "0.001"),
        (1e-4, False, "1.0E-4"),
        (123.45, False, "123.45"), (-0.0, False, "-0.0"), (0.0, False, "0.0"), (100.0, False, "100.0"),
        (1.5e300, False, "1.5E300"), (-2.5e-10, False, "-2.5E-10"), (float("nan"), False, "NaN"),
        (float("-inf"), False, "-Infinity"), (0.1, True, "0.1"), (1e10, True, "1.0E10"), (3.3, True, "3.3"),
    ],
)  # fmt: skip
def test_java_float_string(value, single, text):
    assert java_float_string(value, single) == text


@settings(max_examples=100, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_string_round_trips(x):
    text = java_float_string(x)
    assert float(text) == x and math.copysign(1, float(text)) == math.copysign(1, x)
    assert "." in text and ("E" in text) == (x != 0 and not 1e-3 <= abs(x) < 1e7)


@pytest.mark.parametrize(
    ("millis", "text"),
    [(0, "PT0S"), (86_400_000, "PT24H"), (1500, "PT1.5S"), (90_061_001, "PT25H1M1.001S"), (60_000, "PT1M"),
     (3_600_000 + 500, "PT1H0.5S"), (-1500, "PT-1.5S")],
)  # fmt: skip
def test_duration_string(millis, text):
    assert duration_string(millis) == text


def test_value_renderings():
    ts = dt.datetime(2024, 1, 1, 10, 0)
    assert sql_string(ts, TIMESTAMP(3)) == "2024-01-01 10:00:00.000"
    assert sql_string(ts, TIMESTAMP(0)) == "2024-01-01 10:00:00"
    assert sql_string(ts.replace(microsecond=120000), TIMESTAMP(6)) == "2024-01-01 10:00:00.120000"
    assert sql_string(ts.replace(microsecond=123456), TIMESTAMP(3)) == "2024-01-01 10:00:00.123456"
    assert sql_string(ts.replace(tzinfo=dt.UTC), TIMESTAMP_LTZ(0)) == "2024-01-01 10:00:00"
    assert sql_string(dt.date(2024, 1, 2), DATE()) == "2024-01-02"
    assert sql_string(dt.time(1, 2, 3), TIME(0)) == "01:02:03"
    assert sql_string(b"abc", STRING()) == "abc"
    assert java_string(ts, TIMESTAMP(3)) == "2024-01-01T10:00"
    assert java_string(ts.replace(second=5, microsecond=1000), TIMESTAMP(3)) == "2024-01-01T10:00:05.001"
    assert java_string(dt.date(1970, 1, 11), DATE()) == "10"
    assert java_string(dt.time(0, 0, 1, 500000), TIME(3)) == "1500"
    assert java_string(None, INT()) == "null" and java_string(-3, BIGINT()) == "-3"
    from decimal import Decimal

    assert java_string(Decimal("1.50"), DECIMAL(5, 2)) == "1.50" == sql_string(Decimal("1.50"), DECIMAL(5, 2))
    assert java_string(0.5, FLOAT()) == "0.5" and java_string(2.0, DOUBLE()) == "2.0"
    assert row_string([], []) == "{}" and row_string([1, None], [INT(), STRING()]) == "{1, null}"
    assert key_string(["a", 7], [STRING(), BIGINT()]) == "[a, 7]"


def test_branch_time_falls_back_to_schema_files_on_stores_without_dir_times():
    import uuid

    from engine import open_catalog

    cat = open_catalog(f"memory://systables-{uuid.uuid4().hex}")  # memory:// directories have no mtime
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA)
    t.write_arrow(rows([1]))
    SchemaStore(t.store.io, t.store.paths.for_branch("b")).write_copy(t.schema)
    schema_file = t.store.paths.for_branch("b").schema_file(0)
    mtime = next(s.modification_time_ms for s in t.store.io.list_dir(schema_file.rsplit("/", 1)[0]))
    out = read(t, "branches").to_pylist()
    assert out == [
        {"branch_name": "b", "create_time": dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=mtime)}
    ]
    assert read(t, "files").column("file_path").to_pylist()[0].startswith(t.path + "/bucket-0/data-")
