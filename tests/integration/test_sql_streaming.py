"""Streaming runtime mode through SqlSession (shared SparkSession): continuous INSERT jobs.

``SET 'execution.runtime-mode' = 'streaming'`` turns ``INSERT INTO t SELECT … FROM <managed>``
into a job that reads the source's changes; SHOW JOBS lists it, STOP JOB stops it. Jobs run on a
processing-time trigger, so every wait polls the target with a deadline (never a fixed sleep).
"""

from __future__ import annotations

import time

import pytest

from engine import CommitKind
from engine.commit import CHANGE_TRACKING_PROPERTY
from sqlext.errors import SqlError
from sqlext.parse.names import TableName
from tests.integration.sql_helpers import run

DEADLINE = 60.0  # seconds; a micro-batch takes well under a second once Spark is warm


def contents(session, name):
    t = session.table(TableName.parse(name))
    cols = list(t.schema.field_names)
    return sorted(tuple(r[c] for c in cols) for r in t.to_arrow().to_pylist())


def wait_for(what, condition, job=None):
    """Poll ``condition()`` until true; fail with what was last seen (and the job's error) at the deadline."""
    end = time.monotonic() + DEADLINE
    seen = None
    while time.monotonic() < end:
        seen = condition()
        if seen is True:
            return
        if job is not None and not job.query.isActive:
            pytest.fail(f"job stopped while waiting for {what}: {job.query.exception()}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}; last seen {seen!r}")


def test_continuous_insert_job_show_and_stop(session):
    run(
        session,
        "CREATE TABLE src (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '1', 'changelog-producer' = 'input')",
    )
    run(session, "CREATE TABLE tgt (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    run(session, "INSERT INTO src VALUES (1, 'a'), (2, 'b')")

    run(session, "SET 'execution.runtime-mode' = 'streaming'")
    run(session, "SET 'execution.checkpointing.interval' = '200 ms'")  # a Flink duration
    # (the WHERE keeps the hint inside the query text: see the parser note in the fuzz tests)
    out = run(session, "INSERT INTO tgt SELECT * FROM src /*+ OPTIONS('consumer-id' = 'etl') */ WHERE id > 0")
    (job_id,) = out[0]
    job = session.jobs[job_id]
    assert run(session, "SHOW JOBS")[0][:2] == (job_id, "RUNNING")
    # the job starts with the source's current rows
    wait_for(
        "the initial rows",
        lambda: contents(session, "tgt") == [(1, "a"), (2, "b")] or contents(session, "tgt"),
        job,
    )

    # a bounded INSERT (no streaming source) still runs as a batch write in streaming mode
    run(session, "INSERT INTO src VALUES (3, 'c')")
    run(session, "SET 'execution.runtime-mode' = 'batch'")
    # a change-tracking = false write is an OVERWRITE snapshot a streaming reader skips ...
    run(session, "INSERT INTO src /*+ OPTIONS('change-tracking' = 'false') */ VALUES (5, 'hidden')")
    snap = session.table(TableName.parse("src")).latest_snapshot()
    assert snap.commit_kind is CommitKind.OVERWRITE and snap.properties[CHANGE_TRACKING_PROPERTY] == "false"
    # ... while deletes and later inserts flow through (in commit order, so once 6 is in, 5 was skipped)
    run(session, "DELETE FROM src WHERE id = 1")
    run(session, "INSERT INTO src VALUES (6, 'f')")
    wait_for(
        "the changes",
        lambda: contents(session, "tgt") == [(2, "b"), (3, "c"), (6, "f")] or contents(session, "tgt"),
        job,
    )
    assert (5, "hidden") in contents(session, "src")

    # the source's consumer records how far the job has read
    wait_for(
        "the consumer", lambda: bool(run(session, "SELECT consumer_id, next_snapshot_id FROM src$consumers"))
    )
    ((consumer, next_id),) = run(session, "SELECT consumer_id, next_snapshot_id FROM src$consumers")
    assert (
        consumer == "etl" and 2 <= next_id <= session.table(TableName.parse("src")).latest_snapshot().id + 1
    )

    assert run(session, f"STOP JOB '{job_id}'") is None
    assert not job.query.isActive
    assert run(session, "SHOW JOBS") == [(job_id, "FINISHED", job.statement)]
    run(session, "INSERT INTO src VALUES (7, 'g')")
    time.sleep(1)
    assert (7, "g") not in contents(session, "tgt")  # stopped means stopped
    with pytest.raises(SqlError) as info:
        run(session, "STOP JOB 'no-such-job'")
    assert info.value.sqlstate == "42704" and "no-such-job" in str(info.value)


def test_available_now_job_append_tables_and_retractions(session):
    run(session, "CREATE TABLE a_src (id INT, v STRING)")
    run(session, "CREATE TABLE a_tgt (id INT, v STRING)")
    run(session, "INSERT INTO a_src VALUES (1, 'a'), (2, 'b')")
    run(session, "SET 'execution.runtime-mode' = 'streaming'")
    run(session, "SET 'execution.streaming.trigger' = 'available-now'")
    # a bounded catch-up: the statement returns once every change is in
    (job_id,) = run(session, "INSERT INTO a_tgt SELECT id, upper(v) FROM a_src")[0]
    assert contents(session, "a_tgt") == [(1, "A"), (2, "B")]
    assert run(session, "SHOW JOBS") == [
        (job_id, "FINISHED", "INSERT INTO a_tgt SELECT id, upper(v) FROM a_src")
    ]
    # running the same INSERT again resumes where it stopped: only the new row arrives
    run(session, "INSERT INTO a_src VALUES (3, 'c')")
    run(session, "INSERT INTO a_tgt SELECT id, upper(v) FROM a_src")
    assert contents(session, "a_tgt") == [(1, "A"), (2, "B"), (3, "C")]

    # an append table cannot apply a retraction: the job fails with an error that says so
    run(
        session,
        "CREATE TABLE pk (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '1', 'changelog-producer' = 'input')",
    )
    run(session, "SET 'execution.runtime-mode' = 'batch'")
    run(session, "INSERT INTO pk VALUES (1, 'x')")
    run(session, "DELETE FROM pk WHERE id = 1")
    run(session, "SET 'execution.runtime-mode' = 'streaming'")
    run(session, "SET 'execution.streaming.trigger' = 'available-now'")
    before = contents(session, "a_tgt")
    with pytest.raises(SqlError) as info:
        run(
            session,
            "INSERT INTO a_tgt SELECT * FROM pk /*+ OPTIONS('scan.mode' = 'from-snapshot', "
            "'scan.snapshot-id' = '1') */ WHERE id > 0",
        )
    assert info.value.sqlstate == "P0001" and "cannot apply a change of kind -D" in str(info.value), str(
        info.value
    )
    assert contents(session, "a_tgt") == before  # the failed batch committed nothing
    with pytest.raises(SqlError) as info:
        run(session, "SET 'execution.streaming.trigger' = 'sometimes'; INSERT INTO a_tgt SELECT * FROM a_src")
    assert info.value.sqlstate == "22023"


def test_continuous_insert_must_carry_row_kinds_of_a_keyed_source(session):
    from sqlext.errors import SqlAnalysisError

    run(session, "CREATE TABLE ksrc (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    run(session, "CREATE TABLE kdst (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    run(session, "INSERT INTO ksrc VALUES (1, 'a'), (2, 'b')")
    run(session, "DELETE FROM ksrc WHERE id = 2")
    run(session, "SET 'execution.runtime-mode' = 'streaming'")
    run(session, "SET 'execution.streaming.trigger' = 'available-now'")
    with pytest.raises(SqlAnalysisError) as err:
        run(session, "INSERT INTO kdst SELECT id, upper(v) FROM ksrc")
    assert err.value.sqlstate == "42000" and "rowkind" in str(err.value)
    run(session, "INSERT INTO kdst SELECT rowkind, id, upper(v) FROM ksrc")
    run(session, "SET 'execution.runtime-mode' = 'batch'")
    assert [tuple(r) for r in session.sql("SELECT id, v FROM kdst ORDER BY id").collect()] == [(1, "A")]
