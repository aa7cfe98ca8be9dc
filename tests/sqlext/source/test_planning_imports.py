"""Processes that only plan a stream (Spark's driver-side source runner) do not load pandas.

pyarrow imports pandas (~0.25 s) the first time any array is built; module-level arrays in
engine/sqlext made every planning process pay for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa

import sqlext

ROOT = str(Path(sqlext.__file__).resolve().parent.parent)  # this checkout, whatever PYTHONPATH says


def test_stream_planning_never_imports_pandas(warehouse, catalog):
    t = catalog.create_table("db.s", pa.schema([("id", pa.int64())]))
    for i in range(3):
        t.write_arrow(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}))
    script = textwrap.dedent(f"""
        import sys
        from sqlext.source.requests import ReadRequest
        from sqlext.source.stream import DyntableStreamReader
        options = {{"warehouse": {warehouse!r}, "table": "db.s", "scan.mode": "from-snapshot",
                    "scan.snapshot-id": "1"}}
        reader = DyntableStreamReader(ReadRequest.from_options(options))
        start = reader.initialOffset()
        end = reader.latestOffset(start)
        assert len(reader.partitions(start, end)) >= 1
        reader.commit(end)
        print("pandas" in sys.modules)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "False"
