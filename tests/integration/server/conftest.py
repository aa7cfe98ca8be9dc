"""In-process dyntable-server instances on free loopback ports, over the shared SparkSession."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest

from sqlext.server.auth import Authenticator, UsersFile, hash_password
from sqlext.server.sessions import ServerState
from sqlext.server.thrift_service import HiveServer

PASSWORD = "s3cret-pw"


def wait_for(condition: Callable[[], bool], timeout: float = 120.0, what: str = "condition") -> None:
    """Poll ``condition`` until it holds (fails the test after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _server(spark, warehouse: str, auth: str, users: UsersFile | None = None, max_sessions: int = 32):
    state = ServerState(spark, warehouse, max_sessions=max_sessions)
    return HiveServer(state, "127.0.0.1", 0, auth=auth, authenticator=Authenticator(users)).start()


@pytest.fixture(scope="module")
def users_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("users") / "users"
    path.write_text(f"# test users\nalice:{hash_password(PASSWORD)}\n")
    os.chmod(path, 0o600)
    return str(path)


@pytest.fixture(scope="module")
def none_server(spark, tmp_path_factory):
    server = _server(spark, str(tmp_path_factory.mktemp("wh_none")), "NONE")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def plain_server(spark, tmp_path_factory, users_file):
    server = _server(spark, str(tmp_path_factory.mktemp("wh_plain")), "PLAIN", UsersFile.load(users_file))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def nosasl_server(spark, tmp_path_factory):
    server = _server(spark, str(tmp_path_factory.mktemp("wh_nosasl")), "NOSASL")
    yield server
    server.stop()
