"""One column of a data file converted to the type the current schema gives it.

A column keeps its field id for life, and so does every nested ROW field: a file written before
``ALTER TABLE t RENAME COLUMN v.f1 TO f10`` holds ``v.f1``, which the current schema calls
``v.f10``. So nested values are matched by field id, never by name (a name may since have been
dropped and given to a new field): a ROW is rebuilt field by field from the file's field of the
same id, a field added later reads as NULL, a dropped one is left out, and ARRAY elements and
MAP values are converted the same way inside. Leaves are cast (a widened type), as top-level
columns are. A VARIANT (``value`` and ``metadata`` binaries) is taken by child name, in any order;
a shredded variant (a ``typed_value`` child, written by engines that shred) is refused as an
unsupported feature: dropping ``typed_value`` would lose the shredded part of each value. All of
it is vectorised over whole Arrow arrays.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from engine.arrow_types import to_arrow_type
from engine.errors import UnsupportedTableError
from engine.types import DataType, TypeRoot


def cast_leaf(column: pa.ChunkedArray | pa.Array, target: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """``column`` cast to ``target`` (dictionary-encoded columns are decoded first)."""
    if column.type.equals(target):
        return column
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_floating(target) and not pa.types.is_floating(column.type):
        # A number retyped to FLOAT/DOUBLE (Paimon's implicit cast) rounds to the nearest float,
        # as Java's conversion does; Arrow's safe cast would refuse an inexact value instead.
        return column.cast(target, safe=False)
    if pa.types.is_time(target) and pa.types.is_time(column.type):
        # Files dyntable wrote before it kept every TIME in milliseconds, as Paimon does, hold
        # TIME(4..9) in microseconds: read them at the column's storage precision.
        return column.cast(target, safe=False)
    return column.cast(target)


def conform_column(
    column: pa.ChunkedArray | pa.Array, old: DataType, new: DataType
) -> pa.ChunkedArray | pa.Array:
    """``column`` (written as ``old``) as the current type ``new`` (see the module docstring).

    Raises what Arrow raises for a leaf that does not cast (the caller names the file).
    """
    target = to_arrow_type(new)
    if _layout(old) == _layout(new) and (column.type.equals(target) or not _holds_variant(new)):
        return cast_leaf(column, target)  # the same nested fields: at most leaf types differ
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([_by_id(c, old, new) for c in column.chunks], type=target)
    return _by_id(column, old, new)


def _layout(t: DataType) -> object:
    """The nested fields of ``t`` (ids and names, in order), through arrays and maps."""
    if t.root is TypeRoot.ROW:
        return tuple((f.id, f.name, _layout(f.type)) for f in t.fields)
    if t.element is not None:
        return ("element", _layout(t.element))
    if t.key is not None and t.value is not None:
        return ("map", _layout(t.key), _layout(t.value))
    return None


def _holds_variant(t: DataType) -> bool:
    if t.root is TypeRoot.VARIANT:
        return True
    members = [f.type for f in t.fields] + [m for m in (t.element, t.key, t.value) if m is not None]
    return any(_holds_variant(m) for m in members)


def _variant(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """A stored variant group as dyntable's ``value``/``metadata`` struct, children taken by name."""
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    if "typed_value" in names:
        raise UnsupportedTableError(
            "this data file holds a shredded VARIANT (a 'typed_value' column, variant shredding of "
            "Paimon 1.1+ / Parquet), which dyntable does not read; read it with Paimon, or rewrite "
            "the table without 'variant.shreddingSchema'")
    if sorted(names) != ["metadata", "value"]:
        raise pa.ArrowInvalid(f"a VARIANT group needs the binaries 'value' and 'metadata', found {names}")
    children = [cast_leaf(arr.field(names.index(f.name)), f.type) for f in target]
    return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(arr))


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _entries(arr: pa.Array, child: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Offsets from 0 and the part of ``child`` (a list's values, a map's keys or items) that
    ``arr``'s entries use: Arrow builds a list with a null mask only from unsliced offsets."""
    offsets = arr.offsets
    start = offsets[0].as_py()
    used = child.slice(start, offsets[-1].as_py() - start)
    return (pc.subtract(offsets, pa.scalar(start, offsets.type)) if start else offsets), used


def _by_id(arr: pa.Array, old: DataType, new: DataType) -> pa.Array:
    target = to_arrow_type(new)
    if new.root is TypeRoot.VARIANT and old.root is TypeRoot.VARIANT:
        return _variant(arr, target)
    if new.root is TypeRoot.ROW and old.root is TypeRoot.ROW:
        where = {f.id: i for i, f in enumerate(old.fields)}
        children = []
        for f in new.fields:
            i = where.get(f.id)
            if i is None:  # added after the file was written
                children.append(pa.nulls(len(arr), to_arrow_type(f.type)))
            else:  # StructArray.field: the child under this array's offset and length
                children.append(_by_id(arr.field(i), old.fields[i].type, f.type))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(arr))
    if new.root is TypeRoot.ARRAY and old.root is TypeRoot.ARRAY:
        assert old.element is not None and new.element is not None
        offsets, values = _entries(arr, arr.values)
        values = _by_id(values, old.element, new.element)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=_mask(arr))
    if new.root is TypeRoot.MAP and old.root is TypeRoot.MAP:
        assert old.key is not None and new.key is not None and old.value is not None and new.value is not None
        offsets, keys = _entries(arr, arr.keys)
        items = _entries(arr, arr.items)[1]
        keys, items = _by_id(keys, old.key, new.key), _by_id(items, old.value, new.value)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=_mask(arr))
    if new.root is TypeRoot.MULTISET and old.root is TypeRoot.MULTISET:  # MAP<element, INT>
        assert old.element is not None and new.element is not None
        offsets, keys = _entries(arr, arr.keys)
        items = _entries(arr, arr.items)[1]
        keys = _by_id(keys, old.element, new.element)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=_mask(arr))
    return cast_leaf(arr, target)
