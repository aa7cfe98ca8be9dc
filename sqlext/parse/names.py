"""Names and small values shared by the statement nodes: table names, raw SQL fragments, partitions.

Invariants:
* values are frozen dataclasses; source positions never take part in equality (``compare=False``);
* a :class:`TableName` is always valid: one to three non-empty parts, no '/' or '\\', and ``$``
  suffixes only in the table part (``$branch_<b>`` then an optional system table);
* a :class:`SqlFragment` is exact source text; its offset/line/column locate it in the script.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import TypeAlias

from engine.errors import InvalidArgumentError
from engine.identifier import MAIN_BRANCH, validate_name

LiteralValue: TypeAlias = str | int | float | Decimal | bool | date | datetime | None

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NAME_PART = re.compile(r"`(?:[^`]|``)*`|[^.`]+")


def position_field() -> int | None:
    """A dataclass field for a source position: optional, and never part of equality or repr."""
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SqlFragment:
    """A piece of Spark SQL (or a data type) kept as source text, located in the script."""

    text: str
    offset: int | None = position_field()
    line: int | None = position_field()
    column: int | None = position_field()

    def __str__(self) -> str:
        return self.text


def quoted(part: str) -> str:
    """``part`` as a back-quoted SQL identifier, whatever it holds."""
    return "`" + part.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """``text`` as a single-quoted SQL string literal (backslash and quote escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


_SPARK_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def spark_quote_name(part: str) -> str:
    """``part`` as Spark's parser reads an identifier: bare when a plain word (no ``$``), else back-quoted."""
    return part if _SPARK_WORD.fullmatch(part) else quoted(part)


def quote_name(part: str) -> str:
    """``part`` as a SQL identifier: bare when it is a plain word, otherwise back-quoted."""
    if _PLAIN_NAME.fullmatch(part):
        return part
    return "`" + part.replace("`", "``") + "`"


@dataclass(frozen=True, slots=True)
class TableName:
    """``[catalog.][database.]table[$branch_<b>][$<system table>]``.

    A ``$`` suffix ``branch_<b>`` names a branch; any other suffix names a system table
    (``snapshots``, ``tags``, ``audit_log``, ...), which may follow a branch.
    """

    catalog: str | None
    database: str | None
    table: str
    branch: str | None = None
    system_table: str | None = None
    line: int | None = position_field()
    column: int | None = position_field()
    offset: int | None = position_field()

    @classmethod
    def from_parts(
        cls,
        parts: list[str],
        *,
        line: int | None = None,
        column: int | None = None,
        offset: int | None = None,
    ) -> TableName:
        """Build a name from its dot-separated parts (already unquoted).

        Args:
            parts: one to three parts; the last may carry ``$branch_x`` / ``$systable`` suffixes.
            line: script line of the name, for later error messages.
            column: script column of the name.
            offset: script offset of the name.

        Returns:
            The validated name.

        Raises:
            InvalidArgumentError: too many parts, an empty part, a '/' in a part, or a bad suffix.
        """
        if not 1 <= len(parts) <= 3:
            raise InvalidArgumentError(
                f"table name {'.'.join(parts)!r} has {len(parts)} parts: use [catalog.][database.]table"
            )
        for part in parts:
            if not part.strip():
                raise InvalidArgumentError(f"table name {'.'.join(parts)!r} has an empty part")
            if "/" in part or "\\" in part:
                raise InvalidArgumentError(f"name {part!r} must not contain '/' or '\\'")
        for part in parts[:-1]:
            if "$" in part:
                raise InvalidArgumentError(
                    f"'$' is only allowed in the table part of a name, not in {part!r}"
                )
        table, *suffixes = parts[-1].split("$")
        if not table:
            raise InvalidArgumentError(f"table name {parts[-1]!r} has nothing before '$'")
        branch = system = None
        for i, suffix in enumerate(suffixes):
            if not suffix:
                raise InvalidArgumentError(f"table name {parts[-1]!r} has an empty '$' suffix")
            if suffix.startswith("branch_") and i == 0:
                branch = suffix[len("branch_") :]
                if not branch:
                    raise InvalidArgumentError(f"table name {parts[-1]!r} has an empty branch name")
            elif system is None and (i == 0 or branch is not None):
                system = suffix
            else:
                raise InvalidArgumentError(
                    f"table name {parts[-1]!r}: use table[$branch_<name>][$<system table>]"
                )
        catalog = parts[0] if len(parts) == 3 else None
        database = parts[-2] if len(parts) >= 2 else None
        # The storage rules for names that become directories, checked where the name is read.
        if database is not None:
            validate_name("database", database)
        validate_name("table", table)
        if branch is not None and branch != MAIN_BRANCH:
            validate_name("branch", branch)
        return cls(catalog, database, table, branch, system, line, column, offset)

    @classmethod
    def parse(cls, text: str) -> TableName:
        """Parse a name given as a string (e.g. a CALL argument ``'db.T$branch_b1'``).

        Args:
            text: ``[catalog.][database.]table[$...]``; parts may be back-quoted.

        Returns:
            The validated name.

        Raises:
            InvalidArgumentError: the text is not a valid table name.
        """
        parts: list[str] = []
        pos = 0
        stripped = text.strip()
        while True:
            m = _NAME_PART.match(stripped, pos)
            if not m:
                raise InvalidArgumentError(f"{text!r} is not a table name: use [catalog.][database.]table")
            part = m.group()
            parts.append(part[1:-1].replace("``", "`") if part.startswith("`") else part.strip())
            pos = m.end()
            if pos == len(stripped):
                break
            if stripped[pos] != ".":
                raise InvalidArgumentError(f"{text!r} is not a table name: use [catalog.][database.]table")
            pos += 1
            if pos == len(stripped):
                raise InvalidArgumentError(f"table name {text!r} ends with '.'")
        return cls.from_parts(parts)

    @property
    def object_name(self) -> str:
        """The last part as written in SQL: ``table[$branch_<b>][$<system>]``."""
        name = self.table
        if self.branch is not None:
            name += "$branch_" + self.branch
        if self.system_table is not None:
            name += "$" + self.system_table
        return name

    def __str__(self) -> str:
        parts = [p for p in (self.catalog, self.database) if p is not None]
        return ".".join([quote_name(p) for p in parts] + [quote_name(self.object_name)])


@dataclass(frozen=True, slots=True)
class PartitionEntry:
    """``column = value`` in a PARTITION (...) clause, or a bare ``column`` (dynamic, INSERT only)."""

    column: str
    value: LiteralValue = None
    dynamic: bool = False


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """PARTITION (k = 'v', ...)."""

    entries: tuple[PartitionEntry, ...]

    def values(self) -> dict[str, LiteralValue]:
        """The static entries as ``{column: value}``."""
        return {e.column: e.value for e in self.entries if not e.dynamic}
