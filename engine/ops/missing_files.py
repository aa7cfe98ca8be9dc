"""Removing references to data files that no longer exist (Paimon's ``remove_unexisting_files``).

One job: when data files were lost outside the table's control (deleted by hand, a broken copy),
every read of their bucket fails. This finds the live files of the latest snapshot whose file is
missing and, unless ``dry_run``, publishes one snapshot that drops them (their rows are gone
anyway), so the rest of the table reads again. Existence is checked once per file (metadata
only); the change is a single commit, recorded in the maintenance log.

Primary-key tables: dropping a lost file can let an older version of a key reappear (the file
that superseded it is gone); that is the best state the remaining files describe, as in Paimon.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage
from engine.features import check_writable
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import ManifestEntry
from engine.ops.maintenance_log import recorded_run
from engine.store import FileStore


@dataclass(frozen=True)
class MissingFiles:
    """The paths of the referenced files that do not exist, and the snapshot that dropped them."""

    paths: tuple[str, ...]
    snapshot_id: int | None
    dry_run: bool


def _path(store: FileStore, e: ManifestEntry, dirs: dict[bytes, str]) -> str:
    if e.file.external_path:
        return store.paths.external_file(e.file.external_path)  # refuses a path it cannot resolve
    part = dirs.get(e.partition)
    if part is None:
        part = dirs[e.partition] = store.partition_dir(deserialize_row(e.partition, store.partition_types))
    return store.paths.data_file(part, e.bucket, e.file.file_name)


def remove_missing_files(
    store: FileStore, *, dry_run: bool = False, parallelism: int | None = None
) -> MissingFiles:
    """Find (and unless ``dry_run`` drop from the table) the live files that do not exist.

    Fails closed: a table whose newer Paimon features a dyntable commit would not keep is
    refused before anything is checked, and a file whose path cannot be resolved
    (``_EXTERNAL_PATH`` of another file system) raises UnsupportedTableError, dropping nothing.
    """
    check_writable(store.schema, store.paths.root, "remove missing files of")
    with recorded_run(
        store.io, store.paths.root, "remove_unexisting_files", branch=store.branch, dry_run=dry_run
    ) as rec:
        latest = store.snapshots.latest()
        entries = store.live_entries(latest)
        dirs: dict[bytes, str] = {}
        paths = [_path(store, e, dirs) for e in entries]
        with ThreadPoolExecutor(max_workers=max(1, parallelism or 8)) as pool:
            exists = list(pool.map(store.io.exists, paths))
        missing = [(e, p) for e, p, ok in zip(entries, paths, exists, strict=True) if not ok]
        rec.deleted_files = len(missing)
        snapshot_id = None
        if missing and not dry_run:
            by_bucket: dict[tuple[bytes, int, int], list[ManifestEntry]] = defaultdict(list)
            for e, _ in missing:
                by_bucket[(e.partition, e.bucket, e.total_buckets)].append(e)
            messages = [
                CommitMessage(part, bucket, total, compact_before=tuple(e.file for e in group))
                for (part, bucket, total), group in by_bucket.items()
            ]
            result = FileStoreCommit(store).delete_files(messages)
            snapshot_id = result.last_snapshot_id
        rec.details = {"files": [p for _, p in missing][:100], "snapshot_id": snapshot_id}
    return MissingFiles(tuple(p for _, p in missing), snapshot_id, dry_run)
