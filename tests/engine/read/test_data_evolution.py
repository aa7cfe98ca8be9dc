"""Data-evolution tables without a JVM or pypaimon: reads, pruning, counts, compaction, refusals.

dyntable writes no partial-column files, so the updates here are built as pypaimon's
``update_by_arrow_with_row_id`` leaves them: a Parquet file holding only the rewritten columns for
the whole row-id range of the file it updates, committed with that range's first row id, a newer
sequence number and its ``_WRITE_COLS``. pypaimon-written tables are checked against pypaimon's
own reads in ``tests/compat/test_data_evolution_interop.py``.
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pytest

from engine.commit_messages import CommitMessage
from engine.errors import UnsupportedTableError
from engine.meta.row_ranges import group_by_row_id
from engine.scan.metadata_aggregate import MetadataAggregate, aggregate_splits
from engine.scan.predicate import equal
from engine.write.file_writer import DataFileWriter

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32())])
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _rows(ids, vs, ns) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.string()),
                     "n": pa.array(ns, pa.int32())}, schema=ROWS)


def _update(table, first_row_id: int, columns: dict[str, list], sequence: int) -> None:
    """Commit a file holding only ``columns`` for the rows from ``first_row_id`` (pypaimon's layout)."""
    store = table.store
    fields = [store.schema.field(c) for c in columns]
    writer = DataFileWriter(store, store.partition_dir(()), 0)
    writer.fields = fields
    data = pa.table({c: pa.array(v, ROWS.field(c).type) for c, v in columns.items()})
    (meta,) = writer.write_append(data, 0)
    meta = replace(meta, first_row_id=first_row_id, write_cols=tuple(columns), min_sequence_number=sequence,
                   max_sequence_number=sequence)
    split = table.new_scan().plan().splits[0]
    message = CommitMessage(split.partition, split.bucket, split.total_buckets, new_files=(meta,))
    table.new_commit().commit([message])


def _sorted(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


@pytest.fixture
def evolved(catalog):
    """Rows 0-2 and 3-4 in two files; v of rows 0-2 rewritten, then n of rows 0-2, then v again."""
    t = catalog.create_table("db.de", ROWS, options=EVOLUTION)
    t.write_arrow(_rows([1, 2, 3], ["a", "b", "c"], [10, 20, 30]))
    t.write_arrow(_rows([4, 5], ["d", "e"], [40, 50]))
    _update(t, 0, {"v": ["A", "b", "C"]}, 10)
    _update(t, 0, {"n": [11, 20, 31]}, 11)
    _update(t, 3, {"v": ["D", "E"]}, 12)
    return t.refresh()


def test_each_column_comes_from_the_newest_file_holding_it(evolved):
    expected = [(1, "A", 11), (2, "b", 20), (3, "C", 31), (4, "D", 40), (5, "E", 50)]
    assert _sorted(evolved.to_arrow()) == expected
    assert _sorted(evolved.to_arrow(columns=["n"])) == [(10 + 1,), (20,), (31,), (40,), (50,)]
    assert _sorted(evolved.to_arrow(snapshot_id=2)) == [(1, "a", 10), (2, "b", 20), (3, "c", 30),
                                                        (4, "d", 40), (5, "e", 50)]
    assert _sorted(evolved.to_arrow(snapshot_id=3)) == [(1, "A", 10), (2, "b", 20), (3, "C", 30),
                                                        (4, "d", 40), (5, "e", 50)]


def test_filters_see_the_assembled_rows_not_a_files_statistics(evolved):
    # The base file's statistics say v in ['a', 'c']; the row with v = 'C' must still be found.
    assert _sorted(evolved.to_arrow(filter=equal("v", "C"))) == [(3, "C", 31)]
    assert _sorted(evolved.to_arrow(filter=equal("v", "a"))) == []
    assert _sorted(evolved.to_arrow(filter=equal("n", 11))) == [(1, "A", 11)]


def test_counts_and_bounds_are_not_answered_from_metadata_of_overlapping_files(evolved):
    plan = evolved.new_scan().plan()
    assert not any(s.raw_convertible for s in plan.splits)
    assert aggregate_splits(evolved.store, plan.splits, [MetadataAggregate("count")]) is None
    assert aggregate_splits(evolved.store, plan.splits, [MetadataAggregate("max", "n")]) is None


def test_compaction_merges_each_range_into_one_file_keeping_row_ids(evolved):
    before = _sorted(evolved.to_arrow())
    evolved.compact(full=True)
    t = evolved.refresh()
    assert _sorted(t.to_arrow()) == before
    files = [f for s in t.new_scan().plan().splits for f in s.files]
    assert [(f.first_row_id, f.row_count, f.write_cols) for f in files] == [(0, 5, None)]
    assert files[0].max_sequence_number == 12
    plan = t.new_scan().plan()
    assert aggregate_splits(t.store, plan.splits, [MetadataAggregate("count")]) == (5,)
    t.write_arrow(_rows([6], ["f"], [60]))  # the next rows continue after the kept ids
    t = t.refresh()
    assert sorted(f.first_row_id for s in t.new_scan().plan().splits for f in s.files) == [0, 5]
    assert t.latest_snapshot().next_row_id == 6


def test_a_compaction_of_only_whole_files_below_the_threshold_does_nothing(catalog):
    t = catalog.create_table("db.de", ROWS, options=EVOLUTION)
    t.write_arrow(_rows([1], ["a"], [1]))
    t.write_arrow(_rows([2], ["b"], [2]))
    snapshot = t.latest_snapshot()
    t.compact(full=False)  # 2 files < compaction.min.file-num
    assert t.refresh().latest_snapshot() == snapshot
    t.compact(full=True)
    groups = group_by_row_id([f for s in t.refresh().new_scan().plan().splits for f in s.files])
    assert [[f.row_count for f in g] for g in groups] == [[2]]


def test_refusals_keep_the_table_as_it_was(evolved, catalog):
    snapshot = evolved.latest_snapshot()
    for attempt in (lambda: evolved.write_arrow(_rows([9], ["z"], [9]), overwrite=True),
                    lambda: evolved.new_read_builder().new_stream_scan(),
                    lambda: evolved.new_read_builder().new_incremental("1,3")):
        with pytest.raises(UnsupportedTableError, match="data-evolution.enabled"):
            attempt()
    assert evolved.refresh().latest_snapshot() == snapshot
    with pytest.raises(UnsupportedTableError, match="data-evolution.enabled"):
        evolved.compact(full=True, order_strategy="order", order_by=["id"])  # a sort renumbers rows


def test_data_evolution_needs_row_tracking(catalog):
    from engine.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="row-tracking.enabled"):
        catalog.create_table("db.x", ROWS, options={"data-evolution.enabled": "true"})


def test_compaction_moves_each_groups_deletion_vector_onto_the_new_file(catalog):
    """A row deleted by row id (its group's anchor's DV, as pypaimon writes it) stays deleted."""
    import numpy as np

    from engine.append_deletions import AppendDeletionCommit
    from engine.meta.snapshot import CommitKind

    t = catalog.create_table("db.dv", ROWS, options={**EVOLUTION, "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows([1, 2, 3], ["a", "b", "c"], [10, 20, 30]))
    t.write_arrow(_rows([4, 5], ["d", "e"], [40, 50]))
    _update(t, 3, {"v": ["D", "E"]}, 10)
    t = t.refresh()
    anchors = {f.first_row_id: f.file_name for s in t.new_scan().plan().splits for f in s.files
               if f.write_cols is None}
    dv = AppendDeletionCommit(t.store, t.latest_snapshot())
    dv.delete({anchors[0]: np.array([1]), anchors[3]: np.array([0])})  # ids 2 and 4
    # (the DVs pypaimon's delete_by_row_id leaves; dyntable's own DELETE of such a table is refused,
    # so they are published as a commit that changes no data file)
    dv.commit(kind=CommitKind.COMPACT)
    t = t.refresh()
    expected = [(1, "a", 10), (3, "c", 30), (5, "E", 50)]
    assert _sorted(t.to_arrow()) == expected
    t.compact(full=True)
    t = t.refresh()
    (split,) = t.new_scan().plan().splits
    assert [(f.first_row_id, f.row_count) for f in split.files] == [(0, 5)]
    assert [d.cardinality for d in split.deletion_files] == [2]
    assert _sorted(t.to_arrow()) == expected
