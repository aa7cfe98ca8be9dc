"""Paimon's global system tables of a catalog: ``sys.tables``, ``sys.partitions``,
``sys.all_table_options`` and ``sys.catalog_options``.

One job: lay out the rows of Paimon 2.0's ``AllTablesTable``, ``AllPartitionsTable``,
``AllTableOptionsTable`` and ``CatalogOptionsTable`` for a file-system catalog. Invariants:

* every table of every database, in database then table name order; a table that vanishes or
  cannot be loaded while listing is skipped, as Java skips it;
* sizes come from each table's latest snapshot, aggregated per partition with pyarrow (one plan
  of the live files per table, no Python per file): ``sys.tables`` fills ``record_count``,
  ``file_size_in_bytes``, ``file_count`` and ``last_file_creation_time`` as Paimon's catalogs
  with version management do (Java's file-system catalog leaves them null); a table without a
  snapshot has nulls there, and ``sys.partitions`` lists only partitioned tables;
* ``last_file_creation_time`` is epoch milliseconds: the files' creation times are local
  wall-clock values (as Paimon stores them), converted with the local zone as Java converts them;
* ``owner`` / ``created_*`` / ``updated_*`` are the REST catalog's table options, null here
  unless a table carries them; ``table_type`` is the ``type`` option (default ``table``);
* ``sys.catalog_options`` lists the catalog options given, and exists only when
  ``catalog-options-table.enabled`` is true (Paimon's rule; otherwise NoSuchTableError).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from engine.arrow_types import to_arrow_field
from engine.errors import DyntableError, NoSuchTableError
from engine.store import FileStore, OverStore
from engine.system_tables.files import read_partitions
from engine.types import BIGINT, BOOLEAN, STRING, DataField

SYSTEM_DATABASE = "sys"


class Catalog(Protocol):
    """What the global tables read of a catalog (``engine.catalog.FileSystemCatalog``, which sits
    above: named here by what it does)."""

    def list_databases(self) -> list[str]: ...

    def list_tables(self, database: str) -> list[str]: ...

    def get_table(self, identifier: str) -> OverStore: ...


CATALOG_OPTIONS_TABLE_ENABLED = "catalog-options-table.enabled"


def _schema(*columns: tuple[str, object]) -> pa.Schema:
    return pa.schema([to_arrow_field(DataField(i, n, t)) for i, (n, t) in enumerate(columns)])  # type: ignore[arg-type]


GLOBAL_SCHEMAS: dict[str, pa.Schema] = {
    "tables": _schema(
        ("database_name", STRING()),
        ("table_name", STRING()),
        ("table_type", STRING()),
        ("partitioned", BOOLEAN()),
        ("primary_key", BOOLEAN()),
        ("owner", STRING()),
        ("created_at", BIGINT()),
        ("created_by", STRING()),
        ("updated_at", BIGINT()),
        ("updated_by", STRING()),
        ("record_count", BIGINT()),
        ("file_size_in_bytes", BIGINT()),
        ("file_count", BIGINT()),
        ("last_file_creation_time", BIGINT()),
    ),
    "partitions": _schema(
        ("database_name", STRING()),
        ("table_name", STRING()),
        ("partition_name", STRING()),
        ("record_count", BIGINT()),
        ("file_size_in_bytes", BIGINT()),
        ("file_count", BIGINT()),
        ("last_file_creation_time", BIGINT()),
        ("done", BOOLEAN()),
    ),
    "all_table_options": _schema(
        ("database_name", STRING()),
        ("table_name", STRING()),
        ("key", STRING()),
        ("value", STRING()),
    ),
    "catalog_options": _schema(("key", STRING(False)), ("value", STRING(False))),
}
#: The global system tables, in Paimon's order.
GLOBAL_TABLES: tuple[str, ...] = ("tables", "partitions", "all_table_options", "catalog_options")


def global_table_schema(name: str) -> pa.Schema:
    """The Arrow schema of ``sys.<name>``; NoSuchTableError for another name."""
    key = name.lower()
    if key not in GLOBAL_SCHEMAS:
        raise NoSuchTableError(
            f"table '{SYSTEM_DATABASE}.{name}' does not exist: the global system tables are "
            f"{', '.join(GLOBAL_TABLES)}"
        )
    return GLOBAL_SCHEMAS[key]


def _all_tables(catalog: Catalog) -> Iterator[tuple[str, str, FileStore]]:
    for database in sorted(catalog.list_databases()):
        try:
            names = sorted(catalog.list_tables(database))
        except DyntableError:
            continue  # dropped while listing
        for name in names:
            try:
                yield database, name, catalog.get_table(f"{database}.{name}").store
            except DyntableError:
                continue  # dropped while listing, or not loadable here: Java skips it too


def _epoch_millis(wall_clock: dt.datetime | None) -> int | None:
    if wall_clock is None:
        return None
    return int(wall_clock.astimezone().timestamp() * 1000)  # naive → the local zone, as Java


def _partitions(store: FileStore) -> pa.Table:
    return read_partitions(store, None)


def read_all_tables(catalog: Catalog) -> pa.Table:
    """``sys.tables``: one row per table of the catalog."""
    cols: dict[str, list[object]] = {name: [] for name in GLOBAL_SCHEMAS["tables"].names}
    for database, name, store in _all_tables(catalog):
        options = store.logical_schema.options
        parts = _partitions(store) if store.snapshots.latest() is not None else None
        created, updated = options.get("createdAt"), options.get("updatedAt")
        values: dict[str, object] = {
            "database_name": database,
            "table_name": name,
            "table_type": options.get("type", "table"),
            "partitioned": bool(store.logical_schema.partition_keys),
            "primary_key": bool(store.logical_schema.primary_keys),
            "owner": options.get("owner"),
            "created_by": options.get("createdBy"),
            "created_at": int(created) if created is not None else None,
            "updated_at": int(updated) if updated is not None else None,
            "updated_by": options.get("updatedBy"),
            "record_count": None,
            "file_size_in_bytes": None,
            "file_count": None,
            "last_file_creation_time": None,
        }
        if parts is not None:
            values["record_count"] = pc.sum(parts.column("record_count")).as_py() or 0
            values["file_size_in_bytes"] = pc.sum(parts.column("file_size_in_bytes")).as_py() or 0
            values["file_count"] = pc.sum(parts.column("file_count")).as_py() or 0
            values["last_file_creation_time"] = _epoch_millis(
                pc.max(parts.column("last_update_time")).as_py()
            )
        for key, value in values.items():
            cols[key].append(value)
    return pa.Table.from_pydict(cols, schema=GLOBAL_SCHEMAS["tables"])


def read_all_partitions(catalog: Catalog) -> pa.Table:
    """``sys.partitions``: one row per partition of every partitioned table."""
    chunks = []
    schema = GLOBAL_SCHEMAS["partitions"]
    for database, name, store in _all_tables(catalog):
        if not store.partition_keys or store.snapshots.latest() is None:
            continue
        parts = _partitions(store)
        n = parts.num_rows
        times = [_epoch_millis(t) for t in parts.column("last_update_time").to_pylist()]  # per partition
        chunks.append(
            pa.Table.from_arrays(
                [
                    pa.array([database] * n, pa.string()),
                    pa.array([name] * n, pa.string()),
                    parts.column("partition"),
                    parts.column("record_count"),
                    parts.column("file_size_in_bytes"),
                    parts.column("file_count"),
                    pa.array(times, pa.int64()),
                    parts.column("done"),
                ],
                schema=schema,
            )
        )
    return pa.concat_tables(chunks) if chunks else schema.empty_table()


def read_all_table_options(catalog: Catalog) -> pa.Table:
    """``sys.all_table_options``: every option of every table (its latest schema), then ``path``
    (the table's location), which Java's catalog adds to every table it loads."""
    cols: dict[str, list[str]] = {name: [] for name in GLOBAL_SCHEMAS["all_table_options"].names}
    for database, name, store in _all_tables(catalog):
        schema = store.schemas.latest() or store.schema
        items = [(k, v) for k, v in schema.options.items() if k != "path"] + [("path", store.paths.root)]
        for key, value in items:
            cols["database_name"].append(database)
            cols["table_name"].append(name)
            cols["key"].append(key)
            cols["value"].append(value)
    return pa.Table.from_pydict(cols, schema=GLOBAL_SCHEMAS["all_table_options"])


def read_catalog_options(options: Mapping[str, object]) -> pa.Table:
    """``sys.catalog_options``: the catalog's options, when ``catalog-options-table.enabled``."""
    if str(options.get(CATALOG_OPTIONS_TABLE_ENABLED, "false")).strip().lower() != "true":
        raise NoSuchTableError(
            f"table '{SYSTEM_DATABASE}.catalog_options' does not exist: set the catalog option "
            f"'{CATALOG_OPTIONS_TABLE_ENABLED}' = 'true' to list the catalog's options"
        )
    items = sorted((str(k), str(v)) for k, v in options.items())
    return pa.Table.from_pydict(
        {"key": [k for k, _ in items], "value": [v for _, v in items]},
        schema=GLOBAL_SCHEMAS["catalog_options"],
    )


def read_global_table(
    catalog: Catalog, name: str, catalog_options: Mapping[str, object]
) -> pa.Table:
    """The rows of ``sys.<name>`` (``catalog_options``: the options the catalog was opened with,
    including ``warehouse``)."""
    key = name.lower()
    global_table_schema(key)  # NoSuchTableError for an unknown name
    if key == "tables":
        return read_all_tables(catalog)
    if key == "partitions":
        return read_all_partitions(catalog)
    if key == "all_table_options":
        return read_all_table_options(catalog)
    return read_catalog_options(catalog_options)
