"""Schema changes (ALTER TABLE) as frozen records: what :meth:`TableSchema.apply_changes` applies.

One job: name each change Paimon's ``SchemaManager`` knows (options, add/drop/rename/move/retype
columns, comments, default values) with its arguments; the rules for applying them live in
:mod:`engine.schema`.

A column is named by a :data:`ColumnName`: a top-level column's name, or a path to a nested
field (``("v", "f2", "f1")``; ``element`` / ``value`` step into an ARRAY's element and a MAP's
value, see :mod:`engine.field_paths`). A one-name tuple is the top-level column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.types import DataType


@dataclass(frozen=True, slots=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class RemoveOption:
    key: str


ColumnName = str | tuple[str, ...]

Position = Literal["first", "last"] | tuple[str, str] | None  # ("after" | "before", column)


@dataclass(frozen=True, slots=True)
class AddColumn:
    """A new nullable column or nested ROW field; ``type`` may be SQL text. ``position`` None appends
    (a position names a sibling: a column, or a field of the same ROW)."""

    name: ColumnName
    type: DataType | str
    comment: str | None = None
    position: Position = None


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: ColumnName


@dataclass(frozen=True, slots=True)
class RenameColumn:
    """``old`` (a column or nested field) gets the name ``new`` (a plain name: it stays where it is)."""

    old: ColumnName
    new: str


@dataclass(frozen=True, slots=True)
class MoveColumn:
    """Move a column, or a nested field among its siblings: ``position`` is "first", "last" or
    ("after" | "before", sibling)."""

    name: ColumnName
    position: Position


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    """Change a column's type to one Paimon casts to implicitly (see :func:`engine.type_widening.castable`).

    With ``keep_nullability`` (the default, as Spark's ALTER COLUMN TYPE) the column keeps its
    nullability whatever ``type`` says. A path ending in ``element`` / ``value`` retypes an
    ARRAY's element or a MAP's value.
    """

    name: ColumnName
    type: DataType | str
    keep_nullability: bool = True


@dataclass(frozen=True, slots=True)
class UpdateColumnComment:
    name: ColumnName
    comment: str | None


@dataclass(frozen=True, slots=True)
class UpdateColumnDefault:
    """Set (``default`` = the value as SQL text, e.g. ``'3'`` or ``5``) or drop (None) a top-level
    column's default value, stored as the field's ``defaultValue`` (Paimon 1.2+)."""

    name: ColumnName
    default: str | None


@dataclass(frozen=True, slots=True)
class UpdateComment:
    comment: str | None


SchemaChange = (
    SetOption | RemoveOption | AddColumn | DropColumn | RenameColumn | UpdateColumnType | UpdateColumnComment
    | UpdateComment | MoveColumn | UpdateColumnDefault
)  # fmt: skip
