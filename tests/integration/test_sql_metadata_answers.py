"""SELECT count(*) / min / max answered from manifests without a Spark job
(sqlext.execute.metadata_answers): Paimon's PushDownAggregatesTest cases, with Paimon's expected
answers, and the job count telling which ones metadata answered."""

from __future__ import annotations

import itertools
from datetime import date

import pytest

_groups = itertools.count()


@pytest.fixture
def sql(spark, warehouse):
    from sqlext.session import SqlSession

    s = SqlSession(spark, warehouse=warehouse)
    s.sql("CREATE DATABASE IF NOT EXISTS db")
    s.sql("USE db")
    yield s
    s.stop_jobs()


def run(session, query):
    """(rows, number of Spark jobs the query and its collection started)."""
    sc = session.spark.sparkContext
    group = f"metadata-answers-{next(_groups)}"
    sc.setJobGroup(group, group)
    try:
        rows = [tuple(r) for r in session.sql(query).collect()]
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return rows, len(sc.statusTracker().getJobIdsForGroup(group))


def check(session, query, expected, *, from_metadata):
    rows, jobs = run(session, query)
    assert sorted(rows, key=repr) == sorted(expected, key=repr), query
    assert (jobs == 0) is from_metadata, (query, jobs)


def test_append_table_without_partitions(sql):
    sql.sql("CREATE TABLE T (c1 INT, c2 STRING, c3 DOUBLE, c4 DATE)")
    check(sql, "SELECT COUNT(*) FROM T", [(0,)], from_metadata=True)
    check(sql, "SELECT COUNT(*), MIN(c1), MIN(c3), MIN(c4) FROM T", [(0, None, None, None)],
          from_metadata=True)
    check(sql, "SELECT COUNT(c1) FROM T", [(0,)], from_metadata=False)
    check(sql, "SELECT MIN(c2) FROM T", [(None,)], from_metadata=False)
    sql.sql("""INSERT INTO T VALUES (1, 'xyz', 11.1, DATE'2025-01-01'),
               (2, null, null, DATE'2025-01-01'), (3, 'abc', 33.3, null),
               (3, 'abc', null, DATE'2025-03-01'), (null, 'abc', 44.4, DATE'2025-03-01')""")
    d1, d2 = date(2025, 1, 1), date(2025, 3, 1)
    check(sql, "SELECT COUNT(*) FROM T", [(5,)], from_metadata=True)
    check(sql, "select count(1) from T", [(5,)], from_metadata=True)
    check(sql, "SELECT COUNT(*) FROM T GROUP BY c1", [(1,), (1,), (1,), (2,)], from_metadata=False)
    check(sql, "SELECT COUNT(c1) FROM T", [(4,)], from_metadata=False)
    check(sql, "SELECT COUNT(*), MIN(c1), MAX(c1) FROM T", [(5, 1, 3)], from_metadata=True)
    check(sql, "SELECT COUNT(*), MIN(c2), MAX(c2) FROM T", [(5, "abc", "xyz")], from_metadata=False)
    check(sql, "SELECT COUNT(*), MIN(c3), MAX(c3) FROM T", [(5, 11.1, 44.4)], from_metadata=True)
    check(sql, "SELECT COUNT(*), MIN(c4), MAX(c4) FROM T", [(5, d1, d2)], from_metadata=True)
    check(sql, "SELECT COUNT(*), MIN(c3) FROM T WHERE c1 = 3", [(2, 33.3)], from_metadata=False)
    df = sql.sql("SELECT MIN(c3) AS min, MAX(c4) AS max, count(*) FROM T")
    assert df.columns == ["min", "max", "count(1)"]
    assert [f.dataType.simpleString() for f in df.schema.fields] == ["double", "date", "bigint"]
    # a snapshot other than the latest goes to Spark, and gets the old answer
    sql.sql("INSERT INTO T VALUES (9, 'q', 1.0, null)")
    check(sql, "SELECT COUNT(*) FROM T VERSION AS OF 1", [(5,)], from_metadata=False)
    check(sql, "SELECT COUNT(*), MAX(c1) FROM T", [(6, 9)], from_metadata=True)


def test_append_table_with_partitions(sql):
    sql.sql("CREATE TABLE T (c1 INT, c2 BIGINT) PARTITIONED BY (day STRING, hour INT)")
    sql.sql("""INSERT INTO T VALUES (1, 100, '2025-01-01', 1), (2, null, '2025-01-01', 1),
               (3, 300, '2025-03-01', 3), (3, 330, '2025-03-01', 3), (null, 400, '2025-03-01', null)""")
    check(sql, "SELECT COUNT(*), MIN(c2) AS min, MAX(c2) AS max FROM T WHERE day = '2025-03-01'",
          [(3, 300, 400)], from_metadata=True)
    check(sql, "SELECT COUNT(*) FROM T WHERE hour = 3 AND day IN ('2025-03-01', 'x')", [(2,)],
          from_metadata=True)
    check(sql, "SELECT COUNT(*) FROM T WHERE hour IS NULL", [(1,)], from_metadata=True)
    check(sql, "SELECT COUNT(*) FROM T WHERE day > '2025-02-01' AND c1 = 3", [(2,)], from_metadata=False)
    check(sql, "SELECT COUNT(*) FROM T WHERE hour = '3'", [(2,)], from_metadata=False)  # Spark casts


def test_stats_mode_none(sql):
    sql.sql("CREATE TABLE T (c1 INT, c4 DATE) TBLPROPERTIES ('metadata.stats-mode' = 'none')")
    sql.sql("INSERT INTO T VALUES (1, DATE'2025-01-01'), (3, null), (null, DATE'2025-03-01')")
    check(sql, "SELECT COUNT(*) FROM T", [(3,)], from_metadata=True)
    check(sql, "SELECT COUNT(*), MIN(c1), MAX(c1) FROM T", [(3, 1, 3)], from_metadata=False)


@pytest.mark.parametrize("dv", [True, False])
def test_primary_key_table(sql, dv):
    sql.sql(f"CREATE TABLE T (c1 INT, c2 STRING) TBLPROPERTIES ('primary-key' = 'c1', 'bucket' = '1',"
            f" 'deletion-vectors.enabled' = '{str(dv).lower()}')")
    check(sql, "SELECT COUNT(*) FROM T", [(0,)], from_metadata=True)
    sql.sql("INSERT INTO T VALUES (1, 'x'), (2, 'x'), (3, 'x'), (3, 'x')")
    check(sql, "SELECT COUNT(*) FROM T", [(3,)], from_metadata=True)
    check(sql, "SELECT MIN(c1) FROM T", [(1,)], from_metadata=False)  # never for primary-key tables


def test_primary_key_overlapping_files_go_to_spark(sql):
    sql.sql("CREATE TABLE T (c1 INT, c2 STRING) TBLPROPERTIES ('primary-key' = 'c1', 'bucket' = '1',"
            " 'write-only' = 'true')")
    sql.sql("INSERT INTO T VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    check(sql, "SELECT COUNT(*) FROM T", [(3,)], from_metadata=True)  # one level-0 file
    sql.sql("INSERT INTO T VALUES (1, 'updated'), (4, 'd')")
    check(sql, "SELECT COUNT(*) FROM T", [(4,)], from_metadata=False)  # overlapping runs: merged


@pytest.mark.parametrize("primary_key", [True, False])
def test_table_with_deletion_vectors(sql, primary_key):
    key = "primary-key" if primary_key else "bucket-key"
    sql.sql(f"CREATE TABLE T (id INT) TBLPROPERTIES ('deletion-vectors.enabled' = 'true', '{key}' = 'id',"
            " 'bucket' = '1')")
    sql.sql("INSERT INTO T SELECT id FROM range(0, 5000)")
    check(sql, "SELECT COUNT(*) FROM T", [(5000,)], from_metadata=True)
    if not primary_key:
        check(sql, "SELECT COUNT(*), MIN(id), MAX(id) FROM T", [(5000, 0, 4999)], from_metadata=True)
    sql.sql("DELETE FROM T WHERE id > 100 AND id <= 400")
    check(sql, "SELECT COUNT(*) FROM T", [(4700,)], from_metadata=True)
    if not primary_key:
        check(sql, "SELECT MIN(id), MAX(id) FROM T", [(0, 4999)], from_metadata=False)  # bounds now wide


def test_dynamic_options_and_branches_go_to_spark(sql):
    sql.sql("CREATE TABLE T (c1 INT)")
    sql.sql("INSERT INTO T VALUES (1), (2)")
    sql.sql("CALL sys.create_branch('db.T', 'b1')")
    sql.sql("INSERT INTO `T$branch_b1` VALUES (3)")
    check(sql, "SELECT COUNT(*) FROM `T$branch_b1`", [(1,)], from_metadata=False)
    check(sql, "SELECT COUNT(*) FROM T$branch_b1", [(1,)], from_metadata=False)
    check(sql, "SELECT count(*) FROM T$schemas", [(1,)], from_metadata=False)
    sql.sql("INSERT INTO T VALUES (4)")
    check(sql, "SELECT COUNT(*) FROM T /*+ OPTIONS('scan.snapshot-id' = '1') */", [(2,)], from_metadata=False)
    sql.sql("SET spark.paimon.scan.snapshot-id = 1")
    try:
        check(sql, "SELECT COUNT(*) FROM T", [(2,)], from_metadata=False)
    finally:
        sql.sql("RESET spark.paimon.scan.snapshot-id")
    check(sql, "SELECT COUNT(*) FROM T", [(3,)], from_metadata=True)


def test_names_and_types_are_sparks(sql):
    sql.sql("CREATE TABLE T (c1 INT, c3 DOUBLE, c4 DATE, b BOOLEAN)")
    sql.sql("INSERT INTO T VALUES (1, 1.5, DATE'2025-01-01', true), (2, null, null, false)")
    spark = sql.spark
    spark.createDataFrame([(1, 1.5, date(2025, 1, 1), True)], "c1 INT, c3 DOUBLE, c4 DATE, b BOOLEAN") \
        .createOrReplaceTempView("metadata_answers_same")
    select = "SELECT COUNT(*), count(1), MIN(C1), max(c3) AS m, MAX(c4), min(b) FROM {}"
    ours = sql.sql(select.format("T"))
    _, jobs = run(sql, select.format("T"))
    assert jobs == 0
    theirs = spark.sql(select.format("metadata_answers_same"))
    def shape(df):  # Spark's own metadata (``__autoGeneratedAlias``) aside
        return [(f.name, f.dataType, f.nullable) for f in df.schema.fields]

    assert shape(ours) == shape(theirs)
    assert [tuple(r) for r in ours.collect()] == [(2, 2, 1, 1.5, date(2025, 1, 1), False)]
