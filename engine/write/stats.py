"""Column statistics of a data file, computed vectorised and encoded as Paimon ``SimpleStats``.

Min/max come from ``pyarrow.compute.min_max`` per column (one pass each, no Python per row).
Strings follow ``metadata.stats-mode``: ``truncate(N)`` keeps the first N characters of the min
and rounds the truncated max up (its last kept character + 1), so the range still contains every
value; ``counts`` keeps only null counts; ``none`` writes empty statistics; ``full`` keeps all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from engine.meta.binary_row import serialize_row
from engine.meta.manifest import SimpleStats
from engine.scan.file_stats import stats_type
from engine.types import DataField, TypeRoot


def parse_stats_mode(mode: str) -> tuple[str, int | None]:
    mode = mode.strip().lower()
    if mode.startswith("truncate(") and mode.endswith(")"):
        return "truncate", int(mode[len("truncate(") : -1])
    return mode, None


def _truncate_max(value: str | bytes, n: int) -> str | bytes | None:
    if len(value) <= n:
        return value
    head = value[:n]
    if isinstance(head, bytes):
        for i in range(len(head) - 1, -1, -1):
            if head[i] < 0xFF:
                return head[:i] + bytes([head[i] + 1])
        return None
    for i in range(len(head) - 1, -1, -1):
        code = ord(head[i])
        if code < 0x10FFFF and not 0xD7FF <= code < 0xE000:
            return head[:i] + chr(code + 1)
    return None


def column_stats(
    column: pa.ChunkedArray | pa.Array, field: DataField, mode: str
) -> tuple[object, object, int]:
    """(min, max, null_count) of one column as Python values (None when unknown)."""
    nulls = column.null_count
    kind, length = parse_stats_mode(mode)
    if kind in ("none", "counts") or field.type.is_unordered or len(column) == nulls:
        return None, None, nulls
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py():
        # min_max leaves NaN out, but NaN sorts above every number in Spark and Paimon: bounds
        # without it would let a reader skip this file for ``x > 1.0``. Unknown bounds are safe.
        return None, None, nulls
    mm = pc.min_max(column)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if field.type.root is TypeRoot.TIMESTAMP_LTZ:
        pass  # as_py gives an aware datetime; the codec stores the UTC instant
    if kind == "truncate" and length is not None and isinstance(lo, str | bytes):
        lo = lo[:length]
        hi = _truncate_max(hi, length)
    return lo, hi, nulls


def compute_stats(table: pa.Table, fields: Sequence[DataField], mode: str = "truncate(16)") -> SimpleStats:
    """SimpleStats over ``fields`` (columns of ``table`` with those names), in that order."""
    if parse_stats_mode(mode)[0] == "none":
        return SimpleStats.EMPTY
    mins, maxs, nulls = [], [], []
    for f in fields:
        lo, hi, n = column_stats(table.column(f.name), f, mode)
        mins.append(lo)
        maxs.append(hi)
        nulls.append(n)
    types = [stats_type(f.type) for f in fields]
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))


class StatsAccumulator:
    """SimpleStats of a file written in pieces: per-piece min/max/null counts, merged (no re-read)."""

    def __init__(self, fields: Sequence[DataField], mode: str) -> None:
        self.fields = list(fields)
        self.mode = mode
        self._mins: list[Any] = [None] * len(self.fields)  # per-column Python scalars of one type
        self._maxs: list[Any] = [None] * len(self.fields)
        self._nulls = [0] * len(self.fields)
        self._unknown = [False] * len(self.fields)  # a piece had values but no usable bounds (e.g. NaN)

    def add(self, table: pa.Table) -> None:
        for i, f in enumerate(self.fields):
            column = table.column(f.name)
            lo, hi, n = column_stats(column, f, self.mode)
            self._nulls[i] += n
            if lo is None or hi is None:
                self._unknown[i] = self._unknown[i] or n < len(column)
                continue
            self._mins[i] = lo if self._mins[i] is None else min(self._mins[i], lo)
            self._maxs[i] = hi if self._maxs[i] is None else max(self._maxs[i], hi)

    def result(self) -> SimpleStats:
        if parse_stats_mode(self.mode)[0] == "none":
            return SimpleStats.EMPTY
        mins = [None if u else v for v, u in zip(self._mins, self._unknown, strict=True)]
        maxs = [None if u else v for v, u in zip(self._maxs, self._unknown, strict=True)]
        types = [stats_type(f.type) for f in self.fields]
        return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(self._nulls))


def bounded_stats(
    fields: Sequence[DataField], bounds: Sequence[tuple[Any, Any, int | None]], mode: str
) -> SimpleStats:
    """SimpleStats over ``fields`` from known (min, max, null count) per field, e.g. a Parquet
    footer's, kept as ``mode`` keeps them (the same truncation as :func:`column_stats`; None: unknown)."""
    kind, length = parse_stats_mode(mode)
    if kind == "none":
        return SimpleStats.EMPTY
    mins: list[Any] = []
    maxs: list[Any] = []
    for f, (lo, hi, _) in zip(fields, bounds, strict=True):
        if kind == "counts" or f.type.is_nested or lo is None or hi is None:
            lo = hi = None
        elif kind == "truncate" and length is not None and isinstance(lo, str | bytes):
            lo, hi = lo[:length], _truncate_max(hi, length)
        mins.append(lo)
        maxs.append(hi)
    types = [stats_type(f.type) for f in fields]
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(n for _, _, n in bounds))
