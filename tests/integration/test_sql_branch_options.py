"""Branch and partition options and procedures through SQL, as Paimon's Spark tests run them:
scan.fallback-branch, merge_branch, done partitions, CHAR(n) columns (shared Spark session)."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError


def run(session, sql):
    result = list(session.execute(sql))[-1]
    return [tuple(r) for r in result.dataframe.collect()] if result.dataframe is not None else None


def fails(session, sql, *words):
    with pytest.raises(SqlError) as info:
        list(session.execute(sql))
    for w in words:
        assert w in str(info.value), str(info.value)
    return info.value


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
