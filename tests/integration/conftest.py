"""Integration tests are Spark tests; each gets a fresh warehouse and SqlSession over the one
SparkSession of the whole run (the ``spark`` fixture of tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import MASTER_ENV  # noqa: F401  (test_local_cluster.py imports it from here)


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/integration/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spark)


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "wh")


@pytest.fixture
def session(spark, warehouse):
    from sqlext.session import SqlSession

    s = SqlSession(spark, warehouse=warehouse)
    yield s
    s.stop_jobs()
    # Spark's configuration outlives the test: a SET spark.paimon.* must not reach the next one.
    for key in [k for k in spark.conf.getAll if k.startswith("spark.paimon.")]:
        spark.conf.unset(key)
    for view in [t.name for t in spark.catalog.listTables() if t.isTemporary]:
        spark.catalog.dropTempView(view)
