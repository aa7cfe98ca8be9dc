"""A pytest plugin that fails the run when a test is skipped for a reason not on an allowed list.

A skip is silent unless pytest runs with ``-rs``: a compatibility oracle whose environment went
missing once skipped unnoticed for a long time (issue 22.10). With ``--allowed-skips FILE`` every
skip (of a test, or of a whole module at collection) must match one of the file's patterns, or
the run ends with exit code 1 and lists the skips that did not. ``.ci/run`` passes the option
with ``tests/allowed-skips.txt``. Expected failures (``xfail``) are not skips and are not checked.

The hooks are imported by ``tests/conftest.py``; a test runs them on a throw-away suite with
``-p tests.skip_guard`` (tests/test_skip_guard.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--allowed-skips",
        metavar="FILE",
        default=None,
        help="fail the run if a test is skipped for a reason matching none of FILE's patterns "
        "(one regular expression per line, searched in the reason; # starts a comment)",
    )


def read_allowed(path: Path) -> list[re.Pattern[str]]:
    """The patterns of an allowed-skips file: one regular expression a line, ``#`` comments."""
    patterns = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            patterns.append(re.compile(line))
    return patterns


def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("--allowed-skips", None)
    if option:
        config.pluginmanager.register(SkipGuard(read_allowed(Path(option))), "dyntable-skip-guard")


def skip_reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    """The reason a skipped report gives (``pytest.skip``'s message, a ``skipif`` reason)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
        return reason.removeprefix("Skipped: ")
    return str(longrepr)


class SkipGuard:
    """Collects the skips no allowed pattern matches, and fails the session if there are any."""

    def __init__(self, allowed: list[re.Pattern[str]]) -> None:
        self.allowed = allowed
        self.unexpected: list[tuple[str, str]] = []

    def _check(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        reason = skip_reason(report)
        if not any(p.search(reason) for p in self.allowed):
            self.unexpected.append((report.nodeid, reason))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._check(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._check(report)  # a module skipped whole (importorskip at module level)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.unexpected:
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            title = f"{len(self.unexpected)} skipped for a reason not in --allowed-skips"
            reporter.write_sep("=", title, red=True)
            for nodeid, reason in self.unexpected:
                reporter.write_line(f"{nodeid}: {reason}")
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
