"""Schema evolution on write (Paimon's ``write.merge-schema``): the table schema that accepts the
incoming data's columns, computed without touching storage.

The rules are Paimon 2.0's (``SchemaMergingUtils.mergeSchemas``), applied to an Arrow schema:

* ROW types merge by field name: table fields keep their place, id, nullability and comment;
  data-only fields are appended (nullable, with fresh ids above ``highest_field_id``); fields the
  data lacks stay (the writer fills them with NULL). The top level is a ROW.
* ARRAY elements, MAP keys and values and MULTISET elements merge recursively, so new fields
  reach structs inside arrays and maps.
* A leaf type is kept as it is unless ``type_widening``: then the table type becomes the data's
  where Paimon casts implicitly (:func:`engine.type_widening.castable`), a DECIMAL of the same scale
  takes the larger precision; with ``explicit_cast`` also where Paimon casts explicitly
  (:func:`engine.type_widening.explicit_castable`; whether the stored values convert is checked
  against the table's files by :mod:`engine.write.type_changes`).
* Names match exactly, or ignoring case unless ``case_sensitive`` (Spark's
  ``spark.sql.caseSensitive``, false by default).

Refused with :class:`engine.errors.SchemaMergeError`, where Paimon refuses (types that do not
merge) and where dyntable is stricter, each for a stated reason: explicit casts whose result
differs between readers (instants and numbers, time zones, nested values as text); retyping a
partition column (its values are stored as the old type in paths and manifests) and retyping a
primary-key or bucket-key column beyond the changes that keep a stored key's bytes
(:func:`engine.type_widening.key_bytes_kept`: buckets and key ranges are computed from them);
and a data column that differs from a table column only by case under ``case_sensitive``
(dyntable's column names are unique ignoring case).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from engine.arrow_types import from_arrow_field
from engine.errors import InvalidArgumentError, SchemaMergeError
from engine.options import (
    WRITE_MERGE_SCHEMA,
    WRITE_MERGE_SCHEMA_EXPLICIT_CAST,
    WRITE_MERGE_SCHEMA_TYPE_WIDENING,
    CoreOptions,
)
from engine.schema import TableSchema, validate_schema
from engine.type_widening import castable, explicit_castable, key_bytes_kept
from engine.types import DataField, DataType, TypeRoot, max_field_id, type_to_sql


@dataclass(frozen=True, slots=True)
class MergeSchemaFlags:
    """How a write evolves the schema: ``enabled`` (``write.merge-schema``), ``type_widening``,
    ``explicit_cast`` (each effective only with the one before) and ``case_sensitive``."""

    enabled: bool = False
    type_widening: bool = False
    explicit_cast: bool = False
    case_sensitive: bool = False

    @staticmethod
    def from_options(options: CoreOptions, *, case_sensitive: bool = False) -> MergeSchemaFlags:
        enabled = bool(options.get(WRITE_MERGE_SCHEMA))
        widening = enabled and bool(options.get(WRITE_MERGE_SCHEMA_TYPE_WIDENING))
        explicit = widening and bool(options.get(WRITE_MERGE_SCHEMA_EXPLICIT_CAST))
        return MergeSchemaFlags(enabled, widening, explicit, case_sensitive)


def merge_schema(
    table: TableSchema,
    data: pa.Schema,
    flags: MergeSchemaFlags,
    *,
    time_millis: int | None = None,
) -> TableSchema:
    """The next schema version (id + 1) that accepts ``data``, or ``table`` itself when nothing
    changes (the data adds no column or field and widens no type).

    Raises:
        SchemaMergeError: the data cannot be merged (see the module docstring); nothing changed.
        InvalidArgumentError: a data column has no Paimon type (e.g. an unsigned 64-bit integer).
    """
    data_fields = [from_arrow_field(f, i) for i, f in enumerate(data)]
    ids = itertools.count(table.highest_field_id + 1)
    merger = _Merger(flags, ids.__next__, table)
    fields = tuple(merger.merge_fields(table.fields, data_fields, path=""))
    if fields == table.fields:
        return table
    highest = max([table.highest_field_id, *(max(f.id, max_field_id(f.type)) for f in fields)])
    new = replace(table, id=table.id + 1, fields=fields, highest_field_id=highest,
                  time_millis=_now() if time_millis is None else time_millis)
    try:
        validate_schema(new)
    except InvalidArgumentError as e:
        raise SchemaMergeError(f"the data's columns cannot be merged into the table's schema: {e}") from None
    return new


def _now() -> int:
    return int(time.time() * 1000)


class _Merger:
    def __init__(self, flags: MergeSchemaFlags, next_id: Callable[[], int], table: TableSchema) -> None:
        self.flags = flags
        self.next_id = next_id
        self.partition_keys = set(table.partition_keys)
        self.hashed = {*table.primary_keys, *table.core_options.bucket_keys}

    def _check_key_change(self, f: DataField, t: DataType) -> None:
        change = f"'{f.name}' from {type_to_sql(f.type)} to {type_to_sql(t)}"
        if f.name in self.partition_keys:
            raise SchemaMergeError(
                f"cannot change partition column {change} on write: partition values are stored "
                "(in directory names and manifests) as the type they were written with"
            )
        if f.name in self.hashed and key_bytes_kept(f.type, t) is None:
            raise SchemaMergeError(
                f"cannot change key column {change} on write: stored keys would no longer match "
                "their buckets and key ranges (a primary-key or bucket-key column widens only to "
                "an integer of more bytes, a longer text or binary, or a DECIMAL or TIMESTAMP of "
                "the same storage)"
            )

    def _find(self, fields: Sequence[DataField], name: str) -> DataField | None:
        for f in fields:
            if f.name == name:
                return f
        if not self.flags.case_sensitive:
            for f in fields:
                if f.name.lower() == name.lower():
                    return f
        return None

    def merge_fields(
        self, base: Sequence[DataField], update: Sequence[DataField], path: str
    ) -> list[DataField]:
        out = []
        for f in base:
            u = self._find(update, f.name)
            if u is None:
                out.append(f)
                continue
            where = f"{path}{f.name}"
            t = self.merge_type(f.type, u.type, where)
            if t != f.type and not path:
                self._check_key_change(f, t)
            out.append(f if t == f.type else replace(f, type=t))
        for u in update:
            if self._find(base, u.name) is not None:
                continue
            twin = next((f for f in base if f.name.lower() == u.name.lower()), None)
            if twin is not None:  # only possible when case-sensitive
                raise SchemaMergeError(
                    f"column '{path}{u.name}' of the data differs from the table's '{path}{twin.name}' only "
                    "by case; dyntable's column names are unique ignoring case (write it as "
                    f"'{twin.name}', or with spark.sql.caseSensitive false)"
                )
            # Paimon's order: the new field's nested fields are numbered first, then the field.
            t = self._fresh_ids(u.type.copy(True))
            out.append(DataField(self.next_id(), u.name, t, u.description))
        return out

    def _fresh_ids(self, t: DataType) -> DataType:
        if t.root is TypeRoot.ROW:
            return replace(t, fields=tuple(
                DataField(self.next_id(), f.name, self._fresh_ids(f.type), f.description) for f in t.fields))
        if t.element is not None:
            return replace(t, element=self._fresh_ids(t.element))
        if t.key is not None and t.value is not None:
            return replace(t, key=self._fresh_ids(t.key), value=self._fresh_ids(t.value))
        return t

    def merge_type(self, base: DataType, update: DataType, where: str) -> DataType:  # noqa: C901
        if base.copy(True) == update.copy(True):
            return base
        if base.root is TypeRoot.ROW and update.root is TypeRoot.ROW:
            return replace(base, fields=tuple(self.merge_fields(base.fields, update.fields, f"{where}.")))
        if base.root is TypeRoot.MAP and update.root is TypeRoot.MAP:
            return replace(base, key=self.merge_type(base.key, update.key, f"{where}.key"),  # type: ignore[arg-type]
                           value=self.merge_type(base.value, update.value, f"{where}.value"))  # type: ignore[arg-type]
        if base.root is update.root and base.root in (TypeRoot.ARRAY, TypeRoot.MULTISET):
            return replace(base, element=self.merge_type(base.element, update.element,  # type: ignore[arg-type]
                                                         f"{where}.element"))
        if not self.flags.type_widening:
            return base  # the data is cast to the table's type when written
        if base.is_nested or update.is_nested:
            raise SchemaMergeError(
                f"cannot merge '{where}': {type_to_sql(base)} and {type_to_sql(update)} are different "
                "kinds of type"
            )
        if base.root is TypeRoot.DECIMAL and update.root is TypeRoot.DECIMAL:
            if base.scale != update.scale:
                raise SchemaMergeError(
                    f"cannot merge '{where}': decimal types with different scales ({type_to_sql(base)} and "
                    f"{type_to_sql(update)}) do not merge"
                )
            return replace(base, precision=max(base.precision or 0, update.precision or 0))
        widened = update.copy(base.nullable)
        if castable(base, widened) or (self.flags.explicit_cast and explicit_castable(base, widened)):
            return widened
        if self.flags.explicit_cast:
            why = ("dyntable makes no such cast on write (between instants and numbers, across time "
                   "zones, or of nested values as text, its result differs between readers)")
        elif _same_kind_narrower(base, update):
            why = ("a shorter length or lower precision loses data; "
                   "'write.merge-schema.explicit-cast' is off")
        else:
            why = "Paimon casts it only explicitly; 'write.merge-schema.explicit-cast' is off"
        raise SchemaMergeError(
            f"cannot widen '{where}' from {type_to_sql(base)} to {type_to_sql(update)}: {why}"
        )


def _same_kind_narrower(base: DataType, update: DataType) -> bool:
    if base.root is not update.root:
        return False
    if base.length is not None and update.length is not None:
        return update.length < base.length
    if base.precision is not None and update.precision is not None:
        return update.precision < base.precision
    return False
