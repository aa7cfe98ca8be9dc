"""dbt against dyntable-server, as an analytics engineer runs it: dbt-core 1.11 with dbt-spark 1.11
and this repository's adapter (integrations/dbt-dyntable), in a venv of their own
(.ci/dbt-venv.sh; ``$DYNTABLE_DBT`` names its ``dbt``).

The project in ``dbt_project/`` (seeds, a view and a table model, incremental append,
insert_overwrite and merge models, a check snapshot, unique / not_null / relationships tests) goes
through ``debug, seed, run, run, test, show, snapshot, snapshot, docs generate``; after each step
the test reads the tables over PyHive and checks their rows, and at the end that dbt's catalog has
every model's columns. dbt-spark runs every statement asynchronously, so this also covers the
server's async result sets and SHOW TABLE EXTENDED (how dbt finds what exists).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

pytestmark = pytest.mark.dbt

REPO_ROOT = Path(__file__).resolve().parents[3]
PROJECT = Path(__file__).resolve().with_name("dbt_project")
ENV_DBT = "DYNTABLE_DBT"
REPO_VENV = REPO_ROOT / ".venv-dbt"
VENV_SCRIPT = REPO_ROOT / ".ci" / "dbt-venv.sh"
SCHEMA = "shop"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def locate_dbt() -> tuple[str | None, str]:
    """``(dbt executable, how it was found)`` or ``(None, why there is none)``.

    Order: ``$DYNTABLE_DBT``; the repository's ``.venv-dbt``; under CI, that venv created by
    ``.ci/dbt-venv.sh``.
    """
    configured = os.environ.get(ENV_DBT)
    if configured:
        if _executable(Path(configured)):
            return configured, f"${ENV_DBT}"
        return None, f"${ENV_DBT}={configured!r} is not an executable file"
    repo_dbt = REPO_VENV / "bin" / "dbt"
    if _executable(repo_dbt):
        return str(repo_dbt), "repo venv"
    if os.environ.get("CI", "").lower() == "true":
        proc = subprocess.run(["bash", str(VENV_SCRIPT), str(REPO_VENV)], capture_output=True, text=True,
                              timeout=1200, check=False)
        if proc.returncode == 0 and _executable(repo_dbt):
            return str(repo_dbt), "repo venv created by .ci/dbt-venv.sh"
        return None, f".ci/dbt-venv.sh failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}"
    return None, (f"no dbt venv: set ${ENV_DBT} to the dbt of a venv with dbt-core 1.11, dbt-spark[PyHive]"
                  f" 1.11 and integrations/dbt-dyntable, or run `bash .ci/dbt-venv.sh` to create {REPO_VENV}")


@pytest.fixture(scope="module")
def dbt_executable() -> str:
    found, how = locate_dbt()
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"dbt unavailable: {how}", pytrace=False)  # under CI an oracle never skips
        pytest.skip(f"dbt unavailable: {how}")
    return found


class Dbt:
    """Runs dbt commands on a copy of the project, with a profile pointing at the test's server."""

    def __init__(self, executable: str, project: Path, profiles: Path) -> None:
        self.executable = executable
        self.project = project
        self.profiles = profiles

    def __call__(self, *args: str, quiet: bool = False, fails: bool = False) -> str:
        command = [self.executable, *(["--quiet"] if quiet else []), *args,
                   "--project-dir", str(self.project), "--profiles-dir", str(self.profiles)]
        # dbt's venv is self-contained: nothing of this process's import path leaks into it
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(DBT_SEND_ANONYMOUS_USAGE_STATS="false", DO_NOT_TRACK="1", DBT_VERSION_CHECK="false")
        proc = subprocess.run(command, cwd=self.project, env=env, capture_output=True, text=True,
                              timeout=600, check=False)
        output = f"{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
        if fails:
            assert proc.returncode != 0, f"dbt {' '.join(args)} should have failed:\n{output}"
        else:
            assert proc.returncode == 0, f"dbt {' '.join(args)} failed:\n{output}"
        return proc.stdout

    def target(self, name: str) -> dict:
        return json.loads((self.project / "target" / name).read_text())


@pytest.fixture
def dbt(dbt_executable, none_server, tmp_path) -> Dbt:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "profiles.yml").write_text(
        "dyntable_test:\n"
        "  target: dev\n"
        "  outputs:\n"
        "    dev:\n"
        "      type: dyntable\n"
        "      host: 127.0.0.1\n"
        f"      port: {none_server.port}\n"
        "      user: dbt\n"
        f"      schema: {SCHEMA}\n"
        "      threads: 2\n"
    )
    return Dbt(dbt_executable, project, profiles)


@pytest.fixture
def query(none_server):
    from pyhive import hive

    conn = hive.connect("127.0.0.1", port=none_server.port, username="checker")
    cursor = conn.cursor()

    def run(sql: str) -> list[tuple]:
        cursor.execute(sql)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []

    yield run
    conn.close()


def rows(query, table: str, columns: str = "*", order: str = "1") -> list[tuple]:
    return query(f"SELECT {columns} FROM {SCHEMA}.{table} ORDER BY {order}")


D = Decimal
ORDERS = [(1, 1, D("10.50")), (2, 1, D("20.00")), (3, 2, D("5.25")), (4, 3, D("7.75")), (5, 2, D("12.00"))]
TOTALS = [(1, "Ada", 2, D("30.50")), (2, "Grace", 2, D("17.25")), (3, "Linus", 1, D("7.75"))]


def test_dbt_project_end_to_end(dbt, query):
    assert "All checks passed!" in dbt("debug")

    # seed: the CSVs become dyntable tables (dbt-dyntable's default format)
    dbt("seed")
    assert rows(query, "customers") == [(1, "Ada", "UK"), (2, "Grace", "US"), (3, "Linus", "FI")]
    # (PyHive hands DATE values over as ISO text)
    assert rows(query, "orders", "id, customer_id, amount, order_date")[0] == (1, 1, D("10.50"), "2024-01-01")
    assert rows(query, "orders", "id, customer_id, amount") == ORDERS

    # run 1: every model built from scratch
    dbt("run")
    assert rows(query, "stg_customers") == [(1, "Ada", "UK"), (2, "Grace", "US"), (3, "Linus", "FI")]
    assert rows(query, "customer_totals") == TOTALS
    assert rows(query, "orders_append") == ORDERS
    assert rows(query, "orders_merge", order="id") == [(*o, "first") for o in ORDERS]
    assert rows(query, "orders_merge_pk", order="id") == ORDERS
    listing = {r[1]: r[3] for r in query(f"SHOW TABLE EXTENDED IN {SCHEMA} LIKE '*'")}
    assert "Type: VIEW" in listing["stg_customers"] and "Provider: dyntable" in listing["customer_totals"]

    # run 2: dbt sees the models exist (SHOW TABLE EXTENDED), so the incremental ones take their
    # incremental path instead of failing on "already exists"
    dbt("run")
    assert rows(query, "customer_totals") == TOTALS
    assert rows(query, "orders_append", order="id, amount") == sorted(ORDERS + ORDERS[3:])
    assert rows(query, "orders_by_day", "id, amount, order_date", order="id") == [
        (1, D("10.50"), "2024-01-01"), (2, D("20.00"), "2024-01-01"),
        (3, D("5.25"), "2024-01-02"), (4, D("7.75"), "2024-01-02"),
        (5, D("120.00"), "2024-01-03"),  # only the latest day was overwritten
    ]
    merged = [(*o, "first") for o in ORDERS[:3]] + [
        (4, 3, D("107.75"), "second"), (5, 2, D("112.00"), "second"), (6, 1, D("1.00"), "second")]
    assert rows(query, "orders_merge", order="id") == merged
    assert rows(query, "orders_merge_pk", order="id") == [m[:3] for m in merged]
    assert query(f"SHOW TBLPROPERTIES {SCHEMA}.orders_merge_pk ('primary-key')") == [("primary-key", "id")]

    # test: unique / not_null / relationships pass; the unique test on the append model warns
    # with its 2 duplicated ids (the tests read the rows of their queries)
    dbt("test")
    results = {r["unique_id"].split(".")[2]: r for r in dbt.target("run_results.json")["results"]}
    assert results["unique_orders_append_id"]["status"] == "warn"
    assert results["unique_orders_append_id"]["failures"] == 2
    assert {k: r["status"] for k, r in results.items() if k != "unique_orders_append_id"} == {
        "not_null_customer_totals_customer_id": "pass",
        "unique_customer_totals_customer_id": "pass",
        "not_null_orders_customer_id": "pass",
        "relationships_orders_customer_id__id__ref_customers_": "pass",
        "not_null_stg_customers_customer_id": "pass",
        "unique_stg_customers_customer_id": "pass",
        "not_null_orders_merge_id": "pass",
        "unique_orders_merge_id": "pass",
        "unique_orders_merge_pk_id": "pass",
    }

    # show: the rows of a model, as dbt prints them
    shown = json.loads(dbt("show", "--select", "customer_totals", "--output", "json", quiet=True))
    got = sorted((r["customer_id"], r["name"], r["order_count"], r["total_amount"]) for r in shown["show"])
    assert got == [(c, n, k, float(a)) for c, n, k, a in TOTALS]

    # snapshot 1, a change in the source, snapshot 2: the changed row is closed and a new one opened
    dbt("snapshot")
    first = rows(query, "customers_snapshot", "id, name, country, dbt_valid_to")
    assert first == [(1, "Ada", "UK", None), (2, "Grace", "US", None), (3, "Linus", "FI", None)]
    query(f"UPDATE {SCHEMA}.customers SET country = 'DE' WHERE id = 3")
    dbt("snapshot")
    second = rows(query, "customers_snapshot", "id, country, dbt_valid_from, dbt_valid_to",
                  order="id, dbt_valid_from")
    assert [(r[0], r[1], r[3] is None) for r in second] == [
        (1, "UK", True), (2, "US", True), (3, "FI", False), (3, "DE", True)]
    assert second[2][3] == second[3][2]  # the old version ends when the new one starts

    # docs generate: a catalog with every model's, seed's and snapshot's columns
    dbt("docs", "generate")
    catalog = dbt.target("catalog.json")["nodes"]
    manifest = dbt.target("manifest.json")["nodes"]
    built = {k for k, n in manifest.items() if n["resource_type"] in ("model", "seed", "snapshot")}
    assert set(catalog) == built
    for key in built:
        expected = [c.lower() for c in (manifest[key]["columns"] or {})]
        got = list(catalog[key]["columns"])
        assert got and all(c in got for c in expected), (key, got)
    assert {k: [(c["name"], c["type"]) for c in v["columns"].values()] for k, v in catalog.items()
            if k in ("model.shop.customer_totals", "model.shop.stg_customers")} == {
        "model.shop.customer_totals": [("customer_id", "long"), ("name", "string"), ("order_count", "long"),
                                       ("total_amount", "decimal(20,2)")],
        "model.shop.stg_customers": [("customer_id", "long"), ("name", "string"), ("country", "string")],
    }
    assert catalog["model.shop.stg_customers"]["metadata"]["type"] == "view"
    assert list(catalog["snapshot.shop.customers_snapshot"]["columns"]) == [
        "id", "name", "country", "dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to"]

    # merge stays refused where MERGE INTO cannot work: a model in one of Spark's own formats
    out = dbt("run", "--select", "merge_into_parquet", "--vars", "{refusals: true}", fails=True)
    assert "merge needs a table MERGE INTO can change" in out and "this model has 'parquet'" in out
    assert query(f"SHOW TABLES IN {SCHEMA} LIKE 'merge_into_parquet'") == []
