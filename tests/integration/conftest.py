"""One SparkSession for every Spark test (start-up costs 8-16 s), and a fresh SqlSession per test."""

from __future__ import annotations

import os

import pytest

# The master every Spark test shares; test_local_cluster.py re-runs the data-source suite with
# ``local-cluster[2,1,1024]`` (separate executor JVMs and Python workers, as on a cluster).
MASTER_ENV = "DYNTABLE_TEST_MASTER"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/integration/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    from sqlext.spark import build_spark

    master = os.environ.get(MASTER_ENV, "local[2]")
    session = build_spark(master, {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    yield session
    session.stop()


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "wh")


@pytest.fixture
def session(spark, warehouse):
    from sqlext.session import SqlSession

    s = SqlSession(spark, warehouse=warehouse)
    yield s
    s.stop_jobs()
    for view in [t.name for t in spark.catalog.listTables() if t.isTemporary]:
        spark.catalog.dropTempView(view)
