"""Running a throw-away pytest suite in a subprocess with one of the repository's pytest plugins,
for the tests that prove a plugin (tests/skip_guard.py, tests/blocked_imports.py) does its job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_pytest(directory: Path, plugin: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -p <plugin> <args>`` in ``directory``, with this checkout importable."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the throw-away suite needs no plugin: ~1 s a run
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", plugin, "-p", "no:cacheprovider", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
