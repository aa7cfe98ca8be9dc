"""Settings of the sessions build_spark makes: the full JIT unless fast start-up is asked for (issue 22.9)."""

from __future__ import annotations

import pytest

from sqlext.cli.main import build_parser
from sqlext.spark import FAST_START_ENV, fast_start_requested, session_settings

C1 = "-XX:TieredStopAtLevel=1"


def test_users_get_the_full_jit_by_default(monkeypatch) -> None:
    monkeypatch.delenv(FAST_START_ENV, raising=False)
    settings = session_settings("local[*]")
    assert C1 not in settings["spark.driver.extraJavaOptions"]
    assert "-Xss4m" in settings["spark.driver.extraJavaOptions"]


@pytest.mark.parametrize("value, capped", [("1", True), ("true", True), ("0", False), ("", False)])
def test_fast_start_from_the_environment(monkeypatch, value, capped) -> None:
    monkeypatch.setenv(FAST_START_ENV, value)
    assert fast_start_requested() is capped
    assert (C1 in session_settings("local[2]")["spark.driver.extraJavaOptions"]) is capped


def test_explicit_choice_wins_and_cluster_masters_are_left_alone(monkeypatch) -> None:
    monkeypatch.setenv(FAST_START_ENV, "1")
    assert C1 not in session_settings("local[2]", fast_start=False)["spark.driver.extraJavaOptions"]
    monkeypatch.delenv(FAST_START_ENV)
    assert C1 in session_settings("local[2]", fast_start=True)["spark.driver.extraJavaOptions"]
    assert "spark.driver.extraJavaOptions" not in session_settings("yarn", fast_start=True)
    # the user's own Java options win over ours
    mine = session_settings("local", {"spark.driver.extraJavaOptions": "-Xmx8g"}, fast_start=True)
    assert mine["spark.driver.extraJavaOptions"] == "-Xmx8g"


def test_the_suite_runs_with_fast_start() -> None:
    assert fast_start_requested()  # tests/conftest.py opts in, for this process and its children


def test_cli_flag() -> None:
    assert build_parser().parse_args(["--fast-start"]).fast_start is True
    assert build_parser().parse_args([]).fast_start is None


def test_local_sessions_wait_long_for_python_sockets() -> None:
    from sqlext.spark import PYTHON_SOCKET_TIMEOUT_KEY, _seconds

    assert session_settings("local[2]")[PYTHON_SOCKET_TIMEOUT_KEY] == "120s"
    assert PYTHON_SOCKET_TIMEOUT_KEY not in session_settings("yarn")
    assert session_settings("local", {PYTHON_SOCKET_TIMEOUT_KEY: "30s"})[PYTHON_SOCKET_TIMEOUT_KEY] == "30s"
    assert [_seconds(v) for v in ("120", "120s", "2min", "1h", "1.5s", "10ms", None)] == [
        120, 120, 120, 3600, None, None, None
    ]
