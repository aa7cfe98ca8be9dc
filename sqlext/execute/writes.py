"""Carrying out writes in Spark: a query's rows shaped onto a table and written in one commit, or a
continuous job started. The runner's side of the ``Write`` plan (``planning.Write``), and the one
write path of the executors not yet converted (row-level DML, CREATE TABLE AS, procedures).

A batch write goes through the engine's builders (``sqlext.source.write_job``: tasks write, this
process commits); primary-key writes skip compaction inside the tasks and the commit's post-commit
hooks compact afterwards in one distributed job (one Spark task per bucket that needs it).

Shaping (``shape_frame``): the query's output columns fill the listed table columns by position,
static partition values and computed columns are added, columns left out get their declared
default (the field's ``defaultValue``), a NULL written to a column with a default becomes the
default (Paimon's rule for INSERT, UPDATE and MERGE), CHAR(n) values are padded as Spark stores
them, and every column is cast to the table's type — except, in a by-name write, columns holding
structs: the engine's writers align their fields by name (Paimon's byName rule), where Spark's
cast would match them by position.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine import ROWKIND, OverwriteSpec, Table, is_count_layout, metadata_names
from engine.types import DataType, TypeRoot
from sqlext.errors import SqlAnalysisError
from sqlext.execute import bucket_shuffle
from sqlext.execute.common import paimon_to_spark_ddl
from sqlext.execute.planning import Write
from sqlext.execute.results import StatementResult, StreamingJob
from sqlext.execute.table_options import column_defaults, computed_columns
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement
from sqlext.source.datasource import cluster_for_writers
from sqlext.source.dynamic import session_overrides, table_overrides
from sqlext.source.requests import WriteRequest
from sqlext.source.spark_compaction import spark_runner
from sqlext.source.write_job import write_job

if TYPE_CHECKING:
    from sqlext.session import SqlSession


def spark_defaults(table: Table) -> dict[str, str]:
    """Each column's declared default as a Spark expression."""
    return column_defaults(table, paimon_to_spark_ddl)


def _char_padded(value: Any, dtype: Any) -> Any:
    """A CHAR(n) value right-padded with spaces to n, as Spark's (and so Paimon's) write of a
    CHAR column stores it; a longer value is kept whole (never cut)."""
    if dtype.root is not TypeRoot.CHAR or not dtype.length:
        return value
    return F.when(F.length(value) < dtype.length, F.rpad(value, dtype.length, " ")).otherwise(value)


def _holds_struct(dtype: DataType) -> bool:
    if dtype.root is TypeRoot.ROW:
        return True
    return any(_holds_struct(t) for t in (dtype.element, dtype.key, dtype.value) if t is not None)


def shape_frame(
    s: SqlSession,
    table: Table,
    df: DataFrame,
    columns: list[str],
    static: Mapping[str, Any] | None = None,
    stmt: Statement | None = None,
    *,
    by_name: bool = False,
    row_ids: bool = False,
) -> DataFrame:
    """Map query output onto the table: by position to ``columns``, plus static values and computed
    columns (see the module docstring). ``row_ids``: a row-level statement's rows, whose
    ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` columns (row-tracking tables) go to the writer too."""
    static = static or {}
    schema = table.schema
    computed = computed_columns(dict(schema.options))
    defaults = spark_defaults(table)
    # Rows of a row-tracking table rewritten by DELETE/UPDATE/MERGE carry their _ROW_ID and
    # _SEQUENCE_NUMBER (read as metadata columns): passed through to the writer, which keeps them.
    hidden = set(metadata_names(schema)) & {"_ROW_ID", "_SEQUENCE_NUMBER"} if row_ids else set()
    tracking = [c for c in df.columns if c in hidden]
    out_cols = [c for c in df.columns if (c != ROWKIND or ROWKIND in schema.field_names) and c not in hidden]
    has_kind = ROWKIND in df.columns and ROWKIND not in schema.field_names
    if len(out_cols) != len(columns):
        raise SqlAnalysisError(
            f"cannot write to '{table.name}': the query produces {len(out_cols)} column(s) "
            f"but {len(columns)} are "
            f"expected ({', '.join(columns)})",
            line=stmt.line if stmt else None, column=stmt.column if stmt else None, sqlstate="21S01",
        )
    # By position: output names may repeat (``SELECT 1, 'a', 1`` names two columns `1`), so
    # every output column gets a fresh name before it is addressed.
    fresh = iter(f"__dyntable_col{i}" for i in range(len(out_cols)))
    df = df.toDF(*[c if (has_kind and c == ROWKIND) or c in tracking else next(fresh) for c in df.columns])
    exprs = []
    provided = dict(zip(columns, (f"__dyntable_col{i}" for i in range(len(out_cols))), strict=True))
    for f in schema.fields:
        spark_type = paimon_to_spark_ddl(f.type)
        if f.name in provided:
            if by_name and _holds_struct(f.type):
                exprs.append(F.col(quoted(provided[f.name])).alias(f.name))  # the writers align it by name
                continue
            value = F.col(quoted(provided[f.name])).cast(spark_type)
            if f.name in defaults:  # Paimon's writers turn a NULL into the column's default
                value = F.coalesce(value, F.expr(defaults[f.name]))
            exprs.append(_char_padded(value, f.type).alias(f.name))
        elif f.name in static:
            exprs.append(_char_padded(F.lit(static[f.name]).cast(spark_type), f.type).alias(f.name))
        elif f.name in computed:
            continue
        elif f.name in defaults:
            exprs.append(F.expr(defaults[f.name]).alias(f.name))
        else:
            exprs.append(F.lit(None).cast(spark_type).alias(f.name))
    if has_kind:
        exprs.append(F.col(ROWKIND))
    exprs += [F.col(c).cast("bigint") for c in tracking]
    shaped = df.select(*exprs)
    if computed:
        shaped = shaped.select(
            *[
                F.expr(computed[f.name]).cast(paimon_to_spark_ddl(f.type)).alias(f.name)
                if f.name in computed else F.col(quoted(f.name))
                for f in schema.fields
            ],
            *([F.col(ROWKIND)] if has_kind else []),
            *[F.col(c) for c in tracking],
        )
    return shaped


def resolved_options(s: SqlSession, table: Table, hints: Mapping[str, str] | None = None) -> dict[str, str]:
    """A write's options: the session's ``SET spark.paimon.*`` keys for the table, then hints."""
    ident = table.identifier
    return {
        **session_overrides(s.options, ident.database, ident.table),
        **{k: str(v) for k, v in (hints or {}).items()},
    }


def write_request(s: SqlSession, table: Table, options: Mapping[str, str], **fields: Any) -> WriteRequest:
    """The write of a statement: its resolved ``options`` parsed like any option map, then the
    statement's own ``fields`` (overwrite, commit identity, ...)."""
    request = WriteRequest.from_options({**s.target(table.name).to_options(), **options}, overwrite=False)
    return replace(request, **fields)


def write_frame(
    s: SqlSession,
    table: Table,
    df: DataFrame,
    columns: list[str],
    *,
    overwrite: OverwriteSpec | None,
    static: Mapping[str, Any] | None = None,
    hints: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
    stmt: Statement | None = None,
    shaped: bool = False,
    by_name: bool = False,
    base_snapshot_id: int | None = None,
    row_ids: bool = False,
) -> int:
    """Write a DataFrame into a managed table in one commit; returns the rows added (the commit's).

    ``overwrite``: what the commit replaces (None: append). ``base_snapshot_id``: for an
    overwrite computed from a read of that snapshot (row-level DELETE/UPDATE/MERGE), any change
    to the replaced partitions after it is a conflict. ``options``: the write's resolved options
    (a plan's); without them, the session's ``spark.paimon.*`` keys and ``hints``. ``row_ids``:
    rows rewritten by a row-level statement, which keep their row ids (row-tracking tables).
    """
    frame = df if shaped else shape_frame(s, table, df, columns, static, stmt, by_name=by_name,
                                          row_ids=row_ids)
    resolved = options if options is not None else resolved_options(s, table, hints)
    request = write_request(s, table, resolved, overwrite=overwrite)
    overrides = table_overrides(request.passthrough)
    target = table.with_options(overrides) if overrides else table  # e.g. tag.batch.customized-name
    builder = target.new_write_builder(overwrite, commit_user=request.commit_user or f"sql-{uuid.uuid4()}")
    if row_ids:
        builder = builder.keeping_row_ids()
    commit = (
        builder.new_commit().with_identifier(request.commit_identifier)
        .with_base_snapshot(base_snapshot_id if overwrite is not None else None)
        .with_change_tracking(request.change_tracking)
        .with_compaction_runner(spark_runner(s.spark))  # the post-commit compaction: one task per bucket
    )
    frame = cluster_for_writers(frame, target)
    frame = bucket_shuffle.for_write(frame, target, s.options)  # rows grouped by bucket when it pays
    return write_job(frame, builder, commit).rows_added


def run_write(s: SqlSession, plan: Write, stmt: Statement) -> StatementResult:
    """Carry out a ``Write`` plan: one write job and one commit, or a continuous job."""
    if plan.stream is not None:
        return _start_stream(s, plan, stmt)
    shape = plan.shape
    count = write_frame(
        s, plan.table, plan.frame.frame, list(shape.columns) if shape else [], overwrite=plan.overwrite,
        static=shape.static if shape else None, options=plan.options, stmt=stmt, shaped=shape is None,
        by_name=shape.by_name if shape else False, base_snapshot_id=plan.base_snapshot,
    )
    return StatementResult(stmt, None, plan.message.replace("{count}", str(count)))


def _forget_stale_checkpoint(s: SqlSession, checkpoint: str, tables: tuple[Table, ...]) -> None:
    """Delete a pipeline's checkpoint that predates one of its tables.

    The checkpoint is keyed by the statement's text, so after a table is dropped and created again
    (a re-run script) it would resume at the old table's snapshot ids and skip the new table's
    rows. Spark writes the checkpoint's ``metadata`` file once, when the pipeline first starts.
    """
    started = [
        e.modification_time_ms for e in s.catalog.io.list_dir(checkpoint)
        if e.path.rstrip("/").rsplit("/", 1)[-1] == "metadata" and e.modification_time_ms is not None
    ]
    if not started:
        return
    schemas = [t.schemas for t in tables]
    created = max(store.get(min(store.list_ids())).time_millis for store in schemas)
    if created > started[0]:
        s.catalog.io.delete_dir(checkpoint, recursive=True)


def _start_stream(s: SqlSession, plan: Write, stmt: Statement) -> StatementResult:
    """Start the continuous job of a streaming ``Write`` (the planner checked its change kinds)."""
    stream, table = plan.stream, plan.table
    assert stream is not None and plan.shape is not None
    shaped = shape_frame(s, table, plan.frame.frame, list(plan.shape.columns), plan.shape.static, stmt)
    if ROWKIND in shaped.columns and not table.has_primary_key and not is_count_layout(table.schema):
        # An append table stores rows as they come: insertions pass (without the kind column, which
        # it has no place for); a retraction cannot be applied (Paimon's append writer refuses it),
        # so it stops the job with an error instead of being stored as an insertion or dropped.
        refuse = F.raise_error(F.concat(
            F.lit(f"'{table.name}' has no primary key and cannot apply a change of kind "), F.col(ROWKIND),
            F.lit("; give it a primary key or 'retractions.enabled' = 'true', or select only insertions"),
        ))
        shaped = shaped.where(F.when(F.col(ROWKIND) == "+I", F.lit(True)).otherwise(refuse)).drop(ROWKIND)
    job_id = uuid.uuid4().hex[:12]
    _forget_stale_checkpoint(s, stream.checkpoint, (table, *stream.reads))
    request = write_request(s, table, plan.options)
    overrides = table_overrides(request.passthrough)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        # Each micro-batch is one commit whose identifier is the batch id: a batch replayed after a
        # restart is recognised as committed and skipped (exactly once). Going through foreachBatch
        # also allows update mode (streaming aggregates upserting into a primary-key table), which
        # Spark does not offer to Python streaming sinks. The table's latest schema, per batch.
        latest = table.refresh()
        target = latest.with_options(overrides) if overrides else latest
        builder = target.new_write_builder(commit_user=f"stream-{stream.pipeline}")
        commit = builder.new_commit().with_change_tracking(request.change_tracking).with_identifier(batch_id)
        write_job(cluster_for_writers(batch, target), builder, commit)

    mode = "update" if table.has_primary_key else "append"
    writer = (
        shaped.writeStream.foreachBatch(write_batch).option("checkpointLocation", stream.checkpoint)
        .outputMode(mode).queryName(f"dyntable_{job_id}")
    )
    if stream.trigger == "available-now":
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()  # a bounded catch-up: the statement returns when all changes are in
    else:
        query = writer.trigger(processingTime=stream.interval).start()
    s.jobs[job_id] = StreamingJob(job_id, stmt.text, query)
    started = s.arrow_frame(pa.table({"job_id": [job_id]}))
    return StatementResult(stmt, started, f"Streaming job {job_id} started")
