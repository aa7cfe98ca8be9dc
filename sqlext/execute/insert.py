"""INSERT INTO / INSERT OVERWRITE into managed tables, batch and continuous.

The query (SELECT or VALUES) runs in Spark with managed tables bound to views; its columns are
matched to the target by position (or by the column list), static partition values and computed
columns are added, every column is cast to the target's type, and the result is written through
the engine's builders in one commit (``sqlext.source.write_job``: tasks write, this process
commits). Primary-key writes skip compaction inside the tasks; the commit's post-commit hooks
compact afterwards in one distributed job (one Spark task per bucket that needs it).

Columns left out of a column list get their declared default (the field's ``defaultValue``, which
CREATE TABLE's ``DEFAULT`` and ``ALTER COLUMN ... SET DEFAULT`` store), a bare ``DEFAULT`` in a
``VALUES`` row stands for the default of the column it fills (NULL without one), as in Spark, and
a NULL written to a column with a default becomes the default (Paimon's documented rule for
INSERT, UPDATE and MERGE).

``INSERT OVERWRITE`` without a full static partition replaces, as Spark and Paimon's Spark
integration do by default (``static`` mode), the whole table (or everything under the static
partition values given); in ``dynamic`` mode only the partitions the query writes. The mode is,
first match wins: the statement hint ``/*+ OPTIONS('dynamic-partition-overwrite' = …) */``, the
session's ``spark.sql.sources.partitionOverwriteMode`` (``SET … = dynamic``), the table option
``dynamic-partition-overwrite`` when set on the table (Paimon's default for that option, ``true``,
is its Flink default and does not apply to Spark SQL), else ``static``.

In streaming runtime mode ``INSERT INTO t SELECT … FROM <managed table>`` starts a continuous job
that reads the source's changes (``rowkind`` column) and commits one snapshot per micro-batch.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine import (
    ROWKIND,
    InvalidArgumentError,
    OverwriteSpec,
    Table,
    coerce_spec,
    default_text,
    is_count_layout,
)
from engine.options import parse_duration
from engine.types import TypeRoot
from sqlext.errors import SqlAnalysisError
from sqlext.execute import bucket_shuffle
from sqlext.execute.common import done, paimon_to_spark_ddl, require_managed, rows
from sqlext.execute.compaction import spark_runner
from sqlext.execute.results import StatementResult, StreamingJob
from sqlext.execute.table_options import computed_columns
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement
from sqlext.source.datasource import cluster_for_writers
from sqlext.source.dynamic import session_overrides, table_overrides
from sqlext.source.requests import WriteRequest
from sqlext.source.write_job import write_job

if TYPE_CHECKING:
    from sqlext.session import SqlSession


STREAMING_TRIGGER = "execution.streaming.trigger"
OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"
DYNAMIC_OVERWRITE = "dynamic-partition-overwrite"
_DEFAULT_VALUE = re.compile(r"^fields\.(.+)\.default-value$")


# Flink-style durations ('1 s', '500ms', '2 min') as the interval text Spark's trigger accepts.
def spark_interval(text: str, stmt: Statement | None = None) -> str:
    """A duration (``'1 s'``, ``'500 ms'``, ``'2 min'``; a bare number is milliseconds), read by the
    engine's one duration parser, as a Spark interval."""
    try:
        return f"{parse_duration(text)} milliseconds"
    except InvalidArgumentError:
        raise SqlAnalysisError(
            f"'execution.checkpointing.interval' = '{text}' is not a duration; "
            "use e.g. '1 s', '500 ms' or '2 min'",
            line=stmt.line if stmt else None, column=stmt.column if stmt else None, sqlstate="22023",
        ) from None


def column_defaults(table: Table) -> dict[str, str]:
    """``{column: Spark expression of its declared default}``: the field's ``defaultValue`` (Paimon
    1.2+; the text without its quotes, cast to the column's type, as Paimon's writers read it), else
    the older option ``fields.<c>.default-value``."""
    types = {f.name: f.type for f in table.schema.fields}
    texts = {}
    for key, value in table.schema.options.items():
        m = _DEFAULT_VALUE.match(key)
        if m and m.group(1) in types:
            texts[m.group(1)] = str(value)
    texts.update(
        {f.name: default_text(f.default_value) for f in table.schema.fields if f.default_value is not None}
    )
    out = {}
    for name, value in texts.items():
        text = value.replace("\\", "\\\\").replace("'", "\\'")
        out[name] = f"CAST('{text}' AS {paimon_to_spark_ddl(types[name])})"
    return out


# One token of a VALUES list: a quoted string or name, a comment, a word, or any other character.
_VALUES_TOKEN = re.compile(
    r"""'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*"|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/|\w+|\s+|.""", re.S
)


def fill_default_keywords(query: str, columns: list[str], defaults: dict[str, str]) -> str:
    """``VALUES (3, DEFAULT)``: each bare DEFAULT item replaced by the default of its column."""
    tokens = _VALUES_TOKEN.findall(query)
    words = [t for t in tokens if not t.isspace() and not t.startswith(("--", "/*"))]
    if not words or words[0].upper() != "VALUES" or not any(t.upper() == "DEFAULT" for t in words):
        return query
    out, depth, position, prev = [], 0, 0, ""
    for i, tok in enumerate(tokens):
        if tok.isspace() or tok.startswith(("--", "/*")):
            out.append(tok)
            continue
        if tok == "(":
            depth += 1
            if depth == 1:
                position = 0
        elif tok == ")":
            depth -= 1
        elif tok == "," and depth <= 1:
            position = position + 1 if depth == 1 else 0
        elif tok.upper() == "DEFAULT" and depth <= 1 and prev in ("(", ",", "VALUES"):
            rest = (t for t in tokens[i + 1:] if not t.isspace() and not t.startswith(("--", "/*")))
            following = next(rest, "")
            if following in (",", ")", "", ";"):
                column = columns[position] if position < len(columns) else None
                out.append(defaults.get(column, "NULL") if column else "NULL")
                prev = tok.upper()
                continue
        out.append(tok)
        prev = tok.upper() if tok.upper() == "VALUES" else tok
    return "".join(out)


def _char_padded(value: Any, dtype: Any) -> Any:
    """A CHAR(n) value right-padded with spaces to n, as Spark's (and so Paimon's) write of a
    CHAR column stores it; a longer value is kept whole (never cut)."""
    if dtype.root is not TypeRoot.CHAR or not dtype.length:
        return value
    return F.when(F.length(value) < dtype.length, F.rpad(value, dtype.length, " ")).otherwise(value)


def shape_frame(
    s: SqlSession,
    table: Table,
    df: DataFrame,
    columns: list[str],
    static: dict[str, Any] | None = None,
    stmt: Statement | None = None,
) -> DataFrame:
    """Map query output onto the table: by position to ``columns``, plus static values and computed
    columns."""
    static = static or {}
    schema = table.schema
    computed = computed_columns(dict(schema.options))
    defaults = column_defaults(table)
    out_cols = [c for c in df.columns if c != ROWKIND or ROWKIND in schema.field_names]
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
    df = df.toDF(*[c if has_kind and c == ROWKIND else next(fresh) for c in df.columns])
    exprs = []
    provided = dict(zip(columns, (f"__dyntable_col{i}" for i in range(len(out_cols))), strict=True))
    for f in schema.fields:
        spark_type = paimon_to_spark_ddl(f.type)
        if f.name in provided:
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
    shaped = df.select(*exprs)
    if computed:
        shaped = shaped.select(
            *[
                F.expr(computed[f.name]).cast(paimon_to_spark_ddl(f.type)).alias(f.name)
                if f.name in computed else F.col(quoted(f.name))
                for f in schema.fields
            ],
            *([F.col(ROWKIND)] if has_kind else []),
        )
    return shaped


def write_request(
    s: SqlSession, table: Table, hints: dict[str, str] | None = None, **fields: Any
) -> WriteRequest:
    """The write of a statement: ``hints`` (``/*+ OPTIONS(...) */``) parsed like any option map,
    then the statement's own ``fields`` (overwrite, commit identity, ...)."""
    ident = table.identifier
    options = {
        **s.target(table.name).to_options(),
        **session_overrides(s.options, ident.database, ident.table),  # SET spark.paimon.* (Paimon)
        **{k: str(v) for k, v in (hints or {}).items()},
    }
    return replace(WriteRequest.from_options(options, overwrite=False), **fields)


def write_frame(
    s: SqlSession,
    table: Table,
    df: DataFrame,
    columns: list[str],
    *,
    overwrite: OverwriteSpec | None,
    static: dict[str, Any] | None = None,
    hints: dict[str, str] | None = None,
    stmt: Statement | None = None,
    shaped: bool = False,
    base_snapshot_id: int | None = None,
) -> int:
    """Write a DataFrame into a managed table in one commit; returns the rows added (the commit's).

    ``overwrite``: what the commit replaces (None: append). ``base_snapshot_id``: for an
    overwrite computed from a read of that snapshot (row-level DELETE/UPDATE/MERGE), any change
    to the replaced partitions after it is a conflict.
    """
    frame = df if shaped else shape_frame(s, table, df, columns, static, stmt)
    request = write_request(s, table, hints, overwrite=overwrite)
    overrides = table_overrides(request.passthrough)
    target = table.with_options(overrides) if overrides else table  # e.g. tag.batch.customized-name
    builder = target.new_write_builder(overwrite, commit_user=request.commit_user or f"sql-{uuid.uuid4()}")
    commit = (
        builder.new_commit().with_identifier(request.commit_identifier)
        .with_base_snapshot(base_snapshot_id if overwrite is not None else None)
        .with_change_tracking(request.change_tracking)
        .with_compaction_runner(spark_runner(s.spark))  # the post-commit compaction: one task per bucket
    )
    frame = cluster_for_writers(frame, target)
    frame = bucket_shuffle.for_write(frame, target, s.options)  # rows grouped by bucket when it pays
    return write_job(frame, builder, commit).rows_added


def insert(s: SqlSession, n: ast.Insert, stmt: Statement) -> StatementResult:
    if not s.is_managed(n.table):

        return StatementResult(stmt, s.spark_sql(stmt.text, stmt), None)
    require_managed(s, n.table, stmt)
    if n.table.system_table:
        raise SqlAnalysisError(f"system table '{n.table}' is read-only", line=stmt.line, column=stmt.column,
                               sqlstate="42809")
    table = s.table(n.table)
    schema = table.schema
    computed = computed_columns(dict(schema.options))
    spec = n.partition.values() if n.partition else {}
    dynamic_parts = [e.column for e in n.partition.entries if e.dynamic] if n.partition else []
    static = coerce_spec(schema, {k: v for k, v in spec.items() if k not in dynamic_parts})
    for col in list(static) + dynamic_parts:
        if col not in schema.partition_keys:
            raise SqlAnalysisError(f"'{col}' is not a partition column of '{table.name}'", line=stmt.line,
                                   column=stmt.column, sqlstate="42703")
    if n.columns:
        unknown = [c for c in n.columns if c not in schema.field_names]
        if unknown:
            raise SqlAnalysisError(f"unknown column(s) {unknown} in INSERT column list of '{table.name}'",
                                   line=stmt.line, column=stmt.column, sqlstate="42703")
        columns = [c for c in n.columns if c not in static]
    else:
        columns = [c for c in schema.field_names if c not in static and c not in computed]
    hints = {k: str(v) for k, v in n.options.items()}
    q = n.query
    sub = Statement(q.text, q.line or stmt.line, q.column or stmt.column, q.offset or stmt.offset)
    if n.by_name:
        columns = _by_name_columns(s, table, s.frame(q.text, sub).columns, static, stmt)
    if s.streaming and not n.overwrite:
        started = _start_stream(s, table, sub, columns, static, hints, stmt)
        if started is not None:
            return started
        # A query with no streaming source (VALUES, Spark tables) is bounded: it runs as a batch
        # INSERT, as Flink runs a bounded INSERT in streaming mode.
    text = fill_default_keywords(q.text, columns, column_defaults(table))
    df = s.frame(text, sub)
    overwrite: OverwriteSpec | None = None
    if n.overwrite:
        full_static = bool(schema.partition_keys) and set(static) >= set(schema.partition_keys)
        if not full_static and _dynamic_overwrite(s, table, hints, stmt):
            overwrite = OverwriteSpec(dynamic=True)
        else:
            overwrite = OverwriteSpec(static=static)
    hints.pop(DYNAMIC_OVERWRITE, None)
    count = write_frame(s, table, df, columns, overwrite=overwrite, static=static, hints=hints, stmt=stmt)
    return done(stmt, f"{count} row(s) {'written' if n.overwrite else 'inserted'} into {table.name}")


def _by_name_columns(s: SqlSession, table: Table, names: list[str], static: dict[str, Any],
                     stmt: Statement) -> list[str]:
    """INSERT ... BY NAME: the table columns the query's output names (case-insensitive, as Spark).

    Raises SqlAnalysisError for a name given twice or one the table lacks (Spark's errors).
    """
    by_lower = {c.lower(): c for c in table.schema.field_names}
    out: list[str] = []
    for name in (n for n in names if n != ROWKIND or ROWKIND in table.schema.field_names):
        column = by_lower.get(name.lower())
        if column is None or column in static:
            raise SqlAnalysisError(f"cannot write to '{table.name}' by name: extra columns: `{name}`",
                                   line=stmt.line, column=stmt.column, sqlstate="42703")
        if column in out:
            raise SqlAnalysisError(
                f"cannot write to '{table.name}' by name due to ambiguous column name `{name}`",
                line=stmt.line, column=stmt.column, sqlstate="42702")
        out.append(column)
    return out


def _dynamic_overwrite(s: SqlSession, table: Table, hints: dict[str, str], stmt: Statement) -> bool:
    """Whether INSERT OVERWRITE replaces only the partitions it writes (see the module docstring)."""
    if not table.partition_keys:
        return False
    choices: list[tuple[str, str | None]] = [(f"hint '{DYNAMIC_OVERWRITE}'", hints.get(DYNAMIC_OVERWRITE))]
    mode = s.options.get(OVERWRITE_MODE)
    if mode is None:
        try:
            mode = s.spark.conf.get(OVERWRITE_MODE, None)
        except Exception:  # noqa: BLE001 - an unreadable setting counts as unset
            mode = None
    if mode is not None:
        if mode.strip().lower() not in ("static", "dynamic"):
            raise SqlAnalysisError(f"'{OVERWRITE_MODE}' must be 'static' or 'dynamic', not '{mode}'",
                                   line=stmt.line, column=stmt.column, sqlstate="22023")
        choices.append((OVERWRITE_MODE, "true" if mode.strip().lower() == "dynamic" else "false"))
    choices.append((f"table option '{DYNAMIC_OVERWRITE}'", table.options.get(DYNAMIC_OVERWRITE)))
    for where, value in choices:
        if value is None:
            continue
        if str(value).strip().lower() not in ("true", "false"):
            raise SqlAnalysisError(f"{where} must be 'true' or 'false', not '{value}'", line=stmt.line,
                                   column=stmt.column, sqlstate="22023")
        return str(value).strip().lower() == "true"
    return False


def _forget_stale_checkpoint(s: SqlSession, checkpoint: str, tables: list[Table]) -> None:
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


def _start_stream(
    s: SqlSession, table: Table, sub: Statement, columns: list[str], static: dict[str, Any],
    hints: dict[str, str],
    stmt: Statement,
) -> StatementResult | None:
    """Start a continuous job for the INSERT, or return None when its query reads no streaming source."""

    df, bound = s.bound_frame(sub.text, sub, streaming=True)
    if not df.isStreaming:
        return None
    if ROWKIND not in df.columns:
        # Without the kind column a delete would arrive as an insert of the old row: refuse.
        for b in bound.bindings:
            source = s.table(b.table)
            if source.has_primary_key:
                raise SqlAnalysisError(
                    f"a continuous INSERT reading '{source.name}' (a changelog with updates and deletes) "
                    f"must carry each row's kind: add `{ROWKIND}` to the SELECT list "
                    f"(e.g. SELECT {ROWKIND}, id, upper(v) ...)",
                    line=sub.line, column=sub.column, sqlstate="42000",
                )
    shaped = shape_frame(s, table, df, columns, static, stmt)
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
    # The checkpoint and commit user belong to the pipeline, not the run: running the same INSERT
    # again resumes exactly where the previous run stopped (no change is read twice or skipped).
    pipeline = hashlib.sha1(f"{s.current_database}\n{' '.join(stmt.text.split())}".encode()).hexdigest()[:16]
    checkpoint = f"{s.warehouse}/.streaming/{pipeline}"
    _forget_stale_checkpoint(s, checkpoint, [table, *(s.table(b.table) for b in bound.bindings)])
    request = write_request(s, table, hints)
    overrides = table_overrides(request.passthrough)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        # Each micro-batch is one commit whose identifier is the batch id: a batch replayed after a
        # restart is recognised as committed and skipped (exactly once). Going through foreachBatch
        # also allows update mode (streaming aggregates upserting into a primary-key table), which
        # Spark does not offer to Python streaming sinks. The table's latest schema, per batch.
        latest = table.refresh()
        target = latest.with_options(overrides) if overrides else latest
        builder = target.new_write_builder(commit_user=f"stream-{pipeline}")
        commit = builder.new_commit().with_change_tracking(request.change_tracking).with_identifier(batch_id)
        write_job(cluster_for_writers(batch, target), builder, commit)

    trigger = s.options.get(STREAMING_TRIGGER, "processing-time").lower()
    interval = spark_interval(s.options.get("execution.checkpointing.interval", "1 s"), stmt)
    mode = "update" if table.has_primary_key else "append"
    stream = (
        shaped.writeStream.foreachBatch(write_batch).option("checkpointLocation", checkpoint)
        .outputMode(mode).queryName(f"dyntable_{job_id}")
    )
    if trigger == "available-now":
        query = stream.trigger(availableNow=True).start()
        query.awaitTermination()  # a bounded catch-up: the statement returns when all changes are in
    elif trigger == "processing-time":
        query = stream.trigger(processingTime=interval).start()
    else:
        raise SqlAnalysisError(
            f"'{STREAMING_TRIGGER}' must be 'processing-time' or 'available-now', not '{trigger}'",
            line=stmt.line, column=stmt.column, sqlstate="22023")
    s.jobs[job_id] = StreamingJob(job_id, stmt.text, query)
    return rows(s, stmt, pa.table({"job_id": [job_id]}), f"Streaming job {job_id} started")
