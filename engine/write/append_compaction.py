"""Compaction of append tables: rewrite a bucket's small files into files of the target size.

Append rows have no key, so compaction only concatenates (in sequence order) and rolls new
files; it runs for a bucket holding at least ``compaction.min.file-num`` small files, or for
every bucket with more than one small file when a full compaction is asked for.

Row-tracking tables (``row-tracking.enabled``): every row keeps its ``_ROW_ID`` and
``_SEQUENCE_NUMBER``, written into the new files as Paimon's compaction writes them
(``engine.row_tracking``).

With deletion vectors (``deletion-vectors.enabled``) each file is read minus the rows its DV
marks, so the new files hold only live rows; a full compaction also rewrites every file that
has a DV, whatever its size, so afterwards no DV is left. The commit
(``engine.append_deletions``) removes the DVs of the rewritten files.

Bucket-unaware tables with DVs pick as Paimon's ``AppendCompactCoordinator`` does: a file is a
candidate when it is small or when its DV marks more than ``compaction.delete-ratio-threshold``
of its rows (or records no cardinality, as Paimon 0.9 writes them), and a candidate holding a DV
is always rewritten, even alone, taking the other candidates of its bucket along. Bucketed append
tables follow Paimon's bucketed compaction manager, which has no such rule.

A sorted compaction (``sort_bucket``) rewrites every file of the bucket with its rows in a
``SortOrder`` (``engine.write.sort_order``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from engine import row_tracking
from engine.commit_messages import CommitMessage
from engine.files.reader import data_file_path, read_data_file
from engine.lsm.deletion_vectors import uses_deletion_vectors
from engine.meta.manifest import DataFileMeta, FileSource
from engine.options import COMPACTION_DELETE_RATIO_THRESHOLD
from engine.read.deletion_vectors import DeletionVectorLoader, apply_deletion_vector
from engine.scan.planner import DataSplit
from engine.store import FileStore
from engine.write.file_writer import DataFileWriter
from engine.write.sort_order import SortOrder, sort_indices


def _unaware_with_dvs(store: FileStore) -> bool:
    return not store.has_primary_key and store.options.bucket == -1 and uses_deletion_vectors(store)


def mostly_deleted(store: FileStore, splits: Sequence[DataSplit]) -> set[str]:
    """The files of a bucket-unaware DV table whose DV marks more than
    ``compaction.delete-ratio-threshold`` of their rows, or records no cardinality (empty for
    any other table)."""
    if not _unaware_with_dvs(store):
        return set()
    threshold = float(store.options.get(COMPACTION_DELETE_RATIO_THRESHOLD))
    rows = {f.file_name: f.row_count for s in splits for f in s.files}
    return {
        d.data_file for s in splits for d in s.deletion_files
        if d.data_file in rows and (d.cardinality is None or d.cardinality > rows[d.data_file] * threshold)
    }


def files_to_compact(store: FileStore, splits: Sequence[DataSplit], full: bool) -> list[DataFileMeta]:
    """The files of one bucket a compaction rewrites (in sequence order), or [] when none is due."""
    target = store.options.target_file_size(False)
    files = sorted((f for s in splits for f in s.files), key=lambda f: f.min_sequence_number)
    with_dv = {d.data_file for s in splits for d in s.deletion_files}
    forced = with_dv if full else mostly_deleted(store, splits)
    picked = [f for f in files if f.file_size < target or f.file_name in forced]
    # A full compaction leaves no DV; an unaware table rewrites any candidate holding a DV.
    if (full or _unaware_with_dvs(store)) and any(f.file_name in with_dv for f in picked):
        return picked
    return picked if len(picked) >= (2 if full else store.options.compaction_min_file_num) else []


def _read_live(store: FileStore, splits: Sequence[DataSplit], picked: Sequence[DataFileMeta]) -> pa.Table:
    """The live rows of ``picked`` (files of one bucket of ``splits``), DV-deleted rows left out."""
    first = splits[0]
    part_dir = store.partition_dir(first.partition_values)
    fields = list(store.schema.fields)
    dvs = {d.data_file: d for s in splits for d in s.deletion_files}
    loader = DeletionVectorLoader(store.io) if uses_deletion_vectors(store) and dvs else None
    tracking = row_tracking.enabled(store.schema)
    parts = []
    for f in picked:
        physical = tuple(c for c in row_tracking.TRACKING_COLUMNS if f.write_cols and c in f.write_cols)
        part = read_data_file(store, data_file_path(store, part_dir, first.bucket, f), f, fields,
                              physical if tracking else ())
        if tracking:
            # Each row keeps its id and sequence number: the new file holds them (Paimon's compaction
            # reads and writes with the row-tracking columns), taken before the DV drops rows.
            own = part.select(list(physical)) if physical else None
            part = part.drop_columns(list(physical))
            pair = [row_tracking.ROW_ID_FIELD, row_tracking.SEQUENCE_NUMBER_FIELD]
            for field, values in zip(pair, row_tracking.file_metadata(
                    pair, f, "", part.num_rows, (), 0, own), strict=True):
                part = part.append_column(field.name, values)
        if loader is not None and f.file_name in dvs:
            part = apply_deletion_vector(part, loader.load(dvs[f.file_name]), f.file_name)
        parts.append(part)
    return pa.concat_tables(parts)


def _rewrite(store: FileStore, splits: Sequence[DataSplit], picked: Sequence[DataFileMeta],
             data: pa.Table, level: int = 0) -> CommitMessage:
    first = splits[0]
    part_dir = store.partition_dir(first.partition_values)
    writer = DataFileWriter(store, part_dir, first.bucket, file_source=FileSource.COMPACT, level=level)
    first_sequence = min(f.min_sequence_number for f in picked)
    after = writer.write_append(data, first_sequence) if data.num_rows else []
    return CommitMessage(first.partition, first.bucket, first.total_buckets, compact_before=tuple(picked),
                         compact_after=tuple(after))


def compact_bucket(store: FileStore, splits: Sequence[DataSplit], full: bool) -> CommitMessage | None:
    """Rewrite the small files of one bucket (all ``splits`` share partition and bucket)."""
    picked = files_to_compact(store, splits, full)
    if not picked:
        return None
    data = _read_live(store, splits, picked)
    if row_tracking.ROW_ID in data.column_names and data.num_rows > 1:
        # Rows in id order: a file whose ids run without a gap also gets its _FIRST_ROW_ID, which
        # readers that ignore the file's _ROW_ID column (pypaimon 2.1) need (engine.row_tracking).
        data = data.take(pc.sort_indices(data.column(row_tracking.ROW_ID)))
    return _rewrite(store, splits, picked, data)


def sort_bucket(store: FileStore, splits: Sequence[DataSplit], order: SortOrder, *, level: int = 0,
                only: Sequence[str] | None = None) -> CommitMessage | None:
    """Rewrite every file of one bucket (or the files named ``only``) with their rows in ``order``
    (sorted compaction, Paimon's ``order_strategy``; incremental clustering, at ``level``); the new
    files roll at the target file size, so each covers a narrow range of the order and a filter on
    the order columns can skip the others by their stats."""
    keep = None if only is None else set(only)
    picked = sorted((f for s in splits for f in s.files if keep is None or f.file_name in keep),
                    key=lambda f: f.min_sequence_number)
    if not picked:
        return None
    data = _read_live(store, splits, picked)
    if data.num_rows > 1:
        data = data.take(pa.array(sort_indices(data, order)))
    return _rewrite(store, splits, picked, data, level)
