"""``t$binlog`` as Paimon 2.0's ``BinlogTable`` shows it (``BinlogTableTest``'s rows): batch reads
in SQL and through the data source, incremental reads, and streams with updates packed."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import open_catalog
from tests.integration.sql_helpers import run


@pytest.fixture
def table(warehouse):
    """BinlogTableTest's table and writes: one commit each."""
    cat = open_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t", pa.schema([("pk", pa.int32()), ("pt", pa.int32()), ("col1", pa.int32())]),
        primary_keys=["pk", "pt"], partition_keys=["pt"],
        options={"changelog-producer": "input", "bucket": "1"},
    )
    for kind, row in [("+I", (1, 1, 1)), ("-D", (1, 1, 1)), ("+I", (1, 2, 5)), ("-U", (1, 2, 5)),
                      ("+U", (1, 2, 6)), ("+I", (2, 3, 1))]:
        t = t.refresh()
        t.write_arrow(pa.table({"pk": pa.array([row[0]], pa.int32()), "pt": pa.array([row[1]], pa.int32()),
                                "col1": pa.array([row[2]], pa.int32()), "rowkind": [kind]}))
    return t


def test_batch_binlog_is_the_audit_log_with_array_columns(session, table):
    rows = sorted(run(session, "SELECT * FROM db.`t$binlog`"))
    assert rows == [("+I", [2], [3], [1]), ("+U", [1], [2], [6]), ("-D", [1], [1], [1])]
    assert run(session, "SELECT rowkind, pk[0] FROM db.`t$binlog` WHERE col1[0] = 6") == [("+U", 1)]
    changes = sorted(run(session, "SELECT * FROM paimon_incremental_query('db.`t$binlog`', 2, 5)"))
    assert changes == [("+I", [1], [2], [5]), ("+U", [1], [2], [6]), ("-U", [1], [2], [5])]
    described = run(session, "DESCRIBE db.`t$binlog`")
    assert [(r[0], r[1]) for r in described][:4] == [
        ("rowkind", "string"), ("pk", "array<int>"), ("pt", "array<int>"), ("col1", "array<int>")]


def test_binlog_through_the_data_source_and_incrementally(spark, warehouse, table):
    def read(**options):
        df = (spark.read.format("dyntable").option("warehouse", warehouse).option("table", "db.t$binlog")
              .options(**options).load())
        return sorted(tuple(r) for r in df.collect())

    assert read() == [("+I", [2], [3], [1]), ("+U", [1], [2], [6]), ("-D", [1], [1], [1])]
    assert read(columns="col1") == [("+I", [1]), ("+U", [6]), ("-D", [1])]
    # Snapshot files read as changes: each write's changelog, one row each (they were separate commits).
    assert read(**{"incremental-between": "2,5"}) == [("+I", [1], [2], [5]), ("+U", [1], [2], [6]),
                                                      ("-U", [1], [2], [5])]


def test_a_streamed_binlog_packs_an_update_into_one_row(spark, warehouse, table, tmp_path):
    # One commit with the update's before and after images: one +U row of [before, after].
    table.refresh().write_arrow(pa.table({
        "pk": pa.array([2, 2], pa.int32()), "pt": pa.array([3, 3], pa.int32()),
        "col1": pa.array([1, 9], pa.int32()), "rowkind": ["-U", "+U"]}))
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "ckpt")
    q = (spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", "db.t$binlog")
         .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1").load()
         .writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    got = sorted(tuple(r) for r in spark.read.parquet(sink).collect())
    assert got == sorted([
        ("+I", [1], [1], [1]), ("-D", [1], [1], [1]), ("+I", [1], [2], [5]), ("-U", [1], [2], [5]),
        ("+U", [1], [2], [6]), ("+I", [2], [3], [1]), ("+U", [2, 2], [3, 3], [1, 9]),
    ])
