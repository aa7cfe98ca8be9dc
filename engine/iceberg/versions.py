"""Iceberg metadata files on storage: the versions (``v<N>.metadata.json``) and the version hint
read, written and pruned, the caches of decoded immutable files, and the set of files the
published versions still need (for orphan cleanup). :mod:`engine.iceberg.commit` decides what a
version says; this module keeps it on disk."""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from engine.errors import CorruptMetadataError
from engine.iceberg.avro import read_container
from engine.iceberg.deletes import live_mirrors
from engine.iceberg.layout import IcebergLayout, metadata_version
from engine.store import FileStore


class ManifestCache:
    """Decoded Iceberg files by path (manifests and lists are immutable), a bounded number: the
    next commit that reads, rewrites or merges them finds them decoded."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str) -> Any:
        with self._lock:
            found = self._items.get(path)
            if found is not None:
                self._items.move_to_end(path)
            return found

    def put(self, path: str, entries: Any) -> None:
        with self._lock:
            self._items[path] = entries
            self._items.move_to_end(path)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


MANIFEST_LISTS = ManifestCache(64)
_VERSIONS = ManifestCache(16)  # v<N>.metadata.json this process published, by path
_SNAPSHOT_TEXT = ManifestCache(4096)  # a snapshot's JSON text by (id, manifest list): never changes
_PLACEHOLDER = f'"snapshots-{uuid.uuid4().hex}"'


def read_list(store: FileStore, path: str) -> list[dict[str, Any]]:
    """A manifest list's records (immutable: cached by path like the manifests)."""
    found = MANIFEST_LISTS.get(path)
    if found is None:
        found = read_container(store.io.read_bytes(path), f"Iceberg manifest list {path}")[0]
        MANIFEST_LISTS.put(path, found)
    return found


def to_json(meta: dict[str, Any]) -> str:
    """The metadata as compact JSON, each snapshot encoded once per process: a version lists every
    retained snapshot, and re-encoding them all on every commit made its cost grow with them."""
    texts = []
    for snap in meta["snapshots"]:
        key = f"{snap['snapshot-id']}:{snap['manifest-list']}"
        text = _SNAPSHOT_TEXT.get(key)
        if text is None:
            text = json.dumps(snap, separators=(",", ":"))
            _SNAPSHOT_TEXT.put(key, text)
        texts.append(text)
    head = json.dumps({**meta, "snapshots": _PLACEHOLDER[1:-1]}, separators=(",", ":"))
    return head.replace(_PLACEHOLDER, "[" + ",".join(texts) + "]", 1)


def published(store: FileStore, path: str) -> dict[str, Any] | None:
    """A version to build on: the one this process published at ``path`` (no read, no parse), else
    read. What another process may have changed in place since (``_refresh``: expired snapshots
    dropped, tags) every step recomputes, so the copy kept here is never wrong to start from. The
    copy handed out may be changed: its snapshot list is its own, the snapshots themselves are
    never changed."""
    kept = _VERSIONS.get(path)
    if kept is None:
        return read_metadata(store, path)
    return {**kept, "snapshots": list(kept["snapshots"])}


def keep_published(path: str, meta: dict[str, Any]) -> None:
    _VERSIONS.put(path, {**meta, "snapshots": list(meta["snapshots"])})


def read_metadata(store: FileStore, path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(store.io.read_bytes(path))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_hint(store: FileStore, layout: IcebergLayout) -> int | None:
    try:
        return int(store.io.read_text(layout.version_hint).strip())
    except (FileNotFoundError, ValueError):
        return None


def create_if_absent(store: FileStore, path: str, data: bytes) -> bool:
    """Create ``path`` atomically unless it exists. On local disk: a temporary file moved into place
    by a no-replace rename, without the fsync of ``FileIO.try_create`` (half of this step's cost):
    the metadata is derived from the Paimon snapshot, which is durable, and a version lost to a
    crash is rebuilt by the next commit (as in Paimon, whose local file system does not sync either)."""
    io = store.io
    if not io.is_local:
        return io.try_create(path, data)
    directory, name = path.rsplit("/", 1)
    tmp = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"
    io.write_new(tmp, data)
    moved = False
    try:
        moved = io.rename(tmp, path)
        return moved
    finally:
        if not moved:
            io.delete(tmp)


def delete_quietly(store: FileStore, paths: Iterable[str]) -> None:
    for p in paths:
        try:
            store.io.delete(p)
        except OSError:
            pass  # an orphan for orphan-file cleanup; nothing refers to it


def delete_old_versions(store: FileStore, layout: IcebergLayout, latest: int, hint: int | None) -> None:
    """Paimon's rule: keep ``previous-versions-max`` older ``v<N>.metadata.json`` files."""
    if not layout.delete_after_commit:
        return
    below = latest - layout.previous_versions_max
    if below <= 0:
        return
    if hint is None or hint >= latest:  # no known previous version: look at the directory
        old = [
            s.path
            for s in store.io.list_dir(layout.metadata_dir)
            if (v := metadata_version(s.path.rsplit("/", 1)[-1])) is not None and v < below
        ]
    else:  # versions below hint - max were deleted by earlier runs
        start = max(1, hint - layout.previous_versions_max)
        old = [layout.metadata_file(v) for v in range(start, below)]  # a missing one is no error
    delete_quietly(store, old)


def live_metadata_files(store: FileStore) -> set[str]:
    """Every Iceberg metadata file a published ``v<N>.metadata.json`` still needs (for orphan
    cleanup): the metadata files, the version hint, their manifest lists and manifests, and the
    Puffin mirrors of deletion vectors their delete manifests name."""
    layout = IcebergLayout.of(store)
    if layout is None:
        return set()
    keep: set[str] = set()
    for status in store.io.list_dir(layout.metadata_dir):
        name = status.path.rsplit("/", 1)[-1]
        if name == "version-hint.text":
            keep.add(status.path)
        if metadata_version(name) is None:
            continue
        keep.add(status.path)
        meta = read_metadata(store, status.path)
        if meta is None:  # fail closed: what it names cannot be known, so nothing may be called unused
            raise CorruptMetadataError(
                f"Iceberg metadata {status.path} is unreadable: the files it needs cannot be known; repair "
                "or delete it (CALL sys.rebuild_iceberg_metadata publishes the table's metadata afresh)"
            )
        for s in meta.get("snapshots", []):
            keep.add(s["manifest-list"])
            try:
                listed = read_list(store, s["manifest-list"])
            except FileNotFoundError:
                continue
            keep.update(m["manifest_path"] for m in listed)
            keep.update(live_mirrors(store, listed))
    return keep
