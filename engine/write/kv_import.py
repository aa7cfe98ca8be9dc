"""Level-0 files of a primary-key table written by another Parquet writer, imported into the table.

A distributed engine that can sort, deduplicate and write Parquet itself (Spark) writes the
level-0 files of a primary-key write without handing the rows to Python:

```
 engine (driver)   KvFileImport.unsupported(store)   which tables qualify (None: this one does)
                   .physical_schema()                the file's columns, types and field ids
                   .sequence_starts()                per (partition, bucket): the first free sequence number
 outside writer    one file per (partition, bucket) and task: rows sorted by key, keys unique,
                   _SEQUENCE_NUMBER from the starts, into .staging_dir
 engine (driver)   .import_files(files)  ─► CommitMessages   footers read, files moved into
                                                               <partition>/bucket-<n>/data-<job>-<n>.parquet
                   CommitBuilder.commit(messages)             the normal commit and its post-commit hooks
```

The files are described from their Parquet footers (row count, statistics, sequence range); the
only data read is what a footer cannot say exactly: the first and last key of a composite key (or
of a key whose statistics the writer left out), and the ``_VALUE_KIND`` column when the footer
says the file may hold retractions (its delete row count). Everything else about the files is the
writer's contract, checked where it is cheap: the column names in order, one bucket and one
partition per file (the bucket of the first and last key), no empty file.

Which tables (:meth:`KvFileImport.unsupported`): fixed-bucket primary-key tables whose merge keeps
a whole row (``deduplicate``, ``first-row``) without ``sequence.field``, whose files hold only
types every reader reads the same from any Parquet writer (no nested types, TIME, or timestamps of
a precision other than 6), Parquet files with no file indexes, and no changelog files written with
the data (``changelog-producer`` ``input`` or ``lookup``). Everything else keeps the engine's
writer.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.commit_messages import CommitMessage, delete_uncommitted
from engine.errors import CorruptDataError
from engine.fileindex import file_index_config
from engine.files.reader import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, arrow_path
from engine.merge.functions import MergeConfig
from engine.meta.binary_row import EMPTY_ROW, deserialize_row, serialize_row
from engine.meta.bucket import bucket_ids
from engine.meta.manifest import DataFileMeta, FileSource
from engine.meta.paths import FileNamer
from engine.store import FileStore
from engine.types import DataField, DataType, TypeRoot
from engine.write.file_writer import kv_arrow_schema, local_now_millis
from engine.write.stats import bounded_stats

__all__ = ["KvFileImport", "SequenceStarts", "StagedFile"]

STAGING_DIR = ".dyntable/staging"
#: Beyond this many (partition, bucket) pairs the starts are one number for the whole table (the
#: largest), which orders new rows after old ones just as well and keeps the lookup small.
MAX_BUCKET_STARTS = 10_000
_FLAT_TYPES = {
    TypeRoot.BOOLEAN, TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.FLOAT,
    TypeRoot.DOUBLE, TypeRoot.DECIMAL, TypeRoot.CHAR, TypeRoot.VARCHAR, TypeRoot.BINARY, TypeRoot.VARBINARY,
    TypeRoot.DATE,
}
_RETRACT_KINDS = (1, 3)


@dataclass(frozen=True)
class StagedFile:
    """A written file: where it is, its partition (the partition row's ``BinaryRow`` bytes, without
    the manifest's arity prefix; ``b""`` for an unpartitioned table) and its bucket (None: the
    bucket of its keys)."""

    path: str
    partition: bytes = b""
    bucket: int | None = None


@dataclass(frozen=True)
class SequenceStarts:
    """The first free sequence number of each (partition, bucket) in snapshot ``snapshot_id`` (0:
    the table had none), partitions as in :class:`StagedFile`; a pair not listed starts at ``default``."""

    snapshot_id: int
    starts: dict[tuple[bytes, int], int]
    default: int = 0


def _flat(t: DataType) -> bool:
    if t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return (6 if t.precision is None else t.precision) == 6
    return t.root in _FLAT_TYPES


class KvFileImport:
    """One import of outside-written level-0 files into ``store`` by write job ``job`` (see the
    module docstring). The files get the job's names (``data-<job>-<n>``), so an abort of the job
    (``WriteBuilder.abort_job``) finds them like any file the job wrote."""

    def __init__(self, store: FileStore, job: str) -> None:
        self.store = store
        self.job = job
        self._namer = FileNamer(job)

    # -- which tables -----------------------------------------------------------------------------
    @staticmethod
    def unsupported(store: FileStore) -> str | None:
        """Why ``store``'s writes cannot be imported files (None: they can)."""
        schema, opts = store.schema, store.options
        if not schema.primary_keys:
            return "the table has no primary key"
        if opts.bucket < 1:
            return f"bucket = {opts.bucket} (only a fixed bucket count)"
        config = MergeConfig.from_options(schema.options, schema.primary_keys)
        if config.engine not in ("deduplicate", "first-row"):
            return f"merge-engine = {config.engine} (its merge runs in the engine)"
        if config.sequence_fields:
            return "sequence.field orders the rows"
        if opts.changelog_producer in ("input", "lookup"):
            return f"changelog-producer = {opts.changelog_producer} (its changelog is written with the data)"
        if opts.file_format != "parquet":
            return f"file.format = {opts.file_format}"
        if not file_index_config(opts.to_dict()).empty:
            return "file indexes are written with the data files"
        odd = [f.name for f in schema.fields if not _flat(f.type)]
        if odd:
            return f"column(s) {odd} have types outside the imported set"
        return None

    # -- what the writer needs -------------------------------------------------------------------
    def physical_schema(self) -> pa.Schema:
        """The columns of a level-0 file, in order, with their Arrow types and field ids:
        ``_KEY_<k>`` per key column (the primary key without the partition columns),
        ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, then every table column."""
        schema = self.store.schema
        return kv_arrow_schema(list(schema.fields), [schema.field(k) for k in schema.trimmed_primary_keys])

    @property
    def staging_dir(self) -> str:
        """Where the writer puts the job's files before the import moves them (inside the table)."""
        return f"{self.store.paths.root.rstrip('/')}/{STAGING_DIR}/{self.job}"

    def sequence_starts(self) -> SequenceStarts:
        """The sequence numbers the writer continues (the commit re-bases them if another write
        commits first): per bucket the largest live number + 1, as the engine's writer starts."""
        store = self.store
        latest = store.snapshots.latest()
        starts: dict[tuple[bytes, int], int] = {}
        for e in store.live_entries(latest):
            key = (e.partition[4:] if self.store.partition_keys else b"", e.bucket)
            starts[key] = max(starts.get(key, 0), e.file.max_sequence_number + 1)
        snapshot_id = latest.id if latest is not None else 0
        if len(starts) > MAX_BUCKET_STARTS:
            return SequenceStarts(snapshot_id, {}, max(starts.values()))
        return SequenceStarts(snapshot_id, starts)

    # -- the import ------------------------------------------------------------------------------
    def import_files(self, files: Sequence[StagedFile], sequence_base: int) -> list[CommitMessage]:
        """Describe ``files`` from their footers, move them into their bucket directories under the
        job's names, and return their commit messages (``sequence_base``: the snapshot the starts
        came from). Empty files are deleted. On failure, the files moved so far are deleted.

        Raises:
            CorruptDataError: a file that breaks the writer's contract (columns, buckets).
        """
        store = self.store
        by_bucket: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        moved: list[CommitMessage] = []
        try:
            for staged in files:
                described = self._describe(staged)
                if described is None:
                    store.io.delete(staged.path)
                    continue
                bucket, meta = described
                partition = self._manifest_row(staged.partition)
                part_dir = store.partition_dir(deserialize_row(partition, store.partition_types))
                store.io.mkdirs(store.paths.bucket_dir(part_dir, bucket))
                target = store.paths.data_file(part_dir, bucket, meta.file_name)
                if not store.io.rename(staged.path, target):
                    raise CorruptDataError(f"could not move {staged.path} to {target}")
                moved.append(CommitMessage(partition, bucket, store.options.bucket, new_files=(meta,)))
                by_bucket.setdefault((partition, bucket), []).append(meta)
        except BaseException:
            delete_uncommitted(store, moved)
            raise
        return [
            CommitMessage(partition, bucket, store.options.bucket, new_files=tuple(metas),
                          sequence_base=sequence_base)
            for (partition, bucket), metas in sorted(by_bucket.items())
        ]

    def _manifest_row(self, row: bytes) -> bytes:
        """A partition's row bytes in the manifest's form (the arity first)."""
        arity = len(self.store.partition_keys)
        return struct.pack(">i", arity) + row if arity else EMPTY_ROW

    def _describe(self, staged: StagedFile) -> tuple[int, DataFileMeta] | None:
        store = self.store
        schema = store.schema
        fs = store.io.arrow_fs()
        path = arrow_path(staged.path)
        footer = pq.read_metadata(path, filesystem=fs)
        expected = self.physical_schema().names
        names = footer.schema.to_arrow_schema().names
        if names != expected:
            raise CorruptDataError(f"{staged.path} has columns {names}, expected {expected}")
        rows = footer.num_rows
        if rows == 0:
            return None
        column_bounds = _footer_bounds(footer)
        key_fields = [schema.field(k) for k in schema.trimmed_primary_keys]
        key_names = [KEY_PREFIX + k.name for k in key_fields]
        first, last = self._first_last_key(staged, footer, key_fields, column_bounds)
        bucket = self._bucket(staged, first, last)
        seq_lo, seq_hi, _ = column_bounds[SEQUENCE_NUMBER]
        kind_lo, kind_hi, _ = column_bounds[VALUE_KIND]
        if seq_lo is None or seq_hi is None or kind_lo is None or kind_hi is None:
            raise CorruptDataError(f"{staged.path} has no statistics for its system columns")
        deletes = 0
        if kind_hi in _RETRACT_KINDS or (kind_lo < 3 and kind_hi > 0 and not kind_lo == kind_hi == 2):
            kinds = pq.read_table(path, columns=[VALUE_KIND], filesystem=fs).column(0)
            deletes = int(pc.sum(pc.is_in(kinds, value_set=pa.array(_RETRACT_KINDS, pa.int8()))).as_py() or 0)
        mode = store.options.metadata_stats_mode
        key_types = [k.type for k in key_fields]
        meta = DataFileMeta(
            file_name=self._namer.data_file(store.options.data_file_prefix, "parquet"),
            file_size=store.io.file_size(staged.path),
            row_count=rows,
            min_key=serialize_row(first, key_types),
            max_key=serialize_row(last, key_types),
            key_stats=bounded_stats(key_fields, [column_bounds[n] for n in key_names], "full"),
            value_stats=bounded_stats(schema.fields, [column_bounds[f.name] for f in schema.fields], mode),
            min_sequence_number=int(seq_lo),
            max_sequence_number=int(seq_hi),
            schema_id=schema.id,
            level=0,
            extra_files=(),
            creation_time_millis=local_now_millis(),
            delete_row_count=deletes,
            embedded_file_index=None,
            file_source=FileSource.APPEND,
            value_stats_cols=None,
            external_path=None,
            first_row_id=None,
            write_cols=None,
        )
        return bucket, meta

    def _first_last_key(
        self, staged: StagedFile, footer: pq.FileMetaData, key_fields: list[DataField],
        column_bounds: dict[str, tuple[Any, Any, int | None]],
    ) -> tuple[list[Any], list[Any]]:
        """The first and last key of a sorted file: a single key's footer minimum and maximum when
        the writer kept them, else read from the first and last row group."""
        if len(key_fields) == 1:
            lo, hi, _ = column_bounds[KEY_PREFIX + key_fields[0].name]
            if lo is not None and hi is not None:
                return [lo], [hi]
        names = [KEY_PREFIX + k.name for k in key_fields]
        source = pq.ParquetFile(arrow_path(staged.path), filesystem=self.store.io.arrow_fs())
        head = source.read_row_group(0, columns=names)
        tail = source.read_row_group(footer.num_row_groups - 1, columns=names)
        first = [head.column(n)[0].as_py() for n in names]
        last = [tail.column(n)[tail.num_rows - 1].as_py() for n in names]
        return first, last

    def _bucket(self, staged: StagedFile, first: list[Any], last: list[Any]) -> int:
        """The file's bucket: the bucket of its first and last key, which must agree with each other
        and with the bucket the writer named."""
        schema = self.store.schema
        trimmed = list(schema.trimmed_primary_keys)
        keys = list(schema.logical_bucket_keys)
        if any(k not in trimmed for k in keys):  # a bucket key among the partition columns
            row = deserialize_row(self._manifest_row(staged.partition), self.store.partition_types)
            partition: dict[str, Any] = dict(zip(schema.partition_keys, row, strict=True))
        else:
            partition = {}
        columns = []
        for k in keys:
            t = schema.field(k).type
            if k in trimmed:
                i = trimmed.index(k)
                values: list[Any] = [first[i], last[i]]
            else:
                values = [partition[k]] * 2
            columns.append(pa.array(values, type=_arrow(t)))
        types = [schema.field(k).type for k in keys]
        found = {int(b) for b in bucket_ids(columns, types, self.store.options.bucket)}
        if len(found) != 1 or (staged.bucket is not None and staged.bucket not in found):
            raise CorruptDataError(
                f"{staged.path} holds keys of bucket(s) {sorted(found)}, expected one bucket"
                + (f" ({staged.bucket})" if staged.bucket is not None else "")
            )
        return found.pop()

    def delete_staging(self) -> None:
        """Remove the staging directory and whatever the writer left in it."""
        self.store.io.delete_dir(self.staging_dir, recursive=True)


def _arrow(t: DataType) -> pa.DataType:
    from engine.arrow_types import to_arrow_type

    return to_arrow_type(t)


def _footer_bounds(footer: pq.FileMetaData) -> dict[str, tuple[Any, Any, int | None]]:
    """Per top-level column: (min, max, null count) over the row groups; None where a row group
    lacks them. Floating-point bounds holding NaN count as unknown (the engine's rule)."""
    out: dict[str, tuple[Any, Any, int | None]] = {}
    for i in range(footer.num_columns):
        name = footer.schema.column(i).path
        lo: Any = None
        hi: Any = None
        nulls: int | None = 0
        known = True
        for g in range(footer.num_row_groups):
            stats = footer.row_group(g).column(i).statistics
            if stats is None:
                known, nulls = False, None
                break
            if nulls is not None:
                nulls = nulls + stats.null_count if stats.has_null_count else None
            if stats.num_values == 0:
                continue  # all NULL in this group: no bounds to merge
            if not stats.has_min_max:
                known = False
                continue
            a, b = stats.min, stats.max
            if _is_nan(a) or _is_nan(b):
                known = False
                continue
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
        out[name] = (lo, hi, nulls) if known else (None, None, nulls)
    return out


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value
