"""Data-file indexes through SQL: TBLPROPERTIES, filtered SELECTs and CALL sys.rewrite_file_index
(Paimon's RewriteFileIndexProcedureTest, restated), on the shared Spark session."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError
from sqlext.parse.names import TableName
from tests.integration.sql_helpers import run


def table(session, name):
    return session.table(TableName.parse(name))


def test_rewrite_file_index_as_paimon_tests_it(session):
    """RewriteFileIndexProcedureTest: nothing configured → (0, 0) and no snapshot; after setting
    bloom-filter columns every file is indexed; `where` selects partitions."""
    session.sql("CREATE TABLE t (k INT, v STRING, dt STRING, hh INT) PARTITIONED BY (dt, hh)")
    session.sql("INSERT INTO t VALUES (1, 'a', '2025-08-17', 5), (2, 'b', '2025-10-06', 0)")
    latest = table(session, "t").latest_snapshot().id
    assert run(session, "CALL sys.rewrite_file_index(table => 't')") == [(0, 0)]
    assert table(session, "t").latest_snapshot().id == latest
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('file-index.bloom-filter.columns'='k,v')")
    assert run(session, "CALL sys.rewrite_file_index(table => 't', dry_run => true)") == [(2, 2)]
    assert table(session, "t").latest_snapshot().id == latest
    assert run(session, "CALL sys.rewrite_file_index(table => 't')") == [(2, 2)]
    one = """CALL sys.rewrite_file_index(table => "t", where => "dt='2025-08-17'")"""
    assert run(session, one) == [(1, 1)]
    assert run(session, "CALL sys.rewrite_file_index('t', \"dt = 'none'\")") == [(0, 0)]
    t = table(session, "t")
    assert t.latest_snapshot().commit_kind.name == "COMPACT"
    files = [f for s in t.new_scan().plan().splits for f in s.files]
    assert all(len(f.extra_files) == 1 and f.extra_files[0].endswith(".index") for f in files)
    assert run(session, "SELECT k, v FROM t WHERE v = 'b'") == [(2, "b")]
    log = run(session, "SELECT procedure FROM `t$maintenance_log` WHERE procedure = 'rewrite_file_index'")
    assert len(log) == 4  # every run, the dry run included


def test_indexed_tables_answer_equality_and_in_filters(session):
    session.sql(
        "CREATE TABLE idx (id BIGINT, name STRING, k INT) TBLPROPERTIES ("
        "'file-index.bloom-filter.columns'='id,name', 'file-index.bloom-filter.id.items'='100',"
        "'file-index.bloom-filter.name.items'='100', 'file-index.bitmap.columns'='k')"
    )
    for b in range(3):
        values = ", ".join(f"({i}, 'n{i}', {i % 4})" for i in range(b * 10, b * 10 + 10))
        session.sql(f"INSERT INTO idx VALUES {values}")
    t = table(session, "idx")
    assert all(f.embedded_file_index is not None for s in t.new_scan().plan().splits for f in s.files)
    assert run(session, "SELECT id FROM idx WHERE name = 'n13'") == [(13,)]
    assert sorted(run(session, "SELECT id FROM idx WHERE name IN ('n3', 'n25', 'zz')")) == [(3,), (25,)]
    assert run(session, "SELECT count(*) FROM idx WHERE k = 2") == [(7,)]
    assert run(session, "SELECT count(*) FROM idx WHERE id = 999") == [(0,)]


def test_bad_file_index_options_are_refused_with_the_reason(session):
    with pytest.raises(SqlError, match="not a column"):
        list(session.execute("CREATE TABLE bad (a INT) TBLPROPERTIES ('file-index.bitmap.columns'='nope')"))
    session.sql("CREATE TABLE ok (a INT, b BOOLEAN)")
    with pytest.raises(SqlError, match="BOOLEAN"):
        list(session.execute("ALTER TABLE ok SET TBLPROPERTIES ('file-index.bitmap.columns'='b')"))
    with pytest.raises(SqlError, match="not supported"):
        list(session.execute("ALTER TABLE ok SET TBLPROPERTIES ('file-index.bsi.columns'='a')"))
