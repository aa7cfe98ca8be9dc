"""Orphan file cleanup: delete the files of a table that nothing references and nobody is writing.

One job: list the table's own directories, subtract every file any anchor references
(``engine.ops.reachability``: every snapshot, tag and long-lived changelog of every branch; a
consumer's snapshots are anchors themselves), and delete what is left and older than a cutoff.

What is listed (everything else under the table root is left alone, it is not ours):

* ``manifest/``, ``index/``, ``statistics/`` and every data directory
  (``k1=v1/.../bucket-N`` or ``bucket-N``, below ``data-file.path-directory`` when the table sets
  it): every file is a candidate — data and changelog files,
  file indexes, manifests and manifest lists of failed commits, a crashed writer's half files;
* per-branch metadata directories (``schema``, ``snapshot``, ``tag``, ``consumer``,
  ``changelog`` of main and of every ``branch/branch-*``): only the temporary files of an atomic
  write (``.<name>.<32 hex>.tmp``) — the JSON files themselves are anchors or their history;
* the data directories below each of the table's external paths (``data-file.external-paths``,
  as the current schema names them, below ``data-file.path-directory`` when set), as Paimon lists
  them: every file below a ``bucket-N`` directory there is a candidate (at any depth: the
  ``entropy-inject`` strategy puts files in hash directories), nothing else under the root;
* the Iceberg metadata directory (``metadata/``) of a table with ``metadata.iceberg.storage =
  table-location``: every file a published ``v<N>.metadata.json`` does not need (``engine.iceberg``
  lists those it does: the versions, the version hint, their manifest lists and manifests);
* ``.dyntable/`` of the table and of every branch: the abort markers of failed Spark jobs
  (``aborted-jobs/``) and temporary files (e.g. of an interrupted retention-mark publish).
  Maintenance-log records and anything else there are dyntable's own records, never orphans.

Safety (docs/design/architecture.md §7): the cutoff defaults to now − 1 day; a cutoff closer to now than
:data:`MIN_AGE_MS` (a commit may hold its files unreferenced that long) is refused with
:class:`OrphanCutoffTooRecentError` unless ``force``; a cutoff in the future is always refused.
A file whose modification time is unknown is never deleted. Reachability fails closed: an
unreadable snapshot, tag, branch or manifest raises ``UnsafeToDeleteError`` naming the file and
nothing is deleted. A branch whose snapshot history has a gap, or whose LATEST names a
missing snapshot, raises ``HistoryGapError`` (the files only that snapshot used would look
orphaned); a file removed meanwhile by a concurrent expiration or deletion re-runs the
reachability (bounded), see ``engine.ops.reachability``. Listing happens before reachability, so
a commit that lands in between is seen; its new files are younger than the cutoff anyway.

Partition and bucket directories left empty (by this run or earlier deletions) are removed (but
not the done partitions of ``partition.mark-done-action = done-partition``); a
writer that creates a file in such a directory at that very moment can lose the race (the same
window Paimon has), which is why only directories whose listed files were all collectable go.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from engine.errors import DyntableError, InvalidArgumentError, UnsupportedTableError
from engine.features import check_readable
from engine.iceberg import IcebergLayout, live_metadata_files
from engine.io import FileIO
from engine.io.fileio import FileStatus
from engine.meta.external_paths import ExternalPaths
from engine.meta.paths import TablePaths, join, resolve_external_path
from engine.meta.schema_store import SchemaStore
from engine.ops.reachability import FileKindRef, UnsafeToDeleteError, reachable_files
from engine.schema import TableSchema
from engine.store import FileStore
from engine.time_bound import time_bound_millis

DEFAULT_AGE_MS = 86_400_000
MIN_AGE_MS = 3_600_000
DEFAULT_PARALLELISM = 8

#: Directories of the table root whose every file is a candidate.
_DATA_ROOT_DIRS = ("manifest", "index", "statistics")
#: Per-branch metadata directories: only temporary files in them are candidates.
_METADATA_DIRS = ("schema", "snapshot", "tag", "consumer", "changelog")
_PRIVATE_DIR = ".dyntable"
_ABORTED_JOBS = "aborted-jobs"
#: ``engine.io.localfs.write_temp``'s names: ``.<final name>.<uuid4 hex>.tmp``.
#: ``engine.ops.partition_done``'s done partitions (``dt=20240713.done``): empty on purpose, kept.
DONE_PARTITION_SUFFIX = ".done"
_TEMP_FILE = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")

T = TypeVar("T")
R = TypeVar("R")


class OrphanCutoffTooRecentError(InvalidArgumentError):
    """The orphan cutoff is too close to now (or in the future): files of running commits could go.

    Use a cutoff at least one hour in the past, or pass ``force=True`` if no writer is running.
    """


@dataclass(frozen=True)
class OrphanFilesResult:
    """What a cleanup deleted (or, with ``dry_run``, would delete).

    ``files``: (path, bytes) of every orphan older than the cutoff; ``kept_recent``: unreferenced
    files left because they are newer than the cutoff (or of unknown age); ``removed_dirs``: empty
    partition/bucket directories removed.
    """

    files: tuple[tuple[str, int], ...]
    older_than_ms: int
    dry_run: bool = False
    kept_recent: int = 0
    removed_dirs: tuple[str, ...] = ()
    listed: int = 0
    referenced: int = 0
    tables: tuple[str, ...] = field(default=())

    @property
    def count(self) -> int:
        return len(self.files)

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)

    def paths(self) -> list[str]:
        return [p for p, _ in self.files]


def cutoff_millis(older_than: object = None, *, force: bool = False, now_ms: int | None = None) -> int:
    """The cutoff in epoch ms from ``older_than`` (None: now − 1 day; otherwise any form of
    ``engine.time_bound``); refuses one too close to now unless ``force``."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if older_than is None:
        cutoff = now - DEFAULT_AGE_MS
    else:
        cutoff = time_bound_millis(older_than, "older_than", now_ms=now)
    if cutoff > now:
        raise OrphanCutoffTooRecentError(
            f"older_than {_fmt(cutoff)} is in the future: files being written now would be deleted; "
            "give a time in the past (default: one day ago)"
        )
    if cutoff > now - MIN_AGE_MS and not force:
        raise OrphanCutoffTooRecentError(
            f"older_than {_fmt(cutoff)} is less than one hour ago: a running commit may still hold files "
            "nothing references yet; use an older time, or force => true if no writer is running"
        )
    return cutoff


def _fmt(ms: int) -> str:
    """``ms`` as local time; outside what a datetime holds (year 1..9999), the raw epoch millis."""
    try:
        return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return f"{ms} (epoch millis)"


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _pmap(pool: ThreadPoolExecutor | None, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    if pool is None or len(items) < 2:
        return [fn(x) for x in items]
    return list(pool.map(fn, items))


@dataclass
class _Listing:
    """Candidate files (with the kind of directory they were found in) and the data directories."""

    candidates: list[tuple[FileStatus, FileKindRef | None]] = field(default_factory=list)
    # data directory (partition or bucket) -> its parent data directory (None at the root)
    data_dirs: dict[str, str | None] = field(default_factory=dict)
    files_in: dict[str, int] = field(default_factory=dict)  # data directory -> files listed in it


def list_candidates(io: FileIO, root: str, pool: ThreadPoolExecutor | None = None) -> _Listing:
    """Every file of ``root`` that orphan cleanup may consider (see the module docstring)."""
    out = _Listing()
    flat: list[tuple[str, FileKindRef | None]] = []  # directories whose every file is a candidate
    meta: list[str] = []  # directories where only temporary files are candidates
    partitions: list[str] = []
    privates: list[str] = []  # the table's and each branch's ``.dyntable``
    top = io.list_dir(root)
    schema = _schema(io, root)
    data_dir = _data_dir(schema)
    if data_dir is not None:  # data-file.path-directory: the partition/bucket directories live below it
        top = top + [c for c in io.list_dir(join(root, data_dir)) if c.is_dir and _is_data_dir(_name(c.path))]
    deep: list[str] = []  # bucket directories below external paths: listed recursively
    externals = _external_roots(root, schema)
    external_prefixes = tuple(e + "/" for e in externals)
    for ext in externals:
        ext_top = io.list_dir(join(ext, data_dir) if data_dir else ext)
        for s in ext_top:
            name = _name(s.path)
            if s.is_dir and name.startswith("bucket-"):
                deep.append(s.path)
                out.data_dirs[s.path] = None
            elif s.is_dir and "=" in name:
                partitions.append(s.path)
                out.data_dirs[s.path] = None
    for s in top:
        name = _name(s.path)
        if not s.is_dir:
            continue
        if name in _DATA_ROOT_DIRS:
            flat.append((s.path, None))
        elif name.startswith("bucket-"):
            flat.append((s.path, FileKindRef.DATA))
            out.data_dirs[s.path] = None
        elif "=" in name:
            partitions.append(s.path)
            out.data_dirs[s.path] = None
        elif name in _METADATA_DIRS:
            meta.append(s.path)
        elif name == "branch":
            for b in io.list_dir(s.path):
                if b.is_dir and _name(b.path).startswith("branch-"):
                    meta.extend(join(b.path, d) for d in _METADATA_DIRS)
                    privates.append(join(b.path, _PRIVATE_DIR))  # where a branch's retention mark lives
        elif name == _PRIVATE_DIR:
            privates.append(s.path)
    # Descend partition directories level by level, each level listed in parallel.
    while partitions:
        level = _pmap(pool, io.list_dir, partitions)
        below: list[str] = []
        for parent, children in zip(partitions, level, strict=True):
            for c in children:
                cname = _name(c.path)
                if not c.is_dir:
                    continue
                if cname.startswith("bucket-"):
                    if c.path.startswith(external_prefixes):
                        deep.append(c.path)
                    else:
                        flat.append((c.path, FileKindRef.DATA))
                    out.data_dirs[c.path] = parent
                elif "=" in cname:
                    below.append(c.path)
                    out.data_dirs[c.path] = parent
        partitions = below
    dirs = [d for d, _ in flat] + meta
    listed = _pmap(pool, io.list_dir, dirs)
    for (d, kind), statuses in zip(flat, listed[: len(flat)], strict=True):
        files = [s for s in statuses if not s.is_dir]
        if d in out.data_dirs:
            out.files_in[d] = len(files)
        out.candidates.extend((s, kind) for s in files)
    for statuses in listed[len(flat) :]:
        out.candidates.extend((s, None) for s in statuses if not s.is_dir and _TEMP_FILE.match(_name(s.path)))
    for d, statuses in zip(deep, _pmap(pool, io.list_files_recursive, deep), strict=True):
        out.files_in[d] = len(statuses)
        out.candidates.extend((s, FileKindRef.DATA) for s in statuses)
    for private in privates:
        for s in io.list_files_recursive(private):  # [] when absent
            rel = s.path[len(private) :].lstrip("/")
            if rel.startswith(_ABORTED_JOBS + "/") or _TEMP_FILE.match(_name(s.path)):
                out.candidates.append((s, None))
    return out


def _is_data_dir(name: str) -> bool:
    return name.startswith("bucket-") or "=" in name


def _schema(io: FileIO, root: str) -> TableSchema | None:
    """Main's latest schema (where the data directories are; fails closed)."""
    try:
        return SchemaStore(io, TablePaths(root)).latest()
    except (DyntableError, OSError) as e:
        raise UnsafeToDeleteError(
            f"the schema of {root} cannot be read ({e}); nothing was deleted", root) from e


def _data_dir(schema: TableSchema | None) -> str | None:
    """The table's ``data-file.path-directory`` (immutable, so main's latest schema says it)."""
    from engine.options import DATA_FILE_PATH_DIRECTORY, CoreOptions

    if schema is None:
        return None
    data_dir = CoreOptions(schema.options).get(DATA_FILE_PATH_DIRECTORY)
    return data_dir.strip("/") if data_dir else None


def _external_roots(root: str, schema: TableSchema | None) -> list[str]:
    """The table's external data roots (``data-file.external-paths``) in the table's path style;
    none when the strategy is ``none`` (nothing is written there). A root of another file system
    than the table's is refused by the resolution, before anything is deleted."""
    if schema is None:
        return []
    external = ExternalPaths.of(schema.options)
    if external is None:
        return []
    return [resolve_external_path(root, r).rstrip("/") for r in external.roots]


def _check_path_style(listing: _Listing, referenced: set[str], root: str) -> None:
    """Refuse when the listing and the metadata spell paths differently: nothing would match and
    every live file would look orphaned. Every existing snapshot's manifest list must be listed."""
    manifest_dir = join(root, "manifest") + "/"
    listed = {s.path for s, _ in listing.candidates if s.path.startswith(manifest_dir)}
    wanted = {p for p in referenced if p.startswith(manifest_dir)}
    if wanted and listed and not (wanted & listed):
        raise UnsafeToDeleteError(
            f"none of the {len(wanted)} referenced manifest files of {root} was found by listing "
            f"{manifest_dir} "
            "(the paths are spelled differently?); nothing was deleted",
            manifest_dir,
        )


def remove_orphan_files(
    io: FileIO,
    root: str,
    *,
    older_than: object = None,
    dry_run: bool = False,
    force: bool = False,
    parallelism: int | None = None,
    now_ms: int | None = None,
) -> OrphanFilesResult:
    """Delete the unreferenced files of the table at ``root`` older than the cutoff.

    Args:
        io: The table's FileIO.
        root: The table root (all branches are covered).
        older_than: See :func:`cutoff_millis` (default: one day ago).
        dry_run: Only report what would be deleted.
        force: Accept a cutoff less than one hour ago.
        parallelism: Threads for listing and deleting (default 8).

    Raises:
        OrphanCutoffTooRecentError: The cutoff is too recent (without ``force``) or in the future.
        UnsafeToDeleteError: An anchor or manifest cannot be read; nothing was deleted.
        StorageError: A listing failed (nothing was deleted) or a delete failed (some were).
    """
    root = root.rstrip("/")
    # A table with a feature dyntable cannot read may reference files it cannot see: refused.
    try:
        schema = SchemaStore(io, TablePaths(root)).latest()
    except UnsupportedTableError:
        raise  # a column type newer than dyntable (engine.types.NEWER_TYPES)
    except (DyntableError, OSError):
        schema = None  # unreadable: _data_dir (below) refuses, naming the file
    if schema is not None:
        check_readable(schema, root, "remove orphan files of")
    cutoff = cutoff_millis(older_than, force=force, now_ms=now_ms)
    threads = max(1, parallelism or DEFAULT_PARALLELISM)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="orphan-files") as pool:
        listing = list_candidates(io, root, pool)
        iceberg = _iceberg_store(io, root, schema)
        if iceberg is not None:
            listing.candidates.extend(_iceberg_candidates(iceberg))
        reach = reachable_files(io, root, lean=True)  # only the union of paths is needed
        referenced = set(reach.files)
        if iceberg is not None:  # read after the listing: a version published meanwhile is seen
            referenced |= live_metadata_files(iceberg)
        _check_path_style(listing, referenced, root)
        doomed: list[tuple[FileStatus, FileKindRef | None]] = []
        young = 0
        young_in: set[str] = set()
        for status, kind in listing.candidates:
            if status.path in referenced:
                continue
            mtime = status.modification_time_ms
            if mtime is None or mtime >= cutoff:
                young += 1
                young_in.add(status.path.rsplit("/", 1)[0])
                continue
            doomed.append((status, kind))
        # Data first, metadata that could describe it last (a crash leaves only orphans anyway).
        doomed.sort(key=lambda item: (_rank(item[0].path, root), item[0].path))
        files = tuple((s.path, s.size) for s, _ in doomed)
        removed: tuple[str, ...] = ()
        if not dry_run:
            for group in _groups(doomed, root):
                _pmap(pool, io.delete, group)
            removed = _remove_empty_dirs(io, listing, {p.rsplit("/", 1)[0] for p, _ in files}, young_in)
    return OrphanFilesResult(files, cutoff, dry_run, young, removed, len(listing.candidates), len(referenced))


def _iceberg_store(io: FileIO, root: str, schema: TableSchema | None) -> FileStore | None:
    """The table's main branch when it keeps Iceberg metadata under its root (``table-location``)."""
    if schema is None:
        return None
    store = FileStore(io, TablePaths(root), schema)
    layout = IcebergLayout.of(store)
    if layout is None or not layout.metadata_dir.startswith(root + "/"):
        return None  # none, or a hadoop-catalog directory outside the table: not ours to list
    return store


def _iceberg_candidates(store: FileStore) -> list[tuple[FileStatus, FileKindRef | None]]:
    """Every file of the Iceberg metadata directory: the versions, lists and manifests no
    published ``v<N>.metadata.json`` names (a failed or lost Iceberg step) are orphans."""
    layout = IcebergLayout.of(store)
    assert layout is not None
    return [(s, None) for s in store.io.list_dir(layout.metadata_dir) if not s.is_dir]


def _rank(path: str, root: str) -> int:
    if not path.startswith(root + "/"):
        return 0  # a data file at an external path
    rel = path[len(root) + 1 :]
    if rel.startswith("manifest/"):
        name = _name(rel)
        return 2 if name.startswith("manifest-list-") else 1
    if rel.startswith(("index/", "statistics/")):
        return 1
    if "/" in rel and rel.split("/", 1)[0] in (*_METADATA_DIRS, "branch", _PRIVATE_DIR):
        return 3
    return 0


def _groups(doomed: Iterable[tuple[FileStatus, FileKindRef | None]], root: str) -> list[list[str]]:
    out: dict[int, list[str]] = {}
    for s, _ in doomed:
        out.setdefault(_rank(s.path, root), []).append(s.path)
    return [out[k] for k in sorted(out)]


def _remove_empty_dirs(io: FileIO, listing: _Listing, emptied: set[str], busy: set[str]) -> tuple[str, ...]:
    """Remove data directories now empty, deepest first; a parent goes only once its children went.

    ``busy``: directories holding a file too young to delete (a writer may be at work there).
    """
    children: dict[str | None, list[str]] = {}
    for d, parent in listing.data_dirs.items():
        children.setdefault(parent, []).append(d)
    removed: list[str] = []
    gone: set[str] = set()
    for d in sorted(listing.data_dirs, key=lambda x: -x.count("/")):
        if d in busy or any(c not in gone for c in children.get(d, ())):
            continue
        if _name(d).endswith(DONE_PARTITION_SUFFIX):
            continue  # a done partition (partition.mark-done-action = done-partition) is empty by design
        if d not in emptied and listing.files_in.get(d, 0) > 0:
            continue
        try:
            if io.list_dir(d):
                continue
            io.delete_dir(d, recursive=False)
        except OSError:
            continue  # a writer just created something in it: keep the directory
        gone.add(d)
        removed.append(d)
    return tuple(removed)


def remove_table_orphan_files(
    io: FileIO,
    root: str,
    *,
    older_than: object = None,
    dry_run: bool = False,
    force: bool = False,
    parallelism: int | None = None,
    branch: str = "main",
    trigger: str = "called",
) -> OrphanFilesResult:
    """:func:`remove_orphan_files` recorded in the table's maintenance log (also when it fails)."""
    from engine.ops.maintenance_log import recorded_run

    with recorded_run(
        io, root, "remove_orphan_files", trigger=trigger, branch=branch, dry_run=dry_run
    ) as record:
        result = remove_orphan_files(
            io, root, older_than=older_than, dry_run=dry_run, force=force, parallelism=parallelism
        )
        record.deleted_files = result.count
        record.deleted_bytes = result.bytes
        record.details = {
            "older_than_ms": result.older_than_ms,
            "listed": result.listed,
            "referenced": result.referenced,
            "kept_recent": result.kept_recent,
            "removed_dirs": len(result.removed_dirs),
        }
    return result
