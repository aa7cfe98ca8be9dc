"""The COPY INTO planners (Paimon 2.0): load files into a table, or write a table or query to files.

``COPY INTO t [(cols)] FROM 'dir' FILE_FORMAT = (TYPE = CSV | JSON | PARQUET, …) [PATTERN = 're']
[FORCE = b] [ON_ERROR = ABORT_STATEMENT | CONTINUE | SKIP_FILE]`` plans a ``CopyIntoTable``: the
checks that need no data are made here (the format's options by Paimon's lists, the column list,
columns left out that have neither a default nor NULL), and the plan carries what the runner needs
(Spark reader options, the target columns with the type each value is cast to, the write's
options). The runner (``copy_into_run.py``) lists the files, skips those the table's load history
already holds, reads them with Spark's own readers, checks every cast, writes the rows through the
same ``Write`` an INSERT plans and returns one row per file.

``COPY INTO 'dir' FROM {t | (query)} FILE_FORMAT = (…) [OVERWRITE = b]`` plans a
``CopyToLocation``: the bound query and Spark writer options. Nothing here runs Spark.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine import Table
from engine.types import TypeRoot
from sqlext.errors import SqlAnalysisError, UnsupportedStatementError
from sqlext.execute.planning import CopyIntoTable, CopyToLocation, Plan, Planner, PlannerContext
from sqlext.execute.write_schema import with_options, write_options
from sqlext.parse import ast
from sqlext.parse.names import quoted
from sqlext.parse.splitter import Statement

FORMATS = ("CSV", "JSON", "PARQUET")
# The FILE_FORMAT keys Paimon accepts, per direction and format (besides TYPE).
IMPORT_KEYS = {
    "CSV": frozenset({"FIELD_DELIMITER", "SKIP_HEADER", "QUOTE", "ESCAPE", "NULL_IF", "EMPTY_FIELD_AS_NULL",
                      "COMPRESSION"}),
    "JSON": frozenset({"MULTI_LINE", "COMPRESSION", "NULL_IF", "EMPTY_FIELD_AS_NULL"}),
    "PARQUET": frozenset({"COMPRESSION"}),
}
EXPORT_KEYS = {
    "CSV": frozenset({"FIELD_DELIMITER", "HEADER", "QUOTE", "ESCAPE", "COMPRESSION"}),
    "JSON": frozenset({"COMPRESSION", "DATE_FORMAT", "TIMESTAMP_FORMAT"}),
    "PARQUET": frozenset({"COMPRESSION"}),
}
# FILE_FORMAT key -> Spark reader / writer option, per format.
_READER = {
    "CSV": {"FIELD_DELIMITER": "sep", "QUOTE": "quote", "ESCAPE": "escape", "COMPRESSION": "compression"},
    "JSON": {"MULTI_LINE": "multiLine", "COMPRESSION": "compression"},
    "PARQUET": {"COMPRESSION": "compression"},
}
_WRITER = {
    "CSV": {"FIELD_DELIMITER": "sep", "HEADER": "header", "QUOTE": "quote", "ESCAPE": "escape",
            "COMPRESSION": "compression"},
    "JSON": {"COMPRESSION": "compression", "DATE_FORMAT": "dateFormat",
             "TIMESTAMP_FORMAT": "timestampFormat"},
    "PARQUET": {"COMPRESSION": "compression"},
}


def _error(stmt: Statement, message: str, sqlstate: str = "22023",
           at: tuple[int, int] | None = None) -> SqlAnalysisError:
    line, column = stmt.line, stmt.column
    if at is not None:  # an option's own place in the statement
        line, column = stmt.line + at[0] - 1, (stmt.column + at[1] - 1 if at[0] == 1 else at[1])
    return SqlAnalysisError(message, line=line, column=column, sqlstate=sqlstate)


def _text(value: str | tuple[str, ...]) -> str:
    return value if isinstance(value, str) else ",".join(value)


def _check_format(fmt: ast.FileFormat, keys: Mapping[str, frozenset[str]], direction: str,
                  stmt: Statement) -> None:
    """Paimon's checks of FILE_FORMAT: a known TYPE, only that format's keys, SKIP_HEADER 0 or 1."""
    if fmt.type not in FORMATS:
        raise UnsupportedStatementError(
            f"Unsupported file format type: {fmt.type}. Supported types: CSV, JSON, PARQUET",
            line=stmt.line, column=stmt.column, sqlstate="0A000",
        )
    if direction == "import" and "MODE" in fmt.options:
        raise _error(stmt, "MODE cannot be specified in FILE_FORMAT options; it is reserved for ON_ERROR "
                           "handling", at=fmt.positions.get("MODE"))
    invalid = [k for k in fmt.options if k not in keys[fmt.type]]
    if invalid:
        raise _error(stmt, f"Unsupported FILE_FORMAT options for {direction}: {', '.join(invalid)}",
                     at=fmt.positions.get(invalid[0]))
    skip = fmt.options.get("SKIP_HEADER")
    if skip is not None and _text(skip) not in ("0", "1"):
        raise _error(stmt, f"SKIP_HEADER supports only 0 or 1, got: {_text(skip)}",
                     at=fmt.positions.get("SKIP_HEADER"))


def reader_options(fmt: ast.FileFormat) -> dict[str, str]:
    """Spark reader options for an import's FILE_FORMAT (the parse mode is the runner's, by ON_ERROR)."""
    out: dict[str, str] = {}
    for key, value in fmt.options.items():
        if key == "SKIP_HEADER":
            out["header"] = "true" if _text(value) == "1" else "false"
        elif key in _READER[fmt.type]:
            text = _text(value)
            out[_READER[fmt.type][key]] = text.lower() if key == "MULTI_LINE" else text
    return out


def table_sql(name: ast.TableName) -> str:
    """``name`` as SQL text (each part back-quoted; a branch or system-table suffix kept in its part)."""
    last = name.table + (f"$branch_{name.branch}" if name.branch else "") + (
        f"${name.system_table}" if name.system_table else "")
    return ".".join(quoted(p) for p in (name.catalog, name.database, last) if p)


def _writable(table: Table) -> list[str]:
    return [f.name for f in table.schema.fields]


def plan_copy_into(ctx: PlannerContext, node: ast.CopyInto, stmt: Statement) -> Plan:
    fmt = node.file_format
    _check_format(fmt, IMPORT_KEYS, "import", stmt)
    if not ctx.is_managed(node.table):
        raise _error(stmt, f"COPY INTO loads into a dyntable table; {table_sql(node.table)} is not one",
                     sqlstate="42P01")
    table = ctx.table(node.table)
    writable = _writable(table)
    by_lower = {c.lower(): c for c in writable}
    if node.columns is None:
        targets = tuple(writable)
    else:
        missing = [c for c in node.columns if c.lower() not in by_lower]
        if missing:
            raise _error(stmt, f"Column '{missing[0]}' does not exist in target table. "
                               f"Available columns: {', '.join(writable)}", sqlstate="42703")
        targets = tuple(by_lower[c.lower()] for c in node.columns)
        defaults = {f.name for f in table.schema.fields if f.default_value is not None}
        defaults |= {k.split(".")[1] for k in table.schema.options
                     if k.startswith("fields.") and k.endswith(".default-value")}
        for f in table.schema.fields:
            if f.name not in targets and not f.type.nullable and f.name not in defaults:
                raise _error(stmt, f"Non-nullable column '{f.name}' is not in the column list and has no "
                                   "default value", sqlstate="23502")
    types = {f.name: f.type for f in table.schema.fields}
    options = write_options(ctx, table, {})
    null_if = fmt.options.get("NULL_IF", ())
    return CopyIntoTable(
        table=with_options(table, options), source=node.source, format=fmt.type,
        reader_options=reader_options(fmt),
        null_if=(null_if,) if isinstance(null_if, str) else tuple(null_if),
        empty_as_null=_text(fmt.options.get("EMPTY_FIELD_AS_NULL", "FALSE")).upper() == "TRUE",
        columns=targets, casts=tuple(ctx.cast_type(types[c]) for c in targets),
        strings=tuple(types[c].root in (TypeRoot.CHAR, TypeRoot.VARCHAR) for c in targets),
        pattern=node.pattern, force=node.force, on_error=node.on_error, options=options,
    )


def plan_copy_to_location(ctx: PlannerContext, node: ast.CopyIntoLocation, stmt: Statement) -> Plan:
    fmt = node.file_format
    _check_format(fmt, EXPORT_KEYS, "export", stmt)
    if isinstance(node.source, ast.TableName):
        sql = f"SELECT * FROM {table_sql(node.source)}"
    else:
        sql = node.source.text
    frame = ctx.frame(sql, stmt)
    options = {_WRITER[fmt.type][k]: (_text(v).lower() if k == "HEADER" else _text(v))
               for k, v in fmt.options.items()}
    return CopyToLocation(frame=frame, target=node.target, format=fmt.type.lower(), options=options,
                          overwrite=node.overwrite)


PLANNERS: dict[type, Planner] = {
    ast.CopyInto: plan_copy_into,
    ast.CopyIntoLocation: plan_copy_to_location,
}
