"""The skip guard (tests/skip_guard.py) that makes .ci/run fail on a skip not in tests/allowed-skips.txt.

Each case runs pytest in a subprocess on a throw-away suite (no JVM, a second or two each).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.throwaway_suite import run_pytest

ROOT = Path(__file__).resolve().parents[1]

SUITE = """
import pytest

def test_runs():
    assert 1 + 1 == 2

@pytest.mark.skipif(True, reason="optional plotting library missing")
def test_allowed_skip():
    pass

@pytest.mark.xfail(reason="a known bug", strict=True)
def test_expected_failure():
    assert False
"""


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_pytest(directory, "tests.skip_guard", *args)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the throw-away suite is its own rootdir
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "allowed.txt").write_text("# comment\noptional plotting library  # trailing comment\n")
    return tmp_path


def test_allowed_skips_and_xfails_pass(suite: Path) -> None:
    proc = _pytest(suite, "--allowed-skips", "allowed.txt")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 skipped, 1 xfailed" in proc.stdout


def test_an_unexpected_skip_fails_the_run(suite: Path) -> None:
    (suite / "test_oracle.py").write_text(
        "import pytest\n\ndef test_oracle():\n    pytest.skip('pypaimon venv not installed')\n"
    )
    proc = _pytest(suite, "--allowed-skips", "allowed.txt")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 skipped for a reason not in --allowed-skips" in proc.stdout
    assert "test_oracle.py::test_oracle: pypaimon venv not installed" in proc.stdout
    # without the option the same suite passes, as it did before the guard
    assert _pytest(suite).returncode == 0


def test_a_module_skipped_whole_fails_the_run(suite: Path) -> None:
    (suite / "test_client.py").write_text(
        "import pytest\n\npytest.importorskip('no_such_client_library')\n\ndef test_x():\n    pass\n"
    )
    proc = _pytest(suite, "--allowed-skips", "allowed.txt")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "test_client.py: could not import 'no_such_client_library'" in proc.stdout


def test_a_failing_run_keeps_its_exit_code(suite: Path) -> None:
    (suite / "test_fails.py").write_text(
        "import pytest\n\ndef test_f():\n    pytest.skip('x')\n\ndef test_g():\n    assert False\n"
    )
    proc = _pytest(suite, "--allowed-skips", "allowed.txt")
    assert proc.returncode == 1
    assert "1 failed" in proc.stdout and "not in --allowed-skips" in proc.stdout


def test_the_repository_list_parses_and_the_suite_offers_the_option() -> None:
    from tests.skip_guard import read_allowed

    patterns = read_allowed(ROOT / "tests" / "allowed-skips.txt")
    assert any(p.search("could not import 'matplotlib'") for p in patterns)
    assert not any(p.search("pypaimon unavailable: no pypaimon venv") for p in patterns)
    assert not any(p.search("could not import 'IPython'") for p in patterns)
    # the real suite's conftest registers the option (cheap: collection only)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "--allowed-skips",
            "tests/allowed-skips.txt",
            "tests/test_skip_guard.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
