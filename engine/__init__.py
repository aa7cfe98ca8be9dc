"""dyntable's storage engine: Paimon-format tables on pyarrow, fastavro and fsspec (no Spark).

Public API::

    catalog = open_catalog("/path/to/warehouse")
    catalog.create_database("db")
    table = catalog.create_table("db.t", arrow_schema, partition_keys=["dt"], primary_keys=["dt", "id"])
    table.write_arrow(arrow_table)                       # one commit
    table.write_arrow(arrow_table, overwrite={"dt": "2024-01-01"})
    table.to_arrow(snapshot_id=None, columns=None, filter=None)
"""

from engine.catalog import FileSystemCatalog, open_catalog
from engine.commit import CommitMessage, CommitResult, FileStoreCommit, OverwriteSpec
from engine.errors import (
    AlreadyExistsError,
    BranchAlreadyExistsError,
    CommitConflictError,
    CommitStateUnknownError,
    CorruptMetadataError,
    DatabaseAlreadyExistsError,
    DyntableError,
    InvalidArgumentError,
    NoSuchBranchError,
    NoSuchColumnError,
    NoSuchDatabaseError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NoSuchTagError,
    NotFoundError,
    StorageError,
    TableAlreadyExistsError,
    TagAlreadyExistsError,
)
from engine.identifier import Identifier
from engine.meta.snapshot import CommitKind, Snapshot
from engine.scan import predicate
from engine.scan.planner import DataSplit, Plan, TableScan
from engine.schema import TableSchema
from engine.table import Table

__all__ = [
    "AlreadyExistsError", "BranchAlreadyExistsError", "CommitConflictError", "CommitKind", "CommitMessage",
    "CommitResult", "CommitStateUnknownError", "CorruptMetadataError", "DataSplit", "DatabaseAlreadyExistsError",
    "DyntableError", "FileStoreCommit", "FileSystemCatalog", "Identifier", "InvalidArgumentError",
    "NoSuchBranchError", "NoSuchColumnError", "NoSuchDatabaseError", "NoSuchSnapshotError", "NoSuchTableError",
    "NoSuchTagError", "NotFoundError", "OverwriteSpec", "Plan", "Snapshot", "StorageError", "Table",
    "TableAlreadyExistsError", "TableScan", "TableSchema", "TagAlreadyExistsError", "open_catalog", "predicate",
]
