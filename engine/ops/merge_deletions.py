"""The deletions of an append branch with deletion vectors, carried into the merge target
(``engine.ops.merge_branch``).

One job: from the source branch's deletion vectors (DVs) at its head, work out which rows the
merge must mark deleted in the target, per target data file, before anything is written.

A DV names a data file and row positions in it, and an append table's live file keeps its name
and rows until a compaction or overwrite rewrites it (its DV only grows meanwhile). So a row the
branch deleted since its base is one of:

* a row of a **base file** (live in the base): the branch's DV of it holds positions the base's
  DV does not. The target still holding that file marks the same positions (its DV merged with
  them); a target that rewrote the file (compaction, overwrite) has the rows at positions
  nobody knows — the merge is refused (:class:`~engine.errors.InvalidArgumentError`);
* a row of a file **the branch wrote** and the merge adds now: the new copy gets the branch's DV;
* a row of a file the branch wrote and **an earlier merge added**: the target's copy (same
  bytes, another name) gets the positions (its DV merged with them); a copy the target has
  compacted away since can take no new positions — refused, unless the rows were deleted
  before that merge (then the copy it made was marked already).

Only positions the target has not deleted yet count, so a merge repeated with nothing new marks
nothing. Only the source's DV index files that are not its base's are read (a DV index file is
immutable, so one the base lists holds the base's DVs), then the base's and the target's DVs of
the files concerned. Positions are numpy arrays from the Roaring bitmaps; nothing is per row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from engine.append_deletions import AppendDeletionCommit, writes_append_deletion_vectors
from engine.errors import InvalidArgumentError
from engine.meta.deletion_vectors import DeletionVector, read_deletion_vectors
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexManifestEntry, IndexStore
from engine.meta.manifest import ManifestEntry
from engine.meta.snapshot import Snapshot
from engine.store import FileStore


@dataclass
class MergeDeletions:
    """``in_new``: positions per source file the merge adds now (marked on its new copy);
    ``in_target``: positions per target live file, not deleted there yet."""

    in_new: dict[str, np.ndarray] = field(default_factory=dict)
    in_target: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def deleted(self) -> int:
        """Rows of the target's files the merge marks deleted."""
        return int(sum(p.size for p in self.in_target.values()))

    def deleted_in_new(self, name: str) -> int:
        p = self.in_new.get(name)
        return 0 if p is None else int(p.size)

    def __bool__(self) -> bool:
        return bool(self.in_new or self.in_target)


def _dv_entries(store: FileStore, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
    if snapshot is None:
        return []
    return [e for e in IndexStore(store.io, store.paths).read_manifest(snapshot.index_manifest)
            if e.file.index_type == DELETION_VECTORS_INDEX]


def _read_all(store: FileStore, entries: list[IndexManifestEntry]) -> dict[str, DeletionVector]:
    index = IndexStore(store.io, store.paths)
    out: dict[str, DeletionVector] = {}
    for e in entries:
        out.update(read_deletion_vectors(index, e.file))
    return out


def plan_merge_deletions(
    src: FileStore,
    dst: FileStore,
    src_head: Snapshot,
    dst_head: Snapshot,
    base: Snapshot | None,
    new: list[ManifestEntry],
    merged_copies: Mapping[tuple[bytes, int, str], ManifestEntry],
    last_merged: Snapshot | None,
) -> MergeDeletions:
    """The rows to mark deleted in ``dst`` (module docstring). ``new``: the source files the merge
    adds; ``merged_copies``: (partition, bucket, source file name) → the target's copy an earlier
    merge added; ``last_merged``: the source snapshot the newest earlier merge took.

    Raises:
        InvalidArgumentError: the target rewrote a base file the branch deleted rows of, or the
            target has no deletion vectors to mark them with. Nothing was written.
    """
    plan = MergeDeletions()
    base_entries = _dv_entries(src, base)
    base_index_files = {e.file.file_name for e in base_entries}
    changed = _read_all(
        src, [e for e in _dv_entries(src, src_head) if e.file.file_name not in base_index_files])
    if not changed:
        return plan
    source_live = {e.file.file_name: e for e in src.live_entries(src_head)}
    base_live = {e.file.file_name for e in src.live_entries(base)} if base is not None else set()
    new_names = {e.file.file_name for e in new}
    target_live = {e.file.file_name: e for e in dst.live_entries(dst_head)}
    base_dvs: dict[str, DeletionVector] | None = None
    merged_dvs: dict[str, DeletionVector] | None = None
    by_target: dict[str, np.ndarray] = {}
    for name, dv in changed.items():
        entry = source_live.get(name)
        if entry is None or dv.is_empty():
            continue
        positions = dv.positions()
        if name in base_live:
            if base_dvs is None:
                base_dvs = _read_all(src, base_entries)
            before = base_dvs.get(name)
            if before is not None:
                positions = positions[~before.is_deleted(positions)]
            if positions.size == 0:
                continue
            if name not in target_live:
                raise InvalidArgumentError(
                    f"branch '{src.branch}' deleted {positions.size} row(s) of data file {name} of its "
                    f"base, which branch '{dst.branch}' has rewritten since (compaction or overwrite), so "
                    "those rows cannot be found there; nothing was merged — merge before compacting the "
                    "target, or delete the rows on the target too")
            by_target[name] = positions
        elif name in new_names:
            plan.in_new[name] = positions
        else:
            copy = merged_copies.get((entry.partition, entry.bucket, name))
            if copy is not None:
                by_target[copy.file.file_name] = positions
                continue
            # Taken by an earlier merge whose copy the target has rewritten since: only the rows
            # deleted before that merge are known to be gone there.
            if merged_dvs is None:
                merged_dvs = _read_all(src, _dv_entries(src, last_merged))
            taken = merged_dvs.get(name)
            if taken is not None:
                positions = positions[~taken.is_deleted(positions)]
            if positions.size:
                raise InvalidArgumentError(
                    f"branch '{src.branch}' deleted {positions.size} row(s) of data file {name}, which an "
                    f"earlier merge copied into branch '{dst.branch}' and the target has rewritten since "
                    "(compaction), so those rows cannot be found there; nothing was merged — delete the "
                    "rows on the target too")
    if not by_target and not plan.in_new:
        return plan
    if not writes_append_deletion_vectors(dst):
        raise InvalidArgumentError(
            f"branch '{src.branch}' deleted rows with deletion vectors, but branch '{dst.branch}' does not "
            "have 'deletion-vectors.enabled' = 'true'; nothing was merged — enable deletion vectors on "
            "the target first")
    current = AppendDeletionCommit(dst, dst_head)
    for name, positions in by_target.items():
        have = current.current(name)
        fresh = positions if have is None else positions[~have.is_deleted(positions)]
        if fresh.size:
            plan.in_target[name] = fresh
    return plan


__all__ = ["MergeDeletions", "plan_merge_deletions"]
