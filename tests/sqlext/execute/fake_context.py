"""A planner context without Spark: a real engine catalog in a temporary directory, the session's
options, jobs and views as plain values, and queries answered from a table of known results.

It implements ``sqlext.execute.planning.PlannerContext``; the planner tests run with pyspark
unimportable (.ci/run), so a planner that reaches past the context fails there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from engine import FileSystemCatalog, Identifier, Table, open_catalog
from engine.types import DataType, type_to_sql
from sqlext.bind.rewrite import Binding, BoundQuery
from sqlext.errors import SqlAnalysisError
from sqlext.execute.planning import BoundFrame, CallProcedure, Column, JobStatus
from sqlext.execute.procedures.plans import Answer, EngineWork
from sqlext.parse.names import TableName
from sqlext.parse.parser import parse_statement
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition


@dataclass
class FakeContext:
    catalog: FileSystemCatalog
    current_database: str = "default"
    options: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)  # the engine's own settings
    job_list: list[JobStatus] = field(default_factory=list)
    views_listed: list[tuple[str, str, bool]] = field(default_factory=list)  # what view_listing answers
    view_definitions: list[ViewDefinition] = field(default_factory=list)  # permanent and temporary
    engine_tables: set[str] = field(default_factory=set)  # the SQL engine's own tables
    queries: dict[str, tuple[Column, ...]] = field(default_factory=dict)  # sql -> result columns
    # sql -> (result columns, managed tables read) of the queries that read changelogs when streaming
    streams: dict[str, tuple[tuple[Column, ...], tuple[TableName, ...]]] = field(default_factory=dict)
    streaming: bool = False  # the session's runtime mode is streaming
    asked: list[str] = field(default_factory=list)  # the queries planners asked for
    temp_views: dict[str, ViewDefinition] = field(default_factory=dict)  # the session's, by lower name
    cached: set[str] = field(default_factory=set)  # the session's cached tables (lower names)
    engine_views: list[str] = field(default_factory=list)  # the SQL engine's own temporary views
    # sql -> the query's binding (what it reads) where a test says; else it reads nothing managed
    bound: dict[str, BoundQuery] = field(default_factory=dict)
    engine_informations: dict[str, str] = field(default_factory=dict)  # the engine's own view texts

    def is_managed(self, name: TableName) -> bool:
        return self.catalog.table_exists(
            Identifier(name.database or self.current_database, name.table)
        )

    def identifier(self, name: TableName) -> Identifier:
        return Identifier(name.database or self.current_database, name.table, name.branch, name.system_table)

    def engine_has_table(self, name: str) -> bool:
        return name in self.engine_tables

    def table(self, name: TableName) -> Table:
        database = name.database or self.current_database
        return self.catalog.get_table(Identifier(database, name.table, name.branch))

    def frame(self, sql: str, stmt: Statement | None = None, *, streaming: bool = False) -> BoundFrame:
        self.asked.append(sql)
        if streaming and sql in self.streams:
            columns, tables = self.streams[sql]
            bindings = tuple(Binding(f"__v{i}", t, None, None, {}) for i, t in enumerate(tables))
            return BoundFrame(None, BoundQuery(sql, bindings), columns, streaming=True)
        if sql not in self.queries:
            raise SqlAnalysisError(f"the fake context knows no query {sql!r}", sqlstate="42P01")
        return BoundFrame(None, self.bound.get(sql), self.queries[sql])

    def type_text(self, dtype: DataType) -> str:
        return type_to_sql(dtype).lower()

    def cast_type(self, dtype: DataType) -> str:
        return type_to_sql(dtype).lower()

    def engine_setting(self, key: str) -> str | None:
        return self.settings.get(key)

    def jobs(self) -> list[JobStatus]:
        return list(self.job_list)

    def view_listing(self, database: str, like: str | None) -> list[tuple[str, str, bool]]:
        return [v for v in self.views_listed if v[2] or v[0] == database]

    def views(self, database: str) -> list[ViewDefinition]:
        return [v for v in self.view_definitions if v.database == database]

    def temporary_views(self) -> list[ViewDefinition]:
        return list(self.temp_views.values())

    def temporary_view(self, name: str) -> ViewDefinition | None:
        return self.temp_views.get(name.lower())

    def is_cached(self, name: str) -> bool:
        return name.lower() in self.cached

    def engine_temp_views(self) -> list[str]:
        return list(self.engine_views)

    # Trees in the engine's shape (`` |-- name: type (nullable = …)``), flat: enough for planners.
    def schema_tree(self, schema: pa.Schema) -> str | None:
        columns = [Column(f.name, str(f.type), f.nullable) for f in schema]
        return _tree(columns)

    def query_tree(self, sql: str) -> str | None:
        self.asked.append(sql)
        return _tree(self.queries[sql]) if sql in self.queries else None

    def engine_view_tree(self, name: str) -> str | None:
        return _tree(self.queries[f"TABLE {name}"]) if f"TABLE {name}" in self.queries else None

    def engine_view_information(self, pattern: str) -> dict[str, str]:
        return dict(self.engine_informations)

    def view_of(self, name: TableName) -> ViewDefinition | None:
        if name.database is None and name.table.lower() in self.temp_views:
            return self.temp_views[name.table.lower()]
        database = name.database or self.current_database
        for v in self.view_definitions:
            if v.name == name.table and (v.database is None or v.database == database):
                return v
        return None


def _tree(columns: tuple[Column, ...] | list[Column]) -> str | None:
    if not columns:
        return None
    return "root\n" + "".join(f" |-- {c.name}: {c.type_text} (nullable = {str(c.nullable).lower()})\n"
                              for c in columns)


def fake_context(tmp_path, **kw) -> FakeContext:
    catalog = open_catalog(str(tmp_path / "warehouse"))
    catalog.create_database("default", ignore_if_exists=True)
    ctx = FakeContext(catalog, **kw)
    return ctx


def plan_of(planners: Mapping[type, object], ctx: FakeContext, sql: str):
    """Parse ``sql`` and run its planner over ``ctx``."""
    stmt = Statement(sql, 1, 1, 0)
    node = parse_statement(sql, 1, 1, offset=0)
    planner = planners[type(node)]
    return planner(ctx, node, stmt)  # type: ignore[operator]


def carry_out(call: CallProcedure) -> pa.Table:
    """Carry out a CALL's plan as the runner does, where that needs no Spark: its metadata work
    through the engine (``EngineWork``) or its answer (``Answer``)."""
    work = call.work
    with call.procedure.argument_errors():
        if isinstance(work, Answer):
            result = work.table
        elif isinstance(work, EngineWork):
            result = work.run()
        else:
            raise TypeError(f"{type(work).__name__} needs the SQL engine")
    return call.procedure.shaped(dict(call.values), result)


def view(name: str, database: str | None = "default") -> ViewDefinition:
    """A dyntable view definition (its query is not run by planners)."""
    return ViewDefinition(name=name, database=database, sql="SELECT 1 AS a", current_database="default",
                          columns=("a",), query_columns=("a",))
