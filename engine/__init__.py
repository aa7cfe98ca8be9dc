"""dyntable's storage engine: Paimon-format tables on pyarrow, fastavro and fsspec (no Spark).

Public API::

    catalog = open_catalog("/path/to/warehouse")
    catalog.create_database("db")
    table = catalog.create_table("db.t", arrow_schema, partition_keys=["dt"], primary_keys=["dt", "id"])
    table.write_arrow(arrow_table)                       # one commit
    table.write_arrow(arrow_table, overwrite={"dt": "2024-01-01"})
    table.to_arrow(snapshot_id=None, columns=None, filter=None)

A distributed engine (the Spark source) goes through the builders, each step picklable::

    read = table.new_read_builder().at(tag="t1").with_projection(["id"]).with_filter(pred)
    splits = read.new_scan().plan().splits              # driver
    rows = read.new_read().read(split)                  # tasks
    write = table.new_write_builder(OverwriteSpec(dynamic=True))
    messages = write.new_task_write(job, task).write_all(batches)    # tasks
    write.new_commit().commit(messages)                 # driver: one snapshot, then the post-commit hooks

This module is the front door: the SQL layer (``sqlext``) imports the engine only from here and
from the modules of plain values ``engine.errors``, ``engine.types``, ``engine.options``,
``engine.identifier`` and ``engine.schema_changes``; ``lint-imports`` holds it to that allow-list
(pyproject.toml). Every other module is internal and may change.
"""

from engine.append_deletions import AppendDeletionCommit, RowIdChanges, group_positions
from engine.builders.aggregate import aggregate_from_metadata
from engine.builders.commit import CommitBuilder
from engine.builders.hooks import CompactionRunner, PostCommit
from engine.builders.read import ReadBuilder, TableRead
from engine.builders.stream import ReadLimits, StreamPosition
from engine.builders.write import JobAbortedError, TableWrite, WriteBuilder
from engine.builders.write_job import JobTasks, WriteJob
from engine.catalog import FileSystemCatalog, open_catalog
from engine.commit_messages import CommitMessage, CommitResult, OverwriteSpec
from engine.compaction import CompactionTask
from engine.compaction import run_task as run_compaction_task
from engine.count_layout import is_count_layout
from engine.default_values import default_text
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
    SchemaMergeError,
    StorageError,
    TableAlreadyExistsError,
    TagAlreadyExistsError,
)
from engine.format_table import FORMATS as FORMAT_TABLE_FORMATS
from engine.format_table import FormatTable, FormatTableError
from engine.format_table import refuse as refuse_format_table
from engine.identifier import Identifier
from engine.merge.config import MergeConfig
from engine.meta.paths import escape_path_name, partition_value_string
from engine.meta.row_ranges import is_data_evolution
from engine.meta.snapshot import CommitKind, Snapshot
from engine.option_checks import near_miss, validate_options
from engine.row_tracking import metadata_fields, metadata_names
from engine.scan import predicate
from engine.scan.incremental import ROWKIND, IncrementalQuery
from engine.scan.metadata_aggregate import MetadataAggregate, type_allows_minmax
from engine.scan.raw import ADD_KINDS
from engine.schema import TableSchema
from engine.system_tables import (
    DATA_TABLES,
    GLOBAL_TABLES,
    METADATA_TABLES,
    SYSTEM_DATABASE,
    binlog_schema,
    global_table_schema,
    read_global_table,
    read_system_table,
    system_table_columns,
    system_table_schema,
    to_binlog,
)
from engine.table import Table
from engine.write.conform import coerce_spec, coerce_value
from engine.write.data_evolution_update import ColumnUpdateWriter
from engine.write.kv_import import KvFileImport, SequenceStarts, StagedFile

__all__ = [
    # tables and catalogs
    "FileSystemCatalog",
    "FormatTable",
    "FormatTableError",
    "FORMAT_TABLE_FORMATS",
    "refuse_format_table",
    "Identifier",
    "Snapshot",
    "Table",
    "TableSchema",
    "default_text",
    "open_catalog",
    # the builders: read, write, commit (engine.builders)
    "CommitBuilder",
    "CommitMessage",
    "MetadataAggregate",
    "aggregate_from_metadata",
    "type_allows_minmax",
    "CommitResult",
    "CompactionRunner",
    "CompactionTask",
    "JobAbortedError",
    "JobTasks",
    "KvFileImport",
    "OverwriteSpec",
    "PostCommit",
    "ReadBuilder",
    "ReadLimits",
    "SequenceStarts",
    "StagedFile",
    "StreamPosition",
    "TableRead",
    "TableWrite",
    "WriteBuilder",
    "WriteJob",
    "run_compaction_task",
    # values the SQL layer reads or shows
    "ADD_KINDS",
    "AppendDeletionCommit",
    "ColumnUpdateWriter",
    "RowIdChanges",
    "group_positions",
    "is_data_evolution",
    "ROWKIND",
    "IncrementalQuery",
    "CommitKind",
    "MergeConfig",
    "coerce_spec",
    "coerce_value",
    "escape_path_name",
    "is_count_layout",
    "partition_value_string",
    "predicate",
    "metadata_fields",
    "metadata_names",
    # system tables
    "DATA_TABLES",
    "GLOBAL_TABLES",
    "SYSTEM_DATABASE",
    "global_table_schema",
    "read_global_table",
    "binlog_schema",
    "to_binlog",
    "METADATA_TABLES",
    "read_system_table",
    "system_table_columns",
    "system_table_schema",
    # errors (the whole tree is in engine.errors)
    "AlreadyExistsError",
    "BranchAlreadyExistsError",
    "CommitConflictError",
    "CommitStateUnknownError",
    "CorruptMetadataError",
    "DatabaseAlreadyExistsError",
    "DyntableError",
    "InvalidArgumentError",
    "NoSuchBranchError",
    "NoSuchColumnError",
    "NoSuchDatabaseError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchTagError",
    "NotFoundError",
    "SchemaMergeError",
    "StorageError",
    "TableAlreadyExistsError",
    "TagAlreadyExistsError",
    "near_miss",
    "validate_options",
]
