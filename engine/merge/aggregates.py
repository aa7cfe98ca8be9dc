"""The ``aggregation`` merge engine and its field aggregators, vectorised per column.

Every non-key column is folded over its key group in sequence order by one aggregate function
(``fields.<f>.aggregate-function``, default ``last_non_null_value``); key columns keep their value.
The merged row is ``+I`` and carries the group's maximum sequence number; with
``aggregation.remove-record-on-delete`` a ``-D`` row restarts its group instead of retracting: the
fold starts again from the ``-D`` row's own values (as Paimon's AggregateMergeFunction), and a
group whose last row is that ``-D`` merges to ``-D`` (dropped by reads and top-level compaction).

Semantics follow Paimon's FieldAggregator implementations, computed for all groups at once with
numpy ``reduceat`` over the sorted groups or pyarrow hash aggregation on a group-id column:

* nulls never change an accumulator (except ``last_value``/``first_value``, which take the value
  of the last/first row even when null);
* retraction (``-U``/``-D`` rows) is supported by ``sum`` (subtract), ``product`` (divide),
  ``count`` (minus one per non-null value), ``last_value`` (a retracting last row gives null) and
  ``last_non_null_value`` (null if the last non-null value came from a retracting row); every other
  function raises unless ``fields.<f>.ignore-retract`` = true, which skips retract rows for that
  field;
* ``count`` counts non-null input rows (Paimon's FieldCountAgg): it ignores the input value, so a
  previously merged count is counted as one row again — like Paimon, it is not stable across
  compactions; ``sum`` of a 1 column is the stable alternative;
* ``product`` with retraction is computed as (product of added values) / (product of retracted
  values), with Paimon's rule that a retract row meeting a null accumulator multiplies; integer
  division truncates toward zero as in Java. This equals Paimon's step-by-step result whenever each
  retracted factor divides the running product exactly;
* integer sums and products wrap around at the column's width like Java arithmetic; a DECIMAL sum
  that overflows the column's precision becomes null (Paimon's Decimal.fromBigDecimal).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError
from engine.merge.config import RETRACTABLE_FUNCTIONS, MergeConfig, normalize_function
from engine.merge.engines import (
    DELETE,
    INSERT,
    KIND_COLUMN,
    SEQUENCE_COLUMN,
    SortedGroups,
    is_retract,
    take_or_null,
    validity,
)


@dataclass(frozen=True)
class _Field:
    """One column's input to an aggregate function; all masks are in sorted order."""

    name: str
    column: pa.ChunkedArray
    groups: SortedGroups
    eligible: np.ndarray  # rows the function sees (retract rows are dropped when ignore-retract)
    retract: np.ndarray  # eligible rows that retract
    delimiter: str

    @property
    def type(self) -> pa.DataType:
        return self.column.type

    def valid(self) -> np.ndarray:
        """Eligible rows with a non-null value."""
        if self.column.null_count == 0:
            return self.eligible
        return self.eligible & validity(self.column)[self.groups.perm]

    def sorted_values(self) -> pa.Array:
        taken = self.column.take(pa.array(self.groups.perm))
        return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken

    def sorted_numpy(self, fill: int) -> np.ndarray:
        return pc.fill_null(self.sorted_values(), fill).to_numpy(zero_copy_only=False)

    def at(self, positions: np.ndarray, missing: np.ndarray) -> pa.Array:
        """The values at sorted ``positions`` (null where ``missing``)."""
        rows = self.groups.perm[np.where(missing, 0, positions)]
        return take_or_null(self.column, rows, missing)

    def type_error(self, function: str, expected: str) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"Aggregate function '{function}' of column '{self.name}' needs {expected}, "
            f"not {self.type}: change the column type or its 'fields.{self.name}.aggregate-function'."
        )


def merge_aggregation(
    table: pa.Table,
    groups: SortedGroups,
    kinds: np.ndarray,
    seq: np.ndarray,
    config: MergeConfig,
    key_columns: Sequence[str],
    drop_deletes: bool = False,
) -> pa.Table:
    """One row per group, each non-key column folded by its aggregate function.

    ``kinds`` and ``seq`` are numpy arrays in input row order.
    """
    kinds, seq = kinds[groups.perm], seq[groups.perm]
    retract = is_retract(kinds)
    everything = np.ones(groups.n, dtype=bool)
    out_kinds = np.full(groups.num_groups, INSERT, dtype=np.int8)
    keep: np.ndarray | None = None
    if config.aggregation_remove_record_on_delete:
        # Rows before a group's last -D are forgotten; the -D itself seeds the fold as a value.
        deletes = kinds == DELETE
        last_delete = groups.last_where(deletes)
        everything = groups.positions >= np.repeat(last_delete, groups.sizes)
        retract = retract & ~deletes & everything
        deleted = last_delete == groups.lasts
        out_kinds[deleted] = DELETE
        keep = ~deleted if drop_deletes else None
    any_retract = bool(retract.any())
    keys = set(key_columns)
    columns: list[pa.Array] = []
    for i, field in enumerate(table.schema):
        name = field.name
        if name == SEQUENCE_COLUMN:
            columns.append(pa.array(groups.max(seq), type=field.type))
        elif name == KIND_COLUMN:
            columns.append(pa.array(out_kinds, type=field.type))
        elif name in keys:
            columns.append(
                take_or_null(table.column(i), groups.perm[groups.lasts], np.zeros(groups.num_groups, bool))
            )
        else:
            function = normalize_function(
                config.field_aggregates.get(name, config.default_aggregate_function), name
            )
            ignore = bool(config.field_ignore_retract.get(name, False))
            if any_retract and not ignore and function not in RETRACTABLE_FUNCTIONS:
                raise InvalidArgumentError(
                    f"Aggregate function '{function}' of column '{name}' does not support retraction "
                    f"(-U/-D records); set 'fields.{name}.ignore-retract' = 'true' to ignore them."
                )
            data = _Field(
                name=name,
                column=table.column(i),
                groups=groups,
                eligible=everything & ~retract if ignore else everything,
                retract=np.zeros(groups.n, dtype=bool) if ignore else retract,
                delimiter=config.listagg_delimiter.get(name, ","),
            )
            result = _FUNCTIONS[function](data)
            columns.append(result if result.type == field.type else result.cast(field.type))
    merged = pa.Table.from_arrays(columns, schema=table.schema)
    return merged if keep is None else merged.filter(pa.array(keep))


def aggregate_column(
    table: pa.Table,
    name: str,
    groups: SortedGroups,
    function: str,
    eligible: np.ndarray,
    retract: np.ndarray,
    delimiter: str = ",",
) -> pa.Array:
    """One aggregate per key group of column ``name`` over the ``eligible`` sorted rows, the
    ``retract`` ones retracting (a partial-update sequence group's aggregated members)."""
    data = _Field(name, table.column(name), groups, eligible, eligible & retract, delimiter)
    result = _FUNCTIONS[function](data)
    target = table.schema.field(name).type
    return result if result.type == target else result.cast(target)


def _hash_aggregate(
    values: pa.Array, group_ids: np.ndarray, num_groups: int, function: str, options: object = None
) -> pa.Array:
    """pyarrow hash aggregation by group id, scattered to all groups (null where a group is absent)."""
    grouped = pa.table({"g": pa.array(group_ids, type=pa.int64()), "v": values}).group_by(
        "g",
        use_threads=False,  # single-threaded keeps input order inside groups (listagg)
    )
    spec = ("v", function, options) if options is not None else ("v", function)
    out = grouped.aggregate([spec])
    present = out.column("g").to_numpy()
    slot = np.full(num_groups, -1, dtype=np.int64)
    slot[present] = np.arange(len(present), dtype=np.int64)
    return take_or_null(out.column(f"v_{function}"), slot, slot < 0)


def _filtered_hash(data: _Field, rows: np.ndarray, function: str, options: object = None) -> pa.Array:
    values = data.sorted_values().filter(pa.array(rows))
    group_ids = data.groups.group_of_row[rows]
    return _hash_aggregate(values, group_ids, data.groups.num_groups, function, options)


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _fit_decimal(values: pa.Array, target: pa.DataType) -> pa.Array:
    """Cast a widened decimal result back to ``target``; values that do not fit become null."""
    if values.type == target:
        return values
    bound = pa.scalar(decimal.Decimal(10) ** (target.precision - target.scale), type=values.type)
    fits = pc.less(pc.abs(values), bound)
    return pc.if_else(fits, values, pa.scalar(None, type=values.type)).cast(target)


def _sum(data: _Field) -> pa.Array:
    valid = data.valid()
    groups = data.groups
    if _is_number(data.type):
        v = data.sorted_numpy(0)
        v = np.where(valid, np.where(data.retract, -v, v), 0).astype(v.dtype, copy=False)
        total = np.add.reduceat(v, groups.starts, dtype=v.dtype)
        return pa.array(total, type=data.type, mask=~groups.any(valid))
    if pa.types.is_decimal(data.type):
        values = data.sorted_values()
        values = pc.if_else(pa.array(data.retract), pc.negate(values), values)
        summed = _hash_aggregate(
            values.filter(pa.array(valid)), groups.group_of_row[valid], groups.num_groups, "sum"
        )
        return _fit_decimal(summed, data.type)
    raise data.type_error("sum", "a numeric or DECIMAL type")


def _product(data: _Field) -> pa.Array:
    valid = data.valid()
    groups = data.groups
    first = groups.first_where(valid)
    present = first < groups.n
    opening = np.zeros(groups.n, dtype=bool)
    opening[first[present]] = True
    # A retract row meeting a null accumulator becomes the accumulator (Paimon), so it multiplies.
    divide = valid & data.retract & ~opening
    multiply = valid & ~divide
    if _is_number(data.type):
        v = data.sorted_numpy(1)
        one = np.ones(1, dtype=v.dtype)
        num = np.multiply.reduceat(np.where(multiply, v, one), groups.starts, dtype=v.dtype)
        if divide.any():
            den = np.multiply.reduceat(np.where(divide, v, one), groups.starts, dtype=v.dtype)
            if pa.types.is_integer(data.type):
                if (present & (den == 0)).any():
                    raise InvalidArgumentError(
                        f"Retracting product column '{data.name}' divides by zero: a retracted value is 0."
                    )
                den = np.where(den == 0, one, den)
                num = (num - np.fmod(num, den)) // den  # truncate toward zero like Java
            else:
                num = num / den
        return pa.array(num.astype(v.dtype, copy=False), type=data.type, mask=~present)
    if pa.types.is_decimal(data.type):
        if divide.any():
            raise InvalidArgumentError(
                f"Retracting product column '{data.name}' of type {data.type} is not supported: "
                f"set 'fields.{data.name}.ignore-retract' = 'true' or use a numeric type."
            )
        return _fit_decimal(_filtered_hash(data, valid, "product"), data.type)
    raise data.type_error("product", "a numeric or DECIMAL type")


def _count(data: _Field) -> pa.Array:
    if not pa.types.is_integer(data.type):
        raise data.type_error("count", "an integer type")
    groups = data.groups
    dtype = data.type.to_pandas_dtype()
    step = np.where(data.valid(), np.where(data.retract, -1, 1), 0).astype(dtype)
    total = np.add.reduceat(step, groups.starts, dtype=dtype)
    return pa.array(total, type=data.type, mask=~groups.any(data.eligible))


def _min_max(function: str) -> Callable[[_Field], pa.Array]:
    def aggregate(data: _Field) -> pa.Array:
        if pa.types.is_nested(data.type) or pa.types.is_boolean(data.type):
            raise data.type_error(function, "a numeric, DECIMAL, string or temporal type")
        return _filtered_hash(data, data.valid(), function)

    return aggregate


def _bool(function: str, arrow_function: str) -> Callable[[_Field], pa.Array]:
    def aggregate(data: _Field) -> pa.Array:
        if not pa.types.is_boolean(data.type):
            raise data.type_error(function, "BOOLEAN")
        return _filtered_hash(data, data.valid(), arrow_function)

    return aggregate


def _listagg(data: _Field) -> pa.Array:
    if not (pa.types.is_string(data.type) or pa.types.is_large_string(data.type)):
        raise data.type_error("listagg", "a string type")
    values = data.sorted_values()
    # Paimon skips blank inputs (StringUtils.isBlank: empty or whitespace only).
    blank = pc.or_(pc.equal(pc.utf8_length(values), 0), pc.utf8_is_space(values))
    rows = data.valid() & ~pc.fill_null(blank, True).to_numpy(zero_copy_only=False)
    lists = _hash_aggregate(
        values.filter(pa.array(rows)), data.groups.group_of_row[rows], data.groups.num_groups, "list"
    )
    return pc.binary_join(lists, data.delimiter)


def _last_value(data: _Field) -> pa.Array:
    last = data.groups.last_where(data.eligible)
    missing = last < 0
    missing |= data.retract[np.where(missing, 0, last)]
    return data.at(last, missing)


def _last_non_null_value(data: _Field) -> pa.Array:
    last = data.groups.last_where(data.valid())
    missing = last < 0
    missing |= data.retract[np.where(missing, 0, last)]
    return data.at(last, missing)


def _first_value(data: _Field) -> pa.Array:
    first = data.groups.first_where(data.eligible)
    return data.at(first, first >= data.groups.n)


def _first_non_null_value(data: _Field) -> pa.Array:
    first = data.groups.first_where(data.valid())
    return data.at(first, first >= data.groups.n)


_FUNCTIONS: dict[str, Callable[[_Field], pa.Array]] = {
    "sum": _sum,
    "product": _product,
    "count": _count,
    "min": _min_max("min"),
    "max": _min_max("max"),
    "bool_and": _bool("bool_and", "all"),
    "bool_or": _bool("bool_or", "any"),
    "listagg": _listagg,
    "last_value": _last_value,
    "last_non_null_value": _last_non_null_value,
    "first_value": _first_value,
    "first_non_null_value": _first_non_null_value,
}
