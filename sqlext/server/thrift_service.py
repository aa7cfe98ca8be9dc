"""The HiveServer2 Thrift service: answering TCLIService calls, and the socket server around it.

* :class:`Handler` implements the ``TCLIService`` interface (stubs from PyHive's ``TCLIService``
  package) for one client connection on a :class:`~sqlext.server.sessions.ServerState`. Every
  call answers with a ``TStatus``; a failure is ``ERROR_STATUS`` with the SQLSTATE and the text
  ``dyntable-sql`` prints (message, position, caret) — never a Thrift exception.
* :class:`HiveServer` accepts connections on one listening socket and serves each in its own
  thread: SASL PLAIN (``--auth PLAIN``/``NONE``) or plain Thrift (``NOSASL``), binary protocol.
  A client is served only after it authenticated. When a connection ends (the client closed it
  or vanished), every session it opened is closed and its running statements cancelled; a
  synchronous statement notices a vanished client while it runs (the socket is polled).
* A client whose transport does not match ``--auth`` (impyla's default NOSASL against a SASL
  server, or a SASL client against ``--auth NOSASL``) is told so in its own protocol — an
  ``OpenSession`` error status, or a SASL ``BAD`` message — and the server logs the cause; the
  first byte tells them apart (``0x80`` starts a binary Thrift call, ``0x01`` a SASL START).
"""

from __future__ import annotations

import logging
import select
import socket
import threading
from collections.abc import Callable
from importlib import metadata
from typing import Any

from TCLIService import TCLIService
from TCLIService import ttypes as tt
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TType
from thrift.transport import TSocket, TTransport

from sqlext.server import metadata as meta
from sqlext.server.auth import START, AuthenticationError, Authenticator, SaslServerTransport
from sqlext.server.results import empty_row_set, row_set, table_schema
from sqlext.server.sessions import ClientSession, Failure, Operation, ServerState, State, UnknownHandleError

log = logging.getLogger("dyntable.server")

MAX_PROTOCOL = tt.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V10
MIN_PROTOCOL = tt.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V6  # columnar results
DEFAULT_FETCH_ROWS = 1000
MAX_FETCH_ROWS = 1_000_000  # one page; a client asking for more gets it over several fetches
AUTH_TIMEOUT = 30.0  # seconds a client has to complete the SASL exchange
_FETCH_LOG = 1  # TFetchResultsReq.fetchType of the operation log (we keep none)

_STATES = {
    State.PENDING: tt.TOperationState.PENDING_STATE,
    State.RUNNING: tt.TOperationState.RUNNING_STATE,
    State.FINISHED: tt.TOperationState.FINISHED_STATE,
    State.CANCELED: tt.TOperationState.CANCELED_STATE,
    State.CLOSED: tt.TOperationState.CLOSED_STATE,
    State.ERROR: tt.TOperationState.ERROR_STATE,
    State.TIMEDOUT: tt.TOperationState.TIMEDOUT_STATE,
}


def _ok() -> tt.TStatus:
    return tt.TStatus(statusCode=tt.TStatusCode.SUCCESS_STATUS)


def _error(failure: Failure) -> tt.TStatus:
    code = (
        tt.TStatusCode.INVALID_HANDLE_STATUS if failure.sqlstate == "HY010" else tt.TStatusCode.ERROR_STATUS
    )
    # infoMessages in Hive's form, "*class:message:<frames>:<last own frame>" then one line per
    # frame (none here: 0 and -1): Hive's JDBC driver parses it into the exception's cause and
    # fails, hiding the message, on any other shape.
    return tt.TStatus(statusCode=code, sqlState=failure.sqlstate, errorCode=0, errorMessage=failure.message,
                      infoMessages=[f"*java.sql.SQLException:{failure.message}:0:-1"])


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


class Handler:
    """TCLIService calls of one connection."""

    def __init__(self, state: ServerState, connection: int, user: str | None,
                 alive: Callable[[], bool] = lambda: True) -> None:
        self.state = state
        self.connection = connection
        self.user = user  # the SASL user; a NOSASL client names itself in OpenSession
        self.alive = alive

    # -- helpers ------------------------------------------------------------------------------
    def _session(self, handle: tt.TSessionHandle) -> ClientSession:
        return self.state.session(handle.sessionId.guid)

    def _operation(self, handle: tt.TOperationHandle) -> Operation:
        return self.state.operation(handle.operationId.guid)

    @staticmethod
    def _op_handle(op: Operation) -> tt.TOperationHandle:
        return tt.TOperationHandle(
            operationId=tt.THandleIdentifier(guid=op.guid, secret=op.secret),
            operationType=op.kind, hasResultSet=op.has_result_set,
        )

    def _metadata(self, req: Any, kind: int, build: Callable[[ClientSession], Any], resp: type) -> Any:
        try:
            session = self._session(req.sessionHandle)
        except Exception as e:  # noqa: BLE001
            return resp(status=_error(Failure.of(e)))
        op = session.add(Operation(session, kind))
        try:
            op.complete(build(session))
        except Exception as e:  # noqa: BLE001 - the client gets the error as its status
            session.remove(op.guid)
            return resp(status=_error(Failure.of(e)))
        return resp(status=_ok(), operationHandle=self._op_handle(op))

    # -- sessions ------------------------------------------------------------------------------
    def OpenSession(self, req: tt.TOpenSessionReq) -> tt.TOpenSessionResp:
        version = min(max(req.client_protocol, 0), MAX_PROTOCOL)
        if version < MIN_PROTOCOL:
            failure = Failure(
                "08001", "client protocol too old: HiveServer2 protocol V6 or later is required"
            )
            return tt.TOpenSessionResp(status=_error(failure), serverProtocolVersion=MAX_PROTOCOL)
        user = self.user or req.username or "anonymous"
        try:
            session = self.state.open_session(user, self.connection, req.configuration)
        except Exception as e:  # noqa: BLE001
            return tt.TOpenSessionResp(status=_error(Failure.of(e)), serverProtocolVersion=version)
        log.info("session %s opened for %s", session.guid.hex(), user)
        return tt.TOpenSessionResp(
            status=_ok(),
            serverProtocolVersion=version,
            sessionHandle=tt.TSessionHandle(
                sessionId=tt.THandleIdentifier(guid=session.guid, secret=session.secret)
            ),
            configuration={},
        )

    def CloseSession(self, req: tt.TCloseSessionReq) -> tt.TCloseSessionResp:
        try:
            self._session(req.sessionHandle)
        except Exception as e:  # noqa: BLE001
            return tt.TCloseSessionResp(status=_error(Failure.of(e)))
        self.state.close_session(req.sessionHandle.sessionId.guid)
        return tt.TCloseSessionResp(status=_ok())

    def GetInfo(self, req: tt.TGetInfoReq) -> tt.TGetInfoResp:
        try:
            self._session(req.sessionHandle)
        except Exception as e:  # noqa: BLE001
            return tt.TGetInfoResp(status=_error(Failure.of(e)), infoValue=tt.TGetInfoValue(stringValue=""))
        kinds = tt.TGetInfoType
        # Tools pick their SQL dialect from the DBMS name: the SQL is Spark SQL.
        values = {
            kinds.CLI_SERVER_NAME: tt.TGetInfoValue(stringValue="dyntable"),
            kinds.CLI_DBMS_NAME: tt.TGetInfoValue(stringValue="Spark SQL"),
            kinds.CLI_DBMS_VER: tt.TGetInfoValue(stringValue=_version("pyspark")),
            kinds.CLI_MAX_COLUMN_NAME_LEN: tt.TGetInfoValue(lenValue=128),
            kinds.CLI_MAX_SCHEMA_NAME_LEN: tt.TGetInfoValue(lenValue=128),
            kinds.CLI_MAX_TABLE_NAME_LEN: tt.TGetInfoValue(lenValue=128),
            kinds.CLI_TXN_CAPABLE: tt.TGetInfoValue(smallIntValue=0),
            kinds.CLI_IDENTIFIER_QUOTE_CHAR: tt.TGetInfoValue(stringValue="`"),
            kinds.CLI_SEARCH_PATTERN_ESCAPE: tt.TGetInfoValue(stringValue="\\"),
            kinds.CLI_USER_NAME: tt.TGetInfoValue(stringValue=self.user or ""),
        }
        value = values.get(req.infoType)
        if value is None:
            name = kinds._VALUES_TO_NAMES.get(req.infoType, str(req.infoType))
            failure = Failure("HY096", f"GetInfo: information type {name} is not provided by this server")
            return tt.TGetInfoResp(status=_error(failure), infoValue=tt.TGetInfoValue(stringValue=""))
        return tt.TGetInfoResp(status=_ok(), infoValue=value)

    # -- statements ----------------------------------------------------------------------------
    def ExecuteStatement(self, req: tt.TExecuteStatementReq) -> tt.TExecuteStatementResp:
        try:
            session = self._session(req.sessionHandle)
        except Exception as e:  # noqa: BLE001
            return tt.TExecuteStatementResp(status=_error(Failure.of(e)))
        op = session.add(Operation(session, tt.TOperationType.EXECUTE_STATEMENT, req.statement))
        if req.confOverlay:
            for key, value in req.confOverlay.items():
                if not key.startswith("hive."):
                    try:
                        session.sql.set_option(key, value)
                    except Exception as e:  # noqa: BLE001
                        session.remove(op.guid)
                        return tt.TExecuteStatementResp(status=_error(Failure.of(e)))
        op.start()
        if req.queryTimeout and req.queryTimeout > 0:  # JDBC's Statement.setQueryTimeout
            op.limit_time(req.queryTimeout)
        if not req.runAsync:
            op.wait(self.alive)
            if op.state in (State.ERROR, State.TIMEDOUT) and op.failure is not None:
                session.remove(op.guid)
                return tt.TExecuteStatementResp(status=_error(op.failure))
        return tt.TExecuteStatementResp(status=_ok(), operationHandle=self._op_handle(op))

    def GetOperationStatus(self, req: tt.TGetOperationStatusReq) -> tt.TGetOperationStatusResp:
        try:
            op = self._operation(req.operationHandle)
        except Exception as e:  # noqa: BLE001
            return tt.TGetOperationStatusResp(status=_error(Failure.of(e)))
        op.long_poll(op.session.long_poll, self.alive)  # HiveServer2's long poll (sessions module doc)
        resp = tt.TGetOperationStatusResp(status=_ok(), operationState=_STATES[op.state],
                                          hasResultSet=op.has_result_set)
        if op.failure is not None:
            resp.sqlState, resp.errorMessage, resp.errorCode = op.failure.sqlstate, op.failure.message, 0
        return resp

    def CancelOperation(self, req: tt.TCancelOperationReq) -> tt.TCancelOperationResp:
        try:
            op = self._operation(req.operationHandle)
        except Exception as e:  # noqa: BLE001
            return tt.TCancelOperationResp(status=_error(Failure.of(e)))
        op.cancel()
        return tt.TCancelOperationResp(status=_ok())

    def CloseOperation(self, req: tt.TCloseOperationReq) -> tt.TCloseOperationResp:
        try:
            op = self._operation(req.operationHandle)
        except Exception as e:  # noqa: BLE001
            return tt.TCloseOperationResp(status=_error(Failure.of(e)))
        op.session.remove(op.guid)
        return tt.TCloseOperationResp(status=_ok())

    def GetResultSetMetadata(self, req: tt.TGetResultSetMetadataReq) -> tt.TGetResultSetMetadataResp:
        try:
            op = self._operation(req.operationHandle)
            op.done.wait()
            if op.failure is not None:
                return tt.TGetResultSetMetadataResp(status=_error(op.failure))
            schema = op.schema
            if schema is None:
                return tt.TGetResultSetMetadataResp(status=_ok(), schema=tt.TTableSchema(columns=[]))
            return tt.TGetResultSetMetadataResp(status=_ok(), schema=table_schema(schema))
        except Exception as e:  # noqa: BLE001
            return tt.TGetResultSetMetadataResp(status=_error(Failure.of(e)))

    def FetchResults(self, req: tt.TFetchResultsReq) -> tt.TFetchResultsResp:
        try:
            op = self._operation(req.operationHandle)
            if req.fetchType == _FETCH_LOG:
                import pyarrow as pa

                return tt.TFetchResultsResp(status=_ok(), hasMoreRows=False,
                                            results=empty_row_set(pa.schema([("log", pa.string())]), 0))
            op.done.wait()
            if op.failure is not None:
                return tt.TFetchResultsResp(status=_error(op.failure))
            if op.schema is None:  # cancelled: its rows are gone
                return tt.TFetchResultsResp(status=_ok(), hasMoreRows=False,
                                            results=tt.TRowSet(startRowOffset=0, rows=[], columns=[]))
            if req.orientation not in (tt.TFetchOrientation.FETCH_NEXT, tt.TFetchOrientation.FETCH_FIRST):
                name = tt.TFetchOrientation._VALUES_TO_NAMES.get(req.orientation, str(req.orientation))
                raise UnknownHandleError(
                    f"fetch orientation {name} is not supported; use FETCH_NEXT or FETCH_FIRST",
                    sqlstate="HY106",
                )
            rows = req.maxRows if req.maxRows and req.maxRows > 0 else DEFAULT_FETCH_ROWS
            page, start, more = op.fetch(
                min(rows, MAX_FETCH_ROWS), req.orientation == tt.TFetchOrientation.FETCH_FIRST
            )
            return tt.TFetchResultsResp(status=_ok(), hasMoreRows=more, results=row_set(page, start))
        except Exception as e:  # noqa: BLE001
            return tt.TFetchResultsResp(status=_error(Failure.of(e)))

    def GetLog(self, req: Any) -> Any:
        return tt.TGetLogResp(status=_ok(), log="")

    # -- metadata calls ------------------------------------------------------------------------
    def GetTypeInfo(self, req: tt.TGetTypeInfoReq) -> tt.TGetTypeInfoResp:
        return self._metadata(
            req, tt.TOperationType.GET_TYPE_INFO, lambda s: meta.type_info(), tt.TGetTypeInfoResp
        )

    def GetCatalogs(self, req: tt.TGetCatalogsReq) -> tt.TGetCatalogsResp:
        return self._metadata(
            req, tt.TOperationType.GET_CATALOGS, lambda s: meta.catalogs(), tt.TGetCatalogsResp
        )

    def GetSchemas(self, req: tt.TGetSchemasReq) -> tt.TGetSchemasResp:
        return self._metadata(req, tt.TOperationType.GET_SCHEMAS,
                              lambda s: meta.schemas(s.sql.catalog, req.schemaName), tt.TGetSchemasResp)

    def GetTables(self, req: tt.TGetTablesReq) -> tt.TGetTablesResp:
        return self._metadata(
            req, tt.TOperationType.GET_TABLES,
            lambda s: meta.tables(s.sql.catalog, req.schemaName, req.tableName, req.tableTypes, s.sql),
            tt.TGetTablesResp,
        )

    def GetTableTypes(self, req: tt.TGetTableTypesReq) -> tt.TGetTableTypesResp:
        return self._metadata(req, tt.TOperationType.GET_TABLE_TYPES, lambda s: meta.table_types(),
                              tt.TGetTableTypesResp)

    def GetColumns(self, req: tt.TGetColumnsReq) -> tt.TGetColumnsResp:
        return self._metadata(
            req,
            tt.TOperationType.GET_COLUMNS,
            lambda s: meta.columns(s.sql.catalog, req.schemaName, req.tableName, req.columnName),
            tt.TGetColumnsResp,
        )

    def GetFunctions(self, req: tt.TGetFunctionsReq) -> tt.TGetFunctionsResp:
        return self._metadata(req, tt.TOperationType.GET_FUNCTIONS,
                              lambda s: meta.functions(s.sql.spark, req.schemaName, req.functionName),
                              tt.TGetFunctionsResp)

    def GetPrimaryKeys(self, req: tt.TGetPrimaryKeysReq) -> tt.TGetPrimaryKeysResp:
        return self._metadata(
            req,
            tt.TOperationType.UNKNOWN,
            lambda s: meta.primary_keys(
                s.sql.catalog, req.schemaName or s.sql.current_database, req.tableName
            ),
            tt.TGetPrimaryKeysResp,
        )

    def GetCrossReference(self, req: tt.TGetCrossReferenceReq) -> tt.TGetCrossReferenceResp:
        # Managed tables have no foreign keys: an empty result with JDBC's columns.
        import pyarrow as pa

        cols = [
            "PKTABLE_CAT",
            "PKTABLE_SCHEM",
            "PKTABLE_NAME",
            "PKCOLUMN_NAME",
            "FKTABLE_CAT",
            "FKTABLE_SCHEM",
            "FKTABLE_NAME",
            "FKCOLUMN_NAME",
            "KEY_SEQ",
            "UPDATE_RULE",
            "DELETE_RULE",
            "FK_NAME",
            "PK_NAME",
            "DEFERRABILITY",
        ]
        empty = pa.schema([(c, pa.int16() if c in ("KEY_SEQ", "UPDATE_RULE", "DELETE_RULE", "DEFERRABILITY")
                            else pa.string()) for c in cols]).empty_table()
        return self._metadata(req, tt.TOperationType.UNKNOWN, lambda s: empty, tt.TGetCrossReferenceResp)

    def _no_tokens(self, resp: type) -> Any:
        return resp(status=_error(Failure("0A000", "delegation tokens are not supported (no Kerberos)")))

    def GetDelegationToken(self, req: Any) -> Any:
        return self._no_tokens(tt.TGetDelegationTokenResp)

    def CancelDelegationToken(self, req: Any) -> Any:
        return self._no_tokens(tt.TCancelDelegationTokenResp)

    def RenewDelegationToken(self, req: Any) -> Any:
        return self._no_tokens(tt.TRenewDelegationTokenResp)


# --------------------------------------------------------------------------- the socket server


class _Protocol(TBinaryProtocol):
    """Binary protocol whose ``skip`` reads strings as bytes.

    The library's ``skip`` decodes skipped strings as UTF-8 and fails on binary fields (handle
    GUIDs): an unknown call such as impyla's ``CloseImpalaOperation`` must be skipped cleanly
    so that the client gets UNKNOWN_METHOD and falls back to ``CloseOperation``.
    """

    def skip(self, ttype: int, *args: Any) -> None:
        if ttype == TType.STRING:
            self.readBinary()
            return
        super().skip(ttype, *args)


_THRIFT_CALL = 0x80  # first byte of a binary-protocol message (strict version 0x8001)
_DRAIN_TIMEOUT = 5.0  # seconds a refused client has to read our answer and hang up


def _transport_mismatch(auth: str, first: int) -> str | None:
    """What to tell a client whose first byte shows it speaks another transport than ``auth``."""
    if auth == "NOSASL" and first == START:
        return ("this server runs without SASL (--auth NOSASL) but the client started a SASL exchange: "
                "connect with impyla auth_mechanism='NOSASL', PyHive auth='NOSASL', or a JDBC URL "
                "ending in ;auth=noSasl")
    if auth != "NOSASL" and first == _THRIFT_CALL:
        pyhive = "CUSTOM" if auth == "PLAIN" else "NONE"
        return (f"this server authenticates with SASL PLAIN (--auth {auth}) but the client connected "
                "without SASL (NOSASL, impyla's default): connect with impyla auth_mechanism='PLAIN', "
                f"PyHive auth='{pyhive}', or a JDBC URL without ;auth=noSasl, and a user name"
                + (" and password" if auth == "PLAIN" else ""))
    return None


class _Refusal:
    """Answers the first call of a client that skipped SASL: OpenSession gets an error status."""

    def __init__(self, message: str) -> None:
        self.message = message

    def OpenSession(self, req: tt.TOpenSessionReq) -> tt.TOpenSessionResp:
        return tt.TOpenSessionResp(status=_error(Failure("08004", self.message)),
                                   serverProtocolVersion=MAX_PROTOCOL)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def refuse(*_args: Any) -> Any:
            raise TApplicationException(TApplicationException.UNKNOWN, self.message)

        return refuse


def _refuse(client: socket.socket, raw: TSocket.TSocket, first: int, message: str) -> None:
    """Tell a client that speaks the wrong transport why it is refused, in its own protocol."""
    if first == START:
        SaslServerTransport(raw, Authenticator(None)).refuse(message)
    else:
        transport = TTransport.TBufferedTransport(raw)
        protocol = _Protocol(transport)
        TCLIService.Processor(_Refusal(message)).process(protocol, protocol)
    # Closing with unread bytes would reset the connection before the client reads the answer:
    # stop sending, and let the client hang up first.
    client.shutdown(socket.SHUT_WR)
    client.settimeout(_DRAIN_TIMEOUT)
    while client.recv(65536):
        pass


def _peer_alive(sock: socket.socket) -> bool:
    """False once the client closed or reset its connection (checked without consuming data)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return True
        return bool(sock.recv(1, socket.MSG_PEEK))
    except (OSError, ValueError):
        return False


class HiveServer:
    """Serves HiveServer2 clients on ``host:port`` (port 0: a free port, see :attr:`port`)."""

    def __init__(self, state: ServerState, host: str = "127.0.0.1", port: int = 10000, *,
                 auth: str = "NONE", authenticator: Authenticator | None = None,
                 auth_timeout: float = AUTH_TIMEOUT) -> None:
        self.state = state
        self.auth = auth.upper()
        self.authenticator = authenticator or Authenticator(None)
        self._listener = socket.create_server((host, port), reuse_port=False, backlog=128)
        self.host, self.port = self._listener.getsockname()[:2]
        self._stopped = threading.Event()
        self._connections = 0
        self._lock = threading.Lock()
        self._clients: set[socket.socket] = set()
        # A client may hold a connection without a session (between sessions, or failing to log in).
        self.max_connections = 2 * state.max_sessions
        self.auth_timeout = auth_timeout
        self._accept_thread: threading.Thread | None = None

    def start(self) -> HiveServer:
        self._accept_thread = threading.Thread(
            target=self.serve_forever, name="dyntable-server-accept", daemon=True
        )
        self._accept_thread.start()
        return self

    def serve_forever(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _addr = self._listener.accept()
            except OSError:
                break  # the listener was closed by stop()
            with self._lock:
                self._connections += 1
                number = self._connections
                full = len(self._clients) >= self.max_connections
                if not full:
                    self._clients.add(client)
            if full:  # bounded threads: idle or unauthenticated connections cannot exhaust the server
                log.warning("connection %d refused: %d connections open", number, self.max_connections)
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client, number),
                             name=f"dyntable-server-conn-{number}", daemon=True).start()

    def _serve(self, client: socket.socket, number: int) -> None:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        raw = TSocket.TSocket()
        raw.setHandle(client)
        try:
            client.settimeout(self.auth_timeout)  # a client that never speaks does not keep its thread
            first = client.recv(1, socket.MSG_PEEK)
            if not first:
                return
            mismatch = _transport_mismatch(self.auth, first[0])
            if mismatch is not None:
                log.warning("connection %d refused: %s", number, mismatch)
                _refuse(client, raw, first[0], mismatch)
                return
            if self.auth == "NOSASL":
                transport: TTransport.TTransportBase = TTransport.TBufferedTransport(raw)
                user = None
            else:
                sasl = SaslServerTransport(raw, self.authenticator)
                user = sasl.negotiate()  # still under the timeout: a client that never logs in is dropped
                transport = sasl
            client.settimeout(None)
            handler = Handler(self.state, number, user, alive=lambda: _peer_alive(client))
            processor = TCLIService.Processor(handler)
            # The pure-Python codec: PyHive's stubs predate the spec layout the C codec (fastbinary) expects.
            protocol = _Protocol(transport)
            while not self._stopped.is_set():
                processor.process(protocol, protocol)
        except AuthenticationError as e:
            log.warning("connection %d refused: %s", number, e.message)
        except (TTransport.TTransportException, EOFError, OSError, ConnectionError, TimeoutError):
            pass  # the client closed the connection (or spoke something that is not HiveServer2)
        except Exception:  # noqa: BLE001 - one broken connection must not take the server down
            log.exception("connection %d failed", number)
        finally:
            self.state.close_connection(number)
            try:
                client.close()
            except OSError:
                pass
            with self._lock:
                self._clients.discard(client)

    def stop(self) -> None:
        """Stop accepting, close every session (cancelling their statements) and every connection."""
        self._stopped.set()
        for sock in [self._listener, *self._clients_now()]:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the threads blocked in accept() and recv()
            except OSError:
                pass
        self._listener.close()
        self.state.close_all()

    def _clients_now(self) -> list[socket.socket]:
        with self._lock:
            return list(self._clients)
