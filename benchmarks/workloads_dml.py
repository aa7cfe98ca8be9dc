"""Row-level DML workloads (Spark): W11, DELETE through deletion vectors vs a file rewrite.

W11: ``DELETE FROM t WHERE id % 100 = 7`` (1 % of the rows, spread over every file) through
dyntable's SQL session on an append table with ``'deletion-vectors.enabled' = 'true'`` (rows
marked in DVs, no data file rewritten) vs the same statement on the same data without DVs (every
partition holding a deleted row rewritten). Each run starts from a byte copy of the same
table (untimed); both outcomes are checked by reading the table back (rows and checksum).
"""

from __future__ import annotations

from typing import Any

from benchmarks import data
from benchmarks.harness import Arm, Context, Result, compare, spark_checksum
from benchmarks.workloads_spark import _copy_table, _fresh, dyntable_df, get_spark
from engine import open_catalog

W11_FILES = 8  # the table is written in this many commits (files), so the delete touches every one


def run_w11(ctx: Context) -> list[Result]:
    """DELETE of 1 % of an append table's rows: with deletion vectors vs copy-on-write."""
    from sqlext.session import SqlSession

    spark = get_spark(ctx)
    rows = ctx.size.rows
    warehouse = ctx.path("w11")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    templates = {}
    for dv in (True, False):
        options = {"bucket": "-1", "deletion-vectors.enabled": str(dv).lower()}
        t = catalog.create_table(f"db.w11_{'dv' if dv else 'cow'}", data.T8_SCHEMA, options=options)
        table = data.t8(rows, seed=11)
        step = -(-rows // W11_FILES)
        for start in range(0, rows, step):
            t.write_arrow(table.slice(start, step))
        templates[dv] = t
    session = SqlSession(spark, warehouse=warehouse, database="db")
    state: dict[bool, str] = {}

    def arm(dv: bool) -> Arm:
        def setup() -> None:
            state[dv] = _fresh("w11")
            _copy_table(templates[dv], catalog, state[dv])

        def run() -> str:
            list(session.execute(f"DELETE FROM {state[dv]} WHERE id % 100 = 7"))
            return state[dv]

        def verify(name: str) -> Any:
            return spark_checksum(dyntable_df(spark, warehouse, name))

        return Arm(run, setup, verify)

    return [
        compare(
            "W11",
            "DELETE 1% of an append table: deletion vectors vs file rewrite",
            arm(True),
            arm(False),
            pairs=ctx.pairs,
            rows=rows,
            target=">= 5",
        )
    ]
