"""Re-basing a primary-key append's sequence numbers at commit time, giving a row-tracking
append its row ids (:func:`assign_row_ids`), and refusing a compaction's deletion vectors computed
from a state that changed since (:func:`check_deletion_vector_base`), refusing a delta that no
longer applies (:func:`check_delta_applies`) or an overwrite whose partitions another commit
changed (:func:`check_partitions_unchanged`): what a commit decides once it knows the snapshot it
lands on.

Why sequence numbers are re-based at commit time: a primary-key writer numbers its rows after
the bucket's newest sequence number when it starts. Two writers that start before either
commits pick the same numbers, and then the merge cannot tell which came last. The commit
knows the snapshot it lands on, so it moves its files' numbers above everything committed
there: the last committed write of a key wins. The files are rewritten only in that race.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from engine.commit_messages import CommitMessage, delete_data_files
from engine.errors import CommitConflictError, InvalidArgumentError, NoSuchSnapshotError
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexStore
from engine.meta.manifest import DataFileMeta, FileKind, FileSource, ManifestEntry
from engine.meta.snapshot import CommitKind, Snapshot
from engine.store import FileStore

__all__ = [
    "SequenceRebase",
    "assign_row_ids",
    "check_delta_applies",
    "check_deletion_vector_base",
    "check_partitions_unchanged",
]


class SequenceRebase:
    """Re-bases a primary-key append's new files above the sequence numbers live in ``latest``.

    Rewritten files are kept per (file, shift) so a retry landing on the same state reuses them;
    :meth:`finish` deletes whichever versions the published snapshot does not reference.
    """

    def __init__(self, store: FileStore, messages: Sequence[CommitMessage]) -> None:
        self.store = store
        self.messages = [m for m in messages if m.new_files]
        self._rewritten: dict[tuple[str, int], DataFileMeta] = {}

    def entries_for(self, latest: Snapshot | None) -> list[ManifestEntry]:
        shifts = self._shifts(latest)
        entries = []
        for m in self.messages:
            shift = shifts.get((m.partition, m.bucket), 0)
            for f in m.new_files:
                entries.append(
                    ManifestEntry(
                        FileKind.ADD, m.partition, m.bucket, m.total_buckets, self._shifted(m, f, shift)
                    )
                )
        return entries

    def _shifts(self, latest: Snapshot | None) -> dict[tuple[bytes, int], int]:
        """Per (partition, bucket): how far to move our numbers so they follow every racing write.

        Only a racing file whose key range overlaps ours forces a move (disjoint keys never merge
        with each other, so their numbers may interleave): writers on one bucket with separate
        keys do not rewrite each other's files.
        """
        if latest is None or all(m.sequence_base == latest.id for m in self.messages):
            return {}  # nobody committed since the writers started: their numbers are already the newest
        from engine.lsm.key_order import key_range_decoder

        key_range = key_range_decoder(
            [self.store.schema.field(k).type for k in self.store.schema.trimmed_primary_keys]
        )
        ours: dict[tuple[bytes, int], tuple[int, list[tuple[tuple[Any, ...], tuple[Any, ...]]]]] = {}
        for m in self.messages:
            low, ranges = ours.get((m.partition, m.bucket), (m.new_files[0].min_sequence_number, []))
            low = min(low, *(f.min_sequence_number for f in m.new_files))
            ours[(m.partition, m.bucket)] = (low, ranges + [key_range(f) for f in m.new_files])
        partitions = {p for p, _ in ours}
        newest: dict[tuple[bytes, int], int] = {}
        for e in self.store.live_entries(latest, lambda p: p in partitions):
            key = (e.partition, e.bucket)
            if key not in ours or e.file.max_sequence_number < ours[key][0]:
                continue
            lo, hi = key_range(e.file)
            if any(lo <= our_hi and our_lo <= hi for our_lo, our_hi in ours[key][1]):
                newest[key] = max(newest.get(key, -1), e.file.max_sequence_number)
        return {key: newest[key] + 1 - low for key, (low, _) in ours.items() if newest.get(key, -1) >= low}

    def _shifted(self, m: CommitMessage, f: DataFileMeta, shift: int) -> DataFileMeta:
        if shift == 0:
            return f
        key = (f.file_name, shift)
        if key not in self._rewritten:
            from engine.write.sequence_rebase import rewrite_with_sequence_shift

            self._rewritten[key] = rewrite_with_sequence_shift(self.store, m.partition, m.bucket, f, shift)
        return self._rewritten[key]

    def finish(self, published: Sequence[ManifestEntry] | None, *, failed: bool = False) -> None:
        """Delete the file versions nobody references once the commit's outcome is known.

        ``failed``: nothing was published, every rewrite goes. ``published``: the delta that
        became the snapshot; the versions it does not name go. Neither (an earlier attempt's
        publish was found): the delta is unknown, so nothing is deleted.
        """
        if not self._rewritten:
            return
        if failed:
            stale = [(original, meta) for (original, _), meta in self._rewritten.items()]
        elif published is None:
            return
        else:
            used = {e.file.file_name for e in published}
            stale = [
                (original, meta)
                for (original, _), meta in self._rewritten.items()
                if meta.file_name not in used
            ]
            stale += [(f.file_name, f) for m in self.messages for f in m.new_files if f.file_name not in used]
        where = {f.file_name: (m.partition, m.bucket) for m in self.messages for f in m.new_files}
        for original, meta in stale:
            partition, bucket = where[original]
            delete_data_files(self.store, partition, bucket, [meta])


def assign_row_ids(
    entries: list[ManifestEntry], start: int, snapshot_id: int
) -> tuple[list[ManifestEntry], int]:
    """Row tracking (Paimon 1.3), on every commit of such a table, by Paimon's
    ``RowTrackingCommitUtils``; returns the entries and the snapshot's ``nextRowId``.

    Sequence numbers of the added files: a file whose minimum is 0 (new rows) takes the
    snapshot's id as both bounds, one whose maximum is 0 (rewritten rows, some updated: their
    own sequence number is NULL) keeps its minimum and takes the snapshot's id as maximum, any
    other (a compaction's, whose rows all keep theirs) keeps its range. Appended files
    (``APPEND``) without ids that do not hold their rows' ids themselves take the next
    ``row_count`` ids, in commit order, from ``start`` (the latest snapshot's ``nextRowId``).
    A plain write's files come with a writer's sequence range: they are new rows, so they are
    stamped as Paimon's (whose new files start at 0) are."""
    out = []
    for e in entries:
        f = e.file
        if e.kind is not FileKind.ADD:
            out.append(e)
            continue
        holds_ids = f.write_cols is not None and "_ROW_ID" in f.write_cols
        if f.file_source is FileSource.APPEND and not holds_ids and f.first_row_id is None:
            f = dataclasses.replace(f, first_row_id=start, min_sequence_number=snapshot_id,
                                    max_sequence_number=snapshot_id)
            start += f.row_count
        elif f.min_sequence_number == 0:
            f = dataclasses.replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
        elif f.max_sequence_number == 0:
            f = dataclasses.replace(f, max_sequence_number=snapshot_id)
        out.append(e if f is e.file else dataclasses.replace(e, file=f))
    return out, start


def check_deletion_vector_base(
    store: FileStore, messages: Sequence[CommitMessage], latest: Snapshot | None
) -> None:
    """Refuse new deletion vectors of a bucket whose DVs changed since the snapshot they were
    computed from (``sequence_base``): the bucket's index file replaces the previous one whole, so
    a concurrent compaction's marks would be lost (and rows it rewrote would show twice)."""
    changed = [m for m in messages if m.sequence_base is not None
               and any(f.index_type == DELETION_VECTORS_INDEX for f in m.new_index_files)]
    if not changed or latest is None:
        return
    index = IndexStore(store.io, store.paths)

    def dv_files(snapshot_id: int | None) -> dict[tuple[bytes, int], str]:
        if snapshot_id is None:
            name = latest.index_manifest
        else:
            try:
                name = store.snapshots.get(snapshot_id).index_manifest
            except NoSuchSnapshotError:
                raise CommitConflictError(
                    f"snapshot {snapshot_id}, which this compaction started from, has expired; it runs again"
                ) from None
        return {(e.partition, e.bucket): e.file.file_name for e in index.read_manifest(name)
                if e.file.index_type == DELETION_VECTORS_INDEX}

    now = dv_files(None)
    for base in {m.sequence_base for m in changed}:
        if base == latest.id:
            continue
        before = dv_files(base) if base else {}
        for m in changed:
            slot = (m.partition, m.bucket)
            if m.sequence_base == base and before.get(slot) != now.get(slot):
                raise CommitConflictError(
                    f"the deletion vectors of bucket {m.bucket} of {store.paths.root} changed since snapshot "
                    f"{base}, which this compaction started from; it is dropped and runs again"
                )


def check_partitions_unchanged(
    store: FileStore, start: Snapshot | None, latest: Snapshot | None, select: Callable[[bytes], bool]
) -> None:
    """Refuse if a commit other than a compaction touched the selected partitions after ``start``."""
    first = start.id if start else 0
    if latest is None or latest.id == first:
        return
    snapshots = store.snapshots
    for sid in range(first + 1, latest.id + 1):
        try:
            snap = snapshots.get(sid)
        except NoSuchSnapshotError:
            raise CommitConflictError(
                f"snapshot {sid}, committed while this overwrite ran, has expired, so it cannot be "
                "checked "
                "for changes to the overwritten partitions; no data was written — run the statement again"
            ) from None
        if snap.commit_kind is CommitKind.COMPACT:
            continue
        for meta in store.manifests.read_list(snap.delta_manifest_list):
            if any(select(e.partition) for e in store.manifests.read_entries(meta.file_name)):
                raise CommitConflictError(
                    f"another commit (snapshot {sid}, {snap.commit_kind.name}) changed the partitions "
                    "being "
                    "overwritten while this statement ran; no data was written — run the statement again"
                )

def check_delta_applies(store: FileStore, latest: Snapshot | None, entries: list[ManifestEntry]) -> None:
    """The delta must apply to ``latest``: every DELETE names a live file by full identity, no ADD
    is live, and no file is added twice (the snapshot would be unreadable: §6.5 refuses a double
    ADD)."""
    added: set[tuple[object, ...]] = set()
    for e in entries:
        if e.kind is FileKind.ADD:
            if e.identifier in added:
                raise InvalidArgumentError(
                    f"this commit adds {e.file.file_name} (bucket {e.bucket}, level {e.file.level}) "
                    "twice: two "
                    "writers produced files under the same name or a commit message was passed twice; "
                    "nothing was committed"
                )
            added.add(e.identifier)
    deletes = [e for e in entries if e.kind is FileKind.DELETE]
    if not deletes:
        return
    parts = {e.partition for e in entries}
    live = {e.identifier for e in store.live_entries(latest, lambda p: p in parts)}
    missing = [e for e in deletes if e.identifier not in live]
    if missing:
        f = missing[0]
        raise CommitConflictError(
            f"file deletion conflict: {len(missing)} file(s) this commit replaces are no longer live as "
            "it saw "
            f"them (e.g. {f.file.file_name} at level {f.file.level}, bucket {f.bucket}): another commit "
            "removed "
            "or moved them; nothing was committed — refresh and retry"
        )
    readded = [e for e in entries if e.kind is FileKind.ADD and e.identifier in live]
    if readded:
        raise CommitConflictError(
            f"file {readded[0].file.file_name} is already live in snapshot {latest.id if latest else 0}; "
            "nothing was committed"
        )
