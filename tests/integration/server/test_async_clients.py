"""Asynchronous statements as dbt-spark and Superset's SQL Lab run them: PyHive's
``execute(..., async_=True)``, ``poll()`` until the operation ends, then ``fetchall()`` — and
impyla's ``execute_async``.

The handle must say it has a result set before the statement has run (as Spark's Thrift server's
does): PyHive never fetches from a handle without one.
"""

from __future__ import annotations

import time

import pytest
from TCLIService import ttypes as tt

RUNNING = (tt.TOperationState.INITIALIZED_STATE, tt.TOperationState.PENDING_STATE,
           tt.TOperationState.RUNNING_STATE)


def _run(cursor, sql: str) -> tt.TGetOperationStatusResp:
    """``sql`` run as dbt-spark runs it: asynchronously, polled until it ends."""
    cursor.execute(sql, async_=True)
    status = cursor.poll()
    while status.operationState in RUNNING:
        time.sleep(0.05)
        status = cursor.poll()
    return status


def _rows(cursor, sql: str) -> list[tuple]:
    status = _run(cursor, sql)
    assert status.operationState == tt.TOperationState.FINISHED_STATE, status
    return cursor.fetchall()


@pytest.fixture(scope="module")
def cursor(none_server):
    from pyhive import hive

    conn = hive.connect("127.0.0.1", port=none_server.port, username="dbt")
    try:
        yield conn.cursor()
    finally:
        conn.close()


def test_async_select_returns_its_rows(cursor):
    assert _rows(cursor, "SELECT id, CAST(id * 2 AS STRING) AS s FROM range(3) ORDER BY id") == [
        (0, "0"), (1, "2"), (2, "4")]
    assert [d[0] for d in cursor.description] == ["id", "s"]
    assert _rows(cursor, "select 1 as id") == [(1,)]


def test_async_ddl_insert_and_metadata_statements(cursor):
    # Statements without rows answer Spark's empty "Result" column: fetchall works and is empty.
    assert _rows(cursor, "CREATE TABLE async_t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)") == []
    assert [d[0] for d in cursor.description] == ["Result"]
    assert _rows(cursor, "INSERT INTO async_t VALUES (1, 'a'), (2, 'b')") == []
    assert _rows(cursor, "SELECT v FROM async_t ORDER BY id") == [("a",), ("b",)]
    assert ("async_t",) in _rows(cursor, "SHOW TABLES")
    described = _rows(cursor, "DESCRIBE EXTENDED async_t")
    assert described[:2] == [("id", "bigint", None), ("v", "string", None)]
    assert ("Provider", "dyntable", "") in described  # the extended section is there
    assert _rows(cursor, "DROP TABLE async_t") == []


def test_async_ctas_with_a_load_time(cursor):
    # A dbt model with a load time: a CTAS of a Spark TIMESTAMP column.
    assert _rows(cursor, "CREATE TABLE async_loads AS SELECT 1 AS id, current_timestamp() AS loaded_at") == []
    assert _rows(cursor, "SELECT count(*) FROM async_loads WHERE loaded_at <= current_timestamp()") == [(1,)]
    assert _rows(cursor, "DESCRIBE async_loads")[1][:2] == ("loaded_at", "timestamp")


def test_async_error_is_reported_by_poll(cursor):
    status = _run(cursor, "SELECT * FROM async_no_such_table")
    assert status.operationState == tt.TOperationState.ERROR_STATE
    assert status.sqlState == "42P01" and "async_no_such_table" in status.errorMessage
    assert _rows(cursor, "SELECT 2") == [(2,)]  # the cursor goes on


def test_impyla_async(plain_server):
    from impala.dbapi import connect

    from tests.integration.server.conftest import PASSWORD

    conn = connect(host="127.0.0.1", port=plain_server.port, auth_mechanism="PLAIN", user="alice",
                   password=PASSWORD)
    try:
        cursor = conn.cursor()
        cursor.execute_async("SELECT id FROM range(4) ORDER BY id")
        while cursor.is_executing():
            time.sleep(0.05)
        assert cursor.fetchall() == [(0,), (1,), (2,), (3,)]
        cursor.execute_async("CREATE TABLE impyla_async_t (id BIGINT)")
        while cursor.is_executing():
            time.sleep(0.05)
        assert cursor.fetchall() == []
        cursor.execute("SHOW TABLES")
        assert ("impyla_async_t",) in cursor.fetchall()
        cursor.close()
    finally:
        conn.close()
