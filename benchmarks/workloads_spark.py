"""Spark workloads: W1 append write, W2 PK upsert, W3/W3b/W3c scans, W4 compaction, W9 streaming.

Each ``run_*`` takes a :class:`benchmarks.harness.Context` and returns its results. The Spark
session is created once per suite (``ctx.cache["spark"]``) with the project's
``build_spark`` settings; the suite stops it at the end.

Invariants:
* Both arms read or write the same rows: DataFrames are built from the same seeded Arrow
  table and cached (and counted) before any timing, so neither arm pays for generating them.
* Fresh inputs per timed run (new table, copied table directory, new output path) are made in
  the arm's untimed ``setup``; read-backs for checks happen in the untimed ``verify``.
* Checks compare like with like: Spark-side results by ``count`` + ``sum(hash(cols))`` over the
  T8 columns, engine-side results by :func:`benchmarks.harness.arrow_checksum` against the
  expected state computed independently with pyarrow (e.g. base rows upserted with the CDC batch).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks import data
from benchmarks.harness import (
    Arm,
    Context,
    Outcome,
    Result,
    arrow_checksum,
    compare,
    expect,
    fmt_seconds,
    spark_checksum,
)
from engine import Table, open_catalog

REPO_ROOT = Path(__file__).resolve().parents[1]
T8_COLUMNS = data.T8_SCHEMA.names
PK_BUCKETS = 4
UPDATE_RUNS = 4
LATENCY_COMMITS = 4
LATENCY_TRIGGER_S = 1.0


def get_spark(ctx: Context) -> Any:
    """The suite's SparkSession (created on first use) with the dyntable source registered."""
    spark = ctx.cache.get("spark")
    if spark is None:
        # Python workers import engine/sqlext from the repository, whatever the working directory.
        paths = [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        from sqlext.spark import build_spark

        # Spark's default memory (1 GB driver and executors): no workload may need more to pass.
        conf = dict(ctx.cache.get("spark_conf", {}))
        # Spark's own catalog gets this run's directory, not the per-user default that every
        # session on the machine shares (a test run's or another suite's leftovers live there).
        conf.setdefault("spark.sql.warehouse.dir", ctx.path("spark-warehouse"))
        spark = build_spark(conf.pop("master", "local[*]"), conf, app_name="dyntable-benchmarks")
        from benchmarks.floors import register

        register(spark)  # the Python data source ceilings of W2 and W9
        ctx.cache["spark"] = spark
    return spark


def cached_df(spark: Any, table: pa.Table, directory: str | None = None) -> Any:
    """A cached, materialised DataFrame of ``table`` (both arms start from the same in-memory rows).

    ``spark.createDataFrame(table)`` would ship every Arrow batch to the driver JVM and keep them
    there for the DataFrame's life (a parallelised local collection): at ``large`` that is 0.7 GB of
    the default 1 GB driver heap before the cache is even built. So the rows go to a Parquet file
    (in ``directory``, default a scratch directory removed at exit) with one row group per Arrow batch,
    and Python tasks read one row group each: the same partitions, in the same order, with the same
    rows as ``createDataFrame`` gives above its local-relation threshold (``small`` and up; checked
    by checksum and partition sizes at 1M rows), and the driver JVM holds none of them. The cache
    spills to disk what its memory share cannot hold.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    batch_rows = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000"))
    path = Path(directory or _input_scratch()) / f"input-{uuid.uuid4().hex}.parquet"
    pq.write_table(table, path, row_group_size=batch_rows)
    groups = pq.ParquetFile(path).metadata.num_row_groups
    schema = spark.createDataFrame(table.slice(0, 0)).schema  # the types createDataFrame infers
    target = to_arrow_schema(schema, timezone="UTC")  # Spark keeps TimestampType values as UTC instants
    location = str(path)

    def read_groups(batches: Any) -> Any:
        import pyarrow.parquet as pq

        file = pq.ParquetFile(location)
        for batch in batches:
            for group in batch.column(0).to_pylist():  # this partition's row-group numbers (one)
                yield from file.read_row_group(group).cast(target).to_batches()

    df = spark.range(0, groups, 1, groups).mapInArrow(read_groups, schema).cache()
    df.count()
    return df


_INPUT_SCRATCH: list[str] = []


def _input_scratch() -> str:
    if not _INPUT_SCRATCH:
        import atexit
        import tempfile

        _INPUT_SCRATCH.append(tempfile.mkdtemp(prefix="dyntable-bench-input-"))
        atexit.register(shutil.rmtree, _INPUT_SCRATCH[0], True)
    return _INPUT_SCRATCH[0]


def dyntable_df(spark: Any, warehouse: str, name: str, **options: str) -> Any:
    """A batch read as users make it: ``sqlext.source.native.read_table`` (Spark's Parquet reader for
    splits that need no merge, the ``dyntable`` source for the rest; ``--conf
    read.native-scan.enabled=false`` measures the source alone)."""
    from sqlext.source.native import read_table

    return read_table(spark, name, warehouse, **options)


def data_file_paths(table: Table) -> list[str]:
    """The data files of the table's latest snapshot (as ``table.plan()`` lists them)."""
    from engine.files.reader import data_file_path

    store = table.store
    return [
        data_file_path(store, store.partition_dir(split.partition_values), split.bucket, f)
        for split in table.plan().splits
        for f in split.files
    ]


def _copy_table(source: Table, catalog: Any, name: str) -> Table:
    """A byte copy of a table directory under a new name (metadata holds only relative names)."""
    shutil.copytree(source.path, catalog.table_path(name))
    return catalog.get_table(name)


def _fresh(prefix: str) -> str:
    return f"db.{prefix}_{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------------------------------------
# W1 append write
# ------------------------------------------------------------------------------------------------


def run_w1(ctx: Context) -> list[Result]:
    """``df.write.format("dyntable")`` into a new append table vs ``df.write.parquet``."""
    spark = get_spark(ctx)
    rows = ctx.size.rows
    df = cached_df(spark, data.t8(rows, seed=1), ctx.path("w1-input"))
    warehouse = ctx.path("w1")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    out_root = Path(ctx.path("w1-parquet"))
    state: dict[str, str] = {}

    def ours_setup() -> None:
        state["table"] = _fresh("w1")
        catalog.create_table(state["table"], data.T8_SCHEMA)

    def ours_run() -> str:
        df.write.format("dyntable").option("warehouse", warehouse).option("table", state["table"]).mode(
            "append"
        ).save()
        return state["table"]

    def base_setup() -> None:
        state["path"] = str(out_root / uuid.uuid4().hex)

    def base_run() -> str:
        df.write.parquet(state["path"])
        return state["path"]

    result = compare(
        "W1",
        "append write",
        Arm(ours_run, ours_setup, lambda name: spark_checksum(dyntable_df(spark, warehouse, name))),
        Arm(base_run, base_setup, lambda path: spark_checksum(spark.read.parquet(path))),
        pairs=ctx.pairs,
        rows=rows,
        target=">= 0.9",
    )
    ceiling = compare(
        "W1c",
        "  ceiling: a Python writer that only drains its input",
        Arm(lambda: _drain(df, rows)),
        Arm(lambda: (base_run(), Outcome(rows))[1], base_setup),
        pairs=ctx.pairs,
        rows=rows,
        target="context",
    )
    ceiling.notes.append("the best W1 ratio any Python data source writer can reach on this input")
    df.unpersist()
    return [result, ceiling]


# ------------------------------------------------------------------------------------------------
# W2 primary-key upsert write
# ------------------------------------------------------------------------------------------------


@dataclass
class UpsertFixture:
    """W2's inputs, shared by the upsert lines (W2, W2dv, W2s): a PK table (bucket 4) holding the
    base rows, the CDC batch as a cached DataFrame, and the Spark baseline arm."""

    ctx: Context
    name: str
    base: pa.Table
    batch: pa.Table
    warehouse: str
    catalog: Any
    template: Table
    df: Any
    expected: Any  # the checksum of the base rows with the batch applied
    check: Any
    state: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, ctx: Context, name: str, options: dict[str, str] | None = None) -> UpsertFixture:
        size = ctx.size
        base = data.t8(size.rows, seed=2)
        batch = data.cdc(size.rows, size.cdc_rows, seed=3)
        expected = arrow_checksum(data.apply_cdc(base, batch), T8_COLUMNS)
        check = expect(expected, arrow_checksum(batch))
        warehouse = ctx.path(name)
        catalog = open_catalog(warehouse)
        catalog.create_database("db")
        template = catalog.create_table(
            f"db.{name}_base", data.T8_SCHEMA, primary_keys=["id"],
            options={"bucket": str(PK_BUCKETS), **(options or {})},
        )
        template.write_arrow(base)
        df = cached_df(get_spark(ctx), batch, ctx.path(f"{name}-input"))
        return cls(ctx, name, base, batch, warehouse, catalog, template, df, expected, check)

    def fresh_table(self) -> None:
        """Arm setup: a fresh copy of the base table (``state["table"]``)."""
        self.state["table"] = _copy_table(self.template, self.catalog, _fresh(self.name))

    def data_source_write(self) -> Table:
        """The plain ``df.write.format("dyntable")`` of the batch into the fresh table."""
        table = self.state["table"]
        self.df.write.format("dyntable").option("warehouse", self.warehouse).option(
            "table", table.name
        ).mode("append").save()
        return table

    @staticmethod
    def merged(table: Table) -> Any:
        return arrow_checksum(table.refresh().to_arrow(), T8_COLUMNS)

    def spark_baseline(self) -> Arm:
        """``repartition(4, id).sortWithinPartitions(id).write.parquet`` of the same batch."""
        out_root = Path(self.ctx.path(f"{self.name}-parquet"))
        paths: dict[str, str] = {}

        def setup() -> None:
            paths["path"] = str(out_root / uuid.uuid4().hex)

        def run() -> str:
            self.df.repartition(PK_BUCKETS, "id").sortWithinPartitions("id").write.parquet(paths["path"])
            return paths["path"]

        return Arm(run, setup, lambda path: arrow_checksum(pq.read_table(path), self.batch.column_names))


def run_w2(ctx: Context) -> list[Result]:
    """A CDC batch into an existing PK table (bucket 4) via the data source vs bucketed sorted parquet."""
    w2 = UpsertFixture.build(ctx, "w2")
    base, batch, df = w2.base, w2.batch, w2.df
    baseline = w2.spark_baseline()
    result = compare(
        "W2",
        f"PK upsert write (bucket {PK_BUCKETS})",
        Arm(w2.data_source_write, w2.fresh_table, w2.merged),
        baseline,
        pairs=ctx.pairs,
        rows=batch.num_rows,
        target=">= 0.7",
        check=w2.check,
    )
    result.notes.append(f"into {base.num_rows:,} existing rows; 80% updates, 15% inserts, 5% deletes")
    ceiling = compare(
        "W2c",
        "  ceiling: a Python writer that only drains its input",
        Arm(lambda: _drain(df, batch.num_rows)),
        Arm(lambda: (baseline.run(), Outcome(batch.num_rows))[1], baseline.setup),
        pairs=ctx.pairs,
        rows=batch.num_rows,
        target="context",
    )
    ceiling.notes.append("the best W2 ratio any Python data source writer can reach on this input")
    df.unpersist()
    return [result, ceiling]


def run_w2d(ctx: Context) -> list[Result]:
    """W2 on a default-bucket table (``bucket`` -1, dynamic): the same CDC batch, in the cached
    DataFrame's many partitions, written by independent tasks (engine.write.shared_assignment)."""
    w2d = UpsertFixture.build(ctx, "w2d", {"bucket": "-1"})
    result = compare(
        "W2d",
        "W2 on a default-bucket table",
        Arm(w2d.data_source_write, w2d.fresh_table, w2d.merged),
        w2d.spark_baseline(),
        pairs=ctx.pairs,
        rows=w2d.batch.num_rows,
        target=">= 0.5",
        check=w2d.check,
    )
    result.notes.append(
        f"into {w2d.base.num_rows:,} existing rows, dynamic buckets, {w2d.df.rdd.getNumPartitions()} input "
        "partitions; the baseline is W2's (bucketed sorted Parquet)")
    w2d.df.unpersist()
    return [result]


# ------------------------------------------------------------------------------------------------
# the PK table with 1 base run + 4 update runs (W3, W3b, W4)
# ------------------------------------------------------------------------------------------------


def runs_table(ctx: Context) -> dict[str, Any]:
    """Build once per suite: a PK table with a base run and 4 CDC update runs left uncompacted.

    Returns a dict with ``catalog``, ``warehouse``, ``table``, ``expected`` (the merged rows as
    Arrow, computed with pyarrow) and ``copy`` (a directory holding ``expected`` as 4 sorted
    Parquet files: the compacted copy of W3's baseline).
    """
    fixture = ctx.cache.get("runs")
    if fixture is not None:
        return fixture
    size = ctx.size
    warehouse = ctx.path("runs")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.runs",
        data.T8_SCHEMA,
        primary_keys=["id"],
        options={"bucket": str(PK_BUCKETS), "write-only": "true"},
    )
    expected = data.t8(size.rows, seed=31)
    table.write_arrow(expected)
    next_key = size.rows
    for r in range(UPDATE_RUNS):
        batch = data.cdc(size.rows, size.update_rows, seed=40 + r, next_key=next_key)
        next_key += int(round(size.update_rows * 0.15))
        table.write_arrow(batch)
        expected = data.apply_cdc(expected, batch)
    expected = expected.sort_by("id").combine_chunks()
    copy = Path(ctx.path("runs-compacted-copy"))
    step = -(-expected.num_rows // PK_BUCKETS)
    for i in range(PK_BUCKETS):
        pq.write_table(expected.slice(i * step, step), copy / f"part-{i}.parquet")
    fixture = {
        "catalog": catalog,
        "warehouse": warehouse,
        "table": table.refresh(),
        "expected": expected,
        "copy": str(copy),
    }
    ctx.cache["runs"] = fixture
    return fixture


def _runs_note(table: Table) -> str:
    files = sum(len(s.files) for s in table.plan().splits)
    return f"{files} data files in {PK_BUCKETS} buckets"


def run_w3(ctx: Context) -> list[Result]:
    """Merge-on-read scan (count + sum of hash) vs ``spark.read.parquet`` of a compacted copy."""
    spark = get_spark(ctx)
    fx = runs_table(ctx)
    table: Table = fx["table"]
    result = compare(
        "W3",
        "merge-on-read scan 1+4 runs",
        Arm(lambda: spark_checksum(dyntable_df(spark, fx["warehouse"], table.name))),
        Arm(lambda: spark_checksum(spark.read.parquet(fx["copy"]))),
        pairs=ctx.pairs,
        rows=fx["expected"].num_rows,
        target=">= 0.5",
    )
    result.notes.append(_runs_note(table))
    copy_files = sorted(str(p) for p in Path(fx["copy"]).glob("*.parquet"))
    schema = spark.read.parquet(fx["copy"]).schema
    ceiling = compare(
        "W3f",
        "  ceiling: a Python source that only reads the compacted copy",
        Arm(lambda: spark_checksum(
            spark.read.format("bench_files").schema(schema).option("paths", ",".join(copy_files)).load()
        )),
        Arm(lambda: spark_checksum(spark.read.parquet(fx["copy"]))),
        pairs=ctx.pairs,
        rows=fx["expected"].num_rows,
        target="context",
    )
    ceiling.notes.append("the best W3 ratio any Python data source can reach, before it merges anything")
    return [result, ceiling]


def run_w3b(ctx: Context) -> list[Result]:
    """Scan after full compaction vs ``spark.read.parquet`` of the very same data files."""
    spark = get_spark(ctx)
    fx = runs_table(ctx)
    compacted = _copy_table(fx["table"], fx["catalog"], "db.runs_compacted")
    compacted.compact(full=True)
    compacted = compacted.refresh()
    files = data_file_paths(compacted)
    result = compare(
        "W3b",
        "scan after full compaction",
        Arm(lambda: spark_checksum(dyntable_df(spark, fx["warehouse"], compacted.name))),
        Arm(lambda: spark_checksum(spark.read.parquet(*files).select(*T8_COLUMNS))),
        pairs=ctx.pairs,
        rows=fx["expected"].num_rows,
        target=">= 0.9",
    )
    result.notes.append(f"{len(files)} data files")
    return [result]


# ------------------------------------------------------------------------------------------------
# W3c small files: many one-file commits, scanned before and after a full compaction
# ------------------------------------------------------------------------------------------------

SMALL_FILE_BASELINE_FILES = 2


def run_w3c(ctx: Context) -> list[Result]:
    """Scan an append table of N one-file commits, before and after full compaction, vs 2 Parquet files.

    The table is built with engine writes (one ``write_arrow`` commit of ``small_file_rows``
    rows each, untimed); the baseline is ``spark.read.parquet`` of the same rows stored as 2
    files. Both scans are count + sum(hash), so the check compares the very same rows.
    """
    spark = get_spark(ctx)
    size = ctx.size
    commits, per_commit = size.small_file_commits, size.small_file_rows
    rows = data.t8(commits * per_commit, seed=33)
    warehouse = ctx.path("w3c")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.small_files", data.T8_SCHEMA)
    started = time.perf_counter()
    for i in range(commits):
        table.write_arrow(rows.slice(i * per_commit, per_commit))
    build_s = time.perf_counter() - started
    table = table.refresh()
    copy = Path(ctx.path("w3c-parquet"))
    step = -(-rows.num_rows // SMALL_FILE_BASELINE_FILES)
    for i in range(SMALL_FILE_BASELINE_FILES):
        pq.write_table(rows.slice(i * step, step), copy / f"part-{i}.parquet", compression="zstd")

    def scan(key: str, title: str, target: str) -> Result:
        files = data_file_paths(table)
        result = compare(
            key,
            title,
            Arm(lambda: spark_checksum(dyntable_df(spark, warehouse, table.name))),
            Arm(lambda: spark_checksum(spark.read.parquet(str(copy)))),
            pairs=ctx.pairs,
            rows=rows.num_rows,
            target=target,
        )
        result.extra["files"] = len(files)
        return result

    before = scan("W3c", f"scan {commits} small commits", ">= 0.3")
    before.extra["build"] = fmt_seconds(build_s)
    before.notes.append(
        f"{commits} engine commits x {per_commit:,} rows vs {SMALL_FILE_BASELINE_FILES} Parquet files"
    )
    started = time.perf_counter()
    table.compact(full=True)
    compact_s = time.perf_counter() - started
    table = table.refresh()
    after = scan("W3cc", "  same after full compaction", ">= 0.7")
    after.extra["compaction"] = fmt_seconds(compact_s)
    return [before, after]


# ------------------------------------------------------------------------------------------------
# W4 full compaction
# ------------------------------------------------------------------------------------------------


def run_w4(ctx: Context) -> list[Result]:
    """``compact_distributed(full=True)`` of a fresh copy vs Spark read + rewrite of the same files."""
    from sqlext.execute.compaction import compact_distributed

    spark = get_spark(ctx)
    fx = runs_table(ctx)
    source: Table = fx["table"]
    files = data_file_paths(source)
    input_rows = sum(f.row_count for s in source.plan().splits for f in s.files)
    expected = arrow_checksum(fx["expected"], T8_COLUMNS)
    out_root = Path(ctx.path("w4-rewrite"))
    state: dict[str, Any] = {}

    def ours_setup() -> None:
        state["table"] = _copy_table(source, fx["catalog"], _fresh("w4"))

    def ours_run() -> Table:
        compact_distributed(spark, state["table"], full=True)
        return state["table"]

    def ours_verify(table: Table) -> Outcome:
        table = table.refresh()
        runs = max(len(s.files) for s in table.plan().splits)
        if runs != 1:
            return Outcome(-runs)  # not fully compacted: fails the check with a visible count
        return arrow_checksum(table.to_arrow(), T8_COLUMNS)

    def base_setup() -> None:
        state["path"] = str(out_root / uuid.uuid4().hex)

    def base_run() -> str:
        spark.read.parquet(*files).write.parquet(state["path"])
        return state["path"]

    def base_verify(path: str) -> Outcome:
        return Outcome(sum(pq.ParquetFile(p).metadata.num_rows for p in Path(path).glob("*.parquet")))

    result = compare(
        "W4",
        "full compaction 1+4 runs",
        Arm(ours_run, ours_setup, ours_verify),
        Arm(base_run, base_setup, base_verify),
        pairs=ctx.pairs,
        rows=input_rows,
        target=">= 1.0",
        check=expect(expected, Outcome(input_rows)),
    )
    result.notes.append(f"{len(files)} input files; table copied before each round, untimed")
    return [result]


# ------------------------------------------------------------------------------------------------
# W9 streaming change read and commit-to-visible latency
# ------------------------------------------------------------------------------------------------


def _stream_table(ctx: Context, commits: int) -> tuple[str, Table, pa.Table]:
    warehouse = ctx.path("w9")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.stream", data.T8_SCHEMA)
    rows = data.t8(ctx.size.rows, seed=9)
    step = -(-rows.num_rows // commits)
    for i in range(commits):
        table.write_arrow(rows.slice(i * step, step))
    return warehouse, table.refresh(), rows


def _consume_once(stream: Any, checkpoint: str, columns: list[str] | None = None) -> Outcome:
    """Run ``stream`` with availableNow into foreachBatch; count + hash-sum every micro-batch."""
    seen = {"rows": 0, "sum": 0}

    def consume(df: Any, _batch_id: int) -> None:
        outcome = spark_checksum(df if columns is None else df.select(*columns))
        seen["rows"] += outcome.rows
        seen["sum"] += outcome.checksum

    query = (
        stream.writeStream.foreachBatch(consume)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return Outcome(seen["rows"], seen["sum"])


def _stream_once(spark: Any, warehouse: str, table: Table, checkpoint: str) -> Outcome:
    """Read every change from snapshot 1 with availableNow; count + hash-sum each micro-batch."""
    stream = (
        spark.readStream.format("dyntable")
        .option("warehouse", warehouse)
        .option("table", table.name)
        .option("scan.mode", "from-snapshot")
        .option("scan.snapshot-id", "1")
        .load()
    )
    return _consume_once(stream, checkpoint)


def _drain(df: Any, rows: int) -> Outcome:
    """W1's or W2's input through the ``bench_drain`` floor writer (see ``benchmarks.floors``)."""
    df.write.format("bench_drain").mode("append").save()
    return Outcome(rows)


def _files_stream_once(
    spark: Any, schema: Any, files: list[str], checkpoint: str, columns: list[str] = T8_COLUMNS
) -> Outcome:
    """W9's stream read through the ``bench_files`` floor source (see ``benchmarks.floors``)."""
    stream = spark.readStream.format("bench_files").schema(schema).option("paths", ",".join(files)).load()
    return _consume_once(stream, checkpoint, columns)


def _latency(spark: Any, warehouse: str, table: Table, checkpoint: str) -> tuple[list[float], int, int]:
    """Seconds from each commit to the micro-batch that delivers it (1 s processing-time trigger)."""
    arrivals: list[tuple[float, int]] = []
    lock = threading.Lock()

    def consume(df: Any, _batch_id: int) -> None:
        n = df.count()
        if n:
            with lock:
                arrivals.append((time.time(), n))

    query = (
        spark.readStream.format("dyntable")
        .option("warehouse", warehouse)
        .option("table", table.name)
        .option("scan.mode", "latest")
        .load()
        .writeStream.foreachBatch(consume)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{LATENCY_TRIGGER_S:g} seconds")
        .start()
    )
    latencies: list[float] = []
    # scan.mode latest starts, as Paimon's Spark source does, with the latest snapshot's own changes
    # (here the last W9 commit); what the stream delivers after that is what the commits below add.
    committed = table.refresh().latest_snapshot().delta_record_count
    try:
        # The stream starts at the snapshot that is latest when its first batch resolves the start
        # offset; a commit landing before that is part of the start, not a change to deliver. On a
        # cluster the first batch can take longer than a few triggers, so wait for it to finish.
        deadline = time.time() + 120
        while query.lastProgress is None and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(LATENCY_TRIGGER_S)
        for i in range(LATENCY_COMMITS):
            batch = data.t8(1_000, seed=900 + i, first_id=10_000_000 + i * 1_000)
            with lock:
                before = len(arrivals)
            start = time.time()
            table.write_arrow(batch)
            committed += batch.num_rows
            deadline = time.time() + 30
            while time.time() < deadline:
                with lock:
                    if len(arrivals) > before:
                        latencies.append(arrivals[before][0] - start)
                        break
                time.sleep(0.01)
            time.sleep(
                float(np.random.default_rng(i).uniform(0, LATENCY_TRIGGER_S))
            )  # vary the trigger phase
    finally:
        query.stop()
    with lock:
        delivered = sum(n for _, n in arrivals)
    return latencies, committed, delivered


def run_w9(ctx: Context) -> list[Result]:
    """Streaming change read over N commits vs ``spark.read.parquet`` of exactly the added files; latency."""
    spark = get_spark(ctx)
    commits = ctx.size.stream_commits
    warehouse, table, rows = _stream_table(ctx, commits)
    files = data_file_paths(table)  # an append table never compacts here: the added files are the live ones
    checkpoints = Path(ctx.path("w9-checkpoints"))
    result = compare(
        "W9",
        f"stream read of {commits} commits",
        Arm(lambda: _stream_once(spark, warehouse, table, str(checkpoints / uuid.uuid4().hex))),
        Arm(lambda: spark_checksum(spark.read.parquet(*files).select(*T8_COLUMNS))),
        pairs=ctx.pairs,
        rows=rows.num_rows,
        target=">= 0.6",
    )
    result.notes.append(f"{len(files)} added files; availableNow into foreachBatch(count, sum(hash))")
    schema = spark.read.parquet(files[0]).schema
    ceiling = compare(
        "W9c",
        "  ceiling: a Python stream source reading the same files",
        Arm(lambda: _files_stream_once(spark, schema, files, str(checkpoints / uuid.uuid4().hex))),
        Arm(lambda: spark_checksum(spark.read.parquet(*files).select(*T8_COLUMNS))),
        pairs=ctx.pairs,
        rows=rows.num_rows,
        target="context",
    )
    ceiling.notes.append(
        "pyarrow.parquet per file, no metadata: the best W9 ratio any Python stream source can reach"
    )
    latencies, committed, delivered = _latency(spark, warehouse, table, str(checkpoints / "latency"))
    lat = Result("W9l", "commit-to-visible latency", target=f"<= {LATENCY_TRIGGER_S + 1:g} s")
    lat.extra["trigger"] = f"{LATENCY_TRIGGER_S:g} s"
    if latencies:
        lat.extra["median"] = fmt_seconds(float(np.median(latencies)))
        lat.extra["max"] = fmt_seconds(max(latencies))
        lat.extra["latencies_s"] = [round(x, 3) for x in latencies]
    if len(latencies) < LATENCY_COMMITS or delivered != committed:
        lat.check = (
            f"FAILED: {len(latencies)}/{LATENCY_COMMITS} commits seen, "
            f"{delivered:,}/{committed:,} rows delivered"
        )
    return [result, ceiling, lat]
