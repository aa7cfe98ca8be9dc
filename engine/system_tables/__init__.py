"""Paimon's metadata system tables (``t$snapshots``, ``t$files``, …) as Arrow tables.

One job: answer ``read_system_table(table, name)`` with the rows Java Paimon's system table of
that name would show, in its exact column names, order, types and nullability
(``docs/design/format-notes.md`` §12). The SQL layer only binds the result to a view.

Public API::

    METADATA_TABLES                      # the names served here
    GLOBAL_TABLES, global_table_schema(name), read_global_table(catalog, name, options)
                                         # the catalog's sys.tables, sys.partitions, ...
    system_table_schema(table, name)     # pa.Schema of one system table
    read_system_table(table, name, snapshot_id=None)   # pa.Table

Invariants:

* The table's branch is the one the ``Table`` object was opened on (tags, consumers, snapshots
  and schemas are per branch; ``$branches`` lists the whole table's branches).
* ``snapshot_id`` selects the snapshot of the file-based tables (``$files``, ``$manifests``,
  ``$partitions``, ``$buckets``, ``$file_key_ranges``, ``$table_indexes``, ``$statistics``;
  default latest, unknown id → NoSuchSnapshotError); the other
  tables describe all versions or the current state and ignore it.
* Cost: the file-based tables plan the chosen snapshot once (live files, not history);
  ``$snapshots``/``$schemas`` read one small file per version. No Python runs per row of table
  data.
* Times: TIMESTAMP(3) columns are naive ``pa.timestamp("ms")`` wall-clock values. Java shows
  snapshot/schema/tag commit times in the JVM's local zone; here those (true epoch) times are
  shown in **UTC**, so they do not depend on the machine's zone. Values Paimon stores as local
  wall-clock already (a file's ``_CREATION_TIME``, a tag's ``tagCreateTime``) are shown unchanged,
  as Java does.
* Partition text: ``$files``, ``$manifests`` and ``$buckets`` print partition rows as
  ``{v1, v2}`` (``{}`` when unpartitioned; ``null`` for a null value), so they join with each
  other; ``$partitions`` prints the path ``k1=v1/k2=v2`` ('' when unpartitioned). ``$partitions``
  and ``$buckets`` are sorted by that text (then bucket), as Java sorts them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from engine import row_tracking
from engine.errors import UnsupportedTableError
from engine.store import FileStore, OverStore, store_of
from engine.system_tables.binlog import binlog_schema, to_binlog
from engine.system_tables.catalog_tables import (
    GLOBAL_TABLES,
    SYSTEM_DATABASE,
    global_table_schema,
    read_global_table,
)
from engine.system_tables.columns import DYNTABLE_TABLES, METADATA_TABLES, arrow_schema, normalize_name
from engine.system_tables.files import read_buckets, read_files, read_manifests, read_partitions
from engine.system_tables.history import (
    read_branches,
    read_consumers,
    read_options,
    read_schemas,
    read_snapshots,
    read_tags,
)
from engine.system_tables.layout import read_file_key_ranges, read_table_indexes
from engine.system_tables.maintenance import read_maintenance_log
from engine.system_tables.retention import read_retention
from engine.system_tables.schema_info import read_aggregation_fields, read_statistics

if TYPE_CHECKING:
    from engine.scan.planner import DataSplit

_PER_SNAPSHOT: dict[str, Callable[[FileStore, int | None], pa.Table]] = {
    "files": read_files,
    "manifests": read_manifests,
    "partitions": read_partitions,
    "buckets": read_buckets,
    "file_key_ranges": read_file_key_ranges,
    "table_indexes": read_table_indexes,
    "statistics": read_statistics,
}
_WHOLE: dict[str, Callable[[FileStore], pa.Table]] = {
    "snapshots": read_snapshots,
    "schemas": read_schemas,
    "options": read_options,
    "tags": read_tags,
    "branches": read_branches,
    "consumers": read_consumers,
    "aggregation_fields": read_aggregation_fields,
    "retention": read_retention,
    "maintenance_log": read_maintenance_log,
}


def system_table_schema(table: FileStore | OverStore, name: str) -> pa.Schema:
    """The Arrow schema of a metadata system table (Paimon's columns, types and nullability).

    Args:
        table: The table whose system table it is (every table has the same system schemas).
        name: A name of :data:`METADATA_TABLES`, case-insensitive, with or without ``$``.

    Returns:
        The schema; NOT NULL columns are non-nullable fields.

    Raises:
        InvalidArgumentError: ``name`` is not a metadata system table (the message lists them).
        UnsupportedTableError: ``row_tracking`` (see :func:`refuse_row_tracking`).
    """
    if isinstance(name, str) and name.strip().lower().lstrip("$") == "row_tracking":
        refuse_row_tracking(store_of(table))
    return arrow_schema(normalize_name(name))


def read_system_table(table: FileStore | OverStore, name: str, snapshot_id: int | None = None) -> pa.Table:
    """The rows of ``table``'s system table ``name``.

    Args:
        table: The table (and branch) to describe: its store, or the ``Table`` over it.
        name: A name of :data:`METADATA_TABLES`, case-insensitive, with or without ``$``.
        snapshot_id: For the per-snapshot tables (``files``, ``manifests``, ``partitions``, ``buckets``,
            ``file_key_ranges``, ``table_indexes``, ``statistics``): the snapshot
            to describe (default: the latest). Ignored by the other tables.

    Returns:
        An Arrow table whose schema is :func:`system_table_schema` of ``name``; empty when the
        table has nothing of that kind (e.g. no snapshot yet).

    Raises:
        InvalidArgumentError: Unknown ``name``, or a ``snapshot_id`` that is not an integer.
        NoSuchSnapshotError: ``snapshot_id`` does not exist (never written, or expired).
        CorruptMetadataError: A metadata file is damaged.
    """
    store = store_of(table)
    if isinstance(name, str) and name.strip().lower().lstrip("$") == "row_tracking":
        refuse_row_tracking(store)
    key = normalize_name(name)
    reader = _PER_SNAPSHOT.get(key)
    if reader is not None:
        return reader(store, snapshot_id)
    return _WHOLE[key](store)


__all__ = [
    "DATA_TABLES",
    "DYNTABLE_TABLES",
    "GLOBAL_TABLES",
    "SYSTEM_DATABASE",
    "global_table_schema",
    "read_global_table",
    "binlog_schema",
    "to_binlog",
    "METADATA_TABLES",
    "read_optimized_splits",
    "refuse_row_tracking",
    "read_system_table",
    "system_table_columns",
    "system_table_schema",
]


DATA_TABLES: tuple[str, ...] = ("audit_log", "binlog", "ro", "row_tracking")


def refuse_row_tracking(store: FileStore) -> None:
    """``$row_tracking`` (Paimon 1.3: the table's rows with ``_ROW_ID`` and ``_SEQUENCE_NUMBER``,
    a data table like ``$ro``) exists only for tables with ``row-tracking.enabled``, as in Paimon.

    Raises:
        UnsupportedTableError: the table does not track row ids.
    """
    if not row_tracking.enabled(store.logical_schema):
        raise UnsupportedTableError(
            f"{store.name}$row_tracking: the table does not track row ids; Paimon serves $row_tracking"
            " only for tables created with 'row-tracking.enabled' = 'true'"
        )


def system_table_columns(table: FileStore | OverStore, name: str) -> list[str]:
    """Column names of any system table, including the data-sized ``$audit_log``, ``$binlog`` and
    ``$ro``."""
    store = store_of(table)
    fields = store.logical_schema.field_names
    key = name.lower().lstrip("$")
    if key == "row_tracking":
        refuse_row_tracking(store)
        return [*fields, *row_tracking.TRACKING_COLUMNS]
    if key in ("audit_log", "binlog"):
        return ["rowkind", *fields]
    if key == "ro":
        return list(fields)
    return list(system_table_schema(store, key).names)


def read_optimized_splits(store: FileStore, splits: list[DataSplit]) -> list[DataSplit]:
    """``$ro``: primary-key tables read only their fully compacted (top-level) files, unmerged."""
    if not store.has_primary_key:
        return splits
    top = store.options.num_levels - 1
    out = []
    for s in splits:
        files = tuple(f for f in s.files if f.level == top)
        if files:
            out.append(replace(s, files=files, raw_convertible=True))
    return out
