"""What Spark's Python data source API costs by itself: the ceilings over W1, W2, W3 and W9.

Trivial Python data sources, timed in the same run against the same baselines:

* ``bench_drain`` — a batch ``DataSourceArrowWriter`` whose tasks only drain the Arrow batches
  Spark hands them. W1's and W2's inputs (cached DataFrames) cost this much to reach any Python
  writer at all, before it sorts or writes a byte.
* ``bench_files`` — a streaming source that delivers the given Parquet files, one file per task
  group, read with ``pyarrow.parquet`` and nothing else: the per-query Python runner Spark
  starts, plus the Arrow hand-off of every row. W9 cannot beat it.
* ``bench_files`` read as a batch — the same files, one task per file, no merge: what W3's
  merge-on-read scan through the Python source costs before it merges anything.

``baseline time / floor time`` is the best ratio any Python data source can reach on that
workload; the suite prints it beside W1, W2, W3 and W9 (rows ``W1c``, ``W2c``, ``W3f``, ``W9c``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

FILES_PER_TASK = 12  # about the grouping the dyntable stream reader uses for W9's 100 files


class _Drain(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        rows = 0
        for batch in iterator:
            rows += batch.num_rows
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        pass


class DrainSource(DataSource):
    """``df.write.format("bench_drain").mode("append").save()``: tasks drain their input."""

    @classmethod
    def name(cls) -> str:
        return "bench_drain"

    def writer(self, schema: StructType, overwrite: bool) -> _Drain:
        return _Drain()


class _Files(InputPartition):
    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = tuple(paths)


def _read_files(paths: Sequence[str], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The files' rows as Spark's declared schema (the files carry Paimon field ids)."""
    for path in paths:
        yield from pq.read_table(path).cast(schema).to_batches(max_chunksize=65_536)


class _FilesStream(DataSourceStreamReader):
    def __init__(self, paths: list[str], schema: pa.Schema) -> None:
        self.paths = paths
        self.schema = schema  # Spark checks each batch against it (the files carry Paimon field ids)

    def initialOffset(self) -> dict:  # noqa: N802 - Spark's name
        return {"delivered": 0}

    def latestOffset(self) -> dict:  # noqa: N802
        return {"delivered": len(self.paths)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        todo = self.paths[start["delivered"] : end["delivered"]]
        return [_Files(todo[i : i + FILES_PER_TASK]) for i in range(0, len(todo), FILES_PER_TASK)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read_files(partition.paths, self.schema)  # type: ignore[attr-defined]

    def commit(self, end: dict) -> None:
        pass


class _FilesBatch(DataSourceReader):
    def __init__(self, paths: list[str], schema: pa.Schema) -> None:
        self.paths = paths
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        return [_Files([p]) for p in self.paths]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read_files(partition.paths, self.schema)  # type: ignore[attr-defined]


class FilesStreamSource(DataSource):
    """``spark.readStream.format("bench_files").schema(s).option("paths", "a,b,...")``, or
    ``spark.read`` with the same options for a batch read (one task per file)."""

    @classmethod
    def name(cls) -> str:
        return "bench_files"

    def schema(self) -> StructType:
        raise ValueError("bench_files needs an explicit schema")

    def _paths(self) -> list[str]:
        return [p for p in self.options["paths"].split(",") if p]

    def streamReader(self, schema: StructType) -> _FilesStream:  # noqa: N802
        from pyspark.sql.pandas.types import to_arrow_schema

        return _FilesStream(self._paths(), to_arrow_schema(schema))

    def reader(self, schema: StructType) -> _FilesBatch:
        from pyspark.sql.pandas.types import to_arrow_schema

        return _FilesBatch(self._paths(), to_arrow_schema(schema))


def register(spark: Any) -> None:
    """Register both sources (workers import this module: the suite puts the repository on
    their ``PYTHONPATH``)."""
    spark.dataSource.register(DrainSource)
    spark.dataSource.register(FilesStreamSource)
