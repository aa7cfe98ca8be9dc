"""W12dv: a 2M-row deletion-vector table written, updated, compacted and read in Spark's default
1 GB driver (issue #24's scale target).

One Spark session with Spark's default memory (``get_spark``: no driver or executor memory set,
so 1 GB each), two tables of at least 2,000,000 rows, whatever ``--size`` (``tiny`` uses its own
row count, as a smoke test):

* **primary-key** (bucket 4, ``deletion-vectors.enabled``): ``df.write.format("dyntable")`` of
  the base rows; a CDC batch of 10 % of the keys (updates, deletes, inserts) written the same way,
  whose compaction marks the old rows in DVs; a Spark read of the table; ``CALL sys.compact``
  (full: every DV applied and dropped); a Spark read again.
* **append** (bucket-unaware, DVs): the base rows written; ``DELETE ... WHERE id % 4 = 1`` (25 %,
  DVs only); a Spark read; ``CALL sys.compact(compact_strategy => 'minor')``, which rewrites every
  file (each has a DV, and 25 % is over ``compaction.delete-ratio-threshold``); a Spark read again.

Each step is timed once (a scale check, not a ratio: there is no baseline arm). Every read is
checked against the expected rows (count + checksum computed by Spark from Parquet copies of the
expected state) and the DV state is checked (DVs present after the change, none after the
compaction). The harness records each process kind's peak RSS (``benchmarks/memory.py``).
The inputs are generated with pyarrow and written to Parquet untimed; the driver's Python drops
them before the timed steps, so its peak includes the generation (reported in a note).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from benchmarks import data
from benchmarks.harness import CheckFailed, Context, Outcome, Result, fmt_seconds, same_result, spark_checksum
from benchmarks.workloads_spark import PK_BUCKETS, dyntable_df, get_spark
from engine import Table, open_catalog

MIN_ROWS = 2_000_000
DV = {"deletion-vectors.enabled": "true"}


def _rows(ctx: Context) -> int:
    return ctx.size.rows if ctx.size.name == "tiny" else max(MIN_ROWS, ctx.size.rows)


def _timed(result: Result, name: str, step: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    out = step()
    result.extra[name] = fmt_seconds(time.perf_counter() - start)
    return out


def _dv_rows(table: Table) -> int:
    """Rows marked in the DVs of the latest snapshot (as the read plan lists them)."""
    return sum(d.cardinality or 0 for s in table.refresh().plan().splits for d in s.deletion_files)


def _check(result: Result, what: str, got: Outcome, want: Outcome) -> None:
    try:
        same_result(got, want)
    except CheckFailed as e:
        if result.check == "ok":
            result.check = f"{what}: {e}"


def _inputs(ctx: Context, rows: int) -> dict[str, str]:
    """Parquet files of the base rows, the CDC batch and the expected states (untimed)."""
    root = Path(ctx.path("w12dv-inputs"))
    base = data.t8(rows, seed=121)
    batch = data.cdc(rows, rows // 10, seed=122)
    paths = {name: str(root / name) for name in ("base", "batch", "pk_expected", "append_expected")}
    for name in paths:
        Path(paths[name]).mkdir()
    pq.write_table(base, f"{paths['base']}/part-0.parquet")
    pq.write_table(batch, f"{paths['batch']}/part-0.parquet")
    pq.write_table(data.apply_cdc(base, batch), f"{paths['pk_expected']}/part-0.parquet")
    import pyarrow.compute as pc

    kept = base.filter(pc.not_equal(pc.bit_wise_and(base.column("id"), 3), 1))
    pq.write_table(kept, f"{paths['append_expected']}/part-0.parquet")
    del base, batch, kept
    gc.collect()
    return paths


def run_w12dv(ctx: Context) -> list[Result]:
    """A >= 2M-row DV table (primary-key, then append) written, changed, compacted and read."""
    from sqlext.session import SqlSession

    spark = get_spark(ctx)
    rows = _rows(ctx)
    generated = time.perf_counter()
    paths = _inputs(ctx, rows)
    generated = time.perf_counter() - generated
    warehouse = ctx.path("w12dv")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    session = SqlSession(spark, warehouse=warehouse, database="db")
    expected = {k: spark_checksum(spark.read.parquet(paths[k])) for k in ("pk_expected", "append_expected")}
    base_outcome = spark_checksum(spark.read.parquet(paths["base"]))

    def write(name: str, source: str) -> None:
        spark.read.parquet(paths[source]).write.format("dyntable").option("warehouse", warehouse).option(
            "table", name).mode("append").save()

    def read(name: str) -> Outcome:
        return spark_checksum(dyntable_df(spark, warehouse, name))

    pk_result = Result("W12dv", f"{rows / 1e6:g}M-row PK DV table, 1 GB driver", target="passes in 1 GB")
    pk = catalog.create_table("db.pk", data.T8_SCHEMA, primary_keys=["id"],
                              options={"bucket": str(PK_BUCKETS), **DV})
    _timed(pk_result, "write", lambda: write("db.pk", "base"))
    _check(pk_result, "after write", read("db.pk"), base_outcome)
    _timed(pk_result, "upsert 10%", lambda: write("db.pk", "batch"))
    marked = _dv_rows(pk)
    if marked == 0 and pk_result.check == "ok":
        pk_result.check = "the upsert's compaction marked no row in a deletion vector"
    _check(pk_result, "read", _timed(pk_result, "read", lambda: read("db.pk")), expected["pk_expected"])
    _timed(pk_result, "full compact", lambda: list(session.execute("CALL sys.compact(table => 'db.pk')")))
    if _dv_rows(pk) and pk_result.check == "ok":
        pk_result.check = "deletion vectors left after a full compaction"
    _check(pk_result, "read after compaction",
           _timed(pk_result, "read compacted", lambda: read("db.pk")), expected["pk_expected"])
    pk_result.rows = rows
    pk_result.extra["DV rows"] = marked
    pk_result.notes.append(f"inputs generated untimed in {fmt_seconds(generated)} (driver Python peak "
                           "includes them)")

    ap_result = Result("W12dva", f"{rows / 1e6:g}M-row append DV table, 1 GB driver", target="passes in 1 GB")
    catalog.create_table("db.ap", data.T8_SCHEMA, options={"bucket": "-1", **DV})
    _timed(ap_result, "write", lambda: write("db.ap", "base"))
    _timed(ap_result, "DELETE 25%", lambda: list(session.execute("DELETE FROM ap WHERE id % 4 = 1")))
    ap = catalog.get_table("db.ap")
    marked = _dv_rows(ap)
    if marked != rows - expected["append_expected"].rows and ap_result.check == "ok":
        ap_result.check = f"the DELETE marked {marked:,} rows in deletion vectors"
    _check(ap_result, "read", _timed(ap_result, "read", lambda: read("db.ap")), expected["append_expected"])
    _timed(ap_result, "minor compact", lambda: list(session.execute(
        "CALL sys.compact(table => 'db.ap', compact_strategy => 'minor')")))
    if _dv_rows(ap) and ap_result.check == "ok":
        ap_result.check = "deletion vectors left: compaction.delete-ratio-threshold picked no file"
    _check(ap_result, "read after compaction",
           _timed(ap_result, "read compacted", lambda: read("db.ap")), expected["append_expected"])
    ap_result.rows = rows
    ap_result.extra["DV rows"] = marked
    for r in (pk_result, ap_result):
        r.notes.append("peak RSS is the whole workload's (both tables)")
    return [pk_result, ap_result]
