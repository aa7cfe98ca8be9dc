"""Row-level changes of append tables with deletion vectors: mark rows deleted, publish one snapshot.

One job: turn "these rows (data file, position) are gone", plus the data files an UPDATE/MERGE
adds or a compaction rewrites, into new deletion-vector index files and **one** snapshot, as
Paimon 0.9+ does for append tables with ``'deletion-vectors.enabled' = 'true'`` (Spark's
``DeleteFromPaimonTableCommand`` and ``UpdatePaimonTableCommand``, ``AppendDeleteFileMaintainer``):

```
 snapshot S read ─► positions per data file (found by the caller, e.g. Spark's _metadata.row_index)
      │                 merged with each file's DV in S (Roaring union)
      ▼
 per touched (partition, bucket): ONE new DV index file holding every DV of that slot
      (unchanged ones copied, changed ones merged, those of rewritten files left out);
      index changes = DELETE every old DV file of the slot + ADD the new one
      ▼
 one snapshot (OVERWRITE for DML that marks rows, APPEND for DML that only adds rows, COMPACT
 for compaction; Paimon's kinds), published only if, in the latest
 snapshot, every touched data file is still live and every touched slot has the DV files of S
 (otherwise CommitConflictError: a concurrent DELETE or compaction changed them)
```

Bucket-unaware tables (``bucket = -1``) keep their files, and their DV entries, in bucket 0 of
each partition, and may hold several DV index files per partition: as Java's
``AppendDeleteFileMaintainer`` does, a commit rewrites only the index files that hold a DV it
changes or drops (their other DVs are copied), deletes those files by name, and rolls what it
writes into files of ``deletion-vector.index-file.target-size``; untouched index files stay.
Bucketed tables keep one DV file per bucket (Java's bucketed combiner keeps one per bucket), so
a commit rewrites the slot's file whole. Paimon 0.9 writes no cardinality; newer versions and
dyntable do, and 0.9 ignores the field.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from engine.commit import FileStoreCommit
from engine.commit_messages import CommitMessage, CommitResult, delete_uncommitted
from engine.errors import CommitConflictError, InvalidArgumentError, UnsupportedTableError
from engine.features import ROW_ID_FEATURES
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.meta.deletion_vectors import (
    DeletionVector,
    dv_metas,
    read_deletion_vectors,
    write_deletion_vectors,
    write_deletion_vectors_rolling,
)
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexManifestEntry, IndexStore
from engine.meta.manifest import FileKind, ManifestEntry
from engine.meta.row_ranges import is_data_evolution
from engine.meta.snapshot import CommitKind, Snapshot
from engine.options import DELETION_VECTOR_INDEX_FILE_TARGET_SIZE
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore
from engine.write.data_evolution_update import (
    RowIdRange,
    anchor_positions,
    check_ranges_updated,
    row_id_ranges,
)

__all__ = [
    "AppendDeletionCommit", "DvScanFile", "RowIdChanges", "dv_scan_files", "group_positions",
    "writes_append_deletion_vectors",
]

BITMAP64 = "deletion-vectors.bitmap64"
Slot = tuple[bytes, int]


def writes_append_deletion_vectors(store: FileStore) -> bool:
    """Whether row-level changes of this table are written as deletion vectors (append + DVs on)."""
    return not store.has_primary_key and uses_deletion_vectors(store)


def group_positions(
    files: pa.Array | pa.ChunkedArray, positions: pa.Array | pa.ChunkedArray
) -> dict[str, np.ndarray]:
    """Row positions grouped by data-file name (vectorised: one sort, one split)."""
    if isinstance(files, pa.ChunkedArray):
        files = files.combine_chunks()
    if isinstance(positions, pa.ChunkedArray):
        positions = positions.combine_chunks()
    if len(files) == 0:
        return {}
    encoded = files.dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    pos = positions.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    cuts = np.flatnonzero(np.diff(sorted_codes)) + 1
    names = encoded.dictionary.to_pylist()
    return {
        names[int(chunk_codes[0])]: pos[chunk]
        for chunk, chunk_codes in zip(np.split(order, cuts), np.split(sorted_codes, cuts), strict=True)
    }


@dataclass(frozen=True, slots=True)
class DvScanFile:
    """One live data file of a snapshot, for a caller that reads it with its own Parquet reader
    and finds the positions of rows to delete (``deleted``: the positions its DV marks already)."""

    name: str
    path: str
    schema_id: int
    row_count: int
    deleted: np.ndarray
    # Row tracking: the file's first row id and its rows' default sequence number (a rewritten
    # file holds its rows' own in its _ROW_ID / _SEQUENCE_NUMBER columns: engine.row_tracking).
    first_row_id: int | None = None
    max_sequence_number: int = 0


def dv_scan_files(store: FileStore, snapshot: Snapshot) -> list[DvScanFile]:
    """Every live data file of ``snapshot`` with its path, schema version and DV positions."""
    from engine.files.reader import data_file_path
    from engine.read.deletion_vectors import DeletionVectorLoader
    from engine.scan.planner import TableScan

    loader = DeletionVectorLoader(store.io)
    out = []
    none = np.zeros(0, dtype=np.int64)
    for split in TableScan(store).with_snapshot(snapshot).plan().splits:
        part_dir = store.partition_dir(split.partition_values)
        for f in split.files:
            dv = split.deletion_file(f.file_name)
            out.append(DvScanFile(
                f.file_name, data_file_path(store, part_dir, split.bucket, f), f.schema_id, f.row_count,
                loader.load(dv).positions() if dv is not None else none,
                f.first_row_id, f.max_sequence_number,
            ))
    return out


@dataclass
class _State:
    """What a snapshot says about the files and DVs a commit touches."""

    files: dict[str, ManifestEntry]
    dv_entries: dict[Slot, list[IndexManifestEntry]] = field(default_factory=dict)


def _state(store: FileStore, snapshot: Snapshot | None) -> _State:
    files = {e.file.file_name: e for e in store.live_entries(snapshot)}
    state = _State(files)
    if snapshot is None:
        return state
    for e in IndexStore(store.io, store.paths).read_manifest(snapshot.index_manifest):
        if e.file.index_type == DELETION_VECTORS_INDEX:
            state.dv_entries.setdefault((e.partition, e.bucket), []).append(e)
    return state


class AppendDeletionCommit:
    """Deletion vectors of one append table, based on one snapshot, committed as one snapshot.

    ``delete`` (any number of times) marks rows; ``drop`` forgets the DVs of files a compaction
    rewrote; ``commit`` writes the index files and publishes them with the given commit messages.
    """

    def __init__(self, store: FileStore, base: Snapshot | None, commit_user: str | None = None) -> None:
        if not writes_append_deletion_vectors(store):
            raise InvalidArgumentError(
                f"table {store.paths.root} is not an append table with 'deletion-vectors.enabled' = 'true'")
        self.store = store
        self.base = base
        self.commit_user = commit_user or f"dv-{uuid.uuid4()}"
        self.bitmap64 = str(store.schema.options.get(BITMAP64, "false")).strip().lower() == "true"
        self.index = IndexStore(store.io, store.paths, store.options.manifest_compression)
        self._state = _state(store, base)
        # Bucket-unaware: several DV files per partition, rewritten only where touched, rolled.
        self.rolling = store.options.bucket == -1
        self.target_size = int(store.options.get(DELETION_VECTOR_INDEX_FILE_TARGET_SIZE))
        self._located: set[Slot] = set()
        self._holder: dict[str, IndexManifestEntry] = {}  # data file -> the DV file holding its DV
        self._file_dvs: dict[str, dict[str, DeletionVector]] = {}  # index file -> its DVs
        self._changed: dict[str, DeletionVector] = {}
        self._dropped: set[str] = set()
        self._guarded: set[str] = set()  # rewritten files: must still be live, their slot's DVs unchanged
        self._new: set[str] = set()  # files this commit adds: markable, not live in any snapshot yet

    # -- marking ------------------------------------------------------------------------------------
    def _slot_of(self, file_name: str) -> Slot:
        entry = self._state.files.get(file_name)
        if entry is None:
            raise CommitConflictError(
                f"data file {file_name} is not live in snapshot {self.base.id if self.base else 0} of "
                f"{self.store.paths.root}; nothing was committed — run the statement again")
        # A bucket-unaware table's DV entries sit in bucket 0, like its files.
        return entry.partition, entry.bucket

    def _holder_of(self, file_name: str) -> IndexManifestEntry | None:
        """The base snapshot's DV index file holding ``file_name``'s DV (from the manifest's
        ranges; no index file is read)."""
        slot = self._slot_of(file_name)
        if slot not in self._located:
            self._located.add(slot)
            for e in self._state.dv_entries.get(slot, ()):
                for m in dv_metas(e.file):
                    self._holder[m.data_file] = e
        return self._holder.get(file_name)

    def _dvs_in(self, entry: IndexManifestEntry) -> dict[str, DeletionVector]:
        """Every DV of one index file (each read once)."""
        dvs = self._file_dvs.get(entry.file.file_name)
        if dvs is None:
            dvs = read_deletion_vectors(self.index, entry.file)
            self._file_dvs[entry.file.file_name] = dvs
        return dvs

    def current(self, file_name: str) -> DeletionVector | None:
        """The file's DV as this commit would write it (None: no row of it is deleted)."""
        if file_name in self._changed:
            return self._changed[file_name]
        holder = self._holder_of(file_name)
        return None if holder is None else self._dvs_in(holder).get(file_name)

    def delete(self, positions: Mapping[str, np.ndarray]) -> int:
        """Mark ``positions`` (data-file name -> row numbers in that file) deleted; returns how
        many rows were not deleted before.

        Raises:
            CommitConflictError: a file is not live in the base snapshot.
            InvalidArgumentError: a position is negative or not below the file's row count.
        """
        added = 0
        for name, pos in positions.items():
            if name in self._dropped:
                raise InvalidArgumentError(f"data file {name} is being rewritten; its rows cannot be deleted")
            entry = self._state.files.get(name)
            self._slot_of(name)
            assert entry is not None
            pos = np.asarray(pos, dtype=np.int64)
            if pos.size == 0:
                continue
            if int(pos.min()) < 0 or int(pos.max()) >= entry.file.row_count:
                raise InvalidArgumentError(
                    f"row position {int(pos.max())} is outside data file {name} "
                    f"({entry.file.row_count} rows)")
            new = DeletionVector.from_positions(pos, bitmap64=self.bitmap64)
            old = self.current(name)
            if old is not None:
                if old.bitmap64 != self.bitmap64:
                    new = new.to_bitmap64() if old.bitmap64 else new
                merged = old.merge(new)
                added += merged.cardinality - old.cardinality
            else:
                merged = new
                added += merged.cardinality
            self._changed[name] = merged
        return added

    def include_new(self, entries: Iterable[ManifestEntry]) -> None:
        """Files this commit's messages add: their rows may be marked too (a merged branch's files
        come with the branch's deletion vectors)."""
        for e in entries:
            self._state.files[e.file.file_name] = e
            self._new.add(e.file.file_name)

    def drop(self, file_names: Iterable[str]) -> None:
        """The files will be gone after this commit (compacted): their DVs are left out.

        The commit fails if another commit changed the DVs of their (partition, bucket) since the
        base snapshot: the rewrite would bring back the rows deleted meanwhile.
        """
        for name in file_names:
            self._slot_of(name)
            self._guarded.add(name)
            self._changed.pop(name, None)
            if self.current(name) is not None:
                self._dropped.add(name)

    # -- committing ---------------------------------------------------------------------------------
    @property
    def marks_rows(self) -> bool:
        """Whether the commit marks rows deleted."""
        return bool(self._changed)

    def _touched(self) -> dict[Slot, list[str]]:
        out: dict[Slot, list[str]] = {}
        for name in [*self._changed, *self._dropped]:
            out.setdefault(self._slot_of(name), []).append(name)
        return out

    def _index_changes(self, touched: Mapping[Slot, list[str]], changes: list[IndexManifestEntry]) -> None:
        """Write the new DV index files of every touched slot; append to ``changes`` the
        DELETE/ADD entries that install them (as they are written, so a failure half-way still
        leaves every written file in ``changes`` for the caller to delete)."""
        for slot, names in touched.items():
            if self.rolling:
                holders = {h.file.file_name: h for n in names if (h := self._holder_of(n)) is not None}
                rewritten = list(holders.values())
            else:
                rewritten = list(self._state.dv_entries.get(slot, ()))
            dvs: dict[str, DeletionVector] = {}
            for e in rewritten:
                dvs.update(self._dvs_in(e))
            for name in names:
                dvs.pop(name, None)
                if name in self._changed:
                    dvs[name] = self._changed[name]
            for e in rewritten:
                changes.append(IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.file))
            ordered = dict(sorted(dvs.items()))
            if self.rolling:
                metas = write_deletion_vectors_rolling(self.index, ordered, self.target_size)
            else:
                metas = [write_deletion_vectors(self.index, ordered)] if ordered else []
            changes.extend(IndexManifestEntry(FileKind.ADD, slot[0], slot[1], m) for m in metas)

    def _check(self, latest: Snapshot | None, touched: Mapping[Slot, list[str]]) -> None:
        """Raise unless ``latest`` still has the touched files live and the base's DV files in each slot."""
        if latest is None or (self.base is not None and latest.id == self.base.id):
            return
        touched = {slot: list(names) for slot, names in touched.items()}
        for name in self._guarded:
            touched.setdefault(self._slot_of(name), []).append(name)
        now = _state(self.store, latest)
        gone = [n for names in touched.values() for n in names if n not in now.files and n not in self._new]
        changed = [
            slot for slot in touched
            if {e.file.file_name for e in now.dv_entries.get(slot, ())}
            != {e.file.file_name for e in self._state.dv_entries.get(slot, ())}
        ]
        if gone or changed:
            what = (f"data file {gone[0]} was rewritten" if gone
                    else "the deletion vectors of the same files were changed")
            raise CommitConflictError(
                f"{what} by another commit to {self.store.paths.root} after snapshot "
                f"{self.base.id if self.base else 0}; nothing was committed — run the statement again")

    def commit(
        self,
        messages: Sequence[CommitMessage] = (),
        *,
        kind: CommitKind | None = None,
        properties: Mapping[str, str] | None = None,
        keeps: Collection[str] = (),
        check: Callable[[Snapshot | None, list[ManifestEntry]], None] | None = None,
    ) -> CommitResult:
        """Publish the DV changes and ``messages`` (new files; compaction before/after) as one snapshot.

        ``kind`` (None: Paimon's kind for a row-level change of an append table, OVERWRITE when it
        marks rows deleted, APPEND when it only adds rows; compaction passes COMPACT).

        ``keeps`` / ``check``: the features this change keeps, and a check of the entries against
        the snapshot the commit lands on (a data-evolution change by row id, :class:`RowIdChanges`).

        Nothing to publish returns an empty result. On any failure but ``CommitStateUnknownError``
        every file this commit and ``messages`` wrote is deleted.
        """
        messages = [m for m in messages if not m.is_empty]
        if kind is None:
            kind = CommitKind.OVERWRITE if self.marks_rows else CommitKind.APPEND
        touched = self._touched()
        if not touched and not messages and not self._guarded:
            return CommitResult(())
        committer = FileStoreCommit(self.store, self.commit_user)
        changes: list[IndexManifestEntry] = []
        data_entries = [
            ManifestEntry(k, m.partition, m.bucket, m.total_buckets, f)
            for m in messages
            for k, files in ((FileKind.ADD, m.new_files), (FileKind.DELETE, m.compact_before),
                             (FileKind.ADD, m.compact_after))
            for f in files
        ]

        def entries_for(latest: Snapshot | None) -> list[ManifestEntry]:
            self._check(latest, touched)
            if check is not None:
                check(latest, data_entries)
            return data_entries

        try:
            self._index_changes(touched, changes)
            sid, _ = committer._publish(  # noqa: SLF001 - the pipeline's one publish step, DV flavour
                kind, BATCH_COMMIT_IDENTIFIER, entries_for, [], None, properties,
                index_changes=lambda: (changes, None), keeps=keeps,
            )
        except BaseException as e:
            from engine.errors import CommitStateUnknownError

            if not isinstance(e, CommitStateUnknownError):
                for w in changes:
                    if w.kind is FileKind.ADD:
                        self.index.delete_file(w.file)
                delete_uncommitted(self.store, messages)
            raise
        return CommitResult((sid,))


class RowIdChanges:
    """A row-level change of a data-evolution table read at ``snapshot``, by row id, published as
    one snapshot: column files over row-id ranges and new rows (commit messages the caller's
    writers made: ``engine.write.data_evolution_update.ColumnUpdateWriter``, ordinary writers),
    and deleted rows marked in their ranges' anchor files' deletion vectors (Paimon 2.0's rules,
    module doc of ``engine.write.data_evolution_update``)."""

    def __init__(self, store: FileStore, snapshot: Snapshot | None, commit_user: str | None = None) -> None:
        if store.has_primary_key or not is_data_evolution(store.schema.options):
            raise InvalidArgumentError(f"table {store.paths.root} is not a data-evolution table")
        self.store = store
        self.snapshot = snapshot
        self.commit_user = commit_user or f"de-{uuid.uuid4()}"
        self.ranges: list[RowIdRange] = row_id_ranges(store, snapshot)
        self._deletions: AppendDeletionCommit | None = None

    def delete(self, row_ids: np.ndarray) -> int:
        """Mark the rows of these ids deleted; returns how many were not deleted before.

        Raises:
            UnsupportedTableError: the table has no deletion vectors (Paimon refuses such a
                DELETE too: a data-evolution table's rows are never rewritten to delete one).
            InvalidArgumentError: a row id that is not a row of the snapshot.
        """
        if not writes_append_deletion_vectors(self.store):
            raise UnsupportedTableError(
                f"cannot delete rows of table {self.store.paths.root}: it uses data evolution "
                "('data-evolution.enabled' = 'true'), whose rows are deleted only with deletion "
                "vectors ('deletion-vectors.enabled' = 'true'), as in Paimon")
        if self._deletions is None:
            self._deletions = AppendDeletionCommit(self.store, self.snapshot, self.commit_user)
        return self._deletions.delete(anchor_positions(self.ranges, row_ids))

    def commit(self, messages: Sequence[CommitMessage] = ()) -> CommitResult:
        """Publish the marked rows and ``messages`` as one snapshot (nothing: an empty result).
        On any failure but ``CommitStateUnknownError`` the messages' files are deleted.

        Raises:
            CommitConflictError: a range a column file covers changed since the snapshot read,
                or (with deletions) the anchors' deletion vectors did.
        """
        store = self.store

        def check(latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
            check_ranges_updated(store, latest, entries)

        if self._deletions is not None:
            return self._deletions.commit(messages, keeps=ROW_ID_FEATURES, check=check)
        messages = [m for m in messages if not m.is_empty]
        entries = [ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
                   for m in messages for f in m.new_files]
        if not entries:
            return CommitResult(())

        def entries_for(latest: Snapshot | None) -> list[ManifestEntry]:
            check(latest, entries)
            return entries

        try:
            sid, _ = FileStoreCommit(store, self.commit_user)._publish(  # noqa: SLF001 - the one publish step
                CommitKind.APPEND, BATCH_COMMIT_IDENTIFIER, entries_for, [], None, None, appends_rows=True)
        except BaseException as e:
            from engine.errors import CommitStateUnknownError

            if not isinstance(e, CommitStateUnknownError):
                delete_uncommitted(store, messages)
            raise
        return CommitResult((sid,), sum(e.file.row_count for e in entries if e.file.write_cols is None))
