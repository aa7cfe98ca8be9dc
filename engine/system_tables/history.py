"""System tables over a branch's versioned metadata: ``$snapshots``, ``$schemas``, ``$options``,
``$tags``, ``$branches`` and ``$consumers``.

One job: list the metadata objects of one branch and lay them out as Paimon's rows. Invariants:
``$snapshots`` and ``$schemas`` hold one row per existing version, ascending by id (their cost is
one small file read per version, by nature); tags, branches and consumers are ordered by name;
commit/update times (true epoch milliseconds) are shown as UTC wall-clock values.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine.meta.refs import ConsumerStore, TagStore
from engine.system_tables.columns import build_table
from engine.system_tables.render import duration_string, epoch_millis
from engine.types import field_to_json

if TYPE_CHECKING:
    from engine.store import FileStore

_BRANCH_PREFIX = "branch-"


def _flat_json(value: Any) -> str:
    """Jackson's compact form (``JsonSerdeUtil.toFlatJson``): no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def read_snapshots(store: FileStore) -> pa.Table:
    snapshots = store.snapshots.all()
    return build_table(
        "snapshots",
        {
            "snapshot_id": [s.id for s in snapshots],
            "schema_id": [s.schema_id for s in snapshots],
            "commit_user": [s.commit_user for s in snapshots],
            "commit_identifier": [s.commit_identifier for s in snapshots],
            "commit_kind": [s.commit_kind.value for s in snapshots],
            "commit_time": [s.time_millis for s in snapshots],
            "base_manifest_list": [s.base_manifest_list for s in snapshots],
            "delta_manifest_list": [s.delta_manifest_list for s in snapshots],
            "changelog_manifest_list": [s.changelog_manifest_list for s in snapshots],
            "total_record_count": [s.total_record_count for s in snapshots],
            "delta_record_count": [s.delta_record_count for s in snapshots],
            "changelog_record_count": [s.changelog_record_count for s in snapshots],
            "watermark": [s.watermark for s in snapshots],
            "next_row_id": [s.next_row_id for s in snapshots],
            "operation": [s.operation for s in snapshots],
            "writer_version": [s.writer_version for s in snapshots],
        },
    )


def read_schemas(store: FileStore) -> pa.Table:
    schemas = store.schemas.all()
    return build_table(
        "schemas",
        {
            "schema_id": [s.id for s in schemas],
            "fields": [_flat_json([field_to_json(f) for f in s.fields]) for s in schemas],
            "partition_keys": [_flat_json(list(s.partition_keys)) for s in schemas],
            "primary_keys": [_flat_json(list(s.primary_keys)) for s in schemas],
            "options": [_flat_json(dict(s.options)) for s in schemas],
            "comment": [s.comment for s in schemas],
            "update_time": [s.time_millis for s in schemas],
        },
    )


def read_options(store: FileStore) -> pa.Table:
    # The newest schema version, not the one this Table object was loaded with: options are
    # changed by ALTER TABLE through other Table objects.
    schema = store.schemas.latest() or store.schema
    items = list(schema.options.items())
    return build_table("options", {"key": [k for k, _ in items], "value": [v for _, v in items]})


def read_tags(store: FileStore) -> pa.Table:
    tags = sorted(TagStore(store.io, store.paths).all().items())
    return build_table(
        "tags",
        {
            "tag_name": [name for name, _ in tags],
            "snapshot_id": [t.snapshot.id for _, t in tags],
            "schema_id": [t.snapshot.schema_id for _, t in tags],
            "commit_time": [t.snapshot.time_millis for _, t in tags],
            "record_count": [t.snapshot.total_record_count for _, t in tags],
            # tagCreateTime is already a local wall-clock value (Java LocalDateTime): shown as is.
            "create_time": [None if t.create_time is None else epoch_millis(t.create_time) for _, t in tags],
            "time_retained": [
                None if t.time_retained_ms is None else duration_string(t.time_retained_ms) for _, t in tags
            ],
        },
    )


def _branch_create_time(store: FileStore, branch_path: str, listed_mtime: int | None) -> int:
    """The branch directory's modification time; object stores report none for prefixes, so
    fall back to its oldest schema file (copied when the branch was created), then 0."""
    if listed_mtime is not None:
        return listed_mtime
    io = store.io
    times = [s.modification_time_ms for s in io.list_dir(f"{branch_path.rstrip('/')}/schema")]
    known = [t for t in times if t is not None]
    return min(known) if known else 0


def read_branches(store: FileStore) -> pa.Table:
    io = store.io
    found: list[tuple[str, int]] = []
    for status in io.list_dir(store.paths.branch_dir):
        base = status.path.rstrip("/").rsplit("/", 1)[-1]
        if not status.is_dir or not base.startswith(_BRANCH_PREFIX) or len(base) == len(_BRANCH_PREFIX):
            continue
        found.append(
            (
                base[len(_BRANCH_PREFIX) :],
                _branch_create_time(store, status.path, status.modification_time_ms),
            )
        )
    found.sort()
    return build_table(
        "branches", {"branch_name": [name for name, _ in found], "create_time": [t for _, t in found]}
    )


def read_consumers(store: FileStore) -> pa.Table:
    consumers = sorted(ConsumerStore(store.io, store.paths).all().items())
    return build_table(
        "consumers",
        {
            "consumer_id": [cid for cid, _ in consumers],
            "next_snapshot_id": [c.next_snapshot for _, c in consumers],
        },
    )


__all__ = [
    "read_branches",
    "read_consumers",
    "read_options",
    "read_schemas",
    "read_snapshots",
    "read_tags",
]
