"""Filters before the crossing: W3q, a 1 % filter in SQL on W3's merge-on-read table.

* W3q — ``SELECT * FROM runs WHERE qty < 100`` (about 1 % of the rows; ``qty`` is a value column,
  so the filter can only run after the merge) through ``SqlSession``, vs the same query as it ran
  before the source applied filters: the same per-statement read (same pruning filter, native scan
  where it applies) with the filter left to Spark, so every merged row crosses to the JVM.
* W3qp (context) — the same SQL query vs ``spark.read.parquet`` of W3's compacted copy with the same
  filter: what a merge-on-read filtered read costs against a table that needs no merge.

Invariants as in ``benchmarks.workloads_spark``: W3's fixture table (1 base run + 4 update runs
per bucket, ``write-only``, so every split merges), outcomes checked against each other (count and
checksum of the same rows).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchmarks.harness import Arm, Context, Result, compare, spark_checksum
from benchmarks.workloads_spark import get_spark, runs_table
from engine import Table
from engine.scan import predicate as P

CONDITION = "qty < 100"  # qty is uniform in 0..9999: 1 % of the rows


def run_w3q(ctx: Context) -> list[Result]:
    """A 1 % filter on the merge-on-read table: exact in the source vs left to Spark vs plain Parquet."""
    from sqlext.session import SqlSession
    from sqlext.source.native import load
    from sqlext.source.requests import ReadRequest

    spark = get_spark(ctx)
    fx = runs_table(ctx)
    table: Table = fx["table"]
    session = SqlSession(spark, warehouse=fx["warehouse"], database="db")
    name = table.name.split(".")[-1]

    def exact() -> Any:
        return spark_checksum(session.sql(f"SELECT * FROM {name} WHERE {CONDITION}"))

    def before() -> Any:
        # What the SQL path did before: the view's read carries the filter for pruning only.
        request = replace(ReadRequest.from_options(session.target(table.name).to_options()),
                          filter=P.to_json(P.less_than("qty", 100)))
        return spark_checksum(load(spark, request).where(CONDITION))

    def parquet() -> Any:
        return spark_checksum(spark.read.parquet(fx["copy"]).where(CONDITION))

    rows = fx["expected"].num_rows
    result = compare("W3q", "1 % filter on merge-on-read, SQL: exact in the source vs before",
                     Arm(exact), Arm(before), pairs=ctx.pairs, rows=rows, target=">= 2")
    files = sum(len(s.files) for s in table.plan().splits)
    result.notes.append(f"{files} data files; WHERE {CONDITION}")
    parquet_result = compare("W3qp", "  same query vs Parquet of the compacted copy", Arm(exact),
                             Arm(parquet), pairs=ctx.pairs, rows=rows, target="context")
    return [result, parquet_result]
