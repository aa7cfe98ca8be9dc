"""engine.meta.row_ranges: data evolution's row-id groups, their anchor, and the rewrite check."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.meta.manifest import DataFileMeta, SimpleStats
from engine.meta.row_ranges import (
    anchor_file,
    check_ranges_kept,
    group_by_row_id,
    is_data_evolution,
    row_range,
)


def _file(
    name: str, first: int | None, rows: int, seq: int, cols: tuple[str, ...] | None = None
) -> DataFileMeta:
    meta = DataFileMeta(
        file_name=name, file_size=10, row_count=rows, min_key=b"", max_key=b"", key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY, min_sequence_number=seq, max_sequence_number=seq, schema_id=0, level=0,
    )
    return replace(meta, first_row_id=first, write_cols=cols)


def test_groups_are_in_row_id_order_and_newest_first():
    base, upd1, upd2 = _file("a", 0, 3, 1), _file("b", 0, 3, 3, ("v",)), _file("c", 0, 3, 2, ("n",))
    later = _file("d", 3, 2, 4)
    groups = group_by_row_id([later, base, upd1, upd2])
    assert [[f.file_name for f in g] for g in groups] == [["b", "c", "a"], ["d"]]
    assert anchor_file(groups[0]).file_name == "a"
    assert row_range(later) == (3, 4)


def test_equal_sequence_numbers_keep_the_given_order():
    one, two = _file("x", 0, 2, 5, ("v",)), _file("y", 0, 2, 5, ("n",))
    assert [f.file_name for f in group_by_row_id([two, one])[0]] == ["y", "x"]


def test_files_overlapping_without_the_same_range_are_corrupt():
    with pytest.raises(CorruptMetadataError, match="do not span the same rows"):
        group_by_row_id([_file("a", 0, 3, 1), _file("b", 2, 3, 2)])


def test_a_file_without_a_first_row_id_is_corrupt():
    with pytest.raises(CorruptMetadataError, match="no first row id"):
        group_by_row_id([_file("a", None, 3, 1)])


def test_a_rewrite_must_keep_every_row_id():
    before = [_file("a", 0, 3, 1), _file("b", 0, 3, 2, ("v",)), _file("c", 3, 2, 3)]
    check_ranges_kept(before, [_file("m", 0, 5, 3)], "t")  # adjacent ranges merged: kept
    check_ranges_kept(before, [_file("m", 0, 3, 2), _file("n", 3, 2, 3)], "t")
    with pytest.raises(InvalidArgumentError, match="keep every row id"):
        check_ranges_kept(before, [_file("m", 0, 4, 3)], "t")
    with pytest.raises(InvalidArgumentError, match="overlap"):
        check_ranges_kept(before, [_file("m", 0, 5, 3), _file("n", 3, 2, 3)], "t")
    with pytest.raises(InvalidArgumentError, match="whole rows"):
        check_ranges_kept(before, [_file("m", 0, 5, 3, ("v",))], "t")
    with pytest.raises(InvalidArgumentError, match="whole rows"):
        check_ranges_kept(before, [_file("m", None, 5, 3)], "t")


def test_the_option():
    assert is_data_evolution({"data-evolution.enabled": "TRUE"})
    assert not is_data_evolution({"row-tracking.enabled": "true"})
