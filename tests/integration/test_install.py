"""The README's installs, as a user makes them: the built wheel and ``pip install -e .`` (issue 22.8, 22.11).

One wheel is built with ``python -m build --wheel`` from a copy of the project (the working tree
stays clean) and installed into a fresh venv; the project copy is also installed editable into a
second one. Both venvs see this test environment's site-packages through a ``.pth`` line (pyspark,
pyarrow, ... are not downloaded again), but no ``.pth`` file of it runs, so neither sees this
checkout's own editable install: ``engine`` must come from the wheel or the copy, which each test
checks. Processes run without ``PYTHONPATH``.

* the wheel's ``dyntable-sql`` runs the quickstart on local Spark and a local warehouse;
* a plain ``SparkSession`` (no SqlSession, no registration call) reads and writes
  ``format("dyntable")``, after the wheel install and after the editable install;
* the wheel on ``PYTHONPATH`` alone (``--py-files``) exposes ``pyspark_dyntable`` to the module
  listing Spark uses to find data sources.

The three JVM launches run side by side.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).resolve().parent / "install" / "plain_session.py"
TIMEOUT = 600  # seconds per step: building in an isolated environment, or a JVM among others
# What the wheel is built from: the package sources and what pyproject.toml names.
PROJECT_FILES = ("pyproject.toml", "README.md", "engine", "sqlext", "pyspark_dyntable", "sql-examples")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc.stdout


def _venv(path: Path) -> Path:
    """A fresh venv that sees this environment's installed libraries (not its .pth hooks)."""
    _run([sys.executable, "-m", "venv", str(path)], path.parent)
    python = path / "bin" / "python"
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], path.parent
    )
    Path(purelib.strip(), "zz-test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _copy_project(dest: Path) -> Path:
    dest.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    for name in PROJECT_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)
    return dest


def _launch(python: Path, args: list[str], cwd: Path, name: str) -> tuple[subprocess.Popen[bytes], Path]:
    """Start a process whose output goes to files (three of them run at once: no pipe fills up)."""
    env = _env()
    env["PYSPARK_PYTHON"] = str(python)  # Spark's Python workers run the same install
    out = cwd / f"{name}.out"
    with open(out, "wb") as stdout, open(cwd / f"{name}.err", "wb") as stderr:
        proc = subprocess.Popen([str(python), *args], cwd=cwd, env=env, stdout=stdout, stderr=stderr)
    return proc, out


def _finish(launched: tuple[subprocess.Popen[bytes], Path]) -> tuple[int, str, str]:
    proc, out = launched
    try:
        proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    stdout = out.read_text(errors="replace")
    stderr = out.with_suffix(".err").read_text(errors="replace")
    if proc.returncode is None or proc.returncode < 0:
        pytest.fail(f"did not finish in {TIMEOUT} s\nstdout:\n{stdout[-3000:]}\nstderr:\n{stderr[-3000:]}")
    return proc.returncode, stdout, stderr


@pytest.fixture(scope="module")
def installs(tmp_path_factory):
    """The wheel, a venv with it installed, and a venv with the project copy installed editable."""
    base = tmp_path_factory.mktemp("install")
    project = _copy_project(base / "project")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(base / "dist")], project)
    (wheel,) = (base / "dist").glob("dyntable-*.whl")
    wheel_python = _venv(base / "wheel-venv")
    _run([str(wheel_python), "-m", "pip", "install", "--no-deps", "--quiet", str(wheel)], base)
    editable_python = _venv(base / "editable-venv")
    _run([str(editable_python), "-m", "pip", "install", "--no-deps", "--quiet", "-e", str(project)], base)
    return {
        "base": base,
        "project": project,
        "wheel": wheel,
        "wheel_python": wheel_python,
        "editable_python": editable_python,
    }


@pytest.fixture(scope="module")
def launches(installs):
    """The quickstart from the wheel, and the plain-session probe in both installs, side by side."""
    work = installs["base"] / "work"
    work.mkdir()
    wheel_python, editable_python = installs["wheel_python"], installs["editable_python"]
    dyntable_sql = wheel_python.parent / "dyntable-sql"
    quickstart = installs["project"] / "sql-examples" / "01_quickstart.sql"
    procs = {
        "quickstart": _launch(
            wheel_python,
            [
                str(dyntable_sql),
                "--master",
                "local[1]",
                "--warehouse",
                str(work / "wq"),
                "-f",
                str(quickstart),
            ],
            work,
            "quickstart",
        ),
        "wheel": _launch(wheel_python, [str(PROBE), str(work / "ww")], work, "wheel"),
        "editable": _launch(editable_python, [str(PROBE), str(work / "we")], work, "editable"),
    }
    return {name: _finish(p) for name, p in procs.items()}


def _site_packages(python: Path) -> str:
    return _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], python.parent
    )


def test_the_wheel_holds_the_packages_and_their_data(installs):
    names = zipfile.ZipFile(installs["wheel"]).namelist()
    assert "pyspark_dyntable/__init__.py" in names
    assert "sqlext/parse/grammar/dyntable.lark" in names
    assert "engine/py.typed" in names and "sqlext/py.typed" in names
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(installs["wheel"]).read(entry_points).decode()
    assert "dyntable-sql = sqlext.cli.main:main" in text and "dyntable-server" in text


def test_the_wheel_runs_the_quickstart(installs, launches):
    code, out, err = launches["quickstart"]
    assert code == 0, err[-5000:]
    assert "Error" not in err, err[-5000:]
    assert "+-" in out and "rows" in err  # the queries' tables, and their row counts
    warehouse = installs["base"] / "work" / "wq"
    assert any(warehouse.rglob("snapshot-1")), "the quickstart committed nothing"


@pytest.mark.parametrize("install", ["wheel", "editable"])
def test_a_plain_spark_session_finds_the_format(installs, launches, install):
    code, out, err = launches[install]
    assert code == 0, err[-5000:]
    assert "DATA_SOURCE_NOT_FOUND" not in err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["rows"] == [[1, "a"], [2, "b"]] and result["after"] == 3
    # the code that ran is the install's own, not this checkout's
    where = (
        _site_packages(installs["wheel_python"]).strip() if install == "wheel" else str(installs["project"])
    )
    assert result["engine"].startswith(where), result["engine"]


def test_the_wheel_on_pythonpath_is_listed_as_a_data_source(installs):
    """``spark-submit --py-files dyntable.whl``: Spark lists ``pyspark_*`` modules with pkgutil."""
    probe = (
        "import json, pkgutil, sys; "
        "mods = [m.name for m in pkgutil.iter_modules() if m.name.startswith('pyspark_')]; "
        "import pyspark_dyntable, engine; "
        "print(json.dumps({'mods': mods, 'source': pyspark_dyntable.DefaultSource.name(), "
        "'engine': engine.__file__}))"
    )
    bare = _venv(installs["base"] / "bare-venv")  # the libraries, but no dyntable installed
    env = _env()
    env["PYTHONPATH"] = str(installs["wheel"])
    proc = subprocess.run(  # cwd: not this checkout, which `python -c` would put first on sys.path
        [str(bare), "-c", probe],
        cwd=installs["base"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "pyspark_dyntable" in result["mods"] and result["source"] == "dyntable"
    assert result["engine"].startswith(str(installs["wheel"])), result["engine"]
