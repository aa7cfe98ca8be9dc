"""Incremental clustering of append tables (Paimon 1.3's ``clustering.incremental``): which files
a compaction clusters, in which order, and to which level.

A table with ``clustering.incremental = true`` and ``clustering.columns`` keeps its files in
levels, as Paimon does: new writes land in level 0 (unclustered, each file a sorted run); every
file of a level ``i > 0`` was written by one clustering, so the level is one sorted run. A
compaction of such a table picks, per partition, the runs to cluster with the universal strategy
(``compaction.max-size-amplification-percent``, ``compaction.size-ratio``,
``num-sorted-run.compaction-trigger``) or, when full, every run into the max level (unless the
partition already is one run there with the same clustering columns); the picked files are sorted
together by ``clustering.strategy`` (default by the column count: ``order`` for one, ``zorder``
below five, ``hilbert`` from five) and rewritten at the unit's output level. Data already
clustered at higher levels is rewritten rarely, so write amplification stays bounded.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.errors import InvalidArgumentError, UnsupportedTableError
from engine.lsm.compact_strategy import CompactUnit
from engine.lsm.levels import SortedRun
from engine.meta.manifest import DataFileMeta
from engine.options import CLUSTERING_COLUMNS, CLUSTERING_INCREMENTAL, CLUSTERING_STRATEGY
from engine.store import FileStore
from engine.write.sort_order import SortOrder, sort_order


def incremental_clustering(store: FileStore) -> SortOrder | None:
    """The order an incremental clustering of ``store`` writes, or None when it is not enabled.

    Raises:
        InvalidArgumentError: enabled without ``clustering.columns``, or with a bad column or strategy.
        UnsupportedTableError: enabled on a primary-key or bucketed table (dyntable clusters
            bucket-unaware append tables only).
    """
    opts = store.options
    if not opts.get(CLUSTERING_INCREMENTAL):
        return None
    if store.has_primary_key or store.options.bucket != -1:
        raise UnsupportedTableError(
            "incremental clustering (clustering.incremental, Paimon 1.3) is implemented for append tables "
            "with bucket = -1 only")
    columns = [c for c in (opts.get(CLUSTERING_COLUMNS) or "").split(",") if c.strip()]
    if not columns:
        raise InvalidArgumentError("clustering.incremental = true needs clustering.columns")
    strategy = opts.get(CLUSTERING_STRATEGY).strip().lower()
    if strategy == "auto":
        strategy = "order" if len(columns) == 1 else "zorder" if len(columns) < 5 else "hilbert"
    return sort_order(strategy, columns, store.schema.field_names, store.partition_keys)


def _runs(files: Sequence[DataFileMeta]) -> list[tuple[int, SortedRun]]:
    """Level 0 files one run each (newest first), every higher level one run; by level."""
    level0 = sorted((f for f in files if f.level == 0), key=lambda f: (-f.max_sequence_number, f.file_name))
    runs: list[tuple[int, SortedRun]] = [(0, SortedRun.from_single(f)) for f in level0]
    for level in sorted({f.level for f in files if f.level > 0}):
        runs.append((level, SortedRun.from_sorted(f for f in files if f.level == level)))
    return runs


def pick(store: FileStore, files: Sequence[DataFileMeta], full: bool) -> CompactUnit | None:
    """The files of one partition an incremental clustering rewrites, with their output level."""
    from engine.write.compactor import strategy

    num_levels = max(store.options.num_levels, max((f.level for f in files), default=0) + 1)
    runs = _runs(files)
    if not runs:
        return None
    if not full:
        return strategy(store).pick(num_levels, runs)
    max_level = num_levels - 1
    if len(runs) == 1 and runs[0][0] == max_level:
        top = [f for f in files if f.level == max_level]
        written = store.schema_by_id(top[0].schema_id).options.get("clustering.columns")
        if written == store.options.get(CLUSTERING_COLUMNS):
            return None  # already one run at the max level, clustered by the same columns
    return CompactUnit(max_level, tuple(f for _, run in runs for f in run.files))
