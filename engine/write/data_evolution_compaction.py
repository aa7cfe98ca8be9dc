"""Compaction of a data-evolution table: the files of adjacent row-id ranges merged into one file.

A data-evolution table (``data-evolution.enabled``) gathers, per row-id range, the file that
first wrote the rows and the files that later rewrote some of their columns
(:mod:`engine.meta.row_ranges`). Compaction follows Paimon 2.0's ``DataEvolutionCompactCoordinator``
and ``DataEvolutionNormalCompactTask``:

* the bucket's row-id groups, in row-id order, are packed into bins of **adjacent** ranges (no
  gap in the row ids) up to ``target-file-size``; a group larger than that is a bin alone;
* a bin is rewritten when it holds at least ``compaction.min.file-num`` files (a full compaction:
  two), so a range held by several files, or several small adjacent files, become one;
* the rewrite reads each group's rows assembled as every reader sees them
  (:mod:`engine.read.data_evolution`), writes them as **one** whole-row file (never rolled: its
  rows must keep consecutive row ids), with the bin's first row id and the smallest and largest
  sequence numbers of the files it replaces; the commit checks that the new files hold exactly
  the row ids of the files they replace (``engine.meta.row_ranges.check_ranges_kept``).

With deletion vectors, the rewrite keeps the deleted rows (their row ids stay taken) and the
commit moves each group's deletion vector — its anchor's, the oldest file's — onto the new file,
its positions shifted by where the group starts in it (:func:`carried_deletions`; Paimon's
``DataEvolutionCompactDeletionVectorRewriter`` does the same), so every reader hides the same rows
before and after.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from engine.commit_messages import CommitMessage
from engine.files.reader import data_file_path, read_data_file
from engine.meta.deletion_vectors import DeletionVector
from engine.meta.manifest import DataFileMeta, FileSource
from engine.meta.row_ranges import anchor_file, group_by_row_id, row_range
from engine.read.data_evolution import read_group
from engine.scan.planner import DataSplit
from engine.store import FileStore
from engine.write.file_writer import DataFileWriter

Group = list[DataFileMeta]


def carried_deletions(
    messages: Sequence[CommitMessage], current: Callable[[str], DeletionVector | None]
) -> dict[str, np.ndarray]:
    """The positions each new file of a data-evolution compaction must mark deleted: for every
    group it replaces, the group's deletion vector (``current`` of its anchor, as the commit would
    write it) shifted by the group's first row id minus the new file's."""
    out: dict[str, np.ndarray] = {}
    for m in messages:
        groups = group_by_row_id(list(m.compact_before))
        for new in m.compact_after:
            lo, hi = row_range(new)
            parts = []
            for g in groups:
                start, end = row_range(g[0])
                if start < lo or end > hi:
                    continue
                dv = current(anchor_file(g).file_name)
                if dv is not None and dv.cardinality:
                    parts.append(dv.positions() + (start - lo))
            if parts:
                out[new.file_name] = np.concatenate(parts)
    return out


def bins_to_compact(store: FileStore, splits: Sequence[DataSplit], full: bool) -> list[list[Group]]:
    """The bins of row-id groups one bucket's compaction rewrites (module docstring); [] when none."""
    target = store.options.target_file_size(False)
    threshold = 2 if full else store.options.compaction_min_file_num
    groups = group_by_row_id([f for s in splits for f in s.files])
    bins: list[list[Group]] = []
    current: list[Group] = []
    weight = 0
    last = None
    for g in groups:
        lo, hi = row_range(g[0])
        size = sum(f.file_size for f in g)
        if current and (last is None or lo != last + 1 or weight + size > target):
            bins.append(current)
            current, weight = [], 0
        current.append(g)
        weight += size
        last = hi
    if current:
        bins.append(current)
    return [b for b in bins if sum(len(g) for g in b) >= threshold]


def _rewrite(
    store: FileStore, split: DataSplit, groups: Sequence[Group]
) -> tuple[list[DataFileMeta], DataFileMeta]:
    """One bin's files, and the one whole-row file that replaces them."""
    part_dir = store.partition_dir(split.partition_values)
    fields = list(store.schema.fields)
    parts = []
    for g in groups:
        if len(g) == 1:
            path = data_file_path(store, part_dir, split.bucket, g[0])
            parts.append(read_data_file(store, path, g[0], fields))
        else:
            parts.append(read_group(store, part_dir, split.bucket, g, fields))
    rows = pa.concat_tables(parts)
    before = [f for g in groups for f in g]
    writer = DataFileWriter(store, part_dir, split.bucket, file_source=FileSource.COMPACT)
    writer.target_size = 1 << 62  # one file: its rows keep consecutive row ids
    (written,) = writer.write_append(rows, 0)
    after = dataclasses.replace(
        written,
        first_row_id=row_range(groups[0][0])[0],
        min_sequence_number=min(f.min_sequence_number for f in before),
        max_sequence_number=max(f.max_sequence_number for f in before),
    )
    return before, after


def compact_bucket(store: FileStore, splits: Sequence[DataSplit], full: bool) -> CommitMessage | None:
    """Rewrite one bucket's bins (all ``splits`` share partition and bucket); None when none is due.
    Deleted rows are kept: the commit carries the deletion vectors over (:func:`carried_deletions`)."""
    bins = bins_to_compact(store, splits, full)
    if not bins:
        return None
    first = splits[0]
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    for b in bins:
        old, new = _rewrite(store, first, b)
        before.extend(old)
        after.append(new)
    return CommitMessage(first.partition, first.bucket, first.total_buckets,
                         compact_before=tuple(before), compact_after=tuple(after))


__all__ = ["bins_to_compact", "carried_deletions", "compact_bucket"]
