"""The SparkSession of the benchmark smoke tests that need one (W3c), started only when asked for."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from sqlext.spark import build_spark

    session = build_spark("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    yield session
    session.stop()
