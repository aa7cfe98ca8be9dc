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
  starts without a mark of its own (``engine.history.retention_mark``: each branch has its own).
  A branch from a tag or snapshot pins its base with a tag ``branch-base-<name>`` on the source
  branch (created first; checked against a concurrent expiration of the base; renamed and
  deleted with the branch): Java's ``expire_snapshots`` protects only the expired branch's own
  tags, and Java's ``delete_tag`` ignores branches, so without the pin a Java job maintaining
  main would delete files the branch reads.
* Deleting: like deleting tags (``engine.ops.tags``). The keep set is computed first over every
  anchor of every branch (an unreadable one refuses with UnsafeToDeleteError, nothing changed);
  the branch directory is renamed to ``branch/.trash-branch-<name>-<uuid>`` (it disappears in
  one step), the trash directory is deleted, anchors created meanwhile are added to the keep
  set (``engine.ops.tags.keep_with_new_anchors``), and only the branch's files outside it are
  deleted. Leftover trash directories (a
  crash) are removed by the next branch deletion.
* Renaming: a no-replace rename of the directory (the base tag follows it). Table objects opened
  on the old name must be reopened: a commit through one fails with NoSuchBranchError and
  removes what it created (``engine.meta.publish`` checks the branch after publishing).
* Fast-forward (merge a branch into main): Paimon deletes main's snapshots, schemas and tags from
  the branch point on and copies the branch's in, several steps a reader can see half done.
  Here main's history is kept and the branch head's content is published as **one new main
  snapshot** ``head + 1`` with create-if-absent, exactly like a commit (``engine.ops.rollback``
  does the same for a rollback): DELETE entries for main's live files the branch head lacks,
  ADD entries for the branch head's live files main lacks (under new file names: Paimon's
  add-once/delete-once rule, ``engine.ops.republish``), the branch head's index manifest,
  commit kind OVERWRITE, properties ``dyntable.fast-forward.branch`` / ``...snapshot``. First the
  branch's schemas newer than main's latest are copied into main (create-if-absent, identical
  content), so the new snapshot's schema exists before it is published. A reader of main sees
  the old head or the new one; a crash before the publish leaves main's old head (with, if the
  branch changed the schema, the branch's newer schema already visible, as after an ALTER
  TABLE: the rows are the old head's; running fast_forward again finishes). Main's schemas must
  be a prefix of the branch's: if main changed its schema after the branch was made, the
  fast-forward refuses (CommitConflictError) because main's old snapshots still need main's
  schema of that id. Branch tags stay on the branch (their snapshot ids are the branch's).
  pypaimon and Java see an ordinary OVERWRITE snapshot and read it like any other. A branch
  deleted while its files are linked into main makes the fast-forward fail with
  NoSuchBranchError, main unchanged (a link of a deleted file fails; the links made are
  removed).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from engine.errors import (
    BranchAlreadyExistsError,
    CommitConflictError,
    CorruptMetadataError,
    DyntableError,
    InvalidArgumentError,
    NoSuchBranchError,
    NoSuchSnapshotError,
    NoSuchTagError,
    TagAlreadyExistsError,
)
from engine.history.retention_mark import check_visible
from engine.identifier import MAIN_BRANCH, validate_name
from engine.meta.manifest import ManifestEntry
from engine.meta.paths import TablePaths, join
from engine.meta.publish import publish_ref
from engine.meta.refs import BASE_TAG_PREFIX, TagStore, base_tag_name
from engine.meta.schema_store import SchemaStore
from engine.meta.snapshot import Snapshot, Tag
from engine.ops.reachability import ReachabilityCollector, all_anchors, delete_files, unreferenced
from engine.ops.republish import republish
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

    def require_existing(self, name: str) -> None:
        validate_name("branch", name, new=True)  # refuses 'main' too: it cannot be renamed or deleted
        if not self.io.exists(self._dir(name)):
            raise NoSuchBranchError(
                f"branch '{name}' of {self.root} does not exist; SHOW BRANCHES lists them"
            )

    # -- creating -------------------------------------------------------------------------------
    def create(self, name: str, from_tag: str | None = None, from_snapshot: int | None = None) -> None:
        """Create branch ``name``: empty (the schemas), from a tag, or from a snapshot id."""
        validate_name("branch", name, new=True)
        if from_tag is not None and from_snapshot is not None:
            raise InvalidArgumentError("give a tag or a snapshot id to create a branch from, not both")
        if self.io.exists(self._dir(name)):
            raise BranchAlreadyExistsError(
                f"branch '{name}' already exists; delete it first or pick another name"
            )
        src = self.store.paths
        files: list[tuple[str, bytes]] = []  # (path relative to the branch directory, content)
        if from_tag is not None:
            validate_name("tag", from_tag)
            snapshot = TagStore(self.io, src).get(from_tag).snapshot  # NoSuchTagError
            check_visible(self.store, snapshot, f"create branch '{name}' from tag '{from_tag}'")
            try:
                tag_bytes = self.io.read_bytes(src.tag_file(from_tag))
            except FileNotFoundError:
                raise NoSuchTagError(
                    f"tag '{from_tag}' was deleted concurrently; nothing was created"
                ) from None
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
        pinned = False
        if max_schema is not None:  # from a tag or a snapshot: pin the base where Java's expiration sees it
            pinned = self._pin_base(name, snapshot)
            # Written, then read: an expiration or tag deletion that removed the base meanwhile is seen here.
            base_there = (self.io.exists(src.snapshot_file(snapshot.id)) if from_tag is None
                          else self.io.exists(src.tag_file(from_tag)))
            if not base_there:
                if pinned:
                    self.io.delete(src.tag_file(base_tag_name(name)))
                base = f"tag '{from_tag}'" if from_tag is not None else f"snapshot {from_snapshot}"
                raise NoSuchSnapshotError(
                    f"the base of branch '{name}' ({base}) was expired or deleted while the branch was "
                    "created; "
                    "nothing was created"
                )
        staging = join(self.root, "branch", f"{STAGING_PREFIX}{name}-{uuid.uuid4()}")
        try:
            for rel, data in files:
                self.io.write_bytes(join(staging, rel), data)
            moved = self.io.rename(staging, self._dir(name))
        except BaseException:
            self._remove_quietly(staging)
            if pinned:
                self.io.delete(src.tag_file(base_tag_name(name)))
            raise
        if not moved:
            self._remove_quietly(staging)
            if pinned:
                self.io.delete(src.tag_file(base_tag_name(name)))
            raise BranchAlreadyExistsError(f"branch '{name}' was created concurrently; nothing was changed")

    def _pin_base(self, name: str, snapshot: Snapshot) -> bool:
        """Tag ``snapshot`` ``branch-base-<name>`` on the source branch; True if this call created the tag.

        Raises:
            TagAlreadyExistsError: a tag of that name tags another snapshot (nothing was changed).
        """
        tag = base_tag_name(name)
        path = self.store.paths.tag_file(tag)
        if publish_ref(self.io, path, Tag(snapshot).to_json().encode()):
            return True
        if TagStore(self.io, self.store.paths).get(tag).snapshot.id != snapshot.id:
            raise TagAlreadyExistsError(
                f"tag '{tag}' of {self.root} exists and tags another snapshot; it would pin the base of the "
                f"new branch '{name}' — delete or rename that tag, or pick another branch name; nothing was "
                "created")
        return False  # left by a crashed creation or deletion of a branch of this name: same base, reused

    def _base_tags(self, name: str) -> list[TablePaths]:
        """The branches holding branch ``name``'s base tag (normally one: the branch it was made from)."""
        holders = [TablePaths(self.root, b) for b in [MAIN_BRANCH, *self.names()] if b != name]
        return [p for p in holders if self.io.exists(p.tag_file(base_tag_name(name)))]

    def _remove_quietly(self, path: str) -> None:
        try:
            self.io.delete_dir(path, recursive=True)
        except OSError:
            pass  # a leftover staging/trash directory is no branch and protects nothing

    # -- renaming and deleting --------------------------------------------------------------------
    def rename(self, old: str, new: str) -> None:
        self.require_existing(old)
        validate_name("branch", new, new=True)
        if self.io.exists(self._dir(new)):
            raise BranchAlreadyExistsError(f"branch '{new}' already exists; nothing was renamed")
        # The base tag follows the branch: the new name's tag first (so the base is never unpinned).
        moved_tags: list[TablePaths] = []
        for holder in self._base_tags(old):
            data = self.io.read_bytes(holder.tag_file(base_tag_name(old)))
            if not publish_ref(self.io, holder.tag_file(base_tag_name(new)), data):
                for done in moved_tags:
                    self.io.delete(done.tag_file(base_tag_name(new)))
                raise TagAlreadyExistsError(
                    f"tag '{base_tag_name(new)}' exists already; it would pin the base of branch '{new}' — "
                    "delete it, then rename again; nothing was renamed")
            moved_tags.append(holder)
        try:
            moved = self.io.rename(self._dir(old), self._dir(new))
        except FileNotFoundError:
            moved = None
        if not moved:
            for done in moved_tags:
                self.io.delete(done.tag_file(base_tag_name(new)))
            if moved is None:
                raise NoSuchBranchError(f"branch '{old}' was deleted concurrently; nothing was renamed")
            raise BranchAlreadyExistsError(f"branch '{new}' was created concurrently; nothing was renamed")
        for holder in moved_tags:
            self.io.delete(holder.tag_file(base_tag_name(old)))

    def delete(self, name: str, *, dry_run: bool = False) -> BranchDeletion:
        """Delete a branch and exactly the files no anchor of another branch references.

        Run again after a crash, it completes the crashed deletion: a branch already moved to the
        trash has its base tag (``branch-base-<name>``) and its trash directory removed. The files
        only it referenced are then unreferenced; orphan cleanup deletes them.
        """
        validate_name("branch", name, new=True)
        if not dry_run and not self.io.exists(self._dir(name)) and self._finish_deletions(name):
            return BranchDeletion((name,), delete_files(self.io, {}))
        self.require_existing(name)
        self._sweep_trash()
        collector = ReachabilityCollector(self.io, self.root)
        before = all_anchors(self.io, self.root)  # fail closed: nothing changes if any anchor is unreadable
        pin = base_tag_name(name)
        candidates = collector.collect([a for a in before if a.branch == name])
        others = [a for a in before if a.branch != name and not (a.kind == "tag" and a.name == pin)]
        keep = collector.collect(others)
        if dry_run:
            return BranchDeletion(
                (name,), delete_files(self.io, unreferenced(candidates, keep), dry_run=True)
            )
        trash = join(self.root, "branch", f"{TRASH_PREFIX}{name}-{uuid.uuid4()}")
        try:
            moved = self.io.rename(self._dir(name), trash)
        except FileNotFoundError:
            moved = False
        if not moved:
            raise NoSuchBranchError(
                f"branch '{name}' was deleted or renamed concurrently; nothing was deleted"
            )
        for holder in self._base_tags(name):  # the branch is gone: its base needs no pin any more
            self.io.delete(holder.tag_file(pin))
        self.io.delete_dir(trash, recursive=True)
        # Plus what was made meanwhile (a commit, a tag): honoured, at the cost of its files only.
        # The deleted branch is not read again: a writer that raced the move may be recreating
        # and then removing its directory (engine.meta.publish), a schema-less moment with a
        # LATEST hint and no snapshot, which would fail the listing of a deletion already done.
        now = all_anchors(self.io, self.root, skip=name)
        keep = keep_with_new_anchors(collector, keep, others, now)
        return BranchDeletion((name,), delete_files(self.io, unreferenced(candidates, keep)))

    def _trash(self) -> dict[str, list[str]]:
        """The trash directories of crashed deletions, by branch name (``.trash-branch-<name>-<uuid>``)."""
        out: dict[str, list[str]] = {}
        for status in self.io.list_dir(join(self.root, "branch")):
            base = status.path.rstrip("/").rsplit("/", 1)[-1]
            if base.startswith(TRASH_PREFIX) and len(base) > len(TRASH_PREFIX) + 37:
                out.setdefault(base[len(TRASH_PREFIX):-37], []).append(status.path)
        return out

    def _finish_deletions(self, only: str | None = None) -> bool:
        """Finish the deletions a crash interrupted after the branch went to the trash: its base
        tags first (while a trash directory still proves the deletion), then the trash. A branch
        of that name created since keeps its (same-named) base tag. True if there was one."""
        found = False
        for name, dirs in self._trash().items():
            if only is not None and name != only:
                continue
            found = True
            if not self.io.exists(self._dir(name)):
                for holder in self._base_tags(name):
                    self.io.delete(holder.tag_file(base_tag_name(name)))
            for path in dirs:
                self._remove_quietly(path)
        return found

    def _sweep_trash(self) -> None:
        self._finish_deletions()

    # -- fast-forward -----------------------------------------------------------------------------
    def fast_forward(self, name: str) -> FastForwardResult:
        """Make main's content the branch head's, as one new main snapshot (see the module docstring)."""
        self.require_existing(name)
        io = self.io
        branch_paths, main_paths = TablePaths(self.root, name), TablePaths(self.root, MAIN_BRANCH)
        branch_schemas, main_schemas = SchemaStore(io, branch_paths), SchemaStore(io, main_paths)
        branch_store = FileStore(io, branch_paths, latest_schema(branch_schemas, branch_paths))
        target = branch_store.snapshots.latest()
        if target is None:
            raise NoSuchSnapshotError(
                f"branch '{name}' has no snapshot: there is nothing to fast-forward main to"
            )
        main_ids, branch_ids = main_schemas.list_ids(), branch_schemas.list_ids()
        for sid in main_ids:
            if sid not in branch_ids or not same_schema(main_schemas.get(sid), branch_schemas.get(sid)):
                raise CommitConflictError(
                    f"main's schema {sid} is not the branch '{name}' schema {sid}: main's schema changed "
                    "after the "
                    "branch was created, and main's snapshots still need it; nothing was changed"
                )
        newest_main = main_ids[-1] if main_ids else -1
        for sid in branch_ids:
            if sid > newest_main:
                data = io.read_bytes(branch_paths.schema_file(sid))
                if not io.try_create(main_paths.schema_file(sid), data) and not same_schema(
                        main_schemas.get(sid), branch_schemas.get(sid)):
                    raise CommitConflictError(
                        f"main's schema {sid} was created concurrently and differs from branch '{name}'; "
                        "the fast-forward stopped before changing main's snapshots")
        main = FileStore(io, main_paths, latest_schema(SchemaStore(io, main_paths), main_paths))
        head = main.snapshots.latest()
        if head is not None and _republished(head, {FF_BRANCH: name, FF_SNAPSHOT: str(target.id)}):
            return FastForwardResult(head.id, head.id, target.id)  # a repeated call: main has it already
        schema_id = max(target.schema_id, main.schema.id, head.schema_id if head else 0)
        done = republish(
            main, head, target, source_live(self, name, branch_store, target), schema_id,
            {FF_BRANCH: name, FF_SNAPSHOT: str(target.id)},
            action=f"fast-forward main to branch '{name}'", missing=lambda path: vanished(self, name, path))
        if done.snapshot is None:  # main already has the branch head's content (e.g. a repeated call)
            assert head is not None
            return FastForwardResult(head.id, head.id, target.id)
        return FastForwardResult(head.id if head else None, done.snapshot.id, target.id)


def source_live(ops: BranchOps, name: str, branch: FileStore, target: Snapshot) -> list[ManifestEntry]:
    """The live files of branch ``name``'s head; a branch deleted meanwhile is NoSuchBranchError."""
    try:
        return branch.live_entries(target)
    except (CorruptMetadataError, FileNotFoundError) as e:
        if not ops.exists(name):
            raise NoSuchBranchError(
                f"branch '{name}' of {ops.root} was deleted while main was being moved to it; "
                "nothing was changed") from None
        raise e


def vanished(ops: BranchOps, name: str, path: str) -> DyntableError:
    """The error for a file of branch ``name``'s head that is gone (the branch was deleted meanwhile)."""
    if not ops.exists(name):
        return NoSuchBranchError(
            f"branch '{name}' of {ops.root} was deleted while main was being moved to it; nothing was changed"
        )
    return CorruptMetadataError(
        f"{path}, a live file of branch '{name}', is missing (deleted outside dyntable?); nothing was changed"
    )


def _republished(head: Snapshot, marks: dict[str, str]) -> bool:
    """Main's head is itself the republish these properties describe (its files carry new names)."""
    props = head.properties or {}
    return all(props.get(k) == v for k, v in marks.items())


def latest_schema(schemas: SchemaStore, paths: TablePaths) -> TableSchema:
    latest = schemas.latest()
    if latest is None:
        raise NoSuchBranchError(f"branch '{paths.branch}' of {paths.root} has no schema")
    return latest


def same_schema(a: TableSchema, b: TableSchema) -> bool:
    return a.to_json() == b.to_json()


__all__ = ["BASE_TAG_PREFIX", "BranchDeletion", "BranchOps", "FastForwardResult", "base_tag_name"]
