"""dyntable-server answers SELECT count(*) from manifests too: the same session path as SQL
(sqlext.execute.metadata_answers), checked over the wire.

The server streams every result to its client through Spark (``sqlext.server.results``), so the
one-row answer still crosses in one single-stage job; what it no longer runs is the aggregate's
scan and shuffle (a second stage)."""

from __future__ import annotations

from tests.integration.server.test_server import _connect, _execute, _jobs, _ok, _result, _server_op


def test_count_and_max_answered_without_a_spark_job(none_server, spark):
    conn = _connect(none_server)
    try:
        cur = conn.cursor()
        cur.execute("CREATE DATABASE IF NOT EXISTS meta_answers")
        cur.execute("CREATE TABLE meta_answers.t (id BIGINT, d DATE) PARTITIONED BY (p STRING)")
        cur.execute("INSERT INTO meta_answers.t VALUES (1, DATE'2025-01-01', 'a'), (7, null, 'b'),"
                    " (3, null, 'b')")
        query = "SELECT count(*) AS n, max(id) FROM meta_answers.t WHERE "
        handle = _ok(_execute(conn, query + "p = 'b'")).operationHandle
        group = _server_op(none_server, conn, handle).group
        assert _result(conn, handle) == {"n": [2], "max(id)": [7]}
        jobs = _jobs(spark, group)
        assert len(jobs) == 1 and len(list(jobs[0].stageIds)) == 1
        # the same statement through Spark: the aggregate's own stages
        handle = _ok(_execute(conn, query + "id > 0")).operationHandle
        group = _server_op(none_server, conn, handle).group
        assert _result(conn, handle) == {"n": [3], "max(id)": [7]}
        assert sum(len(list(j.stageIds)) for j in _jobs(spark, group)) > 1
    finally:
        conn.close()
