"""Table identifiers: ``[db.]table[$branch_<b>][$<system table>]``, validated.

Names never contain path characters, so an identifier can never point outside its database
directory. ``$branch_x`` selects a branch; any other ``$name`` suffix is a system table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import InvalidArgumentError

DEFAULT_DATABASE = "default"
SYSTEM_TABLES = (
    "snapshots", "schemas", "options", "tags", "branches", "files", "manifests", "partitions",
    "buckets", "consumers", "audit_log", "ro",
)
_BAD = re.compile(r"[/\\\x00]")


def validate_name(kind: str, name: str) -> str:
    if not name or not name.strip():
        raise InvalidArgumentError(f"{kind} name must not be empty")
    if _BAD.search(name) or name in (".", "..") or name.startswith("."):
        raise InvalidArgumentError(f"{kind} name '{name}' must not contain path characters")
    if "$" in name and kind == "table":
        raise InvalidArgumentError(f"table name '{name}' must not contain '$' (it separates branches and system tables)")
    return name


@dataclass(frozen=True, slots=True)
class Identifier:
    database: str
    table: str
    branch: str | None = None
    system_table: str | None = None

    def __post_init__(self) -> None:
        validate_name("database", self.database)
        validate_name("table", self.table)

    @staticmethod
    def parse(text: str, default_database: str = DEFAULT_DATABASE) -> Identifier:
        """``db.t``, ``t``, ``db.t$branch_dev``, ``t$snapshots``, ``db.t$branch_dev$files``."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError("a table identifier must be a non-empty string like 'db.table'")
        head, *suffixes = text.strip().split("$")
        parts = head.split(".")
        if len(parts) == 1:
            db, table = default_database, parts[0]
        elif len(parts) == 2:
            db, table = parts
        else:
            raise InvalidArgumentError(f"'{text}' is not a valid table identifier; use 'database.table'")
        branch = system = None
        for s in suffixes:
            if s.startswith("branch_") and branch is None and system is None:
                branch = s[len("branch_") :]
                if not branch:
                    raise InvalidArgumentError(f"'{text}': empty branch name after '$branch_'")
            elif system is None and s:
                if s.lower() not in SYSTEM_TABLES:
                    raise InvalidArgumentError(
                        f"'{text}': unknown system table '${s}'; known: {', '.join(SYSTEM_TABLES)}"
                    )
                system = s.lower()
            else:
                raise InvalidArgumentError(f"'{text}' is not a valid table identifier")
        return Identifier(db, table, branch, system)

    @property
    def full_name(self) -> str:
        text = f"{self.database}.{self.table}"
        if self.branch:
            text += f"$branch_{self.branch}"
        if self.system_table:
            text += f"${self.system_table}"
        return text

    def base(self) -> Identifier:
        """The table itself (main branch, no system table)."""
        return Identifier(self.database, self.table)

    def __str__(self) -> str:
        return self.full_name
