"""Executors of the DDL statements that run Spark or write data: CREATE TABLE (computed columns
are typed by Spark, AS SELECT writes), COMPACT, ADD PRIMARY KEY and CLUSTERED INTO n BUCKETS
(rewrites). The metadata-only DDL is planned in ``ddl.py``.

CREATE TABLE accepts the Flink style of the managed-table design (``PRIMARY KEY … NOT
ENFORCED``, ``PARTITIONED BY``, ``WITH (...)``, computed columns, ``WATERMARK FOR``) and the Spark
style (``USING dyntable``, ``TBLPROPERTIES``). A ``USING`` another format goes to Spark unchanged.
Computed columns are materialised: their expression is stored as the table option
``dyntable.computed-column.<name>`` and evaluated on every INSERT; the watermark expression is
kept as ``dyntable.watermark.<column>`` (metadata for SHOW CREATE TABLE and streaming readers).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine import OverwriteSpec, coerce_spec
from engine.schema_changes import RemoveOption, SetOption
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.column_types import TIMESTAMP_TYPE_SETTING, ZONE_SETTING, column_type, stored_default
from sqlext.execute.common import (
    done,
    paimon_to_spark_ddl,
    require_managed,
    spark_to_paimon,
    struct_fields,
)
from sqlext.execute.results import StatementResult
from sqlext.execute.table_options import COMMENT_PROPERTY, COMPUTED_PREFIX, WATERMARK_PREFIX
from sqlext.execute.views import view_of
from sqlext.parse import ast
from sqlext.parse.splitter import Statement
from sqlext.source.requests import ReadRequest, ReadVersion

if TYPE_CHECKING:
    from sqlext.parse.names import TableName
    from sqlext.session import SqlSession

MANAGED_FORMATS = ("dyntable", "paimon")


# -- CREATE TABLE ---------------------------------------------------------------------------------
def _computed_type(s: SqlSession, physical: list[tuple[Any, ...]], expression: str) -> Any:
    """Derive a computed column's type by letting Spark type the expression over typed NULLs."""
    cols = ", ".join(f"CAST(NULL AS {paimon_to_spark_ddl(t)}) AS `{name}`" for name, t, *_ in physical)
    df = s.spark.sql(f"SELECT {expression} AS c FROM (SELECT {cols})")
    return spark_to_paimon(df.schema.fields[0].dataType)


def create_table(s: SqlSession, n: ast.CreateTable, stmt: Statement) -> StatementResult:
    if n.using and n.using.lower() not in MANAGED_FORMATS:
        return _to_spark(s, stmt)
    ident = s.identifier(n.name)
    if s.catalog.table_exists(ident):
        if n.if_not_exists:
            return done(stmt, f"Table {ident.full_name} already exists")
        raise SqlAnalysisError(
            f"table '{ident.full_name}' already exists", line=stmt.line, column=stmt.column, sqlstate="42710"
        )
    if view_of(s, replace(n.name, database=ident.database)) is not None:
        raise SqlAnalysisError(
            f"'{ident.full_name}' is a view: a table cannot have its name (DROP VIEW first, or pick"
            " another name)",
            line=stmt.line, column=stmt.column, sqlstate="42710",
        )
    options = {**s.table_defaults(), **{k: str(v) for k, v in n.options.items()}}
    comment = options.pop(COMMENT_PROPERTY, None)  # TBLPROPERTIES ('comment' = ...), as Paimon's SparkCatalog
    comment = n.comment if n.comment is not None else comment
    if n.buckets is not None:
        options["bucket"] = str(n.buckets)
    if n.bucket_key:
        options["bucket-key"] = ",".join(n.bucket_key)
    fields: list[tuple[str, Any, str | None, str | None]] = []
    computed: list[ast.ComputedColumn] = []
    for col in n.columns:
        if isinstance(col, ast.ComputedColumn):
            computed.append(col)
            continue
        dtype = column_type(col.type.text, s.spark.conf.get(TIMESTAMP_TYPE_SETTING, None))
        # DEFAULT is stored as Paimon 1.2+ stores it: the field's defaultValue, the literal's text
        # (the engine refuses text that does not cast to the type, as Paimon); DEFAULT NULL is none.
        default = stored_default(None if col.default is None else col.default.text, dtype,
                                 s.spark.conf.get(ZONE_SETTING, None))
        fields.append((col.name, dtype if col.nullable else dtype.copy(False), col.comment, default))
    query_df = None
    if n.query is not None:
        query_df = s.frame(n.query.text)
        if not fields:
            fields = [(name, t, None, None) for name, t in struct_fields(query_df.schema)]
    for col in computed:
        fields.append((col.name, _computed_type(s, fields, col.expression.text), col.comment, None))
        options[COMPUTED_PREFIX + col.name] = col.expression.text
    if n.watermark is not None:
        options[WATERMARK_PREFIX + n.watermark.column] = n.watermark.expression.text
    if not fields:
        raise SqlAnalysisError("CREATE TABLE needs at least one column", line=stmt.line, column=stmt.column,
                               sqlstate="42601")
    table = s.catalog.create_table(
        ident, _fields(fields), partition_keys=n.partitioned_by, primary_keys=n.primary_key,
        options=options, comment=comment,
    )
    if query_df is not None:
        from sqlext.execute.writes import write_frame

        try:
            write_frame(s, table, query_df, list(table.schema.field_names), overwrite=None)
        except BaseException:
            s.catalog.drop_table(ident, ignore_if_not_exists=True)  # CREATE ... AS SELECT is all or nothing
            raise
    return done(stmt, f"Table {ident.full_name} created")


def _fields(fields: list[tuple[str, Any, str | None, str | None]]) -> list[Any]:
    from engine.types import DataField

    return [DataField(i, name, t, comment, default) for i, (name, t, comment, default) in enumerate(fields)]


def _to_spark(s: SqlSession, stmt: Statement) -> StatementResult:

    return StatementResult(stmt, s.spark.sql(stmt.text), None)


def compact(s: SqlSession, n: ast.CompactTable, stmt: Statement) -> StatementResult:
    require_managed(s, n.table, stmt)
    from sqlext.execute.compaction import compact_distributed

    table = s.table(n.table)
    partitions = [coerce_spec(table.schema, n.partition.values())] if n.partition else None
    result = compact_distributed(s.spark, table, full=True, partitions=partitions)
    return done(stmt, "Compaction committed" if result.snapshot_ids else "Nothing to compact")


def add_primary_key(s: SqlSession, n: ast.AddPrimaryKey, stmt: Statement) -> StatementResult:
    """Rewrite an append table as a primary-key table (fails, changing nothing, on duplicate keys)."""
    require_managed(s, n.table, stmt)
    table = s.table(n.table)
    if table.primary_keys:
        raise SqlAnalysisError(f"table '{table.name}' already has a primary key {list(table.primary_keys)}",
                               line=stmt.line, column=stmt.column, sqlstate="42000")
    snapshot = table.latest_snapshot()

    pinned = ReadRequest(
        s.target(table.name), travel=ReadVersion(snapshot_id=snapshot.id) if snapshot else None
    )

    def fresh() -> Any:  # a new relation per query: never reuse one across queries
        return s.read(pinned)

    dup = fresh().groupBy(*n.columns).count().where("count > 1").limit(1).collect()
    if dup:
        raise SqlAnalysisError(
            f"cannot add primary key ({', '.join(n.columns)}): duplicate key {tuple(dup[0])[:-1]}",
            line=stmt.line,
            column=stmt.column,
            sqlstate="23505",
        )
    nulls = fresh().where(" OR ".join(f"`{c}` IS NULL" for c in n.columns)).count()
    if nulls:
        raise SqlAnalysisError("cannot add a primary key over columns holding NULL values", line=stmt.line,
                               column=stmt.column, sqlstate="23502")
    # A new table with the key is filled by a Spark job, then swapped in place of the old one.
    from sqlext.execute.writes import write_frame

    tmp = s.identifier(n.table).base()
    staging = type(tmp)(tmp.database, f"{tmp.table}__pk_rewrite_{s.next_id()}")
    options = {k: v for k, v in table.options.items() if k not in ("bucket", "bucket-key")}
    options.update(
        {k[len("table-storage.") :]: v for k, v in s.options.items() if k == "table-storage.bucket"}
    )
    new = s.catalog.create_table(staging, list(table.schema.fields), table.partition_keys, n.columns, options,
                                 table.schema.comment)
    try:
        count = write_frame(s, new, fresh(), list(new.schema.field_names), overwrite=None)
    except BaseException:
        s.catalog.drop_table(staging, ignore_if_not_exists=True)
        raise
    s.catalog.drop_table(tmp)
    s.catalog.rename_table(staging, tmp)
    return done(stmt, f"Primary key ({', '.join(n.columns)}) added; {count} row(s) rewritten")


def rescale(s: SqlSession, n: ast.RescaleBuckets, stmt: Statement) -> StatementResult:
    """CLUSTERED INTO n BUCKETS: rewrite every file into the new bucket layout in one overwrite."""
    require_managed(s, n.table, stmt)
    if n.partition is not None:
        raise UnsupportedStatementError(
            "rescaling a single partition is not supported: dyntable keeps one bucket count per table "
            "(rescale the whole table)", line=stmt.line, column=stmt.column,
        )
    if n.buckets < 1:
        raise SqlAnalysisError(
            "the bucket count must be at least 1", line=stmt.line, column=stmt.column, sqlstate="22023"
        )
    rescale_table(s, n.table, n.buckets)
    return done(stmt, f"Table rewritten into {n.buckets} bucket(s)")


def rescale_table(s: SqlSession, name: TableName, buckets: int) -> None:
    """Rewrite a managed table into ``buckets`` buckets (also CALL sys.rescale); on failure the old
    layout and files stay."""
    from sqlext.execute.writes import write_frame

    table = s.table(name)
    # Read everything (pinned to the current snapshot), switch the layout, rewrite in one overwrite.
    latest = table.latest_snapshot()
    pinned = ReadRequest(s.target(table.name), travel=ReadVersion(snapshot_id=latest.id) if latest else None)
    frame = s.read(pinned).localCheckpoint()

    def set_buckets(value: str | None) -> None:
        change = SetOption("bucket", value) if value is not None else RemoveOption("bucket")
        s.catalog.alter_table(table.identifier, [change], allow_immutable={"bucket"})

    old_buckets = table.options.get("bucket")
    set_buckets(str(buckets))
    try:
        table = s.table(name)
        write_frame(s, table, frame, list(table.schema.field_names), overwrite=OverwriteSpec())
    except BaseException:
        set_buckets(old_buckets)  # the rewrite failed: the old files keep their old layout
        raise
