"""Tag operations of one table branch: create, replace, rename, delete and expire tags.

One job: change ``tag/tag-<name>`` files safely and, when tags go, delete exactly the files no
remaining anchor needs (``engine.ops.reachability``).

Rules (Paimon's, made safe):

* A tag file is the tagged snapshot's JSON; ``tagCreateTime``/``tagTimeRetained`` are written only
  with a retention (an explicit one, or ``tag.default-time-retained``), as Java does, so readers
  older than Paimon 0.8 can still read it. Creating publishes with create-if-absent (two creators
  of one name: one wins, the other gets TagAlreadyExistsError); replacing overwrites atomically;
  renaming is a no-replace move. Creating and replacing go through
  :func:`engine.meta.publish.publish_ref`: after the tag file is written, its snapshot must still
  exist (its snapshot file, or another tag holding it), else the tag file is put back as it was
  and SnapshotExpiredConcurrentlyError is raised. Expiration and tag deletion re-read every
  anchor after removing theirs and before deleting files, so a tag never dangles.
* Every operation validates names and existence first and changes nothing when it refuses
  (InvalidNameError, NoSuchTagError, TagAlreadyExistsError, NoSuchSnapshotError).
* Deleting a tag whose snapshot still exists (the same snapshot file, same manifest lists) frees
  nothing: that snapshot keeps every file the tag keeps. Then only the tag file goes (one
  snapshot read, as Paimon skips file deletion in that case), so the cost does not grow with the
  history. If an expiration removes that snapshot concurrently, its files may be left
  unreferenced (orphan cleanup collects them); nothing needed is ever deleted.
* Deleting other tags: the candidates are the tags' own files; the keep set is the reachability of
  every other anchor of every branch (snapshots, tags, long-lived changelogs). It is computed once
  before anything changes (an unreadable anchor refuses the deletion with nothing changed), then
  the tag files are deleted, then the anchors that exist now are listed again and those created
  meanwhile (a commit, a tag, a branch; a reused snapshot id counts as new) have their files
  added to the keep set (so an anchor created meanwhile from a still-existing snapshot is
  honoured), and only candidates outside it are deleted. A crash after the tag file went leaves
  only unreferenced files (orphan cleanup collects them). Replacing a tag deletes no file: what the
  old tag alone kept is left to orphan cleanup.
* Known race (as in Paimon): a rollback or branch creation *from the very tag being deleted* that
  read the tag before its deletion and publishes after the keep set was computed may reference
  deleted files. Do not delete a tag while something is being created from it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.errors import (
    DyntableError,
    InvalidArgumentError,
    NoSuchSnapshotError,
    NoSuchTagError,
    SnapshotExpiredConcurrentlyError,
    TagAlreadyExistsError,
    TimeBoundError,
)
from engine.history.retention_mark import check_visible
from engine.iceberg import run_after_commit as iceberg_metadata
from engine.identifier import MAIN_BRANCH, validate_name
from engine.meta.paths import TablePaths
from engine.meta.publish import publish_ref
from engine.meta.refs import BASE_TAG_PREFIX, TagStore
from engine.meta.snapshot import Snapshot, Tag
from engine.ops.reachability import (
    Anchor,
    DeletionReport,
    ReachabilityCollector,
    Reachable,
    all_anchors,
    delete_files,
    keep_with_new_anchors,
    retry_concurrent,
    snapshot_metadata,
    unreferenced,
)
from engine.store import FileStore
from engine.time_bound import TimeBoundLike, parse_duration_argument, parse_time_bound

TimeRetained = int | dt.timedelta | str | None


def retention_millis(value: TimeRetained) -> int | None:
    """A retention as milliseconds: int (ms), timedelta, or a duration string (``'1 d'``, ``'PT1H'``)."""
    if value is None:
        return None
    ms = parse_duration_argument(value, "time_retained")
    if ms <= 0:
        raise TimeBoundError(f"time_retained must be positive, not {value!r}", argument="time_retained")
    return ms


@dataclass(frozen=True, slots=True)
class TagDeletion:
    """Result of deleting or expiring tags: which tags, and which files went (or would go)."""

    tags: tuple[str, ...]
    files: DeletionReport


class TagOps:
    """Tag operations on one branch of a table (``store``)."""

    def __init__(self, store: FileStore) -> None:
        self.store = store
        self.tags = TagStore(store.io, store.paths)

    # -- creating -------------------------------------------------------------------------------
    def _snapshot(self, snapshot_id: int | None) -> Snapshot:
        snapshots = self.store.snapshots
        if snapshot_id is None:
            latest = snapshots.latest()
            if latest is None:
                raise NoSuchSnapshotError(
                    f"{self.store.paths.root} has no snapshot yet: there is nothing to tag"
                )
            return latest
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
            raise InvalidArgumentError(f"snapshot id must be an integer, not {snapshot_id!r}")
        snap = snapshots.get(snapshot_id)
        # A tag would keep history below the retention mark readable (and alive) again.
        check_visible(self.store, snap, f"tag snapshot {snapshot_id}")
        return snap

    def _tag(self, snapshot: Snapshot, time_retained: TimeRetained) -> Tag:
        ms = retention_millis(time_retained)
        if ms is None:
            ms = self.store.options.tag_default_time_retained
        if ms is None:
            return Tag(snapshot)
        # Java's LocalDateTime.now(): the local wall clock, kept to the millisecond here.
        now = dt.datetime.now()
        return Tag(
            snapshot, create_time=now.replace(microsecond=now.microsecond // 1000 * 1000), time_retained_ms=ms
        )

    def create(self, name: str, snapshot_id: int | None = None, time_retained: TimeRetained = None) -> Tag:
        """Tag a snapshot (default: the latest) under a new name."""
        validate_name("tag", name, new=True)
        if self.tags.exists(name):
            raise TagAlreadyExistsError(f"tag '{name}' already exists; delete it first or use replace_tag")
        tag = self._tag(self._snapshot(snapshot_id), time_retained)
        self._publish(name, tag)
        return tag

    def _publish(self, name: str, tag: Tag, *, replace: bool = False) -> None:
        """Create (or replace) the tag file, then check its snapshot is still there (see
        :func:`engine.meta.publish.publish_ref`); if an expiration took it meanwhile, the tag file is
        put back as it was and :class:`SnapshotExpiredConcurrentlyError` is raised."""
        io, paths = self.store.io, self.store.paths
        if not publish_ref(io, paths.tag_file(name), tag.to_json().encode(), replace=replace,
                           verify=lambda: self._still_there(name, tag.snapshot)):
            raise TagAlreadyExistsError(f"tag '{name}' was created concurrently; nothing was changed")
        iceberg_metadata(self.store)  # Paimon's tag callback: the tag becomes an Iceberg ref; never raises

    def _still_there(self, name: str, snapshot: Snapshot) -> None:
        """The tagged snapshot exists now: its snapshot file with the same metadata, or another tag
        holding it (a snapshot file may have expired long ago while a tag kept it)."""
        io, paths = self.store.io, self.store.paths
        try:
            current = Snapshot.from_json(io.read_bytes(paths.snapshot_file(snapshot.id)))
            if snapshot_metadata(current) == snapshot_metadata(snapshot):
                return
        except FileNotFoundError:
            pass
        for other, tag in self.tags.all().items():
            if other != name and snapshot_metadata(tag.snapshot) == snapshot_metadata(snapshot):
                return
        raise SnapshotExpiredConcurrentlyError(
            f"snapshot {snapshot.id} was expired while tag '{name}' was being written, so the tag was "
            "left as it was; tag a newer snapshot"
        )

    def create_from_timestamp(
        self, name: str, timestamp_millis: int, time_retained: TimeRetained = None
    ) -> Tag:
        """Tag the first snapshot committed at or after ``timestamp_millis`` (Paimon's rule).

        Tags are considered too (their snapshot may have expired): the earliest of the two wins.
        """
        validate_name("tag", name, new=True)
        if self.tags.exists(name):
            raise TagAlreadyExistsError(f"tag '{name}' already exists; delete it first or use replace_tag")
        found = self._first_at_or_after(timestamp_millis)
        if found is None:
            raise NoSuchSnapshotError(
                f"no snapshot or tag of {self.store.paths.root} was committed at or after "
                f"timestamp {timestamp_millis}"
            )
        check_visible(self.store, found, f"tag the first snapshot at or after timestamp {timestamp_millis}")
        tag = self._tag(found, time_retained)
        self._publish(name, tag)
        return tag

    def _first_at_or_after(self, timestamp_millis: int) -> Snapshot | None:
        snapshots = self.store.snapshots
        found: Snapshot | None = None
        for sid in snapshots.list_ids():  # ids are time-ordered; the first match wins
            try:
                snap = snapshots.get(sid)
            except NoSuchSnapshotError:
                continue
            if snap.time_millis >= timestamp_millis:
                found = snap
                break
        for tag in sorted(self.tags.all().values(), key=lambda t: t.snapshot.id):
            if tag.snapshot.time_millis >= timestamp_millis:
                if found is None or tag.snapshot.time_millis < found.time_millis:
                    found = tag.snapshot
                break
        return found

    def replace(self, name: str, snapshot_id: int | None = None, time_retained: TimeRetained = None) -> Tag:
        """Point an existing tag at another snapshot (default: the latest); atomic overwrite."""
        validate_name("tag", name)
        if not self.tags.exists(name):
            raise NoSuchTagError(f"tag '{name}' does not exist; create it with create_tag")
        tag = self._tag(self._snapshot(snapshot_id), time_retained)
        self._publish(name, tag, replace=True)
        return tag

    def rename(self, old: str, new: str) -> None:
        validate_name("tag", old)
        validate_name("tag", new, new=True)
        if not self.tags.exists(old):
            raise NoSuchTagError(f"tag '{old}' does not exist; SHOW TAGS lists the existing ones")
        if self.tags.exists(new):
            raise TagAlreadyExistsError(f"tag '{new}' already exists; nothing was renamed")
        try:
            moved = self.store.io.rename(self.store.paths.tag_file(old), self.store.paths.tag_file(new))
        except FileNotFoundError:
            raise NoSuchTagError(f"tag '{old}' was deleted concurrently; nothing was renamed") from None
        if not moved:
            raise TagAlreadyExistsError(f"tag '{new}' was created concurrently; nothing was renamed")
        iceberg_metadata(self.store)  # never raises

    # -- deleting -------------------------------------------------------------------------------
    def delete(self, names: str | Iterable[str], *, dry_run: bool = False) -> TagDeletion:
        """Delete tags and exactly the files no other anchor of any branch references.

        ``names``: one name, a comma-separated list (Paimon's ``delete_tag``), or an iterable.
        """
        wanted = _names(names)
        for name in wanted:
            validate_name("tag", name)
        missing = [n for n in wanted if not self.tags.exists(n)]
        if missing:
            raise NoSuchTagError(
                f"tag(s) {', '.join(repr(n) for n in missing)} do not exist; nothing was deleted"
            )
        pinned = [n for n in wanted if self._pins_a_live_branch(n)]
        if pinned:
            raise InvalidArgumentError(
                f"tag(s) {', '.join(repr(n) for n in pinned)} pin the base of a branch that still exists "
                "(Java "
                "Paimon's expiration would delete the branch's files without it); delete the branch first, "
                "which removes its base tag; nothing was deleted"
            )
        if all(self._kept_by_its_snapshot(n) for n in wanted):
            if not dry_run:
                for name in wanted:
                    self.tags.delete(name)
                iceberg_metadata(self.store)  # the Iceberg refs follow; never raises
            return TagDeletion(tuple(wanted), DeletionReport((), dry_run))
        io, root, branch = self.store.io, self.store.paths.root, self.store.branch
        collector = ReachabilityCollector(io, root)
        doomed = {Anchor("tag", branch, n, None) for n in wanted}  # type: ignore[arg-type]

        def plan() -> tuple[list[Anchor], Reachable, Reachable]:
            before = all_anchors(io, root)  # fail closed: nothing is changed if any anchor is unreadable
            going = [a for a in before if a in doomed]
            return before, collector.collect(going), collector.collect([a for a in before if a not in doomed])

        before, candidates, keep = retry_concurrent(plan)
        if dry_run:
            return TagDeletion(tuple(wanted), delete_files(io, unreferenced(candidates, keep), dry_run=True))
        for name in wanted:
            self.store.io.delete(self.store.paths.tag_file(name))
        iceberg_metadata(self.store)  # never raises
        counted = [a for a in before if a not in doomed]
        keep = retry_concurrent(
            lambda: keep_with_new_anchors(collector, keep, counted, all_anchors(io, root)))
        return TagDeletion(tuple(wanted), delete_files(io, unreferenced(candidates, keep)))

    def _pins_a_live_branch(self, name: str) -> bool:
        if not name.startswith(BASE_TAG_PREFIX) or name == BASE_TAG_PREFIX:
            return False
        branch = name[len(BASE_TAG_PREFIX):]
        return branch != MAIN_BRANCH and self.store.io.exists(
            TablePaths(self.store.paths.root, branch).branch_root
        )

    def _kept_by_its_snapshot(self, name: str) -> bool:
        """The tagged snapshot still exists with the tag's metadata (read afresh: ids can be reused
        after a Java rollback), so it references every file the tag does."""
        tagged = self.tags.get(name).snapshot
        try:
            current = Snapshot.from_json(self.store.io.read_bytes(self.store.paths.snapshot_file(tagged.id)))
        except (DyntableError, OSError):
            return False  # missing or unreadable: the full computation decides (and fails closed)
        return snapshot_metadata(current) == snapshot_metadata(tagged)

    def expired(self, older_than: TimeBoundLike | None = None, now: dt.datetime | None = None) -> list[str]:
        """Names of tags whose retention has passed, or created before ``older_than`` (Paimon's rules).

        A tag without a creation time or retention counts only for ``older_than``, by its file's
        modification time. ``older_than``: any form of ``engine.time_bound`` (tag creation times are
        local wall-clock times, so the bound is compared as one).
        """
        now = now or dt.datetime.now()
        bound = None if older_than is None else parse_time_bound(older_than, "older_than")
        cutoff = None if bound is None else bound.local_datetime(now)
        mtimes: dict[str, int | None] | None = None
        out = []
        for name, tag in sorted(self.tags.all().items()):
            created, retained = tag.create_time, tag.time_retained_ms
            if created is None or retained is None:
                if cutoff is None:
                    continue
                if mtimes is None:
                    mtimes = self._tag_mtimes()
                mtime = mtimes.get(name)
                if mtime is None:
                    continue
                created = dt.datetime.fromtimestamp(mtime / 1000)
            reached = retained is not None and now > created + dt.timedelta(milliseconds=retained)
            older = cutoff is not None and cutoff > created
            if reached or older:
                out.append(name)
        return out

    def _tag_mtimes(self) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for status in self.store.io.list_dir(self.store.paths.tag_dir):
            base = status.path.rsplit("/", 1)[-1]
            if base.startswith("tag-"):
                out[base[len("tag-") :]] = status.modification_time_ms
        return out

    def expire(self, older_than: TimeBoundLike | None = None, *, dry_run: bool = False) -> TagDeletion:
        names = self.expired(older_than)
        if not names:
            return TagDeletion((), DeletionReport((), dry_run))
        return self.delete(names, dry_run=dry_run)


def _names(names: str | Iterable[str]) -> list[str]:
    if isinstance(names, str):
        out = [n.strip() for n in names.split(",")]
    else:
        out = list(names)
    if not out or any(not isinstance(n, str) for n in out):
        raise InvalidArgumentError(f"give one or more tag names, not {names!r}")
    seen: dict[str, None] = dict.fromkeys(out)
    return list(seen)


__all__: Sequence[str] = ("TagDeletion", "TagOps", "keep_with_new_anchors", "retention_millis")
