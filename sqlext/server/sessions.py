"""Client sessions and their operations on one SparkSession: what ``dyntable-server`` keeps per client.

* :class:`ServerState` owns the SparkSession and the table of open sessions (at most
  ``max_sessions``); every client session gets its own ``SqlSession`` on its own
  ``spark.newSession()`` (own current database, options, Spark settings, temporary views; one
  SparkContext), so clients never see each other's state.
* An :class:`Operation` is one statement or metadata call. A statement runs in its own worker
  thread under a Spark job group named after the operation, so a cancel (CancelOperation,
  CloseOperation, or the client's connection going away) stops its Spark jobs with
  ``cancelJobGroup``, and a long statement never holds up another session's calls.
* Results are paged (``sqlext.server.results.Pager``): the worker starts the stream and fetches
  the first partition, so errors in running the query are the statement's errors; later
  partitions are pulled only as the client fetches.
* Every operation has a result set, said so in the handle before the statement runs (as Spark's
  Thrift server does): an asynchronous client (PyHive's ``async_=True``, which dbt and Superset
  use) gets its handle before anything is known about the statement, and PyHive, impyla and
  Hive's JDBC driver never fetch from a handle without one. A statement without rows (DDL,
  INSERT, SET) answers Spark's empty ``Result`` string column.
* ``GetOperationStatus`` long-polls as HiveServer2 does: it answers when the operation ends (or
  is cancelled) or after ``hive.server2.long.polling.timeout`` (5 s unless the server's
  ``--conf`` or the session's configuration says otherwise), so a client that sleeps between
  polls (dbt: seconds) still hears of a short statement at once. The wait holds only the
  connection's own thread (one per connection, see ``thrift_service``), and ends early if the
  client goes away.
* Where HiveServer2 clients parse a statement's answer, it has HiveServer2's shape
  (:func:`hive_shaped`, :func:`hive_wording`): ``SHOW TABLES``/``SHOW VIEWS`` answer the names
  alone (Spark adds ``namespace`` and ``isTemporary`` around them, and PyHive's SQLAlchemy dialect,
  which Superset uses, reads column 0), and a ``DESCRIBE`` of a missing table also says
  ``Table not found <name>`` as Hive does (PyHive's ``has_table`` looks for those words).
"""

from __future__ import annotations

import enum
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from engine import DyntableError
from sqlext.errors import INTERNAL_ERROR, SqlError, sqlstate_for
from sqlext.output import format_error
from sqlext.parse.splitter import Statement, skip_trivia
from sqlext.positions import spark_error
from sqlext.server.results import Pager, arrow_schema_of, spark_batches, table_batches
from sqlext.session import SqlSession, activate

log = logging.getLogger("dyntable.server")


class State(enum.Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELED = "CANCELED"
    CLOSED = "CLOSED"
    ERROR = "ERROR"
    TIMEDOUT = "TIMEDOUT"


class SessionLimitError(SqlError):
    """The server already serves ``--max-sessions`` sessions: close one or raise the limit."""

    default_sqlstate = "53300"  # too many connections


class UnknownHandleError(SqlError):
    """A session or operation handle the server does not know (closed, or never opened)."""

    default_sqlstate = "HY010"


@dataclass(frozen=True)
class Failure:
    """What a client is told about a failed call: SQLSTATE and dyntable-sql's error text."""

    sqlstate: str
    message: str

    @classmethod
    def of(cls, error: BaseException, statement: str | None = None) -> Failure:
        """The client's view of ``error``; an internal error (a bug) is logged here, once, with its
        traceback, under an incident number the client's message names."""
        original = error
        if isinstance(error, PySparkException) and statement is not None:
            error = spark_error(error, Statement(statement, 1, 1, 0))
        elif isinstance(error, Py4JJavaError):  # a Spark job failed while its rows were streamed
            error = _java_error(error)
        state = error.sqlstate if isinstance(error, SqlError) else sqlstate_for(error)
        hint = None
        if state == INTERNAL_ERROR:
            incident = uuid.uuid4().hex[:8]
            log.error("internal error, incident %s%s", incident,
                      f", statement: {statement}" if statement else "", exc_info=original)
            hint = f"(the server log has the traceback: incident {incident})"
        text = format_error(error, script=statement, hint=hint)
        if hint is not None and hint not in text:  # a failed Spark job's root cause, say
            text += f"\n  {hint}"
        prefix = f"Error [{state}] "
        if text.startswith(prefix):  # the SQLSTATE travels in its own field
            text = text[len(prefix):]
        else:
            text = text.removeprefix("Error ")
        return cls(state, text)


def _java_error(error: Py4JJavaError) -> SqlError:
    """The root cause of a failed Spark job: dyntable's own error from a task, else Spark's innermost
    message."""
    from sqlext.positions import worker_error

    text = str(error)
    worker = worker_error(text)
    if worker is not None:
        return SqlError(worker[1], sqlstate=worker[0])
    causes = re.findall(r"^Caused by: [\w.$]+: (.+)$", text, re.M)
    first = causes[-1] if causes else (str(error.java_exception.getMessage() or "") or "Spark job failed")
    return SqlError(first.strip(), sqlstate=INTERNAL_ERROR)


_SHOW_NAMES = re.compile(r"SHOW\s+(TABLES|VIEWS)\b", re.IGNORECASE)
_DESCRIBE = re.compile(
    r"DESC(?:RIBE)?\s+(?:TABLE\s+)?(?:(?:EXTENDED|FORMATTED)\s+)?(?P<name>[^\s;(]+)\s*$", re.IGNORECASE
)
_NAMES_COLUMN = {"tables": "tableName", "views": "viewName"}


def _text(statement: str) -> str:
    """The statement without its leading comments and blanks."""
    return statement[skip_trivia(statement, 0):]


def hive_shaped(statement: str, df: Any) -> Any:
    """``df`` as HiveServer2 answers ``statement``: SHOW TABLES/VIEWS keep only the name column."""
    m = _SHOW_NAMES.match(_text(statement))
    if m is None:
        return df
    column = _NAMES_COLUMN[m.group(1).lower()]
    return df.select(column) if df.columns == ["namespace", column, "isTemporary"] else df


def hive_wording(failure: Failure, statement: str | None) -> Failure:
    """``failure`` with Hive's words for a DESCRIBE of a missing table added (what Hive clients look for)."""
    if failure.sqlstate != "42P01" or statement is None:
        return failure
    m = _DESCRIBE.match(_text(statement).rstrip().rstrip(";"))
    if m is None:
        return failure
    hive = f"SemanticException: Table not found {m.group('name')}"
    return Failure(failure.sqlstate, f"{failure.message}\n({hive})")


LONG_POLL_SETTING = "hive.server2.long.polling.timeout"
DEFAULT_LONG_POLL = 5.0  # seconds: HiveServer2's default
_TIME_UNITS = {  # HiveServer2's time units (a bare number is milliseconds for this setting)
    "ns": 1e-9, "nsec": 1e-9, "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0,
    "m": 60.0, "min": 60.0, "h": 3600.0, "hour": 3600.0, "d": 86400.0, "day": 86400.0,
}
_TIME_VALUE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", re.IGNORECASE)


def long_poll_seconds(text: str) -> float:
    """Seconds of a ``hive.server2.long.polling.timeout`` value as HiveServer2 reads it:
    ``5000``, ``5000ms``, ``5s``, ``1min`` (a unit may be plural: ``5secs``)."""
    m = _TIME_VALUE.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if unit not in _TIME_UNITS and unit.endswith("s"):
        unit = unit[:-1]
    factor = _TIME_UNITS.get(unit, 1e-3 if not unit else None)
    if m is None or factor is None:
        raise SqlError(
            f"{LONG_POLL_SETTING}: '{text}' is not a time (a number of milliseconds, or with a unit: "
            "5000ms, 5s, 1min)", sqlstate="22023",
        )
    return float(m.group(1)) * factor


NO_ROWS = pa.schema([("Result", pa.string())])  # Spark's Thrift server's answer to a statement without rows


def new_handle() -> tuple[bytes, bytes]:
    """(guid, secret) of a session or operation handle."""
    return uuid.uuid4().bytes, uuid.uuid4().bytes


class Operation:
    """One statement or metadata call of a session, with its result pages."""

    def __init__(self, session: ClientSession, kind: int, statement: str | None = None) -> None:
        self.session = session
        self.kind = kind  # TOperationType
        self.statement = statement
        self.guid, self.secret = new_handle()
        self.group = f"dyntable-server-{self.guid.hex()}"
        self.state = State.PENDING
        self.failure: Failure | None = None
        self.pager: Pager | None = None
        self.done = threading.Event()  # the worker ended: result or failure is final
        self.settled = threading.Event()  # the state is final (done, or cancelled / timed out)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # Known before the statement runs: every operation answers rows, possibly none (module doc).
    has_result_set = True

    @property
    def schema(self) -> pa.Schema | None:
        return self.pager.schema if self.pager is not None else None

    # -- metadata calls: computed at once, in the caller's thread (no Spark job) --------------------
    def complete(self, table: pa.Table) -> Operation:
        self.pager = Pager(table.schema, table_batches(table))
        self.state = State.FINISHED
        self.done.set()
        self.settled.set()
        return self

    def fail(self, error: BaseException) -> Operation:
        self.failure = Failure.of(error, self.statement)
        self.state = State.ERROR
        self.done.set()
        self.settled.set()
        return self

    # -- statements ---------------------------------------------------------------------------
    def start(self) -> None:
        self.state = State.RUNNING
        self._thread = threading.Thread(
            target=self._run, name=f"dyntable-op-{self.guid.hex()[:8]}", daemon=True
        )
        self._thread.start()

    def _tag_jobs(self) -> None:
        """Put the calling thread's Spark jobs (and threads it starts) in this operation's job group."""
        spark = self.session.sql.spark
        activate(spark)
        spark.sparkContext.setJobGroup(self.group, (self.statement or "")[:200], interruptOnCancel=True)

    def _untag_jobs(self) -> None:
        try:
            self.session.sql.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a stopped SparkContext: nothing to untag
            pass

    def _run(self) -> None:
        try:
            self._tag_jobs()
            last = None
            for last in self.session.sql.execute(self.statement or ""):  # noqa: B007 - kept after the loop
                if self.state is not State.RUNNING:
                    return
            if last is not None and last.dataframe is not None and last.dataframe.columns:
                df = hive_shaped(last.statement.text, last.dataframe)
                schema = arrow_schema_of(df)
                pager = Pager(schema, spark_batches(df, schema, on_start=self._tag_jobs))
                pager.prime()  # runs the first partition here: a failing query fails the statement
            else:  # no rows (a command Spark ran eagerly has an empty schema): nothing to stream
                pager = Pager(NO_ROWS, table_batches(NO_ROWS.empty_table()))
            with self._lock:
                if self.state is not State.RUNNING:
                    pager.close()
                    return
                self.pager = pager
                self.state = State.FINISHED
        except BaseException as e:  # noqa: BLE001 - reported to the client, never raised in the thread
            with self._lock:
                if self.state is State.RUNNING:
                    self.failure = hive_wording(Failure.of(e, self.statement), self.statement)
                    self.state = State.ERROR
        finally:
            self._untag_jobs()
            self.done.set()
            self.settled.set()
            if self._timer is not None:
                self._timer.cancel()

    def long_poll(self, timeout: float, alive: Callable[[], bool], slice_: float = 0.5) -> None:
        """Wait until the state is final or ``timeout`` seconds passed, or the client went away."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.settled.wait(min(left, slice_)) or not alive():
                return

    def wait(self, alive: Callable[[], bool], poll: float = 0.1) -> None:
        """Wait for the statement; cancel it if ``alive()`` turns false (the client went away)."""
        while not self.done.wait(poll):
            if not alive():
                self.cancel()
                return

    def limit_time(self, seconds: int) -> None:
        """Cancel the statement if it still runs after ``seconds`` (JDBC's query timeout)."""
        self._timer = threading.Timer(seconds, self.time_out, args=(seconds,))
        self._timer.daemon = True
        self._timer.start()

    def time_out(self, seconds: int) -> None:
        """The client's query timeout expired: stop the statement (a no-op once it ended)."""
        with self._lock:
            if self.state is not State.RUNNING:
                return
            self.failure = Failure(
                "57014", f"the statement ran longer than its timeout of {seconds} s and was cancelled"
            )
            self.state = State.TIMEDOUT
        self.cancel()

    def cancel(self) -> None:
        with self._lock:
            if self.state in (State.PENDING, State.RUNNING):
                self.state = State.CANCELED
            pager, self.pager = self.pager, None
        self.settled.set()  # a long poll answers at once
        try:
            self.session.sql.spark.sparkContext.cancelJobGroup(self.group)
        except Exception:  # noqa: BLE001 - a stopped SparkContext has no jobs left
            pass
        if pager is not None:
            pager.close()

    def close(self) -> None:
        self.cancel()
        self.state = State.CLOSED

    def fetch(self, max_rows: int, first: bool) -> tuple[pa.Table, int, bool]:
        """(page, offset of its first row, more rows may follow); ``first`` restarts the result."""
        pager = self.pager
        if pager is None:
            raise UnknownHandleError("the operation has no result set", sqlstate="24000")
        with self._lock:  # one fetch at a time per operation; other operations are not held up
            if first:
                pager.restart()
            start = pager.offset
            try:
                page, more = pager.next_page(max_rows)
            except PySparkException as e:
                raise spark_error(e, Statement(self.statement or "", 1, 1, 0)) from e
            except Py4JJavaError as e:
                raise _java_error(e) from e
        return page, start, more


@dataclass
class ClientSession:
    """One client's session: its SqlSession and operations."""

    guid: bytes
    secret: bytes
    user: str
    sql: SqlSession
    connection: int
    long_poll: float = DEFAULT_LONG_POLL  # seconds GetOperationStatus waits for the end
    operations: dict[bytes, Operation] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, op: Operation) -> Operation:
        with self.lock:
            self.operations[op.guid] = op
        return op

    def operation(self, guid: bytes) -> Operation:
        with self.lock:
            op = self.operations.get(guid)
        if op is None:
            raise UnknownHandleError("invalid operation handle (closed, or never opened)")
        return op

    def remove(self, guid: bytes) -> None:
        with self.lock:
            op = self.operations.pop(guid, None)
        if op is not None:
            op.close()

    def close(self) -> None:
        with self.lock:
            ops, self.operations = list(self.operations.values()), {}
        for op in ops:
            op.close()
        try:
            self.sql.stop_jobs()
        except Exception:  # noqa: BLE001 - closing anyway
            pass


class ServerState:
    """The SparkSession, the warehouse and every open client session."""

    def __init__(self, spark: Any, warehouse: str, *, conf: dict[str, str] | None = None,
                 max_sessions: int = 64, catalog_options: dict[str, Any] | None = None,
                 long_poll: float = DEFAULT_LONG_POLL) -> None:
        self.spark = spark
        self.long_poll = long_poll  # each session's default (it may set its own)
        self.warehouse = warehouse
        self.conf = dict(conf or {})
        self.catalog_options = dict(catalog_options or {})
        self.max_sessions = max_sessions
        # None: a slot reserved (counted against max_sessions) while its Spark session is built.
        self.sessions: dict[bytes, ClientSession | None] = {}
        self._lock = threading.Lock()

    def open_session(self, user: str, connection: int, configuration: dict[str, str] | None) -> ClientSession:
        """A new session; ``configuration`` may hold ``use:database`` and ``set:[hiveconf:]key`` entries
        (and, as a bare key too, ``hive.server2.long.polling.timeout``)."""
        database, options, long_poll = "default", dict(self.conf), self.long_poll
        for key, value in (configuration or {}).items():
            if key == "use:database":
                database = value or "default"
            elif key == LONG_POLL_SETTING:  # PyHive's configuration= sends bare keys
                long_poll = long_poll_seconds(value)
            elif key.startswith("set:"):
                name = key[4:]
                for prefix in ("hiveconf:", "hivevar:", "system:"):
                    name = name.removeprefix(prefix)
                if name == LONG_POLL_SETTING:
                    long_poll = long_poll_seconds(value)
                elif not name.startswith("hive."):  # Hive's own client settings mean nothing here
                    options[name] = value
        with self._lock:
            if len(self.sessions) >= self.max_sessions:
                raise SessionLimitError(
                    f"the server already has {self.max_sessions} sessions open (--max-sessions)"
                )
            guid, secret = new_handle()
            self.sessions[guid] = None
        try:
            # A Spark session of its own (shared SparkContext): the client's SET of Spark settings
            # and its temporary views stay its own, as with Spark's Thrift server.
            sql = SqlSession(self.spark.newSession(), self.warehouse, conf=options, **self.catalog_options)
            if database != sql.current_database:
                if not sql.catalog.database_exists(database):
                    raise SqlError(f"database '{database}' does not exist", sqlstate="3F000")
                sql.current_database = database
        except BaseException:
            with self._lock:
                self.sessions.pop(guid, None)
            raise
        session = ClientSession(guid, secret, user, sql, connection, long_poll)
        with self._lock:
            self.sessions[guid] = session
        return session

    def session(self, guid: bytes) -> ClientSession:
        with self._lock:
            session = self.sessions.get(guid)
        if session is None:
            raise UnknownHandleError("invalid session handle (closed, or never opened)")
        return session

    def operation(self, guid: bytes) -> Operation:
        """The open operation ``guid`` of any session (operation handles do not name their session)."""
        with self._lock:
            sessions = [s for s in self.sessions.values() if s is not None]
        for session in sessions:
            with session.lock:
                op = session.operations.get(guid)
            if op is not None:
                return op
        raise UnknownHandleError("invalid operation handle (closed, or never opened)")

    def close_session(self, guid: bytes) -> None:
        with self._lock:
            session = self.sessions.pop(guid, None)
        if session is not None:
            session.close()

    def close_connection(self, connection: int) -> None:
        """The client of ``connection`` went away: cancel and close every session it opened."""
        with self._lock:
            mine = [g for g, s in self.sessions.items() if s is not None and s.connection == connection]
        for guid in mine:
            self.close_session(guid)

    def close_all(self) -> None:
        with self._lock:
            guids = [g for g, s in self.sessions.items() if s is not None]
        for guid in guids:
            self.close_session(guid)


__all__ = ["ClientSession", "DyntableError", "Failure", "Operation", "ServerState", "State"]
