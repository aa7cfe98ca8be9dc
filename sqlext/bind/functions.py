"""Paimon's incremental table-valued functions in a Spark statement, bound like table references.

``paimon_incremental_query('t', start, end)``, ``paimon_incremental_between_timestamp('t', t1,
t2)`` and ``paimon_incremental_to_auto_tag('t', tag)`` may stand wherever a table can (joins,
subqueries, CTEs, INSERT … SELECT). As in Paimon's Spark integration, a call resolves to the
table its first argument names (``[dyntable.][db.]t``, a branch, ``t$audit_log`` or
``t$binlog``), read with the one option its other arguments set (``incremental-between``,
``incremental-between-timestamp``, ``incremental-to-auto-tag``): the binder replaces the call by a
fresh view like any managed reference, and the reference's options carry that option to the
read request, where the session's and the table's scan-mode options join it.
"""

from __future__ import annotations

from typing import Protocol

from sqlglot import Token, TokenType, exp

from engine.errors import InvalidArgumentError
from sqlext.bind.clauses import token_index
from sqlext.bind.scope import INCREMENTAL_FUNCTIONS, Reference, Source
from sqlext.errors import (
    UNDEFINED_TABLE,
    SqlAnalysisError,
    SqlError,
    SqlParseError,
    UnsupportedStatementError,
)
from sqlext.parse.names import TableName

MANAGED_CATALOG = "dyntable"


class _Managed(Protocol):
    def is_managed(self, database: str, table: str) -> bool: ...


class _Binder(Protocol):
    """What a call's binding needs of the statement's binder (``sqlext.bind.rewrite``)."""

    @property
    def catalog(self) -> _Managed: ...

    @property
    def current(self) -> str: ...

    @property
    def tokens(self) -> list[Token]: ...

    def error(
        self, cls: type[SqlError], message: str, offset: int, sqlstate: str | None = None
    ) -> SqlError: ...

    def located(self, name: TableName, start: int) -> TableName: ...

    def table_columns(self, name: TableName, start: int) -> list[str]: ...



def incremental_source(binder: _Binder, node: exp.Table) -> Source:
    """A call of one of Paimon's incremental table-valued functions: a reference to the table
    its first argument names, read with the option its other arguments set (Paimon resolves
    the call to the table with that option; ``INCREMENTAL_FUNCTIONS``)."""
    call = node.this
    function = str(call.name).lower()
    option, params = INCREMENTAL_FUNCTIONS[function]
    start = int(call.meta["start"])
    end = call_end(binder, start)
    args = list(call.expressions)
    if len(args) != 1 + len(params):
        raise binder.error(
            SqlAnalysisError,
            f"{function} takes {1 + len(params)} arguments (the table name, {', '.join(params)}),"
            f" not {len(args)}",
            start, "42605",
        )
    if not all(isinstance(a, exp.Literal) for a in args):
        raise binder.error(
            UnsupportedStatementError,
            f"{function} takes literal arguments: the table name as a string, then strings or numbers",
            start,
        )
    values = [str(a.this) for a in args]
    try:
        parsed = TableName.parse(values[0])
    except InvalidArgumentError as e:
        raise binder.error(SqlAnalysisError, f"{function}: {e}", start, UNDEFINED_TABLE) from None
    database = parsed.database or binder.current
    if (parsed.catalog or MANAGED_CATALOG).lower() != MANAGED_CATALOG or not binder.catalog.is_managed(
        database, parsed.table
    ):
        raise binder.error(
            SqlAnalysisError,
            f"{function}: {values[0]!r} is not a dyntable table: check the name, or create the table first",
            start, UNDEFINED_TABLE,
        )
    if parsed.system_table not in (None, "audit_log", "binlog"):
        raise binder.error(
            SqlAnalysisError,
            f"{function} reads a table, a branch, or their $audit_log or $binlog, not"
            f" ${parsed.system_table}",
            start, "42809",
        )
    name = TableName(None, database, parsed.table, parsed.branch, parsed.system_table)
    name = binder.located(name, start)
    alias_node = node.args.get("alias")
    alias = alias_node.name if alias_node is not None and alias_node.name else None
    alias_columns = None
    if alias_node is not None and alias_node.columns:
        alias_columns = frozenset(c.name.lower() for c in alias_node.columns)
    ref = Reference(
        table=name, start=start, end=end, removals=[], options={option: ",".join(values[1:])},
        time_travel=None, table_columns=tuple(binder.table_columns(name, start)), alias_text=None,
        alias_columns=alias_columns,
    )
    if alias_columns is not None:
        ref.need_all()
    return Source(frozenset({(alias.lower(),)}) if alias else frozenset(), ref, alias_columns)


def call_end(binder: _Binder, start: int) -> int:
    """The end of the function call whose name starts at ``start`` (after its closing parenthesis)."""
    depth = 0
    for tok in binder.tokens[token_index(binder.tokens, start):]:
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return tok.end + 1
    raise binder.error(SqlParseError, "unbalanced parentheses in a table-valued function call", start)

