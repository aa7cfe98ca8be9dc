"""dyntable-server's protocol behaviour with a raw TCLIService client: paging, streaming, concurrency,
cancel, disconnect, metadata calls, errors."""

from __future__ import annotations

import socket
import threading

import pytest
from TCLIService import ttypes as tt

from engine.system_tables import DATA_TABLES, METADATA_TABLES
from tests.integration.server.conftest import wait_for

LONG_QUERY = (
    "SELECT sum(id % 7) FROM range(0, 500000000000, 1, 1)"  # minutes of work on one core: always cancelled
)


def _connect(server, **kwargs):
    from pyhive import hive

    return hive.connect("127.0.0.1", port=server.port, username="tester", **kwargs)


def _ok(resp):
    assert resp.status.statusCode == tt.TStatusCode.SUCCESS_STATUS, resp.status
    return resp


def _values(col: tt.TColumn) -> list:
    for kind in ("boolVal", "byteVal", "i16Val", "i32Val", "i64Val", "doubleVal", "stringVal", "binaryVal"):
        data = getattr(col, kind)
        if data is not None:
            nulls = data.nulls or b""
            return [None if i // 8 < len(nulls) and nulls[i // 8] >> (i % 8) & 1 else v
                    for i, v in enumerate(data.values)]
    raise AssertionError(f"empty column {col}")


def _fetch(conn, handle, rows=10_000, orientation=tt.TFetchOrientation.FETCH_NEXT):
    resp = _ok(conn._client.FetchResults(tt.TFetchResultsReq(operationHandle=handle, orientation=orientation,
                                                                maxRows=rows)))
    return resp


def _result(conn, handle) -> dict[str, list]:
    schema = _ok(
        conn._client.GetResultSetMetadata(tt.TGetResultSetMetadataReq(operationHandle=handle))
    ).schema
    names = [c.columnName for c in schema.columns]
    out: dict[str, list] = {n: [] for n in names}
    while True:
        resp = _fetch(conn, handle)
        for name, col in zip(names, resp.results.columns, strict=True):
            out[name].extend(_values(col))
        if not resp.hasMoreRows:
            return out


def _execute(conn, sql, run_async=False):
    req = tt.TExecuteStatementReq(sessionHandle=conn._sessionHandle, statement=sql, runAsync=run_async)
    return conn._client.ExecuteStatement(req)


def _server_op(server, conn, handle):
    return server.state.session(conn._sessionHandle.sessionId.guid).operation(handle.operationId.guid)


def _jobs(spark, group):
    tracker = spark.sparkContext.statusTracker()
    return [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]


def _running(spark, group):
    return [j for j in _jobs(spark, group) if j is not None and j.status == "RUNNING"]


def test_paging_fetch_next_and_fetch_first(none_server):
    conn = _connect(none_server)
    try:
        handle = _ok(_execute(conn, "SELECT id FROM range(0, 25, 1, 3) ORDER BY id")).operationHandle
        assert handle.hasResultSet
        schema = _ok(
            conn._client.GetResultSetMetadata(tt.TGetResultSetMetadataReq(operationHandle=handle))
        ).schema
        assert [(c.columnName, c.typeDesc.types[0].primitiveEntry.type) for c in schema.columns] == [
            ("id", tt.TTypeId.BIGINT_TYPE)]
        pages = []
        while True:
            resp = _fetch(conn, handle, rows=10)
            pages.append((resp.results.startRowOffset, _values(resp.results.columns[0]), resp.hasMoreRows))
            if not resp.hasMoreRows:
                break
        assert [(p[0], p[1][:1], len(p[1])) for p in pages][:3] == [
            (0, [0], 10),
            (10, [10], 10),
            (20, [20], 5),
        ]
        assert [v for p in pages for v in p[1]] == list(range(25))
        first = _fetch(conn, handle, rows=4, orientation=tt.TFetchOrientation.FETCH_FIRST)
        assert (first.results.startRowOffset, _values(first.results.columns[0])) == (0, [0, 1, 2, 3])
        prior = conn._client.FetchResults(tt.TFetchResultsReq(
            operationHandle=handle, orientation=tt.TFetchOrientation.FETCH_PRIOR, maxRows=4))
        assert prior.status.statusCode == tt.TStatusCode.ERROR_STATUS and prior.status.sqlState == "HY106"
        _ok(conn._client.CloseOperation(tt.TCloseOperationReq(operationHandle=handle)))
        gone = conn._client.FetchResults(
            tt.TFetchResultsReq(operationHandle=handle, orientation=0, maxRows=4)
        )
        assert gone.status.statusCode == tt.TStatusCode.INVALID_HANDLE_STATUS
    finally:
        conn.close()


def test_types_and_nulls_round_trip(none_server):
    conn = _connect(none_server)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "SELECT CAST(1 AS TINYINT) AS b, CAST(2 AS SMALLINT) AS s, 3 AS i, CAST(4 AS BIGINT) AS l, "
            "CAST(1.5 AS FLOAT) AS f, 2.5D AS d, CAST('7.25' AS DECIMAL(5,2)) AS dec, true AS bo, "
            "'x' AS str, "
            "DATE '2024-02-03' AS dt, TIMESTAMP_NTZ '2024-02-03 04:05:06.5' AS ts, X'0102' AS bin, "
            "array(1, 2) AS arr, map('k', 1) AS m, named_struct('a', 1) AS st, CAST(NULL AS INT) AS n "
            "UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
            "NULL, NULL, 5"
        )
        rows = cursor.fetchall()
        types = [d[1] for d in cursor.description]
        assert types == [
            "TINYINT_TYPE",
            "SMALLINT_TYPE",
            "INT_TYPE",
            "BIGINT_TYPE",
            "FLOAT_TYPE",
            "DOUBLE_TYPE",
            "DECIMAL_TYPE",
            "BOOLEAN_TYPE",
            "STRING_TYPE",
            "DATE_TYPE",
            "TIMESTAMP_TYPE",
            "BINARY_TYPE",
            "ARRAY_TYPE",
            "MAP_TYPE",
            "STRUCT_TYPE",
            "INT_TYPE",
        ]
        first = rows[0]
        assert first[:6] == (1, 2, 3, 4, 1.5, 2.5)
        assert str(first[6]) == "7.25" and first[7] is True and first[8] == "x"
        assert str(first[9]) == "2024-02-03" and str(first[10]).startswith("2024-02-03 04:05:06.5")
        assert (
            first[11] == b"\x01\x02" and first[12:15] == ("[1,2]", '{"k":1}', '{"a":1}') and first[15] is None
        )
        assert rows[1] == (None,) * 15 + (5,)
    finally:
        conn.close()


def _stream(server, spark, rows: int, partitions: int) -> None:
    """Fetch ``rows`` rows in pages: Spark runs one job per partition, each only when the client gets
    there."""
    conn = _connect(server)
    try:
        sql = f"SELECT id, CAST(id AS STRING) AS s FROM range(0, {rows}, 1, {partitions})"
        handle = _ok(_execute(conn, sql)).operationHandle
        op = _server_op(server, conn, handle)
        assert len(_jobs(spark, op.group)) == 1  # the first partition only: nothing collected whole
        per_partition = rows // partitions
        count = total = 0
        most_jobs_seen_early = None
        while True:
            resp = _fetch(conn, handle, rows=10_000)
            ids = _values(resp.results.columns[0])
            count += len(ids)
            total += sum(ids)
            assert op.pager is not None and op.pager._pending_rows <= per_partition  # ≤ one partition held
            if most_jobs_seen_early is None and count >= per_partition:
                most_jobs_seen_early = len(_jobs(spark, op.group))
            if not resp.hasMoreRows:
                break
        assert (count, total) == (rows, rows * (rows - 1) // 2)
        assert most_jobs_seen_early is not None and most_jobs_seen_early <= 2
        assert len(_jobs(spark, op.group)) == partitions
    finally:
        conn.close()


def test_result_streamed_in_pages(none_server, spark):
    _stream(none_server, spark, rows=60_000, partitions=6)


@pytest.mark.slow
def test_million_rows_streamed_in_pages(none_server, spark):
    _stream(none_server, spark, rows=1_000_000, partitions=20)


def test_eight_concurrent_clients_with_their_own_database_and_settings(none_server):
    setup = _connect(none_server)
    try:
        for i in range(8):
            setup.cursor().execute(f"CREATE DATABASE IF NOT EXISTS conc{i}")
    finally:
        setup.close()
    barrier = threading.Barrier(8)
    results: dict[int, object] = {}

    def client(i: int) -> None:
        try:
            zone = ["UTC", "Asia/Tokyo"][i % 2]
            conn = _connect(none_server, database=f"conc{i}",
                            configuration={"set:hiveconf:spark.sql.session.timeZone": zone})
            try:
                cursor = conn.cursor()
                barrier.wait(timeout=120)
                cursor.execute("CREATE TABLE t (id INT, v STRING)")
                cursor.execute(f"INSERT INTO t VALUES ({i}, 'client{i}')")
                cursor.execute("SELECT id, v, current_timezone() FROM t")
                results[i] = cursor.fetchall()
            finally:
                conn.close()
        except BaseException as e:  # noqa: BLE001 - reported below
            results[i] = e

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert results == {i: [(i, f"client{i}", ["UTC", "Asia/Tokyo"][i % 2])] for i in range(8)}


def test_long_query_does_not_block_metadata_and_cancel_stops_it(none_server, spark):
    busy, other = _connect(none_server), _connect(none_server)
    try:
        handle = _ok(_execute(busy, LONG_QUERY, run_async=True)).operationHandle
        op = _server_op(none_server, busy, handle)
        wait_for(lambda: _running(spark, op.group), what="the long query's Spark job")
        tables = _ok(
            other._client.GetTables(tt.TGetTablesReq(sessionHandle=other._sessionHandle, schemaName="%"))
        )
        _result(other, tables.operationHandle)
        other.cursor().execute("SELECT 1")
        status = _ok(busy._client.GetOperationStatus(tt.TGetOperationStatusReq(operationHandle=handle)))
        assert status.operationState == tt.TOperationState.RUNNING_STATE
        _ok(busy._client.CancelOperation(tt.TCancelOperationReq(operationHandle=handle)))
        status = _ok(busy._client.GetOperationStatus(tt.TGetOperationStatusReq(operationHandle=handle)))
        assert status.operationState == tt.TOperationState.CANCELED_STATE
        wait_for(lambda: not _running(spark, op.group), what="the cancelled job to stop")
        assert all(j.status == "FAILED" for j in _jobs(spark, op.group))
    finally:
        busy.close()
        other.close()


def test_client_disconnect_cancels_its_query_and_closes_its_session(none_server, spark):
    conn = _connect(none_server)
    guid = conn._sessionHandle.sessionId.guid
    session = none_server.state.session(guid)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            _execute(conn, LONG_QUERY)  # synchronous: blocks until the server gives up on us
        except BaseException as e:  # noqa: BLE001 - the socket is shut under it
            errors.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    wait_for(lambda: session.operations, what="the statement to start")
    op = next(iter(session.operations.values()))
    wait_for(lambda: _running(spark, op.group), what="the long query's Spark job")
    conn._transport._trans.handle.shutdown(socket.SHUT_RDWR)  # the client vanishes
    wait_for(lambda: guid not in none_server.state.sessions, what="the session to close")
    wait_for(lambda: not _running(spark, op.group), what="the job to be cancelled")
    worker.join(60)
    assert errors and all(j.status == "FAILED" for j in _jobs(spark, op.group))


def test_metadata_calls(none_server):
    conn = _connect(none_server)
    try:
        cursor = conn.cursor()
        cursor.execute("CREATE TABLE meta_t (id BIGINT, v STRING, d DECIMAL(10,2), ts TIMESTAMP, "
                       "wall TIMESTAMP_NTZ, PRIMARY KEY (id) NOT ENFORCED)")
        c, sh = conn._client, conn._sessionHandle
        schemas = _result(conn, _ok(c.GetSchemas(tt.TGetSchemasReq(sessionHandle=sh))).operationHandle)
        assert "default" in schemas["TABLE_SCHEM"]
        tables = _result(conn, _ok(c.GetTables(tt.TGetTablesReq(
            sessionHandle=sh, schemaName="default", tableName="meta%"))).operationHandle)
        assert list(zip(tables["TABLE_NAME"], tables["TABLE_TYPE"], strict=True)) == [("meta_t", "TABLE")]
        system = _result(conn, _ok(c.GetTables(tt.TGetTablesReq(
            sessionHandle=sh, schemaName="default", tableName="meta%", tableTypes=["SYSTEM TABLE"]))
        ).operationHandle)
        kinds = dict(zip(system["TABLE_NAME"], system["TABLE_TYPE"], strict=True))
        assert set(kinds) == {f"meta_t${n}" for n in (*METADATA_TABLES, *DATA_TABLES)}
        assert kinds["meta_t$snapshots"] == kinds["meta_t$audit_log"] == "SYSTEM TABLE"
        only = _result(
            conn,
            _ok(
                c.GetTables(
                    tt.TGetTablesReq(
                        sessionHandle=sh, schemaName="default", tableName="meta%", tableTypes=["TABLE"]
                    )
                )
            ).operationHandle,
        )
        assert only["TABLE_NAME"] == ["meta_t"]
        cols = _result(conn, _ok(c.GetColumns(tt.TGetColumnsReq(
            sessionHandle=sh, schemaName="default", tableName="meta_t"))).operationHandle)
        assert list(zip(cols["COLUMN_NAME"], cols["DATA_TYPE"], cols["TYPE_NAME"], cols["ORDINAL_POSITION"],
                        strict=True)) == [
            ("id", -5, "BIGINT", 1), ("v", 12, "STRING", 2), ("d", 3, "DECIMAL(10,2)", 3),
            ("ts", 93, "TIMESTAMP", 4), ("wall", 93, "TIMESTAMP_NTZ", 5)]  # Spark's names, JDBC's TIMESTAMP
        assert cols["IS_NULLABLE"][0] == "NO" and cols["DECIMAL_DIGITS"][2] == 2
        snap = _result(conn, _ok(c.GetColumns(tt.TGetColumnsReq(
            sessionHandle=sh, schemaName="default", tableName="meta\\_t$snapshots", columnName="snapshot_id"))
        ).operationHandle)
        assert list(zip(snap["COLUMN_NAME"], snap["DATA_TYPE"], strict=True)) == [("snapshot_id", -5)]
        pks = _result(conn, _ok(c.GetPrimaryKeys(tt.TGetPrimaryKeysReq(
            sessionHandle=sh, schemaName="default", tableName="meta_t"))).operationHandle)
        assert (pks["COLUMN_NAME"], pks["KEY_SEQ"]) == (["id"], [1])
        types = _result(conn, _ok(c.GetTypeInfo(tt.TGetTypeInfoReq(sessionHandle=sh))).operationHandle)
        assert dict(zip(types["TYPE_NAME"], types["DATA_TYPE"], strict=True))["BIGINT"] == -5
        table_types = _result(
            conn, _ok(c.GetTableTypes(tt.TGetTableTypesReq(sessionHandle=sh))).operationHandle
        )
        assert table_types["TABLE_TYPE"] == ["TABLE", "SYSTEM TABLE", "VIEW"]
        catalogs = _result(conn, _ok(c.GetCatalogs(tt.TGetCatalogsReq(sessionHandle=sh))).operationHandle)
        assert catalogs == {"TABLE_CAT": []}
        funcs = _result(conn, _ok(c.GetFunctions(tt.TGetFunctionsReq(
            sessionHandle=sh, functionName="create_tag"))).operationHandle)
        assert ("sys", "create_tag") in set(zip(funcs["FUNCTION_SCHEM"], funcs["FUNCTION_NAME"], strict=True))
        sums = _result(conn, _ok(c.GetFunctions(tt.TGetFunctionsReq(sessionHandle=sh, functionName="sum"))
                                 ).operationHandle)
        assert "sum" in sums["FUNCTION_NAME"]
        info = _ok(c.GetInfo(tt.TGetInfoReq(sessionHandle=sh, infoType=tt.TGetInfoType.CLI_DBMS_NAME)))
        assert info.infoValue.stringValue == "Spark SQL"
    finally:
        conn.close()


def test_errors_carry_sqlstate_and_caret(none_server):
    conn = _connect(none_server)
    try:
        resp = _execute(conn, "SELECT *\nFROM no_such")
        assert resp.status.statusCode == tt.TStatusCode.ERROR_STATUS
        assert resp.status.sqlState == "42P01"
        assert resp.status.errorMessage.endswith("line 2, column 6\n  FROM no_such\n       ^")
        async_handle = _ok(_execute(conn, "CALL sys.no_such_procedure(1)", run_async=True)).operationHandle
        wait_for(lambda: conn._client.GetOperationStatus(tt.TGetOperationStatusReq(
            operationHandle=async_handle)).operationState == tt.TOperationState.ERROR_STATE, what="the error")
        status = conn._client.GetOperationStatus(tt.TGetOperationStatusReq(operationHandle=async_handle))
        assert status.sqlState == "42883" and "no_such_procedure" in status.errorMessage
    finally:
        conn.close()


def test_open_session_errors(none_server):
    from pyhive import hive

    with pytest.raises(Exception, match="does not exist"):
        hive.connect(
            "127.0.0.1", port=none_server.port, username="u", configuration={"use:database": "nowhere"}
        )
    # A limit of 0 refuses every session however many an earlier test still has open or closing.
    none_server.state.max_sessions, limit = 0, none_server.state.max_sessions
    try:
        with pytest.raises(Exception, match="53300"):
            _connect(none_server)
    finally:
        none_server.state.max_sessions = limit


def test_silent_and_excess_connections_are_dropped(spark, tmp_path):
    from sqlext.server.sessions import ServerState
    from sqlext.server.thrift_service import HiveServer

    server = HiveServer(ServerState(spark, str(tmp_path / "wh"), max_sessions=1), "127.0.0.1", 0,
                        auth="NONE", auth_timeout=1.0).start()
    try:
        assert server.max_connections == 2
        silent = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
        wait_for(lambda: len(server._clients_now()) == 2, what="two connections held")
        with socket.create_connection(("127.0.0.1", server.port)) as excess:
            excess.settimeout(60)
            assert excess.recv(1) == b""  # closed at once: the server holds no more connections
        for sock in silent:  # never started SASL: dropped after the login timeout
            sock.settimeout(60)
            assert sock.recv(1) == b""
            sock.close()
        assert server.state.sessions == {}
    finally:
        server.stop()


def test_query_timeout_cancels_the_statement(none_server, spark):
    conn = _connect(none_server)
    try:
        req = tt.TExecuteStatementReq(sessionHandle=conn._sessionHandle, statement=LONG_QUERY, runAsync=False,
                                      queryTimeout=1)
        resp = conn._client.ExecuteStatement(req)
        assert resp.status.statusCode == tt.TStatusCode.ERROR_STATUS and resp.status.sqlState == "57014"
        assert "timeout of 1 s" in resp.status.errorMessage
        req.runAsync = True
        handle = _ok(conn._client.ExecuteStatement(req)).operationHandle
        op = _server_op(none_server, conn, handle)
        op.done.wait(120)
        status = _ok(conn._client.GetOperationStatus(tt.TGetOperationStatusReq(operationHandle=handle)))
        assert status.operationState == tt.TOperationState.TIMEDOUT_STATE and status.sqlState == "57014"
        wait_for(lambda: not _running(spark, op.group), what="the timed-out job to stop")
    finally:
        conn.close()
