"""Format tables between dyntable and pypaimon 2.1's format-table reader and writer (issue 36).

dyntable creates the table (Paimon's schema file) and writes files with Spark's writers in
Hive-style partition directories: pypaimon reads the same rows. pypaimon writes files into the
same table: dyntable's SQL reads them. The script (``pypaimon_format_tables.py``) runs in
pypaimon's own venv.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.compat.harness import PyPaimon, locate_venv

pytestmark = [pytest.mark.compat, pytest.mark.spark]

SCRIPT = Path(__file__).with_name("pypaimon_format_tables.py")


@pytest.fixture
def warehouse(tmp_path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def session(spark, warehouse):
    from sqlext.session import SqlSession

    s = SqlSession(spark, warehouse=warehouse)
    yield s
    for view in [t.name for t in spark.catalog.listTables() if t.isTemporary]:
        spark.catalog.dropTempView(view)


def _pypaimon(warehouse: str, name: str, action: str, rows: list[dict] | None = None) -> object:
    python, how = locate_venv()
    assert python is not None, how  # the pypaimon fixture skipped already when it is missing
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([python, str(SCRIPT), warehouse, name, action], input=json.dumps(rows or []),
                          capture_output=True, text=True, timeout=300, check=False, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


_PYPAIMON_CSV_HEADER = ("pypaimon 2.1 reads a CSV file's first line as its header (pyarrow's default) and "
                        "writes one, where Paimon's csv.include-header defaults to false, as Spark's CSV")


@pytest.mark.parametrize(("fmt", "props"), [
    pytest.param("csv", "", marks=pytest.mark.xfail(strict=True, reason=_PYPAIMON_CSV_HEADER)),
    ("csv", "TBLPROPERTIES ('csv.include-header' = 'true')"),
    ("parquet", ""), ("json", ""), ("orc", ""),
])
def test_both_ways(pypaimon: PyPaimon, session, warehouse, fmt, props):
    session.sql(f"CREATE TABLE t (id INT, name STRING, dt STRING) USING {fmt} PARTITIONED BY (dt) {props}")
    session.sql("INSERT INTO t VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    theirs = _pypaimon(warehouse, "default.t", "read")
    assert sorted((r["id"], r["name"], r["dt"]) for r in theirs) == [(1, "a", "x"), (2, "b", "y")]
    _pypaimon(warehouse, "default.t", "write", [{"id": 3, "name": "c", "dt": "x"}])
    ours = sorted(tuple(r) for r in session.sql("SELECT * FROM t").collect())
    assert ours == [(1, "a", "x"), (2, "b", "y"), (3, "c", "x")]
