"""Key-value data files written from a stream of sorted chunks (a flush's or a compaction's output).

A streaming compaction hands its rows over chunk by chunk, so the output is never held whole;
:meth:`DataFileWriter.write_kv <engine.write.file_writer.DataFileWriter.write_kv>` is the same
writer fed one table. :class:`RollingKvWriter` keeps one Parquet file open, gathers chunks into
full row groups (``ROWS_PER_SLICE`` rows), rolls to a new file at ``target-file-size`` and describes
each finished file: key range from its first and last rows, sequence range, delete count, key and
value statistics merged piece by piece, and the table's file indexes built from the indexed
columns of its rows."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.files.reader import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, arrow_path
from engine.meta.avro_data import AvroWriter
from engine.meta.binary_row import serialize_row
from engine.meta.file_formats import OrcWriter
from engine.meta.manifest import DataFileMeta
from engine.options import DATA_FILE_THIN_MODE
from engine.write.file_writer import (
    ROWS_PER_SLICE,
    DataFileWriter,
    format_writer,
    kv_arrow_schema,
    local_now_millis,
    write_file_index,
)
from engine.write.stats import StatsAccumulator


class RollingKvWriter:
    """Writes sorted, key-unique kv chunks (table columns + ``_SEQUENCE_NUMBER`` + ``_VALUE_KIND``)
    in order, through the settings of ``writer`` (level, file source, prefix, target size)."""

    def __init__(self, writer: DataFileWriter) -> None:
        self.w = writer
        self.thin = writer.store.options.get(DATA_FILE_THIN_MODE)
        self.schema = kv_arrow_schema(writer.fields, writer.key_fields, self.thin)
        # the columns the key is read from: the value columns themselves in thin mode
        self.key_names = [k.name if self.thin else KEY_PREFIX + k.name for k in writer.key_fields]
        self._indexed = [c for c in writer.file_index.columns if c in self.schema.names]
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._metas: list[DataFileMeta] = []
        self._writer: pq.ParquetWriter | OrcWriter | AvroWriter | None = None
        self._sink = None
        self._external: str | None = None

    def write_all(self, chunks: Iterable[pa.Table]) -> list[DataFileMeta]:
        """Write every chunk, finish the last file; the files written, in key order. If reading
        or writing fails, the open file is closed (it is left behind uncommitted, as any failed
        compaction's files are, for orphan-file cleanup) and the error propagates."""
        try:
            for chunk in chunks:
                self.write(chunk)
        except BaseException:
            self.abort()
            raise
        return self.close()

    def abort(self) -> None:
        """Close the open file without describing it (after a failure)."""
        for closer in (self._writer, self._sink):
            try:
                if closer is not None:
                    closer.close()
            except Exception:  # noqa: BLE001, S110 - already failing: the first error is the one to see
                pass
        self._writer = self._sink = None
        self._pending, self._pending_rows = [], 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        w = self.w
        physical = pa.table({
            **({} if self.thin else {KEY_PREFIX + k.name: table.column(k.name) for k in w.key_fields}),
            SEQUENCE_NUMBER: table.column(SEQUENCE_NUMBER),
            VALUE_KIND: table.column(VALUE_KIND),
            **{f.name: table.column(f.name) for f in w.fields},
        }).cast(self.schema)
        self._pending.append(physical)
        self._pending_rows += physical.num_rows
        while self._pending_rows >= ROWS_PER_SLICE:
            rows = pa.concat_tables(self._pending)
            self._write_group(rows.slice(0, ROWS_PER_SLICE))
            rest = rows.slice(ROWS_PER_SLICE)
            self._pending, self._pending_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self) -> list[DataFileMeta]:
        if self._pending_rows:
            self._write_group(pa.concat_tables(self._pending))
        self._pending, self._pending_rows = [], 0
        if self._writer is not None:
            self._finish()
        metas, self._metas = self._metas, []
        return metas

    # -- one open file ----------------------------------------------------------------------------
    def _open(self) -> None:
        w = self.w
        store = w.store
        self._name = w.namer.data_file(w.prefix, store.options.file_format)
        path, self._external = w.locator.new_file(self._name)
        self._sink = store.io.arrow_fs().open_output_stream(arrow_path(path))
        self._writer = format_writer(self._sink, self.schema, store.options)
        self._rows = 0
        self._first: list[object] | None = None
        self._last: list[object] = []
        self._seq_min: int | None = None
        self._seq_max: int | None = None
        self._deletes = 0
        self._key_stats = StatsAccumulator(w.key_fields, "full")
        self._value_stats = StatsAccumulator(w.fields, w.stats_mode)
        self._index_pieces: list[pa.Table] = []

    def _write_group(self, rows: pa.Table) -> None:
        if self._writer is None:
            self._open()
        assert self._writer is not None and self._sink is not None
        self._writer.write_table(rows, row_group_size=ROWS_PER_SLICE)
        n = rows.num_rows
        if self._first is None:
            self._first = [rows.column(k)[0].as_py() for k in self.key_names]
        self._last = [rows.column(k)[n - 1].as_py() for k in self.key_names]
        mm = pc.min_max(rows.column(SEQUENCE_NUMBER))
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        self._seq_min = lo if self._seq_min is None else min(self._seq_min, lo)
        self._seq_max = hi if self._seq_max is None else max(self._seq_max, hi)
        kinds = rows.column(VALUE_KIND).to_numpy()
        self._deletes += int(np.count_nonzero((kinds == 1) | (kinds == 3)))
        keys = zip(self.w.key_fields, self.key_names, strict=True)
        self._key_stats.add(pa.table({k.name: rows.column(c) for k, c in keys}))
        self._value_stats.add(rows)
        if self._indexed:
            self._index_pieces.append(rows.select(self._indexed))
        self._rows += n
        if self._sink.tell() >= self.w.target_size:
            self._finish()

    def _finish(self) -> None:
        assert self._writer is not None and self._sink is not None
        w = self.w
        self._writer.close()
        size = self._sink.tell()
        self._sink.close()
        self._writer = self._sink = None
        embedded, extras = None, ()
        if self._indexed:
            rows = pa.concat_tables(self._index_pieces)
            embedded, extras = write_file_index(
                w.store, w.partition_dir, w.bucket, self._name, rows, w.file_index, self._external
            )
            self._index_pieces = []
        key_types = [k.type for k in w.key_fields]
        self._metas.append(
            DataFileMeta(
                file_name=self._name,
                file_size=size,
                row_count=self._rows,
                min_key=serialize_row(self._first or [], key_types),
                max_key=serialize_row(self._last, key_types),
                key_stats=self._key_stats.result(),
                value_stats=self._value_stats.result(),
                min_sequence_number=self._seq_min,
                max_sequence_number=self._seq_max,
                schema_id=w.store.schema.id,
                level=w.level,
                extra_files=extras,
                creation_time_millis=local_now_millis(),
                delete_row_count=self._deletes,
                embedded_file_index=embedded,
                file_source=w.file_source,
                value_stats_cols=None,
                external_path=self._external,
                first_row_id=None,
                write_cols=None,
            )
        )
