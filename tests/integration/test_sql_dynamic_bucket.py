"""Spark SQL on dynamic-bucket primary-key tables ('bucket' = '-1'), including
cross-partition upsert (issue 9)."""

from __future__ import annotations

from tests.integration.test_sql_dml import contents, run, table


def test_insert_and_update_moves_a_key_across_partitions(session):
    run(session, "CREATE TABLE t (id INT, v STRING, dt STRING) PARTITIONED BY (dt) "
                 "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '-1')")
    run(session, "INSERT INTO t VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')")
    run(session, "INSERT INTO t VALUES (1, 'A', 'd2')")  # key 1 moves from d1 to d2
    assert contents(session, "t") == [(1, "A", "d2"), (2, "b", "d1"), (3, "c", "d2")]
    run(session, "INSERT INTO t SELECT id, upper(v), 'd3' FROM t WHERE id = 2")
    assert contents(session, "t") == [(1, "A", "d2"), (2, "B", "d3"), (3, "c", "d2")]
    table(session, "t").compact(full=True)
    assert {s.partition_values for s in table(session, "t").plan().splits} == {("d2",), ("d3",)}


def test_partition_local_dynamic_buckets_through_sql(session):
    run(
        session,
        "CREATE TABLE p (id INT, v STRING, dt STRING) PARTITIONED BY (dt) "
        "TBLPROPERTIES ('primary-key' = 'dt,id', 'bucket' = '-1', 'dynamic-bucket.target-row-num' = '2')",
    )
    run(session, "INSERT INTO p VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd1'), (4, 'd', 'd2')")
    run(session, "INSERT INTO p VALUES (1, 'A', 'd1'), (3, 'C', 'd1')")
    assert contents(session, "p") == [(1, "A", "d1"), (2, "b", "d1"), (3, "C", "d1"), (4, "d", "d2")]
