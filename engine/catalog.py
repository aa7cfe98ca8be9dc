"""The file-system catalog: ``<warehouse>/<database>.db/<table>/``.

Databases are directories with the ``.db`` suffix; a table is a directory holding ``schema/``.
The catalog owns naming and lifecycle (create, drop with its storage, rename, alter schema);
everything inside a table belongs to :class:`engine.table.Table`.

Catalog options: ``table-default.<key>`` become default options of new tables; any other
options are passed to fsspec as storage options (e.g. ``client_kwargs`` for S3).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from engine.count_layout import is_count_layout, physical_create_args
from engine.errors import (
    DatabaseAlreadyExistsError,
    InvalidArgumentError,
    NoSuchDatabaseError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from engine.format_table import (
    FORMAT_KEY,
    SPARK_NATIVE,
    FormatTable,
    alter_format_table,
    format_table_options,
    is_format_table,
    refuse,
    stored_options,
)
from engine.identifier import DEFAULT_DATABASE, Identifier, validate_name
from engine.io import FileIO
from engine.meta.paths import TablePaths, join
from engine.meta.schema_store import SchemaStore
from engine.option_checks import validate_options
from engine.options import BUCKET
from engine.schema import TableSchema
from engine.schema_changes import SchemaChange
from engine.table import Table
from engine.types import DataField, DataType

TABLE_DEFAULT_PREFIX = "table-default."
DB_SUFFIX = ".db"


def open_catalog(warehouse: str, **options: object) -> FileSystemCatalog:
    """Open (creating if needed) a warehouse directory as a catalog."""
    return FileSystemCatalog(warehouse, **options)


def _default_options(options: Mapping[str, object]) -> dict[str, str]:
    return {
        k[len(TABLE_DEFAULT_PREFIX) :]: str(v)
        for k, v in options.items()
        if k.startswith(TABLE_DEFAULT_PREFIX)
    }


class FileSystemCatalog:
    """Databases and tables under one warehouse path (local, s3://, memory://, any fsspec URL)."""

    def __init__(self, warehouse: str, **options: Any) -> None:
        if not warehouse:
            raise InvalidArgumentError("a warehouse path is required")
        storage = {k: v for k, v in options.items() if not k.startswith(TABLE_DEFAULT_PREFIX)}
        self.io = FileIO.for_path(warehouse, **storage)
        self.warehouse = warehouse.rstrip("/") if "://" in warehouse else _absolute(warehouse)
        self.table_defaults = _default_options(options)
        self.io.mkdirs(self.warehouse)

    # -- databases ------------------------------------------------------------------------------
    def database_path(self, name: str) -> str:
        return join(self.warehouse, validate_name("database", name) + DB_SUFFIX)

    def database_exists(self, name: str) -> bool:
        return self.io.exists(self.database_path(name))

    def list_databases(self) -> list[str]:
        names = []
        for status in self.io.list_dir(self.warehouse):
            base = status.path.rstrip("/").rsplit("/", 1)[-1]
            if status.is_dir and base.endswith(DB_SUFFIX):
                names.append(base[: -len(DB_SUFFIX)])
        return sorted(names)

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        path = self.database_path(name)
        if self.io.exists(path):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database '{name}' already exists")
        self.io.mark_directory(path)

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        path = self.database_path(name)
        if not self.io.exists(path):
            if ignore_if_not_exists:
                return
            raise NoSuchDatabaseError(f"database '{name}' does not exist")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise InvalidArgumentError(
                f"database '{name}' is not empty ({len(tables)} table(s)); drop its tables first or use "
                "CASCADE"
            )
        self.io.delete_dir(path, recursive=True)

    def _require_database(self, name: str) -> None:
        if not self.database_exists(name):
            if name == DEFAULT_DATABASE:
                self.io.mark_directory(self.database_path(name))
                return
            raise NoSuchDatabaseError(
                f"database '{name}' does not exist; create it with CREATE DATABASE {name}"
            )

    # -- tables ---------------------------------------------------------------------------------
    def _identifier(self, identifier: str | Identifier) -> Identifier:
        return identifier if isinstance(identifier, Identifier) else Identifier.parse(identifier)

    def table_path(self, identifier: str | Identifier) -> str:
        ident = self._identifier(identifier)
        return join(self.database_path(ident.database), ident.table)

    def table_exists(self, identifier: str | Identifier) -> bool:
        return self.io.exists(join(self.table_path(identifier), "schema"))

    def list_tables(self, database: str) -> list[str]:
        path = self.database_path(database)
        if not self.io.exists(path):
            raise NoSuchDatabaseError(f"database '{database}' does not exist")
        names = []
        for status in self.io.list_dir(path):
            if status.is_dir and self.io.exists(join(status.path, "schema")):
                names.append(status.path.rstrip("/").rsplit("/", 1)[-1])
        return sorted(names)

    def create_table(
        self,
        identifier: str | Identifier,
        schema: pa.Schema | Sequence[DataField] | Sequence[tuple[str, DataType]],
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Create a table; the returned Table is ready to write."""
        ident = self._identifier(identifier)
        if ident.branch or ident.system_table:
            raise InvalidArgumentError(f"cannot create '{ident.full_name}': create the base table instead")
        self._require_database(ident.database)
        opts = {**self.table_defaults, **{k: str(v) for k, v in (options or {}).items()}}
        # Primary-key / partition options given Paimon-style as table options.
        if not primary_keys and opts.get("primary-key"):
            primary_keys = [c.strip() for c in opts.pop("primary-key").split(",") if c.strip()]
        else:
            opts.pop("primary-key", None)
        if not partition_keys and opts.get("partition"):
            partition_keys = [c.strip() for c in opts.pop("partition").split(",") if c.strip()]
        else:
            opts.pop("partition", None)
        # Persist the bucket mode explicitly, so readers with other defaults agree with us.
        opts.setdefault(BUCKET.key, str(BUCKET.default))
        opts.setdefault("file.format", "parquet")
        validate_options(opts)
        table_schema = TableSchema.create(schema, partition_keys, primary_keys, opts, comment)
        _refuse_hidden_partition_columns(table_schema.partition_keys)
        bucketed_append = not table_schema.primary_keys and not is_count_layout(table_schema)
        if bucketed_append and int(opts["bucket"]) > 0 and "bucket-key" not in opts:
            # Bucketed append tables hash a bucket key (Java Paimon requires one): the atomic columns.
            atomic = [f.name for f in table_schema.fields if not f.type.is_unordered]
            if not atomic:
                raise InvalidArgumentError(
                    "a bucketed table needs at least one column of an atomic type to hash"
                )
            opts["bucket-key"] = ",".join(atomic)
            table_schema = TableSchema.create(schema, partition_keys, primary_keys, opts, comment)
        if is_count_layout(table_schema):
            if primary_keys:
                raise InvalidArgumentError(
                    "'retractions.enabled' is for tables without a primary key (primary-key tables accept "
                    "retractions already)"
                )
            fields, keys, opts = physical_create_args(
                list(table_schema.fields), table_schema.partition_keys, opts
            )
            table_schema = TableSchema.create(fields, table_schema.partition_keys, keys, opts, comment)
        if table_schema.primary_keys and int(opts["bucket"]) < 1 and int(opts["bucket"]) not in (-1, -2):
            raise InvalidArgumentError(
                "primary-key tables need a fixed bucket count ('bucket' >= 1), dynamic buckets (-1) or "
                "postpone buckets (-2)"
            )
        if not table_schema.primary_keys and int(opts["bucket"]) == -2:
            raise InvalidArgumentError(
                "the postpone bucket mode ('bucket' = '-2') is for primary-key tables, as in Paimon")
        path = self.table_path(ident)
        if self.table_exists(ident):
            if ignore_if_exists:
                return self.get_table(ident)
            raise TableAlreadyExistsError(f"table '{ident.full_name}' already exists")
        store = SchemaStore(self.io, TablePaths(path))
        try:
            store.create(table_schema)
        except TableAlreadyExistsError:
            if ignore_if_exists:
                return self.get_table(ident)
            raise TableAlreadyExistsError(f"table '{ident.full_name}' already exists") from None
        return self.get_table(ident)

    def get_table(self, identifier: str | Identifier) -> Table:
        """Load a table (``db.t``, or ``db.t$branch_b`` for a branch)."""
        ident = self._identifier(identifier)
        if ident.system_table:
            raise InvalidArgumentError(
                f"'{ident.full_name}' is a system table; use engine.system_tables to read it"
            )
        path = self.table_path(ident)
        paths = TablePaths(path, ident.branch or "main")
        schema = SchemaStore(self.io, paths).latest()
        if schema is None:
            if ident.branch and self.table_exists(ident.base()):
                from engine.errors import NoSuchBranchError

                raise NoSuchBranchError(
                    f"branch '{ident.branch}' of table '{ident.base().full_name}' does not exist"
                )
            if not self.database_exists(ident.database):
                raise NoSuchTableError(
                    f"table '{ident.full_name}' does not exist (no database '{ident.database}')"
                )
            raise NoSuchTableError(f"table '{ident.full_name}' does not exist")
        if is_format_table(schema.options):
            raise refuse(ident.full_name, "reading or writing it as a Paimon data table")
        return Table(self, ident, self.io, paths, schema)

    def get_format_table(self, identifier: str | Identifier) -> FormatTable | None:
        """The format table of that name, or None when the table is a Paimon data table (or absent)."""
        ident = self._identifier(identifier)
        if ident.branch or ident.system_table:
            return None
        path = self.table_path(ident)
        schema = SchemaStore(self.io, TablePaths(path)).latest()
        if schema is None or not is_format_table(schema.options):
            return None
        options = stored_options(schema.options)
        location = options.get("path", path)  # LOCATION: an external table's files
        return FormatTable(ident, location.rstrip("/"), options[FORMAT_KEY], tuple(schema.fields),
                           tuple(schema.partition_keys), options, schema.comment)

    def create_format_table(
        self,
        identifier: str | Identifier,
        fields: Sequence[DataField],
        file_format: str,
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
    ) -> FormatTable:
        """Create a format table: its schema file as Paimon stores one (``type = format-table``,
        ``file.format``); its files go under the table's directory (``engine.format_table``)."""
        ident = self._identifier(identifier)
        if ident.branch or ident.system_table:
            raise InvalidArgumentError(f"cannot create '{ident.full_name}': create the base table instead")
        self._require_database(ident.database)
        opts = format_table_options(file_format, {k: str(v) for k, v in (options or {}).items()})
        # The data-table option checks do not apply to a format table's own keys (its file.format
        # is not a data file format of dyntable's): checked without them, stored with them.
        checked = {k: v for k, v in opts.items()
                   if k not in (FORMAT_KEY, "type", "file.compression") and k.lower() not in SPARK_NATIVE}
        table_schema = TableSchema.create(list(fields), partition_keys, (), checked, comment)
        table_schema = replace(table_schema, options={k: v for k, v in opts.items()})
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"table '{ident.full_name}' already exists")
        SchemaStore(self.io, TablePaths(self.table_path(ident))).create(table_schema)
        table = self.get_format_table(ident)
        assert table is not None
        return table

    def drop_table(self, identifier: str | Identifier, ignore_if_not_exists: bool = False) -> None:
        """Drop a table and delete its storage."""
        ident = self._identifier(identifier)
        if not self.table_exists(ident):
            if ignore_if_not_exists:
                return
            raise NoSuchTableError(f"table '{ident.full_name}' does not exist")
        self.io.delete_dir(self.table_path(ident), recursive=True)

    def rename_table(self, source: str | Identifier, target: str | Identifier) -> None:
        src, dst = self._identifier(source), self._identifier(target)
        if not self.table_exists(src):
            raise NoSuchTableError(f"table '{src.full_name}' does not exist")
        if self.table_exists(dst) or self.io.exists(self.table_path(dst)):
            raise TableAlreadyExistsError(f"table '{dst.full_name}' already exists")
        self._require_database(dst.database)
        if not self.io.rename(self.table_path(src), self.table_path(dst)):
            raise TableAlreadyExistsError(f"table '{dst.full_name}' already exists")

    def alter_table(
        self,
        identifier: str | Identifier,
        changes: Sequence[SchemaChange],
        *,
        allow_immutable: Collection[str] = (),
    ) -> Table:
        """Apply schema changes (options, columns) as one new schema version.

        ``allow_immutable``: immutable options these changes may set anyway (a rescale rewriting
        every file changes ``bucket``)."""
        table = self.get_table(identifier)
        table.store.schemas.commit_change(
            lambda latest: latest.apply_changes(changes, allow_immutable=allow_immutable)
        )
        return self.get_table(identifier)

    def alter_format_table(self, identifier: str | Identifier,
                           changes: Sequence[SchemaChange]) -> FormatTable:
        """Set or remove options (or the comment) of a format table: one new schema version."""
        fmt = self.get_format_table(identifier)
        if fmt is None:
            raise NoSuchTableError(f"no format table '{self._identifier(identifier).full_name}'")
        SchemaStore(self.io, TablePaths(fmt.location)).commit_change(
            lambda latest: alter_format_table(fmt.name, latest, changes))
        altered = self.get_format_table(identifier)
        assert altered is not None
        return altered


def _refuse_hidden_partition_columns(keys: Sequence[str]) -> None:
    # A partition column becomes the directory name ``<column>=<value>``; Hadoop, Spark and Hive
    # listings treat a name starting with '.' as hidden, so such a partition would vanish from
    # tools that walk the table directory (and orphan cleaners that skip hidden entries).
    hidden = [k for k in keys if k.startswith(".")]
    if hidden:
        raise InvalidArgumentError(
            f"partition column(s) {hidden} start with '.', which would make every partition a hidden "
            "directory; rename the column"
        )


def _absolute(path: str) -> str:
    import os

    return os.path.abspath(os.path.expanduser(path))
