"""Incremental scans: the changes committed between two snapshots, with a ``rowkind`` per row.

Which files carry a snapshot's changes depends on the table:

* append tables — the files an APPEND snapshot added, every row ``+I``;
* primary-key tables with ``changelog-producer = none`` — the level-0 files an APPEND snapshot
  added, each row with the kind it was written with (the "raw delta");
* ``input`` / ``lookup`` / ``full-compaction`` — the snapshot's changelog files (for
  ``full-compaction`` they arrive with COMPACT snapshots).

COMPACT snapshots carry no new changes (except full-compaction changelog) and are skipped, and
so are OVERWRITE snapshots (a batch rewrite — e.g. ``change-tracking = false`` writes — produces
no changes for streaming readers; Paimon's ``streaming-read-overwrite = false``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from engine.count_layout import expand_changes, is_count_layout, logical_schema
from engine.lsm.changelog import kinds_to_rowkind
from engine.lsm.merge import COUNT_COLUMN
from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, FileKind
from engine.meta.snapshot import CommitKind, Snapshot
from engine.read.file_reader import SEQUENCE_NUMBER, VALUE_KIND, read_data_file
from engine.read.split_reader import data_file_path
from engine.scan.predicate import Predicate, filter_table
from engine.store import FileStore

ROWKIND = "rowkind"


@dataclass(frozen=True, slots=True)
class ChangeSplit:
    """Changed files of one (snapshot, partition, bucket), read in order."""

    snapshot_id: int
    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    files: tuple[DataFileMeta, ...]
    key_value: bool  # files have _SEQUENCE_NUMBER/_VALUE_KIND columns

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


def produces_changes(store: FileStore, snapshot: Snapshot) -> bool:
    """Whether a streaming reader reads anything from this snapshot."""
    producer = store.options.changelog_producer if store.has_primary_key else "none"
    if snapshot.commit_kind is CommitKind.OVERWRITE:
        return False
    if snapshot.commit_kind is CommitKind.COMPACT:
        return producer == "full-compaction" and snapshot.changelog_manifest_list is not None
    return snapshot.commit_kind is CommitKind.APPEND


def change_splits(store: FileStore, snapshot: Snapshot) -> list[ChangeSplit]:
    """The splits holding the changes of one snapshot (empty if it produces none)."""
    if not produces_changes(store, snapshot):
        return []
    ms = store.manifests
    producer = store.options.changelog_producer if store.has_primary_key else "none"
    if producer == "none":
        names = [m.file_name for m in ms.read_list(snapshot.delta_manifest_list)]
    else:
        if snapshot.changelog_manifest_list is None:
            return []
        names = [m.file_name for m in ms.read_list(snapshot.changelog_manifest_list)]
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for name in names:
        for e in ms.read_entries(name):
            if e.kind is FileKind.ADD:
                groups[(e.partition, e.bucket)].append(e.file)
    splits = []
    for (partition, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        values = deserialize_row(partition, store.partition_types)
        files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
        splits.append(ChangeSplit(snapshot.id, partition, values, bucket, tuple(files), store.has_primary_key))
    return splits


def incremental_splits(store: FileStore, start_exclusive: int, end_inclusive: int) -> list[ChangeSplit]:
    """Change splits of every snapshot in (start, end], in commit order."""
    out: list[ChangeSplit] = []
    for snap in store.snapshots.iter_range(start_exclusive, end_inclusive):
        out.extend(change_splits(store, snap))
    return out


class ChangeReader:
    """Reads change splits as Arrow tables: ``rowkind`` first, then the requested columns."""

    def __init__(self, store: FileStore, columns: Sequence[str] | None = None, filter: Predicate | None = None) -> None:
        self.store = store
        self.count_layout = is_count_layout(store.schema)
        visible = logical_schema(store.schema).field_names if self.count_layout else store.schema.field_names
        self.columns = list(columns) if columns is not None else list(visible)
        self.filter = filter
        extra = sorted(filter.columns() - set(self.columns)) if filter is not None else []
        needed = self.columns + extra
        self.expanded = list(needed)
        if self.count_layout:
            needed = needed + [COUNT_COLUMN]
        self.fields = [store.schema.field(c) for c in needed]
        arrow = store.schema.arrow_schema()
        self.output_schema = pa.schema([pa.field(ROWKIND, pa.string(), nullable=False)] + [arrow.field(c) for c in self.columns])

    def read(self, split: ChangeSplit) -> Iterator[pa.Table]:
        store = self.store
        part_dir = store.partition_dir(split.partition_values)
        for f in split.files:
            path = data_file_path(store, part_dir, split.bucket, f)
            if split.key_value and self.count_layout:  # +1 / -1 counts become +I / -D rows
                t = read_data_file(store, path, f, self.fields)
                t = expand_changes(t, self.expanded, ROWKIND)
                kinds = t.column(ROWKIND)
                t = t.drop_columns([ROWKIND])
            elif split.key_value:
                t = read_data_file(store, path, f, self.fields, (SEQUENCE_NUMBER, VALUE_KIND))
                kinds = kinds_to_rowkind(t.column(VALUE_KIND))
                t = t.drop_columns([SEQUENCE_NUMBER, VALUE_KIND])
            else:
                t = read_data_file(store, path, f, self.fields)
                kinds = pa.repeat(pa.scalar("+I", pa.string()), t.num_rows)
            t = t.add_column(0, ROWKIND, kinds)
            t = filter_table(t, self.filter)
            yield t.select([ROWKIND] + self.columns).cast(self.output_schema)

    def read_all(self, splits: Sequence[ChangeSplit]) -> pa.Table:
        parts = [t for s in splits for t in self.read(s)]
        return pa.concat_tables(parts) if parts else self.output_schema.empty_table()

