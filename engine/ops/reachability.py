"""Which files of a table are still needed: the reachability of every anchor of every branch.

One job: given a table root, list the anchors that protect files (every snapshot, tag and
long-lived changelog of the main branch and of every ``branch/branch-*``) and compute, at one
point, the files they reference. Everything that deletes files (deleting tags and branches,
snapshot expiration, orphan cleanup) subtracts such a set from its candidates, so this module is
the one place that decides "in use".

What an anchor references (``docs/design/format-notes.md`` §1, §3, §4):

* snapshot / tag: its base, delta and changelog manifest lists; every manifest they name; the
  data files **live** in it (base + delta merged, §6.5) with their extra files (``.index``);
  the changelog files of its changelog manifests; its index manifest and every index file that
  manifest lists; its statistics file. A file named only by a DELETE entry (deleted by this very
  snapshot) is not referenced: no reader opens it, and Paimon's expiration deletes it too.
* long-lived changelog (``changelog/changelog-N``): its delta and changelog manifest lists, their
  manifests, the files they ADD and the changelog files (the base list may be gone, by design).
* consumers protect snapshots (their ``nextSnapshot`` and later), which are anchors anyway.

Fail closed: an anchor or manifest that cannot be read (corrupt, missing, a failed listing)
raises :class:`UnsafeToDeleteError` naming the file, and callers delete no data file. A snapshot
or tag that vanishes between the listing and the read was removed concurrently (expired or
deleted) and simply is no anchor any more. A branch's snapshot history must be whole: an id
missing between two present ones, or LATEST above every present snapshot, raises
:class:`HistoryGapError` once re-listing does not explain it. A manifest or list missing while
the anchor naming it is gone too (or a branch deleted while read) is a concurrent removal, not
damage: :class:`ConcurrentChangeError`, which :func:`retry_concurrent` re-runs (bounded).
:func:`keep_with_new_anchors` is the second look every deletion takes after removing its
anchors: anchors are compared by :func:`anchor_identity` (name *and* the snapshot they name).

Cost: every snapshot/tag JSON and manifest list is read once, every distinct manifest decoded
once (the manifest cache is shared with planning). Live sets are not rebuilt per anchor: anchors
are visited in snapshot order and each one's manifest sequence usually extends the previous one's
(a commit appends its delta manifest to the previous snapshot's manifests), so only the new
manifests are merged in; a manifest merge or another branch restarts the fold (files already
recorded are not recorded again). A list named by several anchors (a tag of a kept snapshot) and
a manifest named by many lists are recorded once. ``explain=True`` additionally records, per file,
every anchor that keeps it (cost: the live set per anchor). Orphan cleanup, which needs only the
union of paths, uses ``lean=True``: manifests and lists decoded without statistics and not cached
(``ManifestStore.read_refs``; a large manifest through Arrow columns, of which only the nine the
fold reads become Python values), with exactly the same checks, so an unreadable file still refuses;
as a branch's lists and manifests are mostly main's (one manifest directory), a collector keeps
those lean decodes for the other branches.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from engine.errors import CorruptMetadataError, DyntableError, NoSuchSnapshotError, NoSuchTagError
from engine.identifier import MAIN_BRANCH, validate_name
from engine.io import FileIO
from engine.meta.binary_row import deserialize_row
from engine.meta.index_files import IndexManifestEntry, IndexStore
from engine.meta.manifest import FileKind, ManifestEntry
from engine.meta.paths import TablePaths, join, parse_versioned_id
from engine.meta.refs import TagStore
from engine.meta.snapshot import Snapshot
from engine.meta.snapshot_store import SnapshotStore
from engine.store import FileStore

T = TypeVar("T")


class UnsafeToDeleteError(CorruptMetadataError):
    """A file that could protect data cannot be read, so nothing may be deleted.

    ``path`` names the unreadable file (snapshot, tag, branch directory or manifest): restore or
    repair it, then run the operation again. No data file was deleted.
    """

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class ConcurrentChangeError(UnsafeToDeleteError):
    """A file the computation needed was removed by a concurrent, legitimate operation (an
    expiration, a tag or branch deletion) while it was being read: not damage. The operation is
    re-run from the start by :func:`retry_concurrent` (bounded); if the table keeps changing, this
    error ends it with nothing deleted."""

    retryable = True


class HistoryGapError(UnsafeToDeleteError):
    """A branch's snapshot history has a hole (a missing snapshot id between two present ones) or a
    LATEST hint naming a snapshot above every present one, and re-reading did not explain it as a
    concurrent commit or expiration. Files only that snapshot referenced would look unreferenced,
    so nothing is deleted: restore the snapshot file (or repair LATEST) and run again."""


#: How many times a maintenance computation is re-run when concurrent removals disturbed it.
CONCURRENT_ATTEMPTS = 3


def retry_concurrent(run: Callable[[], T], attempts: int = CONCURRENT_ATTEMPTS) -> T:
    """``run()``, re-run up to ``attempts`` times in all while it raises :class:`ConcurrentChangeError`
    (``run`` must change nothing before it can raise that); the last error propagates."""
    for attempt in range(1, attempts + 1):
        try:
            return run()
        except ConcurrentChangeError:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


class FileKindRef(StrEnum):
    """What a referenced file is (deletion order and reporting use it)."""

    DATA = "data"
    EXTRA = "extra"  # a data file's extra file (file index)
    CHANGELOG = "changelog"
    MANIFEST = "manifest"
    MANIFEST_LIST = "manifest-list"
    INDEX_MANIFEST = "index-manifest"
    INDEX = "index"
    STATISTICS = "statistics"


#: Deletion order: what a crash leaves behind is only ever unreferenced, but data first and the
#: metadata describing it last keeps a half-finished deletion explainable.
DELETE_ORDER = (
    FileKindRef.DATA, FileKindRef.EXTRA, FileKindRef.CHANGELOG, FileKindRef.INDEX, FileKindRef.STATISTICS,
    FileKindRef.MANIFEST, FileKindRef.INDEX_MANIFEST, FileKindRef.MANIFEST_LIST,
)


@dataclass(frozen=True, slots=True)
class Anchor:
    """Something that keeps files alive: ``kind`` is ``snapshot``, ``tag`` or ``changelog``."""

    kind: str
    branch: str
    name: str  # the snapshot id (snapshot, changelog) or the tag name
    snapshot: Snapshot = field(compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        where = "" if self.branch == MAIN_BRANCH else f" of branch {self.branch}"
        return f"{self.kind} {self.name}{where}"


@dataclass(frozen=True, slots=True)
class FileRef:
    kind: FileKindRef
    size: int | None  # bytes when the metadata records it; None = unknown (ask the file system)


@dataclass
class Reachable:
    """Files referenced by a set of anchors: full path → :class:`FileRef`.

    ``reasons`` (only with ``explain=True``): full path → the anchors that reference it.
    """

    files: dict[str, FileRef] = field(default_factory=dict)
    anchors: list[Anchor] = field(default_factory=list)
    reasons: dict[str, list[Anchor]] | None = None

    def __contains__(self, path: object) -> bool:
        return path in self.files

    def paths(self, kind: FileKindRef | None = None) -> set[str]:
        return {p for p, r in self.files.items() if kind is None or r.kind is kind}

    def _add(self, path: str, kind: FileKindRef, size: int | None) -> None:
        if path not in self.files:
            self.files[path] = FileRef(kind, size)


def _unsafe(path: str, e: BaseException) -> UnsafeToDeleteError:
    return UnsafeToDeleteError(
        f"cannot read {path} ({e}); it may protect files, so nothing was deleted — repair or restore it and "
        "retry",
        path,
    )


# ---------------------------------------------------------------------------------------------
# Anchors


def branch_names(io: FileIO, root: str) -> list[str]:
    """``main`` and every branch found under ``branch/`` (fail closed on a bad directory)."""
    branch_dir = join(root, "branch")
    try:
        listed = io.list_dir(branch_dir)
    except (DyntableError, OSError) as e:
        raise _unsafe(branch_dir, e) from e
    names = [MAIN_BRANCH]
    for status in listed:
        base = status.path.rstrip("/").rsplit("/", 1)[-1]
        if not status.is_dir or not base.startswith("branch-"):
            continue
        name = base[len("branch-") :]
        try:
            validate_name("branch", name)
        except DyntableError as e:
            raise _unsafe(status.path, e) from e
        names.append(name)
    return names


def branch_anchors(io: FileIO, paths: TablePaths) -> list[Anchor]:
    """The snapshots, tags and long-lived changelogs of one branch, in snapshot-id order.

    The snapshot history must be whole (see :func:`_snapshot_anchors`); a branch deleted while it
    is read raises :class:`ConcurrentChangeError`.
    """
    branch = paths.branch
    anchors = _snapshot_anchors(io, paths)
    tags = TagStore(io, paths)
    try:
        names = tags.names()
    except (DyntableError, OSError) as e:
        raise _unsafe(paths.tag_dir, e) from e
    for name in names:
        path = join(paths.tag_dir, f"tag-{name}")
        try:
            anchors.append(Anchor("tag", branch, name, tags.get(name).snapshot))
        except NoSuchTagError:
            continue  # deleted since the listing
        except (DyntableError, OSError) as e:
            raise _unsafe(path, e) from e
    changelog_dir = join(paths.branch_root, "changelog")
    try:
        listed = io.list_dir(changelog_dir)
    except (DyntableError, OSError) as e:
        raise _unsafe(changelog_dir, e) from e
    for status in listed:
        cid = parse_versioned_id(status.path.rsplit("/", 1)[-1], "changelog-")
        if cid is None:
            continue
        try:
            anchors.append(
                Anchor("changelog", branch, str(cid), Snapshot.from_json(io.read_bytes(status.path)))
            )
        except FileNotFoundError:
            continue
        except (DyntableError, OSError) as e:
            raise _unsafe(status.path, e) from e
    _check_branch_alive(io, paths)
    anchors.sort(key=lambda a: (a.snapshot.id, a.kind != "snapshot"))
    return anchors


def _check_branch_alive(io: FileIO, paths: TablePaths) -> None:
    """A branch whose directory went while it was read was deleted concurrently: not damage."""
    if paths.branch == MAIN_BRANCH:
        return
    if not io.exists(paths.schema_dir) and not io.exists(paths.branch_root):
        raise ConcurrentChangeError(
            f"branch {paths.branch} was deleted while maintenance read it; nothing was deleted",
            paths.branch_root)


def _snapshot_anchors(io: FileIO, paths: TablePaths) -> list[Anchor]:
    """The branch's snapshots, after checking the history is whole.

    A listing must be continuous (``first..last`` with no id missing) and LATEST must not name a
    snapshot above the newest listed one; a snapshot listed but gone when read must be one of the
    oldest (an expiration deletes oldest first) or one of the newest (a rollback deletes newest
    first, after lowering LATEST). Anything else is re-read (a listing of object storage is not a
    point in time, and a commit or expiration may have run in between) and, if it persists,
    refused with :class:`HistoryGapError`: without that snapshot its files would look unreferenced.
    """
    snapshots = SnapshotStore(io, paths)
    problem = ""
    for _ in range(CONCURRENT_ATTEMPTS):
        try:
            ids = snapshots.list_ids()
        except (DyntableError, OSError) as e:
            raise _unsafe(paths.snapshot_dir, e) from e
        if ids and ids[-1] - ids[0] + 1 != len(ids):
            present = set(ids)
            holes = [i for i in range(ids[0], ids[-1] + 1) if i not in present]
            problem = f"snapshot {_ids(holes)} is missing between snapshots {ids[0]} and {ids[-1]}"
            continue
        latest = _hint(io, paths.latest_hint)
        ahead = latest is not None and (not ids or latest > ids[-1])
        if ahead and not io.exists(paths.snapshot_file(latest)):  # type: ignore[arg-type]
            newest = f"the newest present is {ids[-1]}" if ids else "no snapshot is present"
            problem = f"LATEST names snapshot {latest}, which is missing, and {newest}"
            continue
        anchors: list[Anchor] = []
        gone: list[int] = []
        for sid in ids:
            try:
                anchors.append(Anchor("snapshot", paths.branch, str(sid), snapshots.get(sid)))
            except NoSuchSnapshotError:
                gone.append(sid)  # expired (or rolled back) since the listing, if at either end
            except (DyntableError, OSError) as e:
                raise _unsafe(paths.snapshot_file(sid), e) from e
        read = [int(a.name) for a in anchors]
        if gone and read and any(read[0] < g < read[-1] for g in gone):
            problem = f"snapshot {_ids(gone)} vanished while snapshots around it remained"
            continue
        return anchors
    _check_branch_alive(io, paths)
    raise HistoryGapError(
        f"the snapshot history of {paths.branch_root} is not whole: {problem}. Files only that snapshot "
        "referenced would look unreferenced, so nothing was deleted; restore the snapshot file (or "
        "repair LATEST) and run again", paths.snapshot_dir)


def _hint(io: FileIO, path: str) -> int | None:
    try:
        raw = io.read_bytes(path).strip()
    except FileNotFoundError:
        return None
    except (DyntableError, OSError) as e:
        raise _unsafe(path, e) from e
    return int(raw) if raw.isdigit() else None


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(str(i) for i in ids[:5]) + (", …" if len(ids) > 5 else "")


def anchor_exists(io: FileIO, root: str, anchor: Anchor) -> bool:
    """``anchor`` still exists with the same metadata (a reused snapshot id or a replaced tag is
    another anchor). An unreadable anchor counts as existing: only a clear absence is a removal."""
    paths = TablePaths(root, anchor.branch)
    if anchor.kind == "snapshot":
        path = paths.snapshot_file(int(anchor.name))
    elif anchor.kind == "tag":
        path = paths.tag_file(anchor.name)
    else:
        path = join(paths.branch_root, "changelog", f"changelog-{anchor.name}")
    try:
        current = Snapshot.from_json(io.read_bytes(path))
    except FileNotFoundError:
        return False
    except (DyntableError, OSError):
        return True
    return snapshot_metadata(current) == snapshot_metadata(anchor.snapshot)


def snapshot_metadata(s: Snapshot) -> tuple[object, ...]:
    """What makes two snapshots reference the same files: their manifest lists, index and statistics."""
    return (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list, s.index_manifest,
            s.statistics)


def anchor_identity(a: Anchor) -> tuple[object, ...]:
    """An anchor by name *and* by the snapshot it names: a tag replaced to name another snapshot, or a
    snapshot id reused after a rollback, is a different anchor."""
    return (a.kind, a.branch, a.name, *snapshot_metadata(a.snapshot))


def keep_with_new_anchors(collector: ReachabilityCollector, keep: Reachable, counted: Sequence[Anchor],
                          now: Sequence[Anchor]) -> Reachable:
    """``keep`` (the files of ``counted``) plus the files of every anchor in ``now`` made meanwhile.

    Called after the deleted anchors are gone (snapshot files expired, tag files deleted), so that
    an anchor created or re-pointed since the keep set was computed (a commit, a tag created or
    replaced, a branch) is honoured. Anchors are matched by :func:`anchor_identity`; one that has
    disappeared keeps its files in ``keep`` (a superset: at worst garbage for orphan cleanup).
    Only new anchors are collected, so the second pass costs their live files, not the whole
    history again.
    """
    known = {anchor_identity(a) for a in counted}
    fresh = [a for a in now if anchor_identity(a) not in known]
    if fresh:
        for path, ref in collector.collect(fresh).files.items():
            keep.files.setdefault(path, ref)
    return keep


def all_anchors(io: FileIO, root: str, *, skip: str | None = None) -> list[Anchor]:
    """Every anchor of every branch of the table at ``root`` (but the branch ``skip``)."""
    out: list[Anchor] = []
    for branch in branch_names(io, root):
        if branch != skip:
            out.extend(branch_anchors(io, TablePaths(root, branch)))
    return out


# ---------------------------------------------------------------------------------------------
# Files of anchors


class _BranchResolver:
    """Paths of one branch's data files (partition directory strings follow its schema's options)."""

    def __init__(self, io: FileIO, root: str, branch: str) -> None:
        paths = TablePaths(root, branch)
        self.paths = paths
        from engine.meta.schema_store import SchemaStore

        try:
            schema = SchemaStore(io, paths).latest()
        except (DyntableError, OSError) as e:
            raise _unsafe(paths.schema_dir, e) from e
        if schema is None:
            raise UnsafeToDeleteError(
                f"branch {branch} of {root} has snapshots or tags but no schema in {paths.schema_dir}; "
                "nothing was deleted", paths.schema_dir)
        self.store = FileStore(io, paths, schema)
        self.index = IndexStore(io, paths)
        self._dirs: dict[bytes, str] = {}
        self._buckets: dict[tuple[bytes, int], str] = {}

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        found = self._buckets.get((partition, bucket))
        if found is not None:
            return found
        part_dir = self._dirs.get(partition)
        if part_dir is None:
            part_dir = self.store.partition_dir(deserialize_row(partition, self.store.partition_types))
            self._dirs[partition] = part_dir
        found = self._buckets[(partition, bucket)] = self.store.paths.bucket_dir(part_dir, bucket)
        return found


#: Lean lists and manifest refs a collector keeps for other branches (tens of MB at most).
_LEAN_MEMO_ENTRIES = 200_000


class ReachabilityCollector:
    """Computes the files of anchors; caches decoded metadata by name across calls.

    ``lean=True`` decodes manifests without their statistics and without filling the manifest
    cache (``ManifestStore.read_refs``): for a one-off sweep over every manifest that never plans
    a scan (orphan cleanup). Deletions that go on to read the same manifests through the store
    (expiration, tag and branch deletion) keep the default, so each manifest is decoded once.
    """

    def __init__(self, io: FileIO, root: str, *, lean: bool = False) -> None:
        self.io = io
        self.root = root.rstrip("/")
        self.lean = lean
        self._resolvers: dict[str, _BranchResolver] = {}
        self._index_manifests: dict[str, list[IndexManifestEntry]] = {}
        # Branches share the manifest directory, so a branch's fold re-reads main's lists and
        # manifests: lean decodes are kept per collector (up to a budget) for the other branches.
        self._lean_lists: dict[str, list[tuple[str, int]]] = {}
        self._lean_refs: dict[str, list[ManifestEntry]] = {}
        self._lean_budget = _LEAN_MEMO_ENTRIES

    def _resolver(self, branch: str) -> _BranchResolver:
        r = self._resolvers.get(branch)
        if r is None:
            try:
                r = _BranchResolver(self.io, self.root, branch)
            except UnsafeToDeleteError:
                _check_branch_alive(self.io, TablePaths(self.root, branch))
                raise
            self._resolvers[branch] = r
        return r

    def _read_list(self, ms, name: str, anchor: Anchor) -> list[tuple[str, int]]:
        """The ``(manifest name, byte size)`` pairs of a manifest list."""
        try:
            if not self.lean:
                return [(m.file_name, m.file_size) for m in ms.read_list(name)]
            return self._lean(self._lean_lists, name, ms.read_list_refs)
        except (DyntableError, OSError) as e:
            raise self._unreadable(ms.paths.manifest_file(name), e, anchor) from e

    def _read_entries(self, ms, name: str, anchor: Anchor) -> list[ManifestEntry]:
        try:
            return self._lean(self._lean_refs, name, ms.read_refs) if self.lean else ms.read_entries(name)
        except (DyntableError, OSError) as e:
            raise self._unreadable(ms.paths.manifest_file(name), e, anchor) from e

    def _unreadable(self, path: str, e: BaseException, anchor: Anchor) -> UnsafeToDeleteError:
        """A metadata file of ``anchor`` could not be read: if it is missing *and* the anchor is gone
        too (expired, deleted, its branch deleted), a concurrent operation removed both — retry;
        otherwise the table is damaged — fail closed."""
        try:
            missing = not self.io.exists(path)
        except (DyntableError, OSError):
            missing = False
        if missing and not anchor_exists(self.io, self.root, anchor):
            return ConcurrentChangeError(
                f"{anchor} was removed by another operation while its file {path} was read; "
                "nothing was deleted",
                path)
        return _unsafe(path, e)

    def _lean(self, memo: dict, name: str, decode) -> list:
        """``decode(name)``, kept for later branches while the budget lasts (full decodes live in
        the store's manifest cache instead)."""
        found = memo.get(name)
        if found is None:
            found = decode(name)
            if len(found) <= self._lean_budget:
                self._lean_budget -= len(found)
                memo[name] = found
        return found

    def _index_entries(self, r: _BranchResolver, name: str, anchor: Anchor) -> list[IndexManifestEntry]:
        cached = self._index_manifests.get(name)
        if cached is None:
            try:
                cached = r.index.read_manifest(name)
            except (DyntableError, OSError) as e:
                raise self._unreadable(r.paths.manifest_file(name), e, anchor) from e
            self._index_manifests[name] = cached
        return cached

    def _data_path(self, r: _BranchResolver, e: ManifestEntry) -> str:
        if e.file.external_path:
            return r.paths.external_file(e.file.external_path)  # refuses a path it cannot resolve
        return join(r.bucket_dir(e.partition, e.bucket), e.file.file_name)

    def _extra_path(self, r: _BranchResolver, e: ManifestEntry, extra: str) -> str:
        """An extra file (file index) lives beside its data file, at an external path too."""
        if e.file.external_path:
            return join(r.paths.external_file(e.file.external_path).rsplit("/", 1)[0], extra)
        return join(r.bucket_dir(e.partition, e.bucket), extra)

    def collect(self, anchors: Sequence[Anchor], *, explain: bool = False) -> Reachable:
        """The files ``anchors`` reference (see the module docstring); fail closed."""
        out = Reachable(anchors=list(anchors), reasons={} if explain else None)
        by_branch: dict[str, list[Anchor]] = {}
        for a in anchors:
            by_branch.setdefault(a.branch, []).append(a)
        # Tens of thousands of small objects, none in a cycle: the cyclic GC would only rescan the
        # growing sets and the manifest cache again and again (~10% of the run), so pause it.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for branch, group in by_branch.items():
                r = self._resolver(branch)
                group = sorted(group, key=lambda a: (a.snapshot.id, a.kind != "snapshot"))
                self._collect_branch(r, group, out)
        finally:
            if gc_was_enabled:
                gc.enable()
        return out

    def _collect_branch(self, r: _BranchResolver, anchors: list[Anchor], out: Reachable) -> None:
        ms = r.store.manifests
        explain = out.reasons is not None
        seen_lists: dict[tuple[str, bool], list[str]] = {}  # (list, holds data) -> its manifests
        listed: set[str] = set()  # manifests whose path is recorded in `out`
        seen_manifests: set[str] = set()  # changelog manifests whose files are recorded
        seen_index: set[str] = set()
        # The incremental fold: `state` is the merged live set of manifest sequence `folded`;
        # `pending` holds identifiers added to `state` since the last anchor was flushed to `out`.
        folded: list[str] = []
        state: dict[tuple[object, ...], ManifestEntry] = {}
        pending: set[tuple[object, ...]] = set()
        emitted: set[tuple[object, ...]] = set()  # identifiers whose files are recorded in `out`
        for anchor in anchors:
            snap = anchor.snapshot
            lists: list[tuple[str, int | None, bool]] = []  # (name, size, holds data manifests)
            if anchor.kind != "changelog":
                lists.append((snap.base_manifest_list, snap.base_manifest_list_size, True))
            lists.append((snap.delta_manifest_list, snap.delta_manifest_list_size, True))
            if snap.changelog_manifest_list:
                lists.append((snap.changelog_manifest_list, snap.changelog_manifest_list_size, False))
            data_seq: list[str] = []
            for name, size, is_data in lists:
                known = seen_lists.get((name, is_data))
                if known is not None and not explain:
                    # Lists are immutable: one seen before (a tag of a kept snapshot) adds no file.
                    data_seq.extend(known if is_data else ())
                    continue
                metas = self._read_list(ms, name, anchor)
                seen_lists[(name, is_data)] = [m for m, _ in metas]
                path = ms.paths.manifest_file(name)
                out._add(path, FileKindRef.MANIFEST_LIST, size)
                self._reason(out, path, anchor)
                for mname, msize in metas:
                    if is_data:
                        data_seq.append(mname)
                    if mname not in listed or explain:  # most manifests are named by many lists
                        listed.add(mname)
                        mpath = ms.paths.manifest_file(mname)
                        out._add(mpath, FileKindRef.MANIFEST, msize)
                        self._reason(out, mpath, anchor)
                    if not is_data and (mname not in seen_manifests or explain):
                        seen_manifests.add(mname)
                        for e in self._read_entries(ms, mname, anchor):
                            if e.kind is FileKind.ADD:
                                self._add_file(r, e, FileKindRef.CHANGELOG, out, anchor)
            if anchor.kind == "changelog":
                # Only the delta's additions: without the base there is no live set to merge into.
                for mname in data_seq:
                    for e in self._read_entries(ms, mname, anchor):
                        if e.kind is FileKind.ADD:
                            self._add_file(r, e, FileKindRef.DATA, out, anchor)
            else:
                if data_seq[: len(folded)] != folded:
                    folded, state, pending = [], {}, set()
                for mname in data_seq[len(folded) :]:
                    entries = self._read_entries(ms, mname, anchor)
                    self._fold(entries, state, pending, ms.paths.manifest_file(mname))
                folded = data_seq
                if not explain:
                    # After a restart (a manifest merge) the fold re-adds files already recorded.
                    pending -= emitted
                    emitted |= pending
                for key in pending:
                    self._add_file(r, state[key], FileKindRef.DATA, out, anchor)
                pending = set()
                if out.reasons is not None:
                    for e in state.values():
                        self._reason_file(r, e, out, anchor)
            if snap.index_manifest and (snap.index_manifest not in seen_index or out.reasons is not None):
                seen_index.add(snap.index_manifest)
                ipath = ms.paths.manifest_file(snap.index_manifest)
                out._add(ipath, FileKindRef.INDEX_MANIFEST, None)
                self._reason(out, ipath, anchor)
                for ie in self._index_entries(r, snap.index_manifest, anchor):
                    fpath = r.index.file_path(ie.file)
                    out._add(fpath, FileKindRef.INDEX, ie.file.file_size)
                    self._reason(out, fpath, anchor)
            if snap.statistics:
                spath = join(self.root, "statistics", snap.statistics)
                out._add(spath, FileKindRef.STATISTICS, None)
                self._reason(out, spath, anchor)

    @staticmethod
    def _fold(entries: Iterable[ManifestEntry], state: dict, pending: set, path: str) -> None:
        for e in entries:
            key = e.identifier
            if e.kind is FileKind.ADD:
                if key in state:
                    raise UnsafeToDeleteError(
                        f"{path} adds {e.file.file_name} (bucket {e.bucket}, level {e.file.level}) which is "
                        "already "
                        "live: the manifests are inconsistent, so nothing was deleted",
                        path,
                    )
                state[key] = e
                pending.add(key)
            else:
                # A DELETE of a file never added (Java tolerates it within a delta) removes nothing.
                state.pop(key, None)
                pending.discard(key)

    def _add_file(
        self, r: _BranchResolver, e: ManifestEntry, kind: FileKindRef, out: Reachable, anchor: Anchor
    ) -> None:
        path = self._data_path(r, e)
        out._add(path, kind, e.file.file_size)
        for extra in e.file.extra_files:
            out._add(self._extra_path(r, e, extra), FileKindRef.EXTRA, None)
        self._reason_file(r, e, out, anchor)

    def _reason_file(self, r: _BranchResolver, e: ManifestEntry, out: Reachable, anchor: Anchor) -> None:
        if out.reasons is None:
            return
        self._reason(out, self._data_path(r, e), anchor)
        for extra in e.file.extra_files:
            self._reason(out, self._extra_path(r, e, extra), anchor)

    @staticmethod
    def _reason(out: Reachable, path: str, anchor: Anchor) -> None:
        if out.reasons is None:
            return
        anchors = out.reasons.setdefault(path, [])
        if not anchors or anchors[-1] != anchor:
            anchors.append(anchor)


def reachable_files(
    io: FileIO, root: str, *, exclude: Iterable[Anchor] = (), explain: bool = False,
    collector: ReachabilityCollector | None = None, lean: bool = False,
) -> Reachable:
    """Every file referenced by every anchor of every branch of the table at ``root``.

    Args:
        io: The table's FileIO.
        root: The table root (not a branch directory).
        exclude: Anchors to leave out (e.g. the tags being deleted), compared by kind, branch, name.
        explain: Also record, per file, which anchors keep it (``Reachable.reasons``).
        collector: Reuse a collector's caches (e.g. to compute candidates and the keep set).
        lean: Without a collector: decode manifests without statistics or caching them (see
            :class:`ReachabilityCollector`).

    Raises:
        HistoryGapError: A branch's snapshot history has a hole, or LATEST names a missing snapshot.
        ConcurrentChangeError: Concurrent removals disturbed every one of the bounded attempts.
        UnsafeToDeleteError: Some snapshot, tag, branch directory or manifest cannot be read.
    """
    skip = set(exclude)
    collector = collector or ReachabilityCollector(io, root, lean=lean)

    def run() -> Reachable:
        anchors = [a for a in all_anchors(io, root) if a not in skip]
        return collector.collect(anchors, explain=explain)

    return retry_concurrent(run)


# ---------------------------------------------------------------------------------------------
# Deleting what nothing references


@dataclass(frozen=True, slots=True)
class DeletionReport:
    """What a deletion removed (or, with ``dry_run``, would remove)."""

    files: tuple[tuple[str, FileKindRef, int], ...]  # (path, kind, bytes)
    dry_run: bool = False

    @property
    def bytes(self) -> int:
        return sum(size for _, _, size in self.files)

    @property
    def count(self) -> int:
        return len(self.files)

    def paths(self, kind: FileKindRef | None = None) -> list[str]:
        return [p for p, k, _ in self.files if kind is None or k is kind]


def unreferenced(candidates: Reachable, keep: Reachable) -> dict[str, FileRef]:
    """Files of ``candidates`` that ``keep`` does not reference."""
    return {p: ref for p, ref in candidates.files.items() if p not in keep.files}


def delete_files(
    io: FileIO, doomed: dict[str, FileRef], *, dry_run: bool = False, threads: int = 1
) -> DeletionReport:
    """Delete ``doomed`` kind by kind in :data:`DELETE_ORDER`, each kind's files on ``threads``
    threads (already missing files count as deleted, 0 bytes).

    Unknown sizes are asked from the file system (a dry run reports them too). The first failure
    is raised once its kind's batch has settled, so no later kind is touched.
    """
    done: list[tuple[str, FileKindRef, int]] = []

    def one(item: tuple[str, FileRef]) -> tuple[str, FileKindRef, int]:
        path, ref = item
        size = ref.size
        if size is None:
            try:
                size = io.file_size(path)
            except FileNotFoundError:
                size = 0
        if not dry_run:
            io.delete(path)
        return path, ref.kind, size

    def chunk(items: list[tuple[str, FileRef]]) -> list[tuple[str, FileKindRef, int]]:
        return [one(item) for item in items]

    workers = max(1, threads)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dyntable-delete") as pool:
        for kind in DELETE_ORDER:
            batch = sorted((p, r) for p, r in doomed.items() if r.kind is kind)
            if not batch:
                continue
            if workers == 1:
                done.extend(chunk(batch))
                continue
            # A few chunks per thread, not one task per file: per-task overhead would dominate.
            size = max(1, -(-len(batch) // (workers * 4)))
            futures = [pool.submit(chunk, batch[i : i + size]) for i in range(0, len(batch), size)]
            errors = []
            for f in futures:
                try:
                    done.extend(f.result())
                except BaseException as e:  # noqa: BLE001 - re-raised below, after the batch settled
                    errors.append(e)
            if errors:
                raise errors[0]
    return DeletionReport(tuple(done), dry_run)
