"""Changelog rows from two merged states of the same key space, and RowKind conversions.

:func:`diff_changelog` is what a ``full-compaction``/``lookup`` changelog producer emits: for every
key, ``+I`` (new key), ``-U`` then ``+U`` (values changed), ``-D`` (key removed) or nothing
(unchanged), in key order. It is a vectorised sort-merge join: both sides' keys are encoded with
the merge driver's key codes (so null keys match null keys, unlike a SQL join, and the output comes
out in key order), sorted together, and each key group of one or two rows is classified at once.
Values are compared null-safely (null equals null, NaN equals NaN), including nested ARRAY, MAP and
ROW values.

Invariant: each side holds at most one row per key (merged, delete-free states); otherwise
InvalidArgumentError.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError
from engine.merge.engines import validity
from engine.merge.functions import key_sort_codes

ROWKIND_COLUMN = "rowkind"
ROW_KINDS = ("+I", "-U", "+U", "-D")  # index = Paimon's RowKind byte
# Built on first use: any pyarrow array construction imports pandas (~0.2-0.4 s), and processes
# that only plan (Spark's driver-side source runner) never need it.
@functools.cache
def _row_kind_array() -> pa.Array:
    return pa.array(ROW_KINDS, type=pa.string())


def kinds_to_rowkind(kind: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``_VALUE_KIND`` bytes (0..3) -> ``"+I"``/``"-U"``/``"+U"``/``"-D"`` (nulls stay null).

    Raises:
        InvalidArgumentError: a value outside 0..3.
    """
    if isinstance(kind, pa.ChunkedArray):
        kind = kind.combine_chunks()
    if len(kind) - kind.null_count:
        low, high = pc.min_max(kind).values()
        if low.as_py() < 0 or high.as_py() > 3:
            raise InvalidArgumentError(
                f"Row kinds must be 0 (+I), 1 (-U), 2 (+U) or 3 (-D); found {low}..{high}."
            )
    return _row_kind_array().take(kind)


def rowkind_to_kinds(rowkind: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``"+I"``/``"-U"``/``"+U"``/``"-D"`` -> int8 ``_VALUE_KIND`` bytes (nulls stay null).

    Raises:
        InvalidArgumentError: any other string.
    """
    if isinstance(rowkind, pa.ChunkedArray):
        rowkind = rowkind.combine_chunks()
    codes = pc.index_in(rowkind, value_set=_row_kind_array())
    unknown = pc.and_(pc.is_null(codes), pc.is_valid(rowkind))
    if pc.any(unknown).as_py():
        bad = rowkind.filter(unknown)[0].as_py()
        raise InvalidArgumentError(f"Unknown row kind '{bad}': use one of {', '.join(ROW_KINDS)}.")
    return codes.cast(pa.int8())


def diff_changelog(
    before: pa.Table, after: pa.Table, key_columns: Sequence[str], value_columns: Sequence[str]
) -> pa.Table:
    """The changelog turning ``before`` into ``after`` (see the module docstring).

    Args:
        before: the older merged state (may be empty).
        after: the newer merged state.
        key_columns: the key columns (present in both tables).
        value_columns: the output columns, compared to detect updates (present in both tables).

    Returns:
        ``rowkind`` (string) then ``value_columns``, ordered by key, ``-U`` before ``+U``.

    Raises:
        InvalidArgumentError: missing columns, incompatible types, or a duplicate key on one side.
    """
    key_columns, value_columns = list(key_columns), list(value_columns)
    for label, table in (("before", before), ("after", after)):
        missing = [c for c in [*key_columns, *value_columns] if c not in table.column_names]
        if missing:
            raise InvalidArgumentError(f"The {label} state lacks column(s) {', '.join(missing)}.")
    old = _aligned(before, after, [*dict.fromkeys([*key_columns, *value_columns])])
    new = after.select(old.column_names)
    nb, na = old.num_rows, new.num_rows
    n = nb + na
    fields = [pa.field(ROWKIND_COLUMN, pa.string(), nullable=False)] + [
        new.schema.field(c) for c in value_columns
    ]
    if n == 0:
        return pa.Table.from_arrays([pa.array([], f.type) for f in fields], schema=pa.schema(fields))

    keys = [
        pa.chunked_array(old.column(k).chunks + new.column(k).chunks, type=new.schema.field(k).type)
        for k in key_columns
    ]
    codes = key_sort_codes(keys)
    side = np.concatenate([np.zeros(nb, np.int8), np.ones(na, np.int8)])
    perm = np.lexsort([side, *reversed(codes)])  # before's row first within a key
    change = np.zeros(n - 1, dtype=bool)
    for code in codes:
        ordered = code[perm]
        change |= ordered[1:] != ordered[:-1]
    starts = np.concatenate([[0], np.flatnonzero(change) + 1])
    sizes = np.diff(np.append(starts, n))
    first_side = side[perm[starts]]
    second_side = side[perm[np.minimum(starts + 1, n - 1)]]
    if ((sizes > 2) | ((sizes == 2) & ((first_side == 1) | (second_side == 0)))).any():
        raise InvalidArgumentError(
            "A key occurs twice in the before or after state; diff_changelog needs merged states "
            "with one row per key."
        )
    pair = sizes == 2
    removed = (sizes == 1) & (first_side == 0)
    added = (sizes == 1) & (first_side == 1)
    old_row = np.where(first_side == 0, perm[starts], -1)
    new_row = np.where(pair, perm[np.minimum(starts + 1, n - 1)], np.where(added, perm[starts], 0)) - nb
    changed = np.zeros(len(starts), dtype=bool)
    if pair.any():
        p_old, p_new = old_row[pair], new_row[pair]
        equal = np.ones(int(pair.sum()), dtype=bool)
        for column in value_columns:
            equal &= _null_safe_equal(
                _combined(old.column(column)).take(pa.array(p_old)),
                _combined(new.column(column)).take(pa.array(p_new)),
            )
        changed[pair] = ~equal

    # Emit per key in key order: -D, +I, or -U followed by +U.
    emitted = removed.astype(np.int64) + added + 2 * changed
    first_slot = np.cumsum(emitted) - emitted
    old_emit = removed | changed
    new_emit = added | changed
    old_rows, new_rows = old_row[old_emit], new_row[new_emit]
    slots = np.concatenate([first_slot[old_emit], first_slot[new_emit] + changed[new_emit]])
    kinds = np.concatenate([np.where(changed[old_emit], 1, 3), np.where(changed[new_emit], 2, 0)])
    parts = pa.concat_tables(
        [
            old.select(value_columns).take(pa.array(old_rows, pa.int64())),
            new.select(value_columns).take(pa.array(new_rows, pa.int64())),
        ],
        promote_options="permissive",  # the two states may differ only in declared nullability
    )
    order = np.empty(len(slots), dtype=np.int64)
    order[slots] = np.arange(len(slots), dtype=np.int64)
    body = parts.take(pa.array(order))
    rowkind = _row_kind_array().take(pa.array(kinds[order], pa.int8()))
    return pa.Table.from_arrays([rowkind, *body.columns], schema=pa.schema(fields))


def _aligned(before: pa.Table, after: pa.Table, columns: list[str]) -> pa.Table:
    """``before`` restricted to ``columns`` and cast to ``after``'s types."""
    arrays = []
    for name in columns:
        column, target = before.column(name), after.schema.field(name).type
        if column.type != target:
            try:
                column = column.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise InvalidArgumentError(
                    f"Column '{name}' is {column.type} before and {target} after; cannot compare them."
                ) from exc
        arrays.append(column)
    return pa.Table.from_arrays(arrays, names=columns)


def _combined(column: pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks()


def _null_safe_equal(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Element-wise equality where null == null and NaN == NaN, recursing into nested values."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if isinstance(b, pa.ChunkedArray):
        b = b.combine_chunks()
    if pa.types.is_dictionary(a.type):
        a = a.dictionary_decode()
    if pa.types.is_dictionary(b.type):
        b = b.dictionary_decode()
    va, vb = validity(a), validity(b)
    both = va & vb
    result = ~va & ~vb  # both null
    t = a.type
    if pa.types.is_struct(t):
        equal = both.copy()
        for child_a, child_b in zip(a.flatten(), b.flatten(), strict=True):
            equal &= _null_safe_equal(child_a, child_b)
    elif pa.types.is_fixed_size_list(t):
        value_type = t.value_type
        return _null_safe_equal(a.cast(pa.list_(value_type)), b.cast(pa.list_(value_type)))
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        equal = _lists_equal(a, b, both)
    elif pa.types.is_null(t):
        return np.ones(len(a), dtype=bool)
    else:
        equal = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(t):
            nan = pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False)
            equal = equal | nan.to_numpy(zero_copy_only=False)
    return result | (both & equal)


def _lists_equal(a: pa.Array, b: pa.Array, both: np.ndarray) -> np.ndarray:
    offsets_a = a.offsets.to_numpy().astype(np.int64)
    offsets_b = b.offsets.to_numpy().astype(np.int64)
    len_a, len_b = np.diff(offsets_a), np.diff(offsets_b)
    candidates = np.flatnonzero(both & (len_a == len_b))
    equal = np.zeros(len(a), dtype=bool)
    if len(candidates) == 0:
        return equal
    lengths = len_a[candidates]
    total = int(lengths.sum())
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    index_a = np.repeat(offsets_a[candidates], lengths) + within
    index_b = np.repeat(offsets_b[candidates], lengths) + within
    # .values is the whole child array (map entries are a struct of key and value), which the
    # offsets index directly even when the list array is a slice.
    elements = _null_safe_equal(a.values.take(pa.array(index_a)), b.values.take(pa.array(index_b)))
    owner = np.repeat(np.arange(len(candidates), dtype=np.int64), lengths)
    mismatches = np.bincount(owner[~elements], minlength=len(candidates))
    equal[candidates] = mismatches == 0
    return equal
