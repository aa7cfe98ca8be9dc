"""One open data file per (partition, bucket) that grows across write calls and rolls at the target size.

Spark hands a writer 10,000-row batches; writing a file per batch made thousands of tiny files.
A :class:`RollingAppendFile` keeps a Parquet writer open, appends each piece as row groups and
starts the next file once the current one reaches ``target-file-size`` on storage, so a task
writes at most one file per bucket per target size. Statistics are merged piece by piece.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from engine import row_tracking
from engine.arrow_types import to_arrow_field
from engine.fileindex import file_index_config
from engine.files.reader import arrow_path
from engine.meta.avro_data import AvroWriter
from engine.meta.binary_row import EMPTY_ROW
from engine.meta.file_formats import OrcWriter
from engine.meta.manifest import DataFileMeta, FileSource, SimpleStats
from engine.meta.paths import FileNamer
from engine.store import FileStore
from engine.write.file_writer import (
    FileLocator,
    format_writer,
    local_now_millis,
    slice_rows,
    write_file_index,
)
from engine.write.stats import StatsAccumulator


class RollingAppendFile:
    """The growing data file(s) of one bucket of an append table."""

    def __init__(
        self, store: FileStore, partition_dir: str, bucket: int, namer: FileNamer, *, tracked: bool = False
    ) -> None:
        self.store = store
        self.partition_dir = partition_dir
        self.bucket = bucket
        self.namer = namer
        opts = store.options
        self.prefix = opts.data_file_prefix
        self.stats_mode = opts.metadata_stats_mode
        self.target_size = opts.target_file_size(False)
        self.fields = list(store.schema.fields)
        # ``tracked``: rows of a row-tracking table that keep their _ROW_ID / _SEQUENCE_NUMBER,
        # written into the file after the table's columns (engine.row_tracking).
        self.tracked = tracked
        self.stats_fields = [*self.fields, *row_tracking.tracking_stats_fields()] if tracked else self.fields
        self.schema = pa.schema([to_arrow_field(f) for f in self.fields]
                                + (row_tracking.tracking_arrow_fields() if tracked else []))
        self._tracking: list[pa.Table] = []
        self.finished: list[tuple[DataFileMeta, int]] = []  # (meta without sequence numbers, rows)
        self.written_paths: list[str] = []  # every file started, for abort
        self.locator = FileLocator(store, partition_dir, bucket)
        self._external: str | None = None
        self._sink = None
        self._writer: pq.ParquetWriter | OrcWriter | AvroWriter | None = None
        self._name = ""
        self._rows = 0
        self._stats: StatsAccumulator | None = None
        # File indexes are built when a file finishes, from the indexed columns of its pieces.
        self.file_index = file_index_config(opts.to_dict())
        self._indexed = [c for c in self.file_index.columns if c in self.schema.names]
        self._pieces: list[pa.Table] = []

    def write(self, rows: pa.Table) -> None:
        rows = rows.cast(self.schema)
        offset = 0
        step = slice_rows(rows, self.target_size)
        while offset < rows.num_rows:
            if self._writer is None:
                self._open()
            piece = rows.slice(offset, step)
            self._writer.write_table(piece, row_group_size=step)  # type: ignore[union-attr]
            self._stats.add(piece)  # type: ignore[union-attr]
            if self._indexed:
                self._pieces.append(piece.select(self._indexed))
            if self.tracked:
                self._tracking.append(piece.select(list(row_tracking.TRACKING_COLUMNS)))
            self._rows += piece.num_rows
            offset += piece.num_rows
            if self._sink is not None and self._sink.tell() >= self.target_size:
                self._close()

    def _open(self) -> None:
        self._name = self.namer.data_file(self.prefix, self.store.options.file_format)
        path, self._external = self.locator.new_file(self._name)
        self.written_paths.append(path)
        self._sink = self.store.io.arrow_fs().open_output_stream(arrow_path(path))
        self._writer = format_writer(self._sink, self.schema, self.store.options)
        self._rows = 0
        self._stats = StatsAccumulator(self.stats_fields, self.stats_mode)

    def _close(self) -> None:
        assert self._writer is not None and self._sink is not None and self._stats is not None
        self._writer.close()
        size = self._sink.tell()
        self._sink.close()
        embedded, extras = None, ()
        if self._indexed:
            empty = self.schema.empty_table().select(self._indexed)
            rows = pa.concat_tables(self._pieces) if self._pieces else empty
            embedded, extras = write_file_index(self.store, self.partition_dir, self.bucket, self._name, rows,
                                                self.file_index, self._external)
            paths = self.store.paths
            self.written_paths.extend(
                paths.extra_file(self.partition_dir, self.bucket, x, self._external) for x in extras)
            self._pieces = []
        meta = DataFileMeta(
            file_name=self._name, file_size=size, row_count=self._rows, min_key=EMPTY_ROW, max_key=EMPTY_ROW,
            key_stats=SimpleStats.EMPTY, value_stats=self._stats.result(), min_sequence_number=0,
            max_sequence_number=0, schema_id=self.store.schema.id, level=0, extra_files=extras,
            creation_time_millis=local_now_millis(), delete_row_count=0, embedded_file_index=embedded,
            file_source=FileSource.APPEND, value_stats_cols=None, external_path=self._external,
            first_row_id=None, write_cols=None,
        )
        if self.tracked:
            names = [f.name for f in self.fields]
            meta = row_tracking.tracked_file(meta, names, pa.concat_tables(self._tracking))
            self._tracking = []
        self.finished.append((meta, self._rows))
        self._writer = self._sink = self._stats = None

    def close(self) -> list[tuple[DataFileMeta, int]]:
        """Finish the open file; returns every finished file with its row count (oldest first)."""
        if self._writer is not None:
            self._close()
        done, self.finished = self.finished, []
        return done

    def discard(self) -> list[str]:
        """Close without finishing (abort); returns the paths of every file this writer started."""
        for closer in (self._writer, self._sink):
            try:
                if closer is not None:
                    closer.close()
            except Exception:  # noqa: BLE001, S110 - the file is deleted next anyway
                pass
        self._writer = self._sink = self._stats = None
        self._pieces = []
        self._tracking = []
        return self.written_paths
