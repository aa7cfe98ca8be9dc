"""Field ids of list elements and map keys/values in the Parquet files dyntable writes.

One job: the ids Paimon 2.0's Parquet writer gives the members of ARRAY, MAP and MULTISET
columns (its ``SpecialFields``), added to a writer's Arrow schema, and the check of a file's
schema for them (which the Iceberg metadata needs: ``engine.iceberg``).

Paimon derives them from the id of the column (or ROW field) holding the collection and the
nesting depth below it (1 for the collection's own members, 2 for the members of a collection
inside it, ...), around the base ``Integer.MAX_VALUE / 4`` with a depth limit of 1024:

* list element: ``base + id * 1024 + depth``;
* map key: ``base - id * 1024 - depth``; map value: ``base + id * 1024 + depth``
  (a list element and a map value at the same place get the same id: a column is one or the other);
* a ROW inside a collection starts again from its own fields' ids, at depth 0.

The arithmetic is Java's 32-bit ``int``, wrapping as Java does. The ids live only in the Parquet
schema (the writer's): in-memory Arrow types stay without them, and readers match nested values
by the table schema, not by these ids (``engine.files.evolve``).
"""

from __future__ import annotations

import pyarrow as pa

from engine.arrow_types import FIELD_ID_KEY

__all__ = [
    "array_element_id",
    "lacking_nested_ids",
    "map_key_id",
    "map_value_id",
    "with_nested_ids",
]

_BASE = 2147483647 // 4  # SpecialFields.STRUCTURED_TYPE_FIELD_ID_BASE
_DEPTH_LIMIT = 1 << 10  # SpecialFields.STRUCTURED_TYPE_FIELD_DEPTH_LIMIT


def _int32(v: int) -> int:
    """``v`` wrapped to a Java ``int``."""
    return (v + 2**31) % 2**32 - 2**31


def array_element_id(field_id: int, depth: int) -> int:
    """Paimon's id of the element of an ARRAY at ``depth`` below the field ``field_id``."""
    return _int32(_BASE + _int32(field_id * _DEPTH_LIMIT) + depth)


def map_key_id(field_id: int, depth: int) -> int:
    """Paimon's id of the key of a MAP (or the element of a MULTISET) at ``depth``."""
    return _int32(_BASE - _int32(field_id * _DEPTH_LIMIT) - depth)


def map_value_id(field_id: int, depth: int) -> int:
    """Paimon's id of the value of a MAP (or the count of a MULTISET) at ``depth``."""
    return _int32(_BASE + _int32(field_id * _DEPTH_LIMIT) + depth)


def _with_id(f: pa.Field, type_: pa.DataType, field_id: int | None) -> pa.Field:
    meta = dict(f.metadata or {})
    if field_id is not None:
        meta[FIELD_ID_KEY] = str(field_id).encode()
    return pa.field(f.name, type_, f.nullable, metadata=meta or None)


def _type(t: pa.DataType, field_id: int | None, depth: int) -> pa.DataType:
    """``t`` with its collections' members given ids, inside the field ``field_id``."""
    if pa.types.is_struct(t):
        return pa.struct([_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        key, item = t.key_field, t.item_field
        d = depth + 1
        key_id = None if field_id is None else map_key_id(field_id, d)
        value_id = None if field_id is None else map_value_id(field_id, d)
        return pa.map_(
            _with_id(key, _type(key.type, field_id, d), key_id),
            _with_id(item, _type(item.type, field_id, d), value_id),
            keys_sorted=t.keys_sorted,
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        value = t.value_field
        d = depth + 1
        element = _with_id(value, _type(value.type, field_id, d),
                           None if field_id is None else array_element_id(field_id, d))
        return pa.list_(element) if pa.types.is_list(t) else pa.large_list(element)
    return t


def _own_id(f: pa.Field) -> int | None:
    raw = (f.metadata or {}).get(FIELD_ID_KEY)
    return int(raw) if raw is not None else None


def _field(f: pa.Field) -> pa.Field:
    return _with_id(f, _type(f.type, _own_id(f), 0), None)


def with_nested_ids(schema: pa.Schema) -> pa.Schema:
    """``schema`` (fields carrying ``PARQUET:field_id``) with Paimon's ids on every list element
    and map key/value below them; a field without an id gives its members none."""
    return pa.schema([_field(f) for f in schema], metadata=schema.metadata)


def _lacks(t: pa.DataType) -> bool:
    """Whether a collection inside ``t`` has a member without a field id."""
    if pa.types.is_struct(t):
        return any(_lacks(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        members = [t.key_field, t.item_field]
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        members = [t.value_field]
    else:
        return False
    return any(_own_id(m) is None or _lacks(m.type) for m in members)


def lacking_nested_ids(schema: pa.Schema) -> frozenset[int]:
    """The ids of the top-level fields of a data file's (Arrow) schema that hold a list or map
    whose members carry no Parquet field ids (pyarrow reads Parquet field ids into
    ``PARQUET:field_id`` metadata); fields without an id are left out."""
    out = set()
    for f in schema:
        fid = _own_id(f)
        if fid is not None and _lacks(f.type):
            out.add(fid)
    return frozenset(out)
