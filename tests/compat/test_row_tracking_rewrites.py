"""Row tracking through dyntable's SQL rewrites, read back by pypaimon 2.1: after UPDATE,
DELETE (deletion vectors), MERGE INTO and ``sys.compact``, pypaimon reads every row with the
``_ROW_ID`` dyntable shows, and its next write continues after the snapshot's ``nextRowId``.

pypaimon 2.1 computes a row's id from its file's ``_FIRST_ROW_ID`` and ignores the ``_ROW_ID``
column a rewritten file holds (Java Paimon reads that column); dyntable sets ``_FIRST_ROW_ID`` on
a rewritten file whose ids are contiguous, which every rewrite here leaves them.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.compat.harness import PyPaimon
from tests.compat.test_newer_features import _rows

pytestmark = [pytest.mark.compat, pytest.mark.spark]


def _theirs(pypaimon: PyPaimon, warehouse, name: str) -> list[tuple]:
    return _rows(pypaimon.read(warehouse, name, projection=["_ROW_ID", "_SEQUENCE_NUMBER", "id", "data"]))


def _ours(session, name: str) -> list[tuple]:
    return _rows(session.sql(f"SELECT _ROW_ID, _SEQUENCE_NUMBER, id, data FROM {name}").toArrow())


@pytest.mark.parametrize("dv", ["false", "true"])
def test_pypaimon_reads_row_ids_after_update_merge_and_compaction(pypaimon: PyPaimon, spark, tmp_path, dv):
    from sqlext.session import SqlSession

    warehouse = tmp_path / "wh"
    session = SqlSession(spark, warehouse=str(warehouse))
    try:
        list(session.execute(
            "CREATE TABLE t (id INT, data INT) TBLPROPERTIES ('row-tracking.enabled' = 'true', "
            f"'deletion-vectors.enabled' = '{dv}', 'compaction.min.file-num' = '2')"))
        list(session.execute("INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id AS data FROM range(1, 4)"))
        list(session.execute("INSERT INTO t VALUES (4, 4)"))
        list(session.execute("UPDATE t SET data = 22 WHERE id = 2"))
        assert _ours(session, "t") == [(0, 1, 1, 1), (1, 3, 2, 22), (2, 1, 3, 3), (3, 2, 4, 4)]
        assert _theirs(pypaimon, warehouse, "default.t") == _ours(session, "t")
        list(session.execute("CREATE TABLE s (id INT, data INT)"))
        list(session.execute("INSERT INTO s VALUES (4, 44), (5, 55)"))
        list(session.execute("MERGE INTO t USING s ON t.id = s.id "
                             "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"))
        merged = [(0, 1, 1, 1), (1, 3, 2, 22), (2, 1, 3, 3), (3, 4, 4, 44), (4, 4, 5, 55)]
        assert _ours(session, "t") == merged
        assert _theirs(pypaimon, warehouse, "default.t") == _ours(session, "t")
        list(session.execute("CALL sys.compact(table => 't', compact_strategy => 'full')"))
        assert _ours(session, "t") == merged
        assert _theirs(pypaimon, warehouse, "default.t") == _ours(session, "t")
        # pypaimon's next write continues after nextRowId
        pypaimon.write(warehouse, "default.t", pa.table({"id": pa.array([6], pa.int32()),
                                                         "data": pa.array([6], pa.int32())}))
        assert [r[0] for r in _ours(session, "t") if r[2] == 6] == [5]
        assert sorted(r[0] for r in _theirs(pypaimon, warehouse, "default.t")) == list(range(6))
    finally:
        session.stop_jobs()
