"""Result sets for HiveServer2 clients: Arrow columns → columnar ``TRowSet``, and paging a result.

* :func:`table_schema` describes an Arrow schema as a ``TTableSchema`` (Hive type ids, decimal
  precision/scale qualifiers); :func:`row_set` turns an Arrow table into a columnar ``TRowSet``.
  Both are column-at-a-time: null bitmaps come from Arrow's validity bitmaps with numpy, values
  from ``to_numpy().tolist()``; no Python runs per cell.
* Values whose Hive type has no Thrift column of its own (DECIMAL, DATE, TIMESTAMP, nested and
  interval types) travel as text, rendered exactly as ``dyntable-sql`` prints them
  (``sqlext.output.column_text``), which is how Hive's JDBC driver expects them.
* :class:`Pager` hands out pages of ``maxRows`` rows from a restartable stream of record batches
  (FETCH_FIRST starts the stream again). :func:`spark_batches` streams a Spark DataFrame one
  partition at a time: each partition's Arrow batches are serialised to Arrow IPC on the
  executors (``mapInArrow``) and pulled with ``toLocalIterator``, so the server holds one
  partition, never the whole result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from TCLIService import ttypes as tt

from sqlext.output import column_text

_IPC_COLUMN = "arrow_ipc"


# --------------------------------------------------------------------------- types


def hive_type(t: pa.DataType) -> int:
    """The ``TTypeId`` a Hive client sees for an Arrow column type."""
    if pa.types.is_boolean(t):
        return tt.TTypeId.BOOLEAN_TYPE
    if pa.types.is_int8(t):
        return tt.TTypeId.TINYINT_TYPE
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return tt.TTypeId.SMALLINT_TYPE
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return tt.TTypeId.INT_TYPE
    if pa.types.is_integer(t):
        return tt.TTypeId.BIGINT_TYPE
    if pa.types.is_float32(t) or pa.types.is_float16(t):
        return tt.TTypeId.FLOAT_TYPE
    if pa.types.is_floating(t):
        return tt.TTypeId.DOUBLE_TYPE
    if pa.types.is_decimal(t):
        return tt.TTypeId.DECIMAL_TYPE
    if pa.types.is_date(t):
        return tt.TTypeId.DATE_TYPE
    if pa.types.is_timestamp(t):
        return tt.TTypeId.TIMESTAMP_TYPE
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return tt.TTypeId.BINARY_TYPE
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return tt.TTypeId.ARRAY_TYPE
    if pa.types.is_map(t):
        return tt.TTypeId.MAP_TYPE
    if pa.types.is_struct(t):
        return tt.TTypeId.STRUCT_TYPE
    if pa.types.is_null(t):
        return tt.TTypeId.NULL_TYPE
    if pa.types.is_dictionary(t):
        return hive_type(t.value_type)
    return tt.TTypeId.STRING_TYPE  # strings, intervals, times: shown as text


def type_name(t: pa.DataType) -> str:
    """The SQL type name of a column (``DECIMAL(10,2)``, ``ARRAY<INT>``) for metadata results."""
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"ARRAY<{type_name(t.value_type)}>"
    if pa.types.is_map(t):
        return f"MAP<{type_name(t.key_type)},{type_name(t.item_type)}>"
    if pa.types.is_struct(t):
        return "STRUCT<" + ",".join(f"{f.name}:{type_name(f.type)}" for f in t) + ">"
    if pa.types.is_null(t):
        return "VOID"
    if pa.types.is_timestamp(t) and t.tz is None:
        return "TIMESTAMP_NTZ"  # Spark's name: TIMESTAMP is the zoned (local) kind
    return tt.TTypeId._VALUES_TO_NAMES[hive_type(t)].removesuffix("_TYPE")


def table_schema(schema: pa.Schema) -> tt.TTableSchema:
    columns = []
    for position, field in enumerate(schema, 1):
        type_id = hive_type(field.type)
        qualifiers = None
        if type_id == tt.TTypeId.DECIMAL_TYPE:
            qualifiers = tt.TTypeQualifiers({
                "precision": tt.TTypeQualifierValue(i32Value=field.type.precision),
                "scale": tt.TTypeQualifierValue(i32Value=field.type.scale),
            })
        entry = tt.TPrimitiveTypeEntry(type=type_id, typeQualifiers=qualifiers)
        columns.append(tt.TColumnDesc(
            columnName=field.name, position=position, comment="",
            typeDesc=tt.TTypeDesc(types=[tt.TTypeEntry(primitiveEntry=entry)]),
        ))
    return tt.TTableSchema(columns=columns)


# --------------------------------------------------------------------------- values


def _nulls(arr: pa.Array) -> bytes:
    """Hive's null bitmap: bit i (least significant first) set when row i is null."""
    if arr.null_count == 0:
        return b""
    return np.packbits(arr.is_null().to_numpy(zero_copy_only=False), bitorder="little").tobytes()


def _values(arr: pa.Array, fill: Any) -> list[Any]:
    if arr.null_count:
        arr = pc.fill_null(arr, fill)
    return arr.to_numpy(zero_copy_only=False).tolist()


def column(arr: pa.Array | pa.ChunkedArray) -> tt.TColumn:
    """One Arrow column as a Thrift column of its Hive type."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    nulls = _nulls(arr)
    type_id = hive_type(arr.type)
    if type_id == tt.TTypeId.BOOLEAN_TYPE:
        return tt.TColumn(boolVal=tt.TBoolColumn(values=_values(arr, False), nulls=nulls))
    if type_id == tt.TTypeId.TINYINT_TYPE:
        return tt.TColumn(byteVal=tt.TByteColumn(values=_values(arr, 0), nulls=nulls))
    if type_id == tt.TTypeId.SMALLINT_TYPE:
        return tt.TColumn(i16Val=tt.TI16Column(values=_values(arr.cast(pa.int16()), 0), nulls=nulls))
    if type_id == tt.TTypeId.INT_TYPE:
        return tt.TColumn(i32Val=tt.TI32Column(values=_values(arr.cast(pa.int32()), 0), nulls=nulls))
    if type_id == tt.TTypeId.BIGINT_TYPE:
        return tt.TColumn(
            i64Val=tt.TI64Column(values=_values(arr.cast(pa.int64(), safe=False), 0), nulls=nulls)
        )
    if type_id in (tt.TTypeId.FLOAT_TYPE, tt.TTypeId.DOUBLE_TYPE):
        return tt.TColumn(
            doubleVal=tt.TDoubleColumn(values=_values(arr.cast(pa.float64()), 0.0), nulls=nulls)
        )
    if type_id == tt.TTypeId.BINARY_TYPE:
        return tt.TColumn(binaryVal=tt.TBinaryColumn(values=_values(arr.cast(pa.binary()), b""), nulls=nulls))
    if type_id == tt.TTypeId.STRING_TYPE and (
        pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
    ):
        text = arr
    else:
        text = column_text(arr)
    return tt.TColumn(stringVal=tt.TStringColumn(values=_values(text, ""), nulls=nulls))


def row_set(table: pa.Table | pa.RecordBatch, start: int) -> tt.TRowSet:
    """A columnar ``TRowSet`` of ``table`` whose first row is row ``start`` of the result."""
    return tt.TRowSet(startRowOffset=start, rows=[], columns=[column(c) for c in table.columns])


def empty_row_set(schema: pa.Schema, start: int) -> tt.TRowSet:
    return row_set(schema.empty_table(), start)


# --------------------------------------------------------------------------- paging


class Pager:
    """Pages of a result whose record batches come from ``open_stream()`` (callable again to restart)."""

    def __init__(self, schema: pa.Schema, open_stream: Callable[[], Iterator[pa.RecordBatch]]) -> None:
        self.schema = schema
        self._open = open_stream
        self._stream: Iterator[pa.RecordBatch] | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self.offset = 0  # rows handed out so far
        self._done = False

    def restart(self) -> None:
        self.close()
        self._done = False
        self.offset = 0

    def prime(self) -> None:
        """Start the stream and read its first batch (where a failing query raises)."""
        if self._stream is None and not self._done:
            self._stream = self._open()
            batch = next(self._stream, None)
            if batch is None:
                self._finish_stream()
            elif batch.num_rows:
                self._pending.append(batch)
                self._pending_rows += batch.num_rows

    def next_page(self, max_rows: int) -> tuple[pa.Table, bool]:
        """Up to ``max_rows`` rows and whether more may follow."""
        max_rows = max(1, max_rows)
        if self._stream is None and not self._done:
            self._stream = self._open()
        while self._pending_rows < max_rows and not self._done:
            batch = next(self._stream, None) if self._stream is not None else None
            if batch is None:
                self._finish_stream()
                break
            if batch.num_rows:
                self._pending.append(batch)
                self._pending_rows += batch.num_rows
        table = (
            pa.Table.from_batches(self._pending, schema=self.schema)
            if self._pending
            else self.schema.empty_table()
        )
        page = table.slice(0, max_rows)
        rest = table.slice(max_rows)
        self._pending = rest.combine_chunks().to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows
        self.offset += page.num_rows
        return page, bool(self._pending_rows) or not self._done

    def _finish_stream(self) -> None:
        self._done = True
        stream, self._stream = self._stream, None
        close = getattr(stream, "close", None)
        if close is not None:
            close()

    def close(self) -> None:
        """Stop the stream (Spark stops sending the remaining partitions)."""
        self._finish_stream()
        self._pending, self._pending_rows = [], 0


def table_batches(table: pa.Table) -> Callable[[], Iterator[pa.RecordBatch]]:
    """A restartable stream over a small result already in memory (metadata calls)."""
    return lambda: iter(table.to_batches())


def _to_ipc(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side: each Arrow batch of a partition becomes one row holding its IPC bytes."""
    for batch in batches:
        if not batch.num_rows:
            continue
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        yield pa.record_batch([pa.array([sink.getvalue().to_pybytes()], pa.binary())], names=[_IPC_COLUMN])


def arrow_schema_of(df: Any) -> pa.Schema:
    """The Arrow schema of a DataFrame's rows as ``mapInArrow`` hands them over."""
    from pyspark.sql.pandas.types import to_arrow_schema

    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone")
    return to_arrow_schema(df.schema, timezone=timezone)


def spark_batches(df: Any, schema: pa.Schema, on_start: Callable[[], None] | None = None,
                  ) -> Callable[[], Iterator[pa.RecordBatch]]:
    """A restartable stream of a DataFrame's rows, one partition at a time (see the module doc).

    ``on_start`` runs in the thread that starts each stream, before Spark does (the caller tags
    the thread's jobs there, so that a cancel reaches them).
    """

    # Columns by position: a result may name two columns alike (a join's ``a.id, b.id``), which
    # mapInArrow would find ambiguous; the client gets the names of ``schema``.
    positional = df.toDF(*[f"c{i}" for i in range(len(df.columns))])

    def open_stream() -> Iterator[pa.RecordBatch]:
        if on_start is not None:
            on_start()
        rows = positional.mapInArrow(_to_ipc, f"{_IPC_COLUMN} binary").toLocalIterator()
        return _decode(rows, schema)

    return open_stream


class _Decoded:
    """Decodes IPC rows into batches; ``close`` lets Spark stop the partition stream."""

    def __init__(self, rows: Iterator[Any], schema: pa.Schema) -> None:
        self._rows = rows
        self._schema = schema

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self

    def __next__(self) -> pa.RecordBatch:
        row = next(self._rows)
        batch = pa.ipc.open_stream(row[0]).read_next_batch()
        if not batch.schema.equals(self._schema):  # positional names (spark_batches), or another type
            batch = pa.RecordBatch.from_arrays(
                [c if c.type.equals(f.type) else c.cast(f.type)
                 for c, f in zip(batch.columns, self._schema, strict=True)],
                schema=self._schema,
            )
        return batch

    def close(self) -> None:
        close = getattr(self._rows, "close", None)
        if close is not None:
            close()  # ends pyspark's socket generator, which tells the JVM to stop


def _decode(rows: Iterator[Any], schema: pa.Schema) -> _Decoded:
    return _Decoded(rows, schema)
