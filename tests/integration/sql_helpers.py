"""Running SQL through a test's SqlSession: the rows of the last statement, or its typed error."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError


def run(session, sql):
    """The last statement's rows as tuples (None when it returns no rows)."""
    result = list(session.execute(sql))[-1]
    return [tuple(r) for r in result.dataframe.collect()] if result.dataframe is not None else None


def fails(session, sql, *words):
    """The SqlError ``sql`` raises; each of ``words`` must be in its message."""
    with pytest.raises(SqlError) as info:
        list(session.execute(sql))
    for w in words:
        assert w in str(info.value), str(info.value)
    return info.value
