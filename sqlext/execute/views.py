"""Views and cached tables on the session's side: where views are kept, how a name finds one, and
carrying out the plans of CREATE/DROP VIEW and CACHE/UNCACHE TABLE (planned in view_stmts.py;
SHOW VIEWS, DESCRIBE and SHOW CREATE of a view are planned in session_stmts.py and describe.py).

A view whose query reads a managed table (directly or through another view) is dyntable's: its
query text is kept (:class:`sqlext.parse.views.ViewDefinition`) and the binder expands it at
every statement that reads the view, so the view reads its tables as they are then. Where:

* ``CREATE TEMPORARY VIEW``: in the session (``SqlSession.temp_views``), gone when it ends, as
  Spark's temporary views;
* ``CREATE VIEW``: in the warehouse, ``<db>.db/.views/<name>.json``, seen by every session on the
  warehouse (a name starting with '.' is never a table, so the file cannot clash with one).

A view over Spark's own tables only is Spark's: the statement goes to Spark unchanged.

``CACHE TABLE c AS <query over managed tables>`` registers a Spark temporary view built from the
query's plan and caches it in Spark; the session keeps the query and the versions (snapshot and
schema ids) of the tables it read, and rebuilds the cache lazily when a later statement reads
``c`` after one of them changed, as Spark re-caches after a write to a cached table.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine import DyntableError, Identifier
from sqlext.execute.planning import CacheTable, CreateView, DropView, ViewAction
from sqlext.execute.results import StatementResult
from sqlext.parse.names import TableName
from sqlext.parse.splitter import Statement
from sqlext.parse.views import ViewDefinition

if TYPE_CHECKING:
    from sqlext.session import SqlSession

VIEWS_DIR = ".views"
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTERNAL_PREFIX = "__dyntable_"


# -- storage of permanent views -------------------------------------------------------------------
def _view_path(s: SqlSession, database: str, name: str) -> str:
    Identifier(database, name)  # refuses a name that cannot be a path component
    return f"{s.catalog.database_path(database)}/{VIEWS_DIR}/{name.lower()}.json"


def load_view(s: SqlSession, database: str, name: str) -> ViewDefinition | None:
    """The permanent view ``database.name``, or None."""
    try:
        path = _view_path(s, database, name)
        return ViewDefinition.from_json(s.catalog.io.read_text(path))
    except FileNotFoundError:
        return None
    except DyntableError:  # a name that cannot be stored is no stored view
        return None


def list_views(s: SqlSession, database: str) -> list[ViewDefinition]:
    """The permanent views of ``database``, by name."""
    found = []
    for status in s.catalog.io.list_dir(f"{s.catalog.database_path(database)}/{VIEWS_DIR}"):
        if not status.is_dir and status.path.endswith(".json"):
            try:
                found.append(ViewDefinition.from_json(s.catalog.io.read_text(status.path)))
            except (FileNotFoundError, ValueError, KeyError):
                continue  # dropped meanwhile, or not a view file
    return sorted(found, key=lambda v: v.name.lower())


def _save_view(s: SqlSession, view: ViewDefinition) -> None:
    assert view.database is not None
    path = _view_path(s, view.database, view.name)
    s.catalog.io.write_text(path, view.to_json(), overwrite=True)


def _delete_view(s: SqlSession, view: ViewDefinition) -> None:
    assert view.database is not None
    s.catalog.io.delete(_view_path(s, view.database, view.name))


# -- names ----------------------------------------------------------------------------------------
def spark_temp_views(s: SqlSession) -> list[str]:
    """Spark's own temporary views (the session's internal per-statement ones left out)."""
    names = [r[1] for r in s.spark.sql("SHOW VIEWS").collect() if r[2]]
    return [n for n in names if not n.startswith(_INTERNAL_PREFIX)]


def view_of(s: SqlSession, name: TableName) -> ViewDefinition | None:
    """The dyntable view a name refers to (Spark's order: a temporary view first), or None."""
    if name.catalog is not None or name.branch is not None or name.system_table is not None:
        return None
    if name.database is None and name.table.lower() in s.temp_views:
        return s.temp_views[name.table.lower()]
    database = name.database or s.current_database
    if not s.catalog.database_exists(database) or s.is_managed(name):
        return None
    return load_view(s, database, name.table)


def _like(names: Iterable[str], pattern: str | None) -> set[str]:
    names = list(names)
    if not pattern:
        return set(names)
    pattern = pattern.replace("%", "*").replace("_", "?")
    alternatives = [p.strip() for p in pattern.split("|")]
    return {n for n in names if any(fnmatch.fnmatch(n.lower(), p.lower()) for p in alternatives)}


# -- listings ---------------------------------------------------------------------------------------
def temporary_names(s: SqlSession) -> list[str]:
    """The session's temporary views: dyntable's, cached tables and Spark's own, by name."""
    names = {v.name.lower(): v.name for v in s.temp_views.values()}
    for name in spark_temp_views(s):
        names.setdefault(name.lower(), name)
    return [names[k] for k in sorted(names)]


def view_listing(s: SqlSession, database: str, like: str | None) -> list[tuple[str, str, bool]]:
    """(namespace, name, isTemporary) of the views of ``database`` and every temporary view."""
    permanent = [v.name for v in list_views(s, database)]
    temporary = temporary_names(s)
    keep_p, keep_t = _like(permanent, like), _like(temporary, like)
    return [(database, v, False) for v in permanent if v in keep_p] + [
        ("", v, True) for v in temporary if v in keep_t
    ]


# -- CACHE / UNCACHE TABLE ---------------------------------------------------------------------------
@dataclass
class CachedQuery:
    """A cached table over managed tables: its query and what it read when it was built."""

    name: str
    sql: str
    current_database: str
    lazy: bool
    options: dict[str, str]
    tables: tuple[Identifier, ...] = ()  # the managed tables it reads (not time-travelled)
    views: tuple[tuple[str | None, str], ...] = ()  # the dyntable views it reads
    nested: tuple[str, ...] = ()  # the cached tables it reads
    versions: tuple[Any, ...] = ()  # what those were when it was built


def run_view_action(s: SqlSession, action: ViewAction, stmt: Statement) -> StatementResult:
    """Carry out a view plan (``planning.ViewAction``, planned in ``view_stmts.py``)."""
    if isinstance(action, CreateView):
        view = action.view
        if view.database is None:
            key = view.name.lower()
            if action.replaces:
                s.uncache(key)
                s.spark.catalog.dropTempView(view.name)
            s.temp_views[key] = view
        else:
            _save_view(s, view)
    elif isinstance(action, DropView):
        if action.temporary is not None:
            if action.temporary in s.temp_views:
                del s.temp_views[action.temporary]
            else:
                s.uncache(action.temporary)
        if action.stored is not None:
            _delete_view(s, action.stored)
        if action.then_engine:
            return StatementResult(stmt, s.spark.sql(stmt.text), None)
    elif isinstance(action, CacheTable):
        s.uncache(action.name.lower())
        s.build_cache(CachedQuery(action.name, action.sql, action.current_database, action.lazy,
                                  dict(action.options)))
    else:
        s.uncache(action.name.lower())
    return StatementResult(stmt, None, action.message)
