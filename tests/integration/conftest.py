"""One SparkSession for every Spark test (start-up costs 8-16 s), and a fresh SqlSession per test."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/integration/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    from sqlext.spark import build_spark

    session = build_spark("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
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
