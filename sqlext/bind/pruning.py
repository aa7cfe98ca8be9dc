"""Pushdown for bound queries: simple WHERE conjuncts and a plain LIMIT handed to the data source.

Spark pushes no filters into Python sources unless told to, and pushed filters are unsafe on
reused relations, so the session extracts them itself: for every SELECT that reads exactly one
per-statement view (no join, no lateral view, no sample) used nowhere else in the statement, the
top-level AND-ed conjuncts of the form ``col <op> literal``, ``col IN (literals)``,
``col IS [NOT] NULL`` become a predicate the source uses to skip partitions, buckets and files,
and to drop rows after the merge (the rows of the view reach nothing but that WHERE, so a row
that fails a conjunct can never be part of the answer; Spark still applies the WHERE itself).

A conjunct is translated only where the engine's comparison is Spark's on every row: the
literal's kind must be the column's (an integer on an integer or DECIMAL column; a number on a
DOUBLE, decimal text of at most 15 digits, which Spark and Python convert to the same double; a
string without escapes on a STRING/VARCHAR column, or a ``yyyy-MM-dd`` string on a DATE; a
boolean on a BOOLEAN, equality only). Anything else — a string compared with a number (Spark
casts the column), FLOAT (Spark widens it to DOUBLE, the engine narrows the literal), CHAR(n)
(padded by Spark), timestamps (the session time zone) — is not pushed at all.

``LIMIT n`` (with ``OFFSET m``: n + m rows) of such a SELECT is pushed too when nothing between the
rows and the limit can drop or multiply rows: no GROUP BY, DISTINCT, HAVING, ORDER BY, window,
aggregate or generator, and a WHERE translated whole. The source then stops each split after that
many rows (Spark keeps the global limit).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from engine import predicate as P
from engine.types import DataType, TypeRoot

_INTEGERS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT})
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: Projections that map one row to one row (anything else may need more rows than the limit).
_ROW_WISE = (exp.Column, exp.Star, exp.Literal, exp.Alias, exp.Cast, exp.Dot, exp.Paren, exp.Identifier,
             exp.Null, exp.Boolean)


@dataclass(frozen=True)
class Pushdown:
    """What one view's reader may use: ``filter`` (every conjunct exact, see the module
    docstring) and ``limit`` (rows per split that are enough; None: all)."""

    filter: P.Predicate | None = None
    limit: int | None = None

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
                number = float(text)
            except ValueError:
                return False, None
            # Spark reads 0.7 as a DECIMAL and converts it to a double exactly as Python does
            # only up to 15 significant digits (above, its long-backed conversion may round twice);
            # with an exponent it is a DOUBLE literal, parsed as Python parses it.
            digits = len(re.sub(r"[^0-9]", "", text.split("e")[0].split("E")[0]).lstrip("0"))
            return ("e" in text.lower() or digits <= 15), number
    if isinstance(node, exp.Boolean):
        return True, bool(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        ok, value = _literal(node.this)
        return (ok and isinstance(value, int | float)), (
            -value if ok and isinstance(value, int | float) else None
        )
    return False, None


def _fits(value: object, kind: DataType, op: str) -> bool:
    """Whether the engine compares ``value`` with a column of type ``kind`` as Spark does."""
    root = kind.root
    if isinstance(value, bool):
        return root is TypeRoot.BOOLEAN and op in ("eq", "ne", "in")
    if isinstance(value, int):
        return root in _INTEGERS or root in (TypeRoot.DOUBLE, TypeRoot.DECIMAL)
    if isinstance(value, float):
        return root is TypeRoot.DOUBLE
    if isinstance(value, str):
        if root is TypeRoot.DATE:
            return _ISO_DATE.fullmatch(value) is not None
        return root is TypeRoot.VARCHAR and "\\" not in value
    return False


def _column(node: exp.Expression, alias: str, columns: Mapping[str, DataType]) -> str | None:
    if not isinstance(node, exp.Column):
        return None
    if node.table and node.table != alias:
        return None
    name = node.name
    return next((c for c in columns if c.lower() == name.lower()), None)


def _leaf(node: exp.Expression, alias: str, columns: Mapping[str, DataType]) -> P.Predicate | None:
    for kind, op in _OPS.items():
        if isinstance(node, kind):
            left, right = node.this, node.expression
            col = _column(left, alias, columns)
            ok, value = _literal(right)
            if col is None:
                col = _column(right, alias, columns)
                ok, value = _literal(left)
                op = _FLIP[op]
            if col is None or not ok or not _fits(value, columns[col], op):
                return None
            return P.Leaf(op, col, (value,))
    if isinstance(node, exp.In) and not node.args.get("query"):
        col = _column(node.this, alias, columns)
        values = [_literal(e) for e in node.expressions]
        if (col is not None and values and all(ok for ok, _ in values)
                and all(_fits(v, columns[col], "in") for _, v in values)):
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


def extract(sql: str, views: Mapping[str, Mapping[str, DataType]]) -> dict[str, P.Predicate]:
    """Pruning predicates per view name (``views``: view → its pushable columns and their types)."""
    return {v: p.filter for v, p in pushdown(sql, views).items() if p.filter is not None}


def pushdown(sql: str, views: Mapping[str, Mapping[str, DataType]]) -> dict[str, Pushdown]:
    """The filter and limit each view's reader may apply (``views``: view → its pushable columns
    and their types; columns left out are never pushed on)."""
    if not views:
        return {}
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.SqlglotError:
        return {}
    uses = Counter(t.name for t in tree.find_all(exp.Table) if t.name in views)
    out: dict[str, Pushdown] = {}
    for select in tree.find_all(exp.Select):
        source = select.args.get("from_") or select.args.get("from")
        if (
            select.args.get("joins")
            or select.args.get("laterals")
            or source is None
            or not isinstance(source.this, exp.Table)
        ):
            continue
        table = source.this
        if (table.name not in views or uses[table.name] != 1
                or table.args.get("sample") or table.args.get("pivots")):
            continue
        where = select.args.get("where")
        conjuncts = _conjuncts(where.this) if where is not None else []
        leaves = [_leaf(c, table.alias_or_name, views[table.name]) for c in conjuncts]
        predicate = P.and_(*[leaf for leaf in leaves if leaf is not None])
        whole = all(leaf is not None for leaf in leaves)
        limit = _limit(select) if whole else None
        if predicate is not None or limit is not None:
            out[table.name] = Pushdown(predicate, limit)
    return out


def _number(node: exp.Expression | None) -> int | None:
    if node is None:
        return 0
    value = node.args.get("expression") if isinstance(node, exp.Limit | exp.Offset) else None
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    return None


def _limit(select: exp.Select) -> int | None:
    """The rows per split that answer ``select``'s LIMIT (None: no plain LIMIT)."""
    limit = select.args.get("limit")
    if limit is None or any(select.args.get(k) for k in (
            "group", "having", "order", "distinct", "qualify", "windows", "sort", "cluster", "distribute")):
        return None
    if not all(all(isinstance(n, _ROW_WISE) for n in e.walk()) for e in select.expressions):
        return None  # an aggregate, a window, a generator or a function: leave it whole
    rows, skip = _number(limit), _number(select.args.get("offset"))
    return None if rows is None or skip is None else rows + skip
