"""Iceberg v3 deletion vectors from a table's Paimon ones (``metadata.iceberg.format-version = 3``).

One job: give each Iceberg snapshot the delete manifests that make Iceberg readers skip exactly
the rows Paimon's deletion vectors delete.

* Paimon points its Iceberg delete entries into its own DV index files (a ``bitmap64`` record is
  byte for byte an Iceberg ``deletion-vector-v1`` blob) and therefore publishes DVs only for
  tables with ``deletion-vectors.bitmap64``. Those index files are not Puffin files: Iceberg's
  Java reader reads only the blob's range, but readers that open the file as Puffin (pyiceberg)
  fail. dyntable writes a Puffin *mirror* of each DV index file instead, in the Iceberg metadata
  directory (``<index file name>.<writer token>.puffin``): the same DVs as ``deletion-vector-v1``
  blobs (32-bit DVs converted to the 64-bit form), with the spec's footer, so every Iceberg
  reader reads them, for either DV kind.
* A mirror is written once, when its index file first appears, and named by the writer that wrote
  it: a publisher that loses the race for a version deletes only its own mirrors.
* A snapshot whose DV index files are those of the previous Iceberg snapshot reuses its delete
  manifests; otherwise the delete manifests are rebuilt from the snapshot's index manifest, as
  Paimon does, reusing the mirrors of index files already mirrored.
* Each delete entry has sequence number = its snapshot, and names its data file by the bucket
  path Paimon uses; a DV applies to the data files of sequence number up to its own, which holds
  because a DV is written no earlier than its data file.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from engine.iceberg.avro import MANIFEST_CONTENT_DATA, MANIFEST_CONTENT_DELETES, read_container
from engine.iceberg.layout import IcebergLayout
from engine.meta.deletion_vectors import dv_metas, read_index_file
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexManifestEntry, IndexStore
from engine.meta.paths import join
from engine.meta.snapshot import Snapshot
from engine.store import FileStore

__all__ = ["delete_manifests", "live_mirrors", "unused_mirrors", "write_puffin"]



class VersionWriter(Protocol):
    """What the delete manifests need of the Iceberg version being written
    (:class:`engine.iceberg.commit.VersionWriter`, which imports this module)."""

    store: FileStore
    layout: IcebergLayout
    written: list[str]

    def partition_values(self, partition: bytes) -> tuple[object, ...]: ...

    def avro_partition(self, values: tuple[object, ...]) -> dict[str, Any]: ...

    def read_manifest(self, path: str) -> list[dict[str, Any]]: ...

    def write_manifests(
        self, entries: Sequence[dict[str, Any]], snapshot_id: int, content: int = MANIFEST_CONTENT_DATA
    ) -> list[dict[str, Any]]: ...


_PUFFIN_MAGIC = b"PFA1"
#: Iceberg's ``_pos`` metadata column: the field a deletion vector is about.
_ROW_POSITION_FIELD_ID = 2147483645
_ADDED = 1


def write_puffin(blobs: Sequence[tuple[str, int, bytes]]) -> tuple[bytes, list[tuple[int, int]]]:
    """A Puffin file of ``deletion-vector-v1`` blobs, one per ``(data file path, cardinality,
    blob bytes)``; and each blob's ``(offset, length)`` in it."""
    out = bytearray(_PUFFIN_MAGIC)
    ranges = []
    footer_blobs = []
    for path, cardinality, blob in blobs:
        ranges.append((len(out), len(blob)))
        footer_blobs.append(
            {
                "type": "deletion-vector-v1",
                "fields": [_ROW_POSITION_FIELD_ID],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": len(out),
                "length": len(blob),
                "properties": {"referenced-data-file": path, "cardinality": str(cardinality)},
            }
        )
        out += blob
    payload = json.dumps({"blobs": footer_blobs}, separators=(",", ":")).encode()
    out += _PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + b"\0\0\0\0" + _PUFFIN_MAGIC
    return bytes(out), ranges


def _added(sid: int) -> dict[str, int]:
    """An entry's status fields: added by snapshot ``sid`` (its sequence number too)."""
    return {"status": _ADDED, "snapshot_id": sid, "sequence_number": sid, "file_sequence_number": sid}


def _index_name(mirror_path: str) -> str:
    return mirror_path.rsplit("/", 1)[-1].split(".", 1)[0]


def _dv_entries(store: FileStore, snapshot: Snapshot) -> list[IndexManifestEntry]:
    index = IndexStore(store.io, store.paths)
    return [
        e for e in index.read_manifest(snapshot.index_manifest) if e.file.index_type == DELETION_VECTORS_INDEX
    ]


def _entries_of(w: VersionWriter, metas: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in metas:
        out.extend(e for e in w.read_manifest(m["manifest_path"]) if e["status"] != 2)
    return out


def delete_manifests(
    w: VersionWriter, snapshot: Snapshot, base: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], bool]:
    """The delete manifests (manifest-list records) of ``snapshot``, from the previous Iceberg
    snapshot's ``base``; and whether they changed."""
    store = w.store
    entries = _dv_entries(store, snapshot)
    names = {e.file.file_name for e in entries}
    previous = _entries_of(w, base)
    mirrored: dict[str, list[dict[str, Any]]] = {}
    for old in previous:
        mirrored.setdefault(_index_name(old["data_file"]["file_path"]), []).append(old)
    if names == set(mirrored):
        return list(base), False
    sid = snapshot.id
    out: list[dict[str, Any]] = []
    index = IndexStore(store.io, store.paths)
    for e in entries:
        known = mirrored.get(e.file.file_name)
        if known is not None:
            out.extend({**k, **_added(sid)} for k in known)
            continue
        out.extend(_mirror(w, index, e, sid))
    return w.write_manifests(out, sid, MANIFEST_CONTENT_DELETES), True


def _mirror(w: VersionWriter, index: IndexStore, entry: IndexManifestEntry, sid: int) -> list[dict[str, Any]]:
    """Write the Puffin mirror of one DV index file; its delete entries."""
    store = w.store
    source = index.file_path(entry.file)
    what = f"deletion-vector index file {source}"
    dvs = read_index_file(store.io.read_bytes(source), dv_metas(entry.file), what=what)
    partition_dir = store.partition_dir(w.partition_values(entry.partition))
    bucket = entry.bucket
    rows = [
        (store.paths.data_file(partition_dir, bucket, name), dv.cardinality, dv.to_bitmap64().serialize())
        for name, dv in dvs.items()
        if not dv.is_empty()
    ]
    if not rows:
        return []
    data, ranges = write_puffin(rows)
    path = join(w.layout.metadata_dir, f"{entry.file.file_name}.{w.layout.token}.puffin")
    store.io.write_new(path, data)
    w.written.append(path)
    values = w.partition_values(entry.partition)
    partition = w.avro_partition(values)
    return [
        {
            **_added(sid),
            "data_file": {
                "content": 1,  # position deletes
                "file_path": path,
                "file_format": "PUFFIN",
                "partition": partition,
                "record_count": cardinality,
                "file_size_in_bytes": len(data),
                "referenced_data_file": data_path,
                "content_offset": offset,
                "content_size_in_bytes": length,
            },
        }
        for (data_path, cardinality, _), (offset, length) in zip(rows, ranges, strict=True)
    ]


def _paths(store: FileStore, metas: Iterable[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for m in metas:
        if m["content"] != MANIFEST_CONTENT_DELETES:
            continue
        try:
            data = store.io.read_bytes(m["manifest_path"])
        except FileNotFoundError:
            continue  # deleted by an earlier run that stopped before publishing
        out.update(e["data_file"]["file_path"] for e in read_container(data, "Iceberg delete manifest")[0])
    return out


def unused_mirrors(
    store: FileStore, doomed: Sequence[dict[str, Any]], following: Sequence[dict[str, Any]]
) -> set[str]:
    """The mirrors named by the delete manifests ``doomed`` (of an expired snapshot) and not by
    ``following`` (the next retained snapshot's list): a mirror is only ever reused forward."""
    gone = _paths(store, doomed)
    return gone - _paths(store, following) if gone else set()


def live_mirrors(store: FileStore, listed: Sequence[dict[str, Any]]) -> set[str]:
    """The mirrors one published snapshot's manifest-list records need (for orphan cleanup)."""
    return _paths(store, listed)
