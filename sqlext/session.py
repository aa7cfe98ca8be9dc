"""``SqlSession``: dyntable's SQL on a SparkSession.

```
 script ── split_statements ──► statement ── classify ──┬─ dyntable's (Lark) ─► executor by AST node
                                                          └─ Spark's ─► bind managed tables (sqlglot)
                                                                       ─► per-statement views ─► spark.sql
```
Managed tables live in the warehouse, not in Spark's catalog: every reference to one in a
Spark statement is bound to a fresh temporary view over the ``dyntable`` data source carrying
the projection, time travel and options of that reference (Spark pushes no column pruning into
Python sources, and a view is never reused, so a stale pushed filter can never leak).
A user's view over managed tables is kept as query text (``temp_views`` here, permanent ones
in the warehouse) and expanded into every statement that reads it; a cached table is a Spark
temporary view rebuilt when a table under it changed (``sqlext.execute.views``).

Session options: ``SET 'table-storage.<key>' = '<v>'`` become defaults of new tables (without the
prefix); ``SET 'execution.runtime-mode' = 'streaming'`` turns ``INSERT INTO … SELECT … FROM
<managed table>`` into a continuous job; ``SET spark.paimon.<option> = v`` (and
``spark.paimon.<catalog>.<db>.<table>.<option>``) are Paimon's dynamic table options, applied to
every later read and write (``sqlext.source.dynamic``); any other ``SET k = v`` is passed to Spark.
Every failure surfaces as a typed :class:`sqlext.errors.SqlError` with SQLSTATE and position.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from engine import DyntableError, FormatTable, Identifier, InvalidArgumentError, Table, open_catalog
from engine import predicate as engine_predicate
from engine import refuse_format_table as refuse_format
from engine.identifier import DEFAULT_DATABASE
from sqlext.bind.pruning import Pushdown
from sqlext.bind.pruning import pushdown as extract_pushdown
from sqlext.bind.rewrite import VIEW_PREFIX, Binding, BoundQuery, TimeTravel, bind
from sqlext.errors import SqlAnalysisError, SqlError, SqlParseError, StatementTooComplexError, sqlstate_for
from sqlext.execute.metadata_answers import answer_from_metadata
from sqlext.execute.planning import Planner
from sqlext.execute.results import StatementResult, StreamingJob
from sqlext.execute.table_options import STORAGE_PREFIX, table_defaults
from sqlext.execute.views import CachedQuery, load_view
from sqlext.parse.names import TableName, quoted, spark_quote_name
from sqlext.parse.parser import parse_statement
from sqlext.parse.splitter import Statement, classify, split_statements
from sqlext.parse.views import ViewDefinition
from sqlext.positions import in_view, is_syntax_error, located, spark_error, spark_names
from sqlext.source.datasource import read_builder_at, resolve
from sqlext.source.dynamic import PREFIX as DYNAMIC_PREFIX
from sqlext.source.dynamic import check_session_key, table_overrides
from sqlext.source.format_tables import read_format_table
from sqlext.source.native import load as native_load
from sqlext.source.requests import ReadRequest, ReadVersion, TableTarget
from sqlext.source.session_conf import session_conf_option
from sqlext.spark import register

_VIEW_NUMBERS = itertools.count(1)  # view/staging numbers, unique in the process
CATALOG_PREFIX = "catalog."  # session conf keys that are storage/catalog options (endpoint, credentials)
RUNTIME_MODE = "execution.runtime-mode"


class _Catalog:
    """What the sqlglot binder asks about names (cached for one statement)."""

    def __init__(self, session: SqlSession) -> None:
        self.session = session
        self._managed: dict[tuple[str, str], bool] = {}
        self._views: dict[tuple[str, str], ViewDefinition | None] = {}

    def shadows(self, name: str) -> bool:
        s = self.session
        key = name.lower()
        if key in s.cached and key not in s.building:
            s.refresh_cache(key)  # a cached table is Spark's temporary view: Spark resolves it
            return True
        return False

    def view(self, database: str, name: str, *, temporary: bool) -> ViewDefinition | None:
        s = self.session
        key = name.lower()
        if temporary:
            return s.temp_views.get(key)
        memo = (database.lower(), key)
        if memo not in self._views:
            self._views[memo] = load_view(s, database, name)
        return self._views[memo]

    def is_managed(self, database: str, table: str) -> bool:
        key = (database.lower(), table.lower())
        if key not in self._managed and self.session.global_system_table(database, table) is not None:
            self._managed[key] = True  # sys.tables, ...: bound like a managed table, read from the catalog
        if key not in self._managed:
            try:
                self._managed[key] = self.session.catalog.table_exists(Identifier(database, table))
            except DyntableError:
                self._managed[key] = False
        return self._managed[key]

    def columns(self, name: TableName, time_travel: TimeTravel | None = None) -> list[str]:
        return list(self.session.columns_of(name, time_travel))

    def metadata_columns(self, name: TableName) -> list[str]:
        from engine import metadata_names

        if self.session._global_of(name) is not None:
            return []
        if self.session.format_table(name) is not None:
            return []
        ident = self.session.identifier(name)
        table = self.session.catalog.get_table(Identifier(ident.database, ident.table, ident.branch))
        return metadata_names(table.schema)

    def has_tag(self, name: TableName, tag: str) -> bool:
        ident = self.session.identifier(name)  # a branch has its own tags
        table = self.session.catalog.get_table(Identifier(ident.database, ident.table, ident.branch))
        return table.refs.tags.exists(tag)


class SqlSession:
    """Runs dyntable SQL (and any Spark SQL) against a warehouse of managed tables."""

    def __init__(
        self,
        spark: SparkSession,
        warehouse: str = "./warehouse",
        database: str = DEFAULT_DATABASE,
        conf: dict[str, str] | None = None,
        **catalog_options: Any,
    ) -> None:
        self.spark = spark
        register(spark)
        _quiet_pyspark_error_logs()
        conf = dict(conf or {})
        for key in [k for k in conf if k.startswith(CATALOG_PREFIX)]:  # --conf catalog.endpoint_url=...
            catalog_options.setdefault(key[len(CATALOG_PREFIX):], conf_value(conf.pop(key)))
        # Every read and write goes through the data source, in other processes: it gets these too.
        self.catalog_options = dict(catalog_options)
        self.catalog = open_catalog(warehouse, **catalog_options)
        self.warehouse = self.catalog.warehouse
        self.catalog.create_database(DEFAULT_DATABASE, ignore_if_exists=True)
        self.current_database = database
        if not self.catalog.database_exists(database):
            self.catalog.create_database(database)
        self.options: dict[str, str] = {}
        self.jobs: dict[str, StreamingJob] = {}
        self.temp_views: dict[str, ViewDefinition] = {}  # CREATE TEMPORARY VIEW over managed tables
        self.cached: dict[str, CachedQuery] = {}  # CACHE TABLE over managed tables
        self.building: set[str] = set()  # cached tables being (re)built: their name is not the cache
        self._counter = self._numbers()
        self._issued: list[int] = []  # numbers handed out since the last statement ended
        self._views: list[str] = []  # views registered since the last statement ended
        self._lock = threading.RLock()
        for key, value in conf.items():
            self.set_option(key, value)
        from sqlext.execute.handlers import PLANNERS
        from sqlext.execute.runner import PlanRunner, SessionContext

        self._planners: dict[type, Planner] = PLANNERS
        self.context = SessionContext(self)  # what planners read
        self.runner = PlanRunner(self)  # what carries their plans out

    # -- public API -------------------------------------------------------------------------------
    def sql(self, text: str) -> DataFrame:
        """Run one statement (or a script) and return the last statement's result as a DataFrame."""
        last: StatementResult | None = None
        for last in self.execute(text):  # noqa: B007 - the last result is kept
            pass
        if last is None or last.dataframe is None:
            return self.empty_frame()
        return last.dataframe

    def execute(self, script: str) -> Iterator[StatementResult]:
        """Run a script statement by statement; stops at (and raises) the first failure."""
        for stmt in split_statements(script):
            yield self.run_statement(stmt)

    def run_statement(self, stmt: Statement) -> StatementResult:
        with self._lock:
            activate(self.spark)
            try:
                if classify(stmt.text) == "dyntable":
                    node = parse_statement(stmt.text, stmt.line, stmt.column, offset=stmt.offset)
                    planner = self._planners.get(type(node))
                    if planner is None:
                        raise SqlAnalysisError(
                            f"statement {type(node).__name__} is not executable",
                            line=stmt.line,
                            column=stmt.column,
                            sqlstate="0A000",
                        )
                    return self.runner.run(planner(self.context, node, stmt), stmt)
                answered = answer_from_metadata(self, stmt.text)  # count/min/max from manifests
                if answered is not None:
                    return StatementResult(stmt, answered)
                return StatementResult(stmt, self.spark_sql(stmt.text, stmt))
            except SqlError as e:
                raise located(e, stmt) from None
            except DyntableError as e:
                error = SqlAnalysisError(str(e), line=stmt.line, column=stmt.column, sqlstate=sqlstate_for(e))
                raise located(error, stmt) from e
            except RecursionError:
                # A recursive parser (sqlglot) gave up on deep nesting the splitter still allowed.
                raise StatementTooComplexError(
                    "statement too complex: it nests too deeply to parse; simplify it",
                    line=stmt.line, column=stmt.column,
                ) from None
            except PySparkException as e:
                raise located(spark_error(e, stmt), stmt, spark_names(e)) from e
            except Py4JJavaError as e:
                message = str(e.java_exception.getMessage() or e.java_exception)
                error = SqlAnalysisError(
                    message.splitlines()[0], line=stmt.line, column=stmt.column, sqlstate="XX000"
                )
                raise located(error, stmt) from e
            finally:
                self._drop_statement_views()

    def _numbers(self) -> Iterator[int]:
        # One process-wide sequence: several sessions on one SparkSession (a server's clients)
        # share its temporary-view namespace, so their view names must never coincide.
        while True:
            n = next(_VIEW_NUMBERS)
            self._issued.append(n)
            yield n

    def _drop_statement_views(self) -> None:
        """Drop the temporary views the statement registered (its bindings and DML's pinned reads).

        Each view holds a data source relation, and Spark keeps a relation's planned read (the
        pickled reader and every split) for as long as the relation lives: kept views made a
        session's driver memory grow with the number of statements it ever ran. DataFrames
        already built from a view (a SELECT's result, a started stream) hold their analysed plan
        and do not need the name any more.
        """
        names = self._views + [f"{VIEW_PREFIX}dml_{n}" for n in self._issued]
        self._views.clear()
        self._issued.clear()
        try:
            # The session catalog's drop, not ``spark.catalog.dropTempView``: that one also
            # uncaches every cached plan equal to the view's (a user's ``df.cache()`` of a
            # ``SELECT * FROM t``, a CACHE TABLE), which must outlive the name.
            catalog = self.spark._jsparkSession.sessionState().catalog()
        except Exception:  # noqa: BLE001 - a stopped session has nothing left to release
            return
        for name in names:
            try:
                catalog.dropTempView(name)
            except Exception:  # noqa: BLE001 - a stopped session has nothing left to release
                pass

    # -- names ----------------------------------------------------------------------------------
    def identifier(self, name: TableName) -> Identifier:
        return Identifier(name.database or self.current_database, name.table, name.branch, name.system_table)

    def is_managed(self, name: TableName) -> bool:
        return _Catalog(self).is_managed(name.database or self.current_database, name.table)

    def global_system_table(self, database: str | None, table: str) -> str | None:
        """The name of Paimon's global system table ``sys.<table>`` (``tables``, ``partitions``,
        ``all_table_options``, ``catalog_options``) a name refers to, or None. A database of the
        warehouse named ``sys`` keeps its own tables: only names it lacks are global ones."""
        from engine import GLOBAL_TABLES, SYSTEM_DATABASE

        if (database or "").lower() != SYSTEM_DATABASE or table.lower() not in GLOBAL_TABLES:
            return None
        try:
            if self.catalog.table_exists(Identifier(SYSTEM_DATABASE, table)):
                return None
        except DyntableError:
            pass
        return table.lower()

    def _global_of(self, name: TableName) -> str | None:
        if name.branch is not None or name.system_table is not None:
            return None
        return self.global_system_table(name.database or self.current_database, name.table)

    def global_options(self) -> dict[str, object]:
        """What ``sys.catalog_options`` lists: the warehouse and the catalog options given."""
        return {"warehouse": self.warehouse, **self.catalog_options}

    def table(self, name: TableName) -> Table:
        ident = self.identifier(name)
        return self.catalog.get_table(Identifier(ident.database, ident.table, ident.branch))

    def _prunable_columns(self, name: TableName) -> dict[str, Any]:
        """The columns WHERE conditions may be pushed on, with their types (``sqlext.bind.pruning``
        pushes only comparisons the engine evaluates as Spark does; CHAR(n) never: Spark compares
        it padded)."""
        if self._global_of(name) is not None:
            return {}  # a global system table is a small in-memory frame: nothing to push

        ident = self.identifier(name)
        if self.format_table(name) is not None:
            return {}  # Spark's own file reader filters a format table
        table = self.catalog.get_table(Identifier(ident.database, ident.table, ident.branch))
        return {f.name: f.type for f in table.schema.fields}

    def format_table(self, name: TableName) -> FormatTable | None:
        """The format table ``name`` names (``engine.FormatTable``), or None."""
        if name.branch is not None or name.system_table is not None:
            return None
        ident = self.identifier(name)
        return self.catalog.get_format_table(Identifier(ident.database, ident.table))

    def columns_of(self, name: TableName, time_travel: TimeTravel | None = None) -> list[str]:
        """Columns of a table or system table; with ``time_travel``, as of that snapshot's schema."""
        from engine import DATA_TABLES, global_table_schema, system_table_columns

        glob = self._global_of(name)
        if glob is not None:
            if time_travel is not None:
                raise InvalidArgumentError(
                    f"sys.{glob} is a global system table: it has no versions to travel to")
            return list(global_table_schema(glob).names)

        ident = self.identifier(name)
        fmt = self.catalog.get_format_table(Identifier(ident.database, ident.table)) \
            if not ident.branch and not ident.system_table else None
        if fmt is not None:
            if time_travel is not None:  # Paimon: a format table has no versions
                raise refuse_format(fmt.name, "time travel")
            return fmt.field_names
        base = self.catalog.get_table(Identifier(ident.database, ident.table, ident.branch))
        if time_travel is not None and (not ident.system_table or ident.system_table.lower() in DATA_TABLES):
            try:
                base = read_builder_at(read_version(time_travel), base).table
            except ValueError:  # a timestamp that does not parse
                raise InvalidArgumentError(
                    f"invalid time-travel target {_typed(time_travel)}: use 'yyyy-MM-dd HH:mm:ss' or"
                    " seconds since the epoch"
                ) from None
            except DyntableError as e:
                if time_travel.timestamp is None and time_travel.timestamp_millis is None:
                    raise
                raise type(e)(
                    f"{ident.base().full_name} has no snapshot committed at or before TIMESTAMP AS OF"
                    f" {_typed(time_travel)} (the table is younger, or older snapshots expired): pick a later"
                    " time, or read VERSION AS OF a snapshot id (see the table's $snapshots)"
                ) from None
        if ident.system_table:
            return system_table_columns(base, ident.system_table)
        return list(base.schema.field_names)

    # -- binding Spark SQL to managed tables ------------------------------------------------------
    def bind(
        self, sql: str, stmt: Statement | None = None, *, streaming: bool = False, database: str | None = None
    ) -> BoundQuery:
        """Bind managed tables in a Spark statement to fresh views; returns the bound query (its
        ``sql`` is what to run, its bindings and views what the statement reads).

        Views over managed tables are expanded into their queries (``sqlext.bind.rewrite``);
        ``database`` resolves unqualified names (default: the current database).
        """
        bound: BoundQuery = bind(
            sql, _Catalog(self), database or self.current_database, counter=self._counter,
            line=stmt.line if stmt else 1, column=stmt.column if stmt else 1,
        )
        filters = {}
        if not streaming:
            views = {b.view: self._prunable_columns(b.table)
                     for b in bound.bindings if not b.table.system_table}
            filters = extract_pushdown(bound.sql, views)
        for b in bound.bindings:
            self.register_view(b, streaming=streaming, pushed=filters.get(b.view))
        return bound

    def target(self, table: str) -> TableTarget:
        """Where the data source finds ``table`` (``db.t``), with this session's storage options."""
        return TableTarget(self.warehouse, table, storage=self.catalog_options)

    def read(self, request: ReadRequest, *, streaming: bool = False) -> DataFrame:
        """A DataFrame (or streaming DataFrame) of one read request: in batch, files that need no
        merge are read by Spark's own Parquet reader (``sqlext.source.native``), the rest by the
        data source."""
        if streaming:
            return self.spark.readStream.format("dyntable").options(**request.to_options()).load()
        return native_load(self.spark, request)

    def register_view(self, b: Binding, *, streaming: bool = False, pushed: Pushdown | None = None) -> None:
        glob = self._global_of(b.table)
        if glob is not None:
            self._register_global(b, glob, streaming)
            return
        fmt = self.format_table(b.table)
        if fmt is not None:
            if streaming:
                raise refuse_format(fmt.name, "a streaming read")
            frame = read_format_table(self.spark, self.catalog.io, fmt)
            if b.columns is not None:
                frame = frame.select(*[quoted(c) for c in b.columns])
            frame.createOrReplaceTempView(b.view)
            self._views.append(b.view)
            return
        ident = self.identifier(b.table)
        # Hints (``/*+ OPTIONS(...) */``) are data-source options as written: the typed request
        # parses them like any other option map, so a hint can set time travel or a projection.
        hinted = ReadRequest.from_options({
            **self.target(ident.full_name).to_options(),
            **session_conf_option(self.spark),  # SET spark.paimon.*: resolved with the request
            **b.options,
        })
        request = replace(
            hinted,
            columns=tuple(b.columns) if b.columns is not None else hinted.columns,
            # The binder's filter is implied by the query: the source drops the rows that fail it.
            filter=engine_predicate.to_json(pushed.filter) if pushed and pushed.filter else hinted.filter,
            filter_exact=bool(pushed and pushed.filter),
            limit=pushed.limit if pushed else None,
            travel=read_version(b.time_travel) if b.time_travel is not None else hinted.travel,
            # a continuous INSERT must carry deletes along
            changelog=hinted.changelog or (streaming and "read.changelog" not in b.options),
        )
        table_overrides(request.passthrough)  # a dynamic option that cannot apply fails the statement
        if not streaming and request.travel is not None:
            _check_time_travel(request)
        if streaming and request.incremental is not None:
            raise InvalidArgumentError(
                f"{ident.full_name}: an incremental read (incremental-between, "
                "paimon_incremental_query, ...) is a batch read and cannot be streamed")
        if not streaming and request.incremental is not None:
            # Resolved now (metadata only) so a bad range fails the statement, typed and located.
            resolve(request)[0].new_read_builder().new_incremental(request.incremental)
        self.read(request, streaming=streaming).createOrReplaceTempView(b.view)
        self._views.append(b.view)

    def _register_global(self, b: Binding, name: str, streaming: bool) -> None:
        """``sys.<name>``: the catalog's global system table, read now (metadata only) into a view."""
        from engine import read_global_table

        if streaming:
            raise InvalidArgumentError(f"sys.{name} is a global system table: it cannot be streamed")
        rows = read_global_table(self.catalog, name, self.global_options())
        if b.columns is not None:
            rows = rows.select(list(b.columns))
        self.arrow_frame(rows).createOrReplaceTempView(b.view)
        self._views.append(b.view)

    def spark_sql(self, text: str, stmt: Statement | None = None) -> DataFrame:
        return self.frame(text, stmt)

    def frame(
        self, sql: str, stmt: Statement | None = None, *, streaming: bool = False, database: str | None = None
    ) -> DataFrame:
        """A DataFrame for a query fragment (binding managed tables)."""
        return self.bound_frame(sql, stmt, streaming=streaming, database=database)[0]

    def bound_frame(
        self, sql: str, stmt: Statement | None = None, *, streaming: bool = False, database: str | None = None
    ) -> tuple[DataFrame, BoundQuery]:
        """A DataFrame for a query fragment and what it reads (the tables, views and cached tables)."""
        try:
            query = self.bind(sql, stmt, streaming=streaming, database=database)
        except SqlParseError:
            # The binder could not read it: Spark's own parser says what is wrong, in the user's text.
            if stmt is not None:
                self._raise_spark_syntax_error(sql, stmt)
            raise
        bound = query.sql
        try:
            return self.spark.sql(bound), query
        except PySparkException as e:
            if stmt is None or stmt.text != sql:
                raise  # SQL an executor generated: run_statement reports it at the statement
            if is_syntax_error(e) and bound != sql:
                self._raise_spark_syntax_error(sql, stmt)
            # Spark's position is in the bound text: map it back to the user's text
            error = spark_error(e, stmt, source=sql, bound=bound)
            raise in_view(error, query) from e

    def _raise_spark_syntax_error(self, sql: str, stmt: Statement) -> None:
        """Raise Spark's syntax error for the user's own text, if Spark's parser refuses it."""
        from pyspark.errors.exceptions.captured import convert_exception

        state = self.spark._jsparkSession.sessionState()
        jvm = _jvm(self.spark)
        try:
            plan = state.sqlParser().parsePlan(sql)
            # Some syntax errors are the analyzer's (a trailing comma before FROM): analyze the
            # user's text too; any other error of it (its managed names are unknown to Spark) is moot.
            tracker = jvm.org.apache.spark.sql.catalyst.QueryPlanningTracker(jvm.scala.Option.empty())
            state.analyzer().executeAndCheck(plan, tracker)
        except Py4JJavaError as e:
            error: Any = convert_exception(e.java_exception)
        except PySparkException as e:
            error = e
        else:
            return
        if isinstance(error, PySparkException) and is_syntax_error(error):
            raise spark_error(error, stmt, source=sql, bound=sql) from None

    # -- cached tables ---------------------------------------------------------------------------
    def build_cache(self, entry: CachedQuery, *, lazy: bool | None = None) -> None:
        """(Re)build a cached table: its query bound afresh, registered and cached in Spark."""
        key = entry.name.lower()
        self.building.add(key)
        try:
            frame, bound = self.bound_frame(entry.sql, database=entry.current_database)
            tables = {}
            for b in bound.bindings:
                if b.time_travel is None:
                    name = replace(b.table, database=b.table.database or entry.current_database)
                    ident = self.identifier(name)
                    tables[ident.full_name] = Identifier(ident.database, ident.table, ident.branch)
            entry.tables = tuple(tables.values())
            entry.views = tuple({(v.database, v.name.lower()) for v in bound.views})
            entry.nested = tuple(
                {t[0].lower() for t in bound.other_tables if len(t) == 1 and t[0].lower() in self.cached}
            )
            entry.versions = self._cache_versions(entry)
            frame.createOrReplaceTempView(entry.name)
            options = "".join(f" OPTIONS ('{k}' '{v}')" for k, v in entry.options.items())
            eager = not (entry.lazy if lazy is None else lazy)
            self.spark.sql(f"CACHE {'' if eager else 'LAZY '}TABLE {spark_quote_name(entry.name)}{options}")
        finally:
            self.building.discard(key)
        self.cached[key] = entry

    def _cache_versions(self, entry: CachedQuery) -> tuple[Any, ...]:
        versions: list[Any] = []
        for ident in entry.tables:
            try:
                table = self.catalog.get_table(ident)
                snapshot = table.latest_snapshot()
                versions.append((ident.full_name, snapshot.id if snapshot else None, table.schema.id))
            except DyntableError:
                versions.append((ident.full_name, None, None))  # dropped: the rebuild reports it
        for database, name in entry.views:
            view = self.temp_views.get(name) if database is None else load_view(self, database, name)
            versions.append((database, name, view))
        for key in entry.nested:
            self.refresh_cache(key)
            nested = self.cached.get(key)
            versions.append((key, nested.versions if nested else None))
        return tuple(versions)

    def refresh_cache(self, key: str) -> None:
        """Rebuild a cached table (lazily, as Spark re-caches) if a table or view under it changed."""
        entry = self.cached.get(key)
        if entry is None or key in self.building:
            return
        if self._cache_versions(entry) != entry.versions:
            self.uncache(key)
            self.build_cache(entry, lazy=True)

    def uncache(self, key: str) -> None:
        """Forget a cached table: release Spark's cache and its temporary view."""
        entry = self.cached.pop(key, None)
        if entry is None:
            return
        try:
            self.spark.catalog.uncacheTable(spark_quote_name(entry.name))
        except Exception:  # noqa: BLE001 - already released (CLEAR CACHE)
            pass
        self.spark.catalog.dropTempView(entry.name)

    # -- session options ------------------------------------------------------------------------
    def set_option(self, key: str, value: str) -> None:
        key = key.strip()
        if key == RUNTIME_MODE:
            if value.lower() not in ("batch", "streaming"):
                raise SqlAnalysisError(f"'{RUNTIME_MODE}' must be 'batch' or 'streaming', not '{value}'",
                                       sqlstate="22023")
            self.options[key] = value.lower()
        elif key.startswith(DYNAMIC_PREFIX):
            check_session_key(key, value)  # Paimon's dynamic options: applied to later reads/writes
            self.options[key] = value
            # In Spark's configuration too, where Paimon keeps them: DataFrame reads and writes of
            # this session (sqlext.source.session_conf) and SQL reads both resolve them from there.
            self.spark.conf.set(key, value)
        elif key.startswith(STORAGE_PREFIX):
            from engine import validate_options

            validate_options({key[len(STORAGE_PREFIX):]: value})
            self.options[key] = value
        else:
            self.options[key] = value
            if key.startswith("spark.") or "." in key:
                try:
                    self.spark.conf.set(key, value)
                except Exception:  # noqa: BLE001 - a static Spark setting: keep it as a session option
                    pass

    def reset_option(self, key: str | None) -> None:
        if key is None:
            for k in [k for k in self.options if k.startswith(DYNAMIC_PREFIX)]:
                self.spark.conf.unset(k)
            self.options.clear()
            return
        self.options.pop(key.strip(), None)
        if key.startswith("spark."):
            try:
                self.spark.conf.unset(key)
            except Exception:  # noqa: BLE001
                pass

    @property
    def streaming(self) -> bool:
        return self.options.get(RUNTIME_MODE, "batch") == "streaming"

    def table_defaults(self) -> dict[str, str]:
        return table_defaults(self.options)

    # -- helpers for executors ------------------------------------------------------------------
    def next_id(self) -> int:
        return next(self._counter)

    def empty_frame(self) -> DataFrame:
        from pyspark.sql.types import StructType

        return self.spark.createDataFrame([], StructType([]))

    def arrow_frame(self, table: pa.Table) -> DataFrame:
        """A Spark DataFrame of a small Arrow table (metadata results)."""
        from sqlext.source.spark_types import spark_arrow_schema

        target = spark_arrow_schema(table.schema)
        table = table.cast(target) if not table.schema.equals(target) else table
        if table.num_rows == 0:
            from sqlext.source.spark_types import spark_schema

            return self.spark.createDataFrame([], spark_schema(table.schema))
        return self.spark.createDataFrame(table)

    def stop_jobs(self) -> None:
        for job in self.jobs.values():
            if job.query.isActive:
                job.query.stop()


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread (JVM side).

    Spark resolves Python data sources through the thread's active session: on a thread that
    never set one (a CLI worker thread, a notebook callback), ``format("dyntable")`` is not found.
    """
    _jvm(spark).org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def _jvm(spark: SparkSession) -> Any:
    """The py4j view of ``spark``'s JVM. pyspark types it Optional (None before the first context
    starts); a session's context has started, so None here is a broken pyspark, not a user error."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a running SparkSession has a JVM gateway"
    return jvm


def _quiet_pyspark_error_logs() -> None:
    """Stop pyspark logging every captured SQL error to stderr as JSON.

    The session raises each of those errors as a typed SqlError (which its caller reports), so the
    log line only repeats it, with a JVM stack trace, in front of the real message.
    """
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def _typed(tt: TimeTravel) -> str:
    """A timestamp time-travel target as the user typed it (a number: seconds since the epoch)."""
    if tt.timestamp is not None:
        return "'" + tt.timestamp + "'"
    from decimal import Decimal

    return format(Decimal(tt.timestamp_millis or 0) / 1000, "f").rstrip("0").rstrip(".") or "0"


def read_version(tt: TimeTravel) -> ReadVersion:
    """The read version of a time-travel clause (a quoted ``VERSION AS OF`` is a tag, else an id)."""
    if tt.snapshot_id is not None:
        return ReadVersion(snapshot_id=tt.snapshot_id)
    if tt.tag is not None:
        return ReadVersion(version=tt.tag)
    return ReadVersion(timestamp_millis=tt.timestamp_millis, timestamp=tt.timestamp)


def _check_time_travel(request: ReadRequest) -> None:
    """Resolve a view's time travel now, so a missing snapshot, tag or timestamp fails the statement.

    (Spark builds the reader only when a query runs, where the error would surface untyped and
    after the statement has returned its DataFrame.)
    """
    table, _system = resolve(request)
    try:
        read_builder_at(request.travel, table)
    except ValueError as e:  # a timestamp that does not parse
        raise InvalidArgumentError(f"invalid time-travel target: {e}") from e


__all__ = ["SqlSession", "StatementResult"]


def conf_value(text: str) -> Any:
    """A ``--conf catalog.k=v`` value: JSON objects, lists, numbers and booleans are decoded; anything
    else is a string."""
    stripped = text.strip()
    if stripped[:1] in "{[" or stripped in ("true", "false"):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text
