"""pypaimon reads what rollback, fast-forward and replace_main publish exactly as dyntable does.

pypaimon's scan merges manifest entries like Java's (an ADD whose file any scanned manifest
DELETEs is dropped), so before the files that come back got new names (engine.ops.republish)
it read a rollback past a compaction without those files.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.ops.replace_main import replace_main
from tests.compat.harness import PyPaimon

pytestmark = pytest.mark.compat

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _rows(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def _batch(ids, v) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("pk", [False, True], ids=["append", "pk"])
def test_pypaimon_reads_a_rollback_past_a_full_compaction(pypaimon: PyPaimon, catalog, pk):
    options = {"primary_keys": ["id"], "options": {"bucket": "1"}} if pk else {}
    t = catalog.create_table("db.t", SCHEMA, **options)
    t.write_arrow(_batch([1, 2, 3], "a"))
    t.write_arrow(_batch([2, 4], "b"))
    at2 = _rows(t.to_arrow())
    t.compact(full=True)
    t.write_arrow(_batch([5], "c"))
    t.refs.rollback_to(2)
    assert _rows(t.to_arrow()) == at2
    assert _rows(pypaimon.read(catalog.warehouse, "db.t", schema=SCHEMA)) == at2


def test_pypaimon_reads_main_after_fast_forward_and_replace_main(pypaimon: PyPaimon, catalog):
    t = catalog.create_table("db.f", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(_batch([1, 2], "a"))
    t.write_arrow(_batch([3], "a"))
    t.refs.branches.create("dev", from_snapshot=2)
    dev = catalog.get_table("db.f$branch_dev")
    dev.write_arrow(_batch([9], "d"))
    t.compact(full=True)  # main deletes files the branch still has
    t.refs.branches.fast_forward("dev")
    assert _rows(pypaimon.read(catalog.warehouse, "db.f", schema=SCHEMA)) == _rows(dev.to_arrow())
    dev.write_arrow(_batch([10], "d"))
    t.write_arrow(_batch([11], "m"))
    replace_main(t.refresh().store, "dev")
    assert _rows(pypaimon.read(catalog.warehouse, "db.f", schema=SCHEMA)) == _rows(dev.refresh().to_arrow())
