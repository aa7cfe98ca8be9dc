"""Apache Superset in headless Chromium against a dyntable-server: the browser half of test_superset.py.

Runs under the Python of Superset's own virtual environment (``.ci/superset-venv.sh``), never
dyntable's: Superset pins SQLAlchemy 1.4 and its Flask stack. Given a ``hive://`` URI of a running
dyntable-server and a table on it, the driver

* writes a ``superset_config.py`` (a random ``SECRET_KEY``, SQLite metadata in the work directory),
  runs ``superset db upgrade``, ``superset fab create-admin`` and ``superset init``, and starts
  Superset's web server on a free loopback port;
* drives Debian's Chromium (``/usr/bin/chromium`` through ``/usr/bin/chromedriver``, headless, a
  fresh profile, no network services) as a user does: the login form, then pages. Setup steps a
  user would click through (the database connection, the dataset, the chart's definition) go
  through Superset's REST API with the logged-in browser session;
* records what each page shows, as JSON, for the test to assert on: the database list, SQL Lab's
  result grid after pressing Run, the dataset editor's column table, the columns of a dataset
  over a query (typed from its result set) with Explore's type icons, and a time-series chart
  (whether it drew, and the rows its data request returned); a screenshot of each page goes to
  the work directory.

A step that fails records its error and a screenshot, and the next step still runs, so one
report tells everything that works and everything that does not.

Usage: python driver.py SPEC.json REPORT.json  (the spec's keys are read in :func:`main`)
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# The machine (and CI) has no internet: Chromium must not try to reach Google's services.
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,1200",
)
ADMIN = ("admin", "admin-" + secrets.token_hex(8))
WAIT = 180  # seconds for any page to show what a step waits for (a loaded 2-core machine)

# Browser-side REST call with the session cookie and Superset's CSRF token.
API_JS = """
const [method, path, body, done] = arguments;
(async () => {
  const token = await (await fetch('/api/v1/security/csrf_token/', {credentials: 'same-origin'})).json();
  const response = await fetch(path, {method, credentials: 'same-origin',
      headers: {'Content-Type': 'application/json', 'X-CSRFToken': token.result},
      body: body === null ? undefined : JSON.stringify(body)});
  done({status: response.status, body: await response.text()});
})().catch(error => done({status: -1, body: String(error)}));
"""

# SQL Lab's result grid (AG Grid): header names and the rows in display order, cell text by column.
GRID_JS = """
const pane = document.querySelector('[data-test="south-pane"]') || document;
const headers = [...pane.querySelectorAll('.ag-header-cell[col-id]')]
    .map(h => [h.getAttribute('col-id'), h.innerText.trim()]);
const rows = [...pane.querySelectorAll('.ag-center-cols-container [role="row"]')]
    .sort((a, b) => Number(a.getAttribute('row-index')) - Number(b.getAttribute('row-index')))
    .map(r => Object.fromEntries([...r.querySelectorAll('[role="gridcell"][col-id]')]
        .map(c => [c.getAttribute('col-id'), c.innerText.trim()])));
const alerts = [...pane.querySelectorAll('.ant-alert')].map(a => a.innerText.trim());
return {headers, rows, alerts};
"""

# The dataset editor's Columns tab: one row per column (name, type tag, "Is temporal" box).
DATASET_COLUMNS_JS = """
return [...document.querySelectorAll('.ant-modal tr.ant-table-row')].map(tr => {
  const cells = tr.querySelectorAll('td');
  const box = cells[3] && cells[3].querySelector('input[type="checkbox"]');
  return {name: cells[1].innerText.trim(), type: cells[2].innerText.trim(),
          temporal: box ? box.checked : null};
});
"""

# Explore's column list: each column's name and the type icon's label ("time type icon", ...).
EXPLORE_COLUMNS_JS = """
return [...document.querySelectorAll('[data-test="DatasourcePanelDragOption"]')].map(o => {
  const icon = o.querySelector('[aria-label$="type icon"], [aria-label*="icon"]');
  return {name: o.innerText.trim(), icon: icon ? icon.getAttribute('aria-label') : null};
});
"""

# Whether the chart drew: its canvas (ECharts) and how many of its pixels are painted.
CHART_CANVAS_JS = """
const canvases = [...document.querySelectorAll('.chart-container canvas, .slice_container canvas')];
let painted = 0;
for (const c of canvases) {
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted++;
}
const errors = [...document.querySelectorAll('.chart-container [role="alert"], .chart-container .ant-alert')]
    .map(e => e.innerText.trim());
const badge = [...document.querySelectorAll('span, div')].map(e => e.innerText && e.innerText.trim())
    .find(t => /^\\d+ rows?$/.test(t || '')) || null;
return {canvases: canvases.length, painted, errors, row_badge: badge};
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Superset:
    """One Superset instance: its config, metadata database and web server, all in ``home``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.cli = str(Path(sys.executable).parent / "superset")
        self.log = home / "superset.log"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.process_log: Any = None
        config = home / "superset_config.py"
        config.write_text(
            f"SECRET_KEY = {secrets.token_urlsafe(42)!r}\n"
            f"SQLALCHEMY_DATABASE_URI = {'sqlite:///' + str(home / 'superset.db')!r}\n"
            "# A Spark query on a loaded machine may take longer than SQL Lab's 30 s default.\n"
            "SQLLAB_TIMEOUT = 300\n"
            "SUPERSET_WEBSERVER_TIMEOUT = 300\n"
        )
        self.env = dict(os.environ, SUPERSET_CONFIG_PATH=str(config), SUPERSET_HOME=str(home / "home"),
                        FLASK_APP="superset")

    def _run(self, *args: str) -> None:
        with self.log.open("ab") as log:
            proc = subprocess.run([self.cli, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=600, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"superset {args[0]} failed (exit {proc.returncode}): {self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def logged_errors(self) -> list[str]:
        """The ERROR lines of Superset's log (their first line; tracebacks follow them)."""
        if not self.log.exists():
            return []
        return [line for line in self.log.read_text(errors="replace").splitlines() if ":ERROR:" in line]

    def set_up(self, timings: dict[str, float]) -> None:
        for name, args in (
            ("db_upgrade", ("db", "upgrade")),
            ("create_admin", ("fab", "create-admin", "--username", ADMIN[0], "--password", ADMIN[1],
                              "--firstname", "Ada", "--lastname", "Admin", "--email", "admin@example.com")),
            ("init", ("init",)),
        ):
            start = time.monotonic()
            self._run(*args)
            timings[name] = round(time.monotonic() - start, 1)

    def start(self) -> str:
        self.port = free_port()
        self.process_log = self.log.open("ab")
        self.process = subprocess.Popen(
            [self.cli, "run", "-h", "127.0.0.1", "-p", str(self.port), "--with-threads"],
            env=self.env, stdout=self.process_log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"superset run exited ({self.process.returncode}): {self.log_tail()}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as answer:
                    if answer.read().strip() == b"OK":
                        return url
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"superset did not answer /health in {WAIT} s: {self.log_tail()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process_log is not None:
            self.process_log.close()


def start_browser(profile: str) -> WebDriver:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    # The performance log carries the network events: the chart's data request and its answer.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    # Leaving a page, Superset's front end posts its usage events to /superset/log/. Sent from the
    # login page as the form submits, that anonymous request answers a redirect that sets a fresh
    # (logged-out) session cookie, and when its answer lands after the login's, the browser keeps
    # it: the next page is the login form again (seen once in four runs). The events only feed
    # Superset's own action log, so the browser does not send them.
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/superset/log/*"]})
    driver.set_script_timeout(WAIT)
    driver.set_page_load_timeout(WAIT)
    return driver


class Check:
    """The browser session and the report it fills, one step at a time."""

    def __init__(self, driver: WebDriver, base: str, spec: dict[str, Any], shots: Path) -> None:
        self.d = driver
        self.base = base
        self.spec = spec
        self.shots = shots
        # React re-renders replace elements under a found reference: waits look them up again.
        self.wait = WebDriverWait(driver, WAIT, ignored_exceptions=(StaleElementReferenceException,))
        self.report: dict[str, Any] = {"errors": {}, "timings": {}, "screenshots": {}}

    def step(self, name: str, body: Any) -> None:
        start = time.monotonic()
        try:
            self.report[name] = body()
        except Exception:  # noqa: BLE001 -- the report carries the failure; the next step still runs
            self.report["errors"][name] = traceback.format_exc(limit=6)
        finally:
            self.report["timings"][name] = round(time.monotonic() - start, 1)
            path = self.shots / f"{len(self.report['screenshots']) + 1:02d}-{name}.png"
            self.d.save_screenshot(str(path))
            self.report["screenshots"][name] = str(path)

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        answer = self.d.execute_async_script(API_JS, method, path, body)
        try:
            return answer["status"], json.loads(answer["body"])
        except ValueError:
            return answer["status"], answer["body"]

    def open(self, path: str) -> None:
        self.d.get(self.base + path)

    def text(self, css: str) -> str:
        return self.d.find_element(By.CSS_SELECTOR, css).text

    # -- steps -----------------------------------------------------------------------------------

    def login(self) -> dict[str, Any]:
        self.open("/login/")
        user = self.wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, "[data-test=username-input]")))
        user.send_keys(ADMIN[0])
        self.d.find_element(By.CSS_SELECTOR, "[data-test=password-input]").send_keys(ADMIN[1])
        self.d.find_element(By.CSS_SELECTOR, "[data-test=login-button]").click()
        self.wait.until(lambda d: "/login" not in d.current_url)
        menu = self.wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "[data-test=navbar-top]")))
        return {"url": self.d.current_url, "menu": menu.text}

    def database(self) -> dict[str, Any]:
        uri = self.spec["hive_uri"]
        tested, test_answer = self.api("POST", "/api/v1/database/test_connection/", {"sqlalchemy_uri": uri})
        created, answer = self.api("POST", "/api/v1/database/", {
            "database_name": self.spec["database_name"], "sqlalchemy_uri": uri, "expose_in_sqllab": True})
        if created != 201:
            raise RuntimeError(f"creating the database answered {created}: {answer}")
        self.report["database_id"] = answer["id"]
        # What Superset's database list shows for it.
        self.open("/databaseview/list/")
        row = self.wait.until(ec.presence_of_element_located(
            (By.XPATH, f"//tr[.//*[normalize-space(text())='{self.spec['database_name']}']]")))
        return {"test_connection": [tested, test_answer], "created": created, "id": answer["id"],
                "backend": answer["result"].get("backend") or answer["result"].get("driver"),
                "list_row": row.text}

    def sqllab(self) -> dict[str, Any]:
        query = {"dbid": self.report["database_id"], "schema": self.spec["schema"],
                 "sql": self.spec["query"], "new": "true"}
        self.open("/sqllab/?" + urlencode(query))
        self.wait.until(lambda d: self.spec["query"] in self.text(".ace_content"))
        run = self.wait.until(ec.element_to_be_clickable(
            (By.XPATH, "//button[normalize-space(.)='Run']")))
        start = time.monotonic()
        run.click()
        # Done when the result grid has rows, or the results pane says something other than the
        # progress message ("Running block 1 out of 1"): "The query returned no data", an error.
        self.wait.until(lambda d: self._sqllab_settled(d.execute_script(GRID_JS)))
        elapsed = round(time.monotonic() - start, 1)
        grid = self.d.execute_script(GRID_JS)
        badges = [e.text for e in self.d.find_elements(By.XPATH, "//*[contains(text(), ' rows')]")]
        return {**grid, "row_badges": badges, "run_seconds": elapsed, "editor": self.text(".ace_content")}

    @staticmethod
    def _sqllab_settled(grid: dict[str, Any]) -> bool:
        return bool(grid["rows"]) or any(not text.startswith("Running") for text in grid["alerts"])

    def autocomplete(self) -> dict[str, Any]:
        """The function names SQL Lab's editor completes (what the page loads from Superset)."""
        status, names = self.api("GET", f"/api/v1/database/{self.report['database_id']}/function_names/")
        return {"function_names_status": status,
                "function_names": names.get("function_names") if isinstance(names, dict) else names}

    def dataset(self) -> dict[str, Any]:
        created, answer = self.api("POST", "/api/v1/dataset/", {
            "database": self.report["database_id"], "schema": self.spec["schema"],
            "table_name": self.spec["table"]})
        if created != 201:
            raise RuntimeError(f"creating the dataset answered {created}: {answer}")
        self.report["dataset_id"] = answer["id"]
        self.open(f"/explore/?datasource_type=table&datasource_id={answer['id']}")
        self.wait.until(ec.presence_of_element_located(
            (By.CSS_SELECTOR, "[data-test=DatasourcePanelDragOption]")))
        explore_columns = self.d.execute_script(EXPLORE_COLUMNS_JS)
        # The dataset editor: Explore's dataset menu, "Edit dataset", the Columns tab.
        self.wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, "[data-test=datasource-menu-trigger]"))).click()
        self.wait.until(ec.element_to_be_clickable(
            (By.XPATH, "//*[@role='menuitem'][normalize-space(.)='Edit dataset']"))).click()
        self.wait.until(ec.element_to_be_clickable((By.XPATH, "//div[contains(@class,'ant-modal')]"
                                                    "//*[@role='tab'][starts-with(normalize-space(.),'Columns')]"))
                        ).click()
        self.wait.until(lambda d: len(d.execute_script(DATASET_COLUMNS_JS)) > 0)
        editor_columns = self.d.execute_script(DATASET_COLUMNS_JS)
        # The table scrolls inside the modal: bring its last rows into the screenshot.
        rows = self.d.find_elements(By.CSS_SELECTOR, ".ant-modal tr.ant-table-row")
        self.d.execute_script("arguments[0].scrollIntoView({block: 'end'})", rows[-1])
        title = self.d.find_element(By.CSS_SELECTOR, ".ant-modal-title").text
        return {"id": answer["id"], "explore_columns": explore_columns, "editor_columns": editor_columns,
                "editor_title": title}

    def query_dataset(self) -> dict[str, Any]:
        """A dataset over a query (SQL Lab's "Save dataset"): Superset types its columns from the
        result set of the query (``cursor.description``), not from DESCRIBE."""
        created, answer = self.api("POST", "/api/v1/dataset/", {
            "database": self.report["database_id"], "schema": self.spec["schema"],
            "table_name": self.spec["query_dataset"], "sql": self.spec["query_dataset_sql"]})
        if created != 201:
            raise RuntimeError(f"creating the query dataset answered {created}: {answer}")
        status, got = self.api("GET", f"/api/v1/dataset/{answer['id']}")
        if status != 200:
            raise RuntimeError(f"reading the query dataset answered {status}: {got}")
        columns = [{"name": c["column_name"], "type": c["type"], "temporal": c["is_dttm"]}
                   for c in got["result"]["columns"]]
        self.open(f"/explore/?datasource_type=table&datasource_id={answer['id']}")
        self.wait.until(ec.presence_of_element_located(
            (By.CSS_SELECTOR, "[data-test=DatasourcePanelDragOption]")))
        return {"id": answer["id"], "columns": columns,
                "explore_columns": self.d.execute_script(EXPLORE_COLUMNS_JS)}

    def chart(self) -> dict[str, Any]:
        time_column, metric_column = self.spec["time_column"], self.spec["metric_column"]
        label = f"SUM({metric_column})"
        params = {
            "datasource": f"{self.report['dataset_id']}__table", "viz_type": "echarts_timeseries_line",
            "x_axis": time_column, "time_grain_sqla": "P1D", "groupby": [], "row_limit": 1000,
            "metrics": [{"expressionType": "SIMPLE", "column": {"column_name": metric_column},
                         "aggregate": "SUM", "label": label}],
            # The x-axis on the filter list (no range), as Explore itself adds it.
            "adhoc_filters": [{"clause": "WHERE", "subject": time_column, "operator": "TEMPORAL_RANGE",
                               "comparator": "No filter", "expressionType": "SIMPLE"}],
            "x_axis_sort_asc": True, "markerEnabled": True,
        }
        created, answer = self.api("POST", "/api/v1/chart/", {
            "slice_name": self.spec["chart_name"], "viz_type": "echarts_timeseries_line",
            "datasource_id": self.report["dataset_id"], "datasource_type": "table",
            "params": json.dumps(params)})
        if created != 201:
            raise RuntimeError(f"creating the chart answered {created}: {answer}")
        self.d.get_log("performance")  # drop the events so far
        self.open(f"/explore/?slice_id={answer['id']}")
        self.wait.until(lambda d: (d.execute_script(CHART_CANVAS_JS)["painted"] > 0
                                   or d.execute_script(CHART_CANVAS_JS)["errors"]))
        time.sleep(1)  # ECharts animates its first draw; let it finish before the screenshot
        drawn = self.d.execute_script(CHART_CANVAS_JS)
        return {"id": answer["id"], **drawn, "title": self.d.title, "data_requests": self.chart_data()}

    def chart_data(self) -> list[dict[str, Any]]:
        """The chart's ``/api/v1/chart/data`` answers, read from the browser's network events."""
        answers = []
        for entry in self.d.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] != "Network.responseReceived":
                continue
            response = message["params"]["response"]
            if "/api/v1/chart/data" not in response["url"]:
                continue
            body = self.d.execute_cdp_cmd("Network.getResponseBody",
                                          {"requestId": message["params"]["requestId"]})["body"]
            result = json.loads(body).get("result", [{}])
            keys = ("status", "error", "colnames", "data", "rowcount", "query")
            answers.append({"status": response["status"],
                            "queries": [{k: q.get(k) for k in keys} for q in result]})
        return answers


def main(argv: list[str]) -> int:
    """Run every step; the spec (JSON) names ``hive_uri``, ``database_name``, ``schema``, ``table``,
    ``query`` (for SQL Lab), ``query_dataset`` and ``query_dataset_sql`` (a dataset over a query),
    ``time_column``, ``metric_column``, ``chart_name`` and ``workdir``."""
    spec = json.loads(Path(argv[0]).read_text())
    work = Path(spec["workdir"])
    shots = work / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"timings": {}}
    superset = Superset(work)
    try:
        start = time.monotonic()
        superset.set_up(report["timings"])
        report["base_url"] = superset.start()
        report["timings"]["superset_ready"] = round(time.monotonic() - start, 1)
        driver = start_browser(tempfile.mkdtemp(prefix="chromium-profile-", dir=work))
        try:
            check = Check(driver, report["base_url"], spec, shots)
            for name in ("login", "database", "sqllab", "autocomplete", "dataset", "query_dataset", "chart"):
                check.step(name, getattr(check, name))
            report.update(check.report, timings={**report["timings"], **check.report["timings"]})
            report["browser"] = driver.capabilities.get("browserVersion")
        finally:
            driver.quit()
    except Exception:  # noqa: BLE001 -- reported: the test shows it with the server log
        report["fatal"] = traceback.format_exc(limit=8)
    finally:
        superset.stop()
        report["superset_log_tail"] = superset.log_tail()
        report["superset_errors"] = superset.logged_errors()
        Path(argv[1]).write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
