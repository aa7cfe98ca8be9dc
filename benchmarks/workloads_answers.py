"""Q1 / Q1m: aggregates answered from metadata (issue 39) — ``SELECT count(*)`` and
``SELECT count(*), min(id), max(id)`` of an append table through the SQL session, against Spark
computing the same aggregate over a Parquet copy of the same rows, in the same run.

The table is written by the engine in ``Q_FILES`` commits (one file each); the copy holds the
same rows in as many Parquet files. Both arms return the aggregate's values, which must agree.
Target (issue 39): >= 3x for both lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from benchmarks import data
from benchmarks.harness import Arm, Context, Outcome, Result, compare
from benchmarks.workloads_spark import get_spark
from engine import open_catalog

Q_FILES = 8


def _outcome(row: Any) -> Outcome:
    values = tuple(row)
    return Outcome(int(values[0]), values)


def run_q1(ctx: Context) -> list[Result]:
    from sqlext.session import SqlSession

    spark = get_spark(ctx)
    rows = ctx.size.rows
    warehouse = ctx.path("q1")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table("db.q1", data.T8_SCHEMA)
    source = data.t8(rows, seed=13)
    copy = Path(ctx.path("q1-parquet-copy"))
    copy.mkdir(parents=True, exist_ok=True)
    step = -(-rows // Q_FILES)
    for i, start in enumerate(range(0, rows, step)):
        table.write_arrow(source.slice(start, step))
        pq.write_table(source.slice(start, step), copy / f"part-{i}.parquet")
    session = SqlSession(spark, warehouse=warehouse, database="db")
    spark.read.parquet(str(copy)).createOrReplaceTempView("q1_parquet")

    def ours(select: str) -> Arm:
        return Arm(lambda: _outcome(session.sql(f"SELECT {select} FROM q1").collect()[0]))

    def spark_arm(select: str) -> Arm:
        return Arm(lambda: _outcome(spark.sql(f"SELECT {select} FROM q1_parquet").collect()[0]))

    results = []
    for key, title, select in (
        ("Q1", "SELECT count(*) from metadata", "count(*)"),
        ("Q1m", "SELECT count(*), min, max from metadata", "count(*), min(id), max(id)"),
    ):
        result = compare(key, title, ours(select), spark_arm(select), pairs=ctx.pairs, rows=rows,
                         target=">= 3")
        result.notes.append(f"{Q_FILES} data files; baseline: Spark's aggregate over a Parquet copy")
        results.append(result)
    return results
