"""Paimon's global system tables (``sys.tables``, ``sys.partitions``, ``sys.all_table_options``,
``sys.catalog_options``) through the ``dyntable`` DataFrame source.

One job: recognise a read of ``table = 'sys.<name>'`` and serve it from
``engine.read_global_table``: the rows are computed once in the driver (metadata only) and shipped
in one partition. A warehouse database named ``sys`` keeps its own tables of these names.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from engine import (
    GLOBAL_TABLES,
    SYSTEM_DATABASE,
    Identifier,
    InvalidArgumentError,
    global_table_schema,
    open_catalog,
    read_global_table,
)
from sqlext.source.datasource import SplitPartition
from sqlext.source.requests import ReadRequest
from sqlext.source.spark_types import spark_arrow_schema, to_spark_batches


def global_table_of(request: ReadRequest) -> str | None:
    """The global system table a read request names (``sys.tables`` → ``tables``), or None."""
    text = request.target.table
    if not isinstance(text, str) or "$" in text or request.target.branch:
        return None
    parts = text.strip().split(".")
    if len(parts) != 2 or parts[0].lower() != SYSTEM_DATABASE or parts[1].lower() not in GLOBAL_TABLES:
        return None
    catalog = open_catalog(request.target.warehouse, **dict(request.target.storage))
    if catalog.table_exists(Identifier(parts[0], parts[1])):
        return None
    return parts[1].lower()


def global_arrow_schema(name: str, request: ReadRequest) -> pa.Schema:
    """The schema the source declares for ``sys.<name>`` (the ``columns`` option projects it)."""
    full = global_table_schema(name)
    wanted = list(request.columns or ())
    unknown = [c for c in wanted if c not in full.names]
    if unknown:
        raise InvalidArgumentError(f"unknown column(s) {unknown} of system table 'sys.{name}'")
    return pa.schema([full.field(c) for c in wanted]) if wanted else full


class GlobalTableReader(DataSourceReader):
    """Reads ``sys.<name>`` once, in the driver, into one partition."""

    def __init__(self, request: ReadRequest, name: str) -> None:
        self.request = request
        self.name = name
        declared = global_arrow_schema(name, request)
        self.columns = list(declared.names)
        self.arrow_schema = spark_arrow_schema(declared)

    def partitions(self) -> Sequence[InputPartition]:
        target = self.request.target
        catalog = open_catalog(target.warehouse, **dict(target.storage))
        options = {"warehouse": target.warehouse, **dict(target.storage)}
        return [SplitPartition(read_global_table(catalog, self.name, options).select(self.columns))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        rows = getattr(partition, "split", None)
        if isinstance(rows, pa.Table):
            yield from to_spark_batches(rows, self.arrow_schema)
