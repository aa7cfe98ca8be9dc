"""Partition a bucket's files by key interval into independent sections of sorted runs.

Used to plan reads and merges of one bucket (Paimon's ``IntervalPartition``):

* Files are sorted by ``(min_key, max_key)`` and grouped into **sections**: maximal groups whose
  key ranges overlap transitively. Key ranges are inclusive, so files that share a boundary
  key are in the same section. Sections are pairwise disjoint and in key order, so each can be
  merged on its own (bounded memory) and the results concatenated.
* Within a section, files are packed into as few **sorted runs** (non-overlapping, key-ordered
  files) as possible: greedily in key order, each file joins the run whose last file ends
  earliest if it starts after that end, else it opens a new run. This is optimal: the run
  count equals the largest number of files covering one key.
* A section of one run needs no merge (read it raw); several runs need a merge read.

Per-file Python only; no row data is touched. ``key_range(file)`` supplies decoded key tuples.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from engine.errors import InvalidArgumentError
from engine.lsm.levels import FileMeta, KeyRangeFn, SortedRun


def partition_by_key_intervals(files: Iterable[FileMeta], key_range: KeyRangeFn) -> list[list[SortedRun]]:
    """Group files into key-disjoint sections, each packed into the fewest sorted runs.

    Args:
        files: the files of one bucket (any order, any levels).
        key_range: ``file -> (min_key, max_key)``, inclusive, comparable tuples.

    Returns:
        Sections in key order; each is a list of sorted runs ordered by their first key.

    A file whose min key is greater than its max key in Paimon's order was sorted by a writer
    with another order (pypaimon puts NaN first, and ties -0.0 with 0.0, where Java's
    ``Double.compare`` puts NaN last): its range says nothing, so it is taken to span every key
    of the bucket, and the merge (which sorts rows in Paimon's order) decides.
    """
    keyed = []
    misordered = []
    for f in files:
        lo, hi = key_range(f)
        if lo > hi:
            misordered.append((hi, lo, f))
        else:
            keyed.append((lo, hi, f))
    if misordered:
        every = [*keyed, *misordered]
        lowest, highest = min(t[0] for t in every), max(t[1] for t in every)
        keyed += [(lowest, highest, f) for _, _, f in misordered]
    # Stable sort on keys only: files are not required to be comparable themselves.
    keyed.sort(key=lambda t: (t[0], t[1]))

    sections: list[list[SortedRun]] = []
    current: list[tuple[Any, Any, Any]] = []
    bound: Any = None
    for lo, hi, f in keyed:
        if current and lo > bound:
            sections.append(_pack_runs(current))
            current = []
        if not current or hi > bound:
            bound = hi
        current.append((lo, hi, f))
    if current:
        sections.append(_pack_runs(current))
    return sections


def _pack_runs(section: Sequence[tuple[Any, Any, Any]]) -> list[SortedRun]:
    runs: list[list[FileMeta]] = []
    # Heap of (max key of the run's last file, run index): the run that ends first on top.
    heap: list[tuple[Any, int]] = []
    for lo, hi, f in section:
        if heap and lo > heap[0][0]:
            _, idx = heapq.heappop(heap)
            runs[idx].append(f)
        else:
            idx = len(runs)
            runs.append([f])
        heapq.heappush(heap, (hi, idx))
    # Runs were opened in key order of their first file, so index order is key order.
    return [SortedRun.from_sorted(r) for r in runs]


def section_needs_merge(section: Sequence[SortedRun]) -> bool:
    """Whether a section must be merge-read (it has more than one sorted run)."""
    return len(section) > 1


def _section_weight(section: Sequence[SortedRun], open_file_cost: int) -> int:
    return sum(max(f.file_size, open_file_cost) for run in section for f in run.files)


def split_sections_by_size(
    sections: Sequence[list[SortedRun]], target_bytes: int, open_file_cost: int = 0
) -> list[list[list[SortedRun]]]:
    """Pack consecutive sections into groups of about ``target_bytes`` (one read task each).

    Sections are never split and keep their order; a group is closed when the next section
    would push it over the target, so a single section larger than the target forms its own
    group. Each file weighs ``max(file_size, open_file_cost)`` (Paimon's ``source.split.
    open-file-cost`` idea: many tiny files still cost an open each).

    Args:
        sections: output of :func:`partition_by_key_intervals`.
        target_bytes: wanted group weight (> 0), e.g. ``source.split.target-size``.
        open_file_cost: minimum weight of one file in bytes (>= 0).

    Returns:
        Groups of consecutive sections; concatenated they give back ``sections``.

    Raises:
        InvalidArgumentError: ``target_bytes`` <= 0 or ``open_file_cost`` < 0.
    """
    if target_bytes <= 0:
        raise InvalidArgumentError(f"split target size must be > 0 bytes, got {target_bytes}")
    if open_file_cost < 0:
        raise InvalidArgumentError(f"open file cost must be >= 0 bytes, got {open_file_cost}")
    groups: list[list[list[SortedRun]]] = []
    group: list[list[SortedRun]] = []
    weight = 0
    for section in sections:
        w = _section_weight(section, open_file_cost)
        if group and weight + w > target_bytes:
            groups.append(group)
            group, weight = [], 0
        group.append(section)
        weight += w
    if group:
        groups.append(group)
    return groups
