"""Tests for engine.lsm.levels: level/sorted-run arrangement and immutable updates."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError
from engine.lsm.levels import Levels, SortedRun


@dataclass(frozen=True)
class F:
    file_name: str
    file_size: int = 1
    row_count: int = 1
    level: int = 0
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    min_key: tuple = (0,)
    max_key: tuple = (0,)


def key_range(f):
    return (f.min_key, f.max_key)


def names(files):
    return [f.file_name for f in files]


def test_sorted_run_sizes_and_validity():
    run = SortedRun.from_sorted(
        [
            F("a", file_size=10, row_count=3, min_key=(1,), max_key=(4,)),
            F("b", file_size=5, row_count=2, min_key=(5,), max_key=(9,)),
        ]
    )
    assert run.total_size == 15
    assert run.row_count == 5
    assert run.is_valid(key_range)
    assert not run.is_empty()
    assert SortedRun.empty().is_empty() and SortedRun.empty().total_size == 0
    # a shared boundary key is an overlap (ranges are inclusive)
    touching = SortedRun.from_sorted([F("a", min_key=(1,), max_key=(5,)), F("b", min_key=(5,), max_key=(9,))])
    assert not touching.is_valid(key_range)
    unordered = SortedRun.from_sorted(
        [F("b", min_key=(5,), max_key=(9,)), F("a", min_key=(1,), max_key=(4,))]
    )
    assert not unordered.is_valid(key_range)
    assert SortedRun.from_unsorted(unordered.files, key_range).is_valid(key_range)


def test_level0_newest_first_ties_by_name():
    files = [
        F("c", max_sequence_number=5),
        F("a", max_sequence_number=9),
        F("z", max_sequence_number=5),
        F("b", max_sequence_number=5),
    ]
    lv = Levels(files, 3)
    assert names(lv.level0) == ["a", "b", "c", "z"]
    runs = lv.level_sorted_runs()
    assert [lvl for lvl, _ in runs] == [0, 0, 0, 0]
    assert [names(r.files) for _, r in runs] == [["a"], ["b"], ["c"], ["z"]]


def test_universal_order_and_counts():
    files = [
        F("l3b", level=3, min_key=(50,), max_key=(60,)),
        F("l3a", level=3, min_key=(1,), max_key=(40,)),
        F("l1", level=1, min_key=(0,), max_key=(100,)),
        F("old0", level=0, max_sequence_number=1),
        F("new0", level=0, max_sequence_number=7),
    ]
    lv = Levels(files, 5, key_range=key_range)
    runs = lv.level_sorted_runs()
    assert [lvl for lvl, _ in runs] == [0, 0, 1, 3]
    assert [names(r.files) for _, r in runs] == [["new0"], ["old0"], ["l1"], ["l3a", "l3b"]]
    assert lv.number_of_sorted_runs() == 4
    assert lv.max_level == 4 and lv.num_levels == 5
    assert lv.non_empty_highest_level() == 3
    assert lv.run_of_level(2).is_empty()
    assert names(lv.run_of_level(3).files) == ["l3a", "l3b"]
    assert names(lv.all_files()) == ["new0", "old0", "l1", "l3a", "l3b"]
    assert lv.total_file_size() == 5
    with pytest.raises(InvalidArgumentError):
        lv.run_of_level(0)
    with pytest.raises(InvalidArgumentError):
        lv.run_of_level(5)


def test_level_order_without_key_range_keeps_input_order():
    lv = Levels([F("x", level=2), F("a", level=2)], 3)
    assert names(lv.run_of_level(2).files) == ["x", "a"]


def test_non_empty_highest_level():
    assert Levels([], 3).non_empty_highest_level() == -1
    assert Levels([F("a")], 3).non_empty_highest_level() == 0
    assert Levels([F("a"), F("b", level=2)], 3).non_empty_highest_level() == 2
    assert Levels([], 3).number_of_sorted_runs() == 0
    assert Levels([], 3).level_sorted_runs() == []


def test_invalid_inputs():
    with pytest.raises(InvalidArgumentError, match="num-levels"):
        Levels([], 1)
    with pytest.raises(InvalidArgumentError, match="level 3"):
        Levels([F("a", level=3)], 3)
    with pytest.raises(InvalidArgumentError):
        Levels([F("a", level=-1)], 3)
    with pytest.raises(InvalidArgumentError, match="twice"):
        Levels([F("a"), F("a", level=1)], 3)


def test_update_compaction_and_upgrade():
    l0a = F("l0a", max_sequence_number=3)
    l0b = F("l0b", max_sequence_number=4)
    l1 = F("l1", level=1)
    l2 = F("l2", level=2)
    lv = Levels([l0a, l0b, l1, l2], 3)
    merged = F("m", level=2, file_size=7)
    after = lv.update([l0a, l0b, l1, l2], [merged])
    assert names(after.all_files()) == ["m"]
    assert after.number_of_sorted_runs() == 1
    # the original value is untouched
    assert lv.number_of_sorted_runs() == 4

    # upgrade: same file name moves from level 0 to level 1 without rewrite
    up = lv.update([l0a], [replace(l0a, level=1)])
    assert names(up.level0) == ["l0b"]
    assert names(up.run_of_level(1).files) == ["l1", "l0a"]

    # a flush adds a level-0 file
    flushed = lv.update([], [F("l0c", max_sequence_number=9)])
    assert names(flushed.level0) == ["l0c", "l0b", "l0a"]


def test_update_rejects_unknown_and_bad_files():
    lv = Levels([F("a")], 3)
    with pytest.raises(InvalidArgumentError, match="not in this bucket"):
        lv.update([F("ghost")], [])
    with pytest.raises(InvalidArgumentError):
        lv.update([], [F("b", level=7)])
    with pytest.raises(InvalidArgumentError, match="twice"):
        lv.update([], [F("a", level=1)])


def test_update_with_key_range_sorts_level():
    lv = Levels([F("b", level=1, min_key=(5,), max_key=(9,))], 3, key_range=key_range)
    nxt = lv.update([], [F("a", level=1, min_key=(1,), max_key=(3,))])
    assert names(nxt.run_of_level(1).files) == ["a", "b"]
    assert nxt.run_of_level(1).is_valid(key_range)


@st.composite
def bucket_files(draw):
    num_levels = draw(st.integers(2, 6))
    n = draw(st.integers(0, 25))
    files = [
        F(
            f"f{i}",
            file_size=draw(st.integers(0, 100)),
            level=draw(st.integers(0, num_levels - 1)),
            max_sequence_number=draw(st.integers(0, 5)),
        )
        for i in range(n)
    ]
    return num_levels, files


@settings(max_examples=80, deadline=None)
@given(bucket_files(), st.data())
def test_levels_properties(case, data):
    num_levels, files = case
    lv = Levels(files, num_levels)
    runs = lv.level_sorted_runs()
    # every file exactly once
    assert sorted(names(lv.all_files())) == sorted(names(files))
    level0 = [f for f in files if f.level == 0]
    nonempty = {f.level for f in files if f.level > 0}
    assert lv.number_of_sorted_runs() == len(level0) + len(nonempty) == len(runs)
    # universal order: level-0 runs first (newest first), then strictly increasing levels
    levels = [lvl for lvl, _ in runs]
    assert levels[: len(level0)] == [0] * len(level0)
    assert levels[len(level0) :] == sorted(nonempty)
    seqs = [r.files[0].max_sequence_number for lvl, r in runs if lvl == 0]
    assert seqs == sorted(seqs, reverse=True)
    assert all(f.level == lvl for lvl, r in runs for f in r.files)
    assert lv.non_empty_highest_level() == max((f.level for f in files), default=-1)

    # update: remove a subset, add new files
    before = data.draw(st.lists(st.sampled_from(files), unique_by=lambda f: f.file_name)) if files else []
    after = [
        F(f"new{i}", level=data.draw(st.integers(0, num_levels - 1)))
        for i in range(data.draw(st.integers(0, 3)))
    ]
    nxt = lv.update(before, after)
    expect = (set(names(files)) - set(names(before))) | set(names(after))
    assert sorted(names(nxt.all_files())) == sorted(expect)
    assert sorted(names(lv.all_files())) == sorted(names(files))
