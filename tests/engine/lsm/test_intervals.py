"""Tests for engine.lsm.intervals: key-interval sections and sorted-run packing."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError
from engine.lsm.intervals import partition_by_key_intervals, section_needs_merge, split_sections_by_size
from engine.lsm.levels import SortedRun


@dataclass(frozen=True, eq=False)
class F:
    """Identity-compared file meta (equal ranges must still count as different files)."""

    file_name: str
    min_key: tuple
    max_key: tuple
    file_size: int = 100
    row_count: int = 1
    level: int = 0
    min_sequence_number: int = 0
    max_sequence_number: int = 0


def key_range(f):
    return (f.min_key, f.max_key)


def parse(text: str) -> list[F]:
    return [
        F(f"f{i}", (int(a),), (int(b),)) for i, (a, b) in enumerate(re.findall(r"\[(\d+), (\d+)\]", text))
    ]


def as_ranges(sections: list[list[SortedRun]]) -> list[list[list[tuple[int, int]]]]:
    return [[[(f.min_key[0], f.max_key[0]) for f in run.files] for run in sec] for sec in sections]


def normalized(sections):
    # run order inside a section carries no meaning: compare as sorted lists
    return [sorted(sec) for sec in as_ranges(sections)]


def test_same_min_key():
    out = partition_by_key_intervals(parse("[100, 200], [100, 400], [100, 300], [100, 500]"), key_range)
    assert normalized(out) == [[[(100, 200)], [(100, 300)], [(100, 400)], [(100, 500)]]]


def test_same_max_key():
    out = partition_by_key_intervals(parse("[100, 500], [300, 500], [200, 500], [400, 500]"), key_range)
    assert normalized(out) == [[[(100, 500)], [(200, 500)], [(300, 500)], [(400, 500)]]]


def test_section_partitioning():
    # 0    5    10   15   20   25   30
    # |--------|
    #      |-|
    #          |-----|
    #                 |-----|
    #                 |-----------|
    #                         |-------|
    files = parse("[0, 9], [5, 7], [9, 15], [16, 22], [16, 28], [24, 32]")
    out = partition_by_key_intervals(files, key_range)
    assert normalized(out) == [
        sorted([[(0, 9)], [(5, 7), (9, 15)]]),
        sorted([[(16, 22), (24, 32)], [(16, 28)]]),
    ]
    assert [section_needs_merge(s) for s in out] == [True, True]


def test_disjoint_files_are_raw_sections():
    out = partition_by_key_intervals(parse("[20, 29], [0, 9], [10, 19]"), key_range)
    assert as_ranges(out) == [[[(0, 9)]], [[(10, 19)]], [[(20, 29)]]]
    assert not any(section_needs_merge(s) for s in out)


def test_shared_boundary_key_overlaps():
    out = partition_by_key_intervals(parse("[0, 5], [5, 9]"), key_range)
    assert len(out) == 1 and len(out[0]) == 2


def test_multi_column_keys_and_empty_input():
    files = [F("a", (1, "b"), (1, "z")), F("b", (1, "a"), (1, "a")), F("c", (2, ""), (3, "x"))]
    out = partition_by_key_intervals(files, key_range)
    assert [[[f.file_name for f in r.files] for r in s] for s in out] == [[["b"]], [["a"]], [["c"]]]
    assert partition_by_key_intervals([], key_range) == []


def test_inverted_range_spans_every_key():
    # A file sorted in another key order (pypaimon's NaN first) has min > max in Paimon's order:
    # it overlaps every other file of the bucket, so the merge orders its rows.
    files = [F("a", (1,), (2,)), F("bad", (5,), (3,)), F("c", (7,), (9,))]
    out = partition_by_key_intervals(files, key_range)
    assert len(out) == 1 and sorted(f.file_name for r in out[0] for f in r.files) == ["a", "bad", "c"]
    alone = partition_by_key_intervals([F("bad", (5,), (1,))], key_range)
    assert [[f.file_name for f in r.files] for r in alone[0]] == [["bad"]]


def test_split_sections_by_size():
    files = parse("[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]")
    sizes = [40, 40, 40, 150, 10]
    files = [F(f.file_name, f.min_key, f.max_key, file_size=s) for f, s in zip(files, sizes, strict=True)]
    sections = partition_by_key_intervals(files, key_range)
    groups = split_sections_by_size(sections, 100)
    assert [[[r.total_size for r in s] for s in g] for g in groups] == [[[40], [40]], [[40]], [[150]], [[10]]]
    # concatenated groups give back the sections in order
    assert [s for g in groups for s in g] == sections
    # open-file cost makes small files weigh more
    groups = split_sections_by_size(sections, 100, open_file_cost=60)
    assert [len(g) for g in groups] == [1, 1, 1, 1, 1]
    assert split_sections_by_size([], 10) == []
    with pytest.raises(InvalidArgumentError):
        split_sections_by_size(sections, 0)
    with pytest.raises(InvalidArgumentError):
        split_sections_by_size(sections, 10, open_file_cost=-1)


# ---------------------------------------------------------------- properties

intervals = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 15)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=30,
)


def _overlap(a, b) -> bool:
    return a.min_key <= b.max_key and b.min_key <= a.max_key


def _connected(files) -> bool:
    parent = list(range(len(files)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(files)):
        for j in range(i + 1, len(files)):
            if _overlap(files[i], files[j]):
                parent[find(i)] = find(j)
    return len({find(i) for i in range(len(files))}) == 1


@settings(max_examples=100, deadline=None)
@given(intervals)
def test_partition_invariants(ranges):
    files = [F(f"f{i}", (lo,), (hi,)) for i, (lo, hi) in enumerate(ranges)]
    sections = partition_by_key_intervals(files, key_range)

    # every file exactly once
    out = [f for sec in sections for r in sec for f in r.files]
    assert len(out) == len(files) and {id(f) for f in out} == {id(f) for f in files}

    for sec in sections:
        assert sec and all(r.files for r in sec)
        for r in sec:
            # runs are key-ordered and non-overlapping
            assert r.is_valid(key_range)
        sec_files = [f for r in sec for f in r.files]
        # a section cannot be split into two independent groups
        assert _connected(sec_files)
        # fewest runs: the run count is the largest number of files covering one key
        depth = max(sum(1 for g in sec_files if g.min_key <= f.min_key <= g.max_key) for f in sec_files)
        assert len(sec) == depth
        assert section_needs_merge(sec) == (depth > 1)

    # sections are pairwise disjoint and in key order
    bounds = [
        (min(f.min_key for r in s for f in r.files), max(f.max_key for r in s for f in r.files))
        for s in sections
    ]
    for (_, hi), (lo, _) in zip(bounds, bounds[1:], strict=False):
        assert hi < lo


@settings(max_examples=60, deadline=None)
@given(intervals, st.integers(1, 1000), st.integers(0, 300))
def test_split_invariants(ranges, target, cost):
    files = [F(f"f{i}", (lo,), (hi,), file_size=(lo * 7 + hi) % 200) for i, (lo, hi) in enumerate(ranges)]
    sections = partition_by_key_intervals(files, key_range)
    groups = split_sections_by_size(sections, target, open_file_cost=cost)
    assert [s for g in groups for s in g] == sections
    weight = [sum(max(f.file_size, cost) for r in s for f in r.files) for s in sections]
    i = 0
    for g in groups:
        assert g
        w = weight[i : i + len(g)]
        # a group over target is a single section; otherwise the next section would not fit
        assert sum(w) <= target or len(g) == 1
        nxt = i + len(g)
        if nxt < len(sections):
            assert sum(w) + weight[nxt] > target
        i = nxt
