"""dyntable SQL in Jupyter: the ``%sql``/``%%sql``/``%sql_connect`` magics (``%load_ext sqlext``).

Importing this package imports nothing heavy; the magics module needs IPython (the
``notebook`` extra) and is imported when the extension loads.
"""

from __future__ import annotations

from typing import Any


def current_session() -> Any:
    """The SqlSession the notebook's magics run on (opened on first use)."""
    from sqlext.notebook.magics import current_session as current

    return current()


__all__ = ["current_session"]
