"""``count(*)``, ``min(c)`` and ``max(c)`` answered from a plan's manifests, without reading a data file.

The rule is Paimon's aggregate push-down (``AggregatePushDownUtils``, ``DataSplit.mergedRowCount``,
``PushDownUtils``), decided split by split; any split that does not satisfy it makes the whole
answer ``None`` (the caller then reads the data):

* **count(*)**: every split's merged row count must be known from metadata —
  append splits (a data-evolution split only when no row-id range is held by several files,
  ``DataSplit.raw_convertible``): the files' row counts minus their deletion vectors'
  cardinalities (a DV whose
  cardinality is unknown refuses); primary-key splits: the files a batch read uses (level 0 is
  skipped by deletion-vector tables and ``first-row``) must need no merge — no two overlap by key,
  or the table uses deletion vectors and none is on level 0 — and every file must count zero
  deleted rows (a null count refuses), so each row is one live key; then minus the DVs as above.
  Tables with the count layout (rows are counts to expand) always refuse.
* **min(c) / max(c)**: append tables only (a primary-key file's value statistics include rows a
  later file supersedes), and only for types whose Parquet statistics are exact and never
  truncated — BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE (Paimon's list; no
  strings, decimals or timestamps); every file must carry statistics for the column, and its
  bounds must be tight: no deleted-row count and no deletion vector with a non-zero cardinality.
  A file written before the column existed holds only nulls and contributes nothing.

Partition filters must be applied by the caller's plan; splits whose partition the filter does
not keep *for certain* (SQL's three-valued logic: unknown is not kept) are dropped here, since
the planner keeps an unknown partition to be safe.

Known limit shared with Paimon: a file whose writer recorded ``deleteRowCount = 0`` although it
holds retractions (pypaimon does this) is counted as if it held none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.count_layout import is_count_layout
from engine.lsm.deletion_vectors import batch_reads_skip_level0, uses_deletion_vectors
from engine.lsm.key_order import orderable_key
from engine.merge.config import MergeConfig
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta
from engine.scan.file_stats import value_stats_by_name
from engine.scan.planner import DataSplit
from engine.scan.predicate import Predicate
from engine.store import FileStore

#: Paimon's ``PushDownUtils.minmaxAvailable``: type roots whose statistics are exact.
MINMAX_TYPES = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DATE"}
)


@dataclass(frozen=True, slots=True)
class MetadataAggregate:
    """One aggregate to answer: ``kind`` is ``count`` (``column`` None), ``min`` or ``max``."""

    kind: str
    column: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("count", "min", "max"):
            raise ValueError(f"unknown aggregate {self.kind!r}")
        if (self.kind == "count") != (self.column is None):
            raise ValueError("count takes no column; min and max take one")


def type_allows_minmax(type_root: str) -> bool:
    """Whether a column of this type root may have MIN/MAX answered from statistics."""
    return str(getattr(type_root, "value", type_root)).upper() in MINMAX_TYPES


def aggregate_splits(
    store: FileStore,
    splits: Sequence[DataSplit],
    aggregates: Sequence[MetadataAggregate],
    partition_filter: Predicate | None = None,
) -> tuple[Any, ...] | None:
    """The aggregates' values over ``splits`` (a plan of ``store``), or None when Paimon's rule
    does not let metadata answer one of them. ``count`` gives an int; ``min``/``max`` the column's
    Python value (None when every row is null or there are no rows)."""
    if not aggregates or is_count_layout(store.schema):
        return None
    if any(s.branch is not None for s in splits):
        return None  # a fallback branch's splits: its own table definition, not decided here
    kept = list(_kept(store, splits, partition_filter))
    minmax = [a.column for a in aggregates if a.column is not None]
    if minmax and not _minmax_allowed(store, kept, minmax):
        return None
    count: int | None = None
    if any(a.kind == "count" for a in aggregates):
        count = 0
        for split in kept:
            n = _merged_row_count(store, split)
            if n is None:
                return None
            count += n
    out: list[Any] = []
    try:
        for a in aggregates:
            if a.kind == "count":
                out.append(count)
            else:
                assert a.column is not None
                out.append(_bound(store, kept, a.column, a.kind == "max"))
    except _Unknown:
        return None
    return tuple(out)


def _kept(store: FileStore, splits: Iterable[DataSplit], pred: Predicate | None) -> Iterable[DataSplit]:
    if pred is None:
        yield from splits
        return
    keys = store.partition_keys
    for s in splits:
        if pred.eval_row(dict(zip(keys, s.partition_values, strict=True))) is True:
            yield s


def _read_files(store: FileStore, split: DataSplit) -> list[DataFileMeta]:
    """The files a batch read of a primary-key split uses."""
    files = list(split.files)
    schema = store.schema
    first_row = MergeConfig.from_options(schema.options, schema.primary_keys).engine == "first-row"
    if batch_reads_skip_level0(store) or first_row:
        files = [f for f in files if f.level > 0]
    return files


def _no_key_overlap(store: FileStore, files: Sequence[DataFileMeta]) -> bool:
    types = [store.schema.field(k).type for k in store.schema.trimmed_primary_keys]
    ranges = sorted(
        (orderable_key(deserialize_row(f.min_key, types)), orderable_key(deserialize_row(f.max_key, types)))
        for f in files
    )
    if any(lo > hi for lo, hi in ranges):
        return False  # sorted in another key order: takes to span every key (engine.lsm.intervals)
    return all(prev[1] < nxt[0] for prev, nxt in zip(ranges, ranges[1:], strict=False))


def _merged_row_count(store: FileStore, split: DataSplit) -> int | None:
    dv = uses_deletion_vectors(store)
    if store.has_primary_key:
        files = _read_files(store, split)
        if any(f.delete_row_count != 0 for f in files):  # None (unknown) refuses too
            return None
        merged_by_dv = dv and all(f.level > 0 for f in files)
        if not merged_by_dv and not _no_key_overlap(store, files):
            return None
    else:
        if not split.raw_convertible:
            return None  # data evolution: several files hold the same rows (Paimon's rule too)
        files = list(split.files)
    total = 0
    for f in files:
        d = split.deletion_file(f.file_name) if dv else None
        if d is None:
            total += f.row_count
        elif d.cardinality is None:
            return None
        else:
            total += f.row_count - d.cardinality
    return total


def _minmax_allowed(store: FileStore, splits: Sequence[DataSplit], columns: Sequence[str]) -> bool:
    if store.has_primary_key:
        return False
    schema = store.schema
    for c in columns:
        if c not in schema.field_names or not type_allows_minmax(schema.field(c).type.root):
            return False
    dv = uses_deletion_vectors(store)
    for split in splits:
        if not split.raw_convertible:
            return False  # data evolution: an older file's statistics describe replaced values
        for f in split.files:
            if f.write_cols is not None:
                return False  # data evolution: the file's other columns are elsewhere
            if f.delete_row_count is None or f.delete_row_count > 0:
                return False
            d = split.deletion_file(f.file_name) if dv else None
            if d is not None and d.cardinality != 0:
                return False
    return True


def _bound(store: FileStore, splits: Sequence[DataSplit], column: str, largest: bool) -> Any:
    """The min (or max) of ``column`` over the files' statistics (callers checked
    :func:`_minmax_allowed`); raises :class:`_Unknown` when a file's statistics cannot bound it."""
    schema = store.schema
    field = schema.field(column)
    best: Any = None
    for split in splits:
        for f in split.files:
            file_schema = store.schema_by_id(f.schema_id)
            if field.id not in {x.id for x in file_schema.fields}:
                continue  # written before the column existed: only nulls
            if file_schema.field_by_id(field.id).type.root != field.type.root:
                raise _Unknown  # a widened column: the old file's bounds are of another type
            stats = value_stats_by_name(f, file_schema, schema).get(column)
            if stats is None or stats.null_count is None:
                raise _Unknown
            value = stats.max if largest else stats.min
            if isinstance(value, float) and value != value:
                raise _Unknown  # a NaN bound: leave NaN ordering to the reader
            if value is None:
                if stats.null_count < f.row_count:
                    raise _Unknown  # rows with values but no bound
                continue
            if best is None or (value > best if largest else value < best):
                best = value
    return best


class _Unknown(Exception):  # noqa: N818 - a control-flow signal, caught by aggregate_splits
    """A file's statistics cannot bound the column."""
