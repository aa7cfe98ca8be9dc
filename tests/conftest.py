"""Shared fixtures: a fresh warehouse per test, and small Arrow data."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TZ", "UTC")


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")


@pytest.fixture
def catalog(warehouse):
    from engine import open_catalog

    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat
