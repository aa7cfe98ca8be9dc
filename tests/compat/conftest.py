"""Fixtures for the pypaimon compatibility tests.

One job: provide a session-wide :class:`~tests.compat.harness.PyPaimon` (fixture ``pypaimon``),
or skip the requesting test with the reason the pypaimon venv is unavailable. The driver
process is shared by the whole session, so pypaimon is imported once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.compat.harness import PyPaimon, PyPaimonError, locate_venv


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
