"""The data-source suite (and the S3 SQL surface) once more on ``local-cluster[2,1,1024]``:
executors are separate JVMs with their own Python workers, so anything that only works because
driver and tasks share a process (module state, a cached catalog, options that never reach the
executors, unpicklable plans) fails here as it would on a real cluster.

The suite runs in a child pytest process because a JVM hosts one SparkContext and every other test
shares the ``local[2]`` one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import MASTER_ENV

ROOT = Path(__file__).resolve().parents[2]
# The data source's own suite, plus the SQL surface on S3 (moto on loopback) with storage options
# given only to the session: the executors must get the endpoint from the data source's options.
SUITE = [
    "tests/integration/test_datasource.py",
    "tests/integration/test_insert_count.py",
    "tests/integration/test_sql_s3.py",
]


@pytest.mark.skipif(
    os.environ.get(MASTER_ENV, "").startswith("local-cluster"), reason="this is the child run"
)
def test_data_source_suite_on_a_local_cluster():
    env = dict(os.environ)
    env[MASTER_ENV] = "local-cluster[2,1,1024]"
    # Executors start their Python workers from their own working directory; the repository
    # root on PYTHONPATH is how a cluster would ship the package (spark.submit.pyFiles / a wheel).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout and "skipped" not in proc.stdout
