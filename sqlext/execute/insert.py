"""The INSERT planner: INSERT INTO / INSERT OVERWRITE into managed tables, batch and continuous.

It checks the statement against the table and returns a ``Write`` plan (``planning.py``): the
query bound to the tables it reads, how its columns map onto the table, the overwrite intent, the
write's resolved options and the schema change it carries, if any. The session's runner carries
it out (``writes.run_write``: shape, one write job, one commit). Nothing here runs Spark.

Columns are matched to the target by position (or by the column list, or with ``BY NAME`` by
name, case-insensitively as Spark does); columns left out of a column list get their declared
default (the field's ``defaultValue``, which CREATE TABLE's ``DEFAULT`` and ``ALTER COLUMN … SET
DEFAULT`` store), and a bare ``DEFAULT`` in a ``VALUES`` row stands for the default of the column
it fills (NULL without one), as in Spark.

**Schema evolution** (``write.merge-schema``: the table option, ``SET spark.paimon.write.merge-schema``
or a hint ``/*+ OPTIONS('write.merge-schema' = 'true') */``): an ``INSERT … BY NAME`` whose query
has columns (or struct fields) the table lacks evolves the schema by Paimon's rules
(``engine.schema_merge``); the new version is published by the write's commit, just before its
snapshot. Without it such a query is refused ("extra columns"). A positional INSERT never evolves
the schema, as in Paimon (its column count must match).

``INSERT OVERWRITE`` without a full static partition replaces, as Spark and Paimon's Spark
integration do by default (``static`` mode), the whole table (or everything under the static
partition values given); in ``dynamic`` mode only the partitions the query writes. The mode is,
first match wins: the statement hint ``/*+ OPTIONS('dynamic-partition-overwrite' = …) */``, the
session's ``spark.sql.sources.partitionOverwriteMode`` (``SET … = dynamic``), the table option
``dynamic-partition-overwrite`` when set on the table (Paimon's default for that option, ``true``,
is its Flink default and does not apply to Spark SQL), else ``static``.

In streaming runtime mode ``INSERT INTO t SELECT … FROM <managed table>`` plans a continuous job
that reads the source's changes (``rowkind`` column) and commits one snapshot per micro-batch.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from engine import ROWKIND, FormatTable, Identifier, InvalidArgumentError, OverwriteSpec, Table, coerce_spec
from engine.options import parse_duration
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.planning import (
    BoundFrame,
    FormatWrite,
    Plan,
    Planner,
    PlannerContext,
    StreamSettings,
    ToEngine,
    Write,
    WriteShape,
)
from sqlext.execute.table_options import column_defaults, computed_columns
from sqlext.execute.write_schema import evolved_for, with_options, write_options
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement

STREAMING_TRIGGER = "execution.streaming.trigger"
CHECKPOINT_INTERVAL = "execution.checkpointing.interval"
OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"
DYNAMIC_OVERWRITE = "dynamic-partition-overwrite"


def _error(stmt: Statement, message: str, sqlstate: str) -> SqlAnalysisError:
    return SqlAnalysisError(message, line=stmt.line, column=stmt.column, sqlstate=sqlstate)


# Flink-style durations ('1 s', '500ms', '2 min') as the interval text Spark's trigger accepts.
def spark_interval(text: str, stmt: Statement | None = None) -> str:
    """A duration (``'1 s'``, ``'500 ms'``, ``'2 min'``; a bare number is milliseconds), read by the
    engine's one duration parser, as a Spark interval."""
    try:
        return f"{parse_duration(text)} milliseconds"
    except InvalidArgumentError:
        raise SqlAnalysisError(
            f"'{CHECKPOINT_INTERVAL}' = '{text}' is not a duration; use e.g. '1 s', '500 ms' or '2 min'",
            line=stmt.line if stmt else None, column=stmt.column if stmt else None, sqlstate="22023",
        ) from None


# One token of a VALUES list: a quoted string or name, a comment, a word, or any other character.
_VALUES_TOKEN = re.compile(
    r"""'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*"|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/|\w+|\s+|.""", re.S
)


def fill_default_keywords(query: str, columns: Sequence[str], defaults: Mapping[str, str]) -> str:
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


def insert(ctx: PlannerContext, n: ast.Insert, stmt: Statement) -> Plan:
    """The ``Write`` of an INSERT (see the module docstring); ``ToEngine`` for a table of Spark's."""
    if not ctx.is_managed(n.table):
        return ToEngine(bind=True)  # a table of Spark's (it may read managed tables)
    if n.table.system_table:
        raise _error(stmt, f"system table '{n.table}' is read-only", "42809")
    if n.table.branch is None:
        ident = ctx.identifier(n.table)
        fmt = ctx.catalog.get_format_table(Identifier(ident.database, ident.table))
        if fmt is not None:
            return _format_write(ctx, fmt, n, stmt)
    table = ctx.table(n.table)
    schema = table.schema
    computed = computed_columns(dict(schema.options))
    spec = n.partition.values() if n.partition else {}
    dynamic_parts = [e.column for e in n.partition.entries if e.dynamic] if n.partition else []
    static = coerce_spec(schema, {k: v for k, v in spec.items() if k not in dynamic_parts})
    for col in list(static) + dynamic_parts:
        if col not in schema.partition_keys:
            raise _error(stmt, f"'{col}' is not a partition column of '{table.name}'", "42703")
    if n.columns:
        unknown = [c for c in n.columns if c not in schema.field_names]
        if unknown:
            raise _error(stmt, f"unknown column(s) {unknown} in INSERT column list of '{table.name}'",
                         "42703")
        columns = [c for c in n.columns if c not in static]
    else:
        columns = [c for c in schema.field_names if c not in static and c not in computed]
    hints = {k: str(v) for k, v in n.options.items()}
    overwrite: OverwriteSpec | None = None
    if n.overwrite:
        full_static = bool(schema.partition_keys) and set(static) >= set(schema.partition_keys)
        if not full_static and _dynamic_overwrite(ctx, table, hints, stmt):
            overwrite = OverwriteSpec(dynamic=True)
        else:
            overwrite = OverwriteSpec(static=static)
    hints.pop(DYNAMIC_OVERWRITE, None)
    options = write_options(ctx, table, hints)
    target = with_options(table, options)
    q = n.query
    sub = Statement(q.text, q.line or stmt.line, q.column or stmt.column, q.offset or stmt.offset)
    first: BoundFrame | None = None
    if n.by_name:
        first = ctx.frame(q.text, sub)
        data = [c for c in first.columns if c.name != ROWKIND or ROWKIND in schema.field_names]
        target = evolved_for(ctx, target, data, stmt)
        columns = _by_name_columns(target, [c.name for c in data], static, stmt)
    evolve = target.store.pending_schema
    if ctx.streaming and not n.overwrite:
        started = _stream(ctx, target, sub, columns, static, options, stmt)
        if started is not None:
            if evolve is not None:
                raise UnsupportedStatementError(
                    f"a continuous INSERT does not evolve the schema of '{table.name}' "
                    "(write.merge-schema); add the columns with ALTER TABLE first",
                    line=stmt.line, column=stmt.column)
            return started
        # A query with no streaming source (VALUES, Spark tables) is bounded: it runs as a batch
        # INSERT, as Flink runs a bounded INSERT in streaming mode.
    text = fill_default_keywords(q.text, columns, column_defaults(target, ctx.type_text))
    frame = first if first is not None and text == q.text else ctx.frame(text, sub)
    verb = "written" if n.overwrite else "inserted"
    return Write(target, frame, overwrite, None, options, evolve,
                 WriteShape(tuple(columns), static, by_name=n.by_name),
                 f"{{count}} row(s) {verb} into {table.name}")


def _format_write(ctx: PlannerContext, table: FormatTable, n: ast.Insert, stmt: Statement) -> Plan:
    """INSERT into a format table: the query's columns by position (or column list) onto the
    table's, static partition values as literals; an overwrite as Paimon's format-table commit."""
    if n.by_name:
        raise UnsupportedStatementError("INSERT … BY NAME is not supported for a format table",
                                        line=stmt.line, column=stmt.column)
    spec = n.partition.values() if n.partition else {}
    dynamic_parts = [e.column for e in n.partition.entries if e.dynamic] if n.partition else []
    static = {k: v for k, v in spec.items() if k not in dynamic_parts}
    for col in list(static) + dynamic_parts:
        if col not in table.partition_keys:
            raise _error(stmt, f"'{col}' is not a partition column of '{table.name}'", "42703")
    names = table.field_names
    if n.columns:
        unknown = [c for c in n.columns if c not in names]
        if unknown:
            raise _error(stmt, f"unknown column(s) {unknown} in INSERT column list of '{table.name}'",
                         "42703")
    columns = [c for c in (n.columns or names) if c not in static]
    frame = ctx.frame(n.query.text)
    if len(frame.columns) != len(columns):
        raise _error(stmt, f"'{table.name}' expects {len(columns)} column(s) from the query, got "
                     f"{len(frame.columns)}", "21S01")
    position = {c: i for i, c in enumerate(columns)}
    expressions = []
    for f in table.fields:
        type_text = ctx.cast_type(f.type)
        if f.name in static:
            value = static[f.name]
            text = str(value).replace("\\", "\\\\").replace("'", "\\'")
            literal = "NULL" if value is None else f"'{text}'"
            expressions.append(f"CAST({literal} AS {type_text}) AS {quoted(f.name)}")
        elif f.name in position:
            expressions.append(f"CAST(_c{position[f.name]} AS {type_text}) AS {quoted(f.name)}")
        else:
            expressions.append(f"CAST(NULL AS {type_text}) AS {quoted(f.name)}")
    # Paimon's format-table commit: an overwrite with static partition values replaces everything
    # under them; without, the partitions the write produced (the whole table when unpartitioned
    # and written), whatever Spark's partitionOverwriteMode says.
    overwrite = ("static" if static else "dynamic") if n.overwrite else "none"
    static_text = {k: "" if v is None else str(v) for k, v in static.items()}
    return FormatWrite(table, frame, tuple(expressions), overwrite, static_text,
                       f"Inserted into format table {table.name}")


def _by_name_columns(table: Table, names: list[str], static: Mapping[str, Any], stmt: Statement) -> list[str]:
    """INSERT ... BY NAME: the table columns the query's output names (case-insensitive, as Spark).

    Raises SqlAnalysisError for a name given twice or one the table lacks (Spark's errors).
    """
    by_lower = {c.lower(): c for c in table.schema.field_names}
    out: list[str] = []
    for name in names:
        column = by_lower.get(name.lower())
        if column is None or column in static:
            raise _error(stmt, f"cannot write to '{table.name}' by name: extra columns: `{name}` (set "
                         "'write.merge-schema' = 'true' to add them to the table)", "42703")
        if column in out:
            raise _error(stmt, f"cannot write to '{table.name}' by name due to ambiguous column name "
                         f"`{name}`", "42702")
        out.append(column)
    return out


def _dynamic_overwrite(ctx: PlannerContext, table: Table, hints: Mapping[str, str], stmt: Statement) -> bool:
    """Whether INSERT OVERWRITE replaces only the partitions it writes (see the module docstring)."""
    if not table.partition_keys:
        return False
    choices: list[tuple[str, str | None]] = [(f"hint '{DYNAMIC_OVERWRITE}'", hints.get(DYNAMIC_OVERWRITE))]
    mode = ctx.options.get(OVERWRITE_MODE)
    if mode is None:
        mode = ctx.engine_setting(OVERWRITE_MODE)
    if mode is not None:
        if mode.strip().lower() not in ("static", "dynamic"):
            raise _error(stmt, f"'{OVERWRITE_MODE}' must be 'static' or 'dynamic', not '{mode}'", "22023")
        choices.append((OVERWRITE_MODE, "true" if mode.strip().lower() == "dynamic" else "false"))
    choices.append((f"table option '{DYNAMIC_OVERWRITE}'", table.options.get(DYNAMIC_OVERWRITE)))
    for where, value in choices:
        if value is None:
            continue
        if str(value).strip().lower() not in ("true", "false"):
            raise _error(stmt, f"{where} must be 'true' or 'false', not '{value}'", "22023")
        return str(value).strip().lower() == "true"
    return False


def _stream(
    ctx: PlannerContext, table: Table, sub: Statement, columns: list[str], static: Mapping[str, Any],
    options: Mapping[str, str], stmt: Statement,
) -> Write | None:
    """The continuous write of the INSERT, or None when its query reads no streaming source."""
    bound = ctx.frame(sub.text, sub, streaming=True)
    if not bound.streaming:
        return None
    reads = tuple(ctx.table(b.table) for b in (bound.query.bindings if bound.query else ()))
    if all(c.name != ROWKIND for c in bound.columns):
        # Without the kind column a delete would arrive as an insert of the old row: refuse.
        for source in reads:
            if source.has_primary_key:
                raise SqlAnalysisError(
                    f"a continuous INSERT reading '{source.name}' (a changelog with updates and deletes) "
                    f"must carry each row's kind: add `{ROWKIND}` to the SELECT list "
                    f"(e.g. SELECT {ROWKIND}, id, upper(v) ...)",
                    line=sub.line, column=sub.column, sqlstate="42000",
                )
    trigger = ctx.options.get(STREAMING_TRIGGER, "processing-time").lower()
    if trigger not in ("processing-time", "available-now"):
        raise _error(stmt, f"'{STREAMING_TRIGGER}' must be 'processing-time' or 'available-now', "
                     f"not '{trigger}'", "22023")
    interval = spark_interval(ctx.options.get(CHECKPOINT_INTERVAL, "1 s"), stmt)
    # The checkpoint and commit user belong to the pipeline, not the run: running the same INSERT
    # again resumes exactly where the previous run stopped (no change is read twice or skipped).
    text = f"{ctx.current_database}\n{' '.join(stmt.text.split())}"
    pipeline = hashlib.sha1(text.encode()).hexdigest()[:16]
    checkpoint = f"{ctx.catalog.warehouse}/.streaming/{pipeline}"
    return Write(table, bound, None, None, options, None, WriteShape(tuple(columns), static),
                 "Streaming job started", StreamSettings(pipeline, checkpoint, trigger, interval, reads))


PLANNERS: dict[type, Planner] = {ast.Insert: insert}
