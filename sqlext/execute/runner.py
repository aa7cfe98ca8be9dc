"""The session's side of planning: the context planners read, and the runner that carries out plans.

``SessionContext`` answers ``PlannerContext`` from a live ``SqlSession`` (Spark, the catalog, the
session's views and jobs); ``PlanRunner`` turns a plan into the statement's result: rows become
a DataFrame, a session action changes the session, ``ToEngine`` hands the text to Spark. Both
belong to the session (``SqlSession.context`` / ``SqlSession.runner``); planners never see them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.errors import PySparkException

from engine import FileSystemCatalog, Identifier, Table
from engine.errors import BranchAlreadyExistsError, NoSuchPartitionError, TagAlreadyExistsError
from engine.types import DataType
from sqlext.errors import SqlAnalysisError, SqlError
from sqlext.execute import dml_data_evolution
from sqlext.execute.common import paimon_to_spark_ddl, spark_to_paimon, spark_type_name
from sqlext.execute.copy_into_run import run_copy_into, run_copy_to_location
from sqlext.execute.ddl_jobs import run_table_job
from sqlext.execute.dml import run_merge
from sqlext.execute.dml_deletion_vectors import mark_deletions
from sqlext.execute.planning import (
    AlterTable,
    BoundFrame,
    CallProcedure,
    CatalogAction,
    Column,
    CopyIntoTable,
    CopyToLocation,
    CreateBranch,
    CreateDatabase,
    CreateFormatTableAs,
    CreateTable,
    CreateTableAs,
    CreateTag,
    Done,
    DropDatabase,
    DropPartitions,
    DropTable,
    DropTags,
    FormatWrite,
    JobStatus,
    MarkDeletions,
    MergeInto,
    Plan,
    RefAction,
    RenameTable,
    RenameTag,
    ResetOption,
    RowLevelWrite,
    Rows,
    SetOption,
    StopJob,
    TableJob,
    ToEngine,
    TruncateTable,
    UpdateColumns,
    UseDatabase,
    ViewAction,
    Write,
    message_of,
)
from sqlext.execute.procedure_jobs import run_procedure
from sqlext.execute.results import StatementResult
from sqlext.execute.row_level_writes import run_on_engine, run_row_level_write, run_truncate
from sqlext.execute.views import run_view_action
from sqlext.execute.writes import run_write
from sqlext.parse.names import TableName, quoted
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition
from sqlext.source.format_tables import write_format_table
from sqlext.source.session_conf import session_conf
from sqlext.source.spark_types import spark_schema

if TYPE_CHECKING:
    from sqlext.session import SqlSession


class SessionContext:
    """``PlannerContext`` over a live session."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    @property
    def catalog(self) -> FileSystemCatalog:
        return self._session.catalog

    @property
    def current_database(self) -> str:
        return self._session.current_database

    @property
    def options(self) -> Mapping[str, str]:
        # Spark's configuration holds the spark.paimon.* keys too (SET writes them there, and a
        # notebook may call spark.conf.set directly): SQL statements see the same keys as the
        # session's DataFrame reads and writes.
        return {**session_conf(self._session.spark), **self._session.options}

    @property
    def streaming(self) -> bool:
        return self._session.streaming

    def is_managed(self, name: TableName) -> bool:
        return self._session.is_managed(name)

    def identifier(self, name: TableName) -> Identifier:
        return self._session.identifier(name)

    def table(self, name: TableName) -> Table:
        return self._session.table(name)

    def engine_has_table(self, name: str) -> bool:
        try:
            return bool(self._session.spark.catalog.tableExists(name))
        except Exception:  # noqa: BLE001 - a name Spark cannot even parse is no table of Spark's
            return False

    def frame(self, sql: str, stmt: Statement | None = None, *, streaming: bool = False) -> BoundFrame:
        frame, bound = self._session.bound_frame(sql, stmt, streaming=streaming)
        columns = tuple(
            Column(f.name, f.dataType.simpleString(), f.nullable, _paimon_type(f.dataType, f.nullable))
            for f in frame.schema.fields
        )
        return BoundFrame(frame, bound, columns, frame.isStreaming)

    def type_text(self, dtype: DataType) -> str:
        return spark_type_name(dtype)

    def cast_type(self, dtype: DataType) -> str:
        return paimon_to_spark_ddl(dtype)

    def engine_setting(self, key: str) -> str | None:
        try:
            return self._session.spark.conf.get(key, None)
        except Exception:  # noqa: BLE001 - a key Spark refuses to read is as good as unset
            return None

    def jobs(self) -> list[JobStatus]:
        return [JobStatus(j.job_id, j.status, j.statement) for j in self._session.jobs.values()]

    def view_listing(self, database: str, like: str | None) -> list[tuple[str, str, bool]]:
        from sqlext.execute.views import view_listing

        return view_listing(self._session, database, like)

    def views(self, database: str) -> list[ViewDefinition]:
        from sqlext.execute.views import list_views

        return list_views(self._session, database)

    def view_of(self, name: TableName) -> ViewDefinition | None:
        from sqlext.execute.views import view_of

        return view_of(self._session, name)

    def temporary_views(self) -> list[ViewDefinition]:
        return list(self._session.temp_views.values())

    def temporary_view(self, name: str) -> ViewDefinition | None:
        return self._session.temp_views.get(name.lower())

    def is_cached(self, name: str) -> bool:
        return name.lower() in self._session.cached

    def engine_temp_views(self) -> list[str]:
        from sqlext.execute.views import spark_temp_views

        return spark_temp_views(self._session)

    def schema_tree(self, schema: pa.Schema) -> str | None:
        struct = spark_schema(schema)
        return struct.treeString() if struct.fields else None

    def query_tree(self, sql: str) -> str | None:
        try:
            struct = self._session.frame(sql, None).schema
        except (SqlError, PySparkException):
            return None
        return struct.treeString() if struct.fields else None

    def engine_view_tree(self, name: str) -> str | None:
        try:
            struct = self._session.spark.table(quoted(name)).schema
        except PySparkException:
            return None
        return struct.treeString() if struct.fields else None

    def engine_view_information(self, pattern: str) -> dict[str, str]:
        # Temporary views are listed whatever the database, so Spark's ``default`` is asked.
        escaped = pattern.replace("\\", "\\\\").replace("'", "\\'")
        try:
            found = self._session.spark.sql(f"SHOW TABLE EXTENDED IN default LIKE '{escaped}'").collect()
        except PySparkException:
            return {}
        return {r[1]: r[3] for r in found if r[2]}


def _paimon_type(spark_type: object, nullable: bool) -> DataType | None:
    """A Spark type as a Paimon type, or None where there is none (NULL's own type, intervals)."""
    try:
        return spark_to_paimon(spark_type, nullable)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - any type the mapping refuses has no Paimon type
        return None


def _ref_action(action: RefAction) -> str:
    """Apply a tag or branch action; the message says what happened."""
    refs = action.table.refs
    if isinstance(action, CreateTag):
        if action.replace:
            refs.tags.replace(action.tag, action.version, action.retain)
            return f"Tag '{action.tag}' replaced"
        try:
            refs.tags.create(action.tag, action.version, action.retain)
        except TagAlreadyExistsError:
            if not action.if_not_exists:
                raise
            return f"Tag '{action.tag}' exists already"
        return f"Tag '{action.tag}' created"
    if isinstance(action, DropTags):
        return f"Dropped tag(s) {', '.join(refs.tags.delete(list(action.tags)).tags)}"
    if isinstance(action, RenameTag):
        refs.tags.rename(action.old, action.new)
        return action.message
    if isinstance(action, CreateBranch):
        try:
            refs.branches.create(action.branch, from_tag=action.from_tag, from_snapshot=action.from_snapshot)
        except BranchAlreadyExistsError:
            if not action.if_not_exists:
                raise
            return f"Branch '{action.branch}' exists already"
        return f"Branch '{action.branch}' created"
    refs.branches.delete(action.branch)
    return action.message


class PlanRunner:
    """Carries out the plans of one session."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def run(self, plan: Plan, stmt: Statement) -> StatementResult:
        s = self._session
        if isinstance(plan, Rows):
            return StatementResult(stmt, s.arrow_frame(plan.table), plan.message)
        if isinstance(plan, Done):
            return StatementResult(stmt, None, plan.message)
        if isinstance(plan, ToEngine):
            if plan.row_level:
                return run_on_engine(s, stmt)
            frame = s.spark_sql(stmt.text, stmt) if plan.bind else s.spark.sql(stmt.text)
            return StatementResult(stmt, frame, None)
        if isinstance(plan, Write):
            return run_write(s, plan, stmt)
        if isinstance(plan, CopyIntoTable):
            return run_copy_into(s, plan, stmt)
        if isinstance(plan, CopyToLocation):
            return run_copy_to_location(s, plan, stmt)
        if isinstance(plan, FormatWrite):
            write_format_table(plan.frame.frame, self._session.catalog.io, plan.table, plan.expressions,
                               plan.overwrite, plan.static)
            return StatementResult(stmt, None, plan.message)
        if isinstance(plan, CreateFormatTableAs):
            self._catalog_action(plan.create)
            try:
                created = s.catalog.get_format_table(plan.create.identifier)
                assert created is not None
                write_format_table(plan.query.frame, s.catalog.io, created, plan.expressions, "none", {})
            except BaseException:
                s.catalog.drop_table(plan.create.identifier, ignore_if_not_exists=True)  # all or nothing
                raise
            return StatementResult(stmt, None, plan.message)
        if isinstance(plan, CreateTableAs):
            table = self._create_table(plan.create)
            try:
                return run_write(s, plan.write_for(table), stmt)
            except BaseException:
                s.catalog.drop_table(plan.create.identifier, ignore_if_not_exists=True)  # all or nothing
                raise
        if isinstance(plan, ViewAction):
            return run_view_action(s, plan, stmt)
        if isinstance(plan, TableJob):
            return StatementResult(stmt, None, run_table_job(s, plan, stmt))
        if isinstance(plan, RefAction):
            return StatementResult(stmt, None, _ref_action(plan))
        if isinstance(plan, CallProcedure):
            return StatementResult(stmt, s.arrow_frame(run_procedure(s, plan, stmt)), plan.message)
        if isinstance(plan, RowLevelWrite):
            return run_row_level_write(s, plan, stmt)
        if isinstance(plan, MarkDeletions):
            if plan.by_row_id:  # a data-evolution table: marked on its row-id ranges' anchor files
                return dml_data_evolution.delete(s, plan, stmt)
            return mark_deletions(s, plan, stmt)
        if isinstance(plan, UpdateColumns):
            return dml_data_evolution.update(s, plan, stmt)
        if isinstance(plan, TruncateTable):
            return run_truncate(s, plan, stmt)
        if isinstance(plan, MergeInto):
            return run_merge(s, plan, stmt)
        if isinstance(plan, DropPartitions):
            return StatementResult(stmt, None, self._drop_partitions(plan, stmt))
        if isinstance(plan, CatalogAction):
            self._catalog_action(plan)
            return StatementResult(stmt, None, plan.message)
        if isinstance(plan, SetOption):
            s.set_option(plan.key, plan.value)
        elif isinstance(plan, ResetOption):
            s.reset_option(plan.key)
        elif isinstance(plan, StopJob):
            job = s.jobs[plan.job_id]
            if job.query.isActive:
                job.query.stop()
        else:  # pragma: no cover - mypy proves the plans above are all there are
            raise TypeError(f"not a plan: {plan!r}")
        return StatementResult(stmt, None, message_of(plan))

    def _drop_partitions(self, plan: DropPartitions, stmt: Statement) -> str:
        table = self._session.catalog.get_table(plan.identifier)
        # Paimon: a full spec that matches nothing fails the whole statement (nothing dropped);
        # a partial spec drops every partition it matches, possibly none.
        try:
            result = table.drop_partitions(list(plan.specs), if_exists=plan.if_exists)
        except NoSuchPartitionError as e:
            raise SqlAnalysisError(
                f"{e} (use DROP IF EXISTS PARTITION to skip missing partitions)",
                line=stmt.line, column=stmt.column, sqlstate="428FT",
            ) from None
        return plan.message + ("" if result.snapshot_ids else " (nothing matched)")

    def _create_table(self, action: CreateTable) -> Table:
        if action.file_format is not None:
            raise TypeError("a format table is created by _catalog_action")  # pragma: no cover
        return self._session.catalog.create_table(
            action.identifier, list(action.fields), action.partition_keys, action.primary_keys,
            dict(action.options), action.comment,
        )

    def _catalog_action(self, action: CatalogAction) -> None:
        s = self._session
        catalog = s.catalog
        if isinstance(action, CreateDatabase):
            catalog.create_database(action.name)
        elif isinstance(action, DropDatabase):
            if action.name == s.current_database:
                s.current_database = "default"
            catalog.drop_database(action.name, ignore_if_not_exists=action.if_exists, cascade=action.cascade)
        elif isinstance(action, UseDatabase):
            s.current_database = action.name
        elif isinstance(action, CreateTable) and action.file_format is not None:
            catalog.create_format_table(action.identifier, list(action.fields), action.file_format,
                                        action.partition_keys, dict(action.options), action.comment)
        elif isinstance(action, CreateTable):
            self._create_table(action)
        elif isinstance(action, AlterTable) and catalog.get_format_table(action.identifier) is not None:
            catalog.alter_format_table(action.identifier, list(action.changes))
        elif isinstance(action, AlterTable):
            catalog.alter_table(action.identifier, list(action.changes))
        elif isinstance(action, RenameTable):
            catalog.rename_table(action.source, action.target)
        elif isinstance(action, DropTable):
            catalog.drop_table(action.identifier)
        else:  # pragma: no cover - DropPartitions is run above, with its own message
            raise TypeError(f"not a catalog action: {action!r}")
