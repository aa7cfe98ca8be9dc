"""Shared fixtures: a fresh warehouse per test, a catalog, and a real S3 API (moto on loopback).

The S3 server (tests/s3_server.py: moto with atomic conditional writes) is started once per
session on a free 127.0.0.1 port; dummy AWS credentials are set in the environment only while it
runs; tests that need it skip when moto or s3fs is missing.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.skip_guard import pytest_addoption, pytest_configure  # noqa: F401 (hooks: --allowed-skips)

os.environ.setdefault("TZ", "UTC")
# The suite is hundreds of short queries: its local JVMs (this process's shared session and every
# dyntable-sql / notebook kernel it launches) cap the JIT at C1, which users get only on request
# (sqlext/spark.py has the measurements).
os.environ.setdefault("DYNTABLE_FAST_START", "1")


# The master every Spark test shares; test_local_cluster.py re-runs the data-source suite with
# ``local-cluster[2,1,1024]`` (separate executor JVMs and Python workers, as on a cluster).
MASTER_ENV = "DYNTABLE_TEST_MASTER"


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One SparkSession for every Spark test of the run (start-up costs 8-16 s), started when first
    asked for.

    Its Spark warehouse (where Spark's own catalog puts ``USING parquet`` tables) is the run's own:
    the product default is one directory per user, so another run on the machine, or an earlier
    one that died, would leave a table directory there that this run's CREATE TABLE of the same
    name refuses (LOCATION_ALREADY_EXISTS). Python processes wait 120 s for the JVM's sockets (a
    local default of build_spark; see sqlext/spark.py for the one wait no setting reaches).
    """
    from sqlext.spark import build_spark

    master = os.environ.get(MASTER_ENV, "local[2]")
    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("spark-warehouse")),
    }
    session = build_spark(master, conf)
    yield session
    session.stop()


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")


@pytest.fixture
def catalog(warehouse):
    from engine import open_catalog

    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat


BUCKET = "dyntable-test"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[Any]:
    """The session's S3 server (tests/s3_server.py), for tests that steer it (``hold_answer``)."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    from tests.s3_server import S3Server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = S3Server().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_endpoint(s3_server: Any) -> Iterator[dict[str, Any]]:
    """The storage options for FileIO that reach the session's S3 server (endpoint + credentials)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_SESSION_TOKEN", "testing")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        for var in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
            mp.delenv(var, raising=False)
        options: dict[str, Any] = {"client_kwargs": {"endpoint_url": s3_server.endpoint}}
        import s3fs

        s3fs.S3FileSystem(skip_instance_cache=True, **options).mkdir(BUCKET)
        yield options


@pytest.fixture()
def s3_root(s3_endpoint: dict[str, Any]) -> str:
    """A fresh, empty prefix in the test bucket for one test."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex}"
