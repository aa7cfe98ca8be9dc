"""Carrying out row-level plans in Spark: the runner's side of ``RowLevelWrite``, ``MarkDeletions``
and ``TruncateTable`` (``planning.py``), and the pieces the row-level executors not yet converted
(UPDATE, MERGE INTO in ``dml.py``) share with it: the target pinned at one snapshot, the data files
(append tables: only those are rewritten, as in Paimon) or partitions (key tables) holding matched
rows, the restriction of a frame to them. An append table's match reads every live file
(``dml_deletion_vectors.positioned_frame``: Spark's Parquet reader, the engine for ORC and Avro),
its rewrite only the touched files.

Only the small list of affected partitions and counts reaches the driver; the rows stay in Spark
and go out in one write job and one commit (``writes.write_frame``).
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine import OverwriteSpec, Table, metadata_names
from sqlext.errors import UnsupportedStatementError
from sqlext.execute.dml_common import HELPER, column_names, count_rows
from sqlext.execute.dml_deletion_vectors import FILE, POS, positioned_frame
from sqlext.execute.planning import Matched, RowLevelWrite, TruncateTable
from sqlext.execute.results import StatementResult
from sqlext.execute.writes import write_frame
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement
from sqlext.source.requests import ReadRequest, ReadVersion

if TYPE_CHECKING:
    from sqlext.session import SqlSession


def run_on_engine(s: SqlSession, stmt: Statement) -> StatementResult:
    """A row-level statement on a table of Spark's: Spark runs it (managed tables it reads bound)."""
    from py4j.protocol import Py4JJavaError

    try:
        return StatementResult(stmt, s.spark_sql(stmt.text, stmt), None)
    except Py4JJavaError as e:
        # Spark refuses row-level changes on its own v1 tables and views with a bare Java error.
        text = str(e.java_exception.getMessage() or e).strip().splitlines()
        raise UnsupportedStatementError(
            f"Spark cannot run this statement on a table dyntable does not manage: {text[0] if text else e}",
            line=stmt.line,
            column=stmt.column,
        ) from None


class Pinned:
    """Fresh temp views of ``table`` at one snapshot: every pass of a statement reads the same rows.

    Each query gets its own view: the data source keeps the filters Spark pushed into a view's
    reader, so a view reused by a second query could filter that query's rows too.
    """

    def __init__(self, s: SqlSession, table: Table, snapshot_id: int | None) -> None:
        self.s = s
        self.snapshot_id = snapshot_id
        # The latest snapshot, in the latest published schema: a column added since the last
        # write reads as NULLs, as Paimon's row-level commands see it (a write's merge-schema
        # evolution is not published yet, so it is not read).
        travel = (ReadVersion(snapshot_id=snapshot_id, current_schema=True)
                  if snapshot_id is not None else None)
        # A row-tracking table's rows are read with their _ROW_ID and _SEQUENCE_NUMBER, which the
        # rows a statement rewrites carry into their new files (Paimon keeps a rewritten row's id).
        extra = tracking_columns(table)
        columns = (*table.refresh().schema.field_names, *extra) if extra else None
        self.request = ReadRequest(s.target(table.name), travel=travel, columns=columns)
        # An empty table (no snapshot, or no live file) is read as an empty frame of its schema
        # without asking the data source for splits it does not have.
        self.empty = snapshot_id is None or not (
            table.new_read_builder().at(snapshot_id=snapshot_id).new_scan().plan().splits)

    @classmethod
    def latest(cls, s: SqlSession, table: Table) -> Pinned:
        latest = table.latest_snapshot()
        return cls(s, table, latest.id if latest is not None else None)

    def view(self) -> str:
        name = f"__dyntable_dml_{self.s.next_id()}"
        df = self.s.read(self.request)
        if self.empty:
            df = self.s.spark.createDataFrame([], df.schema)
        df.createOrReplaceTempView(name)
        return name


def tracking_columns(table: Table) -> tuple[str, ...]:
    """``_ROW_ID`` and ``_SEQUENCE_NUMBER`` for a row-tracking table (its rewritten rows keep
    them), else nothing."""
    hidden = metadata_names(table.schema)
    return tuple(c for c in ("_ROW_ID", "_SEQUENCE_NUMBER") if c in hidden)


def rewrites_files(table: Table) -> bool:
    """Whether a copy-on-write rewrite of ``table`` replaces only the data files holding a matched
    row (append tables, as Paimon does) rather than whole partitions (key tables)."""
    return not table.primary_keys


def live_files(table: Table, snapshot_id: int) -> list[Any]:
    """The live data files of the snapshot, with their paths and schema versions."""
    return table.new_write_builder().deletion_scan_files(table.store.snapshots.get(snapshot_id))


def _positioned_view(s: SqlSession, table: Table, snapshot: Any, files: list[Any]) -> str:
    """A temp view of the rows of ``files`` of the snapshot, each with its file's name (``FILE``)."""
    name = f"__dyntable_dml_{s.next_id()}"
    positioned_frame(s, table, snapshot, files).createOrReplaceTempView(name)
    return name


def in_files(s: SqlSession, df: DataFrame, names: list[str], column: str) -> DataFrame:
    """Rows of ``df`` whose data file (``column``, its name or path) is one of ``names`` (a
    broadcast semi-join with the small list); the column is dropped."""
    listed = s.spark.createDataFrame([(n,) for n in names], f"{HELPER}name string")
    name = F.element_at(F.split(F.col(column), "/"), -1)
    kept = df.join(F.broadcast(listed), on=name == listed[f"{HELPER}name"], how="left_semi")
    return kept.drop(column)


def matching_partitions(
    s: SqlSession, table: Table, pinned: Pinned, matched: Matched, stmt: Statement
) -> tuple[list[dict[str, Any]], int]:
    """The partitions holding the matched rows, and how many such rows (one small job)."""
    keys = table.partition_keys
    a, cond = quoted(matched.alias), matched.condition
    assert cond is not None, "an overwrite of the matched partitions needs a condition"
    if not keys:
        n = s.frame(f"SELECT count(*) AS c FROM {pinned.view()} AS {a} WHERE {cond}", stmt).collect()[0][0]
        return ([{}] if n else []), int(n)
    cols = ", ".join(f"{a}.{quoted(k)}" for k in keys)
    found = s.frame(
        f"SELECT {cols}, count(*) AS {HELPER}n FROM {pinned.view()} AS {a} WHERE {cond} GROUP BY {cols}",
        stmt,
    ).collect()
    specs = [{k: row[i] for i, k in enumerate(keys)} for row in found]
    return specs, int(sum(row[len(keys)] for row in found))


def in_partitions(
    s: SqlSession, df: DataFrame, table: Table, specs: list[dict[str, Any]], columns: list[str] | None = None
) -> DataFrame:
    """Rows of ``df`` whose partition columns (``columns``, default the keys) equal one of ``specs``.

    A broadcast semi-join with the small list, NULL-safe (a NULL partition value is a partition).
    """
    keys = list(table.partition_keys)
    if not keys:
        return df
    cols = columns or keys
    schema = df.select(*[F.col(quoted(c)).alias(f"{HELPER}p{i}") for i, c in enumerate(cols)]).schema
    parts = s.spark.createDataFrame([tuple(spec[k] for k in keys) for spec in specs], schema)
    on = reduce(
        lambda x, y: x & y, [df[quoted(c)].eqNullSafe(parts[f"{HELPER}p{i}"]) for i, c in enumerate(cols)]
    )
    return df.join(F.broadcast(parts), on=on, how="left_semi")


def overwrite_of(table: Table, specs: list[dict[str, Any]]) -> OverwriteSpec:
    """What an overwrite replaces: exactly the affected partitions (the whole table if unpartitioned)."""
    return OverwriteSpec(partitions=tuple(specs)) if table.partition_keys else OverwriteSpec()


def run_row_level_write(s: SqlSession, plan: RowLevelWrite, stmt: Statement) -> StatementResult:
    """Carry out a ``RowLevelWrite``: find what it replaces, then one write job and one commit."""
    table, columns = plan.table, column_names(plan.table)
    by_file = plan.overwrite == "matched" and rewrites_files(table)
    live = live_files(table, plan.snapshot) if by_file and plan.snapshot is not None else None
    pinned = Pinned(s, table, plan.snapshot)
    hints = dict(plan.options) or None
    if plan.overwrite == "none":
        df = s.frame(plan.rows.sql(pinned.view()), stmt)
        count = write_frame(s, table, df, columns, overwrite=None, stmt=stmt, hints=hints, row_ids=True)
    elif plan.overwrite == "all":
        df = s.frame(plan.rows.sql(pinned.view()), stmt)
        count = write_frame(s, table, df, columns, overwrite=OverwriteSpec(), stmt=stmt, hints=hints,
                            base_snapshot_id=plan.snapshot, row_ids=True)
    elif live is not None:
        # Paimon's rule for append tables: only the files holding a matched row are rewritten; the
        # match reads every file natively, the rewrite only the touched ones.
        assert plan.matched is not None and plan.snapshot is not None
        snapshot = table.store.snapshots.get(plan.snapshot)
        view = _positioned_view(s, table, snapshot, live)
        a = quoted(plan.matched.alias)
        found = s.frame(f"SELECT {a}.{FILE} AS f, count(*) AS n FROM {view} AS {a} "
                        f"WHERE {plan.matched.condition} GROUP BY {a}.{FILE}", stmt).collect()
        names, count = [r[0] for r in found], int(sum(r[1] for r in found))
        if count:
            touched = set(names)
            view = _positioned_view(s, table, snapshot, [f for f in live if f.name in touched])
            df = s.frame(plan.rows.sql(view), stmt).drop(FILE, POS)
            if plan.partition_of:  # the partition values before the change, not written
                df = df.select(*[quoted(c) for c in (*columns, *tracking_columns(table))])
            write_frame(s, table, df, columns, overwrite=OverwriteSpec(files=tuple(names)), stmt=stmt,
                        hints=hints, base_snapshot_id=plan.snapshot, row_ids=True)
    else:
        assert plan.overwrite == "matched" and plan.matched is not None
        specs, count = matching_partitions(s, table, pinned, plan.matched, stmt)
        if count:
            df = s.frame(plan.rows.sql(pinned.view()), stmt)
            df = in_partitions(s, df, table, specs, list(plan.partition_of) or None)
            if plan.partition_of:  # the partition values before the change, not written
                df = df.select(*[quoted(c) for c in (*columns, *tracking_columns(table))])
            write_frame(s, table, df, columns, overwrite=overwrite_of(table, specs), stmt=stmt, hints=hints,
                        base_snapshot_id=plan.snapshot, row_ids=True)
    return s.runner.run(count_rows(count, plan.verb), stmt)


def run_truncate(s: SqlSession, plan: TruncateTable, stmt: Statement) -> StatementResult:
    """Carry out a ``TruncateTable``: count first when asked, then one snapshot removing the files."""
    table = plan.table
    if plan.count is not None or plan.count_rows:
        count = plan.count
        if count is None:
            count = s.spark.table(Pinned(s, table, plan.snapshot).view()).count()
        if count:
            table.truncate()
        return s.runner.run(count_rows(count, plan.verb), stmt)
    if plan.partition is None:
        result = table.truncate()
    else:
        result = table.drop_partitions([dict(plan.partition)])
    return StatementResult(stmt, None, plan.message + ("" if result.snapshot_ids else " (it was empty)"))
