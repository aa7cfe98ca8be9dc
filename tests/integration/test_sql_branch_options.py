"""Branch and partition options and procedures through SQL, as Paimon's Spark tests run them:
scan.fallback-branch, merge_branch, done partitions, CHAR(n) columns (shared Spark session)."""

from __future__ import annotations

from sqlext.parse.names import TableName
from tests.integration.sql_helpers import fails, run


def test_read_with_scan_fallback_branch(session):
    """BranchProcedureTest 'read with scan.fallback-branch'."""
    session.sql("CREATE TABLE T (dt STRING NOT NULL, name STRING NOT NULL, amount BIGINT) "
                "PARTITIONED BY (dt)")
    session.sql("ALTER TABLE T SET TBLPROPERTIES ('k1' = 'v1')")
    session.sql("CALL sys.create_branch('T', 'test')")
    session.sql("ALTER TABLE T SET TBLPROPERTIES ('scan.fallback-branch' = 'test')")
    session.sql("INSERT INTO `T$branch_test` VALUES ('20240725', 'apple', 4), ('20240725', 'peach', 10), "
                "('20240726', 'cherry', 3), ('20240726', 'pear', 6)")
    session.sql("INSERT INTO T VALUES ('20240725', 'apple', 5), ('20240725', 'banana', 7)")
    assert run(session, "SELECT * FROM T ORDER BY amount") == [
        ("20240726", "cherry", 3), ("20240725", "apple", 5), ("20240726", "pear", 6),
        ("20240725", "banana", 7)]
    assert run(session, "SELECT name FROM T WHERE dt = '20240726' ORDER BY name") == [("cherry",), ("pear",)]
    assert run(session, "SELECT count(*) FROM T") == [(4,)]
    session.sql("ALTER TABLE T UNSET TBLPROPERTIES ('scan.fallback-branch')")
    assert run(session, "SELECT * FROM T ORDER BY amount") == [
        ("20240725", "apple", 5), ("20240725", "banana", 7)]


def test_merge_branch_of_an_append_table(session):
    """MergeBranchProcedureTest 'merge branch test' and 'with explicit target branch'."""
    session.sql("CREATE TABLE T (id INT, name STRING) TBLPROPERTIES ('branch-merge.enabled' = 'true')")
    session.sql("INSERT INTO T VALUES (1, 'a')")
    session.sql("CALL sys.create_tag(table => 'T', tag => 'tag1')")
    assert run(session, "CALL sys.create_branch(table => 'T', branch => 'test_branch', tag => 'tag1')") == [
        (True,)]
    session.sql("INSERT INTO `T$branch_test_branch` VALUES (2, 'b')")
    assert run(session, "CALL sys.merge_branch(table => 'T', source_branch => 'test_branch')") == [(True,)]
    assert run(session, "SELECT * FROM T ORDER BY id") == [(1, "a"), (2, "b")]
    session.sql("CALL sys.create_branch(table => 'T', branch => 'branchA', tag => 'tag1')")
    session.sql("CALL sys.create_branch(table => 'T', branch => 'branchB', tag => 'tag1')")
    session.sql("INSERT INTO `T$branch_branchA` VALUES (3, 'c')")
    assert run(session, "CALL sys.merge_branch('T', 'branchA', 'branchB')") == [(True,)]
    assert run(session, "SELECT * FROM `T$branch_branchB` ORDER BY id") == [(1, "a"), (3, "c")]
    fails(session, "CALL sys.merge_branch(table => 'T', source_branch => 'nonexistent')", "nonexistent")


def test_merge_branch_of_a_primary_key_table_reports_conflicts(session):
    """Paimon refuses key tables ('merge branch on primary key table should fail'); dyntable merges them
    by key and reports the keys changed on both sides."""
    session.sql("CREATE TABLE K (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')")
    session.sql("INSERT INTO K VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    session.sql("CALL sys.create_tag(table => 'K', tag => 't1')")
    session.sql("CALL sys.create_branch(table => 'K', branch => 'dev', tag => 't1')")
    session.sql("INSERT INTO `K$branch_dev` VALUES (2, 'dev'), (4, 'new')")
    session.sql("DELETE FROM `K$branch_dev` WHERE id = 3")
    session.sql("INSERT INTO K VALUES (2, 'main')")
    assert run(session, "CALL sys.merge_branch(table => 'K', source_branch => 'dev', dry_run => true)") == [
        (False,)]
    fails(session, "CALL sys.merge_branch(table => 'K', source_branch => 'dev')", "id=2", "conflict")
    assert run(session, "SELECT * FROM K ORDER BY id") == [(1, "a"), (2, "main"), (3, "c")]
    merge = "CALL sys.merge_branch(table => 'K', source_branch => 'dev', conflict => 'target')"
    assert run(session, merge) == [(True,)]
    assert run(session, "SELECT * FROM K ORDER BY id") == [(1, "a"), (2, "main"), (4, "new")]
    log = run(session, "SELECT procedure, dry_run FROM `K$maintenance_log` WHERE procedure = 'merge_branch'")
    assert sorted(log) == [("merge_branch", False), ("merge_branch", False), ("merge_branch", True)]


def test_char_columns_compare_as_spark_char(session):
    """A CHAR(n) column reaches Spark as char(n): comparisons pad the shorter side, as Spark's CHAR."""
    session.sql("CREATE TABLE C (id INT, c CHAR(5), v VARCHAR(5))")
    session.sql("INSERT INTO C VALUES (1, 'a', 'a'), (2, 'bb', 'bb'), (3, NULL, NULL)")
    assert run(session, "SELECT id FROM C WHERE c = 'a'") == [(1,)]
    assert run(session, "SELECT id FROM C WHERE c = 'a    '") == [(1,)]
    assert run(session, "SELECT id FROM C WHERE c IN ('a', 'bb') ORDER BY id") == [(1,), (2,)]
    assert run(session, "SELECT id FROM C WHERE v = 'a'") == [(1,)]  # VARCHAR: no padding
    assert run(session, "SELECT c, length(c) FROM C WHERE id = 2") == [("bb   ", 5)]
    assert run(session, "SELECT count(*) FROM C WHERE c <> 'a'") == [(1,)]


def test_mark_partition_done_with_done_partition(session):
    """partition.mark-done-action = success-file,done-partition (Paimon's AddDonePartitionAction)."""
    import os

    session.sql("CREATE TABLE D (id STRING, day STRING) PARTITIONED BY (day) "
                "TBLPROPERTIES ('partition.mark-done-action' = 'success-file,done-partition')")
    session.sql("INSERT INTO D VALUES ('1', '2024-07-13')")
    assert run(session, "CALL sys.mark_partition_done(table => 'D', partitions => 'day=2024-07-13')") == [
        (True,)]
    assert run(session, "SELECT * FROM D") == [("1", "2024-07-13")]  # the done partition is no data
    table = session.table(TableName.parse("D"))
    assert os.path.isdir(os.path.join(table.path, "day=2024-07-13.done"))
    assert os.path.isfile(os.path.join(table.path, "day=2024-07-13", "_SUCCESS"))


def test_data_file_path_directory_through_sql(session):
    import os

    session.sql("CREATE TABLE P (id INT, v STRING, dt STRING) PARTITIONED BY (dt) "
                "TBLPROPERTIES ('data-file.path-directory' = 'data')")
    session.sql("INSERT INTO P VALUES (1, 'a', 'd1'), (2, 'b', 'd2')")
    session.sql("INSERT INTO P VALUES (3, 'c', 'd1')")
    assert run(session, "SELECT id FROM P WHERE dt = 'd1' ORDER BY id") == [(1,), (3,)]
    assert run(session, "SELECT count(*) FROM P") == [(3,)]
    root = session.table(TableName.parse("P")).path
    assert os.path.isdir(os.path.join(root, "data", "dt=d1", "bucket-0"))
    assert not os.path.exists(os.path.join(root, "dt=d1"))


def test_end_input_check_partition_expire_through_sql(session):
    session.sql("CREATE TABLE X (id INT, dt STRING) PARTITIONED BY (dt) TBLPROPERTIES ("
                "'partition.expiration-time' = '7 d', 'partition.expiration-check-interval' = '1 d', "
                "'partition.timestamp-formatter' = 'yyyyMMdd', 'end-input.check-partition-expire' = 'true')")
    session.sql("INSERT INTO X VALUES (1, '20000101'), (2, '29990101')")
    session.sql("INSERT INTO X VALUES (3, '20000102')")  # within the interval, but the end of a batch write
    assert run(session, "SELECT id FROM X ORDER BY id") == [(2,)]
