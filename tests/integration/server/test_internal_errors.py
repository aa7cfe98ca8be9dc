"""An internal error (a bug: Python raised something dyntable does not name) over the server: the
client is told where the traceback is, and the server log has it, once."""

from __future__ import annotations

import logging
import re

import pytest
from TCLIService import ttypes as tt


def _broken_create(session, node, stmt):
    raise AssertionError("an executor's invariant broke")


@pytest.mark.parametrize("run_async", [False, True])
def test_internal_error_is_logged_with_its_traceback(none_server, monkeypatch, caplog, run_async):
    from pyhive import exc, hive

    from sqlext.execute import HANDLERS
    from sqlext.parse import ast

    monkeypatch.setitem(HANDLERS, ast.CreateDatabase, _broken_create)
    conn = hive.connect("127.0.0.1", port=none_server.port, username="tester")
    try:
        cursor = conn.cursor()
        with caplog.at_level(logging.ERROR, logger="dyntable.server"):
            if run_async:
                cursor.execute("CREATE DATABASE broken_db", async_=True)
                status = cursor.poll()
                while status.operationState == tt.TOperationState.RUNNING_STATE:
                    status = cursor.poll()
                assert status.operationState == tt.TOperationState.ERROR_STATE
                sqlstate, message = status.sqlState, status.errorMessage
            else:
                with pytest.raises(exc.OperationalError) as info:
                    cursor.execute("CREATE DATABASE broken_db")
                status = info.value.args[0].status
                sqlstate, message = status.sqlState, status.errorMessage
        assert sqlstate == "XX000"
        assert message.startswith("AssertionError: an executor's invariant broke")
        assert "--verbose" not in message
        found = re.search(r"\(the server log has the traceback: incident ([0-9a-f]{8})\)", message)
        assert found is not None, message
        records = [r for r in caplog.records if found.group(1) in r.getMessage()]
        assert len(records) == 1  # logged once
        assert "CREATE DATABASE broken_db" in records[0].getMessage()
        assert records[0].exc_info is not None and records[0].exc_info[0] is AssertionError
        assert "_broken_create" in caplog.text  # the traceback reaches the executor's frame
        cursor.execute("SELECT 1")  # the session goes on
        assert cursor.fetchall() == [(1,)]
    finally:
        conn.close()
