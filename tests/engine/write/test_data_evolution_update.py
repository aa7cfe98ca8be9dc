"""Row-level changes of a data-evolution table by row id, without a JVM (``RowIdChanges``,
``ColumnUpdateWriter``): a column file per row-id range holding an updated row, for the whole
range, filled where rows were deleted; deletions on the range's anchor; one snapshot whose
sequence number every row of an updated range reads; and a conflict, nothing committed, when a
compaction merged the ranges after the change read them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engine import ColumnUpdateWriter, RowIdChanges
from engine.errors import CommitConflictError, InvalidArgumentError, UnsupportedTableError
from engine.meta.row_ranges import group_by_row_id

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32())])
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _rows(ids, vs, ns) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.string()),
                     "n": pa.array(ns, pa.int32())}, schema=ROWS)


def _sorted(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


def _table(catalog, **options):
    t = catalog.create_table("db.de", ROWS, options={**EVOLUTION, **options})
    t.write_arrow(_rows([1, 2, 3], ["a", "b", "c"], [10, 20, 30]))  # row ids 0-2
    t.write_arrow(_rows([4, 5], ["d", "e"], [40, 50]))  # row ids 3-4
    return t


def _update(t, changes: RowIdChanges, row_ids: list[int], values: dict[str, list]) -> list:
    """One column file per range of ``row_ids`` (all rows of each range given, as a reader saw them)."""
    writer = ColumnUpdateWriter.for_task(t.store, list(values), "job-1", 0)
    ids = np.array(row_ids, dtype=np.int64)
    idx = np.searchsorted([r.first_row_id for r in changes.ranges], ids, side="right") - 1
    out = []
    for i in np.unique(idx):
        mask = idx == i
        data = pa.table({c: pa.array(np.array(v, dtype=object)[mask].tolist(), ROWS.field(c).type)
                         for c, v in values.items()})
        out.append(writer.write(changes.ranges[int(i)], ids[mask], data))
    return out


def test_ranges_and_a_column_file_over_one_range(catalog):
    t = _table(catalog)
    changes = RowIdChanges(t.store, t.latest_snapshot())
    assert [(r.first_row_id, r.row_count) for r in changes.ranges] == [(0, 3), (3, 2)]
    messages = _update(t, changes, [0, 1, 2], {"v": ["a", "B", "c"]})
    (meta,) = messages[0].new_files
    assert (meta.first_row_id, meta.row_count, meta.write_cols) == (0, 3, ("v",))
    result = changes.commit(messages)
    sid = result.snapshot_ids[0]
    assert _sorted(t.to_arrow()) == [(1, "a", 10), (2, "B", 20), (3, "c", 30), (4, "d", 40), (5, "e", 50)]
    seq = t.to_arrow(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"])
    # every row of the updated range reads the commit's sequence number; the other range keeps its own
    assert _sorted(seq) == [(1, 0, sid), (2, 1, sid), (3, 2, sid), (4, 3, 2), (5, 4, 2)]
    files = [e.file for e in t.store.live_entries(t.latest_snapshot())]
    assert [len(g) for g in group_by_row_id(files)] == [2, 1]  # nothing rewritten


def test_deleted_rows_are_marked_on_the_anchor_and_filled_in_column_files(catalog):
    t = _table(catalog, **{"deletion-vectors.enabled": "true"})
    changes = RowIdChanges(t.store, t.latest_snapshot())
    assert changes.delete(np.array([1, 4])) == 2
    changes.commit()
    assert _sorted(t.to_arrow()) == [(1, "a", 10), (3, "c", 30), (4, "d", 40)]
    # the next update reads rows 0 and 2 of the first range: row 1 is filled, still hidden
    changes = RowIdChanges(t.store, t.latest_snapshot())
    changes.commit(_update(t, changes, [0, 2, 3], {"n": [11, 33, 44]}))
    assert _sorted(t.to_arrow()) == [(1, "a", 11), (3, "c", 33), (4, "d", 44)]
    t.compact(full=True)
    assert _sorted(t.to_arrow()) == [(1, "a", 11), (3, "c", 33), (4, "d", 44)]


def test_delete_needs_deletion_vectors(catalog):
    t = _table(catalog)
    with pytest.raises(UnsupportedTableError, match="deletion-vectors.enabled"):
        RowIdChanges(t.store, t.latest_snapshot()).delete(np.array([0]))


def test_rows_outside_the_range_or_out_of_order_are_refused(catalog):
    t = _table(catalog, **{"deletion-vectors.enabled": "true"})
    changes = RowIdChanges(t.store, t.latest_snapshot())
    writer = ColumnUpdateWriter.for_task(t.store, ["n"], "job-2", 0)
    one = pa.table({"n": pa.array([1, 2], pa.int32())})
    with pytest.raises(InvalidArgumentError, match="in row-id order"):
        writer.write(changes.ranges[0], np.array([2, 1]), one)
    with pytest.raises(InvalidArgumentError, match="in row-id order"):
        writer.write(changes.ranges[1], np.array([4, 5]), one)
    with pytest.raises(InvalidArgumentError, match="not a row"):
        changes.delete(np.array([7]))


def test_a_compaction_since_the_read_is_a_conflict(catalog):
    t = _table(catalog, **{"compaction.min.file-num": "2"})
    changes = RowIdChanges(t.store, t.latest_snapshot())
    messages = _update(t, changes, [0, 1, 2], {"v": ["x", "y", "z"]})
    t.compact(full=True)  # the two ranges become one file of rows 0-4
    before = t.latest_snapshot().id
    with pytest.raises(CommitConflictError, match="no longer one row-id range"):
        changes.commit(messages)
    assert t.latest_snapshot().id == before
    assert _sorted(t.to_arrow()) == [(1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "d", 40), (5, "e", 50)]
