"""Which Python a session's workers run (issue 34.7): this interpreter on local masters when nobody
chose one; a cluster's choice is left to the user, with a warning naming PYSPARK_PYTHON.

The session is a stand-in with the attributes the rule reads (``sparkContext.master``,
``pythonExec``, ``getConf``); the real thing runs in tests/integration/test_pyspark_job.py."""

from __future__ import annotations

import logging
import os
import sys
from types import SimpleNamespace

import pytest

from sqlext.spark import point_workers_at_this_python


def _session(master: str, python_exec: str = "python3", **conf: str) -> SimpleNamespace:
    spark_conf = SimpleNamespace(get=lambda key, default=None: conf.get(key, default))
    sc = SimpleNamespace(master=master, pythonExec=python_exec, getConf=lambda: spark_conf)
    return SimpleNamespace(sparkContext=sc)


@pytest.mark.parametrize("master", ["local[2]", "local-cluster[2,1,1024]"])
def test_local_workers_get_this_interpreter(monkeypatch, master) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "")  # recorded, so the value set below is undone after
    monkeypatch.delenv("PYSPARK_PYTHON")
    spark = _session(master)
    assert point_workers_at_this_python(spark) == sys.executable
    assert spark.sparkContext.pythonExec == sys.executable
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def test_a_chosen_python_is_kept(monkeypatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/env/bin/python")
    spark = _session("local[2]", "/opt/env/bin/python")
    assert point_workers_at_this_python(spark) == "/opt/env/bin/python"
    monkeypatch.delenv("PYSPARK_PYTHON")
    spark = _session("local[2]", **{"spark.pyspark.python": "/opt/other/python"})
    assert point_workers_at_this_python(spark) == "/opt/other/python"
    assert spark.sparkContext.pythonExec == "python3"  # Spark applies its own setting


def test_a_cluster_without_a_choice_is_warned(monkeypatch, caplog) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    spark = _session("spark://host:7077")
    with caplog.at_level(logging.WARNING, logger="sqlext.spark"):
        assert point_workers_at_this_python(spark) == "python3"
    assert spark.sparkContext.pythonExec == "python3"
    assert "PYSPARK_PYTHON" in caplog.text
    quiet = _session("yarn", **{"spark.executorEnv.PYSPARK_PYTHON": "./env/bin/python"})
    caplog.clear()
    assert point_workers_at_this_python(quiet) == "./env/bin/python"
    assert not caplog.text
