"""The row type of every metadata system table, as Paimon declares it (``docs/design/format-notes.md`` §12).

One job: name, order, type and nullability of each column, and turning column lists into an
Arrow table of exactly that schema. Invariants: column names (including Java's camelCase
``deleteRowCount``, ``mergedRecordCount``) and order match Paimon's ``*Table.TABLE_TYPE``
(``$files`` adds one column after them, ``deletion_vector_cardinality``); a ``!`` (NOT NULL) column is
a non-nullable Arrow field and never receives a null; TIMESTAMP(3) is ``pa.timestamp("ms")``
without a zone (a wall-clock value, see the package docstring for which clock).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from engine.arrow_types import to_arrow_field
from engine.errors import InvalidArgumentError
from engine.types import ARRAY, BIGINT, BOOLEAN, INT, ROW, STRING, TIMESTAMP, DataField, DataType


def _row(*columns: tuple[str, DataType]) -> tuple[DataField, ...]:
    return tuple(DataField(i, name, dtype) for i, (name, dtype) in enumerate(columns))


def _ts(nullable: bool = True) -> DataType:
    return TIMESTAMP(3, nullable)


_NN = False  # readability: "not null"

ROW_TYPES: dict[str, tuple[DataField, ...]] = {
    "snapshots": _row(
        ("snapshot_id", BIGINT(_NN)),
        ("schema_id", BIGINT(_NN)),
        ("commit_user", STRING(_NN)),
        ("commit_identifier", BIGINT(_NN)),
        ("commit_kind", STRING(_NN)),
        ("commit_time", _ts(_NN)),
        ("base_manifest_list", STRING(_NN)),
        ("delta_manifest_list", STRING(_NN)),
        ("changelog_manifest_list", STRING()),
        ("total_record_count", BIGINT()),
        ("delta_record_count", BIGINT()),
        ("changelog_record_count", BIGINT()),
        ("watermark", BIGINT()),
        ("next_row_id", BIGINT()),
        ("operation", STRING()),
        ("writer_version", STRING()),
    ),
    "schemas": _row(
        ("schema_id", BIGINT(_NN)),
        ("fields", STRING(_NN)),
        ("partition_keys", STRING(_NN)),
        ("primary_keys", STRING(_NN)),
        ("options", STRING(_NN)),
        ("comment", STRING()),
        ("update_time", _ts(_NN)),
    ),
    "options": _row(("key", STRING(_NN)), ("value", STRING(_NN))),
    "tags": _row(
        ("tag_name", STRING(_NN)),
        ("snapshot_id", BIGINT(_NN)),
        ("schema_id", BIGINT(_NN)),
        ("commit_time", _ts(_NN)),
        ("record_count", BIGINT()),
        ("create_time", _ts()),
        ("time_retained", STRING()),
    ),
    "branches": _row(("branch_name", STRING(_NN)), ("create_time", _ts(_NN))),
    "files": _row(
        ("partition", STRING()),
        ("bucket", INT(_NN)),
        ("file_path", STRING(_NN)),
        ("file_format", STRING(_NN)),
        ("schema_id", BIGINT(_NN)),
        ("level", INT(_NN)),
        ("record_count", BIGINT(_NN)),
        ("file_size_in_bytes", BIGINT(_NN)),
        ("min_key", STRING()),
        ("max_key", STRING()),
        ("null_value_counts", STRING(_NN)),
        ("min_value_stats", STRING(_NN)),
        ("max_value_stats", STRING(_NN)),
        ("min_sequence_number", BIGINT()),
        ("max_sequence_number", BIGINT()),
        ("creation_time", _ts()),
        ("deleteRowCount", BIGINT()),
        ("file_source", STRING()),
        ("first_row_id", BIGINT()),
        ("write_cols", ARRAY(STRING())),
        # dyntable's addition after Paimon's columns: rows the file's deletion vector marks (null: none).
        ("deletion_vector_cardinality", BIGINT()),
    ),
    "manifests": _row(
        ("file_name", STRING(_NN)),
        ("file_size", BIGINT(_NN)),
        ("num_added_files", BIGINT(_NN)),
        ("num_deleted_files", BIGINT(_NN)),
        ("schema_id", BIGINT(_NN)),
        ("min_partition_stats", STRING()),
        ("max_partition_stats", STRING()),
        ("min_row_id", BIGINT()),
        ("max_row_id", BIGINT()),
    ),
    "partitions": _row(
        ("partition", STRING()),
        ("record_count", BIGINT(_NN)),
        ("file_size_in_bytes", BIGINT(_NN)),
        ("file_count", BIGINT(_NN)),
        ("last_update_time", _ts()),
        ("created_at", _ts()),
        ("created_by", STRING()),
        ("updated_by", STRING()),
        ("options", STRING()),
        ("total_buckets", INT(_NN)),
        ("done", BOOLEAN(_NN)),
        ("deleted_record_count", BIGINT()),
    ),
    "buckets": _row(
        ("partition", STRING()),
        ("bucket", INT(_NN)),
        ("record_count", BIGINT(_NN)),
        ("file_size_in_bytes", BIGINT(_NN)),
        ("file_count", BIGINT(_NN)),
        ("last_update_time", _ts()),
    ),
    "consumers": _row(("consumer_id", STRING(_NN)), ("next_snapshot_id", BIGINT(_NN))),
    "file_key_ranges": _row(
        ("partition", STRING()),
        ("bucket", INT(_NN)),
        ("file_path", STRING(_NN)),
        ("file_format", STRING(_NN)),
        ("schema_id", BIGINT(_NN)),
        ("level", INT(_NN)),
        ("record_count", BIGINT(_NN)),
        ("file_size_in_bytes", BIGINT(_NN)),
        ("min_key", STRING()),
        ("max_key", STRING()),
        ("first_row_id", BIGINT()),
    ),
    "table_indexes": _row(
        ("partition", STRING()),
        ("bucket", INT(_NN)),
        ("index_type", STRING(_NN)),
        ("file_name", STRING(_NN)),
        ("file_size", BIGINT(_NN)),
        ("row_count", BIGINT(_NN)),
        # Paimon's DeletionVectorMeta row: data file name, offset, length, cardinality.
        ("dv_ranges", ARRAY(ROW(_row(
            ("f0", STRING(_NN)), ("f1", INT(_NN)), ("f2", INT(_NN)), ("_CARDINALITY", BIGINT()),
        )))),
        ("row_range_start", BIGINT()),
        ("row_range_end", BIGINT()),
        ("index_field_id", INT()),
        ("index_field_name", STRING()),
    ),
    "aggregation_fields": _row(
        ("field_name", STRING(_NN)),
        ("field_type", STRING(_NN)),
        ("function", STRING()),
        ("function_options", STRING()),
        ("comment", STRING()),
    ),
    "statistics": _row(
        ("snapshot_id", BIGINT(_NN)),
        ("schema_id", BIGINT(_NN)),
        ("mergedRecordCount", BIGINT()),
        ("mergedRecordSize", BIGINT()),
        ("colstat", STRING()),
    ),
    # dyntable's own (no Paimon counterpart): engine.system_tables.retention
    "retention": _row(
        ("object_type", STRING(_NN)),
        ("name", STRING(_NN)),
        ("snapshot_id", BIGINT()),
        ("file_size", BIGINT()),
        ("kept_by", STRING()),
        ("behind_retention_mark", BOOLEAN()),
        ("collectable_now", BOOLEAN(_NN)),
        ("collectable_after", _ts()),
    ),
    # dyntable's own (no Paimon counterpart): one row per maintenance run, engine.ops.maintenance_log
    "maintenance_log": _row(
        ("procedure", STRING(_NN)),
        ("trigger", STRING(_NN)),
        ("branch", STRING(_NN)),
        ("started_at", _ts(_NN)),
        ("duration_ms", BIGINT(_NN)),
        ("dry_run", BOOLEAN(_NN)),
        ("deleted_files", BIGINT(_NN)),
        ("deleted_bytes", BIGINT(_NN)),
        ("details", STRING()),
        ("error", STRING()),
    ),
}

#: The metadata system tables this module serves, in Paimon's documentation order.
METADATA_TABLES: tuple[str, ...] = (
    "snapshots", "schemas", "options", "tags", "branches",
    "files", "manifests", "partitions", "buckets", "consumers",
    "file_key_ranges", "table_indexes", "aggregation_fields", "statistics",
)  # fmt: skip
#: dyntable's own system tables (no Paimon counterpart), served like the metadata tables.
DYNTABLE_TABLES: tuple[str, ...] = ("retention", "maintenance_log")

_SCHEMAS: dict[str, pa.Schema] = {
    name: pa.schema([to_arrow_field(f) for f in row]) for name, row in ROW_TYPES.items()
}


def normalize_name(name: str) -> str:
    """The canonical (lower-case) system table name; InvalidArgumentError for an unknown one."""
    key = name.strip().lower() if isinstance(name, str) else ""
    if key.startswith("$"):
        key = key[1:]
    if key not in _SCHEMAS:
        raise InvalidArgumentError(
            f"unknown system table {name!r}; the metadata system tables are: "
            f"{', '.join(METADATA_TABLES + DYNTABLE_TABLES)}"
        )
    return key


def arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema of system table ``name`` (already normalized)."""
    return _SCHEMAS[name]


def build_table(name: str, columns: Mapping[str, Sequence[object] | pa.Array]) -> pa.Table:
    """An Arrow table of system table ``name`` from one value list (or array) per column.

    Columns not given are all-null (only allowed for nullable columns).
    """
    schema = _SCHEMAS[name]
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise AssertionError(f"system table {name}: columns of different lengths {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    arrays = []
    for field in schema:
        values = columns.get(field.name)
        if values is None:
            if not field.nullable:
                raise AssertionError(f"system table {name}: NOT NULL column {field.name} not given")
            arrays.append(pa.nulls(n, field.type))
        elif isinstance(values, (pa.Array, pa.ChunkedArray)):
            arrays.append(values.cast(field.type))
        else:
            arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)
