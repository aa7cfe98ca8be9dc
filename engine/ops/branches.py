"""Branches of a table: create, list, rename, delete and fast-forward main to a branch.

One job: change ``branch/branch-<name>/`` directories (Paimon's layout, ``docs/design/format-notes.md``
§1.3) safely, and move main's head to a branch's content. A branch directory holds only metadata
(schemas, snapshots, tags, consumers); data files and manifests are shared with main, so every
operation on a branch (writes, compaction, schema changes, tags, time travel) is the ordinary
operation on ``TablePaths(root, branch)`` (``catalog.get_table('db.t$branch_dev')``).

Rules (Paimon's content, made safe):

* Creating: an empty branch gets copies of the source branch's schemas ``0..latest``; a branch
  from a tag gets the tag file, the tagged snapshot as its ``snapshot-<id>`` and the schemas
  ``0..snapshot.schemaId``; from a snapshot id, that snapshot and its schemas. No hint files
  (readers list). Everything is written into a staging directory ``branch/.tmp-branch-<name>-<uuid>``
  that no reader lists (readers look for the ``branch-`` prefix), then renamed to
  ``branch/branch-<name>`` with a no-replace rename: on local disk and in memory the branch
  appears whole or not at all, and two creators of one name get one winner and one
  BranchAlreadyExistsError. A crash leaves at most a staging directory, which is no branch and
  protects no file (delete it by hand or with orphan cleanup). On object stores a directory
  rename is a copy, so a crash in the rename can leave a partial branch; delete and recreate it.
  A tag or snapshot below the source branch's retention mark is refused
  (BehindRetentionMarkError): the branch would make hidden history readable again. A new branch
  starts without a mark of its own (``engine.ops.retention_mark``: each branch has its own).
* Deleting: like deleting tags (``engine.ops.tags``). The keep set is computed first over every
  anchor of every branch (an unreadable one refuses with UnsafeToDeleteError, nothing changed);
  the branch directory is renamed to ``branch/.trash-branch-<name>-<uuid>`` (it disappears in
  one step), the trash directory is deleted, anchors created meanwhile are added to the keep
  set (``engine.ops.tags.keep_with_new_anchors``), and only the branch's files outside it are
  deleted. Leftover trash directories (a
  crash) are removed by the next branch deletion.
* Renaming: a no-replace rename of the directory. Table objects opened on the old name must be
  reopened (a commit through one would recreate a schema-less ``branch-<old>``).
* Fast-forward (merge a branch into main): Paimon deletes main's snapshots, schemas and tags from
  the branch point on and copies the branch's in, several steps a reader can see half done.
  Here main's history is kept and the branch head's content is published as **one new main
  snapshot** ``head + 1`` with create-if-absent, exactly like a commit (``engine.ops.rollback``
  does the same for a rollback): DELETE entries for main's live files the branch head lacks,
  ADD entries for the branch head's live files main lacks, the branch head's index manifest,
  commit kind OVERWRITE, properties ``dyntable.fast-forward.branch`` / ``...snapshot``. First the
  branch's schemas newer than main's latest are copied into main (create-if-absent, identical
  content), so the new snapshot's schema exists before it is published. A reader of main sees
  the old head or the new one; a crash before the publish leaves main's old head (with, if the
  branch changed the schema, the branch's newer schema already visible, as after an ALTER
  TABLE: the rows are the old head's; running fast_forward again finishes). Main's schemas must
  be a prefix of the branch's: if main changed its schema after the branch was made, the
  fast-forward refuses (CommitConflictError) because main's old snapshots still need main's
  schema of that id. Branch tags stay on the branch (their snapshot ids are the branch's).
  pypaimon and Java see an ordinary OVERWRITE snapshot and read it like any other.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import (
    BranchAlreadyExistsError,
    CommitConflictError,
    CommitStateUnknownError,
    InvalidArgumentError,
    NoSuchBranchError,
    NoSuchSnapshotError,
    NoSuchTagError,
)
from engine.identifier import MAIN_BRANCH, validate_name
from engine.meta.paths import TablePaths, join
from engine.meta.refs import TagStore
from engine.meta.schema_store import SchemaStore
from engine.meta.snapshot import Snapshot
from engine.ops.reachability import ReachabilityCollector, all_anchors, delete_files, unreferenced
from engine.ops.republish import content_snapshot
from engine.ops.retention_mark import check_visible
from engine.ops.tags import TagDeletion, keep_with_new_anchors
from engine.schema import TableSchema
from engine.store import FileStore

BRANCH_PREFIX = "branch-"
STAGING_PREFIX = ".tmp-branch-"
TRASH_PREFIX = ".trash-branch-"
FF_BRANCH = "dyntable.fast-forward.branch"
FF_SNAPSHOT = "dyntable.fast-forward.snapshot"

#: Result of deleting a branch: ``tags`` holds the branch name, ``files`` what was deleted.
BranchDeletion = TagDeletion


@dataclass(frozen=True, slots=True)
class FastForwardResult:
    """``previous_snapshot_id``: main's replaced head (None: main had none); ``current_snapshot_id``:
    main's new head; ``branch_snapshot_id``: the branch head whose content main now has."""

    previous_snapshot_id: int | None
    current_snapshot_id: int
    branch_snapshot_id: int


class BranchOps:
    """Branch operations of one table; ``store`` is the branch new branches are created from."""

    def __init__(self, store: FileStore) -> None:
        self.store = store
        self.io = store.io
        self.root = store.paths.root

    # -- naming ---------------------------------------------------------------------------------
    def _dir(self, name: str) -> str:
        return TablePaths(self.root, name).branch_root

    def exists(self, name: str) -> bool:
        if name == MAIN_BRANCH:
            return True
        validate_name("branch", name)
        return self.io.exists(self._dir(name))

    def names(self) -> list[str]:
        """The table's branches other than main, by name."""
        out = []
        for status in self.io.list_dir(join(self.root, "branch")):
            base = status.path.rstrip("/").rsplit("/", 1)[-1]
            if status.is_dir and base.startswith(BRANCH_PREFIX):
                out.append(base[len(BRANCH_PREFIX):])
        return sorted(out)

    def _existing(self, name: str) -> None:
        validate_name("branch", name, new=True)  # refuses 'main' too: it cannot be renamed or deleted
        if not self.io.exists(self._dir(name)):
            raise NoSuchBranchError(f"branch '{name}' of {self.root} does not exist; SHOW BRANCHES lists them")

    # -- creating -------------------------------------------------------------------------------
    def create(self, name: str, from_tag: str | None = None, from_snapshot: int | None = None) -> None:
        """Create branch ``name``: empty (the schemas), from a tag, or from a snapshot id."""
        validate_name("branch", name, new=True)
        if from_tag is not None and from_snapshot is not None:
            raise InvalidArgumentError("give a tag or a snapshot id to create a branch from, not both")
        if self.io.exists(self._dir(name)):
            raise BranchAlreadyExistsError(f"branch '{name}' already exists; delete it first or pick another name")
        src = self.store.paths
        files: list[tuple[str, bytes]] = []  # (path relative to the branch directory, content)
        if from_tag is not None:
            validate_name("tag", from_tag)
            snapshot = TagStore(self.io, src).get(from_tag).snapshot  # NoSuchTagError
            check_visible(self.store, snapshot, f"create branch '{name}' from tag '{from_tag}'")
            try:
                tag_bytes = self.io.read_bytes(src.tag_file(from_tag))
            except FileNotFoundError:
                raise NoSuchTagError(f"tag '{from_tag}' was deleted concurrently; nothing was created") from None
            files.append((f"tag/tag-{from_tag}", tag_bytes))
            files.append((f"snapshot/snapshot-{snapshot.id}", snapshot.to_json().encode()))
            max_schema: int | None = snapshot.schema_id
        elif from_snapshot is not None:
            if isinstance(from_snapshot, bool) or not isinstance(from_snapshot, int):
                raise InvalidArgumentError(f"snapshot id must be an integer, not {from_snapshot!r}")
            snapshot = self.store.snapshots.get(from_snapshot)  # NoSuchSnapshotError
            check_visible(self.store, snapshot, f"create branch '{name}' from snapshot {from_snapshot}")
            files.append((f"snapshot/snapshot-{snapshot.id}", snapshot.to_json().encode()))
            max_schema = snapshot.schema_id
        else:
            max_schema = None
        schemas = SchemaStore(self.io, src)
        for sid in schemas.list_ids():
            if max_schema is None or sid <= max_schema:
                files.append((f"schema/schema-{sid}", self.io.read_bytes(src.schema_file(sid))))
        staging = join(self.root, "branch", f"{STAGING_PREFIX}{name}-{uuid.uuid4()}")
        try:
            for rel, data in files:
                self.io.write_bytes(join(staging, rel), data)
            moved = self.io.rename(staging, self._dir(name))
        except BaseException:
            self._remove_quietly(staging)
            raise
        if not moved:
            self._remove_quietly(staging)
            raise BranchAlreadyExistsError(f"branch '{name}' was created concurrently; nothing was changed")

    def _remove_quietly(self, path: str) -> None:
        try:
            self.io.delete_dir(path, recursive=True)
        except OSError:
            pass  # a leftover staging/trash directory is no branch and protects nothing

    # -- renaming and deleting --------------------------------------------------------------------
    def rename(self, old: str, new: str) -> None:
        self._existing(old)
        validate_name("branch", new, new=True)
        if self.io.exists(self._dir(new)):
            raise BranchAlreadyExistsError(f"branch '{new}' already exists; nothing was renamed")
        try:
            moved = self.io.rename(self._dir(old), self._dir(new))
        except FileNotFoundError:
            raise NoSuchBranchError(f"branch '{old}' was deleted concurrently; nothing was renamed") from None
        if not moved:
            raise BranchAlreadyExistsError(f"branch '{new}' was created concurrently; nothing was renamed")

    def delete(self, name: str, *, dry_run: bool = False) -> BranchDeletion:
        """Delete a branch and exactly the files no anchor of another branch references."""
        self._existing(name)
        self._sweep_trash()
        collector = ReachabilityCollector(self.io, self.root)
        before = all_anchors(self.io, self.root)  # fail closed: nothing changes if any anchor is unreadable
        candidates = collector.collect([a for a in before if a.branch == name])
        keep = collector.collect([a for a in before if a.branch != name])
        if dry_run:
            return BranchDeletion((name,), delete_files(self.io, unreferenced(candidates, keep), dry_run=True))
        trash = join(self.root, "branch", f"{TRASH_PREFIX}{name}-{uuid.uuid4()}")
        try:
            moved = self.io.rename(self._dir(name), trash)
        except FileNotFoundError:
            moved = False
        if not moved:
            raise NoSuchBranchError(f"branch '{name}' was deleted or renamed concurrently; nothing was deleted")
        self.io.delete_dir(trash, recursive=True)
        # Plus what was made meanwhile (a commit, a tag): honoured, at the cost of its files only.
        keep = keep_with_new_anchors(collector, keep, [a for a in before if a.branch != name],
                                     all_anchors(self.io, self.root))
        return BranchDeletion((name,), delete_files(self.io, unreferenced(candidates, keep)))

    def _sweep_trash(self) -> None:
        for status in self.io.list_dir(join(self.root, "branch")):
            if status.path.rstrip("/").rsplit("/", 1)[-1].startswith(TRASH_PREFIX):
                self._remove_quietly(status.path)

    # -- fast-forward -----------------------------------------------------------------------------
    def fast_forward(self, name: str) -> FastForwardResult:
        """Make main's content the branch head's, as one new main snapshot (see the module docstring)."""
        self._existing(name)
        io = self.io
        branch_paths, main_paths = TablePaths(self.root, name), TablePaths(self.root, MAIN_BRANCH)
        branch_schemas, main_schemas = SchemaStore(io, branch_paths), SchemaStore(io, main_paths)
        branch_store = FileStore(io, branch_paths, _latest(branch_schemas, branch_paths))
        target = branch_store.snapshots.latest()
        if target is None:
            raise NoSuchSnapshotError(f"branch '{name}' has no snapshot: there is nothing to fast-forward main to")
        main_ids, branch_ids = main_schemas.list_ids(), branch_schemas.list_ids()
        for sid in main_ids:
            if sid not in branch_ids or not _same_schema(main_schemas.get(sid), branch_schemas.get(sid)):
                raise CommitConflictError(
                    f"main's schema {sid} is not the branch '{name}' schema {sid}: main's schema changed after the "
                    "branch was created, and main's snapshots still need it; nothing was changed")
        newest_main = main_ids[-1] if main_ids else -1
        for sid in branch_ids:
            if sid > newest_main:
                data = io.read_bytes(branch_paths.schema_file(sid))
                if not io.try_create(main_paths.schema_file(sid), data) and not _same_schema(
                        main_schemas.get(sid), branch_schemas.get(sid)):
                    raise CommitConflictError(
                        f"main's schema {sid} was created concurrently and differs from branch '{name}'; "
                        "the fast-forward stopped before changing main's snapshots")
        main = FileStore(io, main_paths, _latest(SchemaStore(io, main_paths), main_paths))
        head = main.snapshots.latest()
        written: list[str] = []
        try:
            snapshot = _merge_snapshot(main, branch_store, head, target, written, name)
        except BaseException:
            _undo(main, written)
            raise
        if snapshot is None:  # main already has the branch head's content (e.g. a repeated call)
            assert head is not None
            return FastForwardResult(head.id, head.id, target.id)
        try:
            published = main.snapshots.try_publish(snapshot)
        except Exception as e:
            # The snapshot may have been created: deleting its manifests could break main.
            raise CommitStateUnknownError(
                f"publishing snapshot {snapshot.id} of main of {self.root} failed ({e}); it may or may not exist. "
                f"Main reads either its old head or branch '{name}' head; run fast_forward again to be sure"
            ) from e
        if not published:
            _undo(main, written)
            raise CommitConflictError(
                f"another commit to main of {self.root} landed during the fast-forward to branch '{name}'; "
                "nothing was changed — retry")
        main.snapshots.write_latest_hint(snapshot.id)
        return FastForwardResult(head.id if head else None, snapshot.id, target.id)


def _latest(schemas: SchemaStore, paths: TablePaths) -> TableSchema:
    latest = schemas.latest()
    if latest is None:
        raise NoSuchBranchError(f"branch '{paths.branch}' of {paths.root} has no schema")
    return latest


def _same_schema(a: TableSchema, b: TableSchema) -> bool:
    return a.to_json() == b.to_json()


def _undo(store: FileStore, written: Sequence[str]) -> None:
    for name in written:
        try:
            store.manifests.delete(name)
        except OSError:
            pass  # unreferenced: orphan cleanup collects it


def _merge_snapshot(main: FileStore, branch: FileStore, head: Snapshot | None, target: Snapshot,
                    written: list[str], name: str) -> Snapshot | None:
    """Main's next snapshot with the branch head's content (None when main's head has it already)."""
    schema_id = max(target.schema_id, main.schema.id, head.schema_id if head else 0)
    return content_snapshot(main, head, target, branch.live_entries(target), schema_id,
                            {FF_BRANCH: name, FF_SNAPSHOT: str(target.id)}, written)
__all__ = ["BranchDeletion", "BranchOps", "FastForwardResult"]
