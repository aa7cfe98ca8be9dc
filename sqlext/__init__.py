"""dyntable's SQL front end: splitting, parsing and running SQL on Spark over managed tables.

``from sqlext import SqlSession`` is the entry point for Python code; ``%load_ext sqlext`` adds
the notebook magics. Both are imported on first use, so importing ``sqlext`` starts nothing and
pulls in neither pyspark nor IPython.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlext.execute.results import StatementResult
    from sqlext.session import SqlSession

_LAZY = {"SqlSession": "sqlext.session", "StatementResult": "sqlext.execute.results"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sqlext' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext sqlext``: register the ``%sql``, ``%%sql`` and ``%sql_connect`` magics."""
    from sqlext.notebook.magics import load_ipython_extension as load

    load(ipython)


__all__ = ["SqlSession", "StatementResult", "load_ipython_extension"]
