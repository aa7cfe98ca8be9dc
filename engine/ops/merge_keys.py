"""The key-level plan of merging a primary-key branch (``engine.ops.merge_branch``).

One job: from three states of a primary-key table — the branch base, the source branch's head and
the target branch's head — work out the rows to write into the target and the conflicts.

* A key **changed** on a side when its row at that side's head differs from its row at the base
  (inserted, updated to another row, or deleted): whole rows are compared, vectorised
  (``engine.scan.incremental.diff_changes``), so a compaction or a rewrite to the same values is
  no change.
* A **conflict** is a key both sides changed to different results (both deleting it, or both
  writing the same row, is no conflict).
* The rows to write: the source's head row (``+I``) of every key the source changed, or the base
  row as ``-D`` for a key the source deleted — unless the target holds that result already (a
  second merge writes nothing); with the ``target`` policy the conflicting keys are left out.

Every step is an Arrow join or group-by over the three states. Only the keys whose rows are not
the same in all three matter, so the states are first narrowed to those keys in a streamed pass
(:func:`_narrowed_states`): per (partition, bucket) the three states are read in key order and
cut into key-aligned steps (``engine.merge.streaming.align_sorted_runs``), and a step keeps the
rows of its keys that differ somewhere. A key has at most one row per state, so a key dropped
there is one whose row all three hold alike, and a kept key keeps all its rows: the plan of the
narrowed states is the plan of the whole ones (a key in other buckets on the two branches, as
after a rescale, differs in each bucket's step and is kept whole). The pass holds a merge chunk
or a data file per state and bucket, plus the rows of the changed keys, never a whole state.
The states of deletion-vector tables (read file by file, unmerged, so not in key order) and of
fallback-branch splits (another table definition) are read whole instead: memory then follows
the three states, as a full diff's does.

Value columns must be comparable by Arrow's group-by (no ARRAY, MAP or ROW columns); the
aggregation merge engine and count-layout tables are refused (see ``engine.ops.merge_branch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from engine.count_layout import is_count_layout
from engine.errors import CommitConflictError, InvalidArgumentError
from engine.merge.config import MergeConfig
from engine.merge.functions import keys_present_in
from engine.merge.streaming import align_sorted_runs
from engine.meta.snapshot import Snapshot
from engine.read.key_ordered import key_ordered_buckets, reads_in_key_order
from engine.read.split_reader import SplitReader
from engine.scan.incremental import ROWKIND, diff_changes, unmatched_rows
from engine.scan.planner import DataSplit, TableScan, store_at
from engine.store import FileStore

MAX_REPORTED = 20
MERGEABLE_ENGINES = ("deduplicate", "partial-update", "first-row")


class MergeConflictError(CommitConflictError):
    """Keys were changed on both branches since the branch base; nothing was merged. Choose whose
    rows win with ``conflict => 'source'`` or ``'target'``, or reconcile the rows and merge again."""

    retryable = False

    def __init__(self, source: str, target: str, count: int, keys: Sequence[dict[str, Any]]) -> None:
        shown = "; ".join(", ".join(f"{k}={v!r}" for k, v in key.items()) for key in keys[:5])
        more = f" (and {count - 5} more)" if count > 5 else ""
        super().__init__(
            f"{count} key(s) changed on both branch '{source}' and branch '{target}' since the branch base: "
            f"{shown}{more}; nothing was merged — pass conflict => 'source' (the branch's rows win) or "
            "'target' (they are skipped), or run with dry_run => true to list them")
        self.count = count
        self.keys = tuple(keys)


@dataclass(frozen=True)
class KeyMerge:
    """``rows``: what to write into the target (a ``rowkind`` column first: ``+I`` or ``-D``);
    ``deletes``: how many of them are ``-D``; ``conflicts``: the first conflicting keys."""

    rows: pa.Table
    deletes: int
    conflict_count: int
    conflicts: tuple[dict[str, Any], ...]


def plan_key_merge(src: FileStore, dst: FileStore, src_head: Snapshot, dst_head: Snapshot,
                   base: Snapshot | None, conflict: str) -> KeyMerge:
    """The rows and conflicts of merging ``src`` (at ``src_head``) into ``dst`` (module docstring)."""
    _check_mergeable(dst)
    keys = list(dst.schema.primary_keys)
    names = list(dst.schema.field_names)
    base_rows, source, target = _narrowed_states(
        [(src, base), (src, src_head), (dst, dst_head)], names, keys)
    src_changed = _changed_keys(base_rows, source, keys)
    dst_changed = _changed_keys(base_rows, target, keys)
    # Keys the source changed whose row in the target is not the source's already (a key merged before,
    # or changed alike on both sides, needs nothing).
    take = _changed_keys(_with_keys(target, src_changed, keys), _with_keys(source, src_changed, keys), keys)
    conflicts = take.join(dst_changed, keys, join_type="inner") if take.num_rows else take
    if conflict == "target" and conflicts.num_rows:
        take = take.join(conflicts, keys, join_type="left anti")
    upserts = _with_keys(source, take, keys)
    deleted_keys = take.join(source.select(keys), keys, join_type="left anti")
    deletes = _with_keys(base_rows, deleted_keys, keys).cast(upserts.schema)
    rows = pa.concat_tables([
        upserts.add_column(0, ROWKIND, pa.repeat(pa.scalar("+I", pa.string()), upserts.num_rows)),
        deletes.add_column(0, ROWKIND, pa.repeat(pa.scalar("-D", pa.string()), deletes.num_rows)),
    ])
    shown = conflicts.sort_by([(k, "ascending") for k in keys]).slice(0, MAX_REPORTED).to_pylist()
    return KeyMerge(rows, deletes.num_rows, conflicts.num_rows, tuple(shown))


def _check_mergeable(store: FileStore) -> None:
    schema = store.schema
    engine = MergeConfig.from_options(schema.options, schema.primary_keys).engine
    if is_count_layout(schema) or engine not in MERGEABLE_ENGINES:
        raise InvalidArgumentError(
            f"merge_branch merges primary-key tables with the {', '.join(MERGEABLE_ENGINES)} merge engines; "
            f"this table's is '{engine}': a branch's aggregated rows include the base's rows, so writing "
            "them into the target would count those twice")


def _reads(
    store: FileStore, snapshot: Snapshot | None, names: list[str]
) -> tuple[SplitReader, list[DataSplit]]:
    """A reader of the table at ``snapshot`` and its splits (none without a snapshot)."""
    at = store_at(store, snapshot)
    if [f.name for f in at.schema.fields] != names:
        raise InvalidArgumentError(
            f"the columns of branch '{store.branch}' at snapshot {snapshot.id if snapshot else None} differ "
            f"from its current columns {names}; merge_branch compares rows of one shape")
    reader = SplitReader(at)
    return reader, (list(TableScan(at).with_snapshot(snapshot).plan().splits) if snapshot is not None else [])


def _narrowed_states(
    states: Sequence[tuple[FileStore, Snapshot | None]], names: list[str], keys: list[str]
) -> list[pa.Table]:
    """The rows of base, source and target (``states``, in that order) of the keys whose rows are
    not the same in all three (module docstring); each state with the source's column types (the
    types the rows are written with)."""
    reads = [_reads(store, snapshot, names) for store, snapshot in states]
    source = reads[1][0].output_schema
    shape = pa.schema([source.field(n) for n in names])

    def fit(t: pa.Table) -> pa.Table:
        return t.select(names).cast(shape)

    stores = [store for store, _ in states]
    if not all(reads_in_key_order(store, splits) for store, (_, splits) in zip(stores, reads, strict=True)):
        return [_whole(reader, splits, fit) for reader, splits in reads]
    kept: list[list[pa.Table]] = [[] for _ in reads]
    empty = fit(shape.empty_table())
    for group in key_ordered_buckets(reads):
        bounds = np.cumsum([0, *(len(streams) for streams in group)])
        for parts in align_sorted_runs([s for streams in group for s in streams], keys):
            sides = []
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
                present = [fit(p) for p in parts[lo:hi] if p is not None and p.num_rows]
                sides.append(pa.concat_tables(present) if present else empty)
            changed = _keys_not_alike(sides, keys)
            if changed.num_rows:
                for side, rows in enumerate(sides):
                    kept[side].append(rows.filter(pa.array(keys_present_in(rows, changed, keys))))
    return [pa.concat_tables(k) if k else empty for k in kept]


def _keys_not_alike(sides: Sequence[pa.Table], keys: list[str]) -> pa.Table:
    """The keys (with repeats) of the rows that are not equal in every one of ``sides``."""
    base = sides[0]
    out = []
    for other in sides[1:]:
        if base.num_rows and other.num_rows:
            try:
                rows, _ = unmatched_rows(base, other)
            except InvalidArgumentError as e:
                raise InvalidArgumentError(f"merge_branch cannot compare the rows of this table: {e}") from e
        else:
            rows = base if base.num_rows else other
        out.append(rows.select(keys))
    return pa.concat_tables(out) if out else base.select(keys).slice(0, 0)


def _whole(reader: SplitReader, splits: Sequence[DataSplit], fit) -> pa.Table:
    """A state read whole."""
    parts = [t for split in splits for t in reader.read(split)]
    return fit(pa.concat_tables(parts) if parts else reader.output_schema.empty_table())


def _changed_keys(before: pa.Table, after: pa.Table, keys: list[str]) -> pa.Table:
    """The distinct keys whose rows differ between ``before`` and ``after``."""
    try:
        changes = diff_changes(before, after, keys)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"merge_branch cannot compare the rows of this table: {e}") from e
    return changes.select(keys).group_by(keys, use_threads=False).aggregate([])


def _with_keys(rows: pa.Table, keys_table: pa.Table, keys: list[str]) -> pa.Table:
    """The rows of ``rows`` whose key is in ``keys_table``."""
    if keys_table.num_rows == 0 or rows.num_rows == 0:
        return rows.slice(0, 0)
    return rows.join(keys_table, keys, join_type="left semi").select(rows.column_names)


__all__ = ["MAX_REPORTED", "KeyMerge", "MergeConflictError", "plan_key_merge"]
