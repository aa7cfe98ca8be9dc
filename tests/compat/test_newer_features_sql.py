"""Through SQL: a table pypaimon wrote with a newer feature is read right or refused with 0A000.

The engine refuses (``engine.features``); this checks the refusal reaches a SQL user typed, with
SQLSTATE 0A000 and the feature's name, for a read and for a write, and that a table dyntable
reads as Paimon does (row tracking, data evolution) answers a SELECT with pypaimon's rows and
takes dyntable's writes (an UPDATE by row id, appends) as pypaimon reads them.
"""

from __future__ import annotations

import pytest

from sqlext.errors import sqlstate_for
from tests.compat.harness import PyPaimon
from tests.compat.test_newer_features import _rows, pypaimon_writes

pytestmark = [pytest.mark.compat, pytest.mark.spark]


def _fails(session, sql: str, *words: str) -> None:
    with pytest.raises(Exception) as info:  # noqa: B017 - the SQL layer's typed error, checked below
        list(session.execute(sql))
    assert sqlstate_for(info.value) == "0A000", repr(info.value)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_sql_reads_or_refuses_newer_features(pypaimon: PyPaimon, spark, tmp_path):
    from sqlext.session import SqlSession

    warehouse = tmp_path / "wh"
    for feature in ("data_evolution", "row_tracking"):
        pypaimon_writes(warehouse, feature)
    session = SqlSession(spark, warehouse=str(warehouse))
    try:
        rows = session.sql("SELECT id, v FROM db.data_evolution").toArrow()  # every column updated by row id
        assert _rows(rows) == _rows(pypaimon.read(warehouse, "db.data_evolution")) and rows.num_rows == 3
        # as in Paimon, a data-evolution table deletes rows only with deletion vectors
        _fails(session, "DELETE FROM db.data_evolution WHERE id = 1", "data-evolution.enabled",
               "deletion-vectors.enabled")
        # a compaction run as Spark tasks merges the range's two files; pypaimon reads the same rows
        list(session.execute("CALL sys.compact(table => 'db.data_evolution')"))
        assert _rows(session.sql("SELECT id, v FROM db.data_evolution").toArrow()) == _rows(rows)
        assert _rows(pypaimon.read(warehouse, "db.data_evolution")) == _rows(rows)
        assert session.sql("SELECT count(*) FROM db.`data_evolution$files`").collect()[0][0] == 1
        # an UPDATE writes the changed column by row id; pypaimon reads dyntable's rows
        list(session.execute("UPDATE db.data_evolution SET v = concat(v, '!') WHERE id = 1"))
        updated = session.sql("SELECT _ROW_ID, id, v FROM db.data_evolution").toArrow()
        assert sum(v.endswith("!") for v in updated.column("v").to_pylist()) == 1
        theirs = pypaimon.read(warehouse, "db.data_evolution", projection=["_ROW_ID", "id", "v"])
        assert _rows(theirs) == _rows(updated)
        rows = session.sql("SELECT id, v FROM db.row_tracking").toArrow()
        assert _rows(rows) == _rows(pypaimon.read(warehouse, "db.row_tracking"))
        # an INSERT appends with new row ids, which dyntable reads as pypaimon does
        list(session.execute("INSERT INTO db.row_tracking VALUES (9, 'z')"))
        got = pypaimon.read(warehouse, "db.row_tracking", projection=["id", "_ROW_ID"])
        assert sorted(got.column("_ROW_ID").to_pylist()) == list(range(got.num_rows))
        assert 9 in got.column("id").to_pylist()
        ours = session.sql("SELECT _ROW_ID, id FROM db.row_tracking").toArrow()
        assert _rows(ours) == _rows(got.select(["_ROW_ID", "id"]))
        # an overwrite's rows are new rows: new ids after nextRowId, as in Paimon
        n = got.num_rows
        list(session.execute("INSERT OVERWRITE db.row_tracking VALUES (9, 'z')"))
        got = pypaimon.read(warehouse, "db.row_tracking", projection=["id", "_ROW_ID"])
        assert got.column("_ROW_ID").to_pylist() == [n] and got.column("id").to_pylist() == [9]
    finally:
        session.stop_jobs()
