"""Row tracking (``row-tracking.enabled``, Paimon 1.3) on appends: dyntable's appended files take
their first row ids at commit and the snapshot its ``nextRowId``, as Paimon's commit assigns them,
so pypaimon 2.1 reads a distinct ``_ROW_ID`` for every row, before and after its own writes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.errors import UnsupportedTableError
from tests.compat.harness import PyPaimon

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}, schema=ROWS)


def _row_ids(pypaimon: PyPaimon, warehouse, name: str) -> dict[int, int]:
    got = pypaimon.read(warehouse, name, projection=["id", "_ROW_ID"])
    return dict(zip(got.column("_ROW_ID").to_pylist(), got.column("id").to_pylist(), strict=True))


def test_appends_assign_row_ids_pypaimon_reads_them(pypaimon: PyPaimon, catalog, warehouse):
    t = catalog.create_table("db.rt", ROWS, options={"row-tracking.enabled": "true"})
    t.write_arrow(_rows(range(0, 5)))
    t.write_arrow(_rows(range(5, 8)))
    t = t.refresh()
    assert [s.next_row_id for s in t.snapshots()] == [5, 8]
    assert _row_ids(pypaimon, warehouse, "db.rt") == {i: i for i in range(8)}
    pypaimon.write(warehouse, "db.rt", _rows(range(8, 10)))  # pypaimon continues from nextRowId
    t = t.refresh()
    t.write_arrow(_rows(range(10, 13)))
    ids = _row_ids(pypaimon, warehouse, "db.rt")
    assert sorted(ids) == list(range(13)) and sorted(ids.values()) == list(range(13))
    assert t.refresh().latest_snapshot().next_row_id == 13
    # a compaction keeps every row's id (written into the new file): pypaimon reads the same ids
    before = ids
    t.refresh().compact(full=True)
    t = t.refresh()
    assert t.latest_snapshot().commit_kind.name == "COMPACT"
    assert len([f for s in t.new_read_builder().new_scan().plan().splits for f in s.files]) == 1
    assert _row_ids(pypaimon, warehouse, "db.rt") == before
    # an overwrite's rows are new rows: new ids, after nextRowId, as in Paimon
    t.write_arrow(_rows([1, 2]), overwrite=True)
    assert _row_ids(pypaimon, warehouse, "db.rt") == {13: 1, 14: 2}
    assert t.refresh().latest_snapshot().next_row_id == 15


def test_merge_branch_of_a_row_tracking_table_is_refused(catalog):
    """The merged files would carry row ids the target may have given to its own rows."""
    from engine.ops.merge_branch import merge_branch

    t = catalog.create_table("db.rtb", ROWS, options={"row-tracking.enabled": "true"})
    t.write_arrow(_rows(range(3)))
    t.refs.tags.create("base", 1)
    t.refs.branches.create("dev", from_tag="base")
    catalog.get_table("db.rtb$branch_dev").write_arrow(_rows([7]))
    t.write_arrow(_rows([8]))
    with pytest.raises(UnsupportedTableError, match="row-tracking.enabled"):
        merge_branch(t.store, "dev")
    assert sorted(t.refresh().to_arrow().column("id").to_pylist()) == [0, 1, 2, 8]
