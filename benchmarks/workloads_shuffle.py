"""Bucket-shuffled primary-key writes (``sqlext.execute.bucket_shuffle``): W2's input, grouped by bucket.

* ``W2s``: W2's CDC batch through ``write_table`` with the shuffle on (JVM bucket expression,
  exchange by bucket, then the ``dyntable`` writer) vs W2's baseline (Spark's repartition + sort +
  Parquet write of the same rows).
* ``W2ss`` (context): the same with ``sortWithinPartitions`` by key after the exchange.
* ``W2i``: the SQL path, ``INSERT INTO t SELECT * FROM batch`` with ``write.bucket-shuffle`` on
  (ours) vs off (baseline): the ratio is the shuffle's speed-up where ``auto`` applies it
  (> 1: the shuffle pays). Both include the distributed compaction the SQL path runs after a
  primary-key write. W2's cached input has one partition per core (2 here): 2 runs per bucket.
* ``W2m``: the same with the input in 8 partitions, where the unshuffled write adds 8 runs per
  bucket and so triggers the compaction that rewrites the base.
* ``W2n``: SQL ``INSERT INTO t SELECT * FROM batch`` of T8 rows (unique keys) into an empty PK table
  (bucket 4) vs Spark's ``repartition(4, id).sortWithinPartitions(id).write.parquet`` of the same
  rows: the primary-key write against Spark's own bucketed, sorted Parquet write (issue 39's
  target; the SQL path writes such tables with Spark's Parquet writer, ``native_write``).

Each arm writes into a fresh byte copy of the same 1M-row PK table (bucket 4, as W2) and is
checked against the base merged with the batch by pyarrow. The notes give the data files each
arm leaves per bucket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.harness import Arm, Context, Result, arrow_checksum, compare, expect
from benchmarks.workloads_spark import PK_BUCKETS, T8_COLUMNS, UpsertFixture, get_spark
from engine import Table

SETTING = "write.bucket-shuffle"
MANY_PARTITIONS = 8  # W2m: enough input partitions for the unshuffled write to reach the compaction trigger


def _files_per_bucket(table: Table) -> str:
    counts = sorted(len(s.files) for s in table.refresh().plan().splits)
    return "/".join(str(c) for c in counts)


def run_w2s(ctx: Context) -> list[Result]:
    """W2's upsert shuffled by bucket: via ``write_table`` and via SQL INSERT."""
    from sqlext.execute.bucket_shuffle import shuffle_by_bucket, table_bucket
    from sqlext.execute.native_write import write_table
    from sqlext.session import SqlSession

    spark = get_spark(ctx)
    w2 = UpsertFixture.build(ctx, "w2s")
    batch, df, warehouse, state = w2.batch, w2.df, w2.warehouse, w2.state
    df.createOrReplaceTempView("w2s_batch")
    layout: dict[str, str] = {}
    fresh_table = w2.fresh_table

    def shuffled() -> Table:
        table = state["table"]
        write_table(df, table.name, warehouse, shuffle="true")
        return table

    def sorted_shuffle() -> Table:
        table = state["table"]
        bucketed = table_bucket(df, table)
        assert bucketed is not None
        frame = shuffle_by_bucket(bucketed, table, sort=True)
        frame.write.format("dyntable").option("warehouse", warehouse).option("table", table.name).mode(
            "append"
        ).save()
        return table

    def merged(label: str) -> Callable[[Table], Any]:
        def verify(t: Table) -> Any:
            layout[label] = _files_per_bucket(t)
            return arrow_checksum(t.refresh().to_arrow(), T8_COLUMNS)

        return verify

    spark_baseline = w2.spark_baseline()
    check = w2.check
    w2s = compare(
        "W2s", f"PK upsert write, shuffled by bucket (bucket {PK_BUCKETS})",
        Arm(shuffled, fresh_table, merged("write_table")), spark_baseline,
        pairs=ctx.pairs, rows=batch.num_rows, target=">= 0.7", check=check,
    )
    w2ss = compare(
        "W2ss", "  the same, sorted by key within the exchange",
        Arm(sorted_shuffle, fresh_table, merged("sorted")), spark_baseline,
        pairs=ctx.pairs, rows=batch.num_rows, target="context", check=check,
    )

    session = SqlSession(spark, warehouse=warehouse)

    def insert(mode: str, view: str = "w2s_batch") -> Callable[[], Table]:
        def run() -> Table:
            table = state["table"]
            session.set_option(SETTING, mode)
            list(session.execute(f"INSERT INTO {table.name} SELECT * FROM {view}"))
            return table

        return run

    w2i = compare(
        "W2i", "  SQL INSERT: shuffled vs unshuffled",
        Arm(insert("true"), fresh_table, merged("INSERT shuffled")),
        Arm(insert("false"), fresh_table, merged("INSERT unshuffled")),
        pairs=ctx.pairs, rows=batch.num_rows, target="context (> 1: the shuffle pays)",
        check=expect(w2.expected, w2.expected),
    )
    many = df.repartition(MANY_PARTITIONS).cache()
    many.count()
    many.createOrReplaceTempView("w2s_batch_many")
    w2m = compare(
        "W2m", f"  the same from {MANY_PARTITIONS} input partitions",
        Arm(insert("true", "w2s_batch_many"), fresh_table, merged(f"INSERT x{MANY_PARTITIONS} shuffled")),
        Arm(insert("false", "w2s_batch_many"), fresh_table, merged(f"INSERT x{MANY_PARTITIONS} unshuffled")),
        pairs=ctx.pairs, rows=batch.num_rows, target="context (> 1: the shuffle pays)",
        check=expect(w2.expected, w2.expected),
    )
    notes = "; ".join(f"{k}: {v}" for k, v in layout.items())
    partitions = df.rdd.getNumPartitions()
    w2s.notes.append(f"input in {partitions} partitions; data files per bucket after the write ({notes})")
    many.unpersist()
    df.unpersist()
    return [w2s, w2ss, w2i, w2m]


def run_w2n(ctx: Context) -> list[Result]:
    """SQL INSERT of unique-key T8 rows into an empty PK table (bucket 4) vs Spark's bucketed, sorted
    Parquet write of the same rows."""
    import uuid
    from pathlib import Path

    import pyarrow.parquet as pq

    from benchmarks import data
    from benchmarks.workloads_spark import cached_df
    from engine import open_catalog
    from sqlext.session import SqlSession

    spark = get_spark(ctx)
    rows = data.t8(ctx.size.rows, seed=5)
    expected = arrow_checksum(rows, T8_COLUMNS)
    df = cached_df(spark, rows, ctx.path("w2n-input"))
    df.createOrReplaceTempView("w2n_batch")
    warehouse = ctx.path("w2n")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    session = SqlSession(spark, warehouse=warehouse)
    state: dict[str, Any] = {}

    def fresh() -> None:
        name = f"db.w2n_{uuid.uuid4().hex[:8]}"
        state["table"] = catalog.create_table(name, data.T8_SCHEMA, primary_keys=["id"],
                                              options={"bucket": str(PK_BUCKETS)})

    def insert() -> Table:
        table = state["table"]
        list(session.execute(f"INSERT INTO {table.name} SELECT * FROM w2n_batch"))
        return table

    out_root = Path(ctx.path("w2n-parquet"))

    def base_setup() -> None:
        state["path"] = str(out_root / uuid.uuid4().hex)

    def base_run() -> str:
        df.repartition(PK_BUCKETS, "id").sortWithinPartitions("id").write.parquet(state["path"])
        return state["path"]

    result = compare(
        "W2n", f"SQL INSERT into an empty PK table (bucket {PK_BUCKETS})",
        Arm(insert, fresh, lambda t: arrow_checksum(t.refresh().to_arrow(), T8_COLUMNS)),
        Arm(base_run, base_setup, lambda path: arrow_checksum(pq.read_table(path), T8_COLUMNS)),
        pairs=ctx.pairs, rows=rows.num_rows, target=">= 0.9", check=expect(expected, expected),
    )
    result.notes.append(f"unique keys, input in {df.rdd.getNumPartitions()} partitions; "
                        "the baseline is repartition(4, id).sortWithinPartitions(id).write.parquet")
    df.unpersist()
    return [result]
