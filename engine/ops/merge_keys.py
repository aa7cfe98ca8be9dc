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

Every step is an Arrow join or group-by over the three states (read whole: a merge reads the
table three times, like a full diff). Value columns must be comparable by Arrow's group-by
(no ARRAY, MAP or ROW columns); the aggregation merge engine and count-layout tables are
refused (see ``engine.ops.merge_branch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from engine.count_layout import is_count_layout
from engine.errors import CommitConflictError, InvalidArgumentError
from engine.merge.functions import MergeConfig
from engine.meta.snapshot import Snapshot
from engine.read.split_reader import SplitReader
from engine.scan.incremental import ROWKIND, diff_changes
from engine.scan.planner import TableScan, store_at
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
    source = _state(src, src_head, names)
    target = _state(dst, dst_head, names)
    base_rows = _state(src, base, names) if base is not None else source.schema.empty_table()
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


def _state(store: FileStore, snapshot: Snapshot | None, names: list[str]) -> pa.Table:
    """The table's rows at ``snapshot`` (all columns, in ``names`` order)."""
    at = store_at(store, snapshot)
    if [f.name for f in at.schema.fields] != names:
        raise InvalidArgumentError(
            f"the columns of branch '{store.branch}' at snapshot {snapshot.id if snapshot else None} differ "
            f"from its current columns {names}; merge_branch compares rows of one shape")
    reader = SplitReader(at)
    plan = TableScan(at).with_snapshot(snapshot).plan()
    parts = [t for split in plan.splits for t in reader.read(split)]
    empty = reader.output_schema.empty_table()
    return (pa.concat_tables(parts) if parts else empty).select(names)


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
