"""Damaged tables and bad input fail with typed errors naming the file (issue 8, defects 7 and 8)."""

from __future__ import annotations

import glob
import json
import os

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.errors import CorruptDataError, CorruptMetadataError, InvalidArgumentError, NoSuchSnapshotError
from engine.meta.manifest_store import _MANIFEST_CACHE

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string())])


@pytest.fixture
def table_dir(catalog, warehouse):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["a"])
    t.write_arrow(pa.table({"a": [1, 2], "b": ["x", "y"]}, schema=SCHEMA))
    return os.path.join(warehouse, "db.db", "t")


def _fresh_read(warehouse: str) -> pa.Table:
    # Manifests are cached process-wide by path; a damaged one must be read from disk.
    _MANIFEST_CACHE._items.clear()
    _MANIFEST_CACHE._weight = 0
    return open_catalog(warehouse).get_table("db.t").to_arrow()


@pytest.mark.parametrize("name", ["snapshot/snapshot-1", "schema/schema-0"])
def test_non_utf8_metadata_file_is_corrupt_metadata_naming_it(table_dir, warehouse, name):
    path = os.path.join(table_dir, name)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(b"\xff\xfe" + data)
    with pytest.raises(CorruptMetadataError, match=path):
        _fresh_read(warehouse)


def test_non_utf8_latest_hint_falls_back_to_listing(table_dir, warehouse):
    with open(os.path.join(table_dir, "snapshot", "LATEST"), "wb") as f:
        f.write(b"\xff")
    assert _fresh_read(warehouse).num_rows == 2


@pytest.mark.parametrize(
    ("field", "new_type"), [(1, "INT"), (1, "DATE"), (0, "ARRAY<INT> NOT NULL"), (0, "BYTES NOT NULL")]
)
def test_schema_type_not_matching_the_data_file_is_corrupt_data(table_dir, warehouse, field, new_type):
    path = os.path.join(table_dir, "schema", "schema-0")
    schema = json.load(open(path))
    schema["fields"][field]["type"] = new_type
    with open(path, "w") as f:
        json.dump(schema, f)
    with pytest.raises(CorruptDataError, match=r"data file .*\.parquet: column '[ab]'"):
        _fresh_read(warehouse)


def test_unparseable_schema_type_is_corrupt_metadata(table_dir, warehouse):
    path = os.path.join(table_dir, "schema", "schema-0")
    schema = json.load(open(path))
    schema["fields"][1]["type"] = "DECIMAL(99, 2)"
    with open(path, "w") as f:
        json.dump(schema, f)
    with pytest.raises(CorruptMetadataError, match=path):
        _fresh_read(warehouse)


def test_manifest_decode_errors_name_the_file(table_dir, warehouse):
    files = sorted(glob.glob(os.path.join(table_dir, "manifest", "manifest-*")))
    assert len(files) >= 2  # a manifest and the manifest lists
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        try:
            with pytest.raises(CorruptMetadataError, match=path):
                _fresh_read(warehouse)
        finally:
            with open(path, "wb") as f:
                f.write(data)
    assert _fresh_read(warehouse).num_rows == 2


@pytest.mark.parametrize("keep", [0, 0.5, 0.9])
def test_truncated_parquet_is_corrupt_not_missing(table_dir, warehouse, keep):
    (path,) = glob.glob(os.path.join(table_dir, "bucket-0", "*.parquet"))
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: int(len(data) * keep)])
    with pytest.raises(CorruptDataError, match="truncated") as e:
        _fresh_read(warehouse)
    assert path in str(e.value) and "missing" not in str(e.value)


def test_missing_parquet_is_still_reported_missing(table_dir, warehouse):
    (path,) = glob.glob(os.path.join(table_dir, "bucket-0", "*.parquet"))
    os.remove(path)
    with pytest.raises(CorruptMetadataError, match="missing"):
        _fresh_read(warehouse)


def test_partition_column_starting_with_dot_is_refused_at_create(catalog, warehouse):
    schema = pa.schema([("a", pa.int64()), (".x", pa.string())])
    with pytest.raises(InvalidArgumentError, match="hidden"):
        catalog.create_table("db.p", schema, partition_keys=[".x"])
    assert not os.path.exists(os.path.join(warehouse, "db.db", "p"))


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"data-file.external-paths": "d"}, "no scheme"),
        ({"file-index.range-bitmap.columns": "a"}, "not supported"),
        ({"bucket": "99999999999"}, "32-bit"),
        ({"bucket": "2147483648"}, "32-bit"),
    ],
)
def test_unsupported_options_and_out_of_range_bucket_are_refused(catalog, options, words):
    with pytest.raises(InvalidArgumentError, match=words):
        catalog.create_table("db.o", SCHEMA, options=options)


@pytest.mark.parametrize(
    "options",
    [
        {"bucket": "2147483647"},
        {"lookup.cache-max-memory-size": "1 gb"},  # a Paimon option dyntable does not declare
        {"dynamic-partition-overwrite": "false"},  # the same, without a dot
        {"parquet.block.size": "1024"},  # a format option
        {"dyntable.owner": "me"},  # a custom property
        {"fields.b.aggregate-function": "max"},
    ],
)
def test_paimon_options_pass_through(catalog, options):
    catalog.create_table("db.o", SCHEMA, options=options)


# -- defect 8: a LATEST hint ahead of every snapshot file -------------------------------------------


def _three_snapshots(catalog):
    t = catalog.create_table("db.s", SCHEMA)
    for i in range(3):
        t.write_arrow(pa.table({"a": [i], "b": ["v"]}, schema=SCHEMA))
    return t


def test_deleted_latest_snapshot_is_refused_and_its_id_not_reused(catalog, warehouse):
    _three_snapshots(catalog)
    snap_dir = os.path.join(warehouse, "db.db", "s", "snapshot")
    os.remove(os.path.join(snap_dir, "snapshot-3"))
    fresh = open_catalog(warehouse).get_table("db.s")
    with pytest.raises(CorruptMetadataError) as e:
        fresh.to_arrow()
    assert "LATEST" in str(e.value) and "snapshot-3" in str(e.value)
    with pytest.raises(CorruptMetadataError):
        fresh.write_arrow(pa.table({"a": [9], "b": ["w"]}, schema=SCHEMA))
    assert not os.path.exists(os.path.join(snap_dir, "snapshot-3"))


def test_every_snapshot_deleted_under_a_hint_is_refused(catalog, warehouse):
    _three_snapshots(catalog)
    snap_dir = os.path.join(warehouse, "db.db", "s", "snapshot")
    for i in (1, 2, 3):
        os.remove(os.path.join(snap_dir, f"snapshot-{i}"))
    with pytest.raises(CorruptMetadataError, match="no snapshot file is present"):
        open_catalog(warehouse).get_table("db.s").to_arrow()


def test_lagging_latest_hint_is_legitimate(catalog, warehouse):
    """A writer that died between publishing and moving LATEST leaves a hint that lags: fine."""
    _three_snapshots(catalog)
    with open(os.path.join(warehouse, "db.db", "s", "snapshot", "LATEST"), "w") as f:
        f.write("1")
    table = open_catalog(warehouse).get_table("db.s")
    assert table.latest_snapshot().id == 3
    assert table.to_arrow().num_rows == 3
    table.write_arrow(pa.table({"a": [9], "b": ["w"]}, schema=SCHEMA))
    assert table.latest_snapshot().id == 4


def test_expired_middle_snapshot_is_a_plain_not_found(catalog, warehouse):
    _three_snapshots(catalog)
    os.remove(os.path.join(warehouse, "db.db", "s", "snapshot", "snapshot-1"))
    table = open_catalog(warehouse).get_table("db.s")
    assert table.latest_snapshot().id == 3
    with pytest.raises(NoSuchSnapshotError):
        table.store.snapshots.get(1)
