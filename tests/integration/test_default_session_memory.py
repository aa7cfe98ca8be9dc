"""A default-sized session (Spark's 1 GB driver) keeps its memory whatever it ran before (issue 10).

The issue's sequence runs in a separate Python process with its own driver JVM (``build_spark``
sets no memory, so Spark's default 1 GB heap applies): four ``format("dyntable")`` appends into a
partitioned append table, four ``df.write.parquet`` of the same DataFrame, a count+sum read, the
same rows into a bucket-4 primary-key table plus a 10% upsert, then ``count(*)`` of that table;
then SQL statements through a ``SqlSession``. What a session must not keep per statement:

* the per-statement temporary views of the SQL layer: each held a data source relation, and
  Spark keeps a relation's planned read (pickled reader and every split) while it lives;
* file statistics inside the pickled read splits (Spark keeps them per relation and ships them
  in every task; readers never use them).

The default run uses 100K rows and 40 statements; the full sizes (400K rows, 300 statements) run
under ``slow``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from engine import open_catalog
from engine.meta.manifest import SimpleStats

REPO_ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import gc, json, re, shutil, subprocess, sys
    import numpy as np, pyarrow as pa, pyarrow.compute as pc
    from engine import open_catalog
    from sqlext.session import SqlSession
    from sqlext.spark import build_spark

    rows, statements, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    spark = build_spark("local[2]")  # no memory settings: Spark's default 1 GB driver
    jvm = spark.sparkContext._jvm
    wh = work + "/wh"
    cat = open_catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.float64()), ("p", pa.int32())])
    cat.create_table("db.app", schema, partition_keys=["p"])
    cat.create_table("db.pk", schema, primary_keys=["id"], options={"bucket": "4"})
    ids = np.arange(rows, dtype="int64")
    strings = pc.binary_join_element_wise("s", pc.cast(pa.array(ids), pa.string()), "")
    data = pa.table({"id": ids, "a": strings, "b": ids * 1.5, "p": (ids % 4).astype("int32")})
    df = spark.createDataFrame(data)

    def write(frame, table):
        frame.write.format("dyntable").option("warehouse", wh).option("table", table).mode("append").save()

    def read(table):
        return spark.read.format("dyntable").option("warehouse", wh).option("table", table).load()

    for _ in range(4):
        write(df, "db.app")
    for i in range(4):
        df.write.mode("append").parquet(work + "/parquet")
    app = read("db.app").selectExpr("count(*) c", "sum(b) s").collect()[0]
    write(df, "db.pk")
    write(df.filter("id % 10 = 0").selectExpr("id", "concat(a, 'u') a", "b + 1 b", "p"), "db.pk")
    pk = read("db.pk").selectExpr("count(*) c").collect()[0]

    session = SqlSession(spark, warehouse=wh, database="db")
    lazy = session.sql("SELECT count(*) AS c FROM pk WHERE id < 100")
    for _ in range(statements):
        session.sql("SELECT count(*), sum(b) FROM app WHERE p = 1").collect()
    session.sql("DELETE FROM app WHERE id = 3")
    views = [t.name for t in spark.catalog.listTables() if t.isTemporary]

    relations = None
    if shutil.which("jcmd"):
        gc.collect()
        pid = jvm.java.lang.ProcessHandle.current().pid()
        histogram = subprocess.run(["jcmd", str(pid), "GC.class_histogram"],
                                   capture_output=True, text=True).stdout
        found = re.search(r"(\\d+)\\s+\\d+\\s+\\S*\\.v2\\.python\\.PythonDataSourceV2\\s", histogram)
        relations = int(found.group(1)) if found else 0
    print(json.dumps({
        "heap_max": jvm.java.lang.Runtime.getRuntime().maxMemory(),
        "app": [app.c, app.s], "pk": pk.c, "lazy": lazy.collect()[0].c,
        "views": views, "relations": relations,
    }))
    spark.stop()
    """
)


def run_child(tmp_path: Path, rows: int, statements: int) -> dict:
    env = dict(os.environ)
    inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *inherited])
    for key in ("PYSPARK_SUBMIT_ARGS", "SPARK_DRIVER_MEMORY", "_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS"):
        env.pop(key, None)  # nothing may raise the driver's memory
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(rows), str(statements), str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=1800,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"child failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1])


def check(result: dict, rows: int, statements: int) -> None:
    assert result["heap_max"] <= 1100 * 1024 * 1024  # Spark's default 1 GB driver
    assert result["app"] == [4 * rows, 4 * 1.5 * rows * (rows - 1) / 2]
    assert result["pk"] == rows
    assert result["lazy"] == 100  # a SELECT's DataFrame still runs after its statement's views are gone
    assert result["views"] == []  # every per-statement view was dropped
    if result["relations"] is not None:
        # Data source relations alive in the driver after a full GC: a handful, not one per statement.
        assert result["relations"] < min(20, statements), result["relations"]


def test_issue_sequence_in_default_driver(tmp_path):
    check(run_child(tmp_path, 100_000, 40), 100_000, 40)


@pytest.mark.slow
def test_issue_sequence_in_default_driver_full_size(tmp_path):
    check(run_child(tmp_path, 400_000, 300), 400_000, 300)


def test_read_splits_carry_no_file_statistics(tmp_path):
    """Spark keeps each read partition's pickled bytes per relation and puts them in every task."""
    from pyspark import cloudpickle

    from sqlext.source.datasource import DyntableReader
    from sqlext.source.requests import ReadRequest, TableTarget

    wh = str(tmp_path / "wh")
    cat = open_catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.float64()), ("p", pa.int32())])
    layouts = {"app": {"partition_keys": ["p"]}, "pk": {"primary_keys": ["id"], "options": {"bucket": "2"}}}
    for name, kw in layouts.items():
        table = cat.create_table(f"db.{name}", schema, **kw)
        for c in range(3):
            ids = np.arange(c * 10, c * 10 + 10, dtype=np.int64)
            table.write_arrow(pa.table({"id": ids, "a": [f"s{i}" for i in ids], "b": ids * 1.5,
                                        "p": (ids % 2).astype(np.int32)}))
        planned = {f.file_name: f for s in table.plan().splits for f in s.files}
        parts = DyntableReader(ReadRequest(TableTarget(wh, f"db.{name}"))).partitions()
        shipped = [f for p in parts for f in p.split.files]
        assert sorted(f.file_name for f in shipped) == sorted(planned)
        for f in shipped:
            assert f.key_stats == SimpleStats.EMPTY and f.value_stats == SimpleStats.EMPTY
            full = planned[f.file_name]
            kept = ("min_key", "max_key", "level", "row_count", "min_sequence_number", "max_sequence_number")
            for attr in kept:
                assert getattr(f, attr) == getattr(full, attr)
        assert sum(len(cloudpickle.dumps(p)) for p in parts) < 0.7 * sum(
            len(cloudpickle.dumps(type(parts[0])(s))) for s in table.plan().splits)
