"""Conformance with Apache Paimon's Spark SQL behaviour: DDL, schema evolution, time travel and
system tables (issue 9).

Each test replays statements from Paimon's own Spark tests or documentation and expects the
rows Paimon gives (the test class it comes from is named in a comment). Where Paimon and Spark
disagree, Paimon decides table semantics and Spark decides SQL syntax.
"""

from __future__ import annotations

import time

import pytest

from sqlext.parse.names import TableName


def q(session, sql):
    """Run one statement; the rows of its result (sorted), or [] for a statement without rows."""
    result = list(session.execute(sql))[-1]
    frame = result.dataframe
    return sorted((tuple(r) for r in frame.collect()), key=repr) if frame is not None else []


def table(session, name):
    return session.table(TableName.parse(name))


# -- time travel ------------------------------------------------------------------------------------
def test_time_travel_reads_the_old_schema(session):
    # SparkTimeTravelITCase.testTravelToOldSchema
    q(session, "CREATE TABLE t (k INT, v STRING)")
    q(session, "INSERT INTO t VALUES (1, 'Hello'), (2, 'Paimon')")
    q(session, "ALTER TABLE t ADD COLUMN dt STRING")
    q(session, "INSERT INTO t VALUES (3, 'Test', '0401'), (4, 'Case', '0402')")
    assert q(session, "SELECT * FROM t") == [
        (1, "Hello", None), (2, "Paimon", None), (3, "Test", "0401"), (4, "Case", "0402")]
    assert q(session, "SELECT * FROM t VERSION AS OF 1") == [(1, "Hello"), (2, "Paimon")]
    old = list(session.execute("SELECT * FROM t VERSION AS OF 1"))[-1].dataframe
    assert old.columns == ["k", "v"]
    assert table(session, "t").to_arrow(snapshot_id=1).column_names == ["k", "v"]
    # a column of the new schema does not exist in the old snapshot
    with pytest.raises(Exception, match="(?i)dt"):
        q(session, "SELECT dt FROM t VERSION AS OF 1")


def test_time_travel_to_epoch_seconds(session):
    # SparkTimeTravelITCase.testTravelToTimestampNumber: a number is seconds since the epoch
    q(session, "CREATE TABLE t (k INT, v STRING)")
    q(session, "INSERT INTO t VALUES (1, 'Hello'), (2, 'Paimon')")
    first = table(session, "t").latest_snapshot().time_millis
    anchor = first // 1000 + 1
    while time.time() < anchor + 0.05:  # the second write must land after the anchor second
        time.sleep(0.05)
    q(session, "INSERT INTO t VALUES (3, 'Test'), (4, 'Case')")
    assert q(session, f"SELECT * FROM t TIMESTAMP AS OF {anchor}") == [(1, "Hello"), (2, "Paimon")]
    assert len(q(session, "SELECT * FROM t")) == 4


# -- system tables ------------------------------------------------------------------------------------
def test_buckets_show_the_partition_as_a_row(session):
    # PaimonSystemTableTest "system table: sort buckets table" / "date partition table"
    q(session, "CREATE TABLE T (a INT, b STRING, dt STRING, hh STRING) PARTITIONED BY (dt, hh) "
               "TBLPROPERTIES ('primary-key' = 'a,dt,hh', 'bucket' = '3')")
    for i, v in enumerate("abcdf", 1):
        q(session, f"INSERT INTO T VALUES ({i}, '{v}', '2024-10-10', '01')")
    assert q(session, "SELECT count(*) FROM `T$partitions`") == [(1,)]
    assert q(session, "SELECT partition FROM `T$partitions`") == [("dt=2024-10-10/hh=01",)]
    assert q(session, "SELECT partition, bucket FROM `T$buckets`") == [
        ("{2024-10-10, 01}", 0), ("{2024-10-10, 01}", 1), ("{2024-10-10, 01}", 2)]
    # $buckets and $files print partitions alike, so they join
    joined = q(session, "SELECT b.bucket, count(*) FROM `T$buckets` b JOIN `T$files` f "
                        "ON b.partition = f.partition AND b.bucket = f.bucket GROUP BY b.bucket")
    assert [b for b, _ in joined] == [0, 1, 2]


def test_buckets_of_a_date_partition_with_null(session):
    # PaimonSystemTableTest "system table: date partition table"
    q(session, "CREATE TABLE T (a INT, p1 DATE, p2 INT) PARTITIONED BY (p1, p2)")
    q(session, "INSERT INTO T VALUES (1, cast('2024-10-10' as date), 1)")
    q(session, "INSERT INTO T VALUES (2, null, 1)")
    assert q(session, "SELECT partition FROM `T$partitions`") == [
        ("p1=2024-10-10/p2=1",), ("p1=__DEFAULT_PARTITION__/p2=1",)]
    assert q(session, "SELECT partition, bucket FROM `T$buckets`") == [
        ("{2024-10-10, 1}", 0),
        ("{null, 1}", 0),
    ]


def test_audit_log_shows_deletes(session):
    # AuditLogTable reads with deletes kept: a DELETE's changelog appears as -D rows
    q(session, "CREATE TABLE T (id INT, name STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')")
    q(session, "INSERT INTO T VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    q(session, "DELETE FROM T WHERE id = 2")
    assert q(session, "SELECT rowkind, id, name FROM `T$audit_log`") == [
        ("+I", 1, "a"), ("+I", 3, "c"), ("-D", 2, "b")]
    assert q(session, "SELECT id FROM T") == [(1,), (3,)]


# -- INSERT syntax ----------------------------------------------------------------------------------
def test_insert_by_name(session):
    # InsertOverwriteTableTestBase "insert by name" (Spark 3.5 syntax)
    q(session, "CREATE TABLE t1 (col1 STRING, col2 INT, col3 DOUBLE, col4 STRING)")
    q(session, "CREATE TABLE t2 (col2 INT, col3 DOUBLE, col1 STRING NOT NULL, col4 STRING)")
    q(session, "INSERT INTO TABLE t1 VALUES ('Hello', 1, 1.1, 'pt1'), ('Paimon', 3, 3.3, 'pt2'), "
               "('World', 2, 2.2, 'pt1')")
    q(session, "INSERT INTO t2 BY NAME SELECT col3, col2, col4, col1 FROM t1")
    assert q(session, "SELECT * FROM t2") == [
        (1, 1.1, "Hello", "pt1"), (2, 2.2, "World", "pt1"), (3, 3.3, "Paimon", "pt2")]
    q(session, "INSERT OVERWRITE TABLE t2 BY NAME SELECT col1, col2 FROM t2")  # null for the others
    assert q(session, "SELECT * FROM t2") == [
        (1, None, "Hello", None), (2, None, "World", None), (3, None, "Paimon", None)]
    with pytest.raises(Exception, match="ambiguous column name `col1`"):
        q(session, "INSERT INTO TABLE t1 BY NAME SELECT col1, col2 as col1 FROM t1")
    with pytest.raises(Exception, match="extra columns: `colx`"):
        q(session, "INSERT INTO TABLE t1 BY NAME SELECT col1, col2 as colx FROM t1")


def test_positional_insert_with_repeated_generated_names(session):
    q(session, "CREATE TABLE t (a INT, b STRING, c INT)")
    q(session, "INSERT INTO t SELECT 1, 'a', 1 UNION ALL SELECT 2, 'b', 2")
    assert q(session, "SELECT * FROM t") == [(1, "a", 1), (2, "b", 2)]


# -- CREATE / ALTER TABLE ---------------------------------------------------------------------------
def test_partitioned_by_with_types(session):
    # InsertOverwriteTableTestBase "insert with column list": PARTITIONED BY (address STRING)
    q(session, "CREATE TABLE T (name STRING, student_id INT) PARTITIONED BY (address STRING)")
    t = table(session, "T")
    assert t.schema.field_names == ("name", "student_id", "address") and t.partition_keys == ("address",)
    q(session, "INSERT INTO T (name, student_id, address) VALUES ('a', 1, 'Hangzhou')")
    q(session, "INSERT INTO T PARTITION (address='Beijing') (name) VALUES ('d')")
    assert q(session, "SELECT * FROM T") == [("a", 1, "Hangzhou"), ("d", None, "Beijing")]
    q(session, "CREATE TABLE P (a INT, b STRING) PARTITIONED BY (dt STRING, hh STRING)")
    assert table(session, "P").partition_keys == ("dt", "hh")


def test_show_and_set_tblproperties(session):
    q(
        session,
        "CREATE TABLE T (id INT NOT NULL, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2')",
    )
    q(session, "ALTER TABLE T SET TBLPROPERTIES ('write-buffer-size' '64 mb')")  # Spark allows a missing '='
    props = dict(q(session, "SHOW TBLPROPERTIES T"))
    assert props["primary-key"] == "id" and props["bucket"] == "2" and props["write-buffer-size"] == "64 mb"
    assert q(session, "SHOW TBLPROPERTIES T ('bucket')") == [("bucket", "2")]
    assert q(session, "SHOW TBLPROPERTIES T ('nope')")[0][1].endswith("does not have property: nope")


def test_comment_property_is_the_table_comment(session):
    # DescribeTableTestBase "describe table comment"
    q(session, "CREATE TABLE T (id INT, name STRING) COMMENT 'test comment'")
    assert table(session, "T").schema.comment == "test comment"
    q(session, "ALTER TABLE T SET TBLPROPERTIES ('comment' = 'new comment')")
    assert table(session, "T").schema.comment == "new comment"
    assert "comment" not in table(session, "T").options
    q(session, "ALTER TABLE T SET TBLPROPERTIES ('comment' = '')")
    assert table(session, "T").schema.comment == ""
    q(session, "ALTER TABLE T UNSET TBLPROPERTIES ('comment')")
    assert table(session, "T").schema.comment is None


def test_alter_column_position_type_and_key_rename(session):
    # SchemaEvolutionTestBase: ALTER COLUMN ... FIRST / AFTER, BIGINT -> DOUBLE, INT -> FLOAT,
    # and renaming a primary-key column (Paimon's SchemaManager allows it)
    q(
        session,
        "CREATE TABLE T (a INT NOT NULL, b BIGINT, c INT) TBLPROPERTIES ('primary-key' = 'a', "
        "'bucket' = '1')",
    )
    q(session, "INSERT INTO T VALUES (1, 10, 100), (2, 20, 200)")
    q(session, "ALTER TABLE T ALTER COLUMN c FIRST")
    assert q(session, "SELECT * FROM T") == [(100, 1, 10), (200, 2, 20)]
    q(session, "ALTER TABLE T ALTER COLUMN c AFTER b")
    q(session, "ALTER TABLE T ALTER COLUMN b TYPE DOUBLE")
    q(session, "ALTER TABLE T ALTER COLUMN c TYPE FLOAT")
    assert q(session, "SELECT * FROM T") == [(1, 10.0, 100.0), (2, 20.0, 200.0)]
    q(session, "ALTER TABLE T RENAME COLUMN a TO id")
    q(session, "INSERT INTO T VALUES (2, 2.5, 3.5)")
    assert q(session, "SELECT * FROM T") == [(1, 10.0, 100.0), (2, 2.5, 3.5)]
    assert table(session, "T").primary_keys == ("id",)
    # the old snapshot still reads in its own schema
    assert q(session, "SELECT * FROM T VERSION AS OF 1") == [(1, 10, 100), (2, 20, 200)]
    with pytest.raises(Exception, match="(?i)cannot change column"):
        q(session, "ALTER TABLE T ALTER COLUMN b TYPE INT")
