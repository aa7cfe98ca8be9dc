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
    """``spark.read.format("dyntable")`` / ``df.write.format("dyntable")`` / streaming.

    ``job_parallelism``: the parallelism of the session it was registered on (``for_session``),
    the default number of dynamic-bucket assigners of its writes; None: one assigner.
    """

    job_parallelism: int | None = None

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
        return DyntableWriter(WriteRequest.from_options(self.options, overwrite), schema,
                              job_parallelism=self.job_parallelism)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return DyntableStreamReader(ReadRequest.from_options(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return DyntableStreamWriter(WriteRequest.from_options(self.options, overwrite), schema,
                                    job_parallelism=self.job_parallelism)


def for_session(job_parallelism: int) -> type[DyntableDataSource]:
    """The format as registered on one session: a Python data source sees a write's options only,
    never the session's configuration, so the session's job parallelism travels in the class
    (a class made here is pickled by value when Spark ships it to its Python workers)."""
    attributes = {"job_parallelism": job_parallelism, "__module__": __name__,
                  "__doc__": DyntableDataSource.__doc__}
    return type(DyntableDataSource.__name__, (DyntableDataSource,), attributes)
