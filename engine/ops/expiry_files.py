"""What snapshot and changelog expiration share: the consumers that hold snapshots back, the
parallel deletion of the files nothing references any more, and the removal of the directories
that deletion empties.

One job: the steps both expirations (``engine.ops.expire_snapshots``,
``engine.ops.expire_changelog``) take in the same way, so neither imports the other for them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from engine.errors import DyntableError
from engine.io import FileIO
from engine.ops.reachability import DeletionReport, FileRef, UnsafeToDeleteError, delete_files
from engine.options import CONSUMER_EXPIRATION_TIME, DELETE_FILE_THREAD_NUM, SNAPSHOT_CLEAN_EMPTY_DIRECTORIES
from engine.store import FileStore


def live_consumers(store: FileStore, now_ms: int) -> dict[str, int]:
    """Consumer id → next snapshot, leaving out consumers idle beyond ``consumer.expiration-time``.

    Raises:
        UnsafeToDeleteError: a consumer file cannot be read (it may protect snapshots).
    """
    io, paths = store.io, store.paths
    try:
        listed = io.list_dir(paths.consumer_dir)
    except (DyntableError, OSError) as e:
        raise UnsafeToDeleteError(
            f"cannot list {paths.consumer_dir} ({e}); nothing was deleted", paths.consumer_dir
        ) from e
    idle_ms = store.options.get(CONSUMER_EXPIRATION_TIME)
    out: dict[str, int] = {}
    from engine.meta.snapshot import Consumer

    for status in listed:
        base = status.path.rsplit("/", 1)[-1]
        if not base.startswith("consumer-") or status.is_dir:
            continue
        if (
            idle_ms is not None
            and status.modification_time_ms is not None
            and status.modification_time_ms < now_ms - idle_ms
        ):
            continue
        try:
            out[base[len("consumer-") :]] = Consumer.from_json(io.read_bytes(status.path)).next_snapshot
        except FileNotFoundError:
            continue
        except (DyntableError, OSError) as e:
            raise UnsafeToDeleteError(
                f"cannot read consumer {status.path} ({e}); it may protect snapshots, so nothing was deleted",
                status.path,
            ) from e
    return out


def thread_count(store: FileStore) -> int:
    n = store.options.get(DELETE_FILE_THREAD_NUM)
    return int(n) if n is not None else (os.cpu_count() or 1)


def parallel_delete(
    io: FileIO, doomed: dict[str, FileRef], threads: int, *, dry_run: bool = False
) -> DeletionReport:
    """:func:`engine.ops.reachability.delete_files` on ``threads`` threads (``delete-file.thread-num``)."""
    return delete_files(io, doomed, dry_run=dry_run, threads=threads)


def cleans_empty_directories(store: FileStore) -> bool:
    """Empty directories are removed unless the table sets ``snapshot.clean-empty-directories``
    to false explicitly (Paimon's default is false; the issue asks for their removal, so only an
    explicit setting opts out)."""
    if SNAPSHOT_CLEAN_EMPTY_DIRECTORIES.key not in store.options:
        return True
    return bool(store.options.get(SNAPSHOT_CLEAN_EMPTY_DIRECTORIES))


def remove_empty_dirs(io: FileIO, root: str, deleted: Iterable[str]) -> list[str]:
    """Remove the bucket and partition directories of ``deleted`` data files that are now empty
    (deepest first, never the table root or a non-empty directory)."""
    root = root.rstrip("/")
    dirs: set[str] = set()
    for path in deleted:
        parent = path.rsplit("/", 1)[0]
        while parent.startswith(root + "/") and parent != root:
            dirs.add(parent)
            parent = parent.rsplit("/", 1)[0]
    removed = []
    for d in sorted(dirs, key=lambda p: (-p.count("/"), p)):
        base = d.rsplit("/", 1)[-1]
        if base in (
            "manifest",
            "snapshot",
            "tag",
            "changelog",
            "consumer",
            "schema",
            "branch",
            "index",
            "statistics",
        ) or base.startswith("."):
            continue
        try:
            if io.list_dir(d):
                continue
            io.delete_dir(d, recursive=False)
            removed.append(d)
        except OSError:
            continue  # not empty after all (a writer got there first): leave it
    return removed
