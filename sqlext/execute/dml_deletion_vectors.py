"""DELETE, UPDATE and MERGE INTO on append tables with deletion vectors: mark rows, rewrite no file.

```
 pinned snapshot S ──► every live file read by Spark's native Parquet scan, per schema version
                       (columns mapped by field id), plus _metadata.file_name / row_index,
                       minus the rows its DV marks already (broadcast anti-join); a table holding
                       ORC or Avro files is read by the engine with Paimon's file-path / row-index
                       metadata columns instead
        │ the statement's condition / MERGE join runs in Spark on that view
        ▼
 matched (file, position) pairs ──► driver (Arrow) ──► engine.AppendDeletionCommit: Roaring DVs
 UPDATE/MERGE: the new rows ──► engine writers in Spark tasks ──► commit messages ──► driver
        ▼
 one snapshot: new DV index files (+ new data files); a concurrent change of the same DVs or files
 fails the statement (CommitConflictError), nothing half-done
```
This is Paimon 0.9+'s behaviour for append tables with ``'deletion-vectors.enabled' = 'true'``
(its Spark ``DeleteFromPaimonTableCommand`` / ``UpdatePaimonTableCommand`` / ``MergeIntoPaimonTable``).
Only the matched positions reach the driver (two integers a row), never the table's rows.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from engine import Table, WriteBuilder, WriteJob, group_positions, metadata_names
from sqlext.execute.dml_common import count_rows, merge_rows
from sqlext.execute.planning import MarkDeletions, MergeInto
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement
from sqlext.source.spark_types import spark_schema

if TYPE_CHECKING:
    from sqlext.execute.results import StatementResult
    from sqlext.session import SqlSession

FILE, POS = "__dyn_file", "__dyn_pos"
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def _uri(path: str) -> str:
    return path if "://" in path else "file://" + path


def positioned_frame(s: SqlSession, table: Table, snapshot: Any, files: list[Any] | None = None) -> DataFrame:
    """The live rows of ``snapshot``, each with its data file and position (``__dyn_file``/``__dyn_pos``);
    ``files``: only those of its live files (``WriteBuilder.deletion_scan_files``), default all."""
    spark = s.spark
    subset = None if files is None else {f.name for f in files}
    if files is None:
        files = table.new_write_builder().deletion_scan_files(snapshot) if snapshot is not None else []
    # The latest published schema: a column added since the snapshot's write reads as NULLs (as
    # Paimon's row-level commands see the table).
    current = table.refresh().schema
    target = spark_schema(current.arrow_schema())
    out = [StructField(FILE, StringType()), StructField(POS, LongType())]
    tracked = [c for c in ("_ROW_ID", "_SEQUENCE_NUMBER") if c in metadata_names(table.schema)]
    extra = [StructField(c, LongType()) for c in tracked]
    if not files:
        return spark.createDataFrame([], StructType([*target.fields, *extra, *out]))
    if any(not f.name.endswith(".parquet") for f in files):
        frame = _engine_positioned_frame(s, table, snapshot, current, target, tracked)
        return frame if subset is None else frame.where(F.col(FILE).isin(sorted(subset)))
    frames = []
    for schema_id in sorted({f.schema_id for f in files}):
        old = table.schema_by_id(schema_id)
        old_struct = spark_schema(old.arrow_schema())
        cols = []
        physical = []
        for field, out_field in zip(current.fields, target.fields, strict=True):
            try:
                before = old.field_by_id(field.id)
            except LookupError:
                cols.append(F.lit(None).cast(out_field.dataType).alias(field.name))
                continue
            physical.append(old_struct[before.name])
            cols.append(F.col(quoted(before.name)).cast(out_field.dataType).alias(field.name))
        paths = [_uri(f.path) for f in files if f.schema_id == schema_id]
        # A rewritten file of a row-tracking table holds its rows' ids; others read NULL there.
        physical += extra
        cols += [F.col(c) for c in tracked]
        frame = _read_parquet(s, StructType(physical), paths)
        frames.append(frame.select(*cols, F.col("_metadata.file_name").alias(FILE),
                                   F.col("_metadata.row_index").alias(POS)))
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    if tracked:
        frame = _with_row_tracking(s, frame, files)
    deleted = [f for f in files if f.deleted.size]
    if deleted:
        sizes = [f.deleted.size for f in deleted]
        names = np.repeat(np.array([f.name for f in deleted], dtype=object), sizes)
        positions = np.concatenate([f.deleted for f in deleted])
        gone = pa.table({FILE: pa.array(names, pa.string()), POS: positions})
        frame = frame.join(F.broadcast(spark.createDataFrame(gone.to_pandas())), [FILE, POS], "left_anti")
    return frame


def _engine_positioned_frame(s: SqlSession, table: Table, snapshot: Any, current: Any, target: StructType,
                             tracked: Sequence[str]) -> DataFrame:
    """:func:`positioned_frame` for tables holding ORC or Avro files, which Spark's Parquet scan
    cannot read: the engine reads them (the data source, deletion vectors applied) with Paimon's
    ``__paimon_file_path`` / ``__paimon_row_index`` metadata columns (positions before the DVs)."""
    from sqlext.source.requests import ReadRequest, ReadVersion

    path, index = "__paimon_file_path", "__paimon_row_index"
    columns = (*current.field_names, *tracked, path, index)
    request = ReadRequest(s.target(table.name), travel=ReadVersion(snapshot_id=snapshot.id), columns=columns)
    frame = s.spark.read.format("dyntable").options(**request.to_options()).load()
    pairs = zip(current.fields, target.fields, strict=True)
    cols = [F.col(quoted(f.name)).cast(t.dataType).alias(t.name) for f, t in pairs]
    return frame.select(*cols, *[F.col(c) for c in tracked],
                        F.element_at(F.split(F.col(path), "/"), -1).alias(FILE), F.col(index).alias(POS))


def _with_row_tracking(s: SqlSession, frame: DataFrame, files: list[Any]) -> DataFrame:
    """``_ROW_ID`` / ``_SEQUENCE_NUMBER`` as Paimon's readers give them: a file's own value, else
    its first row id plus the row's position, and its maximum sequence number (engine.row_tracking)."""
    meta = s.spark.createDataFrame([(f.name, f.first_row_id, f.max_sequence_number) for f in files],
                                   f"{FILE} string, __dyn_first bigint, __dyn_seq bigint")
    frame = frame.join(F.broadcast(meta), [FILE], "left")
    return (frame.withColumn("_ROW_ID", F.coalesce(F.col("_ROW_ID"), F.col("__dyn_first") + F.col(POS)))
            .withColumn("_SEQUENCE_NUMBER", F.coalesce(F.col("_SEQUENCE_NUMBER"), F.col("__dyn_seq")))
            .drop("__dyn_first", "__dyn_seq"))


def _read_parquet(s: SqlSession, schema: StructType, paths: list[str]) -> DataFrame:
    """``spark.read.parquet`` of known files, listed in the driver (Spark lists more than the
    discovery threshold, 32 paths, with a Spark job: seconds for files the plan named already)."""
    conf = s.spark.conf
    previous = conf.get(_LISTING_THRESHOLD, None)
    conf.set(_LISTING_THRESHOLD, str(max(len(paths) + 1, 32)))
    try:
        return s.spark.read.schema(schema).parquet(*paths)
    finally:
        if previous is None:
            conf.unset(_LISTING_THRESHOLD)
        else:
            conf.set(_LISTING_THRESHOLD, previous)


def _positions(df: DataFrame) -> dict[str, Any]:
    arrow = df.select(FILE, POS).toArrow()
    return group_positions(arrow.column(FILE), arrow.column(POS))


def write_rows(s: SqlSession, table: Table, df: DataFrame, builder: WriteBuilder) -> list[Any]:
    """Write ``df`` (the table's columns) with engine writers in Spark tasks; their commit messages.
    A failed job deletes the files its finished tasks wrote (``WriteJob.tasks_failed``)."""
    from sqlext.execute.writes import shape_frame
    from sqlext.source.datasource import cluster_for_writers, write_task

    columns = list(table.schema.field_names)
    frame = cluster_for_writers(shape_frame(s, table, df, columns, row_ids=True), table)
    job = WriteJob.for_batch(builder, prefix="dml-")
    tasks = job.tasks()

    def task(batches: Any) -> Any:
        messages = write_task(tasks, batches)
        yield pa.RecordBatch.from_pydict({"m": [pickle.dumps(messages)]}, pa.schema([("m", pa.binary())]))

    try:
        blobs = frame.mapInArrow(task, "m binary").toArrow().column("m").to_pylist()
    except BaseException:
        job.tasks_failed()
        raise
    return [m for blob in blobs for m in pickle.loads(blob)]


def _commit(s: SqlSession, table: Table, snapshot: Any, touched: DataFrame,
            new_rows: DataFrame | None) -> int:
    """Mark ``touched`` rows deleted and add ``new_rows``; one snapshot. Returns the rows marked."""
    # (a row-tracking table's updated rows keep their ids: WriteBuilder.keeping_row_ids)
    builder = table.new_write_builder(None, commit_user=f"dv-{uuid.uuid4()}").keeping_row_ids()
    deletions = builder.new_deletion_commit(snapshot)
    count = deletions.delete(_positions(touched)) if snapshot is not None else 0
    messages = write_rows(s, table, new_rows, builder) if new_rows is not None else []
    if count or messages:
        # One snapshot, then the post-commit hooks (tags, expiration; compaction of new files).
        builder.new_commit().commit_with_deletions(deletions, messages)
    return count


def mark_deletions(s: SqlSession, plan: MarkDeletions, stmt: Statement) -> StatementResult:
    """Carry out a ``MarkDeletions`` plan (DELETE … WHERE, UPDATE on a DV table): one snapshot."""
    table, matched = plan.table, plan.matched
    snapshot = plan.snapshot
    alias = quoted(matched.alias)
    view = f"__dyntable_dv_{s.next_id()}"
    positioned_frame(s, table, snapshot).createOrReplaceTempView(view)
    where = f" WHERE {matched.condition}" if matched.condition is not None else ""
    if plan.rows is None:  # DELETE
        touched = s.frame(f"SELECT {alias}.{FILE}, {alias}.{POS} FROM {view} AS {alias}{where}", stmt)
        return s.runner.run(count_rows(_commit(s, table, snapshot, touched, None), plan.verb), stmt)
    # UPDATE: the new rows and the positions they replace, from one evaluation (so they agree).
    found = s.frame(f"SELECT {plan.rows}, {alias}.{FILE}, {alias}.{POS} FROM {view} AS {alias}{where}", stmt)
    found = found.localCheckpoint()
    marked = _commit(s, table, snapshot, found, found.drop(FILE, POS))
    return s.runner.run(count_rows(marked, plan.verb), stmt)


def merge(s: SqlSession, plan: MergeInto, stmt: Statement) -> StatementResult:
    """MERGE on a DV append table: DV the updated/deleted target rows, add updated + inserted rows."""
    from sqlext.execute.merge_plan import CLAUSE_COLUMN, MergeJob

    table, snapshot = plan.table, plan.snapshot
    view = f"__dyntable_dv_{s.next_id()}"
    positioned_frame(s, table, snapshot).createOrReplaceTempView(view)
    job = MergeJob(s, plan.clauses, stmt)
    tracking = tuple(c for c in ("_ROW_ID", "_SEQUENCE_NUMBER") if c in metadata_names(table.schema))
    # evaluated once: checks, counts, write agree
    joined = job.joined_frame(view, (FILE, POS, *tracking)).localCheckpoint()
    job.check_cardinality(joined)
    job.check_keys(joined)
    counts = job.counts(joined)
    if counts["update"] + counts["delete"] + counts["insert"]:
        touched = job.touched(joined)
        updated = touched.where(F.col(CLAUSE_COLUMN).isin(job.ids("update")))
        # Updated rows keep their _ROW_ID; inserted ones have none and take new ids at commit.
        new_rows = job.tracked(updated, tracking).unionByName(job.inserted_rows(joined),
                                                              allowMissingColumns=bool(tracking))
        _commit(s, table, snapshot, touched.select(F.col(FILE), F.col(POS)), new_rows)
    return s.runner.run(merge_rows(counts), stmt)
