"""CALL sys.remove_orphan_files / sys.expire_partitions and t$maintenance_log through SqlSession.

Runs on the shared SparkSession.
"""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from sqlext.errors import SqlError
from sqlext.parse.names import TableName
from tests.integration.sql_helpers import run

TWO_DAYS = 2 * 86_400


def age(root: str) -> None:
    when = time.time() - TWO_DAYS
    for d, _, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(d, f), (when, when))


def plant(path: str, size: int) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x" * size)
    return path


def test_remove_orphan_files_for_a_table_and_a_database(session):
    session.sql("CREATE DATABASE IF NOT EXISTS cl")
    session.sql("CREATE TABLE cl.a (id INT, dt STRING) PARTITIONED BY (dt)")
    session.sql("CREATE TABLE cl.b (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    session.sql("INSERT INTO cl.a VALUES (1, 'x'), (2, 'y')")
    session.sql("INSERT INTO cl.b VALUES (1, 'one')")
    a = session.table(TableName.parse("cl.a"))
    b = session.table(TableName.parse("cl.b"))
    plant(os.path.join(a.path, "dt=x", "bucket-0", "data-dead-0.parquet"), 100)
    plant(os.path.join(b.path, "manifest", "manifest-dead-0"), 11)
    age(a.path)
    age(b.path)
    assert run(session, "CALL sys.remove_orphan_files(table => 'cl.a', dry_run => true)") == [(1, 100)]
    assert run(session, "CALL sys.remove_orphan_files(table => 'cl.*', dry_run => true)") == [(2, 111)]
    assert run(session, "CALL sys.remove_orphan_files('cl.*')") == [(2, 111)]
    assert run(session, "CALL sys.remove_orphan_files(table => 'cl.*')") == [(0, 0)]
    assert sorted(run(session, "SELECT id FROM cl.a")) == [(1,), (2,)]
    assert run(session, "SELECT v FROM cl.b") == [("one",)]
    rows = run(
        session,
        "SELECT procedure, trigger, branch, dry_run, deleted_files, deleted_bytes, error "
        "FROM cl.a$maintenance_log ORDER BY started_at, dry_run DESC",
    )
    assert [r[3:6] for r in rows] == [(True, 1, 100), (True, 1, 100), (False, 1, 100), (False, 0, 0)]
    assert {r[:3] for r in rows} == {("remove_orphan_files", "called", "main")} and all(
        r[6] is None for r in rows
    )
    star = run(session, "SELECT * FROM cl.b$maintenance_log")
    assert len(star) == 3 and len(star[0]) == 10


def test_orphan_cutoff_errors(session):
    session.sql("CREATE TABLE cut (id INT)")
    session.sql("INSERT INTO cut VALUES (1)")
    with pytest.raises(SqlError, match="less than one hour"):
        list(
            session.execute(
                f"CALL sys.remove_orphan_files(table => 'cut', older_than => {int(time.time() * 1000)})"
            )
        )
    with pytest.raises(SqlError, match="future"):
        list(
            session.execute(
                "CALL sys.remove_orphan_files(table => 'cut', older_than => '2999-01-01 00:00:00', "
                "force => true)"
            )
        )
    assert run(
        session,
        f"CALL sys.remove_orphan_files(table => 'cut', older_than => {int(time.time() * 1000)}, "
        "force => true)",
    ) == [(0, 0)]
    with pytest.raises(SqlError, match="mode"):
        list(session.execute("CALL sys.remove_orphan_files(table => 'cut', mode => 'remote')"))
    with pytest.raises(SqlError, match="nodb"):
        list(session.execute("CALL sys.remove_orphan_files(table => 'nodb.*')"))


def test_a_spark_job_aborted_mid_write_leaves_only_what_cleanup_finds(spark, session):
    """A failed Spark write leaves its abort marker; a job whose driver died leaves its task files."""
    from sqlext.source.datasource import DyntableWriter
    from sqlext.source.requests import WriteRequest

    session.sql("CREATE TABLE jobs (id BIGINT)")
    session.sql("INSERT INTO jobs VALUES (1), (2)")
    t = session.table(TableName.parse("jobs"))
    options = {"warehouse": session.warehouse, "table": "default.jobs"}
    bad = spark.range(0, 1000, numPartitions=4).selectExpr(
        "CASE WHEN id = 900 THEN raise_error('boom') ELSE id END id"
    )
    with pytest.raises(Exception, match="boom"):
        bad.write.format("dyntable").options(**options).mode("append").save()
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 120
    while tracker.getActiveStageIds() and time.monotonic() < deadline:
        time.sleep(0.05)
    # A second job's task finished writing, then its driver died before commit or abort.
    dead = DyntableWriter(WriteRequest.from_options(options, overwrite=False))
    dead.write(iter([pa.record_batch([pa.array([7, 8, 9], pa.int64())], names=["id"])]))
    leftovers = [
        os.path.join(d, f)
        for d, _, fs in os.walk(t.path)
        for f in fs
        if dead.job.token in f or "/aborted-jobs/" in os.path.join(d, f)
    ]
    assert any("/aborted-jobs/" in p for p in leftovers) and any(dead.job.token in p for p in leftovers)
    age(t.path)
    expected_bytes = sum(os.path.getsize(p) for p in leftovers)
    assert run(session, "CALL sys.remove_orphan_files(table => 'jobs')") == [(len(leftovers), expected_bytes)]
    assert not any(os.path.exists(p) for p in leftovers)
    assert sorted(run(session, "SELECT id FROM jobs")) == [(1,), (2,)]


def test_expire_partitions_procedure(session):
    session.sql(
        "CREATE TABLE ev (id INT, dt STRING) PARTITIONED BY (dt) "
        "WITH ('partition.timestamp-formatter' = 'yyyyMMdd')"
    )
    session.sql("INSERT INTO ev VALUES (1, '20000101'), (2, '20000102'), (3, '29990101')")
    assert run(
        session, "CALL sys.expire_partitions(table => 'ev', expiration_time => '1 d', dry_run => true)"
    ) == [("dt=20000101",), ("dt=20000102",)]
    assert run(
        session, "CALL sys.expire_partitions(table => 'ev', expiration_time => '1 d', max_expires => 1)"
    ) == [("dt=20000101",)]
    assert run(session, "CALL sys.expire_partitions('ev', '1 d')") == [("dt=20000102",)]
    assert run(session, "CALL sys.expire_partitions(table => 'ev', expiration_time => '1 d')") == [
        ("No expired partitions.",)
    ]
    assert run(session, "SELECT id FROM ev") == [(3,)]
    assert run(session, "SELECT id FROM ev VERSION AS OF 1 ORDER BY id") == [(1,), (2,), (3,)]
    logged = run(
        session,
        "SELECT details FROM ev$maintenance_log WHERE procedure = 'expire_partitions' "
        "AND NOT dry_run ORDER BY started_at",
    )
    assert '"partitions":["dt=20000101"]' in logged[0][0]
    with pytest.raises(SqlError, match="partition.expiration-time"):
        list(session.execute("CALL sys.expire_partitions(table => 'ev')"))


@pytest.mark.parametrize("pk", [False, True], ids=["append", "pk"])
def test_sql_inserts_expire_partitions_automatically(session, pk):
    key = ", PRIMARY KEY (id, dt) NOT ENFORCED" if pk else ""
    session.sql(
        f"CREATE TABLE auto_{pk} (id INT, dt STRING{key}) PARTITIONED BY (dt) WITH ("
        "'partition.expiration-time' = '7 d', 'partition.expiration-check-interval' = '0 s')"
    )
    session.sql(f"INSERT INTO auto_{pk} VALUES (1, '2000-01-01'), (2, '2999-01-01')")
    assert run(session, f"SELECT id FROM auto_{pk}") == [(2,)]
    assert run(session, f"SELECT procedure, `trigger`, error FROM auto_{pk}$maintenance_log") == [
        ("expire_partitions", "automatic", None)
    ]
