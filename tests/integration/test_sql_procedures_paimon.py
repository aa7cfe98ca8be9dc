"""Paimon's Spark procedure tests, restated for dyntable (shared Spark session).

Each test follows one of Paimon's ``paimon-spark-ut`` procedure tests (named in its docstring):
the same statements, the same expected rows, with dyntable's SQL spelling where it differs.
"""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError
from sqlext.parse.names import TableName


def run(session, sql):
    result = list(session.execute(sql))[-1]
    return [tuple(r) for r in result.dataframe.collect()] if result.dataframe is not None else None


def fails(session, sql, *words):
    with pytest.raises(SqlError) as info:
        list(session.execute(sql))
    for w in words:
        assert w in str(info.value), str(info.value)
    return info.value


def table(session, name):
    return session.table(TableName.parse(name))


# -- tags -----------------------------------------------------------------------------------------


def test_delete_tag_of_a_missing_tag_answers_true(session):
    """CreateAndDeleteTagProcedureTest: deleting a tag that does not exist is not an error."""
    session.sql("CREATE TABLE T (a INT, b STRING)")
    session.sql("INSERT INTO T VALUES (1, 'a')")
    assert run(session, "CALL sys.delete_tag(table => 'T', tag => 'no_such_tag')") == [(True,)]
    run(session, "CALL sys.create_tag(table => 'T', tag => 'one')")
    # A list mixing existing and missing tags deletes the existing ones.
    assert run(session, "CALL sys.delete_tag(table => 'T', tag => 'one,nope')") == [(True,)]
    assert table(session, "T").tags() == {}


def test_expire_tags_with_nothing_to_expire_answers_one_row(session):
    """ExpireTagsProcedureTest: no tag expired → the single row 'No expired tags.'."""
    session.sql("CREATE TABLE T (id STRING, name STRING)")
    for i in range(1, 6):
        session.sql(f"INSERT INTO T VALUES ('{i}', '{i}')")
    run(session, "CALL sys.create_tag(table => 'T', tag => 'tag-1', snapshot => 1)")
    run(session, "CALL sys.create_tag(table => 'T', tag => 'tag-2', snapshot => 2, time_retained => '1h')")
    assert run(session, "CALL sys.expire_tags(table => 'T')") == [("No expired tags.",)]
    assert run(session, "CALL sys.expire_tags(table => 'T', older_than => '2999-01-01 00:00:00')") == [
        ("tag-1",), ("tag-2",)]


def test_all_digit_tags_are_created_read_and_rolled_back_to(session):
    """RollbackProcedureTest 'rollback to tag check test': tag '20250122', rollback by version/tag."""
    session.sql("CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key' = 'a', 'bucket' = '3')")
    query = "SELECT * FROM T ORDER BY a"
    session.sql("INSERT INTO T VALUES (1, 'a')")
    assert run(session, "CALL sys.create_tag(table => 'T', tag => '20250122', snapshot => 1)") == [(True,)]
    session.sql("INSERT INTO T VALUES (2, 'b')")
    session.sql("INSERT INTO T VALUES (3, 'c')")
    session.sql("INSERT INTO T VALUES (4, 'd')")
    assert run(session, query) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    # A quoted digit string names the tag when one exists.
    assert run(session, "SELECT * FROM T VERSION AS OF '20250122'") == [(1, "a")]
    fails(session, "CALL sys.rollback(table => 'T_exception', version => '4')")
    # version '3' is no tag: it is snapshot 3.
    run(session, "CALL sys.rollback(table => 'T', version => '3')")
    assert run(session, query) == [(1, "a"), (2, "b"), (3, "c")]
    for bad in ("version => '20250122', tag => '20250122'", "version => '20250122', snapshot => 1",
                "tag => '20250122', snapshot => 1"):
        fails(session, f"CALL sys.rollback(table => 'T', {bad})", "exactly one")
    run(session, "CALL sys.rollback(table => 'T', snapshot => 2)")
    assert run(session, query) == [(1, "a"), (2, "b")]
    run(session, "CALL sys.rollback(table => 'T', tag => '20250122')")
    assert run(session, query) == [(1, "a")]
    # A tag argument never falls back to a snapshot id.
    fails(session, "CALL sys.rollback(table => 'T', tag => '2')", "does not exist")


def test_tag_named_1_wins_over_snapshot_1_for_a_quoted_version(session):
    """Paimon's TimeTravelUtil: a version string is a tag first, then a snapshot id."""
    session.sql("CREATE TABLE T (a INT)")
    for i in range(1, 4):
        session.sql(f"INSERT INTO T VALUES ({i})")
    run(session, "CALL sys.create_tag(table => 'T', tag => '1', snapshot => 3)")
    assert sorted(run(session, "SELECT a FROM T VERSION AS OF '1'")) == [(1,), (2,), (3,)]
    assert sorted(run(session, "SELECT a FROM T VERSION AS OF '2'")) == [(1,), (2,)]


# -- partitions -------------------------------------------------------------------------------------


def test_expire_partitions_takes_options(session):
    """ExpirePartitionsProcedureTest: options => 'partition.expiration-time = 1d, ...' for this run."""
    session.sql("CREATE TABLE T (k STRING, pt STRING) PARTITIONED BY (pt)")
    rows = (("a", "2024-06-01"), ("b", "2024-06-02"), ("c", "2024-06-03"), ("Never-expire", "9999-09-09"))
    for k, pt in rows:
        session.sql(f"INSERT INTO T VALUES ('{k}', '{pt}')")
    rows = run(session, "CALL sys.expire_partitions(table => 'T', options => 'partition.expiration-time = 1d,"
                        " partition.expiration-max-num = 2, partition.expiration-batch-size = 2,"
                        " partition.timestamp-formatter = yyyy-MM-dd')")
    assert rows == [("pt=2024-06-01",), ("pt=2024-06-02",)]
    assert sorted(run(session, "SELECT * FROM T")) == [("Never-expire", "9999-09-09"), ("c", "2024-06-03")]
    fails(session, "CALL sys.expire_partitions(table => 'T', options => 'nonsense')", "key=value")


# -- table properties -------------------------------------------------------------------------------


def test_arbitrary_table_properties_are_stored_as_paimon_stores_them(session, caplog):
    """DDLWithHiveCatalogTestBase / PaimonViewTestBase: TBLPROPERTIES ('k1' = 'v1') is a plain property."""
    session.sql("CREATE TABLE T (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'k1' = 'v1')")
    assert table(session, "T").options["k1"] == "v1"
    session.sql("ALTER TABLE T SET TBLPROPERTIES ('xyc' = 'abc')")
    assert table(session, "T").options["xyc"] == "abc"
    props = dict(run(session, "SHOW TBLPROPERTIES T"))
    assert props["k1"] == "v1" and props["xyc"] == "abc"
    session.sql("ALTER TABLE T UNSET TBLPROPERTIES ('xyc')")
    assert "xyc" not in table(session, "T").options
    # A near-miss of a known option is stored as well, with a warning naming the option it resembles.
    with caplog.at_level("WARNING", logger="engine.options"):
        session.sql("ALTER TABLE T SET TBLPROPERTIES ('snapshot.num-retained.mx' = '5')")
    assert "snapshot.num-retained.max" in caplog.text
    # An option dyntable cannot honour is refused, and nothing changes.
    fails(session, "ALTER TABLE T SET TBLPROPERTIES ('data-file.path-directory' = 'data')", "not supported")
    assert "data-file.path-directory" not in table(session, "T").options
