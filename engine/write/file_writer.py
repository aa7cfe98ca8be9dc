"""Writing Arrow data as Paimon data files (Parquet), rolled at ``target-file-size``.

Two physical layouts (docs/design/format-notes.md §8.1): append files hold exactly the table columns;
primary-key ("kv") files hold ``_KEY_<pk>`` columns, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``,
then every table column, sorted by key with unique keys (in thin mode, ``data-file.thin-mode``,
without the ``_KEY_`` columns: every key field is a value column too). Every Parquet field carries its
Paimon field id, and so do list elements and map keys/values (Paimon 2.0's ids,
``engine.write.nested_ids``). Each finished file is described by a :class:`DataFileMeta` with exact size,
row count, sequence range, key range and statistics.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from engine.arrow_types import to_arrow_field
from engine.fileindex import FileIndexBlob, FileIndexConfig, build_blob, file_index_config
from engine.files.reader import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, arrow_path
from engine.meta.avro_data import AvroWriter
from engine.meta.binary_row import EMPTY_ROW
from engine.meta.external_paths import ExternalPaths
from engine.meta.file_formats import OrcWriter
from engine.meta.manifest import DataFileMeta, FileSource, SimpleStats
from engine.meta.paths import FileNamer
from engine.options import CoreOptions
from engine.row_tracking import ROW_ID, tracked_file, tracking_arrow_fields, tracking_stats_fields
from engine.store import FileStore
from engine.types import DataField
from engine.write.nested_ids import with_nested_ids
from engine.write.stats import compute_stats

KEY_FIELD_ID_OFFSET = 1073741823  # Integer.MAX_VALUE / 2
SEQUENCE_FIELD_ID = 2147483646
VALUE_KIND_FIELD_ID = 2147483645
ROWS_PER_SLICE = 262_144  # rows per Parquet row group; also how often the rolling size is checked
MIN_ROWS_PER_SLICE = 4_096  # the finest check, for small target file sizes
# A column chunk whose dictionary outgrows this falls back to plain encoding. pyarrow's 1 MB default
# lets high-cardinality columns (keys, hashes, measures) build a dictionary they then throw away:
# measured on T8 rows, 128 KB halves the Parquet write time and gives smaller files, while
# low-cardinality columns (a few thousand short values) keep their dictionary.
DICTIONARY_PAGE_LIMIT = 128 * 1024


def slice_rows(table: pa.Table, target_size: int) -> int:
    """Rows per slice (row group) when rolling ``table`` into files of ``target_size``. The size is
    checked after each slice, so a target smaller than a full slice's bytes (in memory, more than
    on disk) takes smaller slices and the files come out near the target, not a slice apart."""
    if not table.num_rows or not table.nbytes:
        return ROWS_PER_SLICE
    return max(MIN_ROWS_PER_SLICE, min(ROWS_PER_SLICE, target_size * table.num_rows // table.nbytes))


def parquet_writer(sink: pa.NativeFile, schema: pa.Schema, options: CoreOptions) -> pq.ParquetWriter:
    """The Parquet writer every data file is written with (the table's codec and zstd level,
    statistics on, bounded dictionaries).

    Floating-point columns get no Parquet statistics: pyarrow leaves NaN out of min/max, and
    Parquet readers that skip row groups on them (Spark's, Java Paimon's) would then drop NaN rows
    that ``x > 1.0`` must return (NaN sorts above every number in Spark and Paimon). File skipping
    on such columns uses the manifest statistics, which mark a column holding NaN as unbounded.

    Decimals of precision up to 18 are stored as INT32/INT64, as Paimon's own writer stores them:
    Paimon 0.9's Java reader cannot read them as fixed-length binary (a dictionary-encoded
    FIXED_LEN_BYTE_ARRAY column fails in its vectorised reader).

    List elements and map keys/values get Paimon 2.0's field ids (``engine.write.nested_ids``):
    Iceberg readers of the table's Iceberg metadata find them by id.
    """
    return pq.ParquetWriter(
        sink, with_nested_ids(schema), compression=options.file_compression,
        compression_level=options.file_compression_level,
        write_statistics=_statistics_columns(schema), dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT,
        store_decimal_as_integer=True,
    )


def format_writer(sink: pa.NativeFile, schema: pa.Schema, options: CoreOptions, fmt: str | None = None
                  ) -> pq.ParquetWriter | OrcWriter | AvroWriter:
    """The writer of a new data file in ``fmt`` (default: the table's ``file.format``)."""
    fmt = fmt or options.file_format
    if fmt == "orc":
        return OrcWriter(sink, schema, options.file_compression)
    if fmt == "avro":
        return AvroWriter(sink, schema, options.to_dict(), options.file_compression)
    return parquet_writer(sink, schema, options)


def _statistics_columns(schema: pa.Schema) -> list[str]:
    """The top-level columns whose Parquet statistics are safe for every reader (not floating)."""
    return [f.name for f in schema if not _holds_floats(f.type)]


def _holds_floats(type_: pa.DataType) -> bool:
    if pa.types.is_floating(type_):
        return True
    if pa.types.is_struct(type_):
        return any(_holds_floats(type_.field(i).type) for i in range(type_.num_fields))
    if pa.types.is_map(type_):
        return _holds_floats(type_.key_type) or _holds_floats(type_.item_type)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _holds_floats(type_.value_type)
    return False


def _field_with_id(name: str, type_: pa.DataType, field_id: int, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})


def kv_arrow_schema(
    fields: Sequence[DataField], key_fields: Sequence[DataField], thin: bool = False
) -> pa.Schema:
    """Physical schema of a primary-key data file; ``thin`` (``data-file.thin-mode``, Paimon 1.0):
    without the ``_KEY_`` columns, the key being read from its value columns."""
    key_cols = []
    for k in () if thin else key_fields:
        af = to_arrow_field(k)
        key_cols.append(
            _field_with_id(KEY_PREFIX + k.name, af.type, KEY_FIELD_ID_OFFSET + k.id, k.type.nullable)
        )
    system = [
        _field_with_id(SEQUENCE_NUMBER, pa.int64(), SEQUENCE_FIELD_ID),
        _field_with_id(VALUE_KIND, pa.int8(), VALUE_KIND_FIELD_ID),
    ]
    return pa.schema(key_cols + system + [to_arrow_field(f) for f in fields])


def write_file_index(
    store: FileStore, partition_dir: str, bucket: int, data_file: str, rows: pa.Table,
    config: FileIndexConfig, external_path: str | None = None,
) -> tuple[bytes | None, tuple[str, ...]]:
    """Build the file indexes of one data file's ``rows``: (embedded blob, extra files).

    A blob over ``file-index.in-manifest-threshold`` is written next to the data file as
    ``<data file>.index`` (at its external path's directory, when it has one) and named in the
    extra files, as Paimon does; a smaller one is embedded.
    """
    blob = build_blob(rows, store.schema.fields, config)
    if blob is None:
        return None, ()
    if blob.embedded:
        return blob.data, ()
    name = FileIndexBlob.file_name(data_file)
    store.io.write_bytes(store.paths.extra_file(partition_dir, bucket, name, external_path), blob.data)
    return None, (name,)


class FileLocator:
    """Where the new data files of one (partition, bucket) writer go: the bucket directory, or the
    table's external paths (``data-file.external-paths``, ``engine.meta.external_paths``)."""

    def __init__(self, store: FileStore, partition_dir: str, bucket: int) -> None:
        self.store = store
        self.partition_dir = partition_dir
        self.bucket = bucket
        external = ExternalPaths.of(store.schema.options)
        self.provider = (external.provider(store.paths.relative_bucket_dir(partition_dir, bucket))
                         if external is not None else None)

    def new_file(self, name: str) -> tuple[str, str | None]:
        """(the path to write the new file ``name`` at, its ``_EXTERNAL_PATH`` or None); the
        directory exists afterwards."""
        paths = self.store.paths
        if self.provider is None:
            self.store.io.mkdirs(paths.bucket_dir(self.partition_dir, self.bucket))
            return paths.data_file(self.partition_dir, self.bucket, name), None
        external = self.provider.next(name)
        path = paths.external_file(external)  # refuses a root of another file system than the table's
        self.store.io.mkdirs(path.rsplit("/", 1)[0])
        return path, external


def local_now_millis() -> int:
    """Paimon's ``_CREATION_TIME``: local wall-clock time encoded as if it were UTC."""
    now = time.time()
    return int((now + time.localtime(now).tm_gmtoff) * 1000)


class DataFileWriter:
    """Writes data files of one (partition, bucket); each ``write`` call may roll several files."""

    def __init__(
        self,
        store: FileStore,
        partition_dir: str,
        bucket: int,
        *,
        namer: FileNamer | None = None,
        file_source: FileSource = FileSource.APPEND,
        level: int = 0,
        prefix: str | None = None,
    ) -> None:
        self.store = store
        self.partition_dir = partition_dir
        self.bucket = bucket
        self.namer = namer or FileNamer()
        self.file_source = file_source
        self.level = level
        opts = store.options
        self.prefix = prefix if prefix is not None else opts.data_file_prefix
        self.stats_mode = opts.metadata_stats_mode
        self.target_size = opts.target_file_size(store.has_primary_key)
        self.fields = list(store.schema.fields)
        self.key_fields = [store.schema.field(k) for k in store.schema.trimmed_primary_keys]
        # Data files (written and compacted) carry the table's file indexes; changelog files do not.
        self.file_index = file_index_config(opts.to_dict()) if self.prefix == opts.data_file_prefix \
            else FileIndexConfig()
        self.locator = FileLocator(store, partition_dir, bucket)

    def _index(self, name: str, rows: pa.Table, external: str | None) -> tuple[bytes | None, tuple[str, ...]]:
        if self.file_index.empty:
            return None, ()
        return write_file_index(
            self.store, self.partition_dir, self.bucket, name, rows, self.file_index, external)

    # -- append layout --------------------------------------------------------------------------
    def write_append(self, table: pa.Table, first_sequence: int) -> list[DataFileMeta]:
        """Write rows of an append table (columns = the table's, already cast to its Arrow schema;
        rows of a row-tracking table that keep their ids also carry ``_ROW_ID`` and
        ``_SEQUENCE_NUMBER``, written into the file as Paimon does: ``engine.row_tracking``)."""
        tracked = ROW_ID in table.column_names
        stats_fields = [*self.fields, *tracking_stats_fields()] if tracked else self.fields
        schema = pa.schema([to_arrow_field(f) for f in self.fields]
                           + (tracking_arrow_fields() if tracked else []))
        metas = []
        seq = first_sequence
        for chunk, name, size, external in self._roll(table, schema):
            n = chunk.num_rows
            embedded, extras = self._index(name, chunk, external)
            metas.append(
                DataFileMeta(
                    file_name=name,
                    file_size=size,
                    row_count=n,
                    min_key=EMPTY_ROW,
                    max_key=EMPTY_ROW,
                    key_stats=SimpleStats.EMPTY,
                    value_stats=compute_stats(chunk, stats_fields, self.stats_mode),
                    min_sequence_number=seq,
                    max_sequence_number=seq + n - 1,
                    schema_id=self.store.schema.id,
                    level=self.level,
                    extra_files=extras,
                    creation_time_millis=local_now_millis(),
                    delete_row_count=0,
                    embedded_file_index=embedded,
                    file_source=self.file_source,
                    value_stats_cols=None,
                    external_path=external,
                    first_row_id=None,
                    write_cols=None,
                )
            )
            if tracked:
                metas[-1] = tracked_file(metas[-1], [f.name for f in self.fields], chunk)
            seq += n
        return metas

    # -- key-value layout -----------------------------------------------------------------------
    def write_kv(self, table: pa.Table) -> list[DataFileMeta]:
        """Write sorted, key-unique kv rows: table columns + ``_SEQUENCE_NUMBER`` + ``_VALUE_KIND``."""
        from engine.write.kv_rolling import RollingKvWriter  # (it builds on this module)

        return RollingKvWriter(self).write_all([table])

    # -- rolling --------------------------------------------------------------------------------
    def _roll(self, table: pa.Table, schema: pa.Schema):
        """Write ``table`` into files of about ``target_size``; yields (rows, file name, size,
        external path) per file."""
        table = table.cast(schema)
        fs = self.store.io.arrow_fs()
        offset, total = 0, table.num_rows
        step = slice_rows(table, self.target_size)
        while offset < total:
            name = self.namer.data_file(self.prefix, self.store.options.file_format)
            path, external = self.locator.new_file(name)
            start = offset
            with fs.open_output_stream(arrow_path(path)) as sink:
                writer = format_writer(sink, schema, self.store.options)
                while offset < total:
                    piece = table.slice(offset, step)
                    writer.write_table(piece, row_group_size=step)
                    offset += piece.num_rows
                    if sink.tell() >= self.target_size:
                        break
                writer.close()
                size = sink.tell()
            yield table.slice(start, offset - start), name, size, external
