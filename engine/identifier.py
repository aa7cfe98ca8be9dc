"""Table identifiers (``[db.]table[$branch_<b>][$<system table>]``) and the one rule for names.

:func:`validate_name` is the single check for every name that becomes a path component
(database, table, branch, tag, consumer id): Paimon's rules plus no ``/``, ``\\``, ``..``, NUL,
control characters or leading ``.``, and at most 255 bytes for the whole path component. So an
identifier can never point outside its directory. ``$branch_x`` selects a branch; any other
``$name`` suffix is a system table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import InvalidArgumentError, InvalidNameError

DEFAULT_DATABASE = "default"
MAIN_BRANCH = "main"
SYSTEM_TABLES = (
    "snapshots", "schemas", "options", "tags", "branches", "files", "manifests", "partitions",
    "buckets", "consumers", "audit_log", "binlog", "ro", "retention", "maintenance_log",
    "file_key_ranges", "table_indexes", "aggregation_fields", "statistics", "row_tracking",
)
# Every path component a name becomes, as (prefix, suffix) around the name: the name's byte
# limit is what keeps the whole component within the 255-byte NAME_MAX of common file systems.
_COMPONENT = {
    "database": ("", ".db"),
    "table": ("", ""),
    "branch": ("branch-", ""),
    "tag": ("tag-", ""),
    "consumer": ("consumer-", ""),
}
MAX_COMPONENT_BYTES = 255
# C0 and C1 control characters, DEL, and the two path separators.
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f/\\]")
# '$' separates a table from its branch and system table, so neither part may contain it.
_NO_DOLLAR = frozenset({"table", "branch"})
# Paimon refuses all-digit branch names but accepts all-digit tags ('20250122'): a digit string in
# time travel or rollback names the tag when one exists, else the snapshot with that id.
_NOT_NUMERIC = frozenset({"branch"})


def max_name_bytes(kind: str) -> int:
    """The longest ``kind`` name, in UTF-8 bytes, whose path component still fits NAME_MAX."""
    prefix, suffix = _COMPONENT[kind]
    return MAX_COMPONENT_BYTES - len(prefix) - len(suffix)


def validate_name(kind: str, name: object, *, new: bool = False) -> str:
    """Refuse a database/table/branch/tag/consumer name that could not be one safe path component.

    This is the single gate for every name that ends up in a path (``engine.meta.paths`` and the
    catalog call it before composing one): a refused name raises :class:`InvalidNameError` before
    anything on storage is read or written. ``new`` adds the rules for creating the name (no
    branch called ``main``). Returns the name unchanged.
    """
    if kind not in _COMPONENT:
        raise ValueError(f"unknown name kind {kind!r}")
    if not isinstance(name, str):
        raise InvalidNameError(f"{kind} name must be a string, not {type(name).__name__}")
    if not name.strip():
        raise InvalidNameError(f"{kind} name must not be blank")
    shown = repr(name) if len(name) <= 80 else repr(name[:77] + "...")
    bad = _FORBIDDEN.search(name)
    if bad:
        raise InvalidNameError(
            f"{kind} name {shown} must not contain {bad.group()!r}: '/', '\\' and control characters "
            "are not allowed in names"
        )
    if name.startswith("."):
        raise InvalidNameError(
            f"{kind} name {shown} must not start with '.' (it would be a hidden directory)"
        )
    if ".." in name:
        raise InvalidNameError(f"{kind} name {shown} must not contain '..'")
    if kind in _NO_DOLLAR and "$" in name:
        raise InvalidNameError(
            f"{kind} name {shown} must not contain '$' (it separates a table from its branch and system "
            "table)"
        )
    if kind in _NOT_NUMERIC and name.isdigit():
        raise InvalidNameError(f"{kind} name {shown} must not be all digits (that reads as a snapshot id)")
    if new and kind == "branch" and name == MAIN_BRANCH:
        raise InvalidNameError(f"'{MAIN_BRANCH}' is the default branch and cannot be created or deleted")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidNameError(f"{kind} name {shown} is not valid Unicode (lone surrogate)") from None
    limit = max_name_bytes(kind)
    if size > limit:
        raise InvalidNameError(f"{kind} name {shown} is {size} bytes in UTF-8; the limit is {limit}")
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
        if self.branch is not None and self.branch != MAIN_BRANCH:
            validate_name("branch", self.branch)

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
