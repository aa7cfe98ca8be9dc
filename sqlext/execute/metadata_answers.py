"""Aggregate queries answered from a managed table's manifests, without a Spark job.

A narrow recogniser: exactly ``SELECT count(*) | count(1) | min(c) | max(c) [AS a] [, ...] FROM
<managed table> [WHERE <conjuncts on partition columns only>]``, read now (the latest snapshot,
no time travel, branch, system table, hint or session dynamic option, not in streaming mode, not
shadowed by a cached table or temporary view). ``engine.aggregate_from_metadata`` applies
Paimon's rule; when it says no — or anything else is in the statement — the caller runs the
statement through Spark as before. The answer is a one-row DataFrame built from Arrow, so
collecting it starts no job.

Partition conjuncts are ``col <op> literal``, ``col IN (literals)`` and ``col IS [NOT] NULL``,
where the literal has the column's kind (a string for a string column, an integer for an integer
column): a literal Spark would cast is left to Spark, so the engine's comparison is Spark's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

from engine import MetadataAggregate, aggregate_from_metadata, type_allows_minmax
from engine import predicate as P
from engine.types import TypeRoot
from sqlext.parse.names import TableName
from sqlext.source.session_conf import session_conf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Every select item is an aggregate, so the first one starts the statement.
_CANDIDATE = re.compile(r"\s*select\s+(count|min|max)\s*\(", re.IGNORECASE)
_OPS = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
_INTEGERS = {TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT}
_STRINGS = {TypeRoot.VARCHAR}  # CHAR(n) compares padded in Spark: left to Spark
_UNSUPPORTED_ARGS = ("joins", "group", "having", "order", "limit", "offset", "distinct", "with",
                     "windows", "qualify", "laterals", "pivots", "sample", "cluster", "sort", "distribute")


class _No(Exception):  # noqa: N818 - control flow: the statement is not one this module answers
    pass


def answer_from_metadata(session: Any, text: str) -> DataFrame | None:
    """The statement's result from metadata, or None to run it through Spark."""
    if not _CANDIDATE.match(text) or "/*" in text or "$" in text:
        # cheap: most statements stop here; a hint may change what is read; ``t$branch_b`` and
        # ``t$files`` are other tables (and sqlglot does not keep an unquoted ``$`` in a name)
        return None
    if session.streaming or session_conf(session.spark):
        return None
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except (sqlglot.errors.SqlglotError, RecursionError):
        return None
    try:
        return _answer(session, tree)
    except _No:
        return None


def _answer(session: Any, tree: Any) -> DataFrame:
    if not isinstance(tree, exp.Select) or any(tree.args.get(a) for a in _UNSUPPORTED_ARGS):
        raise _No
    if tree.find(exp.Hint) is not None:
        raise _No
    source = tree.args.get("from_") or tree.args.get("from")
    if source is None or not isinstance(source.this, exp.Table):
        raise _No
    ref: exp.Table = source.this
    if ref.args.get("version") or ref.args.get("when") or ref.args.get("catalog") or ref.args.get("joins"):
        raise _No
    if ref.args.get("hints") or ref.args.get("sample") or "$" in ref.name or not ref.name:
        raise _No
    name = TableName(None, ref.db or None, ref.name)
    key = ref.name.lower()
    if not ref.db and (key in session.temp_views or key in session.cached):
        raise _No
    if key in session.cached or not session.is_managed(name) or session.format_table(name) is not None:
        raise _No  # a format table has no manifests: Spark counts its files
    table = session.table(name)
    schema = table.schema
    alias = ref.alias_or_name
    aggregates, names = _aggregates(tree.expressions, schema, alias)
    where = tree.args.get("where")
    pred = _partition_filter(where.this, schema, alias) if where is not None else None
    values = aggregate_from_metadata(table.new_read_builder(), aggregates, pred)
    if values is None:
        raise _No
    fields = []
    arrays = []
    for a, n, v in zip(aggregates, names, values, strict=True):
        f = pa.field(n, pa.int64(), nullable=False) if a.column is None else \
            schema.arrow_schema().field(a.column).with_name(n).with_nullable(True).remove_metadata()
        fields.append(f)
        arrays.append(pa.array([v], f.type))
    frame: DataFrame = session.arrow_frame(pa.Table.from_arrays(arrays, schema=pa.schema(fields)))
    return frame


def _column(node: exp.Expression, schema: Any, alias: str) -> str:
    if not isinstance(node, exp.Column) or (node.table and node.table.lower() != alias.lower()):
        raise _No
    name = next((c for c in schema.field_names if c.lower() == node.name.lower()), None)
    if name is None:
        raise _No
    return name


def _aggregates(
    items: list[exp.Expression], schema: Any, alias: str
) -> tuple[list[MetadataAggregate], list[str]]:
    aggregates: list[MetadataAggregate] = []
    names: list[str] = []
    for item in items:
        given = item.alias if isinstance(item, exp.Alias) else None
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Count):
            arg = node.this
            if not (isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and arg.this == "1"
                                                   and not arg.is_string)):
                raise _No
            if node.args.get("distinct") or node.args.get("expressions"):
                raise _No
            aggregates.append(MetadataAggregate("count"))
            names.append(given or "count(1)")  # Spark names count(*) count(1) too
        elif isinstance(node, exp.Min | exp.Max) and not node.expressions:
            col = _column(node.this, schema, alias)
            if not type_allows_minmax(schema.field(col).type.root):
                raise _No
            kind = "min" if isinstance(node, exp.Min) else "max"
            aggregates.append(MetadataAggregate(kind, col))
            names.append(given or f"{kind}({node.this.name})")  # Spark names it as written
        else:
            raise _No
    if not aggregates:
        raise _No
    return aggregates, names


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


def _literal(node: exp.Expression, root: TypeRoot) -> object:
    if root in _STRINGS and isinstance(node, exp.Literal) and node.is_string:
        return node.this
    if root in _INTEGERS:
        negative = isinstance(node, exp.Neg)
        inner = node.this if negative else node
        if isinstance(inner, exp.Literal) and not inner.is_string and inner.this.isdigit():
            return -int(inner.this) if negative else int(inner.this)
    raise _No


def _leaf(node: exp.Expression, schema: Any, alias: str, partitions: set[str]) -> P.Predicate:
    def part(col_node: exp.Expression) -> tuple[str, TypeRoot]:
        col = _column(col_node, schema, alias)
        if col not in partitions:
            raise _No
        return col, schema.field(col).type.root

    for kind, op in _OPS.items():
        if isinstance(node, kind):
            left, right = node.this, node.expression
            flip = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
            if not isinstance(left, exp.Column):
                left, right, op = right, left, flip.get(op, op)
            col, root = part(left)
            return P.Leaf(op, col, (_literal(right, root),))
    if isinstance(node, exp.In) and not node.args.get("query") and node.expressions:
        col, root = part(node.this)
        return P.is_in(col, [_literal(e, root) for e in node.expressions])
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return P.is_null(part(node.this)[0])
    negated = node.this if isinstance(node, exp.Not) else None
    if isinstance(negated, exp.Is) and isinstance(negated.expression, exp.Null):
        return P.is_not_null(part(negated.this)[0])
    raise _No


def _partition_filter(where: exp.Expression, schema: Any, alias: str) -> P.Predicate | None:
    partitions = set(schema.partition_keys)
    if not partitions:
        raise _No
    return P.and_(*[_leaf(c, schema, alias, partitions) for c in _conjuncts(where)])
