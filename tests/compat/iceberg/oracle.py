"""Our-side handle on pyiceberg, the Iceberg reader that checks dyntable's Iceberg metadata.

One job: find pyiceberg's virtual environment and read a table through it. pyiceberg is never
imported here (it pins its own pydantic/pyarrow stack): ``driver.py`` runs under the venv's
python, one process per read, and hands the rows back as Arrow IPC files.

Where the venv comes from: ``$DYNTABLE_PYICEBERG_PYTHON`` (``.ci/run`` sets it), else the
repository's ``.venv-pyiceberg``; under CI (``CI=true``) a missing one is created with
``.ci/pyiceberg-venv.sh`` and a failure to do so fails the test (never a skip).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).resolve().with_name("driver.py")
ENV_PYTHON = "DYNTABLE_PYICEBERG_PYTHON"
REPO_VENV = REPO_ROOT / ".venv-pyiceberg"
VENV_SCRIPT = REPO_ROOT / ".ci" / "pyiceberg-venv.sh"


def locate() -> tuple[str | None, str]:
    """``(python, how)`` of pyiceberg's venv, or ``(None, why not)``."""
    configured = os.environ.get(ENV_PYTHON)
    if configured:
        if os.access(configured, os.X_OK):
            return configured, f"${ENV_PYTHON}"
        return None, f"${ENV_PYTHON}={configured!r} is not an executable"
    python = REPO_VENV / "bin" / "python"
    if os.access(python, os.X_OK):
        return str(python), "repo venv"
    if os.environ.get("CI", "").lower() == "true":
        proc = subprocess.run(
            ["bash", str(VENV_SCRIPT), str(REPO_VENV)],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if proc.returncode == 0 and os.access(python, os.X_OK):
            return str(python), "repo venv created by .ci/pyiceberg-venv.sh"
        return None, f".ci/pyiceberg-venv.sh failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}"
    return None, f"no pyiceberg venv: set ${ENV_PYTHON} or run `bash .ci/pyiceberg-venv.sh`"


def pyiceberg_python() -> str:
    """The venv's python; under CI its absence fails the test, elsewhere it skips it."""
    python, how = locate()
    if python is not None:
        return python
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"pyiceberg unavailable under CI: {how}", pytrace=False)
    pytest.skip(f"pyiceberg unavailable: {how}")


def require_polars(python: str) -> None:
    """polars must be in pyiceberg's venv (``.ci/pyiceberg-venv.sh`` installs it); under CI its
    absence fails the test, elsewhere (an older venv) it skips it."""
    proc = subprocess.run([python, "-c", "import polars"], capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return
    why = f"polars is not in pyiceberg's venv {python}: rerun `bash .ci/pyiceberg-venv.sh`"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why, pytrace=False)
    pytest.skip(f"pyiceberg unavailable: {why}")


@dataclass
class IcebergRead:
    """What pyiceberg saw: the current rows, the rows at each requested snapshot or tag, and the metadata."""

    current: pa.Table
    at: dict[int, pa.Table]
    tags: dict[str, pa.Table]
    snapshot_ids: list[int]
    current_snapshot_id: int | None
    refs: dict[str, int]
    schema: dict[str, Any]
    data_files: list[str]
    filtered: list[pa.Table]


def _load(path: str) -> pa.Table:
    with pa.memory_map(path, "r") as source:
        return ipc.open_file(source).read_all()


def read_iceberg(
    python: str,
    metadata: str | Path,
    snapshots: list[int] | None = None,
    tags: list[str] | None = None,
    filters: list[str] | None = None,
    columns: list[str] | None = None,
    reader: str = "pyiceberg",
) -> IcebergRead:
    """Read the Iceberg table of ``metadata`` (a ``v<N>.metadata.json``) with pyiceberg, or with
    polars' native Iceberg scan (``reader="polars"``: pyiceberg plans, polars reads the Parquet
    files by Iceberg field id); ``columns``: a projection."""
    with tempfile.TemporaryDirectory() as out:
        request = {"metadata": str(metadata), "out": out, "snapshots": snapshots or [], "refs": tags or [],
                   "filters": filters or [], "columns": columns, "reader": reader}
        proc = subprocess.run(
            [python, str(DRIVER), json.dumps(request)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if proc.returncode != 0:
            raise AssertionError(f"{reader} failed to read {metadata}:\n{proc.stderr[-4000:]}")
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
        files = answer["files"]
        return IcebergRead(
            current=_load(files["current"]),
            at={int(k): _load(v) for k, v in files.items() if k.isdigit()},
            tags={k.removeprefix("ref:"): _load(v) for k, v in files.items() if k.startswith("ref:")},
            snapshot_ids=answer["snapshot_ids"],
            current_snapshot_id=answer["current_snapshot_id"],
            refs=answer["refs"],
            schema=answer["schema"],
            data_files=answer["data_files"],
            filtered=[_load(files[f"filter:{i}"]) for i in range(len(filters or []))],
        )
