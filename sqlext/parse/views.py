"""A view's definition as dyntable keeps it: the query text, not a plan.

A view over managed tables cannot be one of Spark's: Spark's temporary views keep either a plan
(whose scan is a fixed list of files, a stale snapshot after the next commit) or the SQL text
over the per-statement views the session drops when the statement ends, and Spark refuses a
permanent view over a temporary one. So dyntable keeps the view's SQL itself (temporary views in
the session, permanent ones in the warehouse) and the binder (:mod:`sqlext.bind.rewrite`)
expands every reference to a view into that query, bound afresh, at each statement: a view
always reads its tables as they are when it is queried.

The definition is shared by the binder (which expands it) and the executors (which store it),
hence its home in the lowest layer.

Invariants:
* ``query_columns`` are the names the query produced when the view was created and ``columns``
  the view's own (equal unless the view lists its columns); expansion selects ``query_columns``
  by name and renames them, so the view keeps its schema when a table under it gains columns;
* ``current_database`` is the database unqualified names in ``sql`` resolve against (the session's
  when the view was created, as Spark does), independent of where the view lives;
* the JSON form round-trips every field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

VIEW_FORMAT_VERSION = 1


@dataclass(frozen=True)
class ViewDefinition:
    """One view: where it lives, its query and its columns."""

    name: str
    database: str | None  # None: a temporary view of one session
    sql: str
    current_database: str
    columns: tuple[str, ...]
    query_columns: tuple[str, ...]
    column_comments: tuple[str | None, ...] = ()
    comment: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    created_millis: int = 0

    @property
    def temporary(self) -> bool:
        return self.database is None

    @property
    def label(self) -> str:
        """``db.v`` for a permanent view, ``v`` for a temporary one (as messages name it)."""
        return self.name if self.database is None else f"{self.database}.{self.name}"

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": VIEW_FORMAT_VERSION,
                "name": self.name,
                "database": self.database,
                "sql": self.sql,
                "currentDatabase": self.current_database,
                "columns": list(self.columns),
                "queryColumns": list(self.query_columns),
                "columnComments": list(self.column_comments),
                "comment": self.comment,
                "properties": dict(self.properties),
                "createdMillis": self.created_millis,
            },
            indent=2,
        )

    @staticmethod
    def from_json(text: str) -> ViewDefinition:
        data: dict[str, Any] = json.loads(text)
        return ViewDefinition(
            name=data["name"],
            database=data["database"],
            sql=data["sql"],
            current_database=data["currentDatabase"],
            columns=tuple(data["columns"]),
            query_columns=tuple(data["queryColumns"]),
            column_comments=tuple(data.get("columnComments") or ()),
            comment=data.get("comment"),
            properties=dict(data.get("properties") or {}),
            created_millis=int(data.get("createdMillis") or 0),
        )
