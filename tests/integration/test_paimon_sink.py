"""Paimon 2.0's PaimonSinkTest (paimon-spark-ut) translated: the cases not already in
test_stream_paimon_sink.py (complete mode, ``full-compaction.delta-commits`` in a streaming write)
with Paimon's tables, inputs and expected rows; format ``dyntable`` for ``paimon``, the table
named by warehouse and identifier where Paimon gives its location.

Paimon feeds its streams from Spark's ``MemoryStream``, which PySpark does not offer; here each
``addData`` is one Parquet file dropped into a directory read by Spark's file stream source (the
same rows, one micro-batch per file)."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import CommitKind
from tests.integration.test_sql_dml import table

TABLE = "default.T"


def sql(session, text):
    frame = list(session.execute(text))[-1].dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


class FileStream:
    """Paimon's ``MemoryStream[...]``: ``add`` makes the rows the stream's next input."""

    def __init__(self, spark, tmp_path, schema: pa.Schema, ddl: str):
        self.dir, self.schema, self.n = str(tmp_path / "input"), schema, 0
        os.makedirs(self.dir)
        self.df = spark.readStream.schema(ddl).option("maxFilesPerTrigger", 1).parquet(self.dir)

    def add(self, *rows):
        cols = list(zip(*rows, strict=True))
        data = pa.table({f.name: pa.array(c, f.type) for f, c in zip(self.schema, cols, strict=True)})
        tmp = os.path.join(self.dir, f".part-{self.n}.tmp")  # hidden until renamed: read whole
        pq.write_table(data, tmp)
        os.rename(tmp, os.path.join(self.dir, f"part-{self.n:05d}.parquet"))
        self.n += 1


AB = pa.schema([("a", pa.int32()), ("b", pa.string())])


def _sink(df, warehouse, checkpoint, mode="append"):
    return (df.writeStream.format("dyntable").option("warehouse", warehouse).option("table", TABLE)
            .option("checkpointLocation", checkpoint).outputMode(mode))


def _append_batch(warehouse):
    """Paimon's foreachBatch body: ``batch.write.format(...).mode("append").save(location)``."""
    def write(batch, _id):
        writer = batch.write.format("dyntable").option("warehouse", warehouse).option("table", TABLE)
        writer.mode("append").save()
    return write


@pytest.fixture
def pk_table(session):
    sql(session, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3')")


def _upserts(session, stream, query):
    try:
        stream.add((1, "a"))
        query.processAllAvailable()
        assert sql(session, "SELECT * FROM T ORDER BY a") == [(1, "a")]
        stream.add((2, "b"))
        query.processAllAvailable()
        assert sql(session, "SELECT * FROM T ORDER BY a") == [(1, "a"), (2, "b")]
        stream.add((2, "b2"))
        query.processAllAvailable()
        assert sql(session, "SELECT * FROM T ORDER BY a") == [(1, "a"), (2, "b2")]
    finally:
        query.stop()


def test_for_each_batch(session, spark, warehouse, tmp_path, pk_table):
    stream = FileStream(spark, tmp_path, AB, "a INT, b STRING")
    query = (stream.df.writeStream.option("checkpointLocation", str(tmp_path / "ckpt"))
             .foreachBatch(_append_batch(warehouse)).start())
    _upserts(session, stream, query)


def test_append_mode(session, spark, warehouse, tmp_path, pk_table):
    stream = FileStream(spark, tmp_path, AB, "a INT, b STRING")
    query = _sink(stream.df, warehouse, str(tmp_path / "ckpt")).start()
    _upserts(session, stream, query)


@pytest.mark.xfail(strict=True, reason=(
    "outputMode('update') is accepted and written as append: Spark's Python data-source sink API "
    "hands the writer only an overwrite flag (complete mode), not the output mode, where Paimon's "
    "sink refuses update mode at start(); a platform limit, docs/compatibility.md"))
def test_update_mode_is_refused(session, spark, warehouse, tmp_path, pk_table):
    stream = FileStream(spark, tmp_path, AB, "a INT, b STRING")
    with pytest.raises(Exception) as info:  # noqa: B017 (Paimon intercepts any RuntimeException)
        _sink(stream.df, warehouse, str(tmp_path / "ckpt"), mode="update").start().stop()
    assert "update" in str(info.value).lower()


def test_aggregation_and_watermark(session, spark, warehouse, tmp_path):
    from pyspark.sql import functions as F

    sql(session, "CREATE TABLE T (start Timestamp, stockId INT, avg_price DOUBLE) "
                 "TBLPROPERTIES ('bucket'='3', 'bucket-key'='stockId')")
    schema = pa.schema([("time", pa.int64()), ("stockId", pa.int32()), ("price", pa.float64())])
    stream = FileStream(spark, tmp_path, schema, "time BIGINT, stockId INT, price DOUBLE")
    data = (stream.df.selectExpr("CAST(time AS timestamp) AS timestamp", "stockId", "price")
            .withWatermark("timestamp", "10 seconds")
            .groupBy(F.window("timestamp", "5 seconds"), F.col("stockId"))
            .agg(F.mean("price").alias("avg_price"))
            .select("window.start", "stockId", "avg_price"))
    query = _sink(data, warehouse, str(tmp_path / "ckpt")).start()
    try:
        stream.add((101, 1, 1.0), (102, 1, 2.0), (104, 2, 20.0))
        query.processAllAvailable()
        stream.add((105, 2, 40.0), (107, 2, 60.0), (115, 3, 300.0))
        query.processAllAvailable()
        stream.add((200, 99, 99.9))
        query.processAllAvailable()
        got = sql(session, "SELECT CAST(start as BIGINT) AS start, stockId, avg_price FROM T "
                           "ORDER BY start, stockId")
        assert got == [(100, 1, 1.5), (100, 2, 20.0), (105, 2, 50.0), (115, 3, 300.0)]
    finally:
        query.stop()


def test_enable_schema_evolution(session, spark, warehouse, tmp_path, pk_table):
    date = dt.date(2023, 8, 10)
    sql(session, "INSERT INTO T VALUES (1, '2023-08-09'), (2, '2023-08-09')")
    assert sql(session, "SELECT * FROM T ORDER BY a, b") == [(1, "2023-08-09"), (2, "2023-08-09")]
    schema = pa.schema([("a", pa.int64()), ("b", pa.date32()), ("c", pa.int32())])
    stream = FileStream(spark, tmp_path, schema, "a BIGINT, b DATE, c INT")
    query = (_sink(stream.df, warehouse, str(tmp_path / "ckpt"))
             .option("write.merge-schema", "true")
             .option("write.merge-schema.type-widening", "true")
             .option("write.merge-schema.explicit-cast", "true").start())
    try:
        stream.add((1, date, 123), (3, date, 456))
        query.processAllAvailable()
        # Paimon's expected rows: a widened to BIGINT, b cast to DATE, c added.
        assert sql(session, "SELECT * FROM T ORDER BY a") == [
            (1, date, 123), (2, dt.date(2023, 8, 9), None), (3, date, 456)]
    finally:
        query.stop()


def test_full_compaction_delta_commits_with_batch_write(session):
    sql(session, "CREATE TABLE t (a INT, b INT) TBLPROPERTIES ("
                 "'primary-key'='a', 'bucket'='1', 'full-compaction.delta-commits'='1')")
    sql(session, "INSERT INTO t VALUES (1, 1)")
    sql(session, "INSERT INTO t VALUES (2, 2)")
    assert sql(session, "SELECT * FROM t ORDER BY a") == [(1, 1), (2, 2)]
    assert table(session, "t").refresh().latest_snapshot().commit_kind is CommitKind.COMPACT


def test_batch_then_stream_does_not_overwrite_batch_data(session, spark, warehouse, tmp_path, pk_table):
    sql(session, "INSERT INTO T VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert sql(session, "SELECT * FROM T ORDER BY a") == [(1, "a"), (2, "b"), (3, "c")]
    stream = FileStream(spark, tmp_path, AB, "a INT, b STRING")
    query = (stream.df.writeStream.option("checkpointLocation", str(tmp_path / "ckpt"))
             .foreachBatch(_append_batch(warehouse)).start())
    try:
        stream.add((4, "d"))
        query.processAllAvailable()
        assert sql(session, "SELECT * FROM T ORDER BY a") == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
        stream.add((5, "e"))
        query.processAllAvailable()
        assert sql(session, "SELECT * FROM T ORDER BY a") == [
            (1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]
    finally:
        query.stop()
