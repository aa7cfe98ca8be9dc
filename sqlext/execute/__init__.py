"""Statement executors: one function per dyntable statement, looked up by AST node type."""

from __future__ import annotations

from typing import Any

from sqlext.execute import call, ddl, describe, dml, insert, refs, session_stmts
from sqlext.parse import ast

HANDLERS: dict[type, Any] = {
    ast.CreateDatabase: ddl.create_database,
    ast.DropDatabase: ddl.drop_database,
    ast.UseDatabase: ddl.use_database,
    ast.CreateTable: ddl.create_table,
    ast.CreateTableLike: ddl.create_table_like,
    ast.DropTable: ddl.drop_table,
    ast.SetTableOptions: ddl.set_options,
    ast.ResetTableOptions: ddl.reset_options,
    ast.AddColumns: ddl.add_columns,
    ast.DropColumns: ddl.drop_columns,
    ast.RenameColumn: ddl.rename_column,
    ast.AlterColumn: ddl.alter_column,
    ast.RenameTable: ddl.rename_table,
    ast.DropPartitions: ddl.drop_partitions,
    ast.CompactTable: ddl.compact,
    ast.AddPrimaryKey: ddl.add_primary_key,
    ast.RescaleBuckets: ddl.rescale,
    ast.Insert: insert.insert,
    ast.SetOption: session_stmts.set_option,
    ast.ResetOption: session_stmts.reset_option,
    ast.ShowDatabases: session_stmts.show_databases,
    ast.ShowTables: session_stmts.show_tables,
    ast.ShowJobs: session_stmts.show_jobs,
    ast.StopJob: session_stmts.stop_job,
    **dml.HANDLERS,
    **describe.HANDLERS,
    **call.HANDLERS,
    **refs.HANDLERS,
}

