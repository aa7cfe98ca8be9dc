"""Replacing main with a branch: main's content and schema become the branch head's, in one snapshot.

One job: the branches design's third operation (``replace_main``), made safe for readers.

The design (and Paimon's unreleased sketch of it) points the table's "main branch file" at the
branch and drops main's snapshots, tags and schemas. That breaks every reader positioned on main:
a streaming reader remembers the *next snapshot id* of main it must read, and after a swap of
histories that id names a snapshot of another history (read again, or skipped, or never coming).
So here, as for rollback and fast-forward (``engine.ops.republish``), main's snapshot ids are
never reused: the branch head's content is published as **one new main snapshot** ``head + 1``
(create-if-absent, like a commit) of kind OVERWRITE, which streaming readers skip — a reader at
``head + 1`` passes it and reads the commits that follow, without duplicates or gaps. What
differs from fast-forward:

* **Schemas may have diverged.** Main's schemas and the branch's share a prefix (the schemas the
  branch was created with). If main changed its schema after that, fast-forward refuses; here
  the branch's later schemas are copied into main under *new* ids after main's newest (main's
  old snapshots still need main's schemas of those ids), field ids the branch added are
  shifted past main's highest field id (so a field id never means two columns in main's
  lineage: a reader still on main's old schema sees the branch's new columns as absent, not
  as its own columns), and the schema ids recorded in the republished ADD entries are mapped to
  the copies. If the branch added no schema but main did, the branch's latest schema is copied
  as main's newest, so main's current schema is the branch's in every case. Without
  divergence the branch's newer schemas are copied under their own ids, as fast-forward does.
* **Main's superseded head is kept** by a backup tag ``replace-main-backup-<old head id>``
  (created first, removed again if the replacement does not happen), unless ``keep_backup`` is
  false. With the backup, main's old state stays readable after its snapshots expire.
* Main's history (snapshot files, tags, consumers) is kept: time travel to main's old snapshot
  ids keeps working while they are retained; the branch, its snapshots and its tags stay where
  they are (jobs writing the branch keep going). Delete the branch when it is no longer needed.

Crash safety: the only writes are new files (schemas, manifests, the backup tag) and the one
create-if-absent snapshot. A crash before the publish leaves main at its old head (if the schema
was copied, the old head's rows are read with main's new current schema, as after an ALTER
TABLE; time travel to the old head reads them with their own schema); running replace_main
again finishes (a retry after a crash may copy the schemas once more, under further ids —
harmless). A commit to main landing meanwhile makes the replacement fail with
CommitConflictError (manifests and backup tag removed; the copied schemas stay, as after a
schema change). Nothing is ever deleted: files only main's old history used are reclaimed by
snapshot expiration and orphan cleanup once the backup tag is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.errors import CommitConflictError, NoSuchSnapshotError
from engine.identifier import MAIN_BRANCH
from engine.meta.manifest import ManifestEntry
from engine.meta.paths import TablePaths
from engine.meta.schema_store import SchemaStore
from engine.meta.snapshot import Snapshot
from engine.ops.branches import BranchOps, latest_schema, same_schema, source_live, vanished
from engine.ops.republish import republish
from engine.schema import TableSchema
from engine.store import FileStore
from engine.types import DataField, DataType

BACKUP_TAG_PREFIX = "replace-main-backup-"
RM_BRANCH = "dyntable.replace-main.branch"
RM_SNAPSHOT = "dyntable.replace-main.snapshot"


@dataclass(frozen=True, slots=True)
class ReplaceMainResult:
    """``previous_snapshot_id``: main's superseded head (None: main had none); ``current_snapshot_id``:
    main's new head; ``branch_snapshot_id``: the branch head main now has; ``backup_tag``: the tag
    keeping the superseded head (None when not kept or nothing changed); ``schema_id``: main's
    current schema."""

    previous_snapshot_id: int | None
    current_snapshot_id: int
    branch_snapshot_id: int
    backup_tag: str | None
    schema_id: int


def backup_tag_name(head_id: int) -> str:
    return f"{BACKUP_TAG_PREFIX}{head_id}"


def replace_main(store: FileStore, branch: str, *, keep_backup: bool = True) -> ReplaceMainResult:
    """Make main's content and schema branch ``branch``'s head, as one new main snapshot."""
    ops = BranchOps(store)
    ops.require_existing(branch)  # InvalidNameError / NoSuchBranchError before anything is read or written
    io, root = store.io, store.paths.root
    branch_paths, main_paths = TablePaths(root, branch), TablePaths(root, MAIN_BRANCH)
    branch_schemas, main_schemas = SchemaStore(io, branch_paths), SchemaStore(io, main_paths)
    branch_store = FileStore(io, branch_paths, latest_schema(branch_schemas, branch_paths))
    target = branch_store.snapshots.latest()
    if target is None:
        raise NoSuchSnapshotError(f"branch '{branch}' has no snapshot: there is nothing to replace main with")
    main = FileStore(io, main_paths, latest_schema(main_schemas, main_paths))
    head = main.snapshots.latest()
    plan = _SchemaPlan(main_schemas, branch_schemas)
    target_live = [_remap(e, plan.mapping) for e in source_live(ops, branch, branch_store, target)]

    if head is not None and _already_replaced(main, head, branch, target, target_live, plan):
        return ReplaceMainResult(head.id, head.id, target.id, None, head.schema_id)  # e.g. a repeated call
    plan.write(io, main_paths, branch)
    done = republish(
        main, head, target, target_live, plan.current_id, {RM_BRANCH: branch, RM_SNAPSHOT: str(target.id)},
        action=f"replace main with branch '{branch}'",
        backup_tag=backup_tag_name(head.id) if keep_backup and head is not None else None,
        missing=lambda path: vanished(ops, branch, path))
    if done.snapshot is None:  # main's head has the branch head's files: only the schema moved (copied above)
        assert head is not None
        return ReplaceMainResult(head.id, head.id, target.id, None, plan.current_id)
    return ReplaceMainResult(head.id if head else None, done.snapshot.id, target.id, done.backup_tag,
                             plan.current_id)


class _SchemaPlan:
    """Which branch schemas main gets, under which ids, and what main's current schema id becomes."""

    def __init__(self, main: SchemaStore, branch: SchemaStore) -> None:
        main_ids, branch_ids = main.list_ids(), branch.list_ids()
        prefix = -1  # the newest schema id main and the branch share (same id, same content)
        for sid in branch_ids:
            if sid in main_ids and same_schema(main.get(sid), branch.get(sid)):
                prefix = sid
            else:
                break
        newer = [sid for sid in branch_ids if sid > prefix]
        self.mapping: dict[int, int] = {}
        self.copies: list[TableSchema] = []
        diverged = any(sid > prefix for sid in main_ids)
        if not diverged:  # main's schemas are a prefix of the branch's: copy them under their own ids
            self.copies = [branch.get(sid) for sid in newer]
            self.current_id = branch_ids[-1]
            return
        common_highest = main.get(prefix).highest_field_id if prefix >= 0 else -1
        main_highest = max(main.get(sid).highest_field_id for sid in main_ids)
        offset = max(0, main_highest - common_highest)
        next_id = main_ids[-1] + 1
        for sid in newer or [branch_ids[-1]]:
            src = branch.get(sid)
            fields = tuple(_shift_field(f, common_highest, offset) for f in src.fields)
            highest = max(main_highest, src.highest_field_id + offset if src.highest_field_id > common_highest
                          else src.highest_field_id)
            self.copies.append(replace(src, id=next_id, fields=fields, highest_field_id=highest))
            if sid > prefix:
                self.mapping[sid] = next_id
            next_id += 1
        self.current_id = self.copies[-1].id

    def write(self, io, paths: TablePaths, branch: str) -> None:
        schemas = SchemaStore(io, paths)
        for schema in self.copies:
            created = io.try_create(paths.schema_file(schema.id), schema.to_json().encode())
            if not created and not same_schema(schemas.get(schema.id), schema):
                raise CommitConflictError(
                    f"main's schema {schema.id} was created concurrently (a schema change); "
                    f"replacing main with branch '{branch}' stopped before changing main's snapshots — retry")


def _shift_field(f: DataField, base: int, offset: int) -> DataField:
    """``f`` with every field id above ``base`` (the branch's own fields) moved up by ``offset``."""
    return replace(f, id=f.id + offset if f.id > base else f.id, type=_shift_type(f.type, base, offset))


def _shift_type(t: DataType, base: int, offset: int) -> DataType:
    if not offset:
        return t
    return replace(
        t,
        fields=tuple(_shift_field(f, base, offset) for f in t.fields),
        element=_shift_type(t.element, base, offset) if t.element is not None else None,
        key=_shift_type(t.key, base, offset) if t.key is not None else None,
        value=_shift_type(t.value, base, offset) if t.value is not None else None,
    )


def _remap(entry: ManifestEntry, mapping: dict[int, int]) -> ManifestEntry:
    """The entry with its file's schema id translated to main's copy of that schema."""
    new_id = mapping.get(entry.file.schema_id)
    return entry if new_id is None else replace(entry, file=replace(entry.file, schema_id=new_id))


def _already_replaced(main: FileStore, head: Snapshot, branch: str, target: Snapshot,
                      target_live: list[ManifestEntry], plan: _SchemaPlan) -> bool:
    """Main's head is this very replacement, or has the branch head's files and schema already."""
    props = head.properties or {}
    if props.get(RM_BRANCH) == branch and props.get(RM_SNAPSHOT) == str(target.id):
        return True
    if plan.copies or head.index_manifest != target.index_manifest:
        return False
    return {e.identifier for e in main.live_entries(head)} == {e.identifier for e in target_live}


__all__ = ["BACKUP_TAG_PREFIX", "ReplaceMainResult", "backup_tag_name", "replace_main"]
