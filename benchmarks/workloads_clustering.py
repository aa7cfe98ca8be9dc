"""Clustering workload (no Spark): what a z-order sorted compaction buys a two-column filter.

CL1: the same rows (two uniform int64 columns ``x``, ``y`` and a 16-character payload, written in
random order) in two bucket-unaware append tables with the same ``target-file-size``; ours was
rewritten by ``compact(order_strategy='zorder', order_by=['x', 'y'])``, the baseline was
compacted without an order (files of the same size, every file spanning the whole range of both
columns). The query keeps rows with ``x`` and ``y`` each in a 2 % window (about 0.04 % of the
rows); the gain is the files the planner skips by their min/max statistics on both columns.
Ratio = baseline time / ours; both must return the same rows.

CL2: the same query as ``SELECT * ... WHERE`` through a dyntable SQL session (Spark plans it, the
engine's scan prunes the files), counted and checksummed in Spark. Spark's per-query cost is
fixed, so the ratio is lower than the engine's.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from benchmarks.harness import Arm, Context, Outcome, Result, arrow_checksum, compare, spark_checksum
from engine import open_catalog
from engine import predicate as P

SCHEMA = pa.schema([("x", pa.int64()), ("y", pa.int64()), ("payload", pa.string())])
FILES = 128  # about this many files of the target size (a Spark sort writes one per task, 200 by default)
DOMAIN = 1_000_000
WINDOW = DOMAIN // 50


def _rows(rows: int) -> pa.Table:
    rng = np.random.default_rng(11)
    x = rng.integers(0, DOMAIN, rows, dtype=np.int64)
    y = rng.integers(0, DOMAIN, rows, dtype=np.int64)
    payload = pa.array(np.char.mod("%016x", rng.integers(0, 2**62, rows, dtype=np.int64)))
    return pa.table({"x": x, "y": y, "payload": payload}, schema=SCHEMA)


def _tables(ctx: Context, name: str) -> tuple[str, dict]:
    """The warehouse and the two tables (``plain``, ``zorder``) of the same rows."""
    rows = ctx.size.rows
    data = _rows(rows)
    warehouse = ctx.path(name)
    catalog = open_catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    # Parquet holds these rows in about 25 bytes each; the target makes ~FILES files.
    target = f"{max(16, rows * 25 // FILES // 1024)} kb"
    tables = {}
    options = {"bucket": "-1", "target-file-size": target}
    for table_name in ("plain", "zorder"):
        t = catalog.create_table(f"db.{table_name}", SCHEMA, options=options)
        for part in range(4):  # a few commits, as a table grows
            t.write_arrow(data.slice(part * rows // 4, rows // 4 + (rows % 4 if part == 3 else 0)))
        t = catalog.get_table(f"db.{table_name}")
        if table_name == "zorder":
            t.compact(order_strategy="zorder", order_by=["x", "y"])
        else:
            t.compact(full=True)
        tables[table_name] = catalog.get_table(f"db.{table_name}")
    return warehouse, tables


X0, Y0 = DOMAIN // 3, DOMAIN // 2
WHERE = P.and_(P.greater_or_equal("x", X0), P.less_than("x", X0 + WINDOW),
               P.greater_or_equal("y", Y0), P.less_than("y", Y0 + WINDOW))
WHERE_SQL = f"x >= {X0} AND x < {X0 + WINDOW} AND y >= {Y0} AND y < {Y0 + WINDOW}"


def _file_counts(result: Result, tables: dict) -> None:
    def files(table, predicate=None) -> int:
        scan = table.new_scan() if predicate is None else table.new_scan().with_filter(predicate)
        return sum(len(s.files) for s in scan.plan().splits)

    result.extra["files"] = files(tables["zorder"])
    result.extra["files read, clustered"] = files(tables["zorder"], WHERE)
    result.extra["files read, unclustered"] = files(tables["plain"], WHERE)
    result.extra["unclustered files"] = files(tables["plain"])


def run_clustering(ctx: Context) -> list[Result]:
    rows = ctx.size.rows
    _, tables = _tables(ctx, "cl")

    def query(table) -> Outcome:
        return arrow_checksum(table.to_arrow(filter=WHERE))

    result = compare(
        "CL1", f"two-column filter (~0.04% of {rows:,} rows): z-order clustered vs unclustered files",
        Arm(run=lambda: query(tables["zorder"])), Arm(run=lambda: query(tables["plain"])),
        pairs=ctx.pairs, rows=rows, target=">= 10",
    )
    _file_counts(result, tables)
    return [result]


def run_clustering_sql(ctx: Context) -> list[Result]:
    """CL2: CL1's query as SQL through a dyntable session (Spark plans, the engine prunes files)."""
    from benchmarks.workloads_spark import get_spark
    from sqlext.session import SqlSession

    spark = get_spark(ctx)
    warehouse, tables = _tables(ctx, "cl2")
    session = SqlSession(spark, warehouse=warehouse, database="db")

    def query(name: str) -> Outcome:
        df = list(session.execute(f"SELECT * FROM {name} WHERE {WHERE_SQL}"))[-1].dataframe
        return spark_checksum(df)

    result = compare(
        "CL2", f"CL1 as Spark SQL (~0.04% of {ctx.size.rows:,} rows): z-order clustered vs unclustered",
        Arm(run=lambda: query("zorder")), Arm(run=lambda: query("plain")),
        pairs=ctx.pairs, rows=ctx.size.rows, target=">= 3",
    )
    _file_counts(result, tables)
    return [result]
