"""An INSERT reports the rows of its own commit, and a failing compaction after it is not its failure."""

from __future__ import annotations

import pyarrow as pa


def test_rows_inserted_exclude_a_concurrent_writers_commit(session):
    from sqlext.execute.writes import write_frame

    session.sql("CREATE TABLE t (id BIGINT, v STRING)")
    table = session.catalog.get_table("default.t")
    started = table.latest_snapshot()  # the statement starts here ...
    # ... a concurrent writer commits
    table.write_arrow(pa.table({"id": [100, 101, 102], "v": ["x", "y", "z"]}))

    class StartedEarlier:  # the table as the statement saw it when it started
        def __getattr__(self, name):
            return getattr(table, name)

        def latest_snapshot(self):
            return started

    df = session.spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING")
    assert write_frame(session, StartedEarlier(), df, ["id", "v"], overwrite=None) == 2


def test_insert_succeeds_when_the_compaction_after_it_fails(session, monkeypatch):
    import sqlext.execute.writes

    def broken(*_a, **_k):
        raise RuntimeError("executor lost")

    # The commit's post-commit compaction runs its tasks with this runner: every task is lost.
    monkeypatch.setattr(sqlext.execute.writes, "spark_runner", lambda _spark: broken)
    session.sql("CREATE TABLE k (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    session.sql("INSERT INTO k VALUES (1, 'a'), (2, 'b')")  # must not raise: the rows are committed
    assert sorted(tuple(r) for r in session.sql("SELECT id, v FROM k").collect()) == [(1, "a"), (2, "b")]
