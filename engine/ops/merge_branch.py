"""Merging a branch into another (Paimon's ``merge_branch``): files for append tables, keys for
primary-key tables.

One job: bring what a source branch changed since its base into a target branch (main by
default) as **one new snapshot of the target**, published by the ordinary commit pipeline
(``engine.commit`` → ``engine.meta.publish``), and recorded in the maintenance log.

The base. A branch made from a tag or snapshot is pinned by the tag ``branch-base-<name>`` on
the branch it came from (``engine.meta.refs``); its snapshot is what both sides started from. A
branch made empty has no base: everything in it is its own.

**Append tables** (Paimon's file-level merge): the source's live data files that are not live in
its base are added to the target, as an APPEND commit. Each file is linked under a new name
(``engine.ops.republish.reidentify``: each history has its own file, so neither history's
expiration can delete a file the other reads), and a file merged before (same origin name in
the same partition and bucket) is not added again, so merging twice changes nothing. Paimon
refuses a branch whose history is not append-only from snapshot 1 (it has no base to tell what
the branch wrote); dyntable knows the base, so it only refuses a branch that rewrote files of
its base (compaction, overwrite, DELETE of base rows): adding the rewritten files would repeat
the base's rows — or rewrote files an earlier merge took (that merge's target snapshot records
the source snapshot it took: the target may have compacted its copies away since, so their names
no longer tell). The target may have done anything meanwhile. With deletion vectors, the rows
the branch deleted since its base (of base files, of its own files) are marked in the target in
the same snapshot (``engine.ops.merge_deletions``; refused before any change when the target
rewrote the file holding them).

**Primary-key tables** (dyntable's key-level merge; Paimon refuses them): the source's rows at
its head are compared with the base's by key (``engine.ops.merge_keys``). Every key the source
inserted or updated is written to the target as a row, every key it deleted as a ``-D`` row,
through the target's writer: the target's merge engine applies them as it applies any write
(deduplicate: the branch's row wins; partial-update: its non-null columns; first-row: only new
keys). A key the target changed too since the base (to a different row than the source's) is a
**conflict**: ``conflict='fail'`` (default) merges nothing and raises
:class:`MergeConflictError` listing them; ``'source'`` takes the branch's row; ``'target'`` keeps
the target's. Tables with the aggregation merge engine (or the count layout) are refused: a
branch's aggregate already includes the base's rows, so writing it would count them twice.
On a deletion-vector table the written buckets are compacted at once: its batch readers skip
level 0, so the merged keys would otherwise stay invisible until a later compaction.

Both: the source and target must have the same columns now (Paimon's check); ``dry_run`` plans
and reports without writing. A target that commits while the merge runs makes it fail with
:class:`~engine.errors.CommitConflictError` (nothing written; run it again).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from engine.append_deletions import AppendDeletionCommit
from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage, CommitResult, delete_uncommitted
from engine.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    InvalidArgumentError,
    NoSuchBranchError,
    NoSuchSnapshotError,
)
from engine.features import check_writable
from engine.identifier import MAIN_BRANCH, validate_name
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.meta.manifest import ManifestEntry
from engine.meta.paths import TablePaths, join
from engine.meta.publish import Attempt
from engine.meta.refs import TagStore, base_tag_name
from engine.meta.schema_store import SchemaStore
from engine.meta.snapshot import Snapshot
from engine.ops.maintenance_log import recorded_run
from engine.ops.merge_deletions import MergeDeletions, plan_merge_deletions
from engine.ops.merge_keys import KeyMerge, MergeConflictError, plan_key_merge
from engine.ops.republish import origin_name, reidentify
from engine.store import FileStore

CONFLICT_POLICIES = ("fail", "source", "target")
SOURCE_PROPERTY = "dyntable.merge-branch.source"
SOURCE_SNAPSHOT_PROPERTY = "dyntable.merge-branch.source-snapshot"


@dataclass(frozen=True)
class BranchMerge:
    """What a merge did (or, with ``dry_run``, would do).

    ``mode``: ``files`` (append tables) or ``keys`` (primary-key tables); ``snapshot_id``: the
    target's new snapshot (None: nothing to merge, a dry run, or refused); ``files``: data files
    added (file mode); ``upserted`` / ``deleted``: keys written / deleted (key mode); in file
    mode the live rows of the added files / the target's rows the branch's deletion vectors
    mark; ``conflicts``: the conflicting keys (first
    :data:`~engine.ops.merge_keys.MAX_REPORTED`), ``conflict_count`` all of them.
    """

    source: str
    target: str
    mode: str
    base_snapshot_id: int | None
    source_snapshot_id: int
    snapshot_id: int | None
    files: int = 0
    upserted: int = 0
    deleted: int = 0
    conflict_count: int = 0
    conflicts: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    dry_run: bool = False


def merge_branch(
    io_store: FileStore,
    source: str,
    target: str = MAIN_BRANCH,
    *,
    conflict: str = "fail",
    dry_run: bool = False,
) -> BranchMerge:
    """Merge branch ``source`` into branch ``target`` of the table of ``io_store`` (module docstring).

    Raises:
        NoSuchBranchError: either branch does not exist.
        NoSuchSnapshotError: either branch has no snapshot.
        InvalidArgumentError: the columns differ, source equals target, an unknown ``conflict``
            policy, an append branch that rewrote its base, or an aggregation table.
        MergeConflictError: (``conflict='fail'``) keys changed on both sides; nothing was merged.
        CommitConflictError: the target changed while the merge ran; nothing was merged.
    """
    if conflict not in CONFLICT_POLICIES:
        raise InvalidArgumentError(
            f"conflict must be one of {', '.join(CONFLICT_POLICIES)}, not {conflict!r}")
    if source == target:
        raise InvalidArgumentError(f"cannot merge branch '{source}' into itself; name another target branch")
    root = io_store.paths.root
    src, dst = _branch_store(io_store, source), _branch_store(io_store, target)
    src_head = _head(src, f"Cannot merge branch '{source}', because it does not have snapshot")
    dst_head = _head(dst, f"Cannot merge into branch '{target}', because it does not have snapshot")
    _same_columns(src, dst)
    # Row tracking: the merged files carry the source's row ids, which the target may have given
    # to its own rows; a merge is refused (engine.features) rather than repeat ids.
    check_writable(dst.schema, root, "merge a branch into")
    base = _base_snapshot(io_store, source)
    with recorded_run(io_store.io, root, "merge_branch", branch=target, dry_run=dry_run) as rec:
        if not src.has_primary_key and not dst.has_primary_key:
            result = _merge_files(src, dst, src_head, dst_head, base, dry_run)
        elif src.has_primary_key and dst.has_primary_key:
            plan = plan_key_merge(src, dst, src_head, dst_head, base, conflict)
            result = _merge_keys(src, dst, src_head, dst_head, base, plan, conflict, dry_run)
        else:
            raise InvalidArgumentError(
                f"branch '{source}' and branch '{target}' differ in having a primary key; merge needs both "
                "append tables or both primary-key tables")
        rec.details = {
            "source": source, "mode": result.mode, "base_snapshot_id": result.base_snapshot_id,
            "source_snapshot_id": result.source_snapshot_id, "snapshot_id": result.snapshot_id,
            "files": result.files, "upserted": result.upserted, "deleted": result.deleted,
            "conflict_count": result.conflict_count, "conflict_policy": conflict,
            "conflicts": [dict(c) for c in result.conflicts[:20]],
        }
        return result


# -- the branches --------------------------------------------------------------------------------


def _branch_store(store: FileStore, branch: str) -> FileStore:
    if branch != MAIN_BRANCH:
        validate_name("branch", branch)
    paths = TablePaths(store.paths.root, branch, store.paths.data_dir)
    if branch != MAIN_BRANCH and not store.io.exists(paths.branch_root):
        raise NoSuchBranchError(f"Branch '{branch}' doesn't exist; SHOW BRANCHES lists the branches")
    schema = SchemaStore(store.io, paths).latest()
    if schema is None:
        raise NoSuchBranchError(f"Branch '{branch}' of {store.paths.root} has no schema")
    return FileStore(store.io, paths, schema)


def _head(store: FileStore, message: str) -> Snapshot:
    head = store.snapshots.latest()
    if head is None:
        raise NoSuchSnapshotError(f"{message}; write to it first")
    return head


def _same_columns(src: FileStore, dst: FileStore) -> None:
    a = [(f.name, f.type) for f in src.schema.fields]
    b = [(f.name, f.type) for f in dst.schema.fields]
    if a != b or src.schema.primary_keys != dst.schema.primary_keys:
        raise InvalidArgumentError(
            f"Cannot merge branch '{src.branch}' into '{dst.branch}', schema mismatch: "
            f"{[f'{n} {t}' for n, t in a]} key {list(src.schema.primary_keys)} vs "
            f"{[f'{n} {t}' for n, t in b]} key {list(dst.schema.primary_keys)}")


def _base_snapshot(store: FileStore, source: str) -> Snapshot | None:
    """The snapshot branch ``source`` was made from (its ``branch-base-`` tag), None if made empty."""
    for status in store.io.list_dir(join(store.paths.root, "branch")):
        name = status.path.rstrip("/").rsplit("/", 1)[-1]
        if status.is_dir and name.startswith("branch-") and name != f"branch-{source}":
            holder = TablePaths(store.paths.root, name[len("branch-"):])
            if store.io.exists(holder.tag_file(base_tag_name(source))):
                return TagStore(store.io, holder).get(base_tag_name(source)).snapshot
    main = TablePaths(store.paths.root)
    if store.io.exists(main.tag_file(base_tag_name(source))):
        return TagStore(store.io, main).get(base_tag_name(source)).snapshot
    return None


def _unchanged_since(dst: FileStore, read: Snapshot) -> None:
    latest = dst.snapshots.latest()
    if latest is None or latest.id != read.id:
        raise CommitConflictError(
            f"branch '{dst.branch}' of {dst.paths.root} committed while the merge ran (snapshot "
            f"{read.id} → {latest.id if latest else None}); nothing was merged — run merge_branch again")


def _properties(src: FileStore, head: Snapshot) -> dict[str, str]:
    return {SOURCE_PROPERTY: src.branch, SOURCE_SNAPSHOT_PROPERTY: str(head.id)}


# -- append tables: files -------------------------------------------------------------------------


def _merge_files(src: FileStore, dst: FileStore, src_head: Snapshot, dst_head: Snapshot,
                 base: Snapshot | None, dry_run: bool) -> BranchMerge:
    source_live = src.live_entries(src_head)
    base_live = {e.identifier for e in src.live_entries(base)} if base is not None else set()
    live_ids = {e.identifier for e in source_live}
    rewritten = base_live - live_ids
    if rewritten:
        raise InvalidArgumentError(
            f"branch '{src.branch}' rewrote {len(rewritten)} data file(s) of its base (snapshot "
            f"{base.id if base else None}) by compaction, overwrite or a row-level change; merging its files "
            f"into '{dst.branch}' would repeat the base's rows, so nothing was merged")
    merged_before = {(e.partition, e.bucket, origin_name(e.file.file_name)): e
                     for e in dst.live_entries(dst_head)}
    # Files an earlier merge took, even if the target compacted its copies away since (their names
    # then say nothing): the source's files at the snapshot the newest retained merge recorded.
    last = _last_merged(src, dst, dst_head, base)
    taken = ({e.identifier for e in src.live_entries(last)} - base_live) if last is not None else set()
    dropped = taken - live_ids
    if dropped:
        raise InvalidArgumentError(
            f"branch '{src.branch}' rewrote {len(dropped)} data file(s) that an earlier merge into "
            f"'{dst.branch}' took (compaction or a row-level change since its snapshot "
            f"{last.id if last else None}); merging the rewritten files would repeat their rows, so nothing "
            "was merged")
    new = [e for e in source_live if e.identifier not in base_live and e.identifier not in taken
           and (e.partition, e.bucket, origin_name(e.file.file_name)) not in merged_before]
    copies = {(e.partition, e.bucket, e.file.file_name): merged_before[key] for e in source_live
              if (key := (e.partition, e.bucket, origin_name(e.file.file_name))) in merged_before}
    deletions = plan_merge_deletions(src, dst, src_head, dst_head, base, new, copies, last)
    rows = sum(e.file.row_count - deletions.deleted_in_new(e.file.file_name) for e in new)
    result = BranchMerge(src.branch, dst.branch, "files", base.id if base else None, src_head.id, None,
                         files=len(new), upserted=rows, deleted=deletions.deleted, dry_run=dry_run)
    if dry_run or not (new or deletions):
        return result
    attempt = Attempt(dst.io)
    try:
        linked = reidentify(dst, new, attempt)
        _unchanged_since(dst, dst_head)
        if deletions:
            sid = _commit_with_deletions(dst, dst_head, new, linked, deletions, _properties(src, src_head))
        else:
            sid = FileStoreCommit(dst).commit(_messages(linked), properties=_properties(src, src_head))
    except CommitStateUnknownError:
        raise
    except BaseException:
        attempt.undo()
        raise
    attempt.keep()
    return replace(result, snapshot_id=sid.snapshot_ids[-1] if sid.snapshot_ids else None)


def _commit_with_deletions(dst: FileStore, dst_head: Snapshot, new: list[ManifestEntry],
                           linked: list[ManifestEntry], deletions: MergeDeletions,
                           properties: dict[str, str]) -> CommitResult:
    """The merged files and the rows deleted in them and in the target's files, as one snapshot."""
    commit = AppendDeletionCommit(dst, dst_head)
    commit.include_new(linked)
    commit.delete({copy.file.file_name: deletions.in_new[e.file.file_name]
                   for e, copy in zip(new, linked, strict=True) if e.file.file_name in deletions.in_new})
    commit.delete(deletions.in_target)
    return commit.commit(_messages(linked), properties=properties)


def _last_merged(
    src: FileStore, dst: FileStore, dst_head: Snapshot, base: Snapshot | None
) -> Snapshot | None:
    """The source snapshot that the newest merge of ``src`` into ``dst`` still in ``dst``'s history
    merged (its ``SOURCE_SNAPSHOT_PROPERTY``); None when there is none, or the source expired it.
    Looks back no further than the branch base's time: no merge of the branch is older."""
    since = base.time_millis if base is not None else None
    for sid in sorted((i for i in dst.snapshots.list_ids() if i <= dst_head.id), reverse=True):
        snap = dst.snapshots.get(sid)
        if since is not None and snap.time_millis < since:
            return None
        props = snap.properties or {}
        if props.get(SOURCE_PROPERTY) == src.branch and SOURCE_SNAPSHOT_PROPERTY in props:
            k = int(props[SOURCE_SNAPSHOT_PROPERTY])
            return src.snapshots.get(k) if src.snapshots.exists(k) else None
    return None


def _messages(entries: list[ManifestEntry]) -> list[CommitMessage]:
    grouped: dict[tuple[bytes, int, int], list[ManifestEntry]] = defaultdict(list)
    for e in entries:
        grouped[(e.partition, e.bucket, e.total_buckets)].append(e)
    return [CommitMessage(p, b, n, new_files=tuple(e.file for e in group))
            for (p, b, n), group in grouped.items()]


# -- primary-key tables: keys ---------------------------------------------------------------------


def _merge_keys(src: FileStore, dst: FileStore, src_head: Snapshot, dst_head: Snapshot,
                base: Snapshot | None, plan: KeyMerge, conflict: str, dry_run: bool) -> BranchMerge:
    result = BranchMerge(
        src.branch, dst.branch, "keys", base.id if base else None, src_head.id, None,
        upserted=plan.rows.num_rows - plan.deletes, deleted=plan.deletes,
        conflict_count=plan.conflict_count, conflicts=plan.conflicts, dry_run=dry_run)
    if plan.conflict_count and conflict == "fail" and not dry_run:
        raise MergeConflictError(src.branch, dst.branch, plan.conflict_count, plan.conflicts)
    if dry_run or plan.rows.num_rows == 0:
        return result
    from engine.write.factory import new_writer

    # A deletion-vector table's readers skip level 0: the written keys are compacted up at once
    # (as every write to such a table is), or the merge would be invisible until a later compaction.
    writer = new_writer(dst, compact=uses_deletion_vectors(dst))
    messages: list[CommitMessage] = []
    try:
        writer.write(plan.rows)
        messages = writer.prepare_commit()
        _unchanged_since(dst, dst_head)
        done = FileStoreCommit(dst).commit(messages, properties=_properties(src, src_head))
    except CommitStateUnknownError:
        raise
    except BaseException:
        writer.abort()
        delete_uncommitted(dst, messages)
        raise
    return replace(result, snapshot_id=done.snapshot_ids[-1] if done.snapshot_ids else None)


__all__ = ["CONFLICT_POLICIES", "BranchMerge", "MergeConflictError", "merge_branch"]
