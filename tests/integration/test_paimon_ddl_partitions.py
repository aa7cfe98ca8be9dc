"""Conformance with Apache Paimon's Spark SQL: column moves, DROP/SHOW PARTITIONS, DESCRIBE
EXTENDED's comment, CHAR(n) padding, ADD COLUMN ... DEFAULT and DELETE on a first-row table
(issue 23, "DDL/partition differences").

Each test replays statements from Paimon's own Spark tests and expects what Paimon gives; the
test it comes from is named in a comment.
"""

from __future__ import annotations

import pytest

from sqlext.errors import SqlAnalysisError, UnsupportedStatementError


def q(session, sql):
    """Run one statement; the rows of its result (sorted), or [] for a statement without rows."""
    frame = list(session.execute(sql))[-1].dataframe
    return sorted((tuple(r) for r in frame.collect()), key=repr) if frame is not None else []


def columns(session, name):
    return list(list(session.execute(f"SELECT * FROM {name}"))[-1].dataframe.columns)


def test_move_a_column_onto_itself_fails(session):
    # SparkSchemaEvolutionITCase.testAlterColumnPosition: "Cannot move itself for column a"
    q(session, "CREATE TABLE t (a INT NOT NULL, b BIGINT, c STRING)")
    with pytest.raises(SqlAnalysisError, match="Cannot move itself for column a"):
        q(session, "ALTER TABLE t ALTER COLUMN a FIRST")
    with pytest.raises(SqlAnalysisError, match="(?i)itself"):
        q(session, "ALTER TABLE t ALTER COLUMN b AFTER b")
    assert columns(session, "t") == ["a", "b", "c"]  # nothing changed
    q(session, "ALTER TABLE t ALTER COLUMN b FIRST")
    assert columns(session, "t") == ["b", "a", "c"]


def test_drop_partition_by_partial_spec(session):
    # DDLTestBase "Paimon DDL: Drop Partition by partial spec"
    q(session, "CREATE TABLE tbl (id INT, data STRING, dt STRING, hour STRING, event STRING) "
               "PARTITIONED BY (dt, hour, event)")
    for dt, hour, event in [("2023-01-01", "00", "event1"), ("2023-01-02", "00", "event1"),
                            ("2023-01-02", "00", "event2"), ("2023-01-02", "00", "event3"),
                            ("2023-01-02", "02", "event1"), ("2023-01-02", "02", "event2"),
                            ("2023-01-02", "03", "event1"), ("2023-01-03", "00", "event1")]:
        q(session, f"INSERT INTO tbl VALUES (1, 'a', '{dt}', '{hour}', '{event}')")

    def count():
        return q(session, "SELECT count(*) FROM tbl")[0][0]

    assert count() == 8
    q(session, "ALTER TABLE tbl DROP PARTITION (dt='2023-01-01', hour='00', event='event1')")
    assert count() == 7
    q(session, "ALTER TABLE tbl DROP PARTITION (dt='2023-01-02', hour='00')")
    assert count() == 4
    q(session, "ALTER TABLE tbl DROP PARTITION (dt='2023-01-02')")
    assert count() == 1
    q(session, "ALTER TABLE tbl DROP PARTITION (dt='2023-01-01')")  # a partial spec matching nothing
    assert count() == 1
    with pytest.raises(SqlAnalysisError, match="not a prefix"):  # not the leading columns
        q(session, "ALTER TABLE tbl DROP PARTITION (hour='00', event='event1')")
    with pytest.raises(SqlAnalysisError, match="not found"):  # a full spec matching nothing
        q(session, "ALTER TABLE tbl DROP PARTITION (dt='2023-01-01', hour='00', event='event1')")
    assert q(session, "SHOW PARTITIONS tbl") == [("dt=2023-01-03/hour=00/event=event1",)]


def test_drop_partitions_all_or_nothing(session):
    # PaimonPartitionManagementTest "Partition for partitioned table"
    q(session, "CREATE TABLE T (a STRING, c BIGINT, dt BIGINT, hh STRING) PARTITIONED BY (dt, hh)")
    q(session, "INSERT INTO T VALUES ('a', 1, 20230816, '1134'), ('a', 2, 20230817, '1134'), "
               "('a', 2, 20240101, '00'), ('a', 2, 20240102, '00')")
    with pytest.raises(SqlAnalysisError):
        q(session, "ALTER TABLE T DROP PARTITION (dt=20240101, hh='00'), PARTITION (dt=999999, hh='00')")
    assert q(session, "SHOW PARTITIONS T PARTITION (dt=20240101)") == [("dt=20240101/hh=00",)]
    q(session, "ALTER TABLE T DROP PARTITION (dt=20240101, hh='00'), PARTITION (dt=20240102, hh='00')")
    with pytest.raises(SqlAnalysisError):  # hh alone is not a prefix of (dt, hh)
        q(session, "ALTER TABLE T DROP PARTITION (hh='1134')")
    assert q(session, "SHOW PARTITIONS T") == [("dt=20230816/hh=1134",), ("dt=20230817/hh=1134",)]


def test_show_partitions_prints_null(session):
    # PaimonPartitionManagementTest "drop null partition with specified default partition name"
    q(session, "CREATE TABLE T (a INT, dt STRING) PARTITIONED BY (dt) "
               "TBLPROPERTIES ('partition.default-name'='__TEST_DEFAULT_PARTITION__')")
    q(session, "INSERT INTO T VALUES (1, '20240601'), (2, null)")
    assert q(session, "SHOW PARTITIONS T") == [("dt=20240601",), ("dt=null",)]
    q(session, "ALTER TABLE T DROP PARTITION (dt=null)")
    assert q(session, "SHOW PARTITIONS T") == [("dt=20240601",)]


def test_describe_extended_shows_the_comment(session):
    # DescribeTableTestBase: the table comment is Spark's "Comment" row of DESCRIBE EXTENDED
    q(session, "CREATE TABLE t (id INT COMMENT 'the id') COMMENT 'table comment'")
    described = q(session, "DESCRIBE TABLE EXTENDED t")
    assert ("Comment", "table comment", "") in described
    assert ("id", "int", "the id") in described


def test_char_values_read_back_padded(session):
    # DDLTestBase "create table with char/varchar/string", SparkReadITCase.testCreateTableAs
    q(session, "CREATE TABLE paimon_tbl (id INT, col_s1 CHAR(9), col_s2 VARCHAR(10), col_s3 STRING)")
    q(session, "INSERT INTO paimon_tbl VALUES (1, 'Wednesday', 'Wednesday', 'Wednesday'), "
               "(2, 'Friday', 'Friday', 'Friday'), (3, NULL, NULL, NULL)")
    assert q(session, "SELECT col_s1, col_s2, col_s3 FROM paimon_tbl WHERE id = 2") == [
        ("Friday   ", "Friday", "Friday")]
    assert q(session, "SELECT col_s1 FROM paimon_tbl WHERE id = 3") == [(None,)]
    q(session, "CREATE TABLE testCreateTable (a INT, b VARCHAR(10), c CHAR(10))")
    q(session, "INSERT INTO testCreateTable VALUES (1, 'a', 'b')")
    q(session, "CREATE TABLE testCreateTableAs AS SELECT * FROM testCreateTable")
    assert q(session, "SELECT * FROM testCreateTableAs") == [(1, "a", "b         ")]


def test_add_column_with_default_is_refused(session):
    # SparkWriteITCase.testWriteWithDefaultValue: "Cannot add column [d] with default value"
    q(session, "CREATE TABLE T (a INT, b INT)")
    q(session, "INSERT INTO T VALUES (1, 2)")
    with pytest.raises(UnsupportedStatementError, match=r"Cannot add column \[d\] with default value"):
        q(session, "ALTER TABLE T ADD COLUMN d INT DEFAULT 5")
    assert q(session, "SELECT * FROM T") == [(1, 2)]  # nothing changed
    assert columns(session, "T") == ["a", "b"]


def test_delete_from_first_row_table(session):
    # DeleteFromTableTestBase "Paimon Delete: first-row table"
    q(session, "CREATE TABLE t (id INT, name STRING) "
               "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1', 'merge-engine' = 'first-row')")
    q(session, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert q(session, "SELECT * FROM t") == [(1, "a"), (2, "b"), (3, "c")]
    q(session, "DELETE FROM t WHERE id = 3")
    assert q(session, "SELECT * FROM t") == [(1, "a"), (2, "b")]
