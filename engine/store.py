"""The one identity of a table below the facade: a table branch at one schema version.

A :class:`FileStore` is one table seen from one branch at one schema: its name, FileIO, paths,
snapshot/schema/manifest stores, the stored and the logical schema, and typed options. Every
engine module below ``engine.table`` takes it (never the ``Table`` facade, which wraps one store
and its catalog): builders, compaction, the post-commit hooks, maintenance, references and system
tables. It is cheap to build and picklable (Spark ships it to executors); the caches inside it
rebuild lazily. Deriving another view of the same table (:meth:`refresh`, :meth:`with_options`,
:meth:`with_schema`) keeps its name.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, Self

from engine.count_layout import is_count_layout, logical_schema
from engine.identifier import Identifier
from engine.io import FileIO
from engine.meta.manifest import ManifestEntry, live_files
from engine.meta.manifest_store import ManifestStore
from engine.meta.paths import MAIN_BRANCH, TablePaths, partition_path
from engine.meta.schema_store import SchemaStore
from engine.meta.snapshot import Snapshot
from engine.meta.snapshot_store import SnapshotStore
from engine.option_checks import validate_options
from engine.options import DATA_FILE_PATH_DIRECTORY, CoreOptions
from engine.schema import TableSchema
from engine.types import DataType

BATCH_COMMIT_IDENTIFIER = 9223372036854775807  # Long.MAX_VALUE, as Paimon's batch writers use


@dataclass
class FileStore:
    """One table branch at one schema version."""

    io: FileIO
    paths: TablePaths
    schema: TableSchema
    #: A schema version not yet published (a merge-schema write, engine.schema_merge): ``schema`` is
    #: it plus the write's dynamic options; the commit carrying the write's data publishes it just
    #: before its snapshot.
    pending_schema: TableSchema | None = None
    #: The table's name in its catalog (None: a store opened from a path alone).
    identifier: Identifier | None = None
    snapshots: SnapshotStore = field(init=False)
    schemas: SchemaStore = field(init=False)
    manifests: ManifestStore = field(init=False)
    options: CoreOptions = field(init=False)

    def __post_init__(self) -> None:
        self.options = CoreOptions(self.schema.options)
        data_dir = self.options.get(DATA_FILE_PATH_DIRECTORY)  # Paimon: <table>/<dir>/<partition>/...
        if data_dir != self.paths.data_dir:
            self.paths = self.paths.with_data_dir(data_dir)
        self.snapshots = SnapshotStore(self.io, self.paths)
        self.schemas = SchemaStore(self.io, self.paths)
        self.manifests = ManifestStore(self.io, self.paths, codec=self.options.manifest_compression)

    @property
    def name(self) -> str:
        """The table's full name for messages (its path when it was opened without a name)."""
        return self.identifier.full_name if self.identifier is not None else self.paths.root

    @functools.cached_property
    def logical_schema(self) -> TableSchema:
        """The schema users see: for count-layout tables, without the stored key and count."""
        return logical_schema(self.schema) if is_count_layout(self.schema) else self.schema

    @property
    def branch(self) -> str:
        return self.paths.branch

    @property
    def is_main(self) -> bool:
        return self.paths.branch == MAIN_BRANCH

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return self.schema.partition_keys

    @property
    def partition_types(self) -> list[DataType]:
        return [self.schema.field(k).type for k in self.schema.partition_keys]

    @property
    def primary_keys(self) -> tuple[str, ...]:
        return self.schema.primary_keys

    @property
    def has_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    def partition_dir(self, values: Sequence[object]) -> str:
        """The directory (relative to the table) of a partition, as Java Paimon computes it."""
        opts = self.options
        return partition_path(self.partition_keys, values, self.partition_types,
                              opts.partition_default_name, opts.partition_legacy_name)

    def live_entries(
        self, snapshot: Snapshot | None, partition_filter: Callable[[bytes], bool] | None = None
    ) -> list[ManifestEntry]:
        """Live ADD entries of a snapshot, optionally only of the partitions ``partition_filter`` accepts."""
        if snapshot is None:
            return []
        entries: list[ManifestEntry] = []
        for meta in self.manifests.data_manifests(snapshot):
            for e in self.manifests.read_entries(meta.file_name):
                if partition_filter is None or partition_filter(e.partition):
                    entries.append(e)
        return live_files(entries)

    def schema_by_id(self, schema_id: int) -> TableSchema:
        if schema_id == self.schema.id:
            return self.schema  # also an unpublished one (pending_schema), which no reader asks for
        return self.schemas.get(schema_id)

    def with_schema(self, schema: TableSchema) -> FileStore:
        return FileStore(self.io, self.paths, schema, identifier=self.identifier)

    def refresh(self) -> FileStore:
        """This table at its latest schema version, without options given for one operation."""
        return self.with_schema(self.schemas.latest() or self.schema)

    def with_options(self, options: Mapping[str, str]) -> FileStore:
        """This table with ``options`` overriding its own (Paimon's dynamic options); nothing is stored.

        Raises:
            InvalidArgumentError: an unknown option or a bad value.
        """
        validate_options(options)
        schema = dataclasses.replace(self.schema, options={**self.schema.options, **options})
        return FileStore(self.io, self.paths, schema, self.pending_schema, self.identifier)

    def __getstate__(self) -> dict[str, object]:
        return {"io": self.io, "paths": self.paths, "schema": self.schema,
                "pending_schema": self.pending_schema, "identifier": self.identifier}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.io = state["io"]  # type: ignore[assignment]
        self.paths = state["paths"]  # type: ignore[assignment]
        self.schema = state["schema"]  # type: ignore[assignment]
        self.pending_schema = state.get("pending_schema")  # type: ignore[assignment]
        self.identifier = state.get("identifier")  # type: ignore[assignment]
        self.__post_init__()


class OverStore(Protocol):
    """What a builder hands back as its ``table``: the facade over a store (``engine.table.Table``),
    named here by what it does so that nothing below the facade names the facade. ``over(store)``
    is the same object over another view of the table (a snapshot's schema, write options)."""

    @property
    def store(self) -> FileStore: ...

    def over(self, store: FileStore) -> Self: ...


def store_of(table: FileStore | OverStore) -> FileStore:
    """The store of a table given as a store or as its facade (the functions the front door
    exports take either)."""
    return table if isinstance(table, FileStore) else table.store
