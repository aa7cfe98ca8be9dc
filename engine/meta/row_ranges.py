"""Row-id ranges of data files (row tracking, Paimon 1.3) and the groups data evolution makes of them.

One job: the metadata rules about which rows a file holds by row id, shared by the planner, the
readers, compaction and the commit. No data file is opened here.

* A row-tracking file holds the rows ``[_FIRST_ROW_ID, _FIRST_ROW_ID + rowCount - 1]``.
* In a data-evolution table (``data-evolution.enabled``) several files may hold the same range:
  the file that first wrote the rows, and later files that rewrote some of their columns (their
  ``_WRITE_COLS``; a file without it holds every column its schema had). Files whose ranges
  overlap form one **group**, read as one set of rows whose every column comes from the newest
  file holding it (:func:`group_by_row_id`, Paimon 2.0's ``DataEvolutionSplitRead
  .mergeRangesAndSort``: grouped by overlapping range, newest first by ``maxSequenceNumber``, every
  file of a group spanning the same range).
* A group's deletion vector belongs to its oldest file, the **anchor** (:func:`anchor_file`,
  Paimon's ``DataEvolutionUtils.retrieveAnchorFile``), and its positions count the group's rows.
* A rewrite that must keep row ids (a data-evolution compaction) adds full-row files whose ranges
  cover exactly the ranges of the files it removes (:func:`check_ranges_kept`), so no row is
  lost, doubled or renumbered.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.meta.manifest import DataFileMeta

#: The table option that turns data evolution on (it needs ``row-tracking.enabled``).
DATA_EVOLUTION = "data-evolution.enabled"


def is_data_evolution(options: object) -> bool:
    """Whether a table's options (a mapping) turn data evolution on."""
    get = getattr(options, "get", None)
    value = get(DATA_EVOLUTION, "false") if get is not None else "false"
    return str(value).strip().lower() == "true"


def row_range(file: DataFileMeta) -> tuple[int, int]:
    """The inclusive row-id range ``(first, last)`` of a row-tracking file.

    Raises:
        CorruptMetadataError: the file has no first row id (a data-evolution table's files all
            have one; Paimon and pypaimon refuse such a file too).
    """
    if file.first_row_id is None:
        raise CorruptMetadataError(
            f"data file {file.file_name} of a data-evolution table has no first row id (_FIRST_ROW_ID); "
            "its rows cannot be matched with the files that rewrote their columns"
        )
    return file.first_row_id, file.first_row_id + file.row_count - 1


def _merged(ranges: Iterable[tuple[int, int]], adjacent: bool = False) -> list[tuple[int, int]]:
    """Ranges merged where they overlap (or touch, with ``adjacent``), in order."""
    out: list[tuple[int, int]] = []
    gap = 1 if adjacent else 0
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + gap:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def group_by_row_id(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """The files of one bucket as data-evolution groups, in row-id order; each group newest first
    (``maxSequenceNumber`` descending; equal numbers keep the given order, as Paimon's stable sort).

    Raises:
        CorruptMetadataError: a file has no first row id, or two files of a group do not span the
            same range (Paimon refuses both).
    """
    ordered = sorted(files, key=lambda f: row_range(f))
    groups: list[list[DataFileMeta]] = []
    end = None
    for f in ordered:
        lo, hi = row_range(f)
        if groups and end is not None and lo <= end:
            groups[-1].append(f)
            end = max(end, hi)
        else:
            groups.append([f])
            end = hi
    position = {id(f): i for i, f in enumerate(files)}
    out = []
    for group in groups:
        ranges = {row_range(f) for f in group}
        if len(ranges) > 1:
            raise CorruptMetadataError(
                f"data files {[f.file_name for f in group]} of a data-evolution table overlap by row id "
                f"but do not span the same rows ({sorted(ranges)}); Paimon cannot read them either"
            )
        out.append(sorted(group, key=lambda f: (-f.max_sequence_number, position[id(f)])))
    return out


def anchor_file(group: Sequence[DataFileMeta]) -> DataFileMeta:
    """The oldest file of a group (smallest ``(maxSequenceNumber, file name)``): its deletion
    vector is the group's."""
    return min(group, key=lambda f: (f.max_sequence_number, f.file_name))


def check_ranges_kept(removed: Sequence[DataFileMeta], added: Sequence[DataFileMeta], table: str) -> None:
    """Refuse a rewrite of a data-evolution table that would not keep its row ids: every added
    file must hold whole rows (no ``_WRITE_COLS``) with a first row id, the added files must not
    overlap, and together they must hold exactly the row ids of the removed files.

    Raises:
        InvalidArgumentError: naming what differs; nothing was committed.
    """
    for f in added:
        if f.first_row_id is None or f.write_cols is not None:
            raise InvalidArgumentError(
                f"cannot commit to {table}: the rewritten file {f.file_name} does not hold whole rows "
                "with their row ids; a data-evolution table's rows would lose their ids"
            )
    added_ranges = sorted(row_range(f) for f in added)
    for (_, hi), (lo, _) in zip(added_ranges, added_ranges[1:], strict=False):
        if lo <= hi:
            raise InvalidArgumentError(
                f"cannot commit to {table}: the rewritten files overlap by row id ({added_ranges}); "
                "the rows would be doubled"
            )
    before = _merged((row_range(f) for f in removed), adjacent=True)
    after = _merged(added_ranges, adjacent=True)
    if before != after:
        raise InvalidArgumentError(
            f"cannot commit to {table}: the rewrite removes the rows {before} by row id but adds {after}; "
            "a data-evolution rewrite must keep every row id"
        )


__all__ = [
    "DATA_EVOLUTION",
    "anchor_file",
    "check_ranges_kept",
    "group_by_row_id",
    "is_data_evolution",
    "row_range",
]
