"""Statement executors: one function per dyntable statement, looked up by AST node type."""

from __future__ import annotations

from typing import Any

from sqlext.execute import call, ddl, describe, dml, insert, refs, session_stmts, show_extended, views
from sqlext.parse import ast
from sqlext.parse.splitter import Statement


def _describe(s: Any, n: ast.DescribeTable, stmt: Statement) -> Any:
    """DESCRIBE of a dyntable view (describe.py knows tables); anything else as before."""
    view = views.view_of(s, n.table) if n.partition is None else None
    if view is not None:
        return views.describe_view(s, view, n, stmt)
    return describe.describe_table(s, n, stmt)


def _show_create(s: Any, n: ast.ShowCreateTable, stmt: Statement) -> Any:
    view = views.view_of(s, n.table)
    if view is not None:
        return views.show_create_view(s, view, stmt)
    return describe.show_create_table(s, n, stmt)


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
    **show_extended.HANDLERS,
    ast.DescribeTable: _describe,
    ast.ShowCreateTable: _show_create,
    **views.HANDLERS,
    **call.HANDLERS,
    **refs.HANDLERS,
}

