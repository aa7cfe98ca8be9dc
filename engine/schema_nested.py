"""ALTER TABLE changes to nested ROW fields (``v.f2``, ``v.element.f1``, ``v.value.f1``), by the rules
of Paimon's ``SchemaManager``, plus the field-id helpers that top-level changes share.

Rules (Paimon 2.0): a new nested field is nullable, takes the id ``highest_field_id + 1`` (its
own nested fields the ids after it) and may be placed FIRST / AFTER / BEFORE a sibling; a name
must be free among its siblings (ignoring case, as top-level names); the last field of a ROW
cannot be dropped; a type changes only where Paimon casts implicitly
(:func:`engine.type_widening.castable`), keeping its nullability and the ids of the fields it
keeps. Primary-key, partition and option rules concern top-level columns only: no key or option
names a nested field. Files keep old fields under their ids, so readers map by id
(:mod:`engine.files.evolve`).

Decision: ``MoveColumn`` of a nested field moves it among its siblings (Paimon's Spark catalog
turns ``ALTER COLUMN v.f FIRST`` into a move of the top-level column ``v``, a slip this does not
copy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from engine.errors import InvalidArgumentError
from engine.field_paths import ELEMENT, VALUE, Step, dotted, find_field, replace_type, resolve, type_at
from engine.schema_changes import Position
from engine.type_widening import castable
from engine.types import DataField, DataType, TypeRoot, max_field_id, type_to_sql


def reassign_ids(t: DataType, next_id: Callable[[], int]) -> DataType:
    """``t`` with every nested ROW field renumbered depth-first (a field before its children)."""
    if t.root is TypeRoot.ROW:
        new = []
        for f in t.fields:
            fid = next_id()
            new.append(DataField(fid, f.name, reassign_ids(f.type, next_id), f.description, f.default_value))
        return replace(t, fields=tuple(new))
    if t.element is not None:
        return replace(t, element=reassign_ids(t.element, next_id))
    if t.key is not None and t.value is not None:
        key = reassign_ids(t.key, next_id)
        return replace(t, key=key, value=reassign_ids(t.value, next_id))
    return t


def keep_ids(old: DataType, new: DataType) -> DataType:
    """``new`` with the ids (and comments) of the matching ROW fields of ``old`` (same shape)."""
    if new.root is TypeRoot.ROW:
        kept = tuple(
            DataField(
                o.id,
                n.name,
                keep_ids(o.type, n.type),
                n.description if n.description is not None else o.description,
                o.default_value,
            )
            for o, n in zip(old.fields, new.fields, strict=True)
        )
        return replace(new, fields=kept)
    if new.element is not None and old.element is not None:
        return replace(new, element=keep_ids(old.element, new.element))
    if new.value is not None and old.value is not None and old.key is not None:
        return replace(new, key=old.key, value=keep_ids(old.value, new.value))
    return new


def check_free(siblings: Sequence[DataField], name: str, ignore: int = -1, where: str = "") -> None:
    """Raise unless ``name`` is a usable name not yet taken among ``siblings`` (ignoring case)."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"column name must be a non-empty string, got {name!r}")
    for i, f in enumerate(siblings):
        if i != ignore and f.name.lower() == name.lower():
            what = f"field '{where}.{f.name}'" if where else f"column '{f.name}'"
            raise InvalidArgumentError(f"{what} already exists (names are case-insensitive)")


def insert_at(siblings: list[DataField], field: DataField, pos: Position, where: str = "") -> None:
    """Insert ``field`` into ``siblings`` at ``pos`` (None / "last" appends)."""
    if pos is None or pos == "last":
        siblings.append(field)
    elif pos == "first":
        siblings.insert(0, field)
    elif isinstance(pos, tuple) and len(pos) == 2 and pos[0] in ("after", "before"):
        ref = find_field(siblings, pos[1], where)
        siblings.insert(ref + 1 if pos[0] == "after" else ref, field)
    else:
        raise InvalidArgumentError(f"bad column position {pos!r}: use 'first', 'last' or ('after', column)")


def move_in(siblings: list[DataField], i: int, pos: Position, where: str = "") -> None:
    """Move ``siblings[i]`` to ``pos``; refused relative to itself or where it already is (Paimon's
    ``applyMove``: "Cannot move itself")."""
    name = siblings[i].name
    if isinstance(pos, tuple) and len(pos) == 2:
        if find_field(siblings, pos[1], where) == i:  # (an unknown reference raises here)
            raise InvalidArgumentError(f"cannot move column '{name}' relative to itself")
    elif (pos == "first" and i == 0) or (pos == "last" and i == len(siblings) - 1):
        raise InvalidArgumentError(f"Cannot move itself for column {name}: it already is the {pos} column")
    insert_at(siblings, siblings.pop(i), pos, where)


def retyped(f_name: str, old: DataType, new: DataType, keep_nullability: bool) -> DataType:
    """``old`` changed to ``new`` by ALTER COLUMN TYPE (ids kept), or InvalidArgumentError."""
    if keep_nullability:
        new = new.copy(old.nullable)
    if not castable(old, new):
        raise InvalidArgumentError(
            f"cannot change column '{f_name}' from {type_to_sql(old)} to {type_to_sql(new)}: allowed "
            "are widenings (e.g. INT -> BIGINT, FLOAT -> DOUBLE, larger DECIMAL or VARCHAR, any "
            "non-binary type -> STRING) and numbers to FLOAT/DOUBLE (e.g. BIGINT -> DOUBLE); "
            "narrowing casts Paimon allows explicitly (e.g. BIGINT -> INT, STRING -> INT) are refused"
        )
    return keep_ids(old, new)


# ---- changes below the top level ------------------------------------------------------------------


def _parent(fields: Sequence[DataField], path: Sequence[str]) -> tuple[tuple[Step, ...], DataType, str]:
    """The resolved steps of ``path[:-1]``, the ROW they reach, and its dotted name."""
    steps = resolve(fields, path[:-1])
    row = type_at(fields, steps)
    where = dotted([s.name for s in steps])
    if row.root is not TypeRoot.ROW:
        step = {TypeRoot.ARRAY: ELEMENT, TypeRoot.MULTISET: ELEMENT, TypeRoot.MAP: VALUE}.get(row.root)
        hint = f"; the fields of its {step} are '{where}.{step}.<field>'" if step else ""
        raise InvalidArgumentError(
            f"'{where}' has type {type_to_sql(row)}: it has no field '{path[-1]}' (only a ROW has fields"
            f"{hint})"
        )
    return steps, row, where


def _with_siblings(
    fields: Sequence[DataField], steps: Sequence[Step], row: DataType, siblings: Sequence[DataField]
) -> tuple[DataField, ...]:
    return replace_type(fields, steps, replace(row, fields=tuple(siblings)))


def add_field(
    fields: Sequence[DataField],
    path: Sequence[str],
    t: DataType,
    comment: str | None,
    pos: Position,
    highest: int,
) -> tuple[tuple[DataField, ...], int]:
    """Add the nested field ``path`` (its ROW exists); returns the columns and the new highest id."""
    steps, row, where = _parent(fields, path)
    siblings = list(row.fields)
    check_free(siblings, path[-1], where=where)
    ids = iter(range(highest + 1, 1 << 62))
    fid = next(ids)
    field = DataField(fid, path[-1], reassign_ids(t, ids.__next__), comment)
    insert_at(siblings, field, pos, where)
    return _with_siblings(fields, steps, row, siblings), max(fid, max_field_id(field.type))


def drop_field(fields: Sequence[DataField], path: Sequence[str]) -> tuple[DataField, ...]:
    steps, row, where = _parent(fields, path)
    siblings = list(row.fields)
    i = find_field(siblings, path[-1], where)
    if len(siblings) == 1:
        raise InvalidArgumentError(
            f"cannot drop '{where}.{siblings[i].name}': it is the last field of '{where}' (a ROW needs "
            f"one); drop '{where}' instead"
        )
    del siblings[i]
    return _with_siblings(fields, steps, row, siblings)


def rename_field(fields: Sequence[DataField], path: Sequence[str], new: str) -> tuple[DataField, ...]:
    steps, row, where = _parent(fields, path)
    siblings = list(row.fields)
    i = find_field(siblings, path[-1], where)
    check_free(siblings, new, ignore=i, where=where)
    siblings[i] = replace(siblings[i], name=new)
    return _with_siblings(fields, steps, row, siblings)


def move_field(fields: Sequence[DataField], path: Sequence[str], pos: Position) -> tuple[DataField, ...]:
    steps, row, where = _parent(fields, path)
    siblings = list(row.fields)
    move_in(siblings, find_field(siblings, path[-1], where), pos, where)
    return _with_siblings(fields, steps, row, siblings)


def comment_field(
    fields: Sequence[DataField], path: Sequence[str], comment: str | None
) -> tuple[DataField, ...]:
    steps, row, where = _parent(fields, path)
    siblings = list(row.fields)
    i = find_field(siblings, path[-1], where)
    siblings[i] = replace(siblings[i], description=comment)
    return _with_siblings(fields, steps, row, siblings)


def retype_field(
    fields: Sequence[DataField], path: Sequence[str], new: DataType, keep_nullability: bool
) -> tuple[DataField, ...]:
    """Change the type ``path`` reaches: a nested field's, or (a path ending in ``element`` /
    ``value``) an ARRAY's element or a MAP's value."""
    steps = resolve(fields, path)
    name = dotted([s.name for s in steps])
    return replace_type(fields, steps, retyped(name, type_at(fields, steps), new, keep_nullability))
