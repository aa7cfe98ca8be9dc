"""Apache Superset against dyntable-server, driven in headless Chromium as a user drives it (issue 34).

Superset (from the package index, in its own venv: ``.ci/superset-venv.sh``) connects to an
in-process dyntable-server with ``hive://`` (PyHive's dialect), and a browser (Debian's Chromium,
``.ci/superset-chromium.sh``) logs in and visits the pages; ``driver.py``, run by the Superset venv's
python, does the browser work and reports what each page shows, which the tests below check:

* the connection: Superset's connection test passes and the database list shows it;
* SQL Lab: after pressing Run, the result grid shows the query's rows; the function names its
  editor completes (from ``SHOW FUNCTIONS``) are Spark's;
* a dataset over the table: the dataset editor lists every column with its type, the timestamp
  columns marked temporal (and Explore shows each column's type icon);
* a dataset over a query: both kinds of timestamps are typed TIMESTAMP and temporal (from the
  result set's metadata, where the server types both as Hive's TIMESTAMP);
* a time-series chart over the dataset draws, and its data request returns the rows per day.

The Superset venv is found through ``$DYNTABLE_SUPERSET_PYTHON`` (as ``.ci/run`` sets it) or at
``<repo>/.venv-superset``; without it, or without Chromium, the tests skip, and fail under CI
(``CI=true``). Screenshots of every page are kept in the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sqlext.server.auth import Authenticator
from sqlext.server.sessions import ServerState
from sqlext.server.thrift_service import HiveServer

ENV_PYTHON = "DYNTABLE_SUPERSET_PYTHON"
ROOT = Path(__file__).resolve().parents[3]
REPO_VENV_PYTHON = ROOT / ".venv-superset" / "bin" / "python"
DRIVER = Path(__file__).with_name("driver.py")
BROWSER = ("/usr/bin/chromium", "/usr/bin/chromedriver")
TIMEOUT = 900  # seconds for the whole browser run: Superset's set-up is ~1 min, the pages ~30 s

SCHEMA, TABLE = "shop", "sales"
COLUMNS = (  # name, dyntable type, what Superset's dataset editor shows: type, "Is temporal"
    ("id", "BIGINT", "BIGINT", False),
    ("region", "STRING", "STRING", False),
    ("amount", "DECIMAL(10,2)", "DECIMAL", False),
    ("qty", "INT", "INT", False),
    ("paid", "BOOLEAN", "BOOLEAN", False),
    ("ordered_at", "TIMESTAMP_LTZ", "TIMESTAMP", True),
    # Spark's TIMESTAMP, as a Spark session means it (issue 35): DESCRIBE says `timestamp`
    ("shipped_at", "TIMESTAMP", "TIMESTAMP", True),
    # DESCRIBE says `timestamp_ntz`, as Spark does, a name PyHive 0.7's dialect does not know: the
    # table's dataset cannot type it (docs/server.md); a dataset over a query can (below)
    ("local_time", "TIMESTAMP_NTZ", "UNKNOWN", False),
)
ROWS = (  # id, region, amount, qty, paid, ordered_at (also shipped_at and local_time)
    (1, "north", Decimal("10.50"), 1, True, "2024-01-01 10:00:00"),
    (2, "south", Decimal("20.00"), 2, False, "2024-01-01 15:30:00"),
    (3, "north", Decimal("7.25"), 3, True, "2024-01-02 09:00:00"),
    (4, "east", Decimal("3.00"), 1, True, "2024-01-03 12:00:00"),
    (5, "south", Decimal("12.75"), 5, False, "2024-01-03 18:45:00"),
)
QUERY = f"SELECT id, region, amount, ordered_at FROM {TABLE} ORDER BY id"
QUERY_DATASET = "sales_times"
QUERY_DATASET_SQL = f"SELECT id, ordered_at, shipped_at, local_time FROM {TABLE}"


def locate_superset() -> tuple[str | None, str]:
    """The Superset venv's python and how it was found, or ``(None, why it is unavailable)``."""
    configured = os.environ.get(ENV_PYTHON)
    if configured:
        if not os.access(configured, os.X_OK):
            return None, f"${ENV_PYTHON}={configured!r} is not an executable file"
        python, how = configured, f"${ENV_PYTHON}"
    elif os.access(REPO_VENV_PYTHON, os.X_OK):
        python, how = str(REPO_VENV_PYTHON), "repo venv"
    else:
        return None, (f"no Superset venv: set ${ENV_PYTHON}, or run `bash .ci/superset-venv.sh` "
                      f"to create {REPO_VENV_PYTHON.parent.parent}")
    missing = [path for path in BROWSER if not shutil.which(path)]
    if missing:
        return None, f"no {' or '.join(missing)}: run `bash .ci/superset-chromium.sh` (Debian's chromium)"
    return python, how


@pytest.fixture(scope="module")
def superset_python() -> str:
    python, why = locate_superset()
    if python is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the Superset check cannot run under CI: {why}")
        pytest.skip(why)
    return python


@pytest.fixture(scope="module")
def hive_server(spark, tmp_path_factory):
    """dyntable-server (auth NONE, as ``dyntable-server`` starts by default) with the sales table."""
    from pyhive import hive

    state = ServerState(spark, str(tmp_path_factory.mktemp("wh_superset")), max_sessions=32)
    server = HiveServer(state, "127.0.0.1", 0, auth="NONE", authenticator=Authenticator(None)).start()
    columns = ", ".join(f"{name} {kind}" for name, kind, _, _ in COLUMNS)
    values = ", ".join(
        f"({i}, '{region}', {amount}, {qty}, {str(paid).lower()}, TIMESTAMP'{at}', TIMESTAMP'{at}', "
        f"TIMESTAMP_NTZ'{at}')"
        for i, region, amount, qty, paid, at in ROWS)
    conn = hive.connect("127.0.0.1", port=server.port, username="superset", auth="NONE")
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE DATABASE {SCHEMA}")
        cur.execute(f"CREATE TABLE {SCHEMA}.{TABLE} ({columns})")
        cur.execute(f"INSERT INTO {SCHEMA}.{TABLE} VALUES {values}")
    finally:
        conn.close()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def report(superset_python, hive_server, tmp_path_factory) -> dict[str, Any]:
    """What Superset's pages showed: driver.py's report (screenshots under its ``workdir``)."""
    work = tmp_path_factory.mktemp("superset")
    spec = {
        "hive_uri": f"hive://superset@127.0.0.1:{hive_server.port}/{SCHEMA}?auth=NONE",
        "database_name": "dyntable", "schema": SCHEMA, "table": TABLE, "query": QUERY,
        "query_dataset": QUERY_DATASET, "query_dataset_sql": QUERY_DATASET_SQL,
        "time_column": "ordered_at", "metric_column": "amount", "chart_name": "Sales per day",
        "workdir": str(work),
    }
    (work / "spec.json").write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([superset_python, str(DRIVER), str(work / "spec.json"), str(work / "report.json")],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    if proc.returncode != 0 or not (work / "report.json").exists():
        pytest.fail(f"driver.py failed (exit {proc.returncode}): {proc.stderr[-4000:]}")
    result = json.loads((work / "report.json").read_text())
    if "fatal" in result:
        pytest.fail(f"Superset did not come up: {result['fatal']}\n{result['superset_log_tail']}")
    print(f"Superset check: timings {result['timings']}, screenshots in {work / 'screenshots'}")
    return result


def step(report: dict[str, Any], name: str) -> Any:
    """A step's observations, or the test fails with the step's error and Superset's log."""
    if name in report["errors"]:
        pytest.fail(f"step {name} failed ({report['screenshots'][name]}):\n{report['errors'][name]}\n"
                    f"superset log:\n{report['superset_log_tail']}")
    return report[name]


def test_superset_connects_with_a_hive_uri(report):
    assert step(report, "login")["url"].endswith("/superset/welcome/")
    database = step(report, "database")
    assert database["test_connection"] == [200, {"message": "OK"}]
    assert database["created"] == 201
    # The database list page: the connection's name and its backend.
    assert database["list_row"].split()[:2] == ["dyntable", "hive"]


def test_sql_lab_shows_the_rows_of_a_query(report):
    sqllab = step(report, "sqllab")
    assert sqllab["editor"] == QUERY
    assert sqllab["alerts"] == [], f"SQL Lab said {sqllab['alerts']} instead of showing rows"
    names = ["id", "region", "amount", "ordered_at"]
    assert [title for col_id, title in sqllab["headers"] if col_id in names] == names
    expected = [{"id": str(i), "region": region, "amount": f"{float(amount):g}",
                 "ordered_at": at.replace(" ", "T")} for i, region, amount, _, _, at in ROWS]
    assert [{k: row.get(k) for k in names} for row in sqllab["rows"]] == expected
    assert f"{len(ROWS)} rows" in sqllab["row_badges"]


def test_sql_lab_completes_function_names(report):
    autocomplete = step(report, "autocomplete")
    assert autocomplete["function_names_status"] == 200
    # From SHOW FUNCTIONS, whose one column Superset reads whatever its name (docs/server.md).
    assert {"date_trunc", "sum", "from_unixtime"} <= set(autocomplete["function_names"])


def test_dataset_lists_every_column_with_its_type(report):
    dataset = step(report, "dataset")
    assert dataset["editor_title"] == f"Edit Dataset {TABLE}"
    shown = {c["name"]: (c["type"], c["temporal"]) for c in dataset["editor_columns"]}
    assert set(shown) == {name for name, *_ in COLUMNS}
    for name, _, superset_type, temporal in COLUMNS:
        assert shown[name] == (superset_type, temporal), name
    icons = {c["name"]: c["icon"] for c in dataset["explore_columns"]}
    assert icons["ordered_at"] == icons["shipped_at"] == "temporal type icon"
    assert icons["region"] == "string type icon"
    assert icons["amount"] == icons["id"] == "numeric type icon"
    assert icons["paid"] == "boolean type icon"


def test_a_query_dataset_types_both_timestamp_kinds_temporal(report):
    """Issue 34: a dashboard's time column may be wall-clock (TIMESTAMP_NTZ) or an instant; over a
    query Superset types columns from the result set, where both are Hive's TIMESTAMP."""
    dataset = step(report, "query_dataset")
    shown = {c["name"]: (c["type"], c["temporal"]) for c in dataset["columns"]}
    # The types are PyHive's cursor.description codes (Hive's TTypeId names), as against any HiveServer2
    assert shown == {"id": ("BIGINT_TYPE", False), "ordered_at": ("TIMESTAMP_TYPE", True),
                     "shipped_at": ("TIMESTAMP_TYPE", True), "local_time": ("TIMESTAMP_TYPE", True)}
    icons = {c["name"]: c["icon"] for c in dataset["explore_columns"]}
    assert icons["ordered_at"] == icons["shipped_at"] == icons["local_time"] == "temporal type icon"


def test_time_series_chart_draws_the_rows_per_day(report):
    chart = step(report, "chart")
    assert chart["title"] == "Sales per day"
    assert chart["errors"] == []
    assert chart["canvases"] == 1 and chart["painted"] > 1000, "the chart's canvas is blank"
    per_day: dict[str, Decimal] = defaultdict(Decimal)
    for _, _, amount, _, _, at in ROWS:
        per_day[at[:10]] += amount
    # Superset sends the day's start (wall-clock, as the server answered it) as epoch milliseconds.
    expected = [{"ordered_at": datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000,
                 "SUM(amount)": float(total)} for day, total in sorted(per_day.items())]
    assert chart["row_badge"] == f"{len(expected)} rows"
    [request] = chart["data_requests"]
    assert request["status"] == 200
    [query] = request["queries"]
    assert (query["status"], query["error"]) == ("success", None)
    assert query["colnames"] == ["ordered_at", "SUM(amount)"]
    assert sorted(query["data"], key=lambda row: row["ordered_at"]) == expected
