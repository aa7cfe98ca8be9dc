"""dyntable's storage engine: Paimon-format tables on pyarrow, fastavro and fsspec (no Spark).

Public API::

    catalog = open_catalog("/path/to/warehouse")
    catalog.create_database("db")
    table = catalog.create_table("db.t", arrow_schema, partition_keys=["dt"], primary_keys=["dt", "id"])
    table.write_arrow(arrow_table)                       # one commit
    table.write_arrow(arrow_table, overwrite={"dt": "2024-01-01"})
    table.to_arrow(snapshot_id=None, columns=None, filter=None)

The names below (and the modules ``engine.errors``, ``engine.types``, ``engine.options``,
``engine.identifier``, ``engine.schema``, ``engine.schema_changes``, ``engine.scan.predicate``,
``engine.system_tables``, ``engine.compaction`` and ``engine.ops``) are the engine's public API:
what the SQL layer and the Spark data source may use. Everything else (``engine.meta``,
``engine.lsm``, ``engine.io``, ``engine.store``, the reader/writer/planner modules) is internal
and may change; ``lint-imports`` enforces this for ``sqlext``. The data source's names — planning
(``TableScan``, ``DataSplit``, which splits Spark may read as plain Parquet: ``classify_raw``),
reading a split (``SplitReader``, ``ChangeReader``), writing in a
task (``new_writer``, ``FileNamer``) and committing (``FileStoreCommit``, ``CommitMessage``) —
are public because a distributed engine needs each step on its own.
"""

from engine.append_deletions import (
    AppendDeletionCommit,
    dv_scan_files,
    group_positions,
    writes_append_deletion_vectors,
)
from engine.catalog import FileSystemCatalog, open_catalog
from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage, CommitResult, OverwriteSpec, delete_uncommitted
from engine.count_layout import is_count_layout
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
from engine.merge.functions import MergeConfig
from engine.meta.paths import FileNamer, escape_path_name, partition_value_string
from engine.meta.snapshot import CommitKind, Snapshot
from engine.read.split_reader import SplitReader
from engine.scan import predicate
from engine.scan.incremental import (
    ROWKIND,
    ChangeReader,
    ChangeSplit,
    change_splits,
    diff_changes,
    range_splits,
    resolve_between,
)
from engine.scan.planner import DataSplit, Plan, TableScan, resolve_time_travel, store_at
from engine.scan.raw import ADD_KINDS, RawGroup, classify_raw, group_raw_files, needs_merge, table_reads_raw
from engine.schema import TableSchema
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore
from engine.table import Table
from engine.write.bucket_assigner import writer_clustering
from engine.write.conform import coerce_spec, coerce_value
from engine.write.factory import new_writer

__all__ = [
    "ADD_KINDS",
    "AppendDeletionCommit",
    "dv_scan_files",
    "group_positions",
    "writes_append_deletion_vectors",
    "BATCH_COMMIT_IDENTIFIER",
    "ROWKIND",
    "RawGroup",
    "classify_raw",
    "group_raw_files",
    "needs_merge",
    "table_reads_raw",
    "ChangeReader",
    "ChangeSplit",
    "FileNamer",
    "FileStore",
    "MergeConfig",
    "SplitReader",
    "change_splits",
    "coerce_spec",
    "coerce_value",
    "delete_uncommitted",
    "diff_changes",
    "escape_path_name",
    "is_count_layout",
    "new_writer",
    "partition_value_string",
    "range_splits",
    "resolve_between",
    "resolve_time_travel",
    "store_at",
    "writer_clustering",
    "AlreadyExistsError",
    "BranchAlreadyExistsError",
    "CommitConflictError",
    "CommitKind",
    "CommitMessage",
    "CommitResult",
    "CommitStateUnknownError",
    "CorruptMetadataError",
    "DataSplit",
    "DatabaseAlreadyExistsError",
    "DyntableError",
    "FileStoreCommit",
    "FileSystemCatalog",
    "Identifier",
    "InvalidArgumentError",
    "NoSuchBranchError",
    "NoSuchColumnError",
    "NoSuchDatabaseError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchTagError",
    "NotFoundError",
    "OverwriteSpec",
    "Plan",
    "Snapshot",
    "StorageError",
    "Table",
    "TableAlreadyExistsError",
    "TableScan",
    "TableSchema",
    "TagAlreadyExistsError",
    "open_catalog",
    "predicate",
]
