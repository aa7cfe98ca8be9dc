"""Making user-supplied Arrow data fit a table's schema before it is written.

Columns are matched by name (any order); a missing nullable column becomes NULL, an extra column
or a missing NOT NULL column is an error; values are cast to the column's Arrow type (safe casts
only: an overflow or a lossy cast is an error naming the column), NULLs of a column with a default
value become that value (Paimon's ``TableWriteImpl``), NULL variants get non-NULL children
(:mod:`engine.write.variant_input`), and NOT NULL columns are checked for nulls.
Record batches, tables and anything with ``__arrow_c_stream__`` are accepted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from engine.arrow_types import to_arrow_type
from engine.default_values import check_default_value
from engine.errors import InvalidArgumentError
from engine.options import WRITE_MERGE_SCHEMA, CoreOptions
from engine.schema import TableSchema
from engine.types import DataType, TypeRoot, type_to_sql
from engine.write.variant_input import fill_variant_children


def as_table(data: object) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if isinstance(data, list) and all(isinstance(b, pa.RecordBatch) for b in data):
        return pa.Table.from_batches(data) if data else pa.table({})
    try:
        return pa.table(data)
    except Exception as e:  # noqa: BLE001
        raise InvalidArgumentError(
            f"cannot write data of type {type(data).__name__}: expected Arrow data"
        ) from e


def conform(
    data: object, schema: TableSchema, extra_columns: Sequence[tuple[str, pa.DataType]] = ()
) -> pa.Table:
    """Return ``data`` as a table with exactly the schema's columns (plus ``extra_columns``)."""
    table = as_table(data)
    names = list(table.column_names)
    extra = {n for n, _ in extra_columns}
    source = _match_columns(names, [f.name for f in schema.fields], extra)
    fill_nested = bool(CoreOptions(schema.options).get(WRITE_MERGE_SCHEMA))
    n = table.num_rows
    arrays, fields = [], []
    for f in schema.fields:
        target = to_arrow_type(f.type)
        if f.name in source:
            col = table.column(source[f.name])
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            col = _align_nested(col, target, f.name, fill_nested)
            col = fill_variant_children(col, f.type, f.name)
            if not col.type.equals(target):
                try:
                    col = _cast(col, target)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    if f.type.root is TypeRoot.TIME and "would lose data" in str(e):
                        raise InvalidArgumentError(
                            f"column '{f.name}' is {type_to_sql(f.type)}, which Paimon stores in "
                            "milliseconds, but a value has a finer fraction of a second: truncate it"
                        ) from None
                    raise InvalidArgumentError(
                        f"column '{f.name}': cannot convert {col.type} to {target}: {e}"
                    ) from None
        elif f.type.nullable:
            col = pa.chunked_array([pa.nulls(n, target)])
        else:
            raise InvalidArgumentError(f"column '{f.name}' is NOT NULL but the data has no such column")
        if f.default_value is not None and col.null_count:
            col = _with_default(col, f.type, f.default_value, f.name)
        if f.type.root is TypeRoot.TIME and (f.type.precision or 0) < 3:
            _check_time_precision(col, f.name, f.type.precision or 0)
        if not f.type.nullable and col.null_count:
            raise InvalidArgumentError(f"column '{f.name}' is NOT NULL but {col.null_count} row(s) are NULL")
        arrays.append(col)
        fields.append(pa.field(f.name, target, nullable=f.type.nullable))
    for name, type_ in extra_columns:
        if name in names:
            arrays.append(table.column(name).cast(type_))
            fields.append(pa.field(name, type_))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _with_default(col: pa.ChunkedArray, t: DataType, text: str, name: str) -> pa.ChunkedArray:
    """``col`` with its NULLs replaced by the column's default value (Paimon's writers do this)."""
    try:
        value = check_default_value(t, text)
    except InvalidArgumentError:
        # A default another writer stored that dyntable cannot read (e.g. a MAP literal): refused
        # rather than written as NULL, which Paimon would have replaced.
        raise InvalidArgumentError(
            f"column '{name}' has the default value `{text}`, which dyntable cannot apply to "
            f"{t.root.value}; write the column's values explicitly (no NULLs)"
        ) from None
    return pc.fill_null(col, pa.scalar(value, col.type))


def _match_columns(names: Sequence[str], columns: Sequence[str], extra: set[str]) -> dict[str, str]:
    """Table column -> data column: the same name, else the one name equal ignoring case (Spark's
    default resolution; table names are unique ignoring case). Unknown data columns are refused."""
    exact = set(names)
    by_lower: dict[str, list[str]] = {}
    for name in names:
        by_lower.setdefault(name.lower(), []).append(name)
    out: dict[str, str] = {}
    for c in columns:
        if c in exact:
            out[c] = c
            continue
        found = [m for m in by_lower.get(c.lower(), []) if m not in columns]
        if len(found) > 1:
            raise InvalidArgumentError(f"column '{c}' matches several data columns ignoring case: {found}")
        if found:
            out[c] = found[0]
    used = set(out.values()) | extra
    unknown = [n for n in names if n not in used]
    if unknown:
        raise InvalidArgumentError(
            f"column(s) {unknown} are not in the table; its columns are {list(columns)} (write with "
            "'write.merge-schema' = 'true' to add them)"
        )
    return out


def _align_nested(
    col: pa.ChunkedArray, target: pa.DataType, path: str, fill_missing: bool
) -> pa.ChunkedArray:
    """``col`` with its struct fields (also inside lists and maps) named as the table names them, so
    the cast that follows matches them by name; a data field the table lacks is refused (it would be
    lost), and so is a table field the data lacks unless ``fill_missing`` (write.merge-schema: it
    reads as NULL), as in Paimon's byName writes."""
    renamed = _renamed_type(col.type, target, path, fill_missing)
    if renamed.equals(col.type):
        return col
    return pa.chunked_array([c.view(renamed) for c in col.chunks], renamed)


def _renamed_type(t: pa.DataType, target: pa.DataType, path: str, fill_missing: bool) -> pa.DataType:
    if pa.types.is_struct(t) and pa.types.is_struct(target):
        target_names = [target.field(i).name for i in range(target.num_fields)]
        children, matched = [], set()
        for i in range(t.num_fields):
            child = t.field(i)
            name = child.name if child.name in target_names else next(
                (n for n in target_names if n.lower() == child.name.lower()), None)
            if name is None:
                raise InvalidArgumentError(
                    f"field '{path}.{child.name}' of the data is not in the table's {target} (write with "
                    "'write.merge-schema' = 'true' to add it)"
                )
            matched.add(name)
            sub = _renamed_type(child.type, target.field(name).type, f"{path}.{name}", fill_missing)
            children.append(pa.field(name, sub, child.nullable, child.metadata))
        missing = [n for n in target_names if n not in matched]
        if missing and (not fill_missing or any(not target.field(n).nullable for n in missing)):
            raise InvalidArgumentError(
                f"field(s) {[f'{path}.{n}' for n in missing]} of the table are missing from the data (write "
                "with 'write.merge-schema' = 'true' to write them as NULL)"
            )
        return pa.struct(children)
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_list(target):
        vf = t.value_field
        sub = _renamed_type(vf.type, target.value_type, f"{path}.element", fill_missing)
        value = pa.field(vf.name, sub, vf.nullable, vf.metadata)
        return pa.list_(value) if pa.types.is_list(t) else pa.large_list(value)
    if pa.types.is_map(t) and pa.types.is_map(target):
        item = t.item_field
        sub = _renamed_type(item.type, target.item_type, f"{path}.value", fill_missing)
        return pa.map_(t.key_field, pa.field(item.name, sub, item.nullable, item.metadata), t.keys_sorted)
    return t


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """A safe cast, plus what Arrow's cast lacks: time-of-day strings (how Spark, which has no
    TIME type, hands a TIME column over) to TIME, through a timestamp on the epoch day."""
    if pa.types.is_time(target) and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        on_epoch_day = pc.binary_join_element_wise("1970-01-01T", col.cast(pa.string()), "")
        return on_epoch_day.cast(pa.timestamp("ns")).cast(pa.time64("ns")).cast(target, safe=True)
    return col.cast(target, safe=True)


def _check_time_precision(col: pa.ChunkedArray, name: str, precision: int) -> None:
    """TIME(0..2) is stored in milliseconds (Paimon's layout): refuse a finer fraction instead of
    storing a value the column's type cannot hold."""
    unit = 10 ** (3 - precision)
    millis = col.cast(pa.int32())
    if pc.any(pc.not_equal(pc.multiply(pc.divide(millis, unit), unit), millis)).as_py():
        raise InvalidArgumentError(
            f"column '{name}' is TIME({precision}) but a value has a finer fraction of a second"
        )


def coerce_value(schema: TableSchema, column: str, value: object) -> object:
    """A literal (often a string from SQL) converted to the Python value of a column's type."""
    if value is None:
        return None
    target = to_arrow_type(schema.field(column).type)
    try:
        return pa.array([value]).cast(target)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(
            f"value {value!r} does not fit column '{column}' of type {target}: {e}"
        ) from None


def coerce_spec(schema: TableSchema, spec: Mapping[str, object]) -> dict[str, object]:
    """A partition spec with each value converted to its column's type."""
    return {k: coerce_value(schema, k, v) for k, v in spec.items()}
