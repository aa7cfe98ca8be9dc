"""One data-evolution group read as whole rows: each column from the newest file that holds it.

A data-evolution table (``data-evolution.enabled``, Paimon 1.3) rewrites columns without
rewriting rows: an update by row id writes a file holding only the changed columns
(``_WRITE_COLS``) for the same row-id range as the file it updates, and a column added later can
be backfilled the same way. The files of one range form a group (:mod:`engine.meta.row_ranges`,
newest first); this module reads a group as Paimon 2.0's ``DataEvolutionSplitRead`` and pypaimon
2.1's ``DataEvolutionSplitRead`` do:

* every requested column (matched by field id) is taken from the first file of the group, newest
  first, whose columns include it: a file with ``_WRITE_COLS`` holds those columns (named as its
  own schema version names them), a file without holds every column of its schema version;
* a column no file holds reads as NULL (a column added and never written);
* all files of a group hold the same rows in the same order (their row ids), so the columns are
  put side by side, whole Arrow columns, no row is matched in Python;
* the group's deletion vector (its anchor's, the oldest file's) is applied by the caller to the
  assembled rows: its positions count the group's rows.

A group of one file is not assembled: the plain file reader reads it (a ``_WRITE_COLS`` file
alone reads its other columns as NULL, :mod:`engine.files.reader`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from engine.arrow_types import to_arrow_type
from engine.errors import CorruptMetadataError
from engine.files.reader import data_file_path, read_data_file
from engine.meta.manifest import DataFileMeta
from engine.store import FileStore
from engine.types import DataField


def file_field_ids(store: FileStore, file: DataFileMeta) -> set[int]:
    """The field ids whose values ``file`` holds: its schema version's fields, narrowed to its
    ``_WRITE_COLS`` when it has them."""
    schema = store.schema_by_id(file.schema_id)
    if file.write_cols is None:
        return {f.id for f in schema.fields}
    names = set(file.write_cols)
    return {f.id for f in schema.fields if f.name in names}


def assign_columns(
    store: FileStore, group: Sequence[DataFileMeta], fields: Sequence[DataField]
) -> list[tuple[DataFileMeta, list[DataField]]]:
    """For each file of ``group`` (newest first), the requested fields it is the newest holder
    of; files holding none are left out."""
    left = list(fields)
    out = []
    for f in group:
        if not left:
            break
        held = file_field_ids(store, f)
        mine = [fd for fd in left if fd.id in held]
        if mine:
            out.append((f, mine))
            left = [fd for fd in left if fd.id not in held]
    return out


def read_group(
    store: FileStore,
    partition_dir: str,
    bucket: int,
    group: Sequence[DataFileMeta],
    fields: Sequence[DataField],
) -> pa.Table:
    """The rows of one group (files newest first, all spanning one row-id range) with ``fields``
    (current schema), in row-id order, before any deletion vector.

    Raises:
        CorruptMetadataError: the group's files do not hold the same number of rows.
        CorruptDataError: a file is unreadable (as :func:`engine.files.reader.read_data_file`).
    """
    rows = group[0].row_count
    if any(f.row_count != rows for f in group):
        raise CorruptMetadataError(
            f"data files {[f.file_name for f in group]} of a data-evolution table share a row-id range "
            f"but hold {[f.row_count for f in group]} rows; Paimon cannot read them either"
        )
    columns: dict[int, pa.ChunkedArray] = {}
    for f, mine in assign_columns(store, group, fields):
        path = data_file_path(store, partition_dir, bucket, f)
        part = read_data_file(store, path, f, mine)
        if part.num_rows != rows:
            raise CorruptMetadataError(
                f"data file {path} holds {part.num_rows} rows, its metadata says {rows}"
            )
        for fd in mine:
            columns[fd.id] = part.column(fd.name)
    def column(fd: DataField) -> pa.ChunkedArray:
        found = columns.get(fd.id)
        return pa.chunked_array([pa.nulls(rows, to_arrow_type(fd.type))]) if found is None else found

    arrays = [column(fd) for fd in fields]
    if not fields:
        # No column asked for (a count): the rows still count.
        return pa.table({"_": pa.nulls(rows)}).drop_columns(["_"])
    return pa.Table.from_arrays(arrays, names=[fd.name for fd in fields])


__all__ = ["assign_columns", "file_field_ids", "read_group"]
