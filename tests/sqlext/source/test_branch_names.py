"""The Spark source's ``branch`` option refuses a traversing branch name (issue 8, defect 4).

The engine's side of the rule (one name validation at every entry) is tested in
tests/engine/test_names.py; this is the same rule seen through ``sqlext.source``.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.errors import InvalidNameError
from sqlext.source.datasource import resolve
from sqlext.source.requests import ReadRequest

SCHEMA = pa.schema([("a", pa.int64())])
TRAVERSAL = "x/../../../other"


def _tree(root: str) -> list[str]:
    """Every file and directory under ``root``, relative, sorted."""
    out = []
    for base, dirs, files in os.walk(root):
        out += [os.path.relpath(os.path.join(base, n), root) for n in dirs + files]
    return sorted(out)


def test_traversal_through_datasource_branch_option(catalog, warehouse, tmp_path):
    """The Spark source's ``branch`` option builds an Identifier: the same rule refuses it."""
    catalog.create_table("db.t", SCHEMA)
    catalog.create_table("db.other", SCHEMA)
    before = _tree(str(tmp_path))
    with pytest.raises(InvalidNameError):
        resolve(ReadRequest.from_options({"warehouse": warehouse, "table": "db.t", "branch": TRAVERSAL}))
    with pytest.raises(InvalidNameError):
        resolve(ReadRequest.from_options({"warehouse": warehouse, "table": f"db.t$branch_{TRAVERSAL}"}))
    assert _tree(str(tmp_path)) == before
    assert open_catalog(warehouse).get_table("db.other").latest_snapshot() is None
