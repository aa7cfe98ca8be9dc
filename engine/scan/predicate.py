"""Row predicates: one small immutable tree used three ways.

* ``to_arrow`` — an exact, vectorised filter over Arrow data (SQL three-valued logic: a
  comparison with NULL is unknown and the row is dropped; floating-point NaN compares as Spark and
  Java Paimon order it — equal to itself and greater than every other value — not as IEEE does);
* ``might_match`` — a conservative test against per-file or per-manifest min/max/null-count
  statistics (True unless the statistics prove no row can match; min/max do not reliably bound
  NaN, so a comparison that NaN could satisfy never skips on them): used for skipping;
* ``eval_row`` — an exact test against one row of Python values (partition values).

Predicates are picklable so Spark can ship them to executors with the splits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError

_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_OPS = _COMPARISONS + ("in", "not_in", "is_null", "is_not_null", "starts_with")


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """What a file or manifest knows about one column (None = unknown)."""

    min: Any = None
    max: Any = None
    null_count: int | None = None


class Predicate:
    """Base of the predicate tree."""

    def columns(self) -> set[str]:
        raise NotImplementedError

    def to_arrow(self, floats: frozenset[str] = frozenset()) -> pc.Expression:
        """The exact filter; ``floats`` names the floating-point columns (NaN-aware comparisons)."""
        raise NotImplementedError

    def might_match(self, stats: Mapping[str, ColumnStats], row_count: int) -> bool:
        raise NotImplementedError

    def eval_row(self, row: Mapping[str, Any]) -> bool | None:
        raise NotImplementedError

    def __and__(self, other: Predicate) -> Predicate:
        combined = and_(self, other)
        assert combined is not None  # and_ answers None only when it is given no predicate
        return combined

    def __or__(self, other: Predicate) -> Predicate:
        combined = or_(self, other)
        assert combined is not None
        return combined


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _nan_last(value: Any) -> tuple[int, Any]:
    """A sort key that puts NaN after every number and equal to itself (Spark's and Java's order)."""
    return (1, 0.0) if _is_nan(value) else (0, value)


def _nan_aware(op: str, f: pc.Expression, value: Any) -> pc.Expression:
    """``f <op> value`` on a floating-point column with NaN ordered as Spark orders it."""
    nan = pc.is_nan(f)
    if _is_nan(value):
        known = (f == f) | nan  # true on every value, unknown on NULL (so NOT keeps NULL unknown)
        return {
            "eq": nan,
            "ne": ~nan,
            "lt": ~nan,
            "le": known,
            "gt": ~known,
            "ge": nan,
        }[op]
    return {
        "eq": f == value,
        "ne": f != value,  # IEEE: NaN != x is true, as in Spark
        "lt": f < value,  # IEEE: NaN < x is false, as in Spark
        "le": f <= value,
        "gt": (f > value) | nan,
        "ge": (f >= value) | nan,
    }[op]


def _nan_could_match(op: str, literals: tuple[Any, ...], lo: Any, hi: Any) -> bool:
    """Whether NaN, which min/max statistics may leave out (pyarrow skips it, Java orders it last),
    could satisfy the comparison on a floating-point column: then the statistics cannot refute it."""
    if not any(isinstance(x, float) for x in (lo, hi, *literals)):
        return False
    if any(_is_nan(x) for x in (lo, hi, *literals)):
        return True
    return op in ("gt", "ge", "ne")


def _exact_timestamp(value: Any) -> Any:
    """A pandas ``Timestamp`` with nanoseconds as ``numpy.datetime64[ns]``, which is what statistics
    decode such values to: numpy compares a ``Timestamp`` at microsecond precision, so the bounds
    of a file holding exactly the literal would refute it."""
    if not getattr(value, "nanosecond", 0):
        return value
    return np.datetime64(int(value.value), "ns")  # .value: epoch nanoseconds (UTC when aware)


@dataclass(frozen=True, slots=True)
class Leaf(Predicate):
    op: str
    column: str
    literals: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise InvalidArgumentError(f"unknown predicate operator '{self.op}'")
        if any(getattr(v, "nanosecond", 0) for v in self.literals):
            object.__setattr__(self, "literals", tuple(_exact_timestamp(v) for v in self.literals))

    def columns(self) -> set[str]:
        return {self.column}

    def to_arrow(self, floats: frozenset[str] = frozenset()) -> pc.Expression:
        f = pc.field(self.column)
        op, lits = self.op, self.literals
        if op == "is_null":
            return f.is_null()
        if op == "is_not_null":
            return f.is_valid()
        if op == "in":
            return f.isin([v for v in lits if v is not None])
        if op == "not_in":
            if any(v is None for v in lits):
                return pc.scalar(False)
            return ~f.isin(list(lits)) & f.is_valid()
        if op == "starts_with":
            return pc.starts_with(f, lits[0])
        value = lits[0]
        if value is None:
            return pc.scalar(False)
        if self.column in floats:
            return _nan_aware(op, f, value)
        return {
            "eq": f == value,
            "ne": f != value,
            "lt": f < value,
            "le": f <= value,
            "gt": f > value,
            "ge": f >= value,
        }[op]

    def might_match(self, stats: Mapping[str, ColumnStats], row_count: int) -> bool:
        s = stats.get(self.column)
        if s is None:
            return True
        op = self.op
        nulls = s.null_count
        if op == "is_null":
            return nulls is None or nulls > 0
        if op == "is_not_null":
            return nulls is None or nulls < row_count
        if nulls is not None and row_count and nulls >= row_count:
            return False  # every value is NULL: no comparison can be true
        lo, hi = s.min, s.max
        if lo is None or hi is None:
            return True
        if _nan_could_match(op, self.literals, lo, hi):
            return True
        try:
            if op == "eq":
                v = self.literals[0]
                return v is not None and lo <= v <= hi
            if op == "ne":
                v = self.literals[0]
                return not (lo == hi == v)
            if op == "lt":
                return lo < self.literals[0]
            if op == "le":
                return lo <= self.literals[0]
            if op == "gt":
                return hi > self.literals[0]
            if op == "ge":
                return hi >= self.literals[0]
            if op == "in":
                return any(v is not None and lo <= v <= hi for v in self.literals)
            if op == "starts_with":
                prefix = self.literals[0]
                return str(lo)[: len(prefix)] <= prefix <= str(hi)[: len(prefix)]
        except TypeError:
            return True  # incomparable literal (e.g. truncated stats of another type): do not skip
        return True

    def eval_row(self, row: Mapping[str, Any]) -> bool | None:
        v = row.get(self.column)
        op = self.op
        if op == "is_null":
            return v is None
        if op == "is_not_null":
            return v is not None
        if v is None:
            return None
        if op == "in":
            return v in self.literals
        if op == "not_in":
            return None if None in self.literals else v not in self.literals
        if op == "starts_with":
            return str(v).startswith(self.literals[0])
        lit = self.literals[0]
        if lit is None:
            return None
        if _is_nan(v) or _is_nan(lit):
            v, lit = _nan_last(v), _nan_last(lit)
        try:
            return {
                "eq": v == lit,
                "ne": v != lit,
                "lt": v < lit,
                "le": v <= lit,
                "gt": v > lit,
                "ge": v >= lit,
            }[op]
        except TypeError:
            return str(v) == str(lit) if op == "eq" else None


@dataclass(frozen=True, slots=True)
class And(Predicate):
    children: tuple[Predicate, ...]

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))

    def to_arrow(self, floats: frozenset[str] = frozenset()) -> pc.Expression:
        expr = self.children[0].to_arrow(floats)
        for c in self.children[1:]:
            expr = expr & c.to_arrow(floats)
        return expr

    def might_match(self, stats: Mapping[str, ColumnStats], row_count: int) -> bool:
        return all(c.might_match(stats, row_count) for c in self.children)

    def eval_row(self, row: Mapping[str, Any]) -> bool | None:
        result: bool | None = True
        for c in self.children:
            r = c.eval_row(row)
            if r is False:
                return False
            if r is None:
                result = None
        return result


@dataclass(frozen=True, slots=True)
class Or(Predicate):
    children: tuple[Predicate, ...]

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))

    def to_arrow(self, floats: frozenset[str] = frozenset()) -> pc.Expression:
        expr = self.children[0].to_arrow(floats)
        for c in self.children[1:]:
            expr = expr | c.to_arrow(floats)
        return expr

    def might_match(self, stats: Mapping[str, ColumnStats], row_count: int) -> bool:
        return any(c.might_match(stats, row_count) for c in self.children)

    def eval_row(self, row: Mapping[str, Any]) -> bool | None:
        result: bool | None = False
        for c in self.children:
            r = c.eval_row(row)
            if r is True:
                return True
            if r is None:
                result = None
        return result


@dataclass(frozen=True, slots=True)
class Not(Predicate):
    child: Predicate

    def columns(self) -> set[str]:
        return self.child.columns()

    def to_arrow(self, floats: frozenset[str] = frozenset()) -> pc.Expression:
        return ~self.child.to_arrow(floats)

    def might_match(self, stats: Mapping[str, ColumnStats], row_count: int) -> bool:
        return True  # statistics cannot refute a negation in general

    def eval_row(self, row: Mapping[str, Any]) -> bool | None:
        r = self.child.eval_row(row)
        return None if r is None else not r


# -- constructors ----------------------------------------------------------------------------
def equal(column: str, value: Any) -> Predicate:
    return Leaf("eq", column, (value,))


def not_equal(column: str, value: Any) -> Predicate:
    return Leaf("ne", column, (value,))


def less_than(column: str, value: Any) -> Predicate:
    return Leaf("lt", column, (value,))


def less_or_equal(column: str, value: Any) -> Predicate:
    return Leaf("le", column, (value,))


def greater_than(column: str, value: Any) -> Predicate:
    return Leaf("gt", column, (value,))


def greater_or_equal(column: str, value: Any) -> Predicate:
    return Leaf("ge", column, (value,))


def is_in(column: str, values: Iterable[Any]) -> Predicate:
    return Leaf("in", column, tuple(values))


def not_in(column: str, values: Iterable[Any]) -> Predicate:
    return Leaf("not_in", column, tuple(values))


def is_null(column: str) -> Predicate:
    return Leaf("is_null", column)


def is_not_null(column: str) -> Predicate:
    return Leaf("is_not_null", column)


def starts_with(column: str, prefix: str) -> Predicate:
    return Leaf("starts_with", column, (prefix,))


def and_(*predicates: Predicate | None) -> Predicate | None:
    parts: list[Predicate] = []
    for p in predicates:
        if p is None:
            continue
        parts.extend(p.children if isinstance(p, And) else (p,))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def or_(*predicates: Predicate) -> Predicate:
    parts: list[Predicate] = []
    for p in predicates:
        parts.extend(p.children if isinstance(p, Or) else (p,))
    return parts[0] if len(parts) == 1 else Or(tuple(parts))


def not_(predicate: Predicate) -> Predicate:
    return Not(predicate)


def any_partition(specs: Sequence[Mapping[str, Any]] | None) -> Predicate | None:
    """Rows of any of the partition specs (each a column → value mapping); None for no specs."""
    if not specs or any(not spec for spec in specs):  # an empty spec selects every partition
        return None
    return or_(*[And(tuple(equal(k, v) for k, v in spec.items())) for spec in specs])


def conjuncts(predicate: Predicate | None) -> list[Predicate]:
    if predicate is None:
        return []
    return list(predicate.children) if isinstance(predicate, And) else [predicate]


def split_by_columns(
    predicate: Predicate | None, columns: Sequence[str]
) -> tuple[Predicate | None, Predicate | None]:
    """Split conjuncts into (those only on ``columns``, the rest)."""
    wanted = set(columns)
    inside = [c for c in conjuncts(predicate) if c.columns() and c.columns() <= wanted]
    outside = [c for c in conjuncts(predicate) if not (c.columns() and c.columns() <= wanted)]
    return and_(*inside), and_(*outside)


def equality_values(predicate: Predicate | None, columns: Sequence[str]) -> list[tuple[Any, ...]] | None:
    """The value combinations ``columns`` are pinned to by top-level equality/IN conjuncts, if all are."""
    pinned: dict[str, tuple[Any, ...]] = {}
    for c in conjuncts(predicate):
        if isinstance(c, Leaf) and c.column in columns and c.op in ("eq", "in"):
            values = tuple(v for v in c.literals if v is not None)
            if c.column in pinned:
                values = tuple(v for v in pinned[c.column] if v in values)
            pinned[c.column] = values
    if any(col not in pinned for col in columns):
        return None
    combos: list[tuple[Any, ...]] = [()]
    for col in columns:
        combos = [combo + (v,) for combo in combos for v in pinned[col]]
        if len(combos) > 1024:
            return None
    return combos


def filter_table(table: pa.Table, predicate: Predicate | None) -> pa.Table:
    """Apply a predicate exactly to an Arrow table."""
    if predicate is None or table.num_rows == 0:
        return table
    floats = frozenset(f.name for f in table.schema if pa.types.is_floating(f.type))
    return table.filter(predicate.to_arrow(floats))


def to_json(predicate: Predicate | None) -> str:
    """A JSON form of a predicate tree (leaf values must be JSON scalars)."""
    import json

    def enc(p: Predicate) -> object:
        if isinstance(p, Leaf):
            return {"op": p.op, "column": p.column, "values": list(p.literals)}
        if isinstance(p, And):
            return {"and": [enc(c) for c in p.children]}
        if isinstance(p, Or):
            return {"or": [enc(c) for c in p.children]}
        if isinstance(p, Not):
            return {"not": enc(p.child)}
        raise InvalidArgumentError(f"cannot serialise predicate {p!r}")

    return json.dumps(None if predicate is None else enc(predicate))


def from_json(text: str, convert: Callable[[str, Any], Any] | None = None) -> Predicate | None:
    """Parse :func:`to_json` output; ``convert(column, value)`` may coerce literals to column types."""
    import json

    def dec(obj: Any) -> Predicate:
        if not isinstance(obj, dict):
            raise InvalidArgumentError(f"bad predicate JSON element {obj!r}")
        if "op" in obj:
            values = tuple(convert(obj["column"], v) if convert else v for v in obj.get("values", ()))
            return Leaf(obj["op"], obj["column"], values)
        if "and" in obj:
            return And(tuple(dec(c) for c in obj["and"]))
        if "or" in obj:
            return Or(tuple(dec(c) for c in obj["or"]))
        if "not" in obj:
            return Not(dec(obj["not"]))
        raise InvalidArgumentError(f"bad predicate JSON element {obj!r}")

    try:
        parsed = json.loads(text)
    except ValueError as e:
        raise InvalidArgumentError(f"predicate is not valid JSON: {e}") from None
    return None if parsed is None else dec(parsed)
