"""What a SQL write does to its table before any row moves: the write's resolved options, and the
schema version a merge-schema write publishes with its data.

Options: the session's ``SET spark.paimon.*`` keys for the table (global, then per table), then
the statement's hints; every table option among them is checked here, so a write that could not
honour one is refused while planning. Schema evolution (``write.merge-schema``, Paimon's rules in
``engine.schema_merge``): the columns a by-name write brings (an ``INSERT … BY NAME`` query, the
source of ``MERGE … UPDATE SET * / INSERT *``) are merged into the latest schema; the version
that results is not published here but by the write's commit, just before its snapshot.
Planner-side: nothing here imports Spark or the session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from engine import Table
from engine.arrow_types import to_arrow_type
from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import Column, PlannerContext
from sqlext.parse.splitter import Statement
from sqlext.source.dynamic import session_overrides, table_overrides

CASE_SENSITIVE = "spark.sql.caseSensitive"


def _error(stmt: Statement, message: str, sqlstate: str) -> SqlAnalysisError:
    return SqlAnalysisError(message, line=stmt.line, column=stmt.column, sqlstate=sqlstate)


def write_options(ctx: PlannerContext, table: Table, hints: Mapping[str, str]) -> dict[str, str]:
    """A write's resolved options: the session's ``SET spark.paimon.*`` keys for the table (global,
    then per table), then the statement's hints; each table option among them is checked."""
    ident = table.identifier
    options = {**session_overrides(ctx.options, ident.database, ident.table), **hints}
    table_overrides(options)  # an unknown, immutable or malformed option is refused here
    return options


def with_options(table: Table, options: Mapping[str, str]) -> Table:
    """``table`` with the table options among a write's ``options`` applied (nothing stored)."""
    overrides = table_overrides(options)
    return table.with_options(overrides) if overrides else table


def case_sensitive(ctx: PlannerContext) -> bool:
    """Whether names match case-sensitively (the SQL engine's setting; Spark's default: no)."""
    return (ctx.engine_setting(CASE_SENSITIVE) or "false").strip().lower() == "true"


def evolved_for(
    ctx: PlannerContext, table: Table, columns: Sequence[Column], stmt: Statement
) -> Table:
    """``table`` at the schema that takes ``columns`` (by name), not yet published, when the table
    (with the write's options) has ``write.merge-schema``; else ``table`` itself.

    Raises:
        SqlAnalysisError: a column has no Paimon type (an untyped NULL) or two columns share a name.
        SchemaMergeError: the columns cannot evolve the schema by Paimon's rules.
    """
    if not table.core_options.write_merge_schema:
        return table
    sensitive = case_sensitive(ctx)
    seen: set[str] = set()
    fields = []
    for c in columns:
        key = c.name if sensitive else c.name.lower()
        if key in seen:
            raise _error(stmt, f"cannot write to '{table.name}' by name due to ambiguous column name "
                         f"`{c.name}`", "42702")
        seen.add(key)
        if c.dtype is None:
            raise _error(stmt, f"column `{c.name}` ({c.type_text}) has no table type: cast it "
                         f"(e.g. CAST(NULL AS STRING) AS {c.name})", "42804")
        fields.append(pa.field(c.name, to_arrow_type(c.dtype), c.nullable))
    return table.for_data(pa.schema(fields), case_sensitive=sensitive)
