"""Whether the rows a table already stores allow the type changes of a merge-schema write.

``engine.schema_merge`` decides from the types alone. Two kinds of change also depend on the
stored values, and are checked here against the live files of the latest snapshot before the
new schema is used (a write that fails the check publishes nothing):

* A primary-key or bucket-key column widened from one integer type to a wider one. A key is
  stored and hashed as BinaryRow bytes (a file's key range and key statistics, its bucket, the
  dynamic-bucket index), and the wider type gives a negative value other bytes
  (:func:`engine.type_widening.key_bytes_kept`). So the change is accepted only when no stored
  key is negative, read from the files' statistics: a negative key, or a file without
  statistics for the column, refuses it. (Paimon widens such a key without a check; its stored
  negative keys then hash to other buckets than the same keys written afterwards.)
* An explicit cast (``write.merge-schema.explicit-cast``: text to a date or a number, a narrower
  number, a shorter length, a lower precision). Old files are read through the cast, so every
  stored value of the column must convert: each live file's column is read and converted
  exactly as a read would (``engine.files.evolve``), and a value that does not convert, or
  does not fit the new length, refuses the change naming the file. This reads the column once;
  such a change is rare and asked for explicitly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import SchemaMergeError
from engine.files.evolve import conform_column
from engine.files.reader import data_file_path, read_data_file
from engine.meta.manifest import DataFileMeta
from engine.scan.file_stats import key_stats_by_name, value_stats_by_name
from engine.scan.planner import DataSplit, TableScan
from engine.schema import TableSchema
from engine.store import FileStore
from engine.type_widening import ALWAYS, castable, key_bytes_kept
from engine.types import MAX_LENGTH, DataField, DataType, TypeRoot, type_to_sql


def check_stored_rows(store: FileStore, old: TableSchema, new: TableSchema) -> None:
    """Refuse the change from ``old`` (the latest schema) to ``new`` when a stored row forbids it.

    Raises:
        SchemaMergeError: a stored key would change its bytes, or a stored value does not convert.
    """
    changed = [(o, f) for f in new.fields for o in [_by_id(old, f.id)]
               if o is not None and o.type.copy(True) != f.type.copy(True)]
    if not changed:
        return
    hashed = {*old.primary_keys, *old.core_options.bucket_keys}
    keys = [(o, f) for o, f in changed if o.name in hashed and key_bytes_kept(o.type, f.type) != ALWAYS]
    casts = [(o, f) for o, f in changed if _needs_values(o.type, f.type)]
    if not keys and not casts:
        return
    splits = TableScan(store).plan().splits
    for o, f in keys:
        _check_no_negative_key(store, old, splits, o, f)
    for o, f in casts:
        _check_values_convert(store, splits, o, f)


def _by_id(schema: TableSchema, field_id: int) -> DataField | None:
    try:
        return schema.field_by_id(field_id)
    except LookupError:
        return None


def _needs_values(old: DataType, new: DataType) -> bool:
    """Whether some leaf of ``old`` (matched by field id) changes by an explicit cast."""
    if old.root is TypeRoot.ROW and new.root is TypeRoot.ROW:
        by_id = {f.id: f for f in old.fields}
        return any(f.id in by_id and _needs_values(by_id[f.id].type, f.type) for f in new.fields)
    if old.element is not None and new.element is not None:
        return _needs_values(old.element, new.element)
    if old.key is not None and new.key is not None and old.value is not None and new.value is not None:
        return _needs_values(old.key, new.key) or _needs_values(old.value, new.value)
    return old.copy(True) != new.copy(True) and not castable(old.copy(True), new.copy(True))


def _files(splits: Sequence[DataSplit]) -> Iterator[tuple[DataSplit, DataFileMeta]]:
    for s in splits:
        for f in s.files:
            yield s, f


def _check_no_negative_key(
    store: FileStore, old: TableSchema, splits: Sequence[DataSplit], o: DataField, f: DataField
) -> None:
    primary = o.name in old.primary_keys
    for _, file in _files(splits):
        file_schema = store.schema_by_id(file.schema_id)
        by_name = (key_stats_by_name if primary else value_stats_by_name)(file, file_schema, old)
        stats = by_name.get(o.name)
        if stats is not None and stats.null_count == file.row_count:
            continue  # only NULLs (a bucket key may be nullable)
        low = stats.min if stats is not None else None
        if low is None or low < 0:
            found = "no statistics for it" if low is None else f"the key {low}"
            raise SchemaMergeError(
                f"cannot change key column '{o.name}' from {type_to_sql(o.type)} to "
                f"{type_to_sql(f.type)} on write: data file {file.file_name} holds {found}, and a "
                "negative key has other bytes in the wider type, so it would no longer match its "
                "bucket and key range (keys >= 0 keep theirs)"
            )


def _check_values_convert(store: FileStore, splits: Sequence[DataSplit], o: DataField, f: DataField) -> None:
    for split, file in _files(splits):
        path = data_file_path(store, store.partition_dir(split.partition_values), split.bucket, file)
        column = read_data_file(store, path, file, [o]).column(0)
        try:
            converted = conform_column(column, o.type, f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaMergeError(
                f"cannot cast column '{o.name}' from {type_to_sql(o.type)} to {type_to_sql(f.type)} on "
                f"write: data file {file.file_name} holds a value that does not convert ({e}); stored "
                "rows are read through the new type, so every one must convert"
            ) from None
        _check_length(converted, f, file)


def _check_length(column: pa.ChunkedArray | pa.Array, f: DataField, file: DataFileMeta) -> None:
    """A top-level text or binary value must fit a shorter length (nested ones are not limited)."""
    t = f.type
    if not (t.is_string or t.is_binary) or t.length in (None, MAX_LENGTH) or len(column) == 0:
        return
    lengths = pc.utf8_length(column) if t.is_string else pc.binary_length(column)
    longest = pc.max(lengths).as_py()
    if longest is not None and longest > t.length:
        raise SchemaMergeError(
            f"cannot cast column '{f.name}' to {type_to_sql(t)} on write: data file {file.file_name} "
            f"holds a value of length {longest}"
        )
