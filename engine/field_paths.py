"""Paths to nested fields, as ALTER TABLE names them: find the type a path reaches and rebuild a
column list with that type replaced.

A path is a tuple of names from a top-level column down: ``("v", "f2", "f1")`` is field ``f1`` of
the ROW field ``f2`` of the ROW column ``v``. The step ``element`` enters an ARRAY's (or
MULTISET's) element and ``value`` a MAP's value, as Spark and Paimon name them
(``("v", "element", "f1")``); MAP keys cannot be reached (Paimon never changes them). Names
match exactly, else the one case-insensitive match, as top-level columns do.

Only names and types are handled here; which changes are allowed is :mod:`engine.schema`'s job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.errors import InvalidArgumentError, NoSuchColumnError
from engine.types import DataField, DataType, TypeRoot

ELEMENT = "element"
VALUE = "value"
KEY = "key"


@dataclass(frozen=True, slots=True)
class Step:
    """One resolved step: a ROW field (its position among its siblings) or ``element``/``value``."""

    index: int | None  # the field's position in its ROW; None for element/value
    name: str  # the field's exact name, or "element" / "value"


def dotted(path: Sequence[str]) -> str:
    """``v.f2.f1``: the path as users write it (for messages)."""
    return ".".join(path)


def find_field(fields: Sequence[DataField], name: str, where: str = "") -> int:
    """Position of ``name`` among ``fields``: exact, else the one case-insensitive match.

    Raises:
        NoSuchColumnError: no (unique) field has that name; ``where`` names the ROW for messages.
    """
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    matches = [i for i, f in enumerate(fields) if f.name.lower() == str(name).lower()]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(f.name for f in fields)
    if where:
        raise NoSuchColumnError(f"field '{where}.{name}' does not exist; the fields of {where} are: {known}")
    raise NoSuchColumnError(f"column '{name}' does not exist; columns are: {known}")


def resolve(fields: Sequence[DataField], path: Sequence[str]) -> tuple[Step, ...]:
    """The steps of ``path`` (at least one name), each checked against the types on the way.

    Raises:
        NoSuchColumnError: a field on the path does not exist.
        InvalidArgumentError: a step does not fit the type it enters (a field of an atomic type,
            ``key`` of a map, a field name where an array needs ``element``, ...).
    """
    if not path:
        raise InvalidArgumentError("a column path needs at least one name")
    i = find_field(fields, path[0])
    steps = [Step(i, fields[i].name)]
    t = fields[i].type
    for n, name in enumerate(path[1:], start=1):
        here = dotted([s.name for s in steps])
        if t.root in (TypeRoot.ARRAY, TypeRoot.MULTISET):
            if name.lower() != ELEMENT:
                raise InvalidArgumentError(
                    f"'{here}' is {t.root.value}: name its element as '{here}.{ELEMENT}', not '{name}'"
                )
            assert t.element is not None
            steps.append(Step(None, ELEMENT))
            t = t.element
        elif t.root is TypeRoot.MAP:
            if name.lower() == KEY:
                raise InvalidArgumentError(f"the key of map '{here}' cannot be changed (as in Paimon)")
            if name.lower() != VALUE:
                raise InvalidArgumentError(
                    f"'{here}' is a MAP: name its value as '{here}.{VALUE}', not '{name}'"
                )
            assert t.value is not None
            steps.append(Step(None, VALUE))
            t = t.value
        elif t.root is TypeRoot.ROW:
            j = find_field(t.fields, name, here)
            steps.append(Step(j, t.fields[j].name))
            t = t.fields[j].type
        else:
            raise InvalidArgumentError(
                f"'{here}' has type {t.root.value}: it has no nested field '{dotted(path[n:])}'"
            )
    return tuple(steps)


def type_at(fields: Sequence[DataField], steps: Sequence[Step]) -> DataType:
    """The type the resolved ``steps`` reach."""
    t = fields[_index(steps[0])].type
    for s in steps[1:]:
        t = _child(t, s)
    return t


def replace_type(fields: Sequence[DataField], steps: Sequence[Step], new: DataType) -> tuple[DataField, ...]:
    """``fields`` with the type the resolved ``steps`` reach replaced by ``new`` (everything else,
    ids and nullability of the enclosing types included, unchanged)."""
    out = list(fields)
    i = _index(steps[0])
    out[i] = replace(out[i], type=_replaced(out[i].type, steps[1:], new))
    return tuple(out)


def _index(step: Step) -> int:
    assert step.index is not None, "a path starts at a column"
    return step.index


def _child(t: DataType, step: Step) -> DataType:
    if step.index is not None:
        return t.fields[step.index].type
    member = t.element if step.name == ELEMENT else t.value
    assert member is not None
    return member


def _replaced(t: DataType, steps: Sequence[Step], new: DataType) -> DataType:
    if not steps:
        return new
    step, rest = steps[0], steps[1:]
    if step.index is not None:
        fields = list(t.fields)
        fields[step.index] = replace(fields[step.index], type=_replaced(fields[step.index].type, rest, new))
        return replace(t, fields=tuple(fields))
    if step.name == ELEMENT:
        assert t.element is not None
        return replace(t, element=_replaced(t.element, rest, new))
    assert t.value is not None
    return replace(t, value=_replaced(t.value, rest, new))
