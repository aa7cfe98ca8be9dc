"""Paimon 2.0's RowTrackingTestBase (paimon-spark-ut) translated: row-tracking tables
(``row-tracking.enabled``) read and written through dyntable's SQL, with Paimon's expected
``_ROW_ID`` / ``_SEQUENCE_NUMBER`` values.

Not translated (they need something a Spark-only user does not have, or belong elsewhere):
* the ``Data Evolution:`` cases (``data-evolution.enabled``): their own suite;
* ``query row_tracking system table with filter pushdown``'s check of the scan description (an
  internal of Paimon's connector); its rows are checked here.
"""

from __future__ import annotations

import pytest


def sql(session, text):
    """The rows of the last statement of ``text`` as tuples (Spark's order)."""
    frame = list(session.execute(text))[-1].dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


RT = "TBLPROPERTIES ('row-tracking.enabled' = 'true')"


def test_read_row_tracking(session):
    sql(session, f"CREATE TABLE t (id INT, data STRING) {RT}")
    sql(session, "INSERT INTO t VALUES (11, 'a'), (22, 'b')")
    assert sorted(sql(session, "SELECT *, _ROW_ID, _SEQUENCE_NUMBER FROM t")) == [(11, "a", 0, 1), (22, "b", 1, 1)]
    assert sorted(sql(session, "SELECT _ROW_ID, data, _SEQUENCE_NUMBER, id FROM t")) == [
        (0, "a", 1, 11), (1, "b", 1, 22)]
    # hidden from a star, qualified or not
    assert sorted(sql(session, "SELECT * FROM t")) == [(11, "a"), (22, "b")]
    assert sorted(sql(session, "SELECT x.*, x._ROW_ID FROM t x")) == [(11, "a", 0), (22, "b", 1)]


def test_row_tracking_system_table_with_filter(session):
    sql(session, "CREATE TABLE t (a INT, b INT) TBLPROPERTIES ('row-tracking.enabled' = 'true')")
    sql(session, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)")
    assert sql(session, "SELECT a, b FROM `t$row_tracking` WHERE a > 1 ORDER BY a") == [(2, 20), (3, 30)]
    assert sql(session, "SELECT * FROM `t$row_tracking` ORDER BY a") == [(1, 10, 0, 1), (2, 20, 1, 1), (3, 30, 2, 1)]
