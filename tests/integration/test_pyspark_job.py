"""Issue 34's PySpark job on ``local-cluster[2,1,1024]``: a plain ``SparkSession.builder`` run by
the project's Python without its environment activated and without ``PYSPARK_PYTHON``, writing
4-partition DataFrames twice into a default-bucket primary-key table, reading plain Spark's rows
back, running a CTAS with ``current_timestamp()`` and streaming the table
(tests/integration/jobs/pyspark_default_bucket_job.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "integration" / "jobs" / "pyspark_default_bucket_job.py"


def test_pyspark_job_on_a_local_cluster(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    # The environment is not activated: its bin directory is not on the PATH, so Spark's default
    # worker Python ('python3') is not the one with the package.
    venv_bin = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    # The repository on PYTHONPATH is how a cluster job ships the package (as test_local_cluster).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path / "wh"), "local-cluster[2,1,1024]"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("JOB ")]
    assert proc.returncode == 0 and lines, proc.stdout[-4000:] + proc.stderr[-6000:]
    out = json.loads(lines[-1][4:])
    assert out["partitions"] == [4, 4]
    assert out["rows"] == out["distinct_ids"] == out["expected_rows"] == 75_000
    assert out["missing"] == out["extra"] == 0
    assert out["ctas"] == {"rows": 10, "stamps": 1, "set": True}
    assert out["streamed"] == {"rows": 75_000, "missing": 0}
