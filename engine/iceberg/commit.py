"""Publishing Iceberg metadata for a table's Paimon snapshots: Paimon's Iceberg commit callback.

One job: bring ``v<latest>.metadata.json`` up to date with the table's latest snapshot
(:func:`sync`), incrementally from the previous Iceberg metadata, or afresh when there is none.

What Iceberg readers see (Paimon's rules):

* Append tables: every data file of every snapshot; each Paimon snapshot still retained is an
  Iceberg snapshot with the same id (its sequence number too), so Iceberg time travel to it
  shows that snapshot's rows.
* Primary-key tables: only the files of the LSM's top level (``num-levels`` − 1), which hold
  each key once, merged: Iceberg sees the table as of its last full compaction, never a key
  twice.
* Incremental, as Paimon: a snapshot's delta entries are turned into changes of the previous
  Iceberg manifests. An append-only delta adds one manifest and reuses every previous one; a
  delta that deletes files rewrites only the manifests holding them (their entries become
  EXISTING or DELETED); small manifests are merged once ``metadata.iceberg.compaction.*`` says
  so. The metadata cost of a commit follows its changes and the live files, not the history.
* Retention: the Iceberg snapshots are the Paimon snapshots that still exist; manifest lists
  and manifests only expired snapshots used are deleted, and old ``v<N>.metadata.json`` files
  as ``metadata.iceberg.delete-after-commit.enabled`` / ``previous-versions-max`` say.
* Tags pointing at a retained snapshot are Iceberg tag refs.
* Catch-up: each Paimon snapshot between the last published version and the latest is applied
  in turn; without a usable previous version (none, or its snapshots expired) the metadata is
  built afresh from the latest snapshot's live files. A failed step (the post-commit hook logs
  it) is therefore repaired by the next one. ``v<N>.metadata.json`` is created only if absent:
  of two concurrent publishers one wins, the other deletes its own manifests.
* Deletion vectors: with ``metadata.iceberg.format-version = 3`` a key table publishes every file
  above level 0 (what a DV reader reads) and each DV as an Iceberg v3 deletion vector
  (``engine.iceberg.deletes``); with version 2 a table with ``deletion-vectors.enabled`` is refused
  (UnsupportedTableError), as are column types Iceberg cannot read from dyntable's files
  (``engine.iceberg.schema``) and collection columns of files without member field ids
  (``engine.iceberg.nested``: only each snapshot's added files are checked).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import NotFoundError, UnsupportedTableError
from engine.files.reader import data_file_path
from engine.iceberg.avro import (
    MANIFEST_CONTENT_DATA,
    MANIFEST_CONTENT_DELETES,
    manifest_entry_schema,
    manifest_list_schema,
    read_container,
    write_container,
)
from engine.iceberg.deletes import delete_manifests, unused_mirrors
from engine.iceberg.layout import IcebergLayout
from engine.iceberg.nested import MissingNestedIds, check_nested_ids
from engine.iceberg.schema import (
    FIRST_PARTITION_FIELD_ID,
    from_avro_value,
    iceberg_schema,
    partition_avro_fields,
    partition_avro_value,
    partition_spec,
    partition_summaries,
    single_value_bytes,
)
from engine.iceberg.versions import (
    MANIFEST_LISTS,
    ManifestCache,
    create_if_absent,
    delete_old_versions,
    delete_quietly,
    keep_published,
    published,
    read_hint,
    read_list,
    to_json,
)
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, FileKind, ManifestEntry
from engine.meta.refs import TagStore
from engine.meta.snapshot import CommitKind, Snapshot
from engine.scan.file_stats import decode_stats
from engine.store import FileStore
from engine.types import TypeRoot

__all__ = ["sync"]

ADDED, EXISTING, DELETED = 1, 0, 2
_ENTRIES_PER_MANIFEST = 100_000
#: Types whose file statistics are published as Iceberg bounds (see ``VersionWriter._stats``).
_BOUNDED = frozenset(
    {
        TypeRoot.BOOLEAN,
        TypeRoot.TINYINT,
        TypeRoot.SMALLINT,
        TypeRoot.INT,
        TypeRoot.BIGINT,
        TypeRoot.DATE,
        TypeRoot.DECIMAL,
        TypeRoot.TIMESTAMP,
        TypeRoot.TIMESTAMP_LTZ,
    }
)
_MANIFEST_LIST_SCHEMA = manifest_list_schema()


_MANIFESTS = ManifestCache(256)


@dataclass
class _Changes:
    """One snapshot's changes as Iceberg sees them: file path → (partition bytes, file)."""

    added: dict[str, tuple[bytes, DataFileMeta]] = field(default_factory=dict)
    removed: dict[str, tuple[bytes, DataFileMeta]] = field(default_factory=dict)
    add_only: bool = True


class VersionWriter:
    """Everything one sync run writes, so a lost race can delete exactly its own files."""

    def __init__(self, store: FileStore, layout: IcebergLayout) -> None:
        self.store = store
        self.layout = layout
        self.schema = store.schema
        self.partition_types = store.partition_types
        self.entry_schema = manifest_entry_schema(partition_avro_fields(store.schema))
        self.spec = partition_spec(store.schema)
        self.written: list[str] = []
        self._partitions: dict[bytes, tuple[object, ...]] = {}
        self._entries: dict[str, list[dict[str, Any]]] = {}
        self._top_level = store.options.num_levels - 1
        #: Iceberg v3 deletion vectors mirror the table's (engine.iceberg.deletes).
        self.deletion_vectors = layout.format_version >= 3 and store.options.deletion_vectors_enabled
        self._current = {f.id: f.type for f in store.schema.fields}

    # -- files
    def partition_values(self, partition: bytes) -> tuple[object, ...]:
        values = self._partitions.get(partition)
        if values is None:
            values = deserialize_row(partition, self.partition_types) if self.partition_types else ()
            self._partitions[partition] = values
        return values

    def path_of(self, partition: bytes, bucket: int, file: DataFileMeta) -> str:
        return data_file_path(
            self.store, self.store.partition_dir(self.partition_values(partition)), bucket, file
        )

    def published(self, file: DataFileMeta) -> bool:
        """Paimon's rule: every file of an append table; of a key table, the top-level files, or
        with deletion vectors published, every file above level 0 (what a DV reader reads)."""
        if not self.store.has_primary_key:
            return True
        return file.level > 0 if self.deletion_vectors else file.level == self._top_level

    def _stats(
        self, file: DataFileMeta
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """The file's null counts, lower and upper bounds, by Iceberg field id (Paimon's value stats).

        Bounds only for types whose Paimon statistics are exact and whose Iceberg single-value form
        needs no care (integers, booleans, dates, decimals, timestamps), and only when the column
        still has the file's type: strings are truncated by ``metadata.stats-mode`` (a truncated
        maximum is no upper bound), floats have NaN rules, and a promoted type changes the bytes.
        Anything unknown is left out: a reader then only prunes less."""
        try:
            file_schema = self.store.schema_by_id(file.schema_id)
        except NotFoundError:
            return [], [], []
        cols = file.value_stats_cols
        if cols is None:
            cols = file.write_cols if file.write_cols is not None else file_schema.field_names
        fields = [file_schema.field(c) for c in cols if c in file_schema.field_names]
        nulls, lower, upper = [], [], []
        for field_id, st in decode_stats(file.value_stats, fields).items():
            if st.null_count is not None:
                nulls.append({"key": field_id, "value": st.null_count})
            now = self._current.get(field_id)
            if now is None or now.root not in _BOUNDED or st.min is None or st.max is None:
                continue
            then = file_schema.field_by_id(field_id).type
            if (then.root, then.precision, then.scale) != (now.root, now.precision, now.scale):
                continue
            lower.append({"key": field_id, "value": single_value_bytes(st.min, now)})
            upper.append({"key": field_id, "value": single_value_bytes(st.max, now)})
        return nulls, lower, upper

    def avro_partition(self, values: tuple[object, ...]) -> dict[str, Any]:
        return {
            k: partition_avro_value(v, t)
            for k, v, t in zip(self.schema.partition_keys, values, self.partition_types, strict=True)
        }

    def data_file(self, path: str, partition: bytes, file: DataFileMeta) -> dict[str, Any]:
        nulls, lower, upper = self._stats(file)
        return {
            "content": 0,
            "file_path": path,
            "file_format": file.file_name.rsplit(".", 1)[-1].upper(),
            "partition": self.avro_partition(self.partition_values(partition)),
            "record_count": file.row_count,
            "file_size_in_bytes": file.file_size,
            "null_value_counts": nulls or None,
            "lower_bounds": lower or None,
            "upper_bounds": upper or None,
        }

    # -- manifests
    def read_manifest(self, path: str) -> list[dict[str, Any]]:
        cached = self._entries.get(path) or _MANIFESTS.get(path)
        if cached is None:
            cached = read_container(self.store.io.read_bytes(path), f"Iceberg manifest {path}")[0]
            _MANIFESTS.put(path, cached)
        self._entries[path] = cached
        return cached

    def write_manifests(
        self, entries: Sequence[dict[str, Any]], snapshot_id: int, content: int = MANIFEST_CONTENT_DATA
    ) -> list[dict[str, Any]]:
        """Manifests of ``entries`` (rolled every 100K entries) and their manifest-list records;
        ``content``: data or delete files."""
        metas = []
        for start in range(0, len(entries), _ENTRIES_PER_MANIFEST):
            chunk = entries[start : start + _ENTRIES_PER_MANIFEST]
            path = self.layout.new_manifest()
            data = write_container(
                self.entry_schema,
                chunk,
                self.layout.codec,
                {
                    "schema": json.dumps(iceberg_schema(self.schema, self.layout.format_version)),
                    "schema-id": str(self.schema.id),
                    "partition-spec": json.dumps(self.spec["fields"]),
                    "partition-spec-id": "0",
                    "format-version": str(self.layout.format_version),
                    "content": "data" if content == MANIFEST_CONTENT_DATA else "deletes",
                },
            )
            self.store.io.write_new(path, data)
            self.written.append(path)
            self._entries[path] = list(chunk)
            _MANIFESTS.put(path, self._entries[path])
            metas.append(self._list_record(path, len(data), chunk, snapshot_id, content))
        return metas

    def _list_record(
        self, path: str, length: int, entries: Sequence[dict[str, Any]], snapshot_id: int, content: int
    ) -> dict[str, Any]:
        counts = {ADDED: [0, 0], EXISTING: [0, 0], DELETED: [0, 0]}
        for e in entries:
            c = counts[e["status"]]
            c[0] += 1
            c[1] += e["data_file"]["record_count"]
        values = (
            [tuple(e["data_file"]["partition"].values()) for e in entries] if self.partition_types else []
        )
        return {
            "manifest_path": path,
            "manifest_length": length,
            "partition_spec_id": 0,
            "content": content,
            "sequence_number": snapshot_id,
            "min_sequence_number": min((e["sequence_number"] for e in entries), default=snapshot_id),
            "added_snapshot_id": snapshot_id,
            "added_files_count": counts[ADDED][0],
            "existing_files_count": counts[EXISTING][0],
            "deleted_files_count": counts[DELETED][0],
            "added_rows_count": counts[ADDED][1],
            "existing_rows_count": counts[EXISTING][1],
            "deleted_rows_count": counts[DELETED][1],
            "partitions": self._summaries(values) if self.partition_types else None,
        }

    def _summaries(self, avro_values: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
        # Distinct partition tuples only: the summary is per partition value, not per file.
        distinct = list(dict.fromkeys(avro_values))
        decoded = [self._decode_avro(v) for v in distinct]
        return partition_summaries(decoded, self.partition_types)

    def _decode_avro(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """Partition values back from their Avro form to the decoded Paimon form (for bounds)."""
        return tuple(from_avro_value(v, t) for v, t in zip(values, self.partition_types, strict=True))

    def write_list(self, metas: Sequence[dict[str, Any]], snapshot_id: int, parent: int | None) -> str:
        path = self.layout.new_manifest_list()
        meta = {
            "snapshot-id": str(snapshot_id),
            "sequence-number": str(snapshot_id),
            "format-version": str(self.layout.format_version),
        }
        if parent is not None:
            meta["parent-snapshot-id"] = str(parent)
        self.store.io.write_new(path, write_container(_MANIFEST_LIST_SCHEMA, metas, self.layout.codec, meta))
        self.written.append(path)
        MANIFEST_LISTS.put(path, list(metas))
        return path


def _changes(w: VersionWriter, entries: Iterable[ManifestEntry]) -> _Changes:
    """A snapshot's delta as Paimon's callback collects it: by path, in order. Only files Iceberg
    sees count: a key table's compaction deleting level-0 files (never published) leaves the
    previous manifests untouched, and a file moved up to the top level is an addition."""
    ch = _Changes()
    for e in entries:
        if not w.published(e.file):
            continue
        path = w.path_of(e.partition, e.bucket, e.file)
        if e.kind is FileKind.ADD:
            ch.removed.pop(path, None)
            ch.added[path] = (e.partition, e.file)
        else:
            ch.add_only = False
            if path in ch.added:  # the same file at another level (an upgrade): it stays live
                continue
            ch.removed[path] = (e.partition, e.file)
    return ch


def _delta_entries(store: FileStore, snapshot: Snapshot) -> list[ManifestEntry]:
    out: list[ManifestEntry] = []
    for meta in store.manifests.read_list(snapshot.delta_manifest_list):
        out.extend(store.manifests.read_entries(meta.file_name))
    return out


def _added_entries(
    w: VersionWriter, added: dict[str, tuple[bytes, DataFileMeta]], sid: int
) -> list[dict[str, Any]]:
    return [
        {
            "status": ADDED,
            "snapshot_id": sid,
            "sequence_number": sid,
            "file_sequence_number": sid,
            "data_file": w.data_file(path, part, f),
        }
        for path, (part, f) in added.items()
    ]


def _apply(
    w: VersionWriter, base: list[dict[str, Any]], ch: _Changes, sid: int
) -> tuple[list[dict[str, Any]], str]:
    """The data manifests of snapshot ``sid``: ``base`` with ``ch`` applied; and the operation."""
    if ch.add_only:
        return base + w.write_manifests(_added_entries(w, ch.added, sid), sid), "append"
    operation = "append"
    out: list[dict[str, Any]] = []
    for meta in base:
        entries = w.read_manifest(meta["manifest_path"])
        reuse = True
        for e in entries:
            if e["status"] == DELETED:
                continue
            path = e["data_file"]["file_path"]
            if path in ch.added:
                ch.added.pop(path)  # already published (a level change): never twice
            elif path in ch.removed:
                reuse = False
        if reuse:
            out.append(meta)
            continue
        operation = "overwrite"
        rewritten = []
        for e in entries:
            if e["status"] == DELETED:
                continue
            gone = e["data_file"]["file_path"] in ch.removed
            rewritten.append(
                {
                    **e,
                    "status": DELETED if gone else EXISTING,
                    "snapshot_id": sid if gone else e["snapshot_id"],
                }
            )
        out.extend(w.write_manifests(rewritten, sid))
    return out + w.write_manifests(_added_entries(w, ch.added, sid), sid), operation


def _compact(w: VersionWriter, metas: list[dict[str, Any]], sid: int) -> list[dict[str, Any]]:
    """Merge small manifests as ``metadata.iceberg.compaction.*`` and the target size say."""
    target = w.layout.manifest_target_size
    small = [m for m in metas if m["manifest_length"] < target * 2 // 3]
    total = sum(m["manifest_length"] for m in small)
    if len(small) < w.layout.compaction_min_files:
        return metas
    if len(small) < w.layout.compaction_max_files and total < target:
        return metas
    keep = [m for m in metas if m["manifest_length"] >= target * 2 // 3]
    merged: list[dict[str, Any]] = []
    for m in small:
        for e in w.read_manifest(m["manifest_path"]):
            if e["snapshot_id"] == sid or e["status"] == EXISTING:
                merged.append(e)
            elif e["status"] == ADDED:
                merged.append({**e, "status": EXISTING})
            # an older DELETED entry is history no retained reader of this list needs
        if m["sequence_number"] == sid:  # written by this step and merged away: no list names it
            w.store.io.delete(m["manifest_path"])
            w.written.remove(m["manifest_path"])
    return keep + w.write_manifests(merged, sid)


def _live_totals(metas: Sequence[dict[str, Any]]) -> tuple[int, int]:
    files = sum(m["added_files_count"] + m["existing_files_count"] for m in metas)
    rows = sum(m["added_rows_count"] + m["existing_rows_count"] for m in metas)
    return files, rows


def _summary(
    operation: str,
    snapshot: Snapshot,
    ch: _Changes,
    metas: Sequence[dict[str, Any]],
    deletes: Sequence[dict[str, Any]],
    base: dict[str, str] | None,
) -> dict[str, str]:
    def total(key: str, plus: int, minus: int, fallback: int) -> int:
        prev = (base or {}).get(key)
        return max(0, (int(prev) if prev is not None and prev.isdigit() else fallback) + plus - minus)

    added = list(ch.added.values())
    removed = list(ch.removed.values())
    a_rows, a_size = sum(f.row_count for _, f in added), sum(f.file_size for _, f in added)
    r_rows, r_size = sum(f.row_count for _, f in removed), sum(f.file_size for _, f in removed)
    files, rows = _live_totals(metas)
    values = {
        "added-data-files": len(added),
        "added-records": a_rows,
        "added-files-size": a_size,
        "deleted-data-files": len(removed),
        "deleted-records": r_rows,
        "removed-files-size": r_size,
        "changed-partition-count": len({p for p, _ in added} | {p for p, _ in removed}),
        "total-records": rows,
        "total-data-files": files,
        "total-files-size": total("total-files-size", a_size, r_size, 0) if base is not None else a_size,
        "total-delete-files": _live_totals(deletes)[0],
        "total-position-deletes": _live_totals(deletes)[1],
        "total-equality-deletes": 0,
    }
    out = {"operation": operation, **{k: str(v) for k, v in values.items()}}
    for k, v in (snapshot.properties or {}).items():
        if v is not None:
            out[k] = v
    return out


def _schemas(store: FileStore, have: Sequence[dict[str, Any]], version: int) -> list[dict[str, Any]]:
    """The Iceberg schemas: those already published, then every newer Paimon schema version."""
    known = {s["schema-id"] for s in have}
    out = list(have)
    for sid in store.schemas.list_ids():
        if sid not in known and sid <= store.schema.id:
            out.append(iceberg_schema(store.schemas.get(sid), version))
    if store.schema.id not in {s["schema-id"] for s in out}:
        out.append(iceberg_schema(store.schema, version))
    return sorted(out, key=lambda s: s["schema-id"])


def _check_supported(store: FileStore, layout: IcebergLayout) -> None:
    if store.options.deletion_vectors_enabled:
        if layout.format_version < 3:
            raise UnsupportedTableError(
                "metadata.iceberg.storage on a table with deletion-vectors.enabled needs Iceberg v3 "
                "deletion vectors: set 'metadata.iceberg.format-version' = '3' (with version 2, Iceberg "
                "readers would see deleted rows)"
            )
        if store.schema.options.get("data-file.external-paths"):
            raise UnsupportedTableError(
                "metadata.iceberg.storage on a deletion-vector table with data-file.external-paths: "
                "an Iceberg deletion vector names its data file by the bucket path"
            )
    if store.options.retractions_enabled:
        raise UnsupportedTableError(
            "metadata.iceberg.storage on a table with retractions.enabled: its rows are counts "
            "an Iceberg reader would not apply; Iceberg readers would see rows that are gone"
        )
    iceberg_schema(store.schema, layout.format_version)  # refuses a column type Iceberg cannot read
    partition_avro_fields(store.schema)


def _new_snapshot(
    w: VersionWriter,
    snapshot: Snapshot,
    metas: list[dict[str, Any]],
    summary: dict[str, str],
    parent: int | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "sequence-number": snapshot.id,
        "snapshot-id": snapshot.id,
        "timestamp-ms": snapshot.time_millis,
        "summary": summary,
        "manifest-list": w.write_list(metas, snapshot.id, parent),
        "schema-id": snapshot.schema_id,
    }
    if parent is not None:
        out["parent-snapshot-id"] = parent
    return out


def _fresh(w: VersionWriter, snapshot: Snapshot) -> dict[str, Any]:
    """Metadata describing only ``snapshot``: its live published files."""
    ch = _Changes()
    for e in w.store.live_entries(snapshot):
        if w.published(e.file):
            ch.added[w.path_of(e.partition, e.bucket, e.file)] = (e.partition, e.file)
    check_nested_ids(w.store, ((p, f) for p, (_, f) in ch.added.items()))
    metas = w.write_manifests(_added_entries(w, ch.added, snapshot.id), snapshot.id)
    deletes = delete_manifests(w, snapshot, [])[0] if w.deletion_vectors else []
    summary = _summary("append", snapshot, ch, metas, deletes, None)
    store = w.store
    spec = w.spec
    return {
        "format-version": w.layout.format_version,
        "table-uuid": str(uuid.uuid4()),
        "location": store.paths.root,
        "last-sequence-number": snapshot.id,
        "last-updated-ms": int(time.time() * 1000),
        "last-column-id": 0,
        "schemas": _schemas(store, [], w.layout.format_version),
        "current-schema-id": store.schema.id,
        "partition-specs": [spec],
        "default-spec-id": 0,
        "last-partition-id": max(
            (f["field-id"] for f in spec["fields"]), default=FIRST_PARTITION_FIELD_ID - 1
        ),
        "properties": {},
        "current-snapshot-id": snapshot.id,
        "refs": {},
        "snapshots": [_new_snapshot(w, snapshot, metas + deletes, summary, None)],
        "snapshot-log": [],
        "metadata-log": [],
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0,
    }


def _advance(
    w: VersionWriter, meta: dict[str, Any], snapshot: Snapshot, delta: Sequence[ManifestEntry] | None = None
) -> None:
    """Add Paimon ``snapshot`` (the next after ``meta``'s current one) to ``meta``."""
    current = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    listed = read_list(w.store, current["manifest-list"])
    base = [m for m in listed if m["content"] == MANIFEST_CONTENT_DATA]
    ch = _changes(w, delta if delta is not None else _delta_entries(w.store, snapshot))
    check_nested_ids(w.store, ((p, f) for p, (_, f) in ch.added.items()))  # the rest: vouched for
    metas, operation = _apply(w, base, ch, snapshot.id)
    if operation == "overwrite" and snapshot.commit_kind is CommitKind.COMPACT:
        operation = "replace"
    metas = _compact(w, metas, snapshot.id)
    deletes: list[dict[str, Any]] = []
    if w.deletion_vectors:
        before = [m for m in listed if m["content"] == MANIFEST_CONTENT_DELETES]
        deletes, changed = delete_manifests(w, snapshot, before)
        if changed and not ch.added and not ch.removed:
            operation = "delete"
    summary = _summary(operation, snapshot, ch, metas, deletes, current.get("summary"))
    meta["snapshots"].append(_new_snapshot(w, snapshot, metas + deletes, summary, current["snapshot-id"]))
    meta["current-snapshot-id"] = snapshot.id
    meta["last-sequence-number"] = snapshot.id
    meta["schemas"] = _schemas(w.store, meta["schemas"], w.layout.format_version)
    meta["current-schema-id"] = w.store.schema.id


def _expire(store: FileStore, meta: dict[str, Any]) -> list[str]:
    """Drop Iceberg snapshots whose Paimon snapshot is gone; returns the files only they used."""
    snaps = meta["snapshots"]
    oldest = min(s["snapshot-id"] for s in snaps)
    if store.snapshots.exists(oldest):
        return []  # Paimon expires from the oldest on: nothing newer went either (one stat, no listing)
    earliest = store.snapshots.earliest_id() or meta["current-snapshot-id"]
    keep = [
        s for s in snaps if s["snapshot-id"] >= earliest or s["snapshot-id"] == meta["current-snapshot-id"]
    ]
    gone = [s for s in snaps if s not in keep]
    if not gone:
        return []
    meta["snapshots"] = keep
    doomed: list[str] = []
    # A manifest is only ever reused forward: one that the next list lacks is used by no later one.
    ordered = sorted(snaps, key=lambda s: s["snapshot-id"])
    for i, s in enumerate(ordered[:-1]):
        if s not in gone:
            continue
        nxt = {m["manifest_path"] for m in read_list(store, ordered[i + 1]["manifest-list"])}  # cached
        try:
            mine = read_list(store, s["manifest-list"])
        except FileNotFoundError:
            mine = []  # deleted by an earlier run that stopped before publishing: nothing more to find
        following = read_list(store, ordered[i + 1]["manifest-list"])
        gone_metas = [m for m in mine if m["manifest_path"] not in nxt]
        doomed.extend(m["manifest_path"] for m in gone_metas)
        doomed.extend(unused_mirrors(store, gone_metas, following))
        doomed.append(s["manifest-list"])
    return doomed


def _refs(store: FileStore, meta: dict[str, Any]) -> dict[str, Any]:
    ids = {s["snapshot-id"] for s in meta["snapshots"]}
    refs = {
        name: {"snapshot-id": tag.snapshot.id, "type": "tag"}
        for name, tag in TagStore(store.io, store.paths).all().items()
        if tag.snapshot.id in ids
    }
    return dict(sorted(refs.items()))


def sync(store: FileStore, delta: tuple[int, Sequence[ManifestEntry]] | None = None) -> int | None:
    """Publish Iceberg metadata up to the latest snapshot of ``store``'s table.

    ``delta``: a snapshot id and its delta entries, when the caller has them (the commit).
    Returns the Iceberg metadata version now current (= the latest Paimon snapshot id), or None
    when the table publishes none (``metadata.iceberg.storage`` unset, a branch, no snapshot).

    Raises:
        UnsupportedTableError: the table has deletion vectors or a column type Iceberg cannot read.
        DyntableError / OSError: reading the table or writing the metadata failed; what this call
            wrote is then unreferenced and the next call starts again from the last published version.
    """
    layout = IcebergLayout.of(store)
    if layout is None:
        return None
    latest = store.snapshots.latest()
    if latest is None:
        return None
    _check_supported(store, layout)
    io = store.io
    hint = read_hint(store, layout)
    if hint == latest.id:
        current = published(store, layout.metadata_file(latest.id))
        if current is not None and _describes(store, current, latest):
            _refresh(store, layout, current)
            return latest.id
    base = None
    if hint is not None and hint < latest.id and store.snapshots.exists(hint + 1):
        base = published(store, layout.metadata_file(hint))
        if base is not None and (
            base.get("format-version") != layout.format_version
            or not _describes(store, base, store.snapshots.get(hint))
        ):
            base = None
    if base is None and (latest.id == 1 or (hint is not None and hint >= latest.id)):
        # Metadata of another table: one created again under the same name (hadoop-catalog keeps the
        # metadata outside the table), or history Java Paimon's rollback deleted and ids reused.
        io.delete_dir(layout.metadata_dir, recursive=True)
        hint = None
    w = VersionWriter(store, layout)
    try:
        if base is None:
            meta = _fresh(w, latest)
        else:
            try:
                meta = base
                for sid in range(hint + 1, latest.id + 1):  # type: ignore[operator]
                    known = delta[1] if delta is not None and delta[0] == sid else None
                    _advance(w, meta, store.snapshots.get(sid), known)
            except MissingNestedIds:  # a refused file of a snapshot in between: perhaps gone by now
                delete_quietly(store, w.written)
                w.written.clear()
                meta = _fresh(w, latest)
        doomed = _expire(store, meta)
        meta["refs"] = _refs(store, meta)
        meta["last-updated-ms"] = int(time.time() * 1000)
        meta["last-column-id"] = max(_max_id(s) for s in meta["schemas"])
        if not create_if_absent(
            store, layout.metadata_file(latest.id), to_json(meta).encode()
        ):
            raise _LostRace()
    except _LostRace:
        delete_quietly(store, w.written)
        return latest.id
    except BaseException:
        delete_quietly(store, w.written)
        raise
    keep_published(layout.metadata_file(latest.id), meta)
    io.write_text(layout.version_hint, str(latest.id))
    delete_quietly(store, doomed)
    delete_old_versions(store, layout, latest.id, hint)
    return latest.id


def _describes(store: FileStore, meta: dict[str, Any], snapshot: Snapshot) -> bool:
    """Whether ``meta`` was published for ``snapshot`` of this table: the same location, and its
    current snapshot has the Paimon snapshot's id and commit time (ids alone can be reused)."""
    if meta.get("location") != store.paths.root or meta.get("current-snapshot-id") != snapshot.id:
        return False
    current = next((s for s in meta.get("snapshots", ()) if s.get("snapshot-id") == snapshot.id), None)
    return current is not None and current.get("timestamp-ms") == snapshot.time_millis


def _refresh(store: FileStore, layout: IcebergLayout, meta: dict[str, Any]) -> None:
    """The current version again, without the snapshots expired since and with the tags as they are
    now (after an expiration or a tag change): rewritten in place, as Paimon's tag callback does."""
    doomed = _expire(store, meta)
    refs = _refs(store, meta)
    if not doomed and refs == meta.get("refs"):
        return
    meta["refs"] = refs
    meta["last-updated-ms"] = int(time.time() * 1000)
    path = layout.metadata_file(meta["current-snapshot-id"])
    store.io.write_text(path, to_json(meta))
    keep_published(path, meta)
    delete_quietly(store, doomed)


class _LostRace(Exception):
    """Another writer published this version first."""


def _max_id(schema: dict[str, Any]) -> int:
    best = 0
    stack = list(schema["fields"])
    while stack:
        f = stack.pop()
        best = max(best, f["id"])
        if isinstance(f["type"], dict):
            stack.extend(f["type"].get("fields", ()))
    return best

