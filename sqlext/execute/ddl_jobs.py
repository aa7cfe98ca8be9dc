"""Executors of the DDL statements that run Spark jobs over a table's data: COMPACT, ADD PRIMARY
KEY and CLUSTERED INTO n BUCKETS (rewrites). The metadata-only DDL and CREATE TABLE (with AS
SELECT, a write plan) are planned in ``ddl.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import OverwriteSpec, coerce_spec
from engine.schema_changes import RemoveOption, SetOption
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.common import done, require_managed
from sqlext.execute.results import StatementResult
from sqlext.parse import ast
from sqlext.parse.splitter import Statement
from sqlext.source.requests import ReadRequest, ReadVersion

if TYPE_CHECKING:
    from sqlext.parse.names import TableName
    from sqlext.session import SqlSession

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
