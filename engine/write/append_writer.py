"""Writer of append (no primary key) tables.

Rows are routed to their partition and bucket (``bucket`` > 0 hashes the bucket key with
Paimon's bucket function; the default unaware mode writes everything to ``bucket-0``) and
written as Parquet files rolled at the target size. Nothing is visible until the returned
commit messages are committed.
"""

from __future__ import annotations

from engine.commit import CommitMessage, delete_uncommitted
from engine.meta.binary_row import serialize_row
from engine.meta.bucket import bucket_ids
from engine.meta.manifest import DataFileMeta
from engine.meta.paths import FileNamer
from engine.store import FileStore
from engine.write.conform import conform
from engine.write.file_writer import DataFileWriter
from engine.write.routing import group_rows


class AppendWriter:
    """Buffers nothing: each ``write`` call writes files; ``prepare_commit`` returns the messages."""

    def __init__(self, store: FileStore, first_sequence: int | None = None, namer: FileNamer | None = None) -> None:
        self.store = store
        self.namer = namer or FileNamer()
        self._files: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        self._partition_dirs: dict[tuple[object, ...], tuple[bytes, str]] = {}
        if first_sequence is None:
            latest = store.snapshots.latest()
            first_sequence = latest.total_record_count if latest else 0
        self._sequence = first_sequence

    def _partition(self, values: tuple[object, ...]) -> tuple[bytes, str]:
        cached = self._partition_dirs.get(values)
        if cached is None:
            cached = (serialize_row(list(values), self.store.partition_types), self.store.partition_dir(values))
            self._partition_dirs[values] = cached
        return cached

    def write(self, data: object) -> None:
        store = self.store
        table = conform(data, store.schema)
        if table.num_rows == 0:
            return
        num_buckets = store.options.bucket
        buckets = None
        if num_buckets > 0:
            keys = store.schema.logical_bucket_keys
            buckets = bucket_ids([table.column(k) for k in keys], [store.schema.field(k).type for k in keys], num_buckets)
        for values, bucket, rows in group_rows(table, store.partition_keys, buckets):
            partition, part_dir = self._partition(values)
            writer = DataFileWriter(store, part_dir, bucket, namer=self.namer)
            metas = writer.write_append(rows, self._sequence)
            self._sequence += rows.num_rows
            self._files.setdefault((partition, bucket), []).extend(metas)

    def prepare_commit(self) -> list[CommitMessage]:
        total = self.store.options.bucket
        messages = [
            CommitMessage(partition, bucket, total if total > 0 else -1, new_files=tuple(files))
            for (partition, bucket), files in self._files.items()
        ]
        self._files = {}
        return messages

    def abort(self) -> None:
        """Delete the files written so far (nothing was committed)."""
        delete_uncommitted(self.store, self.prepare_commit())

