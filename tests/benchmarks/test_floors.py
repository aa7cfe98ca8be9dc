"""The Python data source ceilings of W2, W3 and W9 (``benchmarks.floors``) run and deliver every row."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.floors import FILES_PER_TASK, register
from benchmarks.harness import Outcome, spark_checksum
from benchmarks.workloads_spark import _drain, _files_stream_once

pytestmark = pytest.mark.spark


def test_drain_writer_takes_every_partition(spark):
    register(spark)
    df = spark.range(0, 1000, numPartitions=4)
    assert _drain(df, 1000) == Outcome(1000)


def test_files_stream_delivers_exactly_the_files(spark, tmp_path):
    register(spark)
    files = []
    for i in range(FILES_PER_TASK + 3):  # more than one task group
        path = str(tmp_path / f"f{i}.parquet")
        pq.write_table(pa.table({"id": pa.array([i * 10 + k for k in range(10)], pa.int64()),
                                 "v": [f"v{i}"] * 10}), path)
        files.append(path)
    schema = spark.read.parquet(*files).schema
    got = _files_stream_once(spark, schema, files, str(tmp_path / "checkpoint"), columns=["id", "v"])
    assert got == spark_checksum(spark.read.parquet(*files))
    assert got.rows == 10 * len(files)


def test_files_batch_read_delivers_exactly_the_files(spark, tmp_path):
    register(spark)
    files = []
    for i in range(3):
        path = str(tmp_path / f"f{i}.parquet")
        pq.write_table(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), path)
        files.append(path)
    schema = spark.read.parquet(*files).schema
    df = spark.read.format("bench_files").schema(schema).option("paths", ",".join(files)).load()
    assert df.rdd.getNumPartitions() == len(files)
    assert spark_checksum(df) == spark_checksum(spark.read.parquet(*files))
