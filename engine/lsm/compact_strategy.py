"""Universal compaction: which sorted runs of a bucket to merge next, and into which level.

Pure decision logic over file metadata (no I/O), following Paimon's ``UniversalCompaction``
(itself RocksDB's universal style). Runs are given in universal order (see
:mod:`engine.lsm.levels`): ``R1 .. Rn``, R1 newest, Rn oldest. :meth:`UniversalCompaction.pick`
tries three triggers in priority order:

1. **Size amplification.** With at least ``num_run_compaction_trigger`` runs, if
   ``size(R1..Rn-1) * 100 > max_size_amp_percent * size(Rn)``, merge everything into the max
   level (a full compaction).
2. **Size ratio.** With at least ``num_run_compaction_trigger`` runs, start from R1 and keep
   adding the next run while ``candidate_size * (100 + size_ratio) / 100 >= size(next)``.
   Once two or more runs are picked, runs of levels 0 and 1 are always taken along even if
   they are larger: stopping in front of them would only rewrite level 1 again and again
   ("level 1 inflation", Paimon PR #9185). Picks of a single run are no compaction.
3. **Run count.** With more than ``num_run_compaction_trigger`` runs, take the first
   ``runs - trigger + 1`` (so the count drops below the trigger), then extend by size ratio
   exactly as in 2.

Output level of a pick of the first ``k`` runs:

* all runs picked -> ``max_level``;
* otherwise ``level(R_k+1) - 1``; level 0 is never an output: if that gives 0, further runs are
  taken up to and including the first run of a level >= 1, whose level becomes the output
  (or ``max_level`` if that took every run).

So the output level is never below any input's level, and later (older) runs are never newer
than the output. A unit that would rewrite one file into the level it already sits in is a
no-op and is not returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import InvalidArgumentError
from engine.lsm.levels import FileMeta, Levels, LevelSortedRun


@dataclass(frozen=True, slots=True)
class CompactUnit:
    """Files to compact together and the level their output goes to.

    Attributes:
        output_level: level of the files the compaction writes (>= 1 for a merge).
        files: the input files, in universal order of their runs.
        file_rewrite: rewrite each file on its own (no merge across files), e.g. to drop
            expired records from a single fully compacted run.
    """

    output_level: int
    files: tuple[FileMeta, ...]
    file_rewrite: bool = False

    @classmethod
    def from_level_runs(cls, output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        """A merge unit of every file of ``runs``."""
        return cls(output_level, tuple(f for _, run in runs for f in run.files))


def _check_num_levels(num_levels: int) -> int:
    if num_levels < 2:
        raise InvalidArgumentError(
            f"num-levels must be at least 2, got {num_levels}: set 'num-levels' to 2 or more"
        )
    return num_levels - 1


def _is_noop(unit: CompactUnit) -> bool:
    # Rewriting one file into the level it is already in changes nothing.
    return not unit.files or (len(unit.files) == 1 and unit.files[0].level == unit.output_level)


class UniversalCompaction:
    """Picks compaction units by Paimon's universal strategy.

    Args:
        max_size_amp_percent: ``compaction.max-size-amplification-percent`` (default 200).
        size_ratio: ``compaction.size-ratio`` in percent (default 1).
        num_run_compaction_trigger: ``num-sorted-run.compaction-trigger`` (default 5).

    Raises:
        InvalidArgumentError: a negative percentage or a trigger below 1.
    """

    __slots__ = ("max_size_amp_percent", "size_ratio", "num_run_compaction_trigger")

    def __init__(
        self,
        max_size_amp_percent: int = 200,
        size_ratio: int = 1,
        num_run_compaction_trigger: int = 5,
    ) -> None:
        if max_size_amp_percent < 0:
            raise InvalidArgumentError(
                "compaction.max-size-amplification-percent must be >= 0, "
                f"got {max_size_amp_percent}: use a non-negative percentage such as 200"
            )
        if size_ratio < 0:
            raise InvalidArgumentError(
                f"compaction.size-ratio must be >= 0, got {size_ratio}: "
                "use a non-negative percentage such as 1"
            )
        if num_run_compaction_trigger < 1:
            raise InvalidArgumentError(
                "num-sorted-run.compaction-trigger must be >= 1, "
                f"got {num_run_compaction_trigger}: use a positive count such as 5"
            )
        self.max_size_amp_percent = max_size_amp_percent
        self.size_ratio = size_ratio
        self.num_run_compaction_trigger = num_run_compaction_trigger

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """The next compaction for a bucket, or None if no trigger fires.

        Args:
            num_levels: number of LSM levels (>= 2).
            runs: the bucket's sorted runs in universal order (``Levels.level_sorted_runs()``).

        Returns:
            The unit to compact, or None.

        Raises:
            InvalidArgumentError: ``num_levels`` < 2.
        """
        max_level = _check_num_levels(num_levels)
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is None:
            unit = self.pick_for_size_ratio(max_level, runs)
        if unit is None and len(runs) > self.num_run_compaction_trigger:
            unit = self._pick_by_ratio(max_level, runs, len(runs) - self.num_run_compaction_trigger + 1)
        if unit is None or _is_noop(unit):
            return None
        return unit

    def pick_for_size_amp(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Trigger 1: a full compaction when newer runs outweigh the oldest one too much."""
        if len(runs) < self.num_run_compaction_trigger or not runs:
            return None
        candidate_size = sum(run.total_size for _, run in runs[:-1])
        earliest_size = runs[-1][1].total_size
        if candidate_size * 100 > self.max_size_amp_percent * earliest_size:
            return CompactUnit.from_level_runs(max_level, runs)
        return None

    def pick_for_size_ratio(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """Trigger 2: merge the newest runs while each next run is not much larger than them."""
        if len(runs) < self.num_run_compaction_trigger:
            return None
        return self._pick_by_ratio(max_level, runs, 1)

    def force_up_level0(
        self,
        num_levels: int,
        runs: Sequence[LevelSortedRun],
        universal_first: bool = True,
        level0_only: bool = False,
    ) -> CompactUnit | None:
        """Like :meth:`pick`, but if nothing triggers, still move every level-0 file up.

        Paimon's ``ForceUpLevel0Compaction``: used when level-0 files must not stay (lookup
        changelog producer, deletion vectors, first-row tables), because readers skip or look
        past level 0.
        All level-0 runs are picked (plus level 1, and further runs by size ratio).

        Args:
            universal_first: try :meth:`pick` first (Paimon's order); False always picks every
                level-0 run.
            level0_only: when nothing triggers, pick the level-0 runs and no run by size ratio:
                they go to the level just below the lowest occupied level >= 1 (a level-1 run is
                still taken along, as level 0 is never an output). For deletion-vector tables,
                whose compaction marks the rows it supersedes above its output level instead of
                rewriting them, so that a write's cost follows the write, not the runs below it;
                the universal triggers (tried first) still merge those runs when they are due.

        Returns:
            The unit, or None when there is no level-0 file and nothing triggers.
        """
        if universal_first:
            unit = self.pick(num_levels, runs)
            if unit is not None:
                return unit
        max_level = _check_num_levels(num_levels)
        level0_count = 0
        for level, _ in runs:
            if level > 0:
                break
            level0_count += 1
        if level0_count == 0:
            return None
        if level0_only:
            unit = self._create_unit(runs, max_level, level0_count)
        else:
            unit = self._pick_by_ratio(max_level, runs, level0_count, force=True)
        return None if unit is None or _is_noop(unit) else unit

    def force_full(
        self, num_levels: int, runs: Sequence[LevelSortedRun], rewrite_files: bool = False
    ) -> CompactUnit | None:
        """A full compaction: every run merged into the max level.

        Args:
            num_levels: number of LSM levels (>= 2).
            runs: the bucket's sorted runs in universal order.
            rewrite_files: when the bucket is already one run at the max level, still return
                a ``file_rewrite`` unit of its files (instead of None).

        Returns:
            The unit, or None if the bucket is empty or already one run at the max level.
        """
        max_level = _check_num_levels(num_levels)
        if not runs:
            return None
        if len(runs) == 1 and runs[0][0] == max_level:
            if rewrite_files:
                return CompactUnit(max_level, runs[0][1].files, file_rewrite=True)
            return None
        return CompactUnit.from_level_runs(max_level, runs)

    def _pick_by_ratio(
        self, max_level: int, runs: Sequence[LevelSortedRun], candidate_count: int, force: bool = False
    ) -> CompactUnit | None:
        candidate_size = sum(run.total_size for _, run in runs[:candidate_count])
        triggered = force or candidate_count > 1
        for level, run in runs[candidate_count:]:
            # Integer form of "candidate * (100 + ratio) / 100 < next": no float rounding.
            if candidate_size * (100 + self.size_ratio) < run.total_size * 100:
                # Once merging, levels 0 and 1 are absorbed anyway, so that the size check meets
                # level 2 with their combined size instead of inflating level 1 every time.
                if not triggered or level > 1:
                    break
            candidate_size += run.total_size
            candidate_count += 1
            triggered = True
        return self._create_unit(runs, max_level, candidate_count) if triggered else None

    @staticmethod
    def _create_unit(runs: Sequence[LevelSortedRun], max_level: int, run_count: int) -> CompactUnit:
        if run_count == len(runs):
            output_level = max_level
        else:
            output_level = max(0, runs[run_count][0] - 1)
        if output_level == 0:
            # Never write level 0: take runs up to the first one of a level >= 1 and output there.
            for level, _ in runs[run_count:]:
                run_count += 1
                if level != 0:
                    output_level = level
                    break
        if run_count == len(runs):
            output_level = max_level
        return CompactUnit.from_level_runs(output_level, runs[:run_count])


def should_stall_writes(levels: Levels, stop_trigger: int) -> bool:
    """Whether a writer must wait for compaction before writing more.

    Args:
        levels: the bucket's levels.
        stop_trigger: ``num-sorted-run.stop-trigger`` (default compaction trigger + 3).

    Returns:
        True when the bucket has more sorted runs than ``stop_trigger``.
    """
    return levels.number_of_sorted_runs() > stop_trigger


def can_drop_deletes(unit: CompactUnit, levels: Levels) -> bool:
    """Whether a compaction may drop delete (retract) records from its output.

    Deletes can go only when no older data of the bucket stays outside the compaction: the
    output is not level 0 and is at or above the highest non-empty level (Paimon's rule,
    without the deletion-vector case).

    Args:
        unit: the picked unit.
        levels: the bucket's levels the unit was picked from.
    """
    return unit.output_level != 0 and unit.output_level >= levels.non_empty_highest_level()
