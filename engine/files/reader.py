"""Reading one data file as the *current* schema sees it.

A file is written with the schema named by its ``_SCHEMA_ID``. Columns are matched by field id
between that schema and the current one (Paimon's schema evolution): a renamed column is read
under its old physical name, a dropped column is skipped, an added column reads as NULL, and a
widened type is cast; nested ROW fields are matched by id too (:mod:`engine.files.evolve`). A
data-evolution file holding only some columns (``_WRITE_COLS``) reads the others as NULL; the
reader of its row-id group takes them from the files that hold them (:mod:`engine.read.data_evolution`).
System columns (``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) are passed through when asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from engine.arrow_types import to_arrow_type
from engine.errors import CorruptDataError, CorruptMetadataError
from engine.files.evolve import cast_leaf, conform_column
from engine.meta.file_formats import arrow_path, iter_tables, read_table  # noqa: F401 - arrow_path re-exported
from engine.meta.manifest import DataFileMeta
from engine.store import FileStore
from engine.types import DataField

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"
_SYSTEM_TYPES = {SEQUENCE_NUMBER: pa.int64(), VALUE_KIND: pa.int8()}


def _physical_columns(
    store: FileStore, file: DataFileMeta, fields: Sequence[DataField], system_columns: Sequence[str]
) -> tuple[list[DataField | None], list[str]]:
    """Each field as the file's own schema has it (None: not in the file), and the columns to read."""
    file_schema = store.schema_by_id(file.schema_id)
    # A data-evolution file (``_WRITE_COLS``) holds only those columns of its schema version.
    written = None if file.write_cols is None else set(file.write_cols)
    physical: list[DataField | None] = []
    for f in fields:
        try:
            p = file_schema.field_by_id(f.id)
        except LookupError:
            p = None
        physical.append(p if p is None or written is None or p.name in written else None)
    return physical, [p.name for p in physical if p is not None] + list(system_columns)


def _read_types(
    physical: Sequence[DataField | None], system_columns: Sequence[str]
) -> dict[str, pa.DataType]:
    """The Arrow type of each column to read, as the file's own schema has it (Avro files, whose
    types are coarser, are converted to these)."""
    types = {p.name: to_arrow_type(p.type) for p in physical if p is not None}
    types.update({s: _SYSTEM_TYPES[s] for s in system_columns if s in _SYSTEM_TYPES})
    return types


def _file_error(store: FileStore, file_path: str, e: Exception) -> Exception:
    """The typed error for a failed read: missing (metadata names a file that is gone) or corrupt."""
    if isinstance(e, FileNotFoundError):
        return CorruptMetadataError(f"data file {file_path} is listed by the snapshot but missing: {e}")
    # Ask the file system, not the message: Arrow's "magic bytes not found" means truncated.
    if not store.io.exists(file_path):
        return CorruptMetadataError(f"data file {file_path} is listed by the snapshot but missing")
    return CorruptDataError(f"data file {file_path} is corrupt (truncated, or not in its format): {e}")


def _conform(
    store: FileStore,
    file_path: str,
    table: pa.Table,
    fields: Sequence[DataField],
    physical: Sequence[DataField | None],
    system_columns: Sequence[str],
) -> pa.Table:
    """Rows read with the file's schema, as the current schema sees them (see the module docstring)."""
    n = table.num_rows
    arrays = []
    names = []
    for f, p in zip(fields, physical, strict=True):
        target = to_arrow_type(f.type)
        if p is None or p.name not in table.column_names:
            arrays.append(pa.nulls(n, target))
        else:
            column = table.column(p.name)
            try:
                arrays.append(conform_column(column, p.type, f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise CorruptDataError(
                    f"data file {file_path}: column '{p.name}' holds {column.type} values that do not "
                    f"convert to {target}, the type schema {store.schema.id} gives '{f.name}'; the schema "
                    f"or the file was altered: {e}"
                ) from e
        names.append(f.name)
    for s in system_columns:
        arrays.append(cast_leaf(table.column(s), _SYSTEM_TYPES.get(s, table.column(s).type)))
        names.append(s)
    return pa.Table.from_arrays(arrays, names=names)


def read_data_file(
    store: FileStore,
    file_path: str,
    file: DataFileMeta,
    fields: Sequence[DataField],
    system_columns: Sequence[str] = (),
) -> pa.Table:
    """Read ``fields`` (current schema) and ``system_columns`` of one data file.

    Raises CorruptMetadataError when the file is missing (a live file named by a snapshot must
    exist), and CorruptDataError when it exists but is truncated, not Parquet, or holds a column
    that does not convert to the schema's type.
    """
    physical, read_cols = _physical_columns(store, file, fields, system_columns)
    try:
        table = read_table(store.io.arrow_fs(), file_path, read_cols, _read_types(physical, system_columns))
    except (OSError, pa.ArrowInvalid) as e:
        raise _file_error(store, file_path, e) from e
    return _conform(store, file_path, table, fields, physical, system_columns)


def iter_data_file(
    store: FileStore,
    file_path: str,
    file: DataFileMeta,
    fields: Sequence[DataField],
    system_columns: Sequence[str] = (),
    *,
    batch_rows: int,
) -> Iterator[pa.Table]:
    """:func:`read_data_file` in batches of at most ``batch_rows`` rows, in file order.

    Only one batch (and the row group it comes from) is held at a time, which is what bounds a
    streaming merge's memory. An empty file yields nothing. Raises as :func:`read_data_file`.
    """
    physical, read_cols = _physical_columns(store, file, fields, system_columns)
    try:
        source = store.io.arrow_fs().open_input_file(arrow_path(file_path))
    except (OSError, pa.ArrowInvalid) as e:
        raise _file_error(store, file_path, e) from e
    with source:
        try:
            types = _read_types(physical, system_columns)
            for table in iter_tables(source, file_path, read_cols, batch_rows, types):
                yield _conform(store, file_path, table, fields, physical, system_columns)
        except (OSError, pa.ArrowInvalid) as e:
            raise _file_error(store, file_path, e) from e


def data_file_path(store: FileStore, partition_dir: str, bucket: int, file: DataFileMeta) -> str:
    """Where ``file`` of ``bucket`` in the partition directory lives (its external path, if any)."""
    return store.paths.data_file(partition_dir, bucket, file.file_name, file.external_path)
