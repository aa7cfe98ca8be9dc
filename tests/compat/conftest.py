"""Fixtures for the compatibility tests: the pypaimon driver and the Java Paimon oracle.

One job: provide session-wide handles on the two outside Paimon implementations.

* ``pypaimon``: a running :class:`~tests.compat.harness.PyPaimon`, or the requesting test is
  skipped with the reason the pypaimon venv is unavailable. The driver process is shared by the
  whole session, so pypaimon is imported once.
* ``paimon_java``: a running :class:`~tests.compat.java_oracle.JavaOracle` (one JVM for the
  session). An unavailable Java oracle FAILS the requesting test with the reason: the oracle is
  built by ``.ci/paimon-java.sh`` on demand, so a missing one is a broken setup, not a skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.compat.harness import PyPaimon, PyPaimonError, locate_venv
from tests.compat.java_oracle import (
    JavaOracle,
    JavaOracleError,
    JavaOracleUnavailable,
    JavaPaimon,
    locate_classpath,
)


@pytest.fixture(scope="session")
def pypaimon() -> Iterator[PyPaimon]:
    """A running pypaimon driver; skips when no usable pypaimon venv exists."""
    python, how = locate_venv()
    if python is None:
        pytest.skip(f"pypaimon unavailable: {how}")
    handle = PyPaimon(python)
    try:
        handle.version()
    except PyPaimonError as exc:
        handle.close()
        pytest.skip(f"pypaimon venv at {python} ({how}) is not usable: {exc}")
    yield handle
    handle.close()


@pytest.fixture(scope="session")
def paimon_java() -> Iterator[JavaOracle]:
    """The Java Paimon oracle's JVM; fails (never skips) when it cannot be found, built or started."""
    try:
        classpath, how = locate_classpath()
    except JavaOracleUnavailable as exc:
        pytest.fail(f"Java Paimon oracle unavailable: {exc}", pytrace=False)
    oracle = JavaOracle(classpath)
    try:
        version = oracle.version()
    except JavaOracleError as exc:
        oracle.close()
        pytest.fail(f"Java Paimon oracle ({how}, class path {classpath}) does not start: {exc}",
                    pytrace=False)
    if version.get("paimon") != "0.9.0":
        oracle.close()
        pytest.fail(f"Java Paimon oracle ({how}) runs Paimon {version.get('paimon')}, expected 0.9.0",
                    pytrace=False)
    yield oracle
    oracle.close()


@pytest.fixture
def java(paimon_java: JavaOracle, catalog) -> JavaPaimon:
    """Java Paimon on the test's warehouse (the ``catalog`` fixture of tests/conftest.py, database ``db``)."""
    return JavaPaimon(catalog.warehouse, paimon_java)
