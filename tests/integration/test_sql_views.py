"""Views and cached tables over managed tables, as a Spark user writes them (docs/sql-views.md).

A view reads its tables as they are when the view is queried, never a snapshot of when it was
created; permanent views live in the warehouse and every session sees them; temporary views and
cached tables belong to one session.
"""

from __future__ import annotations

import pytest

from sqlext.errors import SqlAnalysisError, SqlError
from sqlext.session import SqlSession


def rows(session, sql):
    return [tuple(r) for r in session.sql(sql).collect()]


@pytest.fixture
def orders(session):
    session.sql("CREATE TABLE orders (id INT, customer STRING, amount INT)")
    session.sql("INSERT INTO orders VALUES (1, 'ada', 10), (2, 'alan', 20)")
    return session


def test_temporary_view_reads_the_table_as_it_is_when_queried(orders):
    s = orders
    s.sql("CREATE TEMPORARY VIEW big AS SELECT id, amount FROM orders WHERE amount >= 15")
    assert rows(s, "SELECT * FROM big") == [(2, 20)]
    s.sql("INSERT INTO orders VALUES (3, 'grace', 30)")
    s.sql("DELETE FROM orders WHERE id = 2")
    assert rows(s, "SELECT * FROM big ORDER BY id") == [(3, 30)]
    # joined with the table it reads, aggregated, in a subquery and a CTE
    assert rows(s, "SELECT o.customer FROM orders o JOIN big b ON o.id = b.id") == [("grace",)]
    assert rows(s, "WITH x AS (SELECT * FROM big) SELECT count(*) FROM x") == [(1,)]
    assert rows(s, "SELECT id FROM orders WHERE id IN (SELECT id FROM big)") == [(3,)]
    assert rows(s, "TABLE big") == [(3, 30)]


def test_permanent_view_is_kept_in_the_warehouse_for_every_session(orders, spark, warehouse):
    s = orders
    s.sql("CREATE VIEW totals (who, total COMMENT 'sum of amounts') COMMENT 'per customer'"
          " AS SELECT customer, sum(amount) FROM orders GROUP BY customer")
    other = SqlSession(spark, warehouse=warehouse)
    assert rows(other, "SELECT * FROM default.totals ORDER BY who") == [("ada", 10), ("alan", 20)]
    other.sql("INSERT INTO orders VALUES (3, 'ada', 5)")
    assert rows(s, "SELECT total FROM totals WHERE who = 'ada'") == [(15,)]
    described = rows(s, "DESCRIBE totals")
    assert described == [("who", "string", None), ("total", "bigint", "sum of amounts")]
    extended = dict((r[0], r[1]) for r in rows(s, "DESCRIBE EXTENDED totals"))
    assert extended["Type"] == "VIEW" and "GROUP BY customer" in extended["View Text"]
    (create,) = rows(s, "SHOW CREATE TABLE totals")
    assert create[0].startswith("CREATE VIEW default.totals (") and "COMMENT 'per customer'" in create[0]


def test_view_keeps_its_columns_when_the_table_gains_one(orders):
    s = orders
    s.sql("CREATE VIEW everything AS SELECT * FROM orders")
    s.sql("ALTER TABLE orders ADD COLUMNS (note STRING)")
    s.sql("INSERT INTO orders VALUES (3, 'grace', 30, 'new')")
    assert rows(s, "SELECT * FROM everything ORDER BY id")[-1] == (3, "grace", 30)


def test_views_over_views_time_travel_system_tables_and_branches(orders):
    s = orders
    s.sql("CREATE VIEW first_version AS SELECT * FROM orders VERSION AS OF 1")
    s.sql("CREATE VIEW commits AS SELECT snapshot_id, commit_kind FROM orders$snapshots")
    s.sql("CREATE TEMPORARY VIEW ada AS SELECT * FROM first_version WHERE customer = 'ada'")
    s.sql("CREATE TEMPORARY VIEW ada_count AS SELECT count(*) AS n FROM ada")
    s.sql("INSERT INTO orders VALUES (3, 'ada', 30)")
    assert rows(s, "SELECT n FROM ada_count") == [(1,)]  # pinned to snapshot 1 by the inner view
    assert rows(s, "SELECT count(*) FROM first_version") == [(2,)]
    assert rows(s, "SELECT snapshot_id FROM commits ORDER BY 1") == [(1,), (2,)]
    s.sql("ALTER TABLE orders CREATE BRANCH dev")
    s.sql("INSERT INTO orders$branch_dev VALUES (9, 'dev', 90)")
    s.sql("CREATE VIEW dev_orders AS SELECT id FROM orders$branch_dev")
    assert (9,) in rows(s, "SELECT * FROM dev_orders")
    assert (9,) not in rows(s, "SELECT id FROM orders")
    s.sql("INSERT INTO orders$branch_dev VALUES (10, 'dev', 100)")
    assert (10,) in rows(s, "SELECT * FROM dev_orders")


def test_show_views_show_tables_and_drop(orders):
    s = orders
    s.sql("CREATE VIEW v1 AS SELECT id FROM orders")
    s.sql("CREATE TEMPORARY VIEW t1 AS SELECT id FROM orders")
    s.sql("CREATE TEMPORARY VIEW spark_only AS SELECT 1 AS one")  # Spark's own view
    assert rows(s, "SHOW VIEWS") == [("default", "v1", False), ("", "spark_only", True), ("", "t1", True)]
    assert rows(s, "SHOW VIEWS LIKE 't*'") == [("", "t1", True)]
    assert rows(s, "SHOW TABLES") == [
        ("default", "orders", False), ("default", "v1", False), ("", "spark_only", True), ("", "t1", True)
    ]
    assert rows(s, "SELECT * FROM spark_only") == [(1,)]
    s.sql("DROP VIEW v1")
    s.sql("DROP VIEW t1")
    s.sql("DROP VIEW spark_only")
    s.sql("DROP VIEW IF EXISTS v1")
    assert rows(s, "SHOW VIEWS") == []
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("DROP VIEW v1")
    assert e.value.sqlstate == "42P01"
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("DROP VIEW orders")
    assert e.value.sqlstate == "42809" and "DROP TABLE" in e.value.message
    s.sql("CREATE VIEW v2 AS SELECT id FROM orders")
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("DROP TABLE v2")
    assert e.value.sqlstate == "42809" and "DROP VIEW" in e.value.message
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("CREATE TABLE v2 (x INT)")
    assert "is a view" in e.value.message


def test_create_view_errors_name_the_problem(orders):
    s = orders
    s.sql("CREATE TEMPORARY VIEW tmp AS SELECT id FROM orders")
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("CREATE VIEW perm AS SELECT * FROM tmp")
    assert e.value.sqlstate == "42K0F" and "CREATE TEMPORARY VIEW" in e.value.message
    s.sql("CREATE VIEW a AS SELECT id FROM orders")
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("CREATE VIEW a AS SELECT id FROM orders")
    assert e.value.sqlstate == "42710"
    (result,) = s.execute("CREATE VIEW IF NOT EXISTS a AS SELECT 1 AS x FROM orders")
    assert "already exists" in result.message
    s.sql("CREATE VIEW b AS SELECT id FROM a")
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("CREATE OR REPLACE VIEW a AS SELECT id FROM b")
    assert e.value.sqlstate == "42K0H"
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("CREATE VIEW c (x) AS SELECT id, customer FROM orders")
    assert e.value.sqlstate == "21S01"
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("SELECT * FROM a VERSION AS OF 1")
    assert e.value.sqlstate == "42809" and (e.value.line, e.value.column) == (1, 15)
    with pytest.raises(SqlError) as e:
        s.sql("CREATE VIEW d AS SELECT nope FROM orders")
    assert e.value.sqlstate == "42703"
    assert rows(s, "SHOW VIEWS") == [("default", "a", False), ("default", "b", False), ("", "tmp", True)]


def test_view_over_a_dropped_table_fails_at_the_view(orders):
    s = orders
    s.sql("CREATE VIEW gone AS SELECT id FROM orders")
    s.sql("DROP TABLE orders")
    with pytest.raises(SqlAnalysisError) as e:
        s.sql("SELECT * FROM gone")
    assert (e.value.line, e.value.column) == (1, 15)
    assert e.value.message.startswith("view default.gone cannot be read: [TABLE_OR_VIEW_NOT_FOUND]")


def test_cache_table_is_rebuilt_after_a_commit(orders):
    s = orders
    s.sql("CACHE TABLE spend AS SELECT customer, sum(amount) AS total FROM orders GROUP BY customer")
    assert s.spark.catalog.isCached("spend")
    assert rows(s, "SELECT * FROM spend ORDER BY customer") == [("ada", 10), ("alan", 20)]
    s.sql("INSERT INTO orders VALUES (3, 'ada', 5)")
    assert rows(s, "SELECT * FROM spend ORDER BY customer") == [("ada", 15), ("alan", 20)]
    assert s.spark.catalog.isCached("spend")
    # a cached table over a cached table follows both
    s.sql("CACHE LAZY TABLE top AS SELECT max(total) AS m FROM spend")
    s.sql("INSERT INTO orders VALUES (4, 'alan', 100)")
    assert rows(s, "SELECT m FROM top") == [(120,)]
    s.sql("UNCACHE TABLE top")
    s.sql("UNCACHE TABLE IF EXISTS top")
    assert "top" not in [r[1] for r in rows(s, "SHOW VIEWS")]


def test_cache_table_of_a_managed_table(orders):
    s = orders
    s.sql("CACHE TABLE orders")
    assert s.spark.catalog.isCached("orders")
    s.sql("INSERT INTO orders VALUES (3, 'grace', 30)")
    assert rows(s, "SELECT count(*) FROM orders") == [(3,)]
    s.sql("UNCACHE TABLE orders")
    assert rows(s, "SELECT count(*) FROM orders") == [(3,)]
    assert rows(s, "SHOW VIEWS") == []


def test_views_survive_statement_cleanup_and_bind_fresh_each_time(orders):
    """No per-statement view outlives its statement: views are expanded, not kept."""
    s = orders
    s.sql("CREATE TEMPORARY VIEW v AS SELECT * FROM orders")
    for _ in range(3):
        assert rows(s, "SELECT count(*) FROM v") == [(2,)]
    internal = [t.name for t in s.spark.catalog.listTables() if t.name.startswith("__dyntable_")]
    assert internal == []
