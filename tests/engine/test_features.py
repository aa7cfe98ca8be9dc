"""engine.features and external data paths: what dyntable refuses (0A000) and how it resolves paths."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.errors import UnsupportedTableError
from engine.features import FEATURES, check_file_readable, check_readable, check_writable
from engine.meta.paths import resolve_external_path
from engine.schema import TableSchema
from engine.types import type_from_json

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _schema(**options: str) -> TableSchema:
    """A schema carrying ``options`` as another engine wrote them (CREATE here refuses some)."""
    from dataclasses import replace

    return replace(TableSchema.create(ROWS, primary_keys=["id"]), options=options)


@pytest.mark.parametrize(
    ("path", "resolved"),
    [
        ("file:/tmp/wh/ext/data-1.parquet", "/tmp/wh/ext/data-1.parquet"),  # Hadoop's form (Java, pypaimon)
        ("file:///tmp/wh/ext/data-1.parquet", "/tmp/wh/ext/data-1.parquet"),
        ("file://localhost/tmp/ext/d.parquet", "/tmp/ext/d.parquet"),
        ("/tmp/wh/ext/data-1.parquet", "/tmp/wh/ext/data-1.parquet"),
    ],
)
def test_local_external_paths_resolve_in_every_form(path, resolved):
    assert resolve_external_path("/tmp/wh/db.db/t", path) == resolved
    assert resolve_external_path("file:///tmp/wh/db.db/t", path) == "file://" + resolved


def test_object_store_external_paths_take_the_root_scheme():
    assert resolve_external_path("s3://b/wh/db.db/t", "s3a://other/ext/d.parquet") == "s3://other/ext/d.parquet"
    assert resolve_external_path("s3://b/wh/db.db/t", "s3://b/ext/d.parquet") == "s3://b/ext/d.parquet"


@pytest.mark.parametrize(
    ("root", "path"),
    [
        ("/tmp/wh/db.db/t", "oss://bucket/ext/d.parquet"),  # another file system
        ("/tmp/wh/db.db/t", "ext/d.parquet"),  # relative: to what?
        ("/tmp/wh/db.db/t", "file://somehost/tmp/d.parquet"),  # a remote host
        ("s3://b/wh/db.db/t", "/tmp/ext/d.parquet"),
        ("s3://b/wh/db.db/t", "oss://b/ext/d.parquet"),
    ],
)
def test_unresolvable_external_paths_are_refused(root, path):
    with pytest.raises(UnsupportedTableError, match="external"):
        resolve_external_path(root, path)


@pytest.mark.parametrize("feature", FEATURES, ids=lambda f: f.key)
def test_every_feature_is_refused_at_write_and_named(feature):
    special = {"bucket": "-2", "file.format": "lance", "record-level.expire-time": "1 d"}
    value = special.get(feature.key, "true")
    schema = _schema(**{feature.key: value})
    with pytest.raises(UnsupportedTableError) as e:
        check_writable(schema, "t")
    message = str(e.value)
    assert feature.key in message and (feature.since is None or f"Paimon {feature.since}" in message)
    if feature.reads:
        check_readable(schema, "t")
    else:
        with pytest.raises(UnsupportedTableError, match=feature.key):
            check_readable(schema, "t")


def test_defaults_and_honoured_options_are_not_refused():
    schema = _schema(**{"deletion-vectors.enabled": "true", "deletion-vectors.merge-on-read": "true",
                        "deletion-vectors.bitmap64": "true", "metadata.stats-dense-store": "true",
                        "row-tracking.enabled": "false", "bucket": "2", "file.format": "orc"})
    check_readable(schema, "t")
    check_writable(schema, "t")


@pytest.mark.parametrize(("encoded", "since"), [
    ("BLOB NOT NULL", "1.4"),
    ({"type": "VECTOR", "element": "FLOAT", "length": 3, "nullable": True}, "1.4"),  # pypaimon's encoding
])
def test_newer_types_are_unsupported_features_not_corruption(encoded, since):
    with pytest.raises(UnsupportedTableError, match=f"Paimon {since}"):
        type_from_json(encoded)


def test_partial_column_files_outside_data_evolution_and_unknown_formats_are_refused_at_read():
    base = _data_file("data-1.parquet")
    check_file_readable(base, "t")
    check_file_readable(_data_file("data-1.orc"), "t")
    check_file_readable(_data_file("data-1.zstd.orc"), "t")  # file.suffix.include.compression
    with pytest.raises(UnsupportedTableError, match="_WRITE_COLS"):
        check_file_readable(_data_file("data-2.parquet", write_cols=("v",)), "t")
    # a batch read of a data-evolution table assembles such files (engine.read.data_evolution)
    check_file_readable(_data_file("data-2.parquet", write_cols=("v",)), "t", partial_columns=True)
    check_file_readable(_data_file("data-3.avro"), "t")  # Paimon's Avro layout (engine.meta.avro_data)
    with pytest.raises(UnsupportedTableError, match="'lance' format"):
        check_file_readable(_data_file("data-3.lance"), "t")


def _data_file(name: str, write_cols: tuple[str, ...] | None = None):
    from dataclasses import replace

    from engine.meta.manifest import DataFileMeta, SimpleStats

    meta = DataFileMeta(
        file_name=name, file_size=1, row_count=1, min_key=b"", max_key=b"", key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY, min_sequence_number=0, max_sequence_number=0, schema_id=0, level=0,
    )
    return replace(meta, write_cols=write_cols)


def test_remove_missing_files_drops_nothing_when_a_path_cannot_be_resolved(catalog, monkeypatch):
    """Fail closed: a live file whose _EXTERNAL_PATH names another file system is never called
    missing (it once was, and the snapshot without it lost the rows for every engine)."""
    from dataclasses import replace

    from engine.ops.missing_files import remove_missing_files

    t = catalog.create_table("db.x", ROWS)
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=ROWS))
    store = t.store
    live = store.live_entries(store.snapshots.latest())
    foreign = [replace(e, file=replace(e.file, external_path=f"oss://bucket/ext/{e.file.file_name}"))
               for e in live]
    monkeypatch.setattr(store, "live_entries", lambda snapshot, partition_filter=None: foreign)
    with pytest.raises(UnsupportedTableError, match="oss://bucket/ext"):
        remove_missing_files(store)
    assert store.snapshots.list_ids() == [1] and len(t.refresh().to_arrow()) == 2
