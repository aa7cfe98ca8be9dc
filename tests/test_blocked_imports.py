"""The import blocker (tests/blocked_imports.py) that runs the engine suite without the SQL/Spark layer.

Each case runs pytest in a subprocess on a throw-away suite (no JVM, a second or two each). The
blocked packages (sqlglot, lark) are installed dependencies: the same suite imports them without
the option, so a pass with the option is the block at work, not a missing package.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.throwaway_suite import run_pytest

LAZY = """
import json

import pytest

def test_blocked_packages_and_their_submodules_do_not_import():
    with pytest.raises(ModuleNotFoundError, match="'sqlglot' is blocked by --block-imports"):
        import sqlglot  # noqa: F401
    with pytest.raises(ModuleNotFoundError, match="'lark' is blocked"):  # its package goes first
        import lark.lexer  # noqa: F401

def test_other_packages_import():
    import pyarrow  # noqa: F401
    assert json.dumps([1]) == "[1]"
"""

EAGER = "import sqlglot\n\ndef test_uses_sqlglot():\n    assert sqlglot.transpile('SELECT 1')\n"


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_pytest(directory, "tests.blocked_imports", *args)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the throw-away suite is its own rootdir
    return tmp_path


def test_blocked_imports_fail_and_others_work(suite: Path) -> None:
    (suite / "test_lazy.py").write_text(LAZY)
    proc = _pytest(suite, "--block-imports", "sqlglot, lark")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    # without the option the packages import: the first test fails (nothing is raised)
    proc = _pytest(suite)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout


def test_a_test_module_that_needs_a_blocked_package_fails_the_run(suite: Path) -> None:
    (suite / "test_eager.py").write_text(EAGER)
    assert _pytest(suite).returncode == 0
    proc = _pytest(suite, "--block-imports", "sqlglot")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "import of 'sqlglot' is blocked by --block-imports" in proc.stdout


def test_the_block_covers_conftest_imports(suite: Path) -> None:
    (suite / "conftest.py").write_text("import lark\n")
    (suite / "test_ok.py").write_text("def test_ok():\n    pass\n")
    assert _pytest(suite).returncode == 0
    proc = _pytest(suite, "--block-imports", "lark")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "import of 'lark' is blocked by --block-imports" in proc.stdout + proc.stderr


def test_dotted_names_are_a_usage_error(suite: Path) -> None:
    (suite / "test_ok.py").write_text("def test_ok():\n    pass\n")
    proc = _pytest(suite, "--block-imports", "sqlglot.dialects")
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's usage-error exit code
    assert "top-level package names, not sqlglot.dialects" in proc.stderr
