"""The runner's side of COPY INTO: files read by Spark's own readers, checked, written, reported.

Loading (``CopyIntoTable``), as Paimon 2.0's Spark integration does: the source directory's direct
files whose base name matches PATTERN are listed; without FORCE the ones the table's load history
holds (same path, size and modification time) are skipped. CSV and JSON are read as strings and
cast to the target types; a non-null value whose cast is NULL is a cast failure (Parquet keeps its
types and is cast by name). ON_ERROR = ABORT_STATEMENT refuses the statement on the first
malformed record or cast failure (nothing is written); CONTINUE writes every good row; SKIP_FILE
writes only files without errors. The rows go through the ``Write`` an INSERT plans (one commit),
the history records each loaded file under ``<table>/copy-into/history`` (Paimon's layout and
JSON fields), and the result has one row per file: ``file_name, status, rows_loaded, rows_parsed,
errors_seen, first_error``. All of it is Spark jobs over columns; no per-row Python.

Writing files (``CopyToLocation``): Spark's writer, one row ``output_path, file_count, rows_written``.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import BoundFrame, CopyIntoTable, CopyToLocation
from sqlext.execute.results import StatementResult
from sqlext.execute.writes import run_write
from sqlext.parse.names import quoted

if TYPE_CHECKING:
    from sqlext.parse.splitter import Statement
    from sqlext.session import SqlSession

RESULT = pa.schema([("file_name", pa.string()), ("status", pa.string()), ("rows_loaded", pa.int64()),
                    ("rows_parsed", pa.int64()), ("errors_seen", pa.int64()), ("first_error", pa.string())])
_FILE = "__copy_file__"
_CORRUPT = "__copy_corrupt__"
_CAST_FAILURE = ("Cast failure in column '{}'. Source data contains values that cannot be converted to the "
                 "target type.")


@dataclass(frozen=True)
class _File:
    """One listed source file, as Hadoop's file system (Spark's and Paimon's) reports it."""

    uri: str
    name: str
    size: int
    mtime: int  # epoch milliseconds


def _hadoop_fs(s: SqlSession, path: str) -> tuple[Any, Any]:
    jvm = s.spark.sparkContext._jvm
    assert jvm is not None, "a running SparkSession has a JVM gateway"
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(s.spark._jsc.hadoopConfiguration()), hpath


def _files(s: SqlSession, source: str, pattern: str | None) -> list[_File]:
    """The directory's direct files whose base name ``pattern`` finds, listed by Spark's Hadoop
    file system: the same paths, sizes and times Paimon records, under the session's storage
    settings (a listing, not a data path: one entry per file)."""
    fs, path = _hadoop_fs(s, source)
    if not fs.exists(path):
        return []
    regex = re.compile(pattern) if pattern is not None else None
    files = [_File(st.getPath().toString(), st.getPath().getName(), st.getLen(), st.getModificationTime())
             for st in fs.listStatus(path) if st.isFile()]
    return sorted((f for f in files if regex is None or regex.search(f.name)), key=lambda f: f.name)


class _History:
    """The table's COPY INTO load history, in Paimon's layout: ``copy-into/history/load-<sha>-<ms>``
    (the first 16 hex digits of the path's SHA-256, then the load time), one JSON record per load."""

    def __init__(self, plan: CopyIntoTable) -> None:
        self.io = plan.table.store.io
        self.dir = posixpath.join(plan.table.path, "copy-into", "history")

    @staticmethod
    def _key(path: str) -> str:
        return hashlib.sha256(path.encode()).hexdigest()[:16]

    def loaded(self) -> set[tuple[str, int, int]]:
        """``(path, size, modification time)`` of every file the history records as loaded (one
        listing per statement); an unreadable record is no load, as Paimon reads it."""
        out = set()
        for status in self.io.list_dir(self.dir):
            if not posixpath.basename(status.path).startswith("load-"):
                continue
            try:
                record = json.loads(self.io.read_text(status.path))
                out.add((str(record["filePath"]), int(record["fileSize"]), int(record["lastModified"])))
            except (ValueError, KeyError, TypeError):
                continue
        return out

    def record(self, path: str, size: int, mtime: int, snapshot: int | None, rows: int) -> None:
        now = int(time.time() * 1000)
        body = {"filePath": path, "fileSize": size, "lastModified": mtime, "loadedAt": now,
                "snapshotId": snapshot if snapshot is not None else -1, "rowsLoaded": rows}
        self.io.write_text(posixpath.join(self.dir, f"load-{self._key(path)}-{now}"), json.dumps(body))


def _read(s: SqlSession, plan: CopyIntoTable, paths: list[str], tolerant: bool) -> DataFrame:
    reader = s.spark.read.options(**plan.reader_options)
    if plan.format == "PARQUET":
        return reader.parquet(*paths)
    names = list(plan.columns) if plan.format == "JSON" else [f"_c{i}" for i in range(len(plan.columns))]
    fields = [StructField(n, StringType()) for n in names]
    if tolerant:
        fields.append(StructField(_CORRUPT, StringType()))
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", _CORRUPT)
    else:
        reader = reader.option("mode", "FAILFAST")
    reader = reader.schema(StructType(fields))
    df = reader.json(paths) if plan.format == "JSON" else reader.csv(paths)  # a list: a 2nd arg is a schema
    if plan.format == "CSV":
        df = df.toDF(*plan.columns, *([_CORRUPT] if tolerant else []))
    return df


def _nulls(plan: CopyIntoTable, df: DataFrame) -> DataFrame:
    if plan.format == "PARQUET" or (not plan.null_if and not plan.empty_as_null):
        return df
    drop = list(plan.null_if) + ([""] if plan.empty_as_null else [])
    return df.select(*[F.when(F.col(quoted(c)).isin(drop), F.lit(None)).otherwise(F.col(quoted(c))).alias(c)
                       if c in plan.columns else F.col(quoted(c)) for c in df.columns])


def _source_column(df: DataFrame, name: str) -> str | None:
    return next((c for c in df.columns if c.lower() == name.lower()), None)


def _cast(plan: CopyIntoTable, df: DataFrame) -> tuple[DataFrame, Any]:
    """The target columns cast (``try_cast``: a failure is NULL), plus a ``__bad_<i>`` flag per
    column; returns the frame and the expression "some cast failed"."""
    out, flags = [], []
    for i, (name, cast, is_string) in enumerate(zip(plan.columns, plan.casts, plan.strings, strict=True)):
        src = _source_column(df, name)
        if src is None:  # a JSON / Parquet file without the field: NULL
            out.append(F.expr(f"CAST(NULL AS {cast})").alias(name))
            continue
        value = F.col(quoted(src))
        text = is_string and plan.format != "PARQUET"  # a string read as a string never fails
        casted = value if text else F.expr(f"try_cast({quoted(src)} AS {cast})")
        out.append(casted.alias(name))
        if not text:
            flag = f"__bad_{i}"
            out.append((value.isNotNull() & casted.isNull()).alias(flag))
            flags.append(F.col(flag))
    extra = [F.col(c) for c in (_FILE, _CORRUPT) if c in df.columns]
    bad = F.lit(False)
    for f in flags:
        bad = bad | f
    return df.select(*out, *extra), bad


def _first_bad_column(plan: CopyIntoTable, row: Any) -> str:
    return next((name for i, name in enumerate(plan.columns) if row.asDict().get(f"__bad_{i}")), "unknown")


def _malformed(e: Exception) -> bool:
    text = str(e)
    return "MALFORMED" in text.upper() or "Malformed" in text


def run_copy_into(s: SqlSession, plan: CopyIntoTable, stmt: Statement) -> StatementResult:
    history = _History(plan)
    load: list[_File] = []
    skipped: list[_File] = []
    done = history.loaded() if not plan.force else set()
    for f in _files(s, plan.source, plan.pattern):
        (skipped if (f.uri, f.size, f.mtime) in done else load).append(f)
    rows: list[tuple[str, str, int, int, int, str | None]] = []
    if load:
        rows = _load(s, plan, stmt, load, history)
    rows += [(f.name, "SKIPPED", 0, 0, 0, None) for f in skipped]
    table = pa.Table.from_pylist([dict(zip(RESULT.names, r, strict=True)) for r in rows], schema=RESULT)
    return StatementResult(stmt, s.arrow_frame(table), f"{len(load)} files loaded")


def _load(s: SqlSession, plan: CopyIntoTable, stmt: Statement, load: list[_File],
          history: _History) -> list[tuple[str, str, int, int, int, str | None]]:
    tolerant = plan.on_error != "ABORT_STATEMENT"
    raw = _read(s, plan, [f.uri for f in load], tolerant)
    # the base name as listed: input_file_name() is a URI (a space is %20)
    raw = raw.withColumn(_FILE, F.expr("url_decode(element_at(split(input_file_name(), '/'), -1))"))
    checked, bad = _cast(plan, _nulls(plan, raw))
    parse_bad = F.col(_CORRUPT).isNotNull() if tolerant and plan.format != "PARQUET" else F.lit(False)
    checked = checked.withColumn("__parse_bad", parse_bad)
    checked = checked.withColumn("__cast_bad", ~F.col("__parse_bad") & bad)
    checked = checked.persist()
    try:
        try:
            stats = checked.groupBy(_FILE).agg(
                F.count(F.lit(1)).alias("parsed"),
                F.sum(F.col("__parse_bad").cast("long")).alias("parse_errors"),
                F.sum(F.col("__cast_bad").cast("long")).alias("cast_errors"),
            ).collect()
        except Exception as e:  # FAILFAST: Spark's reader met a malformed record
            if _malformed(e):
                raise SqlAnalysisError(f"ON_ERROR = ABORT_STATEMENT: malformed record in the source files: "
                                       f"{str(e).splitlines()[0][:300]}", line=stmt.line, column=stmt.column,
                                       sqlstate="22P02") from None
            raise
        counts = {r[_FILE]: (r["parsed"], r["parse_errors"] or 0, r["cast_errors"] or 0) for r in stats}
        errors: dict[str, str] = {}
        if any(p or c for _, p, c in counts.values()):
            samples = checked.filter("__parse_bad OR __cast_bad").dropDuplicates([_FILE]).collect()
            for row in samples:
                if row["__parse_bad"]:
                    errors[row[_FILE]] = f"Malformed record: {row[_CORRUPT]}"
                else:
                    errors[row[_FILE]] = _CAST_FAILURE.format(_first_bad_column(plan, row))
            if not tolerant:
                name = next(iter(errors))
                raise SqlAnalysisError(f"ON_ERROR = ABORT_STATEMENT: {errors[name]}", line=stmt.line,
                                       column=stmt.column, sqlstate="22018")
        failed = {f for f, (_, p, c) in counts.items() if p or c}
        good = checked.filter("NOT (__parse_bad OR __cast_bad)")
        if plan.on_error == "SKIP_FILE" and failed:
            good = good.filter(~F.col(_FILE).isin(sorted(failed)))
        frame = good.select(*[F.col(quoted(c)) for c in plan.columns])
        run_write(s, plan.write_for(BoundFrame(frame, None, ())), stmt)
    finally:
        checked.unpersist()
    latest = s.catalog.get_table(plan.table.identifier).latest_snapshot()
    snapshot = latest.id if latest is not None else None
    out = []
    for f in load:
        parsed, p, c = counts.get(f.name, (0, 0, 0))
        errs = p + c
        if plan.on_error == "SKIP_FILE" and errs:
            out.append((f.name, "LOAD_FAILED", 0, parsed, errs, errors.get(f.name)))
            continue
        loaded = max(0, parsed - errs)
        status = "LOAD_FAILED" if errs and not loaded else "PARTIALLY_LOADED" if errs else "LOADED"
        if loaded or not errs:
            history.record(f.uri, f.size, f.mtime, snapshot, loaded)
        out.append((f.name, status, loaded, parsed, errs, errors.get(f.name)))
    return out


def run_copy_to_location(s: SqlSession, plan: CopyToLocation, stmt: Statement) -> StatementResult:
    frame = plan.frame.frame
    count = frame.count()
    fs, path = _hadoop_fs(s, plan.target)
    if not plan.overwrite and fs.exists(path):
        raise SqlAnalysisError(f"Target path already exists: {plan.target}; use OVERWRITE = TRUE",
                               line=stmt.line, column=stmt.column, sqlstate="42710")
    mode = "overwrite" if plan.overwrite else "errorifexists"
    frame.write.format(plan.format).options(**plan.options).mode(mode).save(plan.target)
    written = [st for st in fs.listStatus(path) if st.isFile()
               and not st.getPath().getName().startswith(("_", "."))]  # not _SUCCESS, not .crc
    table = pa.table({"output_path": pa.array([plan.target]),
                      "file_count": pa.array([len(written)], pa.int32()),
                      "rows_written": pa.array([count], pa.int64())})
    return StatementResult(stmt, s.arrow_frame(table), f"{count} rows written")
