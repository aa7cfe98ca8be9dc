"""Paimon 2.0's DynamicBucketTableTest (paimon-spark-ut): the case not already translated in
test_sql_dynamic_bucket.py ("write with assign parallelism", "dynamic-bucket.initial-buckets",
"max buckets", "partition change", "delete" and "multiple cols" are there), with Paimon's
statements and expected rows."""

from __future__ import annotations


def sql(session, text):
    frame = list(session.execute(text))[-1].dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


def test_cross_partition_user_defined_assigner_parallelism(session):
    sql(session, "CREATE TABLE T (pt INT, pk INT, v INT) TBLPROPERTIES ('primary-key' = 'pk', "
                 "'bucket' = '-1', 'dynamic-bucket.target-row-num'='3', "
                 "'dynamic-bucket.assigner-parallelism'='3') PARTITIONED BY (pt)")
    sql(session, "INSERT INTO T VALUES (1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)")
    assert sql(session, "SELECT * FROM T ORDER BY pk") == [
        (1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    assert sorted(sql(session, "SELECT DISTINCT bucket FROM `T$FILES`")) == [(0,), (1,), (2,)]
