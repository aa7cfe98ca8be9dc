"""Spark workloads of primary-key tables with deletion vectors: W2dv upsert, W3dv scan, W3dvf filtered scan.

* W2dv — W2's CDC batch into a table with ``deletion-vectors.enabled`` (the write, then the
  compaction that moves level 0 up and marks the old rows in DVs), vs W2's baseline (Spark's
  ``repartition`` + sort + Parquet write of the batch).
* W3dv — full scan (count + sum of hash) of a DV table whose base was updated by a CDC batch of
  10 % of its keys, so DVs sit on the base files; vs ``spark.read.parquet`` of a compacted copy.
* W3dvf — the same scan with ``price < 0.001`` (a handful of rows: 6 of 1,010,000 at ``small``), vs
  the same query on the same data in a table without DVs (merge-on-read: the filter can only run
  after the merge). W3dvf0 measures its ceiling: Spark's own Parquet reader of the same files with
  the same filter and no DV work.

Invariants as in ``benchmarks.workloads_spark``: inputs are built untimed, both arms return
outcomes that are checked against the expected rows computed with pyarrow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks import data
from benchmarks.harness import (
    Arm,
    CheckFailed,
    Context,
    Outcome,
    Result,
    compare,
    same_result,
    spark_checksum,
)
from benchmarks.workloads_spark import (
    PK_BUCKETS,
    UpsertFixture,
    dyntable_df,
    get_spark,
)
from engine import Table, open_catalog
from engine.scan.predicate import less_than

DV = {"deletion-vectors.enabled": "true"}
PRICE_LIMIT = 0.001


def run_w2dv(ctx: Context) -> list[Result]:
    """W2's CDC batch into a DV table (write + DV-maintaining compaction) vs W2's Parquet baseline."""
    w2 = UpsertFixture.build(ctx, "w2dv", DV)
    base = {f.file_name for s in w2.template.plan().splits for f in s.files}
    layout: dict[str, str] = {}

    def merged(table: Table) -> Any:
        # Where the write left its rows: the base files kept (marked in DVs) or rewritten, and the
        # levels of the new files (level 0 moved up unrewritten lands one level per task file).
        files = [f for s in table.refresh().plan().splits for f in s.files]
        kept = sum(f.file_name in base for f in files)
        levels = sorted({f.level for f in files if f.file_name not in base})
        layout["files"] = f"{kept} of {len(base)} base files kept, new files at levels {levels}"
        return w2.merged(table)

    result = compare(
        "W2dv",
        f"PK upsert write into a DV table (bucket {PK_BUCKETS})",
        Arm(w2.data_source_write, w2.fresh_table, merged),
        w2.spark_baseline(),
        pairs=ctx.pairs,
        rows=w2.batch.num_rows,
        target=">= 0.5",
        check=w2.check,
    )
    result.notes.append(
        f"into {w2.base.num_rows:,} existing rows; the check reads the table as DV readers do (level 0 "
        "skipped), so it passes only once the write's compaction has marked the old rows"
    )
    if layout:
        result.notes.append(layout["files"])
    shuffled = _w2dv_shuffled(ctx, w2, merged, layout)
    w2.df.unpersist()
    return [result, shuffled]


def _w2dv_shuffled(ctx: Context, w2: UpsertFixture, merged: Any, layout: dict[str, str]) -> Result:
    """W2dvs (context): the same batch through ``write_table`` with the bucket shuffle, so each
    bucket gets one level-0 file, which the compaction moves up without rewriting it."""
    from sqlext.execute.native_write import write_table

    def shuffled() -> Table:
        table = w2.state["table"]
        write_table(w2.df, table.name, w2.warehouse, shuffle="true")
        return table

    layout.clear()
    result = compare(
        "W2dvs",
        "  the same, shuffled by bucket (write_table)",
        Arm(shuffled, w2.fresh_table, merged),
        w2.spark_baseline(),
        pairs=ctx.pairs,
        rows=w2.batch.num_rows,
        target="context",
        check=w2.check,
    )
    if layout:
        result.notes.append(layout["files"])
    return result


def dv_tables(ctx: Context) -> dict[str, Any]:
    """Built once per suite: the same base + 10 % CDC in a DV table (compacted, DVs on the base
    files) and in a table without DVs (left merge-on-read), plus a compacted Parquet copy."""
    fixture = ctx.cache.get("dv_tables")
    if fixture is not None:
        return fixture
    rows = ctx.size.rows
    warehouse = ctx.path("dv")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    base = data.t8(rows, seed=51)
    batch = data.cdc(rows, rows // 10, seed=52)
    dv = catalog.create_table("db.dv", data.T8_SCHEMA, primary_keys=["id"],
                              options={"bucket": str(PK_BUCKETS), **DV})
    mor = catalog.create_table("db.mor", data.T8_SCHEMA, primary_keys=["id"],
                               options={"bucket": str(PK_BUCKETS), "write-only": "true"})
    for t in (dv, mor):
        t.write_arrow(base)
        t.refresh().write_arrow(batch)
    expected = data.apply_cdc(base, batch).sort_by("id").combine_chunks()
    copy = Path(ctx.path("dv-compacted-copy"))
    step = -(-expected.num_rows // PK_BUCKETS)
    for i in range(PK_BUCKETS):
        pq.write_table(expected.slice(i * step, step), copy / f"part-{i}.parquet")
    dv = dv.refresh()
    cardinality = sum(
        d.cardinality or 0 for s in dv.plan().splits for d in s.deletion_files
    )
    fixture = {"warehouse": warehouse, "dv": dv, "mor": mor.refresh(), "expected": expected,
               "copy": str(copy), "dv_rows": cardinality}
    ctx.cache["dv_tables"] = fixture
    return fixture


def _filtered(expected: pa.Table) -> pa.Table:
    return expected.filter(pc.less(expected.column("price"), PRICE_LIMIT))


def run_w3dv(ctx: Context) -> list[Result]:
    """Scan of the DV table vs ``spark.read.parquet`` of a compacted copy (W3's baseline)."""
    spark = get_spark(ctx)
    fx = dv_tables(ctx)
    result = compare(
        "W3dv",
        "scan of a DV table (10% of keys updated)",
        Arm(lambda: spark_checksum(dyntable_df(spark, fx["warehouse"], fx["dv"].name))),
        Arm(lambda: spark_checksum(spark.read.parquet(fx["copy"]))),
        pairs=ctx.pairs,
        rows=fx["expected"].num_rows,
        target=">= 0.5",
    )
    files = sum(len(s.files) for s in fx["dv"].plan().splits)
    result.notes.append(f"{files} data files, {fx['dv_rows']:,} rows marked in deletion vectors")
    return [result]


def run_w3dvf(ctx: Context) -> list[Result]:
    """``price < 0.001`` on the DV table vs the same query on the same data without DVs."""
    from pyspark.sql import functions as F

    spark = get_spark(ctx)
    fx = dv_tables(ctx)
    expected = _filtered(fx["expected"]).num_rows

    def query(name: str) -> Any:
        # As the SQL session runs ``WHERE price < 0.001``: the predicate goes to the source as its
        # pruning filter (sqlext.bind.pruning) and Spark applies it again on top.
        df = dyntable_df(spark, fx["warehouse"], name, filter=less_than("price", PRICE_LIMIT))
        return spark_checksum(df.where(F.col("price") < PRICE_LIMIT))

    def check(ours: Outcome, baseline: Outcome) -> None:
        same_result(ours, baseline)
        if ours.rows != expected:
            raise CheckFailed(f"{ours.rows} rows, expected {expected}")

    result = compare(
        "W3dvf",
        f"filtered scan (price < {PRICE_LIMIT}): DV table vs merge-on-read table",
        Arm(lambda: query(fx["dv"].name)),
        Arm(lambda: query(fx["mor"].name)),
        pairs=ctx.pairs,
        rows=fx["expected"].num_rows,
        target=">= 3",
        check=check,
    )
    result.notes.append(
        f"{expected:,} rows match; the baseline is the same query on a table without DVs. The DV read "
        "decodes the filter's columns first and the rest only for files with surviving rows (every file "
        "here: price is uniform), and filters before rows cross to the JVM (docs/native-scan.md)"
    )
    ceiling = compare(
        "W3dvf0",
        "  ceiling: Spark's Parquet reader of the DV table's files, same filter, no DV applied",
        Arm(lambda: spark_checksum(_undeleted(spark, fx["dv"]).where(F.col("price") < PRICE_LIMIT))),
        Arm(lambda: query(fx["mor"].name)),
        pairs=ctx.pairs,
        rows=fx["expected"].num_rows,
        target="context",
        check=lambda ours, baseline: None,  # (it keeps the rows the DVs delete: not the same rows)
    )
    ceiling.notes.append("every column of every row still has to be decoded: the best W3dvf ratio without "
                         "skipping pages, which no reader here can (one row group per file, price uniform)")
    return [result, ceiling]


def _undeleted(spark: Any, table: Any) -> Any:
    """The DV table's batch-visible files (levels >= 1) read as plain Parquet, retractions dropped."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, StructField, StructType

    from engine.files.reader import data_file_path
    from sqlext.source.spark_types import spark_schema

    store = table.store
    paths = [
        "file://" + data_file_path(store, store.partition_dir(s.partition_values), s.bucket, f)
        for s in table.plan().splits for f in s.files if f.level > 0
    ]
    schema = spark_schema(data.T8_SCHEMA)
    physical = StructType([*schema.fields, StructField("_VALUE_KIND", ByteType())])
    frame = spark.read.schema(physical).parquet(*paths)
    return frame.where(F.col("_VALUE_KIND").isin(0, 2)).select(*schema.names)
