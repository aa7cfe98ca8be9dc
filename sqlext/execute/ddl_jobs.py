"""Carrying out the DDL plans that run Spark jobs over a table's data (``planning.TableJob``):
COMPACT, ADD PRIMARY KEY and CLUSTERED INTO n BUCKETS. Their planners are in ``ddl.py``; this is
the runner's side (``runner.PlanRunner``), and ``rescale_table`` also serves CALL sys.rescale.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import OverwriteSpec
from engine.schema_changes import RemoveOption, SetOption
from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import AddPrimaryKey, Compact, TableJob
from sqlext.parse.splitter import Statement
from sqlext.source.requests import ReadRequest, ReadVersion

if TYPE_CHECKING:
    from sqlext.parse.names import TableName
    from sqlext.session import SqlSession


def run_table_job(s: SqlSession, job: TableJob, stmt: Statement) -> str:
    """Carry out a rewrite plan; the status message."""
    if isinstance(job, Compact):
        from sqlext.execute.compaction import compact_distributed

        partitions = list(job.partitions) if job.partitions is not None else None
        result = compact_distributed(s.spark, job.table, full=True, partitions=partitions)
        return "Compaction committed" if result.snapshot_ids else "Nothing to compact"
    if isinstance(job, AddPrimaryKey):
        return _add_primary_key(s, job, stmt)
    rescale_table(s, job.name, job.buckets)
    return job.message


def _add_primary_key(s: SqlSession, job: AddPrimaryKey, stmt: Statement) -> str:
    """Rewrite an append table as a primary-key table (fails, changing nothing, on duplicate keys)."""
    table, columns = job.table, list(job.columns)
    travel = ReadVersion(snapshot_id=job.snapshot) if job.snapshot is not None else None
    pinned = ReadRequest(s.target(table.name), travel=travel)

    def fresh() -> Any:  # a new relation per query: never reuse one across queries
        return s.read(pinned)

    dup = fresh().groupBy(*columns).count().where("count > 1").limit(1).collect()
    if dup:
        raise SqlAnalysisError(
            f"cannot add primary key ({', '.join(columns)}): duplicate key {tuple(dup[0])[:-1]}",
            line=stmt.line,
            column=stmt.column,
            sqlstate="23505",
        )
    nulls = fresh().where(" OR ".join(f"`{c}` IS NULL" for c in columns)).count()
    if nulls:
        raise SqlAnalysisError("cannot add a primary key over columns holding NULL values", line=stmt.line,
                               column=stmt.column, sqlstate="23502")
    # A new table with the key is filled by a Spark job, then swapped in place of the old one.
    from sqlext.execute.writes import write_frame

    tmp = table.identifier.base()
    staging = type(tmp)(tmp.database, f"{tmp.table}__pk_rewrite_{s.next_id()}")
    new = s.catalog.create_table(staging, list(table.schema.fields), table.partition_keys, columns,
                                 dict(job.options), table.schema.comment)
    try:
        count = write_frame(s, new, fresh(), list(new.schema.field_names), overwrite=None)
    except BaseException:
        s.catalog.drop_table(staging, ignore_if_not_exists=True)
        raise
    s.catalog.drop_table(tmp)
    s.catalog.rename_table(staging, tmp)
    return f"Primary key ({', '.join(columns)}) added; {count} row(s) rewritten"


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
