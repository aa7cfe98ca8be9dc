"""Paimon's format tables read and written by Spark's own file sources (CSV, Parquet, JSON, ORC).

A format table is a directory of files (``engine.format_table``): a read is Spark's reader over
its data files, given the table's schema and its options in Spark's spelling, with partition
values taken from the ``key=value`` directories (``basePath``); a write is Spark's writer into a
hidden staging directory under the table, whose files the driver then moves into place (the
engine's ``FormatTable.commit_staged``: append, or replace the whole table, a static partition
prefix, or the partitions written). No row passes through Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from engine import FormatTable
from engine.arrow_types import to_arrow_field
from sqlext.source.spark_types import spark_schema


def read_format_table(spark: SparkSession, io: Any, table: FormatTable) -> DataFrame:
    """The table's rows as a DataFrame read by Spark's own reader (empty when it has no files)."""
    schema = spark_schema(pa.schema([to_arrow_field(f) for f in table.fields]))
    files = table.data_files(io)
    if not files:
        return spark.createDataFrame([], schema)
    reader = spark.read.format(table.format).schema(schema).options(**table.reader_options())
    # Partition values come from the directories below basePath, typed by the given schema.
    frame = reader.option("basePath", table.location).load(files)
    return frame.select(*[f"`{n}`" for n in table.field_names])


def write_format_table(
    frame: DataFrame, io: Any, table: FormatTable, expressions: Sequence[str], overwrite: str,
    static: Mapping[str, str],
) -> int:
    """Writes ``frame`` (columns renamed ``_c0`` … and shaped by ``expressions`` onto the table's
    columns) with Spark's writer, then moves its files into the table; returns the files written."""
    shaped = frame.toDF(*[f"_c{i}" for i in range(len(frame.columns))]).selectExpr(*expressions)
    staged = table.staging_dir()
    writer = shaped.write.format(table.format).options(**table.reader_options()).mode("overwrite")
    if table.partition_keys:
        writer = writer.partitionBy(*table.partition_keys)
    try:
        writer.save(staged)
    except Exception:
        io.delete_dir(staged, recursive=True)
        raise
    return table.commit_staged(io, staged, overwrite, static)
