"""Carrying out what a CALL procedure planned (``procedures.plans``): the runner's side of CALL.

The procedures themselves are planners (``sqlext.execute.procedures``): they name tables, check
arguments and return a plan. This module runs it over the live session: metadata work is called
as it is; a ``where`` argument's partitions are found by Spark over the partition list;
compactions run as Spark jobs (one task per bucket); rescale, copy and migration read with Spark
and write through the one write path (``writes.write_frame``). The result is cast to the
procedure's output schema, and an error about one argument points at where it is written.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.errors import PySparkException

from engine import CommitResult, OverwriteSpec, Table
from engine.arrow_types import to_arrow_type
from sqlext.errors import ProcedureArgumentError, SqlAnalysisError, SqlError, UnsupportedStatementError
from sqlext.execute.call import located_in_call
from sqlext.execute.ddl_jobs import rescale_table
from sqlext.execute.partitions import live_partitions
from sqlext.execute.planning import CallProcedure
from sqlext.execute.procedures.plans import (
    Answer,
    Compactions,
    CopyTable,
    EngineWork,
    MigrateDatabase,
    MigrateTable,
    PartitionsWhere,
    ProcedurePlan,
    RescaleTable,
)
from sqlext.parse.names import TableName
from sqlext.parse.splitter import Statement
from sqlext.source.requests import ReadRequest, ReadVersion

if TYPE_CHECKING:
    from sqlext.session import SqlSession

log = logging.getLogger(__name__)


def run_procedure(s: SqlSession, plan: CallProcedure, stmt: Statement) -> pa.Table:
    """Carry out a CALL's plan; its result table, in the procedure's output schema."""
    values = dict(plan.values)
    try:
        with plan.procedure.argument_errors():
            result = carry_out(s, plan.work)
        return plan.procedure.shaped(values, result)
    except SqlError as e:
        raise located_in_call(e, plan.argument_at, stmt) from None


def carry_out(s: SqlSession, work: ProcedurePlan) -> pa.Table:
    """Run one procedure plan over the session; its result table."""
    if isinstance(work, Answer):
        return work.table
    if isinstance(work, EngineWork):
        return work.run()
    if isinstance(work, PartitionsWhere):
        return carry_out(s, work.then(partitions_where(s, work.table, work.where)))
    if isinstance(work, Compactions):
        return _compactions(s, work)
    if isinstance(work, RescaleTable):
        before = work.table.core_options.bucket
        with work.table.maintenance.recorded("rescale") as rec:
            rescale_table(s, work.job.name, work.job.buckets)
            rec.details = {"buckets_before": before, "buckets_after": work.job.buckets}
        return _true()
    if isinstance(work, CopyTable):
        _copy(s, work)
        return _true()
    if isinstance(work, MigrateTable):
        migrate_table(s, work)
        return _true()
    if isinstance(work, MigrateDatabase):
        return _migrate_database(s, work)
    raise TypeError(f"not a procedure plan: {work!r}")  # pragma: no cover - the plans above are all


def _true() -> pa.Table:
    return pa.table({"result": [True]}, schema=pa.schema([pa.field("result", pa.bool_())]))


def partitions_where(s: SqlSession, table: Table, where: str) -> list[dict[str, Any]]:
    """The live partitions of ``table`` for which the SQL predicate ``where`` (over its partition
    columns) is true.

    The partition list is small (metadata), so it becomes a tiny Spark DataFrame and the predicate
    is evaluated by Spark: the full SQL expression language works, and a reference to a
    non-partition column fails analysis.

    Raises:
        ProcedureArgumentError: ``where`` is not a valid predicate over the partition columns.
    """
    keys = table.partition_keys
    parts = live_partitions(table)
    if not parts:
        return []
    schema = pa.schema([pa.field(k, to_arrow_type(table.schema.field(k).type)) for k in keys])
    arrow = pa.Table.from_pylist(parts, schema=schema)
    try:
        rows = s.arrow_frame(arrow).where(where).collect()
    except PySparkException as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ProcedureArgumentError(
            f"argument 'where' must be a predicate over the partition columns {list(keys)}: {first}"
        ) from None
    return [{k: row[k] for k in keys} for row in rows]


def _compactions(s: SqlSession, work: Compactions) -> pa.Table:
    from sqlext.execute.compaction import compact_distributed

    results: list[CommitResult | None] = []
    for job in work.jobs:
        try:
            results.append(compact_distributed(
                s.spark, job.table, full=job.full,
                partitions=list(job.partitions) if job.partitions is not None else None,
                order_strategy=job.order_strategy, order_by=list(job.order_by),
            ))
        except Exception as e:
            if not work.keep_going:
                raise
            log.error("compacting %s failed: %s", job.table.name, e)
            results.append(None)
    return work.answer(results)


def _copy(s: SqlSession, work: CopyTable) -> None:
    from sqlext.execute.writes import write_frame

    target = work.target
    if work.create is not None:
        c = work.create
        target = s.catalog.create_table(c.identifier, list(c.fields), list(c.partition_keys),
                                        list(c.primary_keys), dict(c.options), c.comment)
    assert target is not None
    if work.snapshot is None:
        return  # an empty source: the target exists, there is nothing to copy
    frame = s.read(ReadRequest(s.target(work.source.name), travel=ReadVersion(snapshot_id=work.snapshot)))
    overwrite = OverwriteSpec()
    if work.where is not None:
        frame = frame.where(work.where)
        overwrite = OverwriteSpec(dynamic=True)  # replace only the partitions copied
    write_frame(s, target, frame, list(target.schema.field_names), overwrite=overwrite)


def migrate_table(s: SqlSession, work: MigrateTable) -> None:
    """Copy a Spark Parquet table into a new managed table, then drop (and, in place, replace) the
    origin; a failed copy drops the new table and leaves the origin as it was."""
    from sqlext.execute.writes import write_frame

    name = work.origin
    try:
        described = s.spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except Exception as e:  # noqa: BLE001 - Spark's AnalysisException: no such table
        raise SqlAnalysisError(
            f"migrate_table: Spark table '{name}' does not exist: {e}".splitlines()[0], sqlstate="42P01"
        ) from None
    provider = next((str(r[1]).strip().lower() for r in described if str(r[0]).strip() == "Provider"), "")
    serde = next((str(r[1]).lower() for r in described if str(r[0]).strip() == "Serde Library"), "")
    if provider not in ("parquet", "hive") or (provider == "hive" and "parquet" not in serde):
        raise UnsupportedStatementError(
            f"migrate_table: '{name}' is stored as {provider or 'unknown'}; dyntable migrates Parquet "
            "tables only"
        )
    partition_cols = [c.name for c in s.spark.catalog.listColumns(name) if c.isPartition]
    frame = s.spark.table(name)
    staged = s.catalog.create_table(work.staging, _schema(frame), partition_cols, (), dict(work.options))
    try:
        write_frame(s, staged, frame, list(staged.schema.field_names), overwrite=None)
    except BaseException:
        s.catalog.drop_table(work.staging, ignore_if_not_exists=True)
        raise  # the origin is untouched
    if work.delete_origin:
        s.spark.sql(f"DROP TABLE {name}")
    if work.rename_to is not None:
        s.catalog.rename_table(work.staging, work.rename_to)


def _migrate_database(s: SqlSession, work: MigrateDatabase) -> pa.Table:
    database = work.database
    if not s.spark.catalog.databaseExists(database):
        raise SqlAnalysisError(f"migrate_database: Spark database '{database}' does not exist",
                               sqlstate="3F000")
    ok = failed = 0
    for t in s.spark.catalog.listTables(database):
        if t.isTemporary or s.is_managed(TableName.parse(f"{database}.{t.name}")):
            continue
        try:
            migrate_table(s, work.migrate(f"{database}.{t.name}"))
            ok += 1
        except Exception as e:  # noqa: BLE001 - Paimon counts a failing table and goes on
            log.error("migrate_database: migrating %s.%s failed: %s", database, t.name, e)
            failed += 1
    return work.answer(ok, failed)


def _schema(frame: Any) -> pa.Schema:
    """The Arrow schema of a Spark DataFrame (dyntable maps it to table columns)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from sqlext.execute.common import KIND_OF_ZONE

    return to_arrow_schema(frame.schema, timezone=KIND_OF_ZONE)
