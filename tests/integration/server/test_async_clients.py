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


def test_columns_of_one_name(cursor):
    # A join's a.id, b.id: two columns named alike travel by position, each with its own name.
    assert _rows(cursor, "SELECT a.id, b.id, CAST(a.id AS STRING) FROM range(2) a JOIN range(2) b "
                         "ON a.id = b.id ORDER BY 1") == [(0, 0, "0"), (1, 1, "1")]
    assert [d[0] for d in cursor.description] == ["id", "id", "id"]


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


def test_show_functions_answers_one_column_as_spark_does(cursor):
    # Spark's Thrift server answers the command's own column, `function`; Superset's SQL Lab reads
    # the function names from the single column.
    names = _rows(cursor, "SHOW FUNCTIONS")
    assert [d[0] for d in cursor.description] == ["function"]
    assert {"date_add", "current_timestamp", "sum"} <= {n for (n,) in names}


def test_a_misspelt_option_is_refused_to_the_client(cursor):
    status = _run(cursor, "CREATE TABLE async_opts (id BIGINT) TBLPROPERTIES ('bukcet' = '4')")
    assert status.operationState == tt.TOperationState.ERROR_STATE
    assert "'bukcet'" in status.errorMessage and "Did you mean 'bucket'?" in status.errorMessage
    assert ("async_opts",) not in _rows(cursor, "SHOW TABLES")
    assert _rows(cursor, "CREATE TABLE async_opts (id BIGINT) TBLPROPERTIES "
                         "('bucket' = '4', 'bucket-key' = 'id', 'myteam.owner' = 'analytics')") == []
    properties = dict(_rows(cursor, "SHOW TBLPROPERTIES async_opts"))
    assert properties["bucket"] == "4" and properties["myteam.owner"] == "analytics"


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


# --------------------------------------------------------------------------- long polling

LONG_QUERY = "SELECT sum(id % 7) FROM range(0, 500000000000, 1, 1)"  # minutes of work: always cancelled


@pytest.fixture
def status_calls(monkeypatch):
    """Counts the server's GetOperationStatus calls."""
    from sqlext.server.thrift_service import Handler

    calls = []
    answer = Handler.GetOperationStatus

    def counted(self, req):
        calls.append(req)
        return answer(self, req)

    monkeypatch.setattr(Handler, "GetOperationStatus", counted)
    return calls


def _connect(server, **configuration):
    from pyhive import hive

    return hive.connect("127.0.0.1", port=server.port, username="dbt", configuration=configuration or None)


def test_a_short_statement_is_heard_of_at_the_first_poll(none_server, status_calls):
    # dbt-spark: execute async, poll, sleep (seconds) while still running, poll again. The long poll
    # answers the first poll when the statement ends; a generous timeout keeps a loaded machine
    # from turning the count into a timing test.
    conn = _connect(none_server, **{"hive.server2.long.polling.timeout": "120s"})
    try:
        cursor = conn.cursor()
        cursor.execute("select 1", async_=True)
        state = cursor.poll().operationState
        while state in RUNNING:
            time.sleep(1)
            state = cursor.poll().operationState
        assert state == tt.TOperationState.FINISHED_STATE
        assert cursor.fetchall() == [(1,)]
        assert len(status_calls) == 1
    finally:
        conn.close()


def test_the_long_poll_ends_at_its_timeout(none_server, status_calls):
    conn = _connect(none_server, **{"hive.server2.long.polling.timeout": "300ms"})
    try:
        cursor = conn.cursor()
        cursor.execute(LONG_QUERY, async_=True)
        started = time.monotonic()
        assert cursor.poll().operationState == tt.TOperationState.RUNNING_STATE
        waited = time.monotonic() - started
        assert waited >= 0.3  # it waited for the end, up to its timeout ...
        assert waited < 60  # ... and then answered (the query runs for minutes)
        cursor.cancel()
        assert cursor.poll().operationState == tt.TOperationState.CANCELED_STATE
    finally:
        conn.close()


def test_a_long_poll_holds_up_no_other_client_and_a_cancel_ends_it(none_server):
    import threading

    waiting = _connect(none_server, **{"hive.server2.long.polling.timeout": "10min"})
    other = _connect(none_server)
    try:
        cursor = waiting.cursor()
        cursor.execute(LONG_QUERY, async_=True)
        answers = []
        poller = threading.Thread(target=lambda: answers.append(cursor.poll().operationState), daemon=True)
        poller.start()
        time.sleep(0.5)  # the poll is waiting on the server now
        assert poller.is_alive() and not answers
        other_cursor = other.cursor()
        other_cursor.execute("SELECT 40 + 2")  # another client's statement is served meanwhile
        assert other_cursor.fetchall() == [(42,)]
        assert poller.is_alive()
        # a cancel (from any connection: handles are the server's) answers the waiting poll at once
        resp = other._client.CancelOperation(tt.TCancelOperationReq(operationHandle=cursor._operationHandle))
        assert resp.status.statusCode == tt.TStatusCode.SUCCESS_STATUS
        poller.join(timeout=60)
        assert answers == [tt.TOperationState.CANCELED_STATE]
    finally:
        other.close()
        waiting.close()


def test_a_bad_long_poll_setting_refuses_the_session(none_server):
    from pyhive import exc

    with pytest.raises(exc.OperationalError) as info:
        _connect(none_server, **{"hive.server2.long.polling.timeout": "soon"})
    status = info.value.args[0].status
    assert status.sqlState == "22023" and "not a time" in status.errorMessage
