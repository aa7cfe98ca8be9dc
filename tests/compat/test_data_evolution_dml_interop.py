"""Data-evolution tables changed by dyntable's SQL row-level statements, read back by pypaimon 2.1:
after MERGE INTO and UPDATE (column files over row-id ranges), DELETE (deletion vectors on each
range's anchor file), a column added and updated, and ``sys.compact``, pypaimon reads every
snapshot with dyntable's rows and the ``_ROW_ID`` dyntable shows, and its next write continues
after the snapshot's ``nextRowId``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import open_catalog
from tests.compat.harness import PyPaimon
from tests.compat.test_newer_features import _rows

pytestmark = [pytest.mark.compat, pytest.mark.spark]

EVOLUTION = ("'row-tracking.enabled' = 'true', 'data-evolution.enabled' = 'true', "
             "'deletion-vectors.enabled' = 'true', 'compaction.min.file-num' = '2'")


def _ours_at(warehouse, sid: int) -> list[tuple]:
    return _rows(open_catalog(str(warehouse)).get_table("default.t").to_arrow(snapshot_id=sid))


def _with_ids(session) -> list[tuple]:
    return _rows(session.sql("SELECT _ROW_ID, * FROM t").toArrow())


def test_pypaimon_reads_every_snapshot_after_merge_update_delete_and_compaction(pypaimon: PyPaimon, spark,
                                                                               tmp_path):
    from sqlext.session import SqlSession

    warehouse = tmp_path / "wh"
    session = SqlSession(spark, warehouse=str(warehouse))

    def run(text: str) -> None:
        list(session.execute(text))

    try:
        run(f"CREATE TABLE t (id INT, b INT, c STRING) TBLPROPERTIES ({EVOLUTION})")
        run("INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, 'x' AS c FROM range(0, 5)")
        run("INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS b, 'y' AS c FROM range(5, 10)")
        run("CREATE TABLE s (id INT, b INT)")
        run("INSERT INTO s VALUES (1, 11), (6, 66), (20, 200)")
        run("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.b = s.b "
            "WHEN NOT MATCHED THEN INSERT (id, b, c) VALUES (s.id, s.b, 'new')")
        run("UPDATE t SET c = 'u' WHERE id IN (2, 7)")
        run("DELETE FROM t WHERE id IN (3, 8)")
        run("ALTER TABLE t ADD COLUMNS (d INT)")
        run("INSERT INTO t VALUES (21, 21, 'z', 210)")
        run("UPDATE t SET d = id * 10 WHERE id < 5")
        expected = [(0, 0, 0, "x", 0), (1, 1, 11, "x", 10), (2, 2, 2, "u", 20), (4, 4, 4, "x", 40),
                    (5, 5, 5, "y", None), (6, 6, 66, "y", None), (7, 7, 7, "u", None), (9, 9, 9, "y", None),
                    (10, 20, 200, "new", None), (11, 21, 21, "z", 210)]
        expected.sort(key=repr)
        assert _with_ids(session) == expected
        theirs = pypaimon.read(warehouse, "default.t", projection=["_ROW_ID", "id", "b", "c", "d"])
        assert _rows(theirs) == expected
        for snap in pypaimon.snapshots(warehouse, "default.t"):
            assert _rows(pypaimon.read(warehouse, "default.t", snapshot_id=snap["id"])) == \
                _ours_at(warehouse, snap["id"]), snap["id"]
        run("CALL sys.compact(table => 't')")
        assert _with_ids(session) == expected
        theirs = pypaimon.read(warehouse, "default.t", projection=["_ROW_ID", "id", "b", "c", "d"])
        assert _rows(theirs) == expected
        pypaimon.write(warehouse, "default.t", pa.table({
            "id": pa.array([30], pa.int32()), "b": pa.array([3], pa.int32()), "c": ["p"],
            "d": pa.array([None], pa.int32())}))
        assert [r[0] for r in _with_ids(session) if r[1] == 30] == [12]
    finally:
        session.stop_jobs()
