"""Streaming merge of sorted runs: the rows of every run advance batch by batch, so the memory a
merge holds is bounded by the batches in flight, not by the size of the key section.

Each input is one sorted run: its key-value rows in key order (a run's files are key-ordered and
disjoint; a level-0 file is a run of its own), delivered as a stream of Arrow tables. One buffer
is kept per run. At each step the *bound* is the smallest "last buffered key" among the runs that
still have batches to come (an exhausted run bounds nothing): every row of every run strictly
below the bound is complete — no run can deliver another row of that key later — so those rows
are cut from the buffers (a prefix of each, the runs being sorted) and merged at once by the
vectorised :func:`engine.merge.functions.merge`. The run(s) whose last key is the bound are then
refilled, and the step repeats; once every run is exhausted the rest is merged.
:func:`align_sorted_runs` is that cutting alone (each step's rows per run, unmerged): other
key-aligned work streams with it too, e.g. a diff of two sorted states or a lookup of one
run's keys in others.

All rows of one key therefore land in one merge call, concatenated in run order exactly as a
whole-section merge concatenates them, so every merge engine, sequence field, delete handling
and row kind gives the same rows as merging the section in one piece; the chunks come out in key
order. Keys are compared by the merge driver's sort codes (Paimon's key order: nulls first,
strings by bytes, floats like ``Double.compare``), vectorised over the buffers; a run whose rows
turn out not to be in key order is reported as corrupt rather than merged wrongly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from engine.errors import CorruptDataError
from engine.merge.functions import MergeConfig, key_sort_codes, merge

# Rows per merge step, shared by the runs of a section (each run reads batches of about
# MERGE_CHUNK_ROWS / runs rows). Measured on the T8 benchmark rows (8 columns), one bucket of
# 1 + 4 runs merged on read: the peak Arrow allocation is ~100 MiB whether the section holds
# 2.7M or 5.4M rows (a whole merge: 368 and 736 MiB), a quarter of it the open files' Parquet
# readers; 65,536 rows saves another ~30 MiB but costs ~15% more time, 1,048,576 gains no time.
# It matches the writers' row-group size. Memory grows with the row width: very wide rows hold
# proportionally more per step.
MERGE_CHUNK_ROWS = 262_144
MIN_RUN_BATCH_ROWS = 4_096  # many runs: each still reads batches big enough to amortise a step


def run_batch_rows(num_runs: int, chunk_rows: int = MERGE_CHUNK_ROWS) -> int:
    """Rows per batch each of ``num_runs`` runs reads so that a step holds about ``chunk_rows``."""
    return max(min(MIN_RUN_BATCH_ROWS, chunk_rows), chunk_rows // max(num_runs, 1), 1)


def merge_sorted_runs(
    runs: Sequence[Iterable[pa.Table]],
    key_columns: Sequence[str],
    config: MergeConfig,
    *,
    drop_deletes: bool,
) -> Iterator[pa.Table]:
    """Merge sorted runs streamed as batches (see the module docstring).

    Args:
        runs: per sorted run (in the order a whole-section merge would concatenate them), its
            kv rows in key order as tables with one schema across all runs.
        key_columns: the primary-key columns.
        config: the merge engine and its options.
        drop_deletes: as :func:`engine.merge.functions.merge`.

    Yields:
        Merged chunks in key order; concatenated they equal ``merge`` of all runs' rows.

    Raises:
        CorruptDataError: a run's rows are not in key order.
        InvalidArgumentError: as :func:`engine.merge.functions.merge`.
    """
    keys = list(key_columns)
    for parts in align_sorted_runs(runs, keys):
        present = [p for p in parts if p is not None]
        table = present[0] if len(present) == 1 else pa.concat_tables(present)
        yield merge(table, keys, config, drop_deletes=drop_deletes)


def align_sorted_runs(
    runs: Sequence[Iterable[pa.Table]], key_columns: Sequence[str]
) -> Iterator[list[pa.Table | None]]:
    """Cut sorted runs streamed as batches into aligned steps (see the module docstring).

    Args:
        runs: per sorted run, its rows in key order as a stream of tables; the runs may differ in
            their other columns, but hold ``key_columns`` of the same types.
        key_columns: the columns that order the runs.

    Yields:
        Per step, one entry per run: the run's rows whose keys fall in the step (None if none).
        Steps follow key order and every key lies in exactly one step, so a key's rows of all
        runs come together; a step holds at least one row.

    Raises:
        CorruptDataError: a run's rows are not in key order.
    """
    keys = list(key_columns)
    sources = [iter(r) for r in runs]
    buffers: list[pa.Table | None] = [None] * len(sources)
    open_runs = [True] * len(sources)

    def refill(i: int) -> None:
        for batch in sources[i]:
            if batch.num_rows:
                held = buffers[i]
                buffers[i] = batch if held is None or held.num_rows == 0 else pa.concat_tables([held, batch])
                return
        open_runs[i] = False

    for i in range(len(sources)):
        refill(i)
    while True:
        live = [i for i, b in enumerate(buffers) if b is not None and b.num_rows]
        if not any(open_runs):
            if live:
                yield [b if b is not None and b.num_rows else None for b in buffers]
            return
        tables: list[pa.Table] = [buffers[i] for i in live]
        sizes = np.array([t.num_rows for t in tables], dtype=np.int64)
        ends = np.cumsum(sizes)
        codes = key_sort_codes([_key_column(tables, k) for k in keys])
        # An open run always holds rows (refill either adds some or closes it): its last row bounds.
        lasts = np.array([ends[j] - 1 for j, i in enumerate(live) if open_runs[i]], dtype=np.int64)
        order = np.lexsort([c[lasts] for c in reversed(codes)]) if codes else np.zeros(1, np.int64)
        bound = int(lasts[order[0]])
        _check_sorted(codes, ends)
        below, at_bound = _compare_to_row(codes, bound, int(ends[-1]))
        parts: list[pa.Table | None] = [None] * len(sources)
        starts = ends - sizes
        for j, i in enumerate(live):
            count = int(below[int(starts[j]) : int(ends[j])].sum())  # a prefix: the run is sorted
            table = tables[j]
            if count:
                parts[i] = table.slice(0, count)
                buffers[i] = table.slice(count)
        if any(p is not None for p in parts):
            yield parts
        for j, i in enumerate(live):
            if open_runs[i] and at_bound[int(ends[j]) - 1]:
                refill(i)


def _key_column(tables: Sequence[pa.Table], name: str) -> pa.ChunkedArray:
    """One key column over every buffer (cast to the first's type where a run differs)."""
    target = tables[0].schema.field(name).type
    chunks = []
    for t in tables:
        column = t.column(name)
        chunks.extend((column if column.type == target else column.cast(target)).chunks)
    return pa.chunked_array(chunks, target)


def _check_sorted(codes: Sequence[np.ndarray], ends: np.ndarray) -> None:
    """Raise unless every run's buffered rows are in key order. A refilled run keeps at least its
    bound row, so consecutive checks also cover the seams between its batches and files."""
    n = int(ends[-1])
    if n < 2 or not codes:
        return
    descending = np.zeros(n - 1, dtype=bool)
    equal = np.ones(n - 1, dtype=bool)
    for code in codes:
        a, b = code[:-1], code[1:]
        descending |= equal & (a > b)
        equal &= a == b
    descending[ends[:-1] - 1] = False  # pairs across two runs' buffers are no order
    if descending.any():
        raise CorruptDataError(
            "a sorted run's rows are not in key order (a data file is not sorted by its primary key): "
            "the merge cannot stream it; rewrite the table's files (full compaction) or report it"
        )


def _compare_to_row(codes: Sequence[np.ndarray], row: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether its key is below row ``row``'s key, and whether it equals it (lexicographic
    over the code arrays, first most significant)."""
    below = np.zeros(n, dtype=bool)
    equal = np.ones(n, dtype=bool)
    for code in codes:
        pivot = code[row]
        below |= equal & (code < pivot)
        equal &= code == pivot
    return below, equal
