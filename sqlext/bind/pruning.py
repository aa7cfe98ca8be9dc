"""Pruning predicates for bound queries: simple WHERE conjuncts handed to the data source.

Spark pushes no filters into Python sources unless told to, and pushed filters are unsafe on
reused relations, so the session extracts them itself: for every SELECT that reads exactly one
per-statement view (no join) used nowhere else in the statement, the top-level AND-ed conjuncts
of the form ``col <op> literal``, ``col IN (literals)``, ``col IS [NOT] NULL`` become a predicate
the source uses to skip partitions, buckets and files. Spark still applies the WHERE itself, so
a predicate that is merely weaker than the query can never change a result.
"""

from __future__ import annotations

from collections import Counter

import sqlglot
from sqlglot import exp

from engine import predicate as P

_OPS = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _literal(node: exp.Expression) -> tuple[bool, object]:
    if isinstance(node, exp.Literal):
        if node.is_string:
            return True, node.this
        text = node.this
        try:
            return True, int(text)
        except ValueError:
            try:
                return True, float(text)
            except ValueError:
                return False, None
    if isinstance(node, exp.Boolean):
        return True, bool(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        ok, value = _literal(node.this)
        return (ok and isinstance(value, int | float)), (
            -value if ok and isinstance(value, int | float) else None
        )
    return False, None


def _column(node: exp.Expression, alias: str, columns: set[str]) -> str | None:
    if not isinstance(node, exp.Column):
        return None
    if node.table and node.table != alias:
        return None
    name = node.name
    return next((c for c in columns if c.lower() == name.lower()), None)


def _leaf(node: exp.Expression, alias: str, columns: set[str]) -> P.Predicate | None:
    for kind, op in _OPS.items():
        if isinstance(node, kind):
            left, right = node.this, node.expression
            col = _column(left, alias, columns)
            ok, value = _literal(right)
            if col is None:
                col = _column(right, alias, columns)
                ok, value = _literal(left)
                op = _FLIP[op]
            return P.Leaf(op, col, (value,)) if col is not None and ok else None
    if isinstance(node, exp.In) and not node.args.get("query"):
        col = _column(node.this, alias, columns)
        values = [_literal(e) for e in node.expressions]
        if col is not None and values and all(ok for ok, _ in values):
            return P.is_in(col, [v for _, v in values])
        return None
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        col = _column(node.this, alias, columns)
        return P.is_null(col) if col else None
    if (
        isinstance(node, exp.Not)
        and isinstance(node.this, exp.Is)
        and isinstance(node.this.expression, exp.Null)
    ):
        col = _column(node.this.this, alias, columns)
        return P.is_not_null(col) if col else None
    if isinstance(node, exp.Paren):
        return _leaf(node.this, alias, columns)
    return None


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return _conjuncts(node.this)
    return [node]


def extract(sql: str, views: dict[str, list[str]]) -> dict[str, P.Predicate]:
    """Pruning predicates per view name (``views``: view → its column names)."""
    if not views:
        return {}
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.SqlglotError:
        return {}
    uses = Counter(t.name for t in tree.find_all(exp.Table) if t.name in views)
    out: dict[str, P.Predicate] = {}
    for select in tree.find_all(exp.Select):
        source = select.args.get("from_") or select.args.get("from")
        where = select.args.get("where")
        if (
            select.args.get("joins")
            or source is None
            or where is None
            or not isinstance(source.this, exp.Table)
        ):
            continue
        table = source.this
        if table.name not in views or uses[table.name] != 1:
            continue
        columns = set(views[table.name])
        leaves = [_leaf(c, table.alias_or_name, columns) for c in _conjuncts(where.this)]
        predicate = P.and_(*[leaf for leaf in leaves if leaf is not None])
        if predicate is not None:
            out[table.name] = predicate
    return out
