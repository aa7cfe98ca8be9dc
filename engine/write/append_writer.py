"""Writer of append (no primary key) tables.

Rows are routed to their partition and bucket (``bucket`` > 0 hashes the bucket key with
Paimon's bucket function; the default unaware mode writes everything to ``bucket-0``). Each
bucket keeps one rolling file open across ``write`` calls (:mod:`engine.write.rolling`), fed in
row groups of up to ``ROWS_PER_SLICE`` rows gathered from the small batches Spark hands over;
rows pending in memory are bounded by ``write-buffer-size``. Nothing is visible until the
returned commit messages are committed.
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from engine import row_tracking
from engine.commit_messages import CommitMessage
from engine.meta.binary_row import serialize_row
from engine.meta.bucket import bucket_ids
from engine.meta.manifest import DataFileMeta
from engine.meta.paths import FileNamer
from engine.store import FileStore
from engine.write.conform import conform
from engine.write.file_writer import ROWS_PER_SLICE
from engine.write.rolling import RollingAppendFile
from engine.write.routing import group_rows

Bucket = tuple[bytes, int, bool]  # partition, bucket, whether its rows keep their row ids


class AppendWriter:
    """Routes rows to per-bucket rolling files; ``prepare_commit`` finishes them and returns the messages."""

    def __init__(
        self, store: FileStore, first_sequence: int | None = None, namer: FileNamer | None = None,
        *, keep_row_ids: bool = False,
    ) -> None:
        self.store = store
        self.namer = namer or FileNamer()
        self.buffer_limit = store.options.write_buffer_size
        self._partition_dirs: dict[tuple[object, ...], tuple[bytes, str]] = {}
        self._files: dict[Bucket, RollingAppendFile] = {}
        self._pending: dict[Bucket, list[pa.Table]] = {}
        self._pending_rows: dict[Bucket, int] = {}
        self._pending_bytes = 0
        if first_sequence is None:
            latest = store.snapshots.latest()
            first_sequence = latest.total_record_count if latest else 0
        self._sequence = first_sequence
        # Only a rewrite asks for it (WriteBuilder.keeping_row_ids): a plain write's _ROW_ID column
        # is not the table's and is refused like any unknown column.
        self.tracking = keep_row_ids and row_tracking.enabled(store.schema)

    def _partition(self, values: tuple[object, ...]) -> tuple[bytes, str]:
        cached = self._partition_dirs.get(values)
        if cached is None:
            cached = (
                serialize_row(list(values), self.store.partition_types),
                self.store.partition_dir(values),
            )
            self._partition_dirs[values] = cached
        return cached

    def write(self, data: object) -> None:
        store = self.store
        names = data.column_names if isinstance(data, pa.Table | pa.RecordBatch) else []
        if self.tracking and row_tracking.ROW_ID in names:
            # Rewritten rows of a row-tracking table keep their ids (and sequence numbers, NULL for
            # updated rows): written into files of their own. Rows without an id are new rows.
            table = conform(data, store.schema, [(c, pa.int64()) for c in row_tracking.TRACKING_COLUMNS])
            if row_tracking.SEQUENCE_NUMBER not in table.column_names:
                nulls = pa.nulls(table.num_rows, pa.int64())
                table = table.append_column(row_tracking.SEQUENCE_NUMBER, nulls)
            has_id = pc.is_valid(table.column(row_tracking.ROW_ID))
            self._route(table.filter(has_id), tracked=True)
            self._route(table.filter(pc.invert(has_id)).drop_columns(list(row_tracking.TRACKING_COLUMNS)))
            return
        self._route(conform(data, store.schema))

    def _route(self, table: pa.Table, tracked: bool = False) -> None:
        store = self.store
        if table.num_rows == 0:
            return
        num_buckets = store.options.bucket
        buckets = None
        if num_buckets > 0:
            keys = store.schema.logical_bucket_keys
            buckets = bucket_ids(
                [table.column(k) for k in keys], [store.schema.field(k).type for k in keys], num_buckets
            )
        for values, bucket, rows in group_rows(table, store.partition_keys, buckets):
            partition, part_dir = self._partition(values)
            key = (partition, bucket, tracked)
            if key not in self._files:
                self._files[key] = RollingAppendFile(store, part_dir, bucket, self.namer, tracked=tracked)
            self._pending.setdefault(key, []).append(rows)
            self._pending_rows[key] = self._pending_rows.get(key, 0) + rows.num_rows
            self._pending_bytes += rows.nbytes
            if self._pending_rows[key] >= ROWS_PER_SLICE:
                self._drain(key)
        while self._pending_bytes > self.buffer_limit and self._pending_rows:
            self._drain(max(self._pending_rows, key=self._pending_rows.__getitem__))

    def _drain(self, key: Bucket) -> None:
        pieces = self._pending.pop(key)
        self._pending_rows.pop(key)
        rows = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
        self._pending_bytes -= sum(p.nbytes for p in pieces)
        self._files[key].write(rows)

    def prepare_commit(self) -> list[CommitMessage]:
        for key in list(self._pending):
            self._drain(key)
        total = self.store.options.bucket
        messages = []
        by_bucket: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        for (partition, bucket, tracked), rolling in self._files.items():
            metas = by_bucket.setdefault((partition, bucket), [])
            for meta, rows in rolling.close():
                if tracked:  # the sequence range of its rows (engine.row_tracking.tracked_file)
                    metas.append(meta)
                    continue
                metas.append(
                    replace(
                        meta,
                        min_sequence_number=self._sequence,
                        max_sequence_number=self._sequence + rows - 1,
                    )
                )
                self._sequence += rows
        for (partition, bucket), metas in by_bucket.items():
            if metas:
                messages.append(
                    CommitMessage(partition, bucket, total if total > 0 else -1, new_files=tuple(metas))
                )
        self._files = {}
        return messages

    def abort(self) -> None:
        """Delete every file started so far (nothing was committed)."""
        store = self.store
        for rolling in self._files.values():
            for path in rolling.discard():
                store.io.delete(path)
        self._files, self._pending, self._pending_rows, self._pending_bytes = {}, {}, {}, 0
