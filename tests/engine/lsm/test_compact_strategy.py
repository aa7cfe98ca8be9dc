"""Tests for engine.lsm.compact_strategy: Paimon's universal compaction decisions.

The hand cases mirror the behaviour Paimon's own UniversalCompaction tests pin down
(size amplification, size ratio, run count, output levels, forced level-0 compaction).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError
from engine.lsm.compact_strategy import (
    CompactUnit,
    UniversalCompaction,
    can_drop_deletes,
    should_stall_writes,
)
from engine.lsm.levels import Levels, SortedRun

_names = itertools.count()


@dataclass(frozen=True)
class F:
    file_name: str
    file_size: int
    level: int = 0
    row_count: int = 1
    min_sequence_number: int = 0
    max_sequence_number: int = 0


def file(size: int, level: int = 0, seq: int = 0) -> F:
    return F(f"f{next(_names)}", size, level, max_sequence_number=seq)


def run(level: int, size: int) -> tuple[int, SortedRun]:
    return (level, SortedRun.from_single(file(size, level)))


def level0(*sizes: int) -> list[tuple[int, SortedRun]]:
    return [run(0, s) for s in sizes]


def sizes_of(unit: CompactUnit | None) -> list[int] | None:
    return None if unit is None else [f.file_size for f in unit.files]


# ---------------------------------------------------------------- output level


@pytest.mark.parametrize(("count", "expected"), [(1, 1), (2, 1), (3, 2), (4, 3), (5, 5)])
def test_output_level(count, expected):
    runs = [run(lvl, 1) for lvl in (0, 0, 1, 3, 4)]
    unit = UniversalCompaction._create_unit(runs, 5, count)
    assert unit.output_level == expected


def test_output_level_never_zero_extends_to_next_nonzero_run():
    runs = [run(0, 1), run(0, 1), run(2, 1), run(3, 1)]
    unit = UniversalCompaction._create_unit(runs, 5, 1)
    # next run is level 0 -> take runs up to the level-2 run and output at level 2
    assert unit.output_level == 2
    assert len(unit.files) == 3


# ---------------------------------------------------------------- the three triggers


def test_pick_by_size_amplification():
    c = UniversalCompaction(max_size_amp_percent=25, size_ratio=1, num_run_compaction_trigger=3)
    unit = c.pick(3, level0(1, 2, 3, 3))
    assert sizes_of(unit) == [1, 2, 3, 3]
    assert unit.output_level == 2


def test_pick_by_size_ratio():
    c = UniversalCompaction(25, 1, 3)
    unit = c.pick(4, [run(0, 1), run(1, 1), run(2, 1), run(3, 50)])
    assert sizes_of(unit) == [1, 1, 1]
    assert unit.output_level == 2


def test_pick_by_run_count_then_size_ratio():
    c = UniversalCompaction(25, 1, 3)
    unit = c.pick(4, [run(0, 1), run(1, 2), run(2, 3), run(3, 50)])
    # run count picks the first two; size ratio then adds the 3
    assert sizes_of(unit) == [1, 2, 3]
    assert unit.output_level == 2


def test_no_trigger_below_run_count():
    c = UniversalCompaction(25, 1, 3)
    assert c.pick(4, [run(0, 1), run(3, 50)]) is None
    assert c.pick(4, []) is None


def test_no_output_level0():
    c = UniversalCompaction(25, 1, 3)
    unit = c.pick(3, [run(0, 1), run(0, 1), run(1, 1), run(2, 50)])
    assert sizes_of(unit) == [1, 1, 1]
    assert unit.output_level == 1
    unit = c.pick(3, [run(0, 1), run(0, 2), run(1, 3), run(2, 50)])
    assert sizes_of(unit) == [1, 2, 3]
    assert unit.output_level == 1


def test_extreme_case_no_output_level0():
    c = UniversalCompaction(200, 1, 5)
    unit = c.pick(6, level0(1, 1, 1, 1024, 1024 * 1024))
    assert sizes_of(unit) == [1, 1, 1, 1024, 1024 * 1024]
    assert unit.output_level == 5


def test_level1_is_absorbed_once_merging():
    # 4 small level-0 files, a big level 1, a bigger level 3: level 1 joins the merge even though
    # it fails the size ratio, and the output goes to level 2 (not back into level 1).
    c = UniversalCompaction(200, 1, 3)
    unit = c.pick(4, [run(0, 1), run(0, 1), run(0, 1), run(0, 1), run(1, 100), run(3, 1000)])
    assert sizes_of(unit) == [1, 1, 1, 1, 100]
    assert unit.output_level == 2
    # the combined size is then checked against level 2 and may pull it in too
    unit = c.pick(4, [run(0, 1), run(0, 1), run(0, 1), run(1, 100), run(2, 104), run(3, 10_000)])
    assert sizes_of(unit) == [1, 1, 1, 100, 104]
    assert unit.output_level == 2


def _append_and_pick_for_size_amp(c, sizes):
    sizes = [1, *sizes]
    unit = c.pick_for_size_amp(2, level0(*sizes))
    return [sum(sizes_of(unit))] if unit is not None else sizes


def test_size_amplification_sequence():
    c = UniversalCompaction(25, 0, 1)
    sizes = [1]
    seen = []
    for _ in range(17):
        sizes = _append_and_pick_for_size_amp(c, sizes)
        seen.append(sizes)
    assert seen == [
        [2],
        [3],
        [4],
        [1, 4],
        [6],
        [1, 6],
        [8],
        [1, 8],
        [1, 1, 8],
        [11],
        [1, 11],
        [1, 1, 11],
        [14],
        [1, 14],
        [1, 1, 14],
        [1, 1, 1, 14],
        [18],
    ]


def _pick_for_size_ratio(c, sizes):
    runs = [run(i, s) for i, s in enumerate(sizes)]
    unit = c.pick_for_size_ratio(len(sizes) - 1, runs)
    if unit is None:
        return sizes
    picked = sizes_of(unit)
    rest = list(sizes)
    for s in picked:
        rest.remove(s)
    return [sum(picked), *rest]


def test_size_ratio_sequence():
    c = UniversalCompaction(25, 1, 5)
    sizes = [1, 1, 1, 1]
    seen = []
    for _ in range(23):
        sizes = _pick_for_size_ratio(c, [1, *sizes])
        seen.append(sizes)
    assert seen == [
        [5],
        [1, 5],
        [1, 1, 5],
        [1, 1, 1, 5],
        [4, 5],
        [1, 4, 5],
        [1, 1, 4, 5],
        [3, 4, 5],
        [1, 3, 4, 5],
        [2, 3, 4, 5],
        [1, 2, 3, 4, 5],
        [16],
        [1, 16],
        [1, 1, 16],
        [1, 1, 1, 16],
        [4, 16],
        [1, 4, 16],
        [1, 1, 4, 16],
        [3, 4, 16],
        [1, 3, 4, 16],
        [2, 3, 4, 16],
        [1, 2, 3, 4, 16],
        [11, 16],
    ]


def test_size_ratio_threshold():
    assert _pick_for_size_ratio(UniversalCompaction(25, 10, 2), [8, 9, 10]) == [8, 9, 10]
    assert _pick_for_size_ratio(UniversalCompaction(25, 20, 2), [8, 9, 10]) == [27]


def test_trigger_priority_size_amp_first():
    # both size amplification and size ratio would fire: the full compaction wins
    c = UniversalCompaction(100, 1, 2)
    unit = c.pick(4, [run(0, 5), run(1, 5), run(3, 6)])
    assert sizes_of(unit) == [5, 5, 6]
    assert unit.output_level == 3


# ---------------------------------------------------------------- forced compactions


def test_force_up_level0():
    c = UniversalCompaction(25, 1, 3)
    unit = c.force_up_level0(3, level0(1, 2, 2, 2))
    assert sizes_of(unit) == [1, 2, 2, 2] and unit.output_level == 2
    unit = c.force_up_level0(3, [run(0, 1), run(1, 2), run(2, 2)])
    assert sizes_of(unit) == [1, 2, 2] and unit.output_level == 2
    # level 0 to an empty level
    unit = c.force_up_level0(3, [run(0, 1), run(2, 2)])
    assert sizes_of(unit) == [1] and unit.output_level == 1
    # nothing at level 0 and nothing triggers
    assert c.force_up_level0(3, [run(2, 2)]) is None
    # level 1 is taken along with level 0, and the combined size decides on level 2
    c = UniversalCompaction(1000, 1, 10)
    unit = c.force_up_level0(4, [run(0, 1), run(1, 10), run(2, 11), run(3, 1000)])
    assert sizes_of(unit) == [1, 10, 11] and unit.output_level == 2
    unit = c.force_up_level0(4, [run(0, 1), run(1, 10), run(2, 12), run(3, 1000)])
    assert sizes_of(unit) == [1, 10] and unit.output_level == 1


def test_force_up_level0_alone_leaves_the_runs_below_in_place():
    """``level0_only`` (deletion-vector tables): level 0 moves up alone, whatever the sizes below."""
    c = UniversalCompaction(200, 1, 5)
    # the base at the max level is as big as the batch: Paimon's ratio would take it, this does not
    runs = [run(0, 100), run(0, 100), run(5, 150)]
    assert sizes_of(c.force_up_level0(6, runs)) == [100, 100, 150]
    unit = c.force_up_level0(6, runs, level0_only=True)
    assert sizes_of(unit) == [100, 100] and unit.output_level == 4
    # the next write lands just below the last one
    unit = c.force_up_level0(6, [run(0, 100), run(4, 200), run(5, 150)], level0_only=True)
    assert sizes_of(unit) == [100] and unit.output_level == 3
    # a level-1 run is taken along (level 0 is never an output), and nothing further
    unit = c.force_up_level0(6, [run(0, 1), run(1, 2), run(2, 2)], level0_only=True)
    assert sizes_of(unit) == [1, 2] and unit.output_level == 1
    # nothing below level 0: the max level
    unit = c.force_up_level0(6, level0(3, 4), level0_only=True)
    assert sizes_of(unit) == [3, 4] and unit.output_level == 5
    # a universal trigger still comes first (5 runs, size amplification: a full compaction)
    runs = [*level0(100, 100), run(3, 100), run(4, 100), run(5, 150)]
    assert sizes_of(c.force_up_level0(6, runs, level0_only=True)) == [100, 100, 100, 100, 150]
    assert c.force_up_level0(6, [run(5, 10)], level0_only=True) is None


def test_force_full():
    c = UniversalCompaction()
    assert c.force_full(3, []) is None
    single = [(2, SortedRun.from_sorted([file(5, 2), file(6, 2)]))]
    assert c.force_full(3, single) is None
    rewrite = c.force_full(3, single, rewrite_files=True)
    assert rewrite.file_rewrite and rewrite.output_level == 2 and sizes_of(rewrite) == [5, 6]
    unit = c.force_full(3, [run(0, 1), run(1, 100)])
    assert sizes_of(unit) == [1, 100] and unit.output_level == 2 and not unit.file_rewrite
    # one run below the max level still moves up
    unit = c.force_full(3, [run(1, 100)])
    assert sizes_of(unit) == [100] and unit.output_level == 2


def test_noop_single_file_at_output_level_is_not_picked():
    # trigger 1: one run at the max level "fits" size ratio pick of everything -> no-op
    c = UniversalCompaction(200, 1, 1)
    assert c.pick(3, [run(2, 10)]) is None


# ---------------------------------------------------------------- stall / deletes / validation


def _levels(n_level0: int, higher: list[int], num_levels: int = 6) -> Levels:
    files = [file(1, 0, seq=i) for i in range(n_level0)] + [file(10, lvl) for lvl in higher]
    return Levels(files, num_levels)


def test_should_stall_writes():
    assert not should_stall_writes(_levels(7, [5]), 8)  # 8 runs: not more than the stop trigger
    assert should_stall_writes(_levels(8, [5]), 8)
    assert should_stall_writes(_levels(6, [1, 2, 5]), 8)
    assert not should_stall_writes(_levels(0, []), 0)


def test_can_drop_deletes():
    lv = _levels(2, [2, 4])
    assert not can_drop_deletes(CompactUnit(3, ()), lv)
    assert can_drop_deletes(CompactUnit(4, ()), lv)
    assert can_drop_deletes(CompactUnit(5, ()), lv)
    assert not can_drop_deletes(CompactUnit(0, ()), _levels(2, []))
    assert can_drop_deletes(CompactUnit(1, ()), _levels(2, []))


def test_invalid_arguments():
    with pytest.raises(InvalidArgumentError):
        UniversalCompaction(max_size_amp_percent=-1)
    with pytest.raises(InvalidArgumentError):
        UniversalCompaction(size_ratio=-1)
    with pytest.raises(InvalidArgumentError):
        UniversalCompaction(num_run_compaction_trigger=0)
    with pytest.raises(InvalidArgumentError):
        UniversalCompaction().pick(1, [])
    with pytest.raises(InvalidArgumentError):
        UniversalCompaction().force_full(1, [])


# ---------------------------------------------------------------- properties


@st.composite
def universal_runs(draw):
    num_levels = draw(st.integers(2, 7))
    n0 = draw(st.integers(0, 8))
    higher = sorted(draw(st.sets(st.integers(1, num_levels - 1))))
    sizes = st.integers(0, 500)
    runs = [run(0, draw(sizes)) for _ in range(n0)] + [run(lvl, draw(sizes)) for lvl in higher]
    return num_levels, runs


def _check_unit(unit, runs, num_levels):
    all_files = [f for _, r in runs for f in r.files]
    k = len(unit.files)
    assert k >= 1
    # a prefix of the runs, whole runs only
    assert list(unit.files) == all_files[:k]
    picked_runs = 0
    acc = 0
    for _, r in runs:
        if acc == k:
            break
        acc += len(r.files)
        picked_runs += 1
    assert acc == k
    # never level 0, never below an input, never at/above a run that stays
    assert 1 <= unit.output_level <= num_levels - 1
    assert unit.output_level >= max(f.level for f in unit.files)
    if picked_runs < len(runs):
        assert unit.output_level < runs[picked_runs][0]
    else:
        assert unit.output_level == num_levels - 1
    assert not (k == 1 and unit.files[0].level == unit.output_level)


@settings(max_examples=100, deadline=None)
@given(universal_runs(), st.integers(0, 300), st.integers(0, 10), st.integers(1, 6))
def test_picked_units_are_well_formed(case, amp, ratio, trigger):
    num_levels, runs = case
    c = UniversalCompaction(amp, ratio, trigger)
    unit = c.pick(num_levels, runs)
    if unit is not None:
        _check_unit(unit, runs, num_levels)
    if len(runs) > trigger:
        assert unit is not None  # the run-count trigger always fires
    for level0_only in (False, True):
        forced = c.force_up_level0(num_levels, runs, level0_only=level0_only)
        if forced is not None:
            _check_unit(forced, runs, num_levels)
            if unit is None:
                # every level-0 file moves up
                level0_files = [f for lvl, r in runs if lvl == 0 for f in r.files]
                assert set(level0_files) <= set(forced.files)
                if level0_only:  # and at most a level-1 run with them
                    assert all(f.level <= 1 for f in forced.files)
            else:
                assert forced == unit
        elif any(lvl == 0 for lvl, _ in runs):
            pytest.fail("force_up_level0 left level-0 files in place")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 200), min_size=1, max_size=40), st.integers(1, 6), st.integers(2, 7))
def test_simulated_writes_keep_runs_bounded(flush_sizes, trigger, num_levels):
    c = UniversalCompaction(200, 1, trigger)
    lv = Levels([], num_levels)
    total = 0
    for seq, size in enumerate(flush_sizes):
        lv = lv.update([], [F(f"flush{seq}", size, 0, max_sequence_number=seq)])
        total += size
        for _ in range(50):
            unit = c.pick(lv.num_levels, lv.level_sorted_runs())
            if unit is None:
                break
            _check_unit(unit, lv.level_sorted_runs(), num_levels)
            # the output level holds nothing besides the inputs
            inputs = {f.file_name for f in unit.files}
            if unit.output_level > 0:
                stay = [f for f in lv.run_of_level(unit.output_level).files if f.file_name not in inputs]
                assert not stay
            out = F(f"out{seq}_{next(_names)}", sum(f.file_size for f in unit.files), unit.output_level)
            lv = lv.update(unit.files, [out])
        else:
            pytest.fail("compaction did not converge")
        assert lv.number_of_sorted_runs() <= trigger
        assert lv.total_file_size() == total
