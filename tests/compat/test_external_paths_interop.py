"""Tables dyntable writes to external paths (``data-file.external-paths``), read by pypaimon 2.1.

Java Paimon 0.9 predates ``_EXTERNAL_PATH`` (Paimon 1.1) and cannot read such tables, so pypaimon is
the oracle: it reads the rows dyntable wrote through the engine, SQL and DataFrames, after
compaction and expiration, and it computes the same entropy directories for a file name.
"""

from __future__ import annotations

import json
import os
import subprocess

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.meta.external_paths import entropy_dirs
from tests.compat.harness import PyPaimon, locate_venv
from tests.compat.test_newer_features import _rows

pytestmark = pytest.mark.compat

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()),
                    pa.field("p", pa.string(), nullable=False)])


def _batch(ids, v: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "p": ["a" if i % 2 else "b" for i in ids]},
                    schema=SCHEMA)


def _options(tmp_path, strategy: str) -> dict[str, str]:
    return {"data-file.external-paths": f"file://{tmp_path}/ext1,file://{tmp_path}/ext2",
            "data-file.external-paths.strategy": strategy}


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject"])
@pytest.mark.parametrize("pk", [False, True])
def test_pypaimon_reads_what_dyntable_wrote_to_external_paths(pypaimon: PyPaimon, tmp_path, strategy, pk):
    warehouse = tmp_path / "wh"
    catalog = open_catalog(str(warehouse))
    catalog.create_database("db")
    options = {**_options(tmp_path, strategy), **({"bucket": "2"} if pk else {})}
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=options,
                             primary_keys=["id", "p"] if pk else [])
    for i in range(3):
        t.write_arrow(_batch(range(i * 4, i * 4 + 6), f"w{i}"))
        assert _rows(pypaimon.read(warehouse, "db.t")) == _rows(t.refresh().to_arrow())
    t = t.refresh()
    t.compact(full=True)
    t.maintenance.expire_snapshots(retain_max=1)
    t = t.refresh()
    files = [f for s in t.new_scan().plan().splits for f in s.files]
    assert files and all(f.external_path.startswith(f"file:{tmp_path}/ext") for f in files)
    assert _rows(pypaimon.read(warehouse, "db.t")) == _rows(t.to_arrow())
    # and dyntable reads pypaimon's own write to the same table, at its external paths
    pypaimon.write(warehouse, "db.t", _batch([100, 101], "pp"))
    assert _rows(pypaimon.read(warehouse, "db.t")) == _rows(t.refresh().to_arrow())


def test_entropy_directories_match_pypaimon(pypaimon: PyPaimon):
    python, how = locate_venv()
    assert python is not None, how  # the pypaimon fixture skipped already when it is missing
    names = [f"data-{i:04d}-c3b2a1f0-{i * 7}.parquet" for i in range(40)] + ["changelog-x-0.orc", "d"]
    code = ("import json,sys\n"
            "from pypaimon.common.external_path_provider import EntropyInjectExternalPathProvider as E\n"
            "p = E(['file:/x'])\n"
            "print(json.dumps([p._compute_hash(n) for n in json.loads(sys.argv[1])]))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([python, "-c", code, json.dumps(names)], capture_output=True, text=True, env=env,
                          timeout=120, check=True)
    assert json.loads(proc.stdout) == [entropy_dirs(n) for n in names]


@pytest.mark.spark
def test_sql_and_dataframe_writes_go_to_external_paths(pypaimon: PyPaimon, spark, tmp_path):
    from sqlext.session import SqlSession

    warehouse = tmp_path / "wh"
    session = SqlSession(spark, warehouse=str(warehouse))
    try:
        opts = ", ".join(f"'{k}' = '{v}'" for k, v in _options(tmp_path, "round-robin").items())
        list(session.execute("CREATE DATABASE IF NOT EXISTS db"))
        list(session.execute(f"CREATE TABLE db.s (id BIGINT, v STRING) TBLPROPERTIES ({opts}, "
                             "'primary-key' = 'id', 'bucket' = '2')"))
        list(session.execute("INSERT INTO db.s VALUES (1, 'a'), (2, 'b'), (3, 'c')"))
        df = spark.createDataFrame([(3, "z"), (4, "d")], "id BIGINT, v STRING")
        (df.write.format("dyntable").option("warehouse", str(warehouse)).option("table", "db.s")
         .mode("append").save())
        list(session.execute("UPDATE db.s SET v = 'y' WHERE id = 1"))
        list(session.execute("CALL sys.compact(table => 'db.s')"))
        got = session.sql("SELECT id, v FROM db.s").toArrow()
        assert _rows(got) == [(1, "y"), (2, "b"), (3, "z"), (4, "d")]
        assert _rows(pypaimon.read(warehouse, "db.s")) == _rows(got)
        t = open_catalog(str(warehouse)).get_table("db.s")
        assert all(f.external_path for s in t.new_scan().plan().splits for f in s.files)
        assert not any(n.endswith(".parquet") for _, _, fs in os.walk(t.path) for n in fs)
    finally:
        session.stop_jobs()
