"""Row-choosing merge engines: ``deduplicate``, ``first-row`` and ``partial-update``.

Each engine receives the kv table (see :mod:`engine.merge.functions`) and a :class:`SortedGroups` — the
permutation that sorts rows by key then sequence, and where each key's group starts — and returns
one row per surviving key, in key order, with the input schema. The semantics are Paimon's merge
functions applied to every group in sequence order, computed column-wise with numpy:

* ``deduplicate`` keeps the last row of the group, whatever its kind: a ``-D``/``-U`` winner stays
  so that it shadows older runs, and is dropped only when ``drop_deletes`` (read or top-level
  compaction).
* ``first-row`` keeps the first row; retract rows (``-U``/``-D``) are an error (Paimon:
  "can not accept DELETE/UPDATE_BEFORE records") unless ``ignore-delete`` removed them upstream.
* ``partial-update`` keeps, per column, the last non-null value among the add rows (``+I``/``+U``).
  Retract rows are an error unless ``ignore-delete`` (removed upstream) or
  ``partial-update.remove-record-on-delete``: then a ``-D`` forgets everything before it (the
  merged row is ``-D`` if nothing was added after it) and ``-U`` rows are skipped. The merged kind
  is ``+I`` like Paimon's.
* ``partial-update`` with sequence groups (``fields.<seq cols>.sequence-group`` = members): the
  group's sequence columns and members come together from one row, the last among the rows with
  the highest sequence (ascending, nulls first; rows whose sequence columns are all null leave the
  group alone), as Paimon's row-by-row "not lower than the current" update gives. A winning
  retraction clears the members and sets the sequence. Retractions are then accepted and touch
  no column outside a group; a key with retractions only merges into a ``-D`` row. A member with
  an order-free aggregate function (sum, product, min, max, bool_and/or) folds every row of its
  group instead, older ones too (Paimon's ``agg`` and ``aggReversed`` agree for them); the values
  come in precomputed (``engine.merge.functions`` owns the aggregate functions).

Invariants: the merged ``_SEQUENCE_NUMBER`` is the group's maximum, so a merged run keeps the
sequence range of its inputs; no function here depends on the order of runs in the input beyond
the sort that produced the groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from engine.errors import InvalidArgumentError
from engine.merge.config import MergeConfig

SEQUENCE_COLUMN = "_SEQUENCE_NUMBER"
KIND_COLUMN = "_VALUE_KIND"
SYSTEM_COLUMNS = (SEQUENCE_COLUMN, KIND_COLUMN)

# RowKind bytes (Paimon's RowKind.toByteValue).
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3


@dataclass(frozen=True)
class SortedGroups:
    """Rows sorted by key then sequence, cut into one group per distinct key.

    Attributes:
        perm: sorted position -> input row index.
        starts: sorted position of the first row of each group (strictly increasing, starts[0] == 0).
        n: number of rows (> 0).
    """

    perm: np.ndarray
    starts: np.ndarray
    n: int

    @property
    def num_groups(self) -> int:
        return len(self.starts)

    @cached_property
    def lasts(self) -> np.ndarray:
        """Sorted position of the last row of each group."""
        return np.append(self.starts[1:] - 1, self.n - 1)

    @cached_property
    def sizes(self) -> np.ndarray:
        return self.lasts - self.starts + 1

    @cached_property
    def positions(self) -> np.ndarray:
        return np.arange(self.n, dtype=np.int64)

    @cached_property
    def group_of_row(self) -> np.ndarray:
        """Group id of every sorted position."""
        return np.repeat(np.arange(self.num_groups, dtype=np.int64), self.sizes)

    def last_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the last sorted position where ``mask`` holds, or -1."""
        return np.maximum.reduceat(np.where(mask, self.positions, -1), self.starts)

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the first sorted position where ``mask`` holds, or ``n`` if none."""
        return np.minimum.reduceat(np.where(mask, self.positions, self.n), self.starts)

    def any(self, mask: np.ndarray) -> np.ndarray:
        return np.logical_or.reduceat(mask, self.starts)

    def max(self, values: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(values, self.starts)


def is_retract(kinds: np.ndarray) -> np.ndarray:
    """``-U`` and ``-D`` rows."""
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def validity(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Boolean numpy mask of non-null slots."""
    if column.null_count == 0:
        return np.ones(len(column), dtype=bool)
    return column.is_valid().to_numpy(zero_copy_only=False)


def take_or_null(column: pa.Array | pa.ChunkedArray, rows: np.ndarray, missing: np.ndarray) -> pa.Array:
    """``column[rows]`` with null wherever ``missing``; the result has the column's type."""
    indices = pa.array(np.where(missing, 0, rows), type=pa.int64(), mask=missing if missing.any() else None)
    taken = column.take(indices)
    return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken


def with_system_columns(table: pa.Table, seq: np.ndarray | None, kinds: np.ndarray | None) -> pa.Table:
    """Replace ``_SEQUENCE_NUMBER`` / ``_VALUE_KIND`` values, keeping their field types."""
    schema = table.schema
    for name, values in ((SEQUENCE_COLUMN, seq), (KIND_COLUMN, kinds)):
        if values is None:
            continue
        i = schema.get_field_index(name)
        table = table.set_column(i, schema.field(i), pa.array(values, type=schema.field(i).type))
    return table


def merge_deduplicate(
    table: pa.Table,
    groups: SortedGroups,
    kinds: np.ndarray,
    seq: np.ndarray,
    config: MergeConfig,
    drop_deletes: bool,
) -> pa.Table:
    """Keep the last row of every group (``kinds``/``seq`` are in input order)."""
    winners = groups.lasts
    out_kinds = kinds[groups.perm[winners]]
    # Sorted by sequence within a group, the last row carries the maximum sequence number unless
    # user sequence fields decide the order.
    out_seq = groups.max(seq[groups.perm]) if config.sequence_fields else None
    if drop_deletes:
        keep = ~is_retract(out_kinds)
        winners = winners[keep]
        out_seq = out_seq[keep] if out_seq is not None else None
    result = table.take(groups.perm[winners])
    return with_system_columns(result, out_seq, None)


def merge_first_row(
    table: pa.Table,
    groups: SortedGroups,
    kinds: np.ndarray,
    seq: np.ndarray,
    config: MergeConfig,
    drop_deletes: bool,
) -> pa.Table:
    """Keep the first row of every group; retract rows are rejected (``kinds``/``seq`` in input order)."""
    if is_retract(kinds).any():
        raise InvalidArgumentError(
            "The first-row merge engine cannot accept DELETE/UPDATE_BEFORE (-D/-U) records; "
            "set the table option 'ignore-delete' = 'true' to ignore them."
        )
    result = table.take(groups.perm[groups.starts])
    # Without sequence fields (first-row forbids them) the last row holds the maximum sequence.
    return with_system_columns(result, seq[groups.perm[groups.lasts]], None)


def merge_partial_update(
    table: pa.Table,
    groups: SortedGroups,
    kinds: np.ndarray,
    seq: np.ndarray,
    config: MergeConfig,
    drop_deletes: bool,
    sequence_groups: Sequence[tuple[Sequence[str], Sequence[str], np.ndarray, np.ndarray]] = (),
    aggregated: Mapping[str, pa.Array] | None = None,
) -> pa.Table:
    """Per column, the last non-null value of the group's add rows; the columns of a sequence
    group from that group's winning row (``sequence_groups``: sequence columns, members, winner
    per key group as a sorted position or -1, and the rows taking part), or, for members with an
    aggregate function, their ``aggregated`` value per key group (see the module docstring)."""
    kinds, seq = kinds[groups.perm], seq[groups.perm]
    retract = is_retract(kinds)
    is_add = ~retract
    remove_on_delete = config.partial_update_remove_record_on_delete
    if retract.any() and not remove_on_delete and not sequence_groups:
        raise InvalidArgumentError(
            "The partial-update merge engine cannot accept DELETE/UPDATE_BEFORE (-D/-U) records by "
            "default: set 'ignore-delete' = 'true' to ignore them, "
            "'partial-update.remove-record-on-delete' = 'true' to remove the whole row on -D, or "
            "sequence groups ('fields.<seq>.sequence-group') to retract their columns."
        )
    if remove_on_delete:
        last_delete = groups.last_where(kinds == DELETE)
        eligible = is_add & (groups.positions > np.repeat(last_delete, groups.sizes))
    else:
        last_delete = np.full(groups.num_groups, -1, dtype=np.int64)
        eligible = is_add
    last_add = groups.last_where(eligible)
    added = last_add >= 0
    if sequence_groups:
        # Paimon's result of retractions only: a -D row (its key from the last of them).
        deleted = ~added
        last_delete = np.where(deleted, groups.lasts, -1)
    else:
        deleted = ~added & (last_delete >= 0)
    # Without sequence groups, key groups holding only skipped -U rows produce nothing, like
    # Paimon's empty merge result.
    keep = added if drop_deletes else (added | deleted)
    group_of_column = {}
    for seq_columns, members, winners, _ in sequence_groups:
        for name in seq_columns:
            group_of_column[name] = (winners, False)
        for name in members:
            group_of_column[name] = (winners, True)

    perm = groups.perm
    columns: list[pa.Array] = []
    schema = table.schema
    for i, field in enumerate(schema):
        if field.name in SYSTEM_COLUMNS:
            columns.append(None)
            continue
        column = table.column(i)
        if aggregated and field.name in aggregated:
            columns.append(aggregated[field.name].filter(pa.array(keep)))
            continue
        if field.name in group_of_column:
            winners, member = group_of_column[field.name]
            missing = winners < 0
            if member:  # a retraction that wins its group clears the members
                missing |= retract[np.where(missing, 0, winners)]
            columns.append(take_or_null(column, perm[np.where(missing, 0, winners)][keep], missing[keep]))
            continue
        if column.null_count == 0:
            chosen = last_add
        else:
            chosen = groups.last_where(eligible & validity(column)[perm])
        # A -D result carries the -D row's own values (only its key matters to readers).
        chosen = np.where(deleted, last_delete, chosen)[keep]
        missing = chosen < 0
        columns.append(take_or_null(column, perm[np.where(missing, 0, chosen)], missing))
    out_kinds = np.where(deleted, DELETE, INSERT).astype(np.int8)[keep]
    out_seq = groups.max(seq)[keep]
    for i, field in enumerate(schema):
        if field.name == SEQUENCE_COLUMN:
            columns[i] = pa.array(out_seq, type=field.type)
        elif field.name == KIND_COLUMN:
            columns[i] = pa.array(out_kinds, type=field.type)
    return pa.Table.from_arrays(columns, schema=schema)
