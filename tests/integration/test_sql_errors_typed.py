"""Typed SQL errors through a real session (issue 8, defect 7): names, nesting, Spark's warehouse."""

from __future__ import annotations

import os

import pytest

from sqlext.errors import SqlError
from sqlext.spark import scratch_warehouse_dir, session_settings


def _fails(session, sql: str, sqlstate: str) -> SqlError:
    with pytest.raises(SqlError) as info:
        list(session.execute(sql))
    assert info.value.sqlstate == sqlstate, str(info.value)
    return info.value


def test_drop_unknown_table_names_the_current_database(session):
    list(session.execute("CREATE DATABASE sales; USE sales"))
    err = _fails(session, "DROP TABLE nope", "42P01")
    assert "sales.nope" in str(err) and "default" not in str(err), str(err)
    message = list(session.execute("DROP TABLE IF EXISTS nope"))[-1].message
    assert message == "Table sales.nope does not exist; nothing dropped"
    message = list(session.execute("DROP DATABASE IF EXISTS nowhere"))[-1].message
    assert message == "Database nowhere does not exist; nothing dropped"


@pytest.mark.parametrize("depth", [100, 5000])
def test_deeply_nested_query_is_statement_too_complex(session, depth):
    # 100 passes the splitter but exhausts sqlglot's recursion; 5000 is refused by the splitter.
    err = _fails(session, "SELECT " + "(" * depth + "1" + ")" * depth, "54001")
    assert "too complex" in str(err)


def test_spark_catalog_warehouse_is_the_scratch_directory(spark):
    # Sessions get the per-user scratch directory unless they name one; the test run names its own
    # (tests/conftest.py), which must not be the shared one either.
    assert session_settings("local[2]")["spark.sql.warehouse.dir"] == scratch_warehouse_dir()
    configured = os.path.normpath(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    assert configured != os.path.normpath(scratch_warehouse_dir())
    assert not configured.startswith(os.getcwd() + os.sep)
