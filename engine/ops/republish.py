"""A table branch's next snapshot that gives it another snapshot's content (rollback, fast-forward).

Both operations publish, instead of deleting newer snapshot files as Paimon does, one new
OVERWRITE snapshot: the head's manifests as its base and a delta that turns the head's live
files into the target's, with the target's index manifest. Readers therefore see the old head
or the new one, history stays linear, and nothing is deleted.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence

from engine.commit import WRITER_VERSION
from engine.meta.manifest import FileKind, ManifestEntry
from engine.meta.snapshot import CommitKind, Snapshot, new_snapshot_uuid
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore


def content_snapshot(
    store: FileStore,
    head: Snapshot | None,
    target: Snapshot,
    target_live: Sequence[ManifestEntry],
    schema_id: int,
    properties: Mapping[str, str],
    written: list[str],
) -> Snapshot | None:
    """The snapshot after ``head`` whose live files are ``target_live`` (None when the head has them already).

    Every manifest and list written is appended to ``written``, so a caller that does not
    publish can delete them.
    """
    ms = store.manifests
    head_live = {e.identifier: e for e in store.live_entries(head)}
    wanted = {e.identifier: e for e in target_live}
    delta = [
        ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
        for key, e in head_live.items() if key not in wanted
    ] + [e for key, e in wanted.items() if key not in head_live]
    if head is not None and not delta and head.index_manifest == target.index_manifest:
        return None
    delta_metas = ms.write_entries_rolling(delta, schema_id, store.partition_types)
    written += [m.file_name for m in delta_metas]
    base_name, base_size = ms.write_list(ms.data_manifests(head) if head else [])
    written.append(base_name)
    delta_name, delta_size = ms.write_list(delta_metas)
    written.append(delta_name)
    added = sum(e.file.row_count for e in delta if e.kind is FileKind.ADD)
    removed = sum(e.file.row_count for e in delta if e.kind is FileKind.DELETE)
    row_ids = [x for x in (head.next_row_id if head else None, target.next_row_id) if x is not None]
    return Snapshot(
        id=(head.id if head else 0) + 1,
        schema_id=schema_id,
        base_manifest_list=base_name,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta_name,
        delta_manifest_list_size=delta_size,
        index_manifest=target.index_manifest,
        commit_user=str(uuid.uuid4()),
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind=CommitKind.OVERWRITE,
        time_millis=int(time.time() * 1000),
        total_record_count=(head.total_record_count if head else 0) + added - removed,
        delta_record_count=added - removed,
        watermark=target.watermark,
        properties=dict(properties),
        next_row_id=max(row_ids) if row_ids else None,
        writer_version=WRITER_VERSION,
        uuid=new_snapshot_uuid(),
    )
