"""Vectorised routing of rows to (partition, bucket) groups.

Rows are sorted once by the partition columns (and bucket id), boundaries between groups are
found by comparing neighbours column-wise, and each group is a zero-copy slice of the sorted
table. Python work is per group, never per row.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BUCKET_COLUMN = "__dyntable_bucket"


def neighbour_changes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Boolean mask of length n-1: True where row i+1 differs from row i (NULL-aware)."""
    if len(column) < 2:
        return np.zeros(0, dtype=bool)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    a, b = column.slice(1), column.slice(0, len(column) - 1)
    neq = pc.fill_null(pc.not_equal(a, b), False).to_numpy(zero_copy_only=False)
    a_null = a.is_null().to_numpy(zero_copy_only=False)
    b_null = b.is_null().to_numpy(zero_copy_only=False)
    return neq | (a_null != b_null)


def group_rows(
    table: pa.Table, key_columns: Sequence[str], buckets: np.ndarray | None = None
) -> Iterator[tuple[tuple[object, ...], int, pa.Table]]:
    """Yield (partition values, bucket, rows) for every distinct (partition, bucket) in ``table``.

    Rows keep their relative order inside a group (stable sort).
    """
    n = table.num_rows
    if n == 0:
        return
    keys = list(key_columns)
    if not keys and buckets is None:
        yield (), 0, table
        return
    work = table
    sort_keys = [(k, "ascending", "at_start") for k in keys]
    if buckets is not None:
        work = work.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))
        sort_keys.append((BUCKET_COLUMN, "ascending", "at_start"))
    order = pc.sort_indices(work, sort_keys=sort_keys)
    if not _is_identity(order):
        work = work.take(order)
    change = np.zeros(n - 1, dtype=bool)
    for k in keys:
        change |= neighbour_changes(work.column(k))
    if buckets is not None:
        b = work.column(BUCKET_COLUMN).to_numpy()
        change |= b[1:] != b[:-1]
    starts = np.concatenate(([0], np.nonzero(change)[0] + 1))
    ends = np.concatenate((starts[1:], [n]))
    out = work.drop_columns([BUCKET_COLUMN]) if buckets is not None else work
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        values = tuple(work.column(k)[s].as_py() for k in keys)
        bucket = int(work.column(BUCKET_COLUMN)[s].as_py()) if buckets is not None else 0
        yield values, bucket, out.slice(s, e - s)


def _is_identity(order: pa.Array) -> bool:
    arr = order.to_numpy()
    return bool(arr.size == 0 or (arr[0] == 0 and np.all(np.diff(arr) == 1)))
