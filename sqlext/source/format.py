"""The ``dyntable`` format Spark sees: one DataSource class handing out the batch and streaming
readers and writers (``sqlext.source.datasource`` and ``sqlext.source.stream``).

It sits above both modules so neither imports the other's entry point (no import cycle).
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
)
from pyspark.sql.types import StructType

from sqlext.source.datasource import NAME, DyntableReader, DyntableWriter, resolve, source_arrow_schema
from sqlext.source.global_tables import GlobalTableReader, global_arrow_schema, global_table_of
from sqlext.source.requests import ReadRequest, WriteRequest
from sqlext.source.spark_types import spark_schema
from sqlext.source.stream import DyntableStreamReader, DyntableStreamWriter


class DyntableDataSource(DataSource):
    """``spark.read.format("dyntable")`` / ``df.write.format("dyntable")`` / streaming."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        request = ReadRequest.from_options(self.options)
        glob = global_table_of(request)
        if glob is not None:
            return spark_schema(global_arrow_schema(glob, request))
        table, system = resolve(request)
        return spark_schema(source_arrow_schema(table, system, request))

    def reader(self, schema: StructType) -> DataSourceReader:
        request = ReadRequest.from_options(self.options)
        glob = global_table_of(request)
        if glob is not None:
            return GlobalTableReader(request, glob)
        return DyntableReader(request)

    def writer(self, schema: StructType, overwrite: bool) -> DyntableWriter:
        return DyntableWriter(WriteRequest.from_options(self.options, overwrite), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return DyntableStreamReader(ReadRequest.from_options(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return DyntableStreamWriter(WriteRequest.from_options(self.options, overwrite), schema)

