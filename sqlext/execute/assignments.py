"""The SET clause of UPDATE and MERGE: which column each assignment writes, as one Spark expression.

* ``c = v`` and ``alias.c = v`` set a column; ``s.f = v`` (or ``alias.s.f.g = v``) sets a field of
  a struct column: the column is rebuilt with ``named_struct`` from its other fields, so several
  fields of one struct may be set in one statement (a NULL struct becomes a struct whose other
  fields are NULL, as Spark's UPDATE does);
* ``c = DEFAULT`` writes the column's declared default (``fields.<c>.default-value``; NULL without);
* a column (or a field and its parent) is assigned at most once; computed columns are never
  assigned; primary-key and (on key tables) partition columns may be assigned, but the caller must
  check at run time that no row changes its key (Paimon accepts ``SET id = id`` and MERGE's
  ``SET a = source.a`` when joined on ``target.a = source.a``), see :func:`key_change_check`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine import Table
from engine.types import DataType, TypeRoot
from sqlext.errors import SqlAnalysisError
from sqlext.execute.table_options import computed_columns
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement


def _err(stmt: Statement, message: str, sqlstate: str) -> SqlAnalysisError:
    return SqlAnalysisError(message, line=stmt.line, column=stmt.column, sqlstate=sqlstate)


def is_default(fragment: ast.SqlFragment) -> bool:
    """The value is the bare keyword DEFAULT."""
    return fragment.text.strip().upper() == "DEFAULT"


@dataclass
class Assigned:
    """The SET clause resolved: ``{column: Spark expression}`` plus the key columns it assigns."""

    values: dict[str, str] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)


def _resolve(table: Table, text: str, aliases: tuple[str, ...], stmt: Statement) -> tuple[str, list[str]]:
    """``(column, nested field path)`` of an assignment target such as ``c``, ``t.c`` or ``t.s.f``."""
    parts = [p.strip().strip("`") for p in text.split(".")]
    names = {f.lower(): f for f in table.schema.field_names}
    lowered = {a.lower() for a in aliases}
    # A column named like the alias wins over the alias, as Spark resolves the longest match first.
    if len(parts) > 1 and parts[0].lower() in lowered and parts[0].lower() not in names:
        parts = parts[1:]
    column = names.get(parts[0].lower())
    if column is None:
        if len(parts) > 1 and parts[0].lower() not in names:
            raise _err(stmt, f"cannot assign '{text}': '{parts[0]}' is neither the target table nor a column",
                       "42703")
        raise _err(stmt, f"cannot assign '{text}': '{table.name}' has no column '{parts[0]}'", "42703")
    return column, parts[1:]


def _field_type(dtype: DataType, path: list[str], text: str, stmt: Statement) -> None:
    for name in path:
        if dtype.root is not TypeRoot.ROW:
            raise _err(stmt, f"cannot assign '{text}': '{name}' is not a field of a struct", "42703")
        match = [f for f in dtype.fields if f.name.lower() == name.lower()]
        if not match:
            raise _err(stmt, f"cannot assign '{text}': the struct has no field '{name}'", "42703")
        dtype = match[0].type


def _rebuild(base: str, dtype: DataType, tree: dict[str, object]) -> str:
    """``named_struct`` of ``base`` (a struct expression) with the fields in ``tree`` replaced."""
    args = []
    for f in dtype.fields:
        sub = next((v for k, v in tree.items() if k.lower() == f.name.lower()), None)
        current = f"{base}.{quoted(f.name)}"
        if sub is None:
            value = current
        elif isinstance(sub, dict):
            value = _rebuild(current, f.type, sub)
        else:
            value = str(sub)
        args.append(f"'{f.name}', {value}")
    return f"named_struct({', '.join(args)})"


def resolve_assignments(
    table: Table,
    assignments: tuple[ast.Assignment, ...],
    aliases: tuple[str, ...],
    stmt: Statement,
    target: str,
    defaults: Mapping[str, str],
) -> Assigned:
    """Resolve a SET clause; ``target`` qualifies the target's current values (e.g. the alias);
    ``defaults``: each column's declared default as a SQL expression (``DEFAULT`` writes it)."""
    computed = computed_columns(dict(table.schema.options))
    types = {f.name: f.type for f in table.schema.fields}
    # Paimon refuses assignments to primary-key columns only. A partition column outside the key
    # (cross-partition upsert, 'bucket' = '-1') may change: the write moves the key to the new partition.
    # With fixed buckets nothing moves a key (no global index): the row would also stay in its old
    # partition, so there its partition columns are kept like its key.
    keys = set(table.primary_keys)
    if keys and table.core_options.bucket != -1:
        keys |= set(table.partition_keys)
    whole: dict[str, str] = {}
    nested: dict[str, dict[str, object]] = {}
    for asg in assignments:
        column, path = _resolve(table, asg.column, aliases, stmt)
        if column in computed:
            raise _err(
                stmt, f"column '{column}' is computed ({computed[column]}) and cannot be assigned", "42000"
            )
        _field_type(types[column], path, asg.column, stmt)
        if is_default(asg.value):
            if path:
                raise _err(stmt, f"cannot assign DEFAULT to the nested field '{asg.column}'", "42000")
            value = defaults.get(column, "NULL")
        else:
            value = f"({asg.value.text})"
        if column in whole or (not path and column in nested):
            raise _err(stmt, f"column '{column}' is assigned more than once", "42701")
        if not path:
            whole[column] = value
            continue
        node = nested.setdefault(column, {})
        for name in path[:-1]:
            child = node.setdefault(name.lower(), {})
            if not isinstance(child, dict):
                raise _err(stmt, f"'{asg.column}' is assigned more than once", "42701")
            node = child
        if path[-1].lower() in node:
            raise _err(stmt, f"'{asg.column}' is assigned more than once", "42701")
        node[path[-1].lower()] = value
    out = Assigned()
    for column in table.schema.field_names:
        if column in whole:
            out.values[column] = whole[column]
        elif column in nested:
            out.values[column] = _rebuild(f"{target}.{quoted(column)}", types[column], nested[column])
        else:
            continue
        if column in keys:
            out.keys.append(column)
    return out


def key_change_check(assigned: Assigned, target: str) -> str | None:
    """A SQL predicate true for a row whose assignments would change a key column (None: no key set)."""
    if not assigned.keys:
        return None
    return " OR ".join(f"NOT (({assigned.values[k]}) <=> {target}.{quoted(k)})" for k in assigned.keys)


def key_change_error(table: Table, assigned: Assigned, stmt: Statement) -> SqlAnalysisError:
    cols = ", ".join(f"'{k}'" for k in assigned.keys)
    return _err(
        stmt,
        f"cannot change key column(s) {cols} of primary-key table '{table.name}' (the assignment changes a "
        "row's key or partition): delete the row and insert it with the new key",
        "42000",
    )
