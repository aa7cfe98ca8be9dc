"""dyntable-sql as a real process: four launches (each starts a JVM), run side by side.

A: ``-i`` init script (silent), ``-f`` script whose third statement fails, ``--database``,
   ``--conf`` (a session default and a Spark setting), ``--output csv``: exit code 1,
   ``Error [SQLSTATE]`` with the caret on stderr, earlier results on stdout, later statements
   never run;
B: ``-e`` with two queries, ``--output json`` (no writes: a light launch);
C: the ``dyntable-sql`` entry point (or ``python -m sqlext.cli`` where it is not installed),
   aligned-table output with values whole (a multi-line ``SHOW CREATE TABLE``, a long comment)
   and a parse error in ``-e``;
D: a NULL primary key: one clear error, no Spark log noise; no launch leaves ``./spark-warehouse``.
Outcomes on storage are checked with the engine (no JVM in this process).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine import open_catalog

ROOT = Path(__file__).resolve().parents[2]
LONG_COMMENT = "a comment longer than the forty-eight characters the table output used to keep"
TIMEOUT = 240  # seconds per launch; three JVMs share the cores while they start


def _command() -> list[str]:
    return [sys.executable, "-m", "sqlext.cli"]


def _launch(args: list[str], cwd: Path, entry_point: bool = False) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    exe = shutil.which("dyntable-sql") if entry_point else None
    cmd = [exe] if exe else _command()
    return subprocess.Popen(
        cmd + ["--master", "local[1]", *args],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"dyntable-sql did not finish in {TIMEOUT} s\nstdout:\n{out}\nstderr:\n{err}")
    return proc.returncode, out, err


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    """Start the three processes at once and collect (exit code, stdout, stderr, warehouse) of each."""
    base = tmp_path_factory.mktemp("cli")
    (base / "init.sql").write_text(
        "-- runs first, silently\n"
        "CREATE TABLE t (id INT PRIMARY KEY NOT ENFORCED, v STRING);\n"
        "INSERT INTO t VALUES (1, 'a'), (2, 'b');\n"
    )
    (base / "script.sql").write_text(
        "INSERT INTO t VALUES (3, 'c,d');\n"
        "SELECT * FROM t ORDER BY id;\n"
        "SELECT id,\n       nope FROM t;\n"
        "CREATE TABLE never_created (id INT);\n"
    )
    procs = {
        "A": _launch(
            [
                "--warehouse",
                str(base / "wa"),
                "--database",
                "sales",
                "-i",
                "init.sql",
                "--conf",
                "table-storage.bucket=2",
                "--conf",
                "spark.sql.shuffle.partitions=1",
                "--output",
                "csv",
                "-f",
                "script.sql",
            ],
            base,
        ),
        "B": _launch(
            [
                "--warehouse",
                str(base / "wb"),
                "--output",
                "json",
                "-e",
                "SELECT 1 AS id, CAST(NULL AS STRING) AS v UNION ALL SELECT 2, 'x'; "
                "SELECT current_database() AS db",
            ],
            base,
        ),
        "C": _launch(
            [
                "--warehouse",
                str(base / "wc"),
                "-e",
                f"CREATE TABLE w (id BIGINT, note STRING COMMENT '{LONG_COMMENT}'); SHOW CREATE TABLE w; "
                "SELECT 1 AS n, 'long text' AS s UNION ALL SELECT 22, 'x'; CREATE TABLE (id INT)",
            ],
            base,
            entry_point=True,
        ),
        # D (issue 8): a NULL primary key fails as one clear error, without Spark's stack traces.
        "D": _launch(
            [
                "--warehouse",
                str(base / "wd"),
                "--database",
                "ops",
                "-e",
                # DROP ... nope consults Spark's catalog, which creates its warehouse directory.
                "CREATE TABLE k (id INT NOT NULL, v STRING, PRIMARY KEY (id) NOT ENFORCED); "
                "DROP TABLE IF EXISTS nope; INSERT INTO k VALUES (NULL, 'a')",
            ],
            base,
        ),
    }
    return {name: (*_finish(p), base / f"w{name.lower()}") for name, p in procs.items()}


def test_init_script_file_failure_database_conf_and_csv(launches):
    code, out, err, warehouse = launches["A"]
    assert code == 1, err
    # only the script's results are printed (the init script is silent); csv quotes a comma
    assert out == 'id,v\n1,a\n2,b\n3,"c,d"\n', out
    assert "1 row(s) inserted into sales.t" in err and "3 rows" in err, err
    # the failing statement: SQLSTATE, file, line, the source line and a caret; no traceback
    assert "Error [42703]" in err and "nope" in err, err
    assert "script.sql" in err and "line 4, column 8" in err, err  # Spark's position, in the file
    assert "Traceback" not in err and "SQLQueryContextLogger" not in err, err
    lines = err.splitlines()
    caret = next(i for i, line in enumerate(lines) if line.strip() == "^")
    assert lines[caret - 1].index("nope FROM t") == lines[caret].index("^"), err
    catalog = open_catalog(str(warehouse))
    t = catalog.get_table("sales.t")  # --database sales: created, and the current database
    assert t.primary_keys == ("id",) and t.options["bucket"] == "2"  # --conf table-storage.bucket=2
    assert len(t.snapshots()) >= 2
    assert not catalog.table_exists("sales.never_created")  # after the failure: never run


def test_execute_json_output(launches):
    code, out, err, warehouse = launches["B"]
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": 1, "v": None},
        {"id": 2, "v": "x"},
        {"db": "default"},
    ]
    assert os.path.isdir(warehouse / "default.db")


def test_entry_point_aligned_table_and_parse_error(launches):
    code, out, err, _warehouse = launches["C"]
    assert code == 1, err
    lines = out.splitlines()
    create, select = lines[:-6], lines[-6:]
    # SHOW CREATE TABLE: one line of output per line of the statement, the comment whole, aligned
    assert create[1].startswith("| createtab_stmt"), out
    assert any(LONG_COMMENT in line for line in create), out
    assert sum(line.endswith("+|") for line in create) >= 2, out
    assert len({len(line) for line in create}) == 1, out
    assert select == [
        "+----+-----------+",
        "| n  | s         |",
        "+----+-----------+",
        "|  1 | long text |",
        "| 22 | x         |",
        "+----+-----------+",
    ], out
    assert "Error [42601]" in err and "^" in err, err


def test_null_primary_key_is_one_clear_error_without_spark_logs(launches):
    code, _out, err, _warehouse = launches["D"]
    assert code == 1, err
    assert "Table ops.k created" in err, err
    assert "Error [22023] column 'id' is NOT NULL but 1 row(s) are NULL" in err, err
    for noise in ("ERROR Executor", "ERROR TaskSetManager", "Traceback", "\tat org.apache"):
        assert noise not in err, err
    assert len(err.splitlines()) < 30, err


def test_no_spark_warehouse_in_the_working_directory(launches):
    """Spark's default ``./spark-warehouse`` appeared wherever dyntable-sql ran (issue 8)."""
    base = launches["A"][3].parent
    assert not (base / "spark-warehouse").exists()
