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

import itertools
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from engine.errors import CorruptDataError
from engine.merge.config import MergeConfig
from engine.merge.functions import key_sort_codes, merge

# Rows per merge step, shared by the runs of a section (each run reads batches of about
# MERGE_CHUNK_ROWS / runs rows). Measured on the T8 benchmark rows (8 columns), one bucket of
# 1 + 4 runs merged on read: the peak Arrow allocation is ~100 MiB whether the section holds
# 2.7M or 5.4M rows (a whole merge: 368 and 736 MiB), a quarter of it the open files' Parquet
# readers; 65,536 rows saves another ~30 MiB but costs ~15% more time, 1,048,576 gains no time.
# It matches the writers' row-group size. Memory grows with the row width: very wide rows hold
# proportionally more per step.
MERGE_CHUNK_ROWS = 262_144
MIN_RUN_BATCH_ROWS = 4_096  # many runs: each still reads batches big enough to amortise a step
GROUP_FANOUT = 16  # runs aligned at once; more are combined in groups first (see aligned_rows)
SPILL_RUNS = 64  # more runs than this are combined into scratch files first (see aligned_rows)


def run_batch_rows(num_runs: int, chunk_rows: int = MERGE_CHUNK_ROWS) -> int:
    """Rows per batch each of ``num_runs`` runs reads so that a step holds about ``chunk_rows``."""
    return max(min(MIN_RUN_BATCH_ROWS, chunk_rows), chunk_rows // max(num_runs, 1), 1)


def merge_sorted_runs(
    runs: Sequence[Iterable[pa.Table]],
    key_columns: Sequence[str],
    config: MergeConfig,
    *,
    drop_deletes: bool,
    chunk_rows: int | None = None,
) -> Iterator[pa.Table]:
    """Merge sorted runs streamed as batches (see the module docstring).

    Args:
        runs: per sorted run (in the order a whole-section merge would concatenate them), its
            kv rows in key order as tables with one schema across all runs.
        key_columns: the primary-key columns.
        config: the merge engine and its options.
        drop_deletes: as :func:`engine.merge.functions.merge`.
        chunk_rows: as :func:`aligned_rows`.

    Yields:
        Merged chunks in key order; concatenated they equal ``merge`` of all runs' rows.

    Raises:
        CorruptDataError: a run's rows are not in key order.
        InvalidArgumentError: as :func:`engine.merge.functions.merge`.
    """
    keys = list(key_columns)
    for table in aligned_rows(runs, keys, chunk_rows):
        yield merge(table, keys, config, drop_deletes=drop_deletes)


def aligned_rows(
    runs: Sequence[Iterable[pa.Table]], key_columns: Sequence[str], chunk_rows: int | None = None
) -> Iterator[pa.Table]:
    """Per aligned step (:func:`align_sorted_runs`), the rows of every run concatenated in run
    order; the runs share one schema. ``chunk_rows``: the rows the runs may read together beyond
    one batch each (default :data:`MERGE_CHUNK_ROWS`, read at call time).

    A step costs work in proportion to every buffered row, while with many runs whose keys
    interleave it may complete little more than one batch: 300 level-0 runs merged in 12 times the
    time of one whole merge. So more than ``GROUP_FANOUT`` runs are first combined in groups of
    consecutive runs, each group a sorted run of its own (:func:`_group_as_run`), level by level
    until at most ``GROUP_FANOUT`` remain: a row then costs about ``GROUP_FANOUT`` per level
    instead of the number of runs. A key's rows keep their run order through every level.

    Every run being merged holds a batch, and a small file is read whole: with more than
    ``SPILL_RUNS`` runs (1,000 level-0 files after a write of 1,000 Spark tasks) that is the whole
    bucket. So first the runs are combined into sorted scratch files (Arrow IPC, in the system's
    temporary directory, removed when the merge ends or fails): consecutive small runs, read whole,
    are packed into groups of up to ``chunk_rows`` rows, each sorted once
    (:func:`_packed_small_runs`); if more than ``SPILL_RUNS`` runs still remain (many big ones),
    they are combined group by group, each group's files open only while it is written.
    """
    keys = list(key_columns)
    chunk = MERGE_CHUNK_ROWS if chunk_rows is None else chunk_rows
    streams: list[Iterable[pa.Table]] = list(runs)
    scratch: str | None = None
    try:
        if len(streams) > SPILL_RUNS:
            scratch = tempfile.mkdtemp(prefix="dyntable-merge-")
            streams = _packed_small_runs(streams, keys, chunk, scratch)
            while len(streams) > SPILL_RUNS:
                streams = [
                    _spilled(_group_as_run(streams[i : i + GROUP_FANOUT], keys, chunk), scratch)
                    for i in range(0, len(streams), GROUP_FANOUT)
                ]
        while len(streams) > GROUP_FANOUT:
            groups = range(0, len(streams), GROUP_FANOUT)
            growth = max(chunk // len(groups), 1)  # the groups of a level share one growth allowance
            streams = [_group_as_run(streams[i : i + GROUP_FANOUT], keys, growth) for i in groups]
        for parts in align_sorted_runs(streams, keys, chunk):
            present = [p for p in parts if p is not None]
            yield present[0] if len(present) == 1 else pa.concat_tables(present)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _packed_small_runs(
    runs: Sequence[Iterable[pa.Table]], keys: list[str], budget_rows: int, scratch: str
) -> list[Iterable[pa.Table]]:
    """The runs with every stretch of consecutive small runs (at most ``budget_rows //
    GROUP_FANOUT`` rows each) replaced by scratch runs of up to ``budget_rows`` rows: the
    stretch's rows concatenated in run order, checked run by run for key order, then stably sorted
    by key once (a key's rows keep their run order). A bigger run keeps its place: the first
    ``GROUP_FANOUT`` of them as streams (each holding the rows read to tell its size), any further
    one copied to a scratch file as it is read, so memory stays bounded however many there are.

    1,000 level-0 files of 2,500 rows over a base run then become ten scratch runs and the base,
    merged in one step each, where grouping them by alignment took three levels of steps.
    """
    small_rows = budget_rows // GROUP_FANOUT
    packed: list[Iterable[pa.Table]] = []
    pending: list[pa.Table] = []
    pending_rows = 0
    kept_big = 0

    def flush() -> None:
        nonlocal pending, pending_rows
        if pending:
            packed.append(_spilled([_sorted_stretch(pending, keys)], scratch))
        pending, pending_rows = [], 0

    for run in runs:
        source = iter(run)
        pulled: list[pa.Table] = []
        rows = 0
        for batch in source:
            if batch.num_rows:
                pulled.append(batch)
                rows += batch.num_rows
            if rows > small_rows:
                break
        if rows > small_rows:  # a big run keeps its place, after the stretch before it
            flush()
            stream = itertools.chain(pulled, source)
            packed.append(stream if kept_big < GROUP_FANOUT else _spilled(stream, scratch))
            kept_big += 1
            continue
        if not rows:
            continue  # an empty run contributes nothing
        if pending_rows + rows > budget_rows:
            flush()
        pending.append(pulled[0] if len(pulled) == 1 else pa.concat_tables(pulled))
        pending_rows += rows
    flush()
    return packed


def _sorted_stretch(tables: Sequence[pa.Table], keys: list[str]) -> pa.Table:
    """Whole sorted runs (in run order) as one sorted run; raises CorruptDataError if one of them
    is not in key order (a stable sort would hide it)."""
    rows = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    codes = key_sort_codes([rows.column(k) for k in keys])
    if not codes or rows.num_rows < 2:
        return rows
    _check_sorted(codes, np.cumsum([t.num_rows for t in tables], dtype=np.int64))
    if len(tables) == 1:
        return rows
    return rows.take(pa.array(np.lexsort(codes[::-1]), pa.int64()))  # lexsort is stable


def _spilled(run: Iterable[pa.Table], scratch: str) -> Iterator[pa.Table]:
    """Write a sorted run to a scratch file now (in batches of ``MIN_RUN_BATCH_ROWS``); the
    returned stream reads it back batch by batch, memory-mapped."""
    path = os.path.join(scratch, f"run-{uuid.uuid4().hex}.arrow")
    writer: pa.ipc.RecordBatchFileWriter | None = None
    try:
        for table in run:
            if writer is None:
                writer = pa.ipc.new_file(path, table.schema)
            writer.write_table(table, max_chunksize=MIN_RUN_BATCH_ROWS)
    finally:
        if writer is not None:
            writer.close()
    return _read_spilled(path) if writer is not None else iter(())


def _read_spilled(path: str) -> Iterator[pa.Table]:
    with pa.memory_map(path) as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield pa.Table.from_batches([reader.get_batch(i)])


def _group_as_run(
    runs: Sequence[Iterable[pa.Table]], keys: list[str], growth_rows: int
) -> Iterator[pa.Table]:
    """Consecutive sorted runs as one sorted run: each aligned step's rows, concatenated in run
    order and stably sorted by key (so a key's rows stay in run order)."""
    for parts in align_sorted_runs(runs, keys, growth_rows):
        present = [p for p in parts if p is not None]
        if len(present) == 1:
            yield present[0]
            continue
        rows = pa.concat_tables(present)
        codes = key_sort_codes([rows.column(k) for k in keys])
        if codes:
            rows = rows.take(pa.array(np.lexsort(codes[::-1]), pa.int64()))  # lexsort is stable
        yield rows


def align_sorted_runs(
    runs: Sequence[Iterable[pa.Table]], key_columns: Sequence[str], growth_rows: int | None = None
) -> Iterator[list[pa.Table | None]]:
    """Cut sorted runs streamed as batches into aligned steps (see the module docstring).

    Args:
        runs: per sorted run, its rows in key order as a stream of tables; the runs may differ in
            their other columns, but hold ``key_columns`` of the same types.
        key_columns: the columns that order the runs.
        growth_rows: how many rows the runs may read together beyond one batch each (see below;
            default :data:`MERGE_CHUNK_ROWS`, read at call time).

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

    # Rows a run reads when it is refilled (at least one batch). A step costs work in proportion to
    # every buffered row but completes only the rows below the bound, so a run that bounds steps
    # (denser in keys than the others, e.g. a big base run among many small level-0 runs) reads
    # twice as much each time it bounds one, while the runs' reads together stay within
    # ``growth_rows`` beyond one batch each.
    want = [0] * len(sources)
    growth = MERGE_CHUNK_ROWS if growth_rows is None else growth_rows

    def refill(i: int) -> int:
        held = buffers[i]
        pieces = [held] if held is not None and held.num_rows else []
        got = 0
        for batch in sources[i]:
            if batch.num_rows:
                pieces.append(batch)
                got += batch.num_rows
                if got >= want[i]:
                    break
        else:
            open_runs[i] = False
        if pieces:
            buffers[i] = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
        return got

    def grow(i: int, got: int) -> None:
        wanted = min(2 * max(want[i], got), growth)
        if sum(want) - want[i] + wanted <= growth:
            want[i] = wanted

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
                grow(i, refill(i))


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
