"""The LSM merge driver: sort key-value rows, cut them into key groups, apply the merge engine.

A *kv table* is a pyarrow Table holding the physical columns of primary-key data files:
``_SEQUENCE_NUMBER`` int64, ``_VALUE_KIND`` int8 (0 ``+I``, 1 ``-U``, 2 ``+U``, 3 ``-D``) and the
table's value columns (the ``_KEY_*`` columns are dropped by the reader; keys are the value columns
named by ``key_columns``). Input may be several sorted runs concatenated in any order.

:func:`merge` returns one row per key in key order (nulls first, strings by UTF-8 bytes, floats by
Java's ``Double.compare``), whose ``_SEQUENCE_NUMBER`` is the group's maximum and whose
``_VALUE_KIND`` is the merged kind. Merging is vectorised: every key column becomes one or more
numpy integer *codes* with the same order and equality (integers as is, floats by their
order-preserving bit pattern, DECIMAL128 as two machine words, short strings as big-endian 8-byte
words plus length, anything else as dense ranks), rows are stably sorted by codes (timsort sees the
presorted runs) and re-sorted by sequence only if a group is out of sequence order; group
boundaries come from adjacent code comparisons.

The count layout (tables without primary key that accept retractions) keeps the whole row as key
and a signed ``_VALUE_COUNT``; :func:`merge_counts` sums counts per key and :func:`expand_counts`
is the read view that repeats each row ``count`` times.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError
from engine.merge.aggregates import aggregate_column, merge_aggregation
from engine.merge.config import RETRACTABLE_FUNCTIONS, MergeConfig
from engine.merge.engines import (
    KIND_COLUMN,
    SEQUENCE_COLUMN,
    SortedGroups,
    is_retract,
    merge_deduplicate,
    merge_first_row,
    merge_partial_update,
    validity,
)

COUNT_COLUMN = "_VALUE_COUNT"
_MAX_WORD_BYTES = 64  # longer strings are ranked by pyarrow's sort instead of packed into words
_BYTE_TYPES = (
    pa.types.is_binary,
    pa.types.is_string,
    pa.types.is_large_binary,
    pa.types.is_large_string,
    pa.types.is_fixed_size_binary,
)


# ----------------------------------------------------------------------------- key codes


def key_sort_codes(columns: Sequence[pa.Array | pa.ChunkedArray]) -> list[np.ndarray]:
    """numpy arrays whose lexicographic order (first array most significant) is Paimon's key order
    over ``columns`` — nulls first, strings and binaries by unsigned bytes, floats like
    ``Double.compare`` — and whose element-wise equality is key equality.

    Raises:
        InvalidArgumentError: a nested (ARRAY/MAP/ROW) column, which cannot be a key.
    """
    codes: list[np.ndarray] = []
    for column in columns:
        codes.extend(_column_codes(column))
    return codes


def _column_codes(column: pa.Array | pa.ChunkedArray) -> list[np.ndarray]:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if pa.types.is_null(t):
        return []  # every value is null: all equal
    if pa.types.is_nested(t):
        raise InvalidArgumentError(
            f"A column of type {t} cannot be part of a key: use only primitive key columns."
        )
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        filled = pc.fill_null(arr, False if pa.types.is_boolean(t) else 0) if arr.null_count else arr
        codes = [filled.to_numpy(zero_copy_only=False)]
        if pa.types.is_boolean(t):
            codes = [codes[0].astype(np.int8)]
    elif pa.types.is_temporal(t) and t.bit_width in (32, 64):
        as_int = arr.view(pa.int32() if t.bit_width == 32 else pa.int64())
        codes = [pc.fill_null(as_int, 0).to_numpy(zero_copy_only=False)]
    elif pa.types.is_floating(t):
        codes = [_float_codes(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False))]
    elif pa.types.is_decimal128(t) and sys.byteorder == "little":
        words = np.frombuffer(arr.buffers()[1], dtype=np.uint64)[2 * arr.offset : 2 * (arr.offset + len(arr))]
        words = words.reshape(len(arr), 2)
        codes = [words[:, 1].view(np.int64).copy(), words[:, 0].copy()]  # high (signed), low
    elif any(check(t) for check in _BYTE_TYPES):
        codes = _bytes_codes(arr)
    else:
        codes = [_rank_codes(arr)]
    if arr.null_count:
        valid = validity(arr)
        codes = [valid.astype(np.int8)] + [np.where(valid, c, np.zeros(1, c.dtype)) for c in codes]
    return codes


def _float_codes(values: np.ndarray) -> np.ndarray:
    """int64 codes ordered like Java's Double.compare (-0.0 < 0.0, NaN last and equal to itself)."""
    doubles = values.astype(np.float64)
    doubles = np.where(np.isnan(doubles), np.nan, doubles)
    bits = doubles.view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


def _bytes_codes(arr: pa.Array) -> list[np.ndarray]:
    """Big-endian 8-byte words of zero-padded bytes (plus the length when lengths differ)."""
    n = len(arr)
    t = arr.type
    if pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        data = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * width : (arr.offset + n) * width]
        lengths = np.full(n, width, dtype=np.int64)
        offsets = np.arange(n + 1, dtype=np.int64) * width
    else:
        large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if large else np.int32)
        offsets = offsets[arr.offset : arr.offset + n + 1].astype(np.int64)
        buffer = arr.buffers()[2]
        data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
        lengths = np.diff(offsets)
    if arr.null_count:
        lengths = np.where(validity(arr), lengths, 0)
    longest = int(lengths.max()) if n else 0
    if longest == 0:
        return []
    if longest > _MAX_WORD_BYTES:
        return [_rank_codes(arr)]
    width = -(-longest // 8) * 8
    uniform = int(lengths.min()) == longest
    if uniform:
        start = int(offsets[0])
        matrix = data[start : start + n * longest].reshape(n, longest)
        if longest != width:
            matrix = np.concatenate([matrix, np.zeros((n, width - longest), np.uint8)], axis=1)
    else:
        # One pass per byte position (at most 64), not per row.
        matrix = np.zeros((n, width), dtype=np.uint8)
        starts = offsets[:-1]
        last = max(len(data) - 1, 0)
        for j in range(longest):
            column = data[np.minimum(starts + j, last)] if len(data) else np.zeros(n, np.uint8)
            matrix[:, j] = np.where(lengths > j, column, 0)
    words = np.ascontiguousarray(matrix).view(">u8")
    codes: list[np.ndarray] = [words[:, j].astype(np.uint64) for j in range(words.shape[1])]
    # Zero padding is ambiguous only if the values themselves contain zero bytes ("a" vs "a\0");
    # otherwise the words alone order and identify the values and the length is not needed.
    if not uniform and (data[int(offsets[0]) : int(offsets[-1])] == 0).any():
        codes.append(lengths)
    return codes


def _rank_codes(arr: pa.Array) -> np.ndarray:
    """Dense ranks by pyarrow's sort (nulls get arbitrary equal-free ranks; the caller masks them)."""
    order = pc.sort_indices(arr).to_numpy()
    ordered = arr.take(pa.array(order))
    changed = pc.fill_null(pc.not_equal(ordered.slice(1), ordered.slice(0, len(arr) - 1)), True)
    dense = np.concatenate([np.zeros(1, np.int64), np.cumsum(changed.to_numpy(zero_copy_only=False))])
    ranks = np.empty(len(arr), dtype=np.int64)
    ranks[order] = dense
    return ranks


def _group_starts(codes: Sequence[np.ndarray], perm: np.ndarray, n: int) -> np.ndarray:
    change = np.zeros(max(n - 1, 0), dtype=bool)
    for code in codes:
        ordered = code[perm]
        change |= ordered[1:] != ordered[:-1]
    return np.concatenate([np.zeros(1, np.int64), np.flatnonzero(change).astype(np.int64) + 1])


def _stable_order(codes: Sequence[np.ndarray], n: int) -> np.ndarray:
    if not codes:
        return np.arange(n, dtype=np.int64)
    if len(codes) == 1:
        return np.argsort(codes[0], kind="stable")
    return np.lexsort(list(reversed(codes)))


def keys_present_in(table: pa.Table, other: pa.Table, key_columns: Sequence[str]) -> np.ndarray:
    """Boolean mask over ``table``'s rows: whose key also occurs in ``other``.

    Keys are compared by their sort codes, so equality is Paimon's (``-0.0`` and ``0.0`` differ,
    every NaN is equal), which hash joins on raw values do not guarantee.
    """
    n = table.num_rows
    if n == 0 or other.num_rows == 0:
        return np.zeros(n, dtype=bool)
    columns = []
    for k in key_columns:
        mine = table.column(k)
        columns.append(pa.chunked_array(mine.chunks + other.column(k).cast(mine.type).chunks, mine.type))
    codes = key_sort_codes(columns)
    total = n + other.num_rows
    perm = _stable_order(codes, total)
    starts = _group_starts(codes, perm, total)
    group_of = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, total)))
    from_other = perm >= n
    hit = np.zeros(len(starts), dtype=bool)
    hit[group_of[from_other]] = True
    mask = np.zeros(total, dtype=bool)
    mask[perm] = hit[group_of]
    return mask[:n]


# ----------------------------------------------------------------------------- sorting & merging


def _require_columns(table: pa.Table, names: Sequence[str]) -> None:
    missing = [name for name in names if name not in table.column_names]
    if missing:
        raise InvalidArgumentError(
            f"The kv table lacks column(s) {', '.join(missing)}; it has {', '.join(table.column_names)}."
        )


def _int_column(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    if column.null_count:
        raise InvalidArgumentError(f"Column {name} must not contain nulls.")
    if not pa.types.is_integer(column.type):
        raise InvalidArgumentError(f"Column {name} must be an integer column, not {column.type}.")
    return column.to_numpy()


def _kinds(table: pa.Table) -> np.ndarray:
    kinds = _int_column(table, KIND_COLUMN)
    if len(kinds) and (kinds.min() < 0 or kinds.max() > 3):
        raise InvalidArgumentError(
            f"{KIND_COLUMN} values must be 0 (+I), 1 (-U), 2 (+U) or 3 (-D); found {int(kinds.min())}.."
            f"{int(kinds.max())}. The data file is damaged or not a primary-key file."
        )
    return kinds


def _sort_groups(
    table: pa.Table, key_columns: Sequence[str], config: MergeConfig
) -> tuple[SortedGroups, np.ndarray]:
    n = table.num_rows
    codes = key_sort_codes([table.column(k) for k in key_columns])
    seq = _int_column(table, SEQUENCE_COLUMN)
    if config.sequence_fields:
        seq_codes = key_sort_codes([table.column(f) for f in config.sequence_fields])
        if config.sequence_descending:
            seq_codes = [~c for c in seq_codes]  # bitwise not reverses every integer order
        perm = np.lexsort([seq, *reversed(seq_codes), *reversed(codes)])
        return SortedGroups(perm, _group_starts(codes, perm, n), n), seq
    # Fast path: a stable sort by key alone is enough when runs arrive oldest first.
    perm = _stable_order(codes, n)
    starts = _group_starts(codes, perm, n)
    ordered = seq[perm]
    same_group = np.ones(max(n - 1, 0), dtype=bool)
    same_group[starts[1:] - 1] = False
    if np.any(same_group & (ordered[1:] < ordered[:-1])):
        # Re-sort inside groups only: (group id, sequence) packed into one int64 when it fits, a
        # nearly sorted array that timsort handles in about one pass.
        low, high = int(ordered.min()), int(ordered.max())
        span = high - low + 1
        if len(starts) * span < 2**62:
            group_ids = np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(np.append(starts, n)))
            perm = perm[np.argsort(group_ids * span + (ordered - low), kind="stable")]
        else:
            perm = np.lexsort([seq, *reversed(codes)])
    return SortedGroups(perm, starts, n), seq


def _sequence_group_winners(
    table: pa.Table, groups: SortedGroups, seq_columns: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Per key group, the sorted position of the row a sequence group takes its columns from
    (or -1); and which sorted rows take part in the group at all (sequence not all null).

    Paimon compares each row's sequence columns with the group's current ones (ascending, nulls
    first) and takes the row when not lower; rows whose sequence columns are all null are
    skipped. Over a key's rows in merge order that is the last row holding the highest sequence.
    """
    columns = [table.column(c) for c in seq_columns]
    present = np.zeros(table.num_rows, dtype=bool)
    for column in columns:
        present |= validity(column)
    present = present[groups.perm]
    rows = np.flatnonzero(present)  # sorted positions of the candidate rows
    winners = np.full(groups.num_groups, -1, dtype=np.int64)
    if len(rows) == 0:
        return winners, present
    codes = [c[groups.perm[rows]] for c in key_sort_codes(columns)]
    owner = groups.group_of_row[rows]
    order = np.lexsort([rows, *reversed(codes), owner])  # by key group, sequence, position
    owner, rows = owner[order], rows[order]
    last = np.append(owner[1:] != owner[:-1], True)
    winners[owner[last]] = rows[last]
    return winners, present


def _aggregated_members(
    table: pa.Table,
    groups: SortedGroups,
    kinds: np.ndarray,
    config: MergeConfig,
    winners: Sequence[tuple[Sequence[str], Sequence[str], np.ndarray, np.ndarray]],
) -> dict[str, pa.Array]:
    """Sequence-group members with an aggregate function: folded over every row of their group
    (whatever its sequence: the functions allowed are order-free), retractions retracting."""
    out: dict[str, pa.Array] = {}
    retract = is_retract(kinds[groups.perm])
    for _, members, _, present in winners:
        for name in members:
            function = config.field_aggregates.get(name)
            if function is None or name not in table.column_names:
                continue
            ignore = bool(config.field_ignore_retract.get(name, False))
            if not ignore and function not in RETRACTABLE_FUNCTIONS and (present & retract).any():
                raise InvalidArgumentError(
                    f"Aggregate function '{function}' of column '{name}' does not support retraction "
                    f"(-U/-D records); set 'fields.{name}.ignore-retract' = 'true' to ignore them."
                )
            eligible = present & ~retract if ignore else present
            out[name] = aggregate_column(
                table, name, groups, function, eligible, retract, config.listagg_delimiter.get(name, ",")
            )
    return out


def sort_kv(table: pa.Table, key_columns: Sequence[str], config: MergeConfig) -> pa.Table:
    """Rows stably sorted by key, then sequence fields (if any), then ``_SEQUENCE_NUMBER``.

    Raises:
        InvalidArgumentError: a required column is missing or has nulls.
    """
    _require_columns(table, [*key_columns, SEQUENCE_COLUMN, *config.sequence_fields])
    if table.num_rows == 0:
        return table
    groups, _ = _sort_groups(table, key_columns, config)
    return table.take(pa.array(groups.perm))


def merge(
    table: pa.Table, key_columns: Sequence[str], config: MergeConfig, *, drop_deletes: bool
) -> pa.Table:
    """Merge rows with equal keys into one row per key (see the module docstring).

    Args:
        table: a kv table (several sorted runs concatenated in any order).
        key_columns: the primary-key columns among the value columns.
        config: the merge engine and its options.
        drop_deletes: also remove rows whose merged kind is ``-U``/``-D`` (reading, or compaction
            into the highest level, where nothing older remains to shadow). With sequence fields a
            dropped delete can no longer outrank a newer row with a smaller sequence field; Paimon
            has the same caveat.

    Returns:
        The merged rows sorted by key, with the input schema.

    Raises:
        InvalidArgumentError: missing columns, bad kinds, or input the engine rejects (e.g. deletes
            for first-row/partial-update, retraction of a non-retractable aggregate).
    """
    key_columns = list(key_columns)
    ordering = [*config.sequence_fields, *config.group_sequence_fields]
    _require_columns(table, [*key_columns, SEQUENCE_COLUMN, KIND_COLUMN, *ordering])
    kinds = _kinds(table)
    if config.ignore_delete:
        retract = is_retract(kinds)
        if retract.any():
            table = table.filter(pa.array(~retract))
            kinds = kinds[~retract]
    if table.num_rows == 0:
        return table
    groups, seq = _sort_groups(table, key_columns, config)
    if config.engine == "deduplicate":
        return merge_deduplicate(table, groups, kinds, seq, config, drop_deletes)
    if config.engine == "first-row":
        return merge_first_row(table, groups, kinds, seq, config, drop_deletes)
    if config.engine == "partial-update":
        winners = [
            (seq_columns, members, *_sequence_group_winners(table, groups, seq_columns))
            for seq_columns, members in config.sequence_groups
        ]
        aggregated = _aggregated_members(table, groups, kinds, config, winners)
        return merge_partial_update(
            table, groups, kinds, seq, config, drop_deletes, winners, aggregated
        )
    return merge_aggregation(table, groups, kinds, seq, config, key_columns, drop_deletes)


# ----------------------------------------------------------------------------- count layout


def merge_counts(table: pa.Table, key_columns: Sequence[str], *, drop_zero: bool) -> pa.Table:
    """Sum ``_VALUE_COUNT`` per key (the whole row); one row per key in key order.

    Args:
        table: key columns, ``_VALUE_COUNT`` (signed int64) and optionally ``_SEQUENCE_NUMBER``
            (merged to the maximum) and ``_VALUE_KIND`` (merged to ``+I``).
        key_columns: the columns forming the key.
        drop_zero: remove keys whose summed count is 0.

    Raises:
        InvalidArgumentError: a missing column, a null count, or an unexpected extra column.
    """
    key_columns = list(key_columns)
    _require_columns(table, [*key_columns, COUNT_COLUMN])
    extra = set(table.column_names) - set(key_columns) - {COUNT_COLUMN, SEQUENCE_COLUMN, KIND_COLUMN}
    if extra:
        raise InvalidArgumentError(
            f"Count-layout rows hold only key columns and {COUNT_COLUMN}; unexpected {sorted(extra)}."
        )
    counts = _int_column(table, COUNT_COLUMN)
    n = table.num_rows
    if n == 0:
        return table
    codes = key_sort_codes([table.column(k) for k in key_columns])
    perm = _stable_order(codes, n)
    starts = _group_starts(codes, perm, n)
    totals = np.add.reduceat(counts[perm].astype(np.int64), starts)
    keep = totals != 0 if drop_zero else np.ones(len(starts), dtype=bool)
    result = table.take(pa.array(perm[starts][keep]))
    schema = result.schema
    replacements = {COUNT_COLUMN: totals[keep]}
    if SEQUENCE_COLUMN in schema.names:
        seq = _int_column(table, SEQUENCE_COLUMN)
        replacements[SEQUENCE_COLUMN] = np.maximum.reduceat(seq[perm], starts)[keep]
    if KIND_COLUMN in schema.names:
        replacements[KIND_COLUMN] = np.zeros(int(keep.sum()), dtype=np.int8)
    for name, values in replacements.items():
        i = schema.get_field_index(name)
        result = result.set_column(i, schema.field(i), pa.array(values, type=schema.field(i).type))
    return result


def expand_counts(table: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """The read view of the count layout: each key row repeated ``_VALUE_COUNT`` times.

    Rows with zero or negative counts produce nothing. Only the key columns are returned.
    """
    key_columns = list(key_columns)
    _require_columns(table, [*key_columns, COUNT_COLUMN])
    counts = _int_column(table, COUNT_COLUMN)
    repeats = np.maximum(counts, 0)
    rows = np.repeat(np.arange(table.num_rows, dtype=np.int64), repeats)
    return table.select(key_columns).take(pa.array(rows))
