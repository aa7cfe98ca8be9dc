"""The LSM levels of one bucket: which data files form which sorted runs.

A bucket of a primary-key table is a log-structured merge tree with ``num_levels`` levels
(``0 .. num_levels - 1``). This module only arranges file metadata; it never reads data.

Invariants (the same as Paimon's ``Levels`` / ``SortedRun``):

* Level 0 holds freshly flushed files whose key ranges may overlap, so **every level-0 file is
  its own sorted run**. Level-0 runs are ordered newest first: ``max_sequence_number``
  descending, ties broken by ``file_name`` ascending (two writers may produce equal sequence
  numbers; the name keeps the order total and deterministic).
* Every level ``i >= 1`` holds files with pairwise non-overlapping key ranges, so **all files
  of the level form one sorted run**, ordered by key.
* The "universal order" of runs, which the compaction strategy relies on, is: level-0 runs
  newest first, then the non-empty levels 1, 2, ... ``max_level``. Earlier runs hold newer data.
* A :class:`Levels` value is immutable; :meth:`Levels.update` returns a new one.

File metas are duck-typed (see :class:`FileMeta`); a file is identified by its ``file_name``.
Key order inside a level needs the decoded key range of each file, which only the caller can
supply (``key_range``); without it, files of a level keep the order they were given in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from engine.errors import InvalidArgumentError


class FileMeta(Protocol):
    """The attributes of a data file's metadata that the LSM layer reads."""

    @property
    def file_name(self) -> str: ...

    @property
    def file_size(self) -> int: ...

    @property
    def row_count(self) -> int: ...

    @property
    def level(self) -> int: ...

    @property
    def min_sequence_number(self) -> int: ...

    @property
    def max_sequence_number(self) -> int: ...


#: ``key_range(file) -> (min_key, max_key)``: decoded, comparable primary-key tuples (inclusive).
KeyRangeFn: TypeAlias = Callable[[Any], tuple[tuple[Any, ...], tuple[Any, ...]]]


@dataclass(frozen=True, slots=True)
class SortedRun:
    """Files whose key ranges do not overlap, ordered by key; read by simple concatenation.

    Attributes:
        files: the files of the run, in key order.
    """

    files: tuple[FileMeta, ...]

    @property
    def total_size(self) -> int:
        """Sum of the file sizes in bytes."""
        return sum(f.file_size for f in self.files)

    @property
    def row_count(self) -> int:
        """Sum of the files' row counts."""
        return sum(f.row_count for f in self.files)

    def is_empty(self) -> bool:
        """Whether the run holds no file."""
        return not self.files

    @classmethod
    def empty(cls) -> SortedRun:
        """The run without files."""
        return cls(())

    @classmethod
    def from_single(cls, file: FileMeta) -> SortedRun:
        """A run made of one file."""
        return cls((file,))

    @classmethod
    def from_sorted(cls, files: Iterable[FileMeta]) -> SortedRun:
        """A run from files the caller already ordered by key."""
        return cls(tuple(files))

    @classmethod
    def from_unsorted(cls, files: Iterable[FileMeta], key_range: KeyRangeFn) -> SortedRun:
        """A run from non-overlapping files in any order: sorts them by (min key, max key).

        Args:
            files: the files of one level.
            key_range: returns a file's decoded (min_key, max_key).
        """
        return cls(tuple(sorted(files, key=key_range)))

    def is_valid(self, key_range: KeyRangeFn) -> bool:
        """Whether the files are in key order and no two key ranges overlap.

        Args:
            key_range: returns a file's decoded (min_key, max_key).
        """
        ranges = [key_range(f) for f in self.files]
        if any(lo > hi for lo, hi in ranges):
            return False
        # Inclusive ranges: a key shared by two files is an overlap, hence the strict "<".
        return all(ranges[i][1] < ranges[i + 1][0] for i in range(len(ranges) - 1))


#: One entry of the universal order: ``(level, run)``.
LevelSortedRun: TypeAlias = tuple[int, SortedRun]


def _level0_order(file: FileMeta) -> tuple[int, str]:
    # Newest first: larger max sequence number first, then by name for a total order.
    return (-file.max_sequence_number, file.file_name)


class Levels:
    """The files of one bucket arranged into levels and sorted runs (immutable).

    Args:
        files: every live data file of the bucket, each carrying its ``level``.
        num_levels: number of LSM levels (``num-levels`` option, default trigger + 1); >= 2.
        key_range: optional ``file -> (min_key, max_key)``; when given, files of levels >= 1
            are ordered by key, otherwise they keep the order in which they were given.

    Raises:
        InvalidArgumentError: ``num_levels`` < 2, a file's level is outside
            ``0 .. num_levels - 1``, or the same file name appears twice.
    """

    __slots__ = ("_num_levels", "_key_range", "_level0", "_runs")

    def __init__(
        self, files: Iterable[FileMeta], num_levels: int, key_range: KeyRangeFn | None = None
    ) -> None:
        if num_levels < 2:
            raise InvalidArgumentError(
                f"num-levels must be at least 2, got {num_levels}: set 'num-levels' to 2 or more"
            )
        self._num_levels = num_levels
        self._key_range = key_range
        by_level: list[list[FileMeta]] = [[] for _ in range(num_levels)]
        seen: set[str] = set()
        for f in files:
            if not 0 <= f.level < num_levels:
                raise InvalidArgumentError(
                    f"data file {f.file_name!r} is at level {f.level}, outside 0..{num_levels - 1}: "
                    f"raise the table option 'num-levels' to at least {f.level + 1}"
                )
            if f.file_name in seen:
                raise InvalidArgumentError(
                    f"data file {f.file_name!r} is listed twice: each file may appear once in a bucket"
                )
            seen.add(f.file_name)
            by_level[f.level].append(f)
        self._level0: tuple[FileMeta, ...] = tuple(sorted(by_level[0], key=_level0_order))
        self._runs: tuple[SortedRun, ...] = tuple(self._make_run(fs) for fs in by_level[1:])

    def _make_run(self, files: Sequence[FileMeta]) -> SortedRun:
        if self._key_range is not None:
            return SortedRun.from_unsorted(files, self._key_range)
        return SortedRun.from_sorted(files)

    @property
    def num_levels(self) -> int:
        """Number of levels, ``0 .. num_levels - 1``."""
        return self._num_levels

    @property
    def max_level(self) -> int:
        """The highest (oldest) level, ``num_levels - 1``."""
        return self._num_levels - 1

    @property
    def level0(self) -> tuple[FileMeta, ...]:
        """Level-0 files, newest first."""
        return self._level0

    def run_of_level(self, level: int) -> SortedRun:
        """The single sorted run of a level >= 1 (possibly empty).

        Raises:
            InvalidArgumentError: ``level`` is 0 (one run per file there) or out of range.
        """
        if not 1 <= level <= self.max_level:
            raise InvalidArgumentError(
                f"level {level} has no single sorted run: pass a level in 1..{self.max_level}"
            )
        return self._runs[level - 1]

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        """All non-empty sorted runs in universal order (newest data first).

        Returns:
            ``[(level, run)]``: one entry per level-0 file, newest first, then one entry per
            non-empty level 1..max_level.
        """
        runs: list[LevelSortedRun] = [(0, SortedRun.from_single(f)) for f in self._level0]
        runs.extend((i + 1, r) for i, r in enumerate(self._runs) if r.files)
        return runs

    def number_of_sorted_runs(self) -> int:
        """Number of sorted runs: level-0 files plus non-empty higher levels."""
        return len(self._level0) + sum(1 for r in self._runs if r.files)

    def non_empty_highest_level(self) -> int:
        """The highest level holding a file, or -1 when the bucket is empty."""
        for i in range(len(self._runs) - 1, -1, -1):
            if self._runs[i].files:
                return i + 1
        return 0 if self._level0 else -1

    def all_files(self) -> list[FileMeta]:
        """Every file, in universal order."""
        return [f for _, run in self.level_sorted_runs() for f in run.files]

    def total_file_size(self) -> int:
        """Sum of the sizes of all files in bytes."""
        return sum(f.file_size for f in self.all_files())

    def update(self, before: Iterable[FileMeta], after: Iterable[FileMeta]) -> Levels:
        """The levels after a compaction (or a flush) replaced ``before`` by ``after``.

        A file "upgraded" to another level without rewriting appears in ``before`` with its old
        level and in ``after`` with its new level, under the same name.

        Args:
            before: files that leave the tree (matched by ``file_name``).
            after: files that enter it, each at its own ``level``.

        Returns:
            A new :class:`Levels`; this one is unchanged.

        Raises:
            InvalidArgumentError: a file of ``before`` is not in the tree, or a file of
                ``after`` has a bad level or duplicates a remaining file.
        """
        removed = {f.file_name for f in before}
        current = self._ordered_files()
        present = {f.file_name for f in current}
        missing = sorted(removed - present)
        if missing:
            raise InvalidArgumentError(
                f"cannot remove data files not in this bucket's levels: {missing[:5]}: "
                "reload the bucket's files and pick the compaction again"
            )
        kept = [f for f in current if f.file_name not in removed]
        return Levels([*kept, *after], self._num_levels, self._key_range)

    def _ordered_files(self) -> list[FileMeta]:
        # Level order then in-level order, so a rebuild without key_range keeps each level's order.
        return [*self._level0, *(f for r in self._runs for f in r.files)]

    def __repr__(self) -> str:
        parts = [f"L0={[f.file_name for f in self._level0]}"]
        parts += [f"L{i + 1}={[f.file_name for f in r.files]}" for i, r in enumerate(self._runs) if r.files]
        return f"Levels(num_levels={self._num_levels}, {', '.join(parts)})"
