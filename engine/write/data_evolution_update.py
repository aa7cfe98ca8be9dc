"""Row-level changes of a data-evolution table by row id: the changed columns written over their
rows' row-id ranges, deleted rows located on their range's anchor file.

A data-evolution table (``data-evolution.enabled``) never rewrites a row to change it. Paimon 2.0
(Spark's ``MergeIntoPaimonDataEvolutionTable``, ``DataEvolutionTableDataWrite``,
``DataEvolutionDeletionTestBase``) changes it as follows, and so does this module:

* **UPDATE / MERGE … UPDATE SET**: for every row-id range (:mod:`engine.meta.row_ranges`) holding
  an updated row, one new file holds only the updated columns (``_WRITE_COLS``) for the **whole**
  range: its ``_FIRST_ROW_ID`` is the range's and its row count the range's, its rows in row-id
  order — updated rows with their new values, the range's other rows with their current ones, and
  rows deleted earlier (their ids are missing from what the caller read) with a copy of the first
  row, which no reader shows (the anchor's deletion vector hides it). The file is an ``APPEND``
  file whose sequence numbers are left 0, so the commit gives it its snapshot id: every reader
  takes the updated columns of the range from it (the newest file holding them), and every row of
  the range reads that sequence number, as in Paimon.
* **DELETE / MERGE … DELETE** (with ``deletion-vectors.enabled``; Paimon refuses them otherwise):
  a deleted row is marked in the deletion vector of its range's anchor file (the oldest) at its
  position in the range, ``row id - first row id`` (:func:`anchor_positions`); no file is written.
* **INSERT**: new rows are an ordinary append; the commit gives them new row ids.

The commit checks that each range a new column file covers is still a range of the table as the
commit lands (:func:`check_ranges_updated`): a compaction merging ranges meanwhile would leave the
file covering part of a range, which no reader can assemble, so the statement fails instead.
Everything is vectorised: ranges are found by one ``searchsorted``, a file's rows by one ``take``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from engine.commit_messages import CommitMessage
from engine.errors import CommitConflictError, InvalidArgumentError
from engine.fileindex import FileIndexConfig
from engine.meta.manifest import FileKind, FileSource, ManifestEntry
from engine.meta.paths import FileNamer
from engine.meta.row_ranges import anchor_file, group_by_row_id, row_range
from engine.meta.snapshot import Snapshot
from engine.store import FileStore
from engine.write.file_writer import DataFileWriter

__all__ = [
    "ColumnUpdateWriter", "RowIdRange", "anchor_positions", "check_ranges_updated", "locate_ranges",
    "row_id_ranges",
]


@dataclass(frozen=True)
class RowIdRange:
    """One row-id range of a data-evolution table's snapshot: where its files live, the ids it
    holds (``first_row_id`` … ``first_row_id + row_count - 1``) and its anchor file (whose
    deletion vector is the range's)."""

    partition: bytes
    partition_dir: str
    bucket: int
    total_buckets: int
    first_row_id: int
    row_count: int
    anchor: str


def row_id_ranges(store: FileStore, snapshot: Snapshot | None) -> list[RowIdRange]:
    """Every row-id range of ``snapshot`` (metadata only), in row-id order."""
    from engine.scan.planner import TableScan

    if snapshot is None:
        return []
    out = []
    for split in TableScan(store).with_snapshot(snapshot).plan().splits:
        part_dir = store.partition_dir(split.partition_values)
        for group in group_by_row_id(list(split.files)):
            lo, hi = row_range(group[0])
            out.append(RowIdRange(split.partition, part_dir, split.bucket, split.total_buckets, lo,
                                  hi - lo + 1, anchor_file(group).file_name))
    out.sort(key=lambda r: r.first_row_id)
    return out


def locate_ranges(ranges: Sequence[RowIdRange], row_ids: np.ndarray) -> np.ndarray:
    """The index in ``ranges`` (sorted, as :func:`row_id_ranges` gives them) of each row id's range.

    Raises:
        InvalidArgumentError: a row id no range holds (not a row of that snapshot).
    """
    ids = np.asarray(row_ids, dtype=np.int64)
    if not ranges:
        if ids.size:
            raise InvalidArgumentError(f"row id {int(ids[0])} is not a row of the table (it has no rows)")
        return np.zeros(0, dtype=np.int64)
    starts = np.fromiter((r.first_row_id for r in ranges), np.int64, len(ranges))
    counts = np.fromiter((r.row_count for r in ranges), np.int64, len(ranges))
    idx = np.searchsorted(starts, ids, side="right") - 1
    bad = (idx < 0) | (ids >= starts[np.maximum(idx, 0)] + counts[np.maximum(idx, 0)])
    if bad.any():
        raise InvalidArgumentError(f"row id {int(ids[bad][0])} is not a row of the table's snapshot")
    return idx


def anchor_positions(ranges: Sequence[RowIdRange], row_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Deleted rows by row id as positions in their ranges' anchor files (the deletion vectors a
    data-evolution table's readers apply)."""
    ids = np.asarray(row_ids, dtype=np.int64)
    idx = locate_ranges(ranges, ids)
    out: dict[str, np.ndarray] = {}
    if ids.size == 0:
        return out
    order = np.argsort(idx, kind="stable")
    idx, ids = idx[order], ids[order]
    cuts = np.flatnonzero(np.diff(idx)) + 1
    for part_idx, part_ids in zip(np.split(idx, cuts), np.split(ids, cuts), strict=True):
        r = ranges[int(part_idx[0])]
        out[r.anchor] = np.unique(part_ids - r.first_row_id)
    return out


class ColumnUpdateWriter:
    """Writes the column files of one task of an update: one file per row-id range (module doc)."""

    def __init__(self, store: FileStore, columns: Sequence[str], namer: FileNamer) -> None:
        names = set(columns)
        self.fields = [f for f in store.schema.fields if f.name in names]
        missing = names - {f.name for f in self.fields}
        if missing or not self.fields:
            raise InvalidArgumentError(
                f"cannot update columns {sorted(missing) or list(columns)} of {store.paths.root}: "
                "not columns of the table")
        self.store = store
        self.namer = namer

    @classmethod
    def for_task(cls, store: FileStore, columns: Sequence[str], job: str, task: int,
                 attempt: int = 0) -> ColumnUpdateWriter:
        """The writer of one task of a distributed job: its files carry the job's token (a failed
        job's files are found by it) and names no other task or attempt uses."""
        return cls(store, columns, FileNamer(job, ((task << 8) + attempt) << 24))

    def write(self, rng: RowIdRange, row_ids: np.ndarray, values: pa.Table) -> CommitMessage:
        """The file of ``rng`` from the rows the caller read of it: ``row_ids`` ascending, one per
        row of ``values`` (which has the updated columns); ids missing from the range (rows
        deleted before) are filled with a copy of the first row.

        Raises:
            InvalidArgumentError: no row, a row id outside the range, or ids not strictly ascending.
        """
        ids = np.asarray(row_ids, dtype=np.int64)
        pos = ids - rng.first_row_id
        if ids.size == 0 or ids.size != values.num_rows or pos.min() < 0 or pos.max() >= rng.row_count \
                or (ids.size > 1 and bool((np.diff(ids) <= 0).any())):
            raise InvalidArgumentError(
                f"the updated rows of row-id range [{rng.first_row_id}, "
                f"{rng.first_row_id + rng.row_count - 1}] must be its rows, once each, in row-id order")
        take = np.zeros(rng.row_count, dtype=np.int64)
        take[pos] = np.arange(ids.size, dtype=np.int64)
        rows = values.select([f.name for f in self.fields]).take(pa.array(take))
        writer = DataFileWriter(self.store, rng.partition_dir, rng.bucket, namer=self.namer)
        writer.fields = list(self.fields)
        writer.file_index = FileIndexConfig()  # the table's file indexes cover whole rows
        writer.target_size = 1 << 62  # one file: its rows are the range's, in order
        (written,) = writer.write_append(rows, 0)
        meta = dataclasses.replace(
            written, first_row_id=rng.first_row_id, write_cols=tuple(f.name for f in self.fields),
            min_sequence_number=0, max_sequence_number=0)
        return CommitMessage(rng.partition, rng.bucket, rng.total_buckets, new_files=(meta,))


def check_ranges_updated(store: FileStore, latest: Snapshot | None, entries: Sequence[ManifestEntry]) -> None:
    """Refuse a commit of column files (new files with ``_WRITE_COLS`` and a first row id) whose
    range is no longer exactly a range of ``latest`` in their partition and bucket.

    Raises:
        CommitConflictError: another commit (a compaction) changed the ranges since the read.
    """
    updates = [e for e in entries if e.kind is FileKind.ADD and e.file.write_cols is not None
               and e.file.first_row_id is not None and e.file.file_source is FileSource.APPEND]
    if not updates:
        return
    live = {(e.partition, e.bucket, e.file.first_row_id, e.file.row_count)
            for e in store.live_entries(latest) if e.file.first_row_id is not None}
    for e in updates:
        if (e.partition, e.bucket, e.file.first_row_id, e.file.row_count) not in live:
            lo, n = e.file.first_row_id or 0, e.file.row_count
            raise CommitConflictError(
                f"the rows {lo}..{lo + n - 1} of {store.paths.root} are no longer one row-id range "
                "(another commit, e.g. a compaction, rewrote them) after this statement read them; "
                "nothing was committed — run the statement again")
