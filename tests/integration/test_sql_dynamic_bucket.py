"""Spark SQL on dynamic-bucket primary-key tables ('bucket' = '-1', the default), incl. cross-partition
upsert: statements and expected results from Paimon's DynamicBucketTableTest and its documented rules."""

from __future__ import annotations

from tests.integration.test_sql_dml import contents, run, table


def _rows(session, sql):
    return sorted(run(session, sql)[0])


def _buckets(session, name):
    return _rows(session, f"SELECT DISTINCT bucket FROM `{name}$files`")


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
    run(session, "CREATE TABLE p (id INT, v STRING, dt STRING) PARTITIONED BY (dt) "
                 "TBLPROPERTIES ('primary-key' = 'dt,id', 'dynamic-bucket.target-row-num' = '2')")
    run(session, "INSERT INTO p VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd1'), (4, 'd', 'd2')")
    run(session, "INSERT INTO p VALUES (1, 'A', 'd1'), (3, 'C', 'd1')")
    assert contents(session, "p") == [(1, "A", "d1"), (2, "b", "d1"), (3, "C", "d1"), (4, "d", "d2")]
    assert _buckets(session, "p") == [(0,), (1,)]


def test_paimon_cross_partition_write_with_partition_change(session):
    run(session, "CREATE TABLE T (pt INT, pk INT, v INT) TBLPROPERTIES ('primary-key' = 'pk', "
                 "'bucket' = '-1', 'dynamic-bucket.target-row-num' = '3', "
                 "'dynamic-bucket.assigner-parallelism' = '1') PARTITIONED BY (pt)")
    run(session, "INSERT INTO T VALUES (1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)")
    assert _rows(session, "SELECT * FROM T") == [(1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    run(session, "INSERT INTO T VALUES (1, 3, 33), (1, 1, 11)")
    assert _rows(session, "SELECT * FROM T") == [(1, 1, 11), (1, 2, 2), (1, 3, 33), (1, 4, 4), (1, 5, 5)]
    assert _buckets(session, "T") == [(0,), (1,)]
    run(session, "INSERT INTO T VALUES (2, 1, 2), (2, 2, 3)")  # keys 1 and 2 move to partition 2
    assert _rows(session, "SELECT * FROM T") == [(1, 3, 33), (1, 4, 4), (1, 5, 5), (2, 1, 2), (2, 2, 3)]


def test_paimon_cross_partition_write_with_delete(session):
    run(session, "CREATE TABLE T (pt INT, pk INT, v INT) TBLPROPERTIES ('primary-key' = 'pk', "
                 "'bucket' = '-1', 'dynamic-bucket.target-row-num' = '3') PARTITIONED BY (pt)")
    run(session, "INSERT INTO T VALUES (1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)")
    run(session, "DELETE FROM T WHERE pk = 1")
    assert _rows(session, "SELECT * FROM T") == [(1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    run(session, "INSERT INTO T VALUES (2, 1, 2), (2, 2, 3)")
    assert _rows(session, "SELECT * FROM T") == [(1, 3, 3), (1, 4, 4), (1, 5, 5), (2, 1, 2), (2, 2, 3)]
    run(session, "DELETE FROM T WHERE pk = 2")
    assert _rows(session, "SELECT * FROM T") == [(1, 3, 3), (1, 4, 4), (1, 5, 5), (2, 1, 2)]


def test_paimon_cross_partition_write_multiple_cols_with_the_default_bucket(session):
    columns = ", ".join(f"c{i} STRING" for i in range(118))
    run(session, f"CREATE TABLE t ({columns}, pt STRING) PARTITIONED BY (pt) "
                 "TBLPROPERTIES ('primary-key' = 'c0')")
    run(session, "INSERT INTO t (c0, c1, c2, pt) VALUES ('c0', 'c1', 'c2', 'pt')")
    assert _rows(session, "SELECT c0, c1, c2, pt FROM t") == [("c0", "c1", "c2", "pt")]
    assert table(session, "t").store.schema.options["bucket"] == "-1"


def test_update_and_merge_move_a_key_between_partitions(session):
    run(session, "CREATE TABLE t (id INT, v STRING, dt STRING) PARTITIONED BY (dt) "
                 "TBLPROPERTIES ('primary-key' = 'id')")
    run(session, "INSERT INTO t VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')")
    run(session, "UPDATE t SET dt = 'd2', v = 'A' WHERE id = 1")
    assert contents(session, "t") == [(1, "A", "d2"), (2, "b", "d1"), (3, "c", "d2")]
    run(session, "CREATE TEMPORARY VIEW s AS "
                 "SELECT * FROM VALUES (2, 'B', 'd3'), (4, 'd', 'd1') AS s(id, v, dt)")
    run(session, "MERGE INTO t USING s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET t.v = s.v, t.dt = s.dt WHEN NOT MATCHED THEN INSERT *")
    assert contents(session, "t") == [(1, "A", "d2"), (2, "B", "d3"), (3, "c", "d2"), (4, "d", "d1")]
    table(session, "t").compact(full=True)
    parts: dict[tuple, int] = {}
    for s in table(session, "t").plan().splits:  # a partition may have several buckets (assigners)
        parts[s.partition_values] = parts.get(s.partition_values, 0) + s.row_count
    assert parts == {("d1",): 1, ("d2",): 2, ("d3",): 1}  # no copy of a moved key is left behind


def test_partial_update_keeps_the_key_in_its_old_partition(session):
    run(session, "CREATE TABLE t (id INT, a STRING, b STRING, dt STRING) PARTITIONED BY (dt) "
                 "TBLPROPERTIES ('primary-key' = 'id', 'merge-engine' = 'partial-update')")
    run(session, "INSERT INTO t VALUES (1, 'a1', NULL, 'd1')")
    run(session, "INSERT INTO t VALUES (1, NULL, 'b1', 'd2')")
    assert contents(session, "t") == [(1, "a1", "b1", "d1")]


def test_first_row_ignores_a_key_arriving_in_another_partition(session):
    run(session, "CREATE TABLE t (id INT, v STRING, dt STRING) PARTITIONED BY (dt) "
                 "TBLPROPERTIES ('primary-key' = 'id', 'merge-engine' = 'first-row')")
    run(session, "INSERT INTO t VALUES (1, 'first', 'd1')")
    run(session, "INSERT INTO t VALUES (1, 'second', 'd2'), (2, 'new', 'd2')")
    assert contents(session, "t") == [(1, "first", "d1"), (2, "new", "d2")]


def test_paimon_dynamic_bucket_assigner_parallelism_and_initial_buckets(session):
    """Paimon's 'write with assign parallelism' and 'write with dynamic-bucket.initial-buckets'."""
    cases = (
        ("A", "'dynamic-bucket.assigner-parallelism' = '3'"),
        ("B", "'dynamic-bucket.initial-buckets' = '3', 'dynamic-bucket.assigner-parallelism' = '10'"),
    )
    for name, extra in cases:
        run(session, f"CREATE TABLE {name} (pk STRING, v STRING, pt STRING) TBLPROPERTIES ("
                     "'primary-key' = 'pk, pt', 'bucket' = '-1', 'dynamic-bucket.target-row-num' = '3', "
                     f"{extra}) PARTITIONED BY (pt)")
        run(session, f"INSERT INTO {name} VALUES ('1', 'a', 'p'), ('2', 'b', 'p'), ('3', 'c', 'p'), "
                     "('4', 'd', 'p'), ('5', 'e', 'p')")
        assert _rows(session, f"SELECT * FROM {name}") == [
            ("1", "a", "p"), ("2", "b", "p"), ("3", "c", "p"), ("4", "d", "p"), ("5", "e", "p")]
        assert _buckets(session, name) == [(0,), (1,), (2,)]


def test_paimon_dynamic_bucket_write_with_max_buckets(session):
    """Paimon's 'write with max buckets': without 'dynamic-bucket.assigner-parallelism' a Spark
    write has as many assigners as the job's parallelism (two in this session), at most
    'dynamic-bucket.max-buckets', so six new keys open buckets 0 and 1, not one bucket."""
    assert session.spark.sparkContext.defaultParallelism == 2
    run(session, "CREATE TABLE M (pk STRING, v STRING, pt STRING) TBLPROPERTIES ('primary-key' = 'pk, pt', "
                 "'bucket' = '-1', 'dynamic-bucket.max-buckets' = '2') PARTITIONED BY (pt)")
    run(session, "INSERT INTO M VALUES ('1', 'a', 'p'), ('2', 'b', 'p'), ('3', 'c', 'p'), ('4', 'd', 'p'), "
                 "('5', 'e', 'p'), ('6', 'e', 'p')")
    run(session, "INSERT INTO M VALUES ('11', 'a', 'p'), ('22', 'b', 'p'), ('33', 'c', 'p'), "
                 "('44', 'd', 'p'), ('55', 'e', 'p'), ('66', 'e', 'p')")
    assert _buckets(session, "M") == [(0,), (1,)]
    # the table's own option wins over the job's parallelism
    run(session, "CREATE TABLE O (pk STRING, v STRING, pt STRING) TBLPROPERTIES ('primary-key' = 'pk, pt', "
                 "'bucket' = '-1', 'dynamic-bucket.assigner-parallelism' = '1') PARTITIONED BY (pt)")
    run(session, "INSERT INTO O SELECT CAST(id AS STRING), 'v', 'p' FROM range(100)")
    assert _buckets(session, "O") == [(0,)]
