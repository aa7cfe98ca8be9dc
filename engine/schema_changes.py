"""Schema changes (ALTER TABLE) as frozen records: what :meth:`TableSchema.apply_changes` applies.

One job: name each change Paimon's ``SchemaManager`` knows (options, add/drop/rename/move/retype
columns, comments) with its arguments; the rules for applying them live in :mod:`engine.schema`.
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


Position = Literal["first", "last"] | tuple[str, str] | None  # ("after" | "before", column)


@dataclass(frozen=True, slots=True)
class AddColumn:
    """A new nullable top-level column; ``type`` may be SQL text. ``position`` None appends."""

    name: str
    type: DataType | str
    comment: str | None = None
    position: Position = None


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class MoveColumn:
    """Move a top-level column: ``position`` is "first", "last" or ("after" | "before", column)."""

    name: str
    position: Position


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    """Change a column's type to one Paimon casts to implicitly (see :func:`engine.type_widening.castable`).

    With ``keep_nullability`` (the default, as Spark's ALTER COLUMN TYPE) the column keeps its
    nullability whatever ``type`` says.
    """

    name: str
    type: DataType | str
    keep_nullability: bool = True


@dataclass(frozen=True, slots=True)
class UpdateColumnComment:
    name: str
    comment: str | None


@dataclass(frozen=True, slots=True)
class UpdateComment:
    comment: str | None


SchemaChange = (
    SetOption | RemoveOption | AddColumn | DropColumn | RenameColumn | UpdateColumnType | UpdateColumnComment
    | UpdateComment | MoveColumn
)  # fmt: skip
