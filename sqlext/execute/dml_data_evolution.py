"""UPDATE, DELETE and MERGE INTO on data-evolution tables, carried out in Spark: rows changed by
row id, never rewritten (Paimon 2.0's ``MergeIntoPaimonDataEvolutionTable``).

```
 target pinned at snapshot S, read with _ROW_ID (the data source assembles each row-id range)
   UPDATE / MERGE's updated rows ──► each row's range (searchsorted over S's ranges, in Spark)
        ranges holding an updated row: their rows, the set columns only, one task per range group,
        sorted by _ROW_ID ──► engine.ColumnUpdateWriter: one file of those columns per range
   DELETE / MERGE's deleted rows ──► their _ROW_IDs (the driver) ──► the anchor files' DVs
   MERGE's inserted rows ──► engine writers in Spark tasks (new rows, new ids at commit)
        ▼
 engine.RowIdChanges.commit: one snapshot; a range changed meanwhile (a compaction) fails it
```
The planners (``row_level``, ``merge_clauses``) decide which columns change and refuse what
Paimon refuses (DELETE without deletion vectors, NOT MATCHED BY SOURCE other than DELETE, a
partition column set). Only row ids of deleted rows and the list of touched ranges reach the
driver, never the table's rows.
"""

from __future__ import annotations

import pickle
import uuid
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from engine import ColumnUpdateWriter, CommitMessage, RowIdChanges, Table
from sqlext.execute.dml_common import HELPER, count_rows, merge_rows
from sqlext.execute.dml_deletion_vectors import write_rows
from sqlext.execute.planning import MarkDeletions, MergeInto, UpdateColumns
from sqlext.execute.row_level_writes import Pinned
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement
from sqlext.source.spark_types import spark_schema

if TYPE_CHECKING:
    from sqlext.execute.results import StatementResult
    from sqlext.session import SqlSession

ROW_ID = "_ROW_ID"
FIRST = f"{HELPER}first"  # the first row id of a row's range


def delete(s: SqlSession, plan: MarkDeletions, stmt: Statement) -> StatementResult:
    """DELETE … WHERE on a data-evolution table with deletion vectors: the matched rows' ids
    marked on their ranges' anchor files, one snapshot."""
    table, matched = plan.table, plan.matched
    pinned = Pinned(s, table, plan.snapshot.id)
    a = quoted(matched.alias)
    where = f" WHERE {matched.condition}" if matched.condition is not None else ""
    ids = s.frame(f"SELECT {a}.{ROW_ID} FROM {pinned.view()} AS {a}{where}", stmt)
    changes = _changes(table, plan.snapshot)
    count = changes.delete(_row_ids(ids))
    _commit(table, changes, [])
    return s.runner.run(count_rows(count, plan.verb), stmt)


def update(s: SqlSession, plan: UpdateColumns, stmt: Statement) -> StatementResult:
    """UPDATE of a data-evolution table: the set columns written over the matched rows' ranges."""
    table = plan.table
    pinned = Pinned(s, table, plan.snapshot.id if plan.snapshot is not None else None)
    rows = s.frame(plan.rows.sql(pinned.view()), stmt).localCheckpoint()  # one evaluation: count, write
    count = rows.where(F.col(plan.matched_column)).count()
    if count and plan.columns:
        changes = _changes(table, plan.snapshot)
        messages = write_columns(s, table, changes, rows, plan.matched_column, plan.columns)
        _commit(table, changes, messages)
    return s.runner.run(count_rows(count, plan.verb), stmt)


def merge(s: SqlSession, plan: MergeInto, stmt: Statement) -> StatementResult:
    """MERGE into a data-evolution table: updated columns by row id, deleted rows in the anchors'
    deletion vectors, inserted rows appended; one snapshot."""
    from sqlext.execute.merge_plan import CLAUSE_COLUMN, MergeJob

    table, snapshot = plan.table, plan.snapshot
    pinned = Pinned(s, table, snapshot.id if snapshot is not None else None)
    job = MergeJob(s, plan.clauses, stmt)
    joined = job.joined_frame(pinned.view(), (ROW_ID,)).localCheckpoint()  # checks, counts, writes agree
    job.check_cardinality(joined)
    job.check_keys(joined)
    counts = job.counts(joined)
    if not counts["update"] + counts["delete"] + counts["insert"]:
        return s.runner.run(merge_rows(counts), stmt)
    clause = F.col(CLAUSE_COLUMN)
    changes = _changes(table, snapshot)
    messages: list[CommitMessage] = []
    if counts["update"] and plan.update_columns:
        marked = f"{HELPER}m"
        kept = job.target_rows(joined)  # every target row once, deleted ones left out (their ids: gaps)
        rows = job.project(kept, F.col(ROW_ID), clause.isin(job.ids("update")).alias(marked))
        rows = rows.select(ROW_ID, marked, *[quoted(c) for c in plan.update_columns])
        messages += write_columns(s, table, changes, rows, marked, plan.update_columns)
    if counts["delete"]:
        changes.delete(_row_ids(joined.where(clause.isin(job.ids("delete"))).select(ROW_ID)))
    if counts["insert"]:
        builder = table.new_write_builder(None, commit_user=changes.commit_user)
        messages += write_rows(s, table, job.inserted_rows(joined), builder)
    _commit(table, changes, messages)
    return s.runner.run(merge_rows(counts), stmt)


def _changes(table: Table, snapshot: Any) -> RowIdChanges:
    return RowIdChanges(table.store, snapshot, f"sql-{uuid.uuid4()}")


def _row_ids(df: DataFrame) -> np.ndarray:
    return df.toArrow().column(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _commit(table: Table, changes: RowIdChanges, messages: list[CommitMessage]) -> None:
    """One snapshot, then the post-commit hooks (tags, expiration) as every write runs them."""
    result = changes.commit(messages)
    if result.snapshot_ids:
        commit = table.new_write_builder(None, commit_user=changes.commit_user).new_commit()
        commit.hooks.run(table.store, messages)


def write_columns(s: SqlSession, table: Table, changes: RowIdChanges, rows: DataFrame, marked: str,
                  columns: tuple[str, ...]) -> list[CommitMessage]:
    """Write ``columns`` of ``rows`` (every live row of the snapshot with its ``_ROW_ID``;
    ``marked``: whether it changed) for each row-id range holding a changed row: one file per
    range, written by engine writers in Spark tasks; their commit messages. A failed job deletes
    the files it wrote."""
    ranges = changes.ranges
    starts = np.fromiter((r.first_row_id for r in ranges), np.int64, len(ranges))

    def locate(batches: Any) -> Any:
        for b in batches:
            ids = b.column(ROW_ID).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            idx = np.maximum(np.searchsorted(starts, ids, side="right") - 1, 0)
            yield b.append_column(FIRST, pa.array(starts[idx] if starts.size else ids))

    located = rows.mapInArrow(locate, StructType([*rows.schema.fields, StructField(FIRST, LongType())]))
    touched = [r[0] for r in located.where(F.col(marked)).select(FIRST).distinct().collect()]
    if not touched:
        return []
    wanted = s.spark.createDataFrame([(int(t),) for t in touched], f"{FIRST} bigint")
    types = spark_schema(table.schema.arrow_schema())
    values = [F.col(quoted(c)).cast(types[c].dataType).alias(c) for c in columns]
    data = (located.join(F.broadcast(wanted), [FIRST], "left_semi")
            .select(FIRST, ROW_ID, *values)
            .repartition(min(len(touched), s.spark.sparkContext.defaultParallelism), FIRST)
            .sortWithinPartitions(FIRST, ROW_ID))
    by_first = {r.first_row_id: r for r in ranges}
    store, job = table.store, f"dml-{uuid.uuid4().hex}"

    def task(batches: Any) -> Any:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        writer = ColumnUpdateWriter.for_task(store, columns, job, ctx.partitionId() if ctx else 0,
                                             ctx.attemptNumber() if ctx else 0)
        got = list(batches)
        messages = []
        if got and sum(b.num_rows for b in got):
            part = pa.Table.from_batches(got)
            firsts = part.column(FIRST).to_numpy()
            ids = part.column(ROW_ID).to_numpy()
            bounds = [0, *(np.flatnonzero(np.diff(firsts)) + 1).tolist(), part.num_rows]
            for lo, hi in zip(bounds, bounds[1:], strict=False):
                rng = by_first[int(firsts[lo])]
                messages.append(writer.write(rng, ids[lo:hi], part.slice(lo, hi - lo)))
        yield pa.RecordBatch.from_pydict({"m": [pickle.dumps(messages)]}, pa.schema([("m", pa.binary())]))

    try:
        blobs = data.mapInArrow(task, "m binary").toArrow().column("m").to_pylist()
    except BaseException:
        table.new_write_builder().delete_job_files(job)
        raise
    return [m for blob in blobs for m in pickle.loads(blob)]
