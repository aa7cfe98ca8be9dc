"""The session's Python processes wait as long as sqlext.spark says for the JVM's sockets: the driver's
Python through its environment, the workers through the setting the JVM hands them."""

from __future__ import annotations

import os

from sqlext.spark import PYTHON_SOCKET_TIMEOUT_ENV, PYTHON_SOCKET_TIMEOUT_KEY, PYTHON_SOCKET_TIMEOUT_S


def test_driver_and_workers_wait_for_the_jvm_socket(spark):
    assert spark.conf.get(PYTHON_SOCKET_TIMEOUT_KEY) == f"{PYTHON_SOCKET_TIMEOUT_S}s"
    assert os.environ[PYTHON_SOCKET_TIMEOUT_ENV] == str(PYTHON_SOCKET_TIMEOUT_S)

    def worker_timeout(batches):
        import os

        import pyarrow as pa

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"t": [os.environ.get("SPARK_AUTH_SOCKET_TIMEOUT")]})

    seen = {r.t for r in spark.range(0, 2, 1, 2).mapInArrow(worker_timeout, "t string").collect()}
    assert seen == {str(PYTHON_SOCKET_TIMEOUT_S)}
