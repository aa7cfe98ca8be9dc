"""Row tracking's ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` and Paimon's other metadata columns.

One job: the names, types and values of the columns a read may ask for beyond the table's own,
as Paimon 2.0's Spark connector offers them (``PaimonMetadataColumn``; readers and writers share
this module, and so do data-evolution tables, whose files are merged by row-id range):

* ``_ROW_ID`` BIGINT and ``_SEQUENCE_NUMBER`` BIGINT, on tables with ``row-tracking.enabled``.
  A row's id is the value its file holds physically (files rewritten by compaction, DELETE,
  UPDATE and MERGE carry the column, listed in ``_WRITE_COLS``), else the file's ``_FIRST_ROW_ID``
  plus the row's position in the file — counted before deletion vectors, so a deleted row's id
  is never reused. A row's sequence number is the physical value, else the file's
  ``_MAX_SEQUENCE_NUMBER`` (for an appended file, the snapshot that committed it). Paimon's
  ``DataFileRecordReader`` / ``ColumnarRowIterator.assignRowTracking`` fill exactly this way.
* ``__paimon_file_path`` STRING (the data file's full path), ``__paimon_row_index`` BIGINT (the
  row's position in its file), ``__paimon_partition`` (a ROW of the partition columns) and
  ``__paimon_bucket`` INT, on every table.

None of them is part of ``SELECT *``: a read names them. Field ids are Paimon's
(``SpecialFields``: ``_ROW_ID`` is ``Integer.MAX_VALUE - 5``, ``_SEQUENCE_NUMBER``
``Integer.MAX_VALUE - 1``), which is also how the physical columns are written into Parquet.
Everything here is vectorised: a file's columns are built from one ``arange`` and a fill.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.arrow_types import to_arrow_field, to_arrow_type
from engine.meta.manifest import DataFileMeta
from engine.schema import TableSchema
from engine.types import BIGINT, INT, ROW, STRING, DataField

_INT_MAX = 2**31 - 1
ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
ROW_ID_FIELD = DataField(_INT_MAX - 5, ROW_ID, BIGINT(nullable=False))
SEQUENCE_NUMBER_FIELD = DataField(_INT_MAX - 1, SEQUENCE_NUMBER, BIGINT(nullable=False))
TRACKING_COLUMNS: tuple[str, ...] = (ROW_ID, SEQUENCE_NUMBER)

FILE_PATH = "__paimon_file_path"
ROW_INDEX = "__paimon_row_index"
PARTITION = "__paimon_partition"
BUCKET = "__paimon_bucket"
#: Columns that need a file's own rows (no merge between files): Paimon refuses them elsewhere.
FILE_COLUMNS: tuple[str, ...] = (FILE_PATH, ROW_INDEX)


def enabled(schema: TableSchema) -> bool:
    """Whether the table tracks row ids (``row-tracking.enabled``)."""
    return str(schema.options.get("row-tracking.enabled", "false")).strip().lower() == "true"


def metadata_fields(schema: TableSchema) -> list[DataField]:
    """The metadata columns a read of ``schema``'s table may name, in Paimon's order (ids are
    Paimon's Spark metadata-column ids; the row-tracking pair only with row tracking)."""
    tracking = (ROW_ID_FIELD, SEQUENCE_NUMBER_FIELD) if enabled(schema) else ()
    out = [DataField(f.id, f.name, BIGINT()) for f in tracking]
    partition = ROW([schema.field(k) for k in schema.partition_keys])
    out += [
        DataField(_INT_MAX - 101, FILE_PATH, STRING()),
        DataField(_INT_MAX - 100, ROW_INDEX, BIGINT()),
        DataField(_INT_MAX - 102, PARTITION, partition),
        DataField(_INT_MAX - 103, BUCKET, INT()),
    ]
    return out


def metadata_names(schema: TableSchema) -> list[str]:
    """The names of :func:`metadata_fields` that are not the table's own columns (a table's own
    column of that name wins, as in Spark)."""
    own = {n.lower() for n in schema.field_names}
    return [f.name for f in metadata_fields(schema) if f.name.lower() not in own]


def split_columns(schema: TableSchema, columns: Sequence[str]) -> tuple[list[str], list[DataField]]:
    """``columns`` split into the table's own and the metadata fields among them."""
    meta = {f.name: f for f in metadata_fields(schema) if f.name in set(metadata_names(schema))}
    own = [c for c in columns if c not in meta]
    return own, [meta[c] for c in columns if c in meta]


def has_physical_row_tracking(file: DataFileMeta) -> bool:
    """Whether ``file`` holds ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` itself (a rewritten file)."""
    return file.write_cols is not None and ROW_ID in file.write_cols


def row_id_column(
    file: DataFileMeta, num_rows: int, physical: pa.ChunkedArray | pa.Array | None = None
) -> pa.Array:
    """The ``_ROW_ID`` of the ``num_rows`` rows of ``file`` (all of them, in file order)."""
    computed: pa.Array | None = None
    if file.first_row_id is not None:
        computed = pa.array(np.arange(file.first_row_id, file.first_row_id + num_rows, dtype=np.int64))
    if physical is None:
        return computed if computed is not None else pa.nulls(num_rows, pa.int64())
    physical = _combined(physical).cast(pa.int64())
    return physical if computed is None else pc.fill_null(physical, computed)


def sequence_number_column(
    file: DataFileMeta, num_rows: int, physical: pa.ChunkedArray | pa.Array | None = None
) -> pa.Array:
    """The ``_SEQUENCE_NUMBER`` of the rows of ``file``: physical, else the file's maximum."""
    fill = pa.scalar(file.max_sequence_number, pa.int64())
    if physical is None:
        return pa.array(np.full(num_rows, file.max_sequence_number, dtype=np.int64))
    return pc.fill_null(_combined(physical).cast(pa.int64()), fill)


def file_metadata(
    fields: Sequence[DataField],
    file: DataFileMeta,
    path: str,
    num_rows: int,
    partition_values: Sequence[object],
    bucket: int,
    physical: pa.Table | None = None,
) -> list[pa.Array]:
    """The values of the metadata ``fields`` for every row of one file, in file order.
    ``physical`` holds the file's own ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` columns, when it has them."""
    out: list[pa.Array] = []
    for f in fields:
        if f.name == ROW_ID:
            out.append(row_id_column(file, num_rows, _physical(physical, ROW_ID)))
        elif f.name == SEQUENCE_NUMBER:
            out.append(sequence_number_column(file, num_rows, _physical(physical, SEQUENCE_NUMBER)))
        elif f.name == FILE_PATH:
            out.append(pa.repeat(pa.scalar(path, pa.string()), num_rows))
        elif f.name == ROW_INDEX:
            out.append(pa.array(np.arange(num_rows, dtype=np.int64)))
        else:
            out.append(split_metadata(f, num_rows, partition_values, bucket))
    return out


def split_metadata(
    field: DataField, num_rows: int, partition_values: Sequence[object], bucket: int
) -> pa.Array:
    """``__paimon_partition`` / ``__paimon_bucket`` of ``num_rows`` rows of one split."""
    if field.name == BUCKET:
        return pa.array(np.full(num_rows, bucket, dtype=np.int32))
    struct = to_arrow_type(field.type)
    if struct.num_fields == 0:
        return pa.nulls(num_rows, struct)
    one = pa.array([dict(zip([struct.field(i).name for i in range(struct.num_fields)], partition_values,
                             strict=True))], struct)
    return pc.take(one, pa.array(np.zeros(num_rows, dtype=np.int64)))


def tracking_arrow_fields() -> list[pa.Field]:
    """``_ROW_ID`` and ``_SEQUENCE_NUMBER`` as a rewritten file stores them (Paimon's field ids;
    nullable in Parquet: an updated row's sequence number is NULL until its commit's snapshot)."""
    return [to_arrow_field(DataField(f.id, f.name, BIGINT())) for f in (ROW_ID_FIELD, SEQUENCE_NUMBER_FIELD)]


def tracking_stats_fields() -> list[DataField]:
    """The fields a rewritten file's value statistics cover after the table's own (as Paimon's
    writer collects them over its whole write type)."""
    return [DataField(f.id, f.name, BIGINT()) for f in (ROW_ID_FIELD, SEQUENCE_NUMBER_FIELD)]


def tracked_file(meta: DataFileMeta, field_names: Sequence[str], rows: pa.Table) -> DataFileMeta:
    """The metadata of a file written with its rows' own ``_ROW_ID`` / ``_SEQUENCE_NUMBER``
    (``rows``: the file's rows, those two columns among them), by Paimon's rules for such files
    (``RowDataFileSequenceNumberTracker``, ``RowTrackingCommitUtils``):

    * ``_WRITE_COLS`` lists the table's columns and the two, so the commit gives the file no new
      ids and readers take each row's own;
    * the sequence range is the rows' (minimum 0 when every row's is NULL, maximum 0 when some
      row's is: the commit then puts its snapshot id there, the NULL rows' sequence number);
    * ``_FIRST_ROW_ID`` is set when the ids are exactly ``first .. first + n - 1``, which is what a
      reader that ignores the physical column (pypaimon 2.1) needs to read the same ids; Java
      Paimon reads the physical column either way.
    """
    ids = _combined(rows.column(ROW_ID)).cast(pa.int64())
    seqs = _combined(rows.column(SEQUENCE_NUMBER)).cast(pa.int64())
    n = rows.num_rows
    present = pc.drop_null(seqs)
    lo = int(pc.min(present).as_py()) if len(present) else 0
    hi = 0 if seqs.null_count or not len(present) else int(pc.max(present).as_py())
    first = None
    if n and ids.null_count == 0:
        values = ids.to_numpy(zero_copy_only=False)
        if np.array_equal(values, np.arange(values[0], values[0] + n, dtype=np.int64)):
            first = int(values[0])
    return dataclasses.replace(meta, min_sequence_number=lo, max_sequence_number=hi, first_row_id=first,
                               write_cols=(*field_names, ROW_ID, SEQUENCE_NUMBER), value_stats_cols=None)


def _physical(table: pa.Table | None, name: str) -> pa.ChunkedArray | None:
    return table.column(name) if table is not None and name in table.column_names else None


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


__all__ = [
    "BUCKET",
    "FILE_COLUMNS",
    "FILE_PATH",
    "PARTITION",
    "ROW_ID",
    "ROW_ID_FIELD",
    "ROW_INDEX",
    "SEQUENCE_NUMBER",
    "SEQUENCE_NUMBER_FIELD",
    "TRACKING_COLUMNS",
    "enabled",
    "file_metadata",
    "has_physical_row_tracking",
    "metadata_fields",
    "metadata_names",
    "row_id_column",
    "sequence_number_column",
    "split_columns",
    "split_metadata",
    "tracked_file",
    "tracking_arrow_fields",
    "tracking_stats_fields",
]
