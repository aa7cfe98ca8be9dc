"""``incremental-between-timestamp`` against pypaimon 2.1: the same option on the same
dyntable-written table returns the same changes, kinds included."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import IncrementalQuery
from engine.scan.incremental import ChangeReader
from tests.compat.harness import PyPaimon

pytestmark = pytest.mark.compat


def _ours(table, start: int, end: int) -> list[tuple]:
    times = {s.id: s.time_millis for s in table.snapshots()}
    plan = table.new_read_builder().new_incremental(
        IncrementalQuery(between_timestamp=f"{times[start]},{times[end]}"))
    rows = ChangeReader(table.store).read_all(plan.splits())
    return sorted(tuple(r.values()) for r in rows.to_pylist())


def _theirs(pypaimon: PyPaimon, warehouse: str, start: int, end: int) -> list[tuple]:
    rows = pypaimon.read_incremental(warehouse, "db.t", start, end)
    return sorted(tuple(r.values()) for r in rows.to_pylist())


@pytest.mark.parametrize("primary_key", [True, False])
def test_incremental_between_timestamp_matches_pypaimon(pypaimon: PyPaimon, catalog, primary_key):
    schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
    keys = {"primary_keys": ["id"]} if primary_key else {}
    t = catalog.create_table("db.t", schema, options={"bucket": "2"} if primary_key else {}, **keys)
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]}, schema=schema))
    t.refresh().write_arrow(pa.table({"id": pa.array([2, 4], pa.int32()), "v": ["B", "d"]}, schema=schema))
    if primary_key:
        t.refresh().write_arrow(pa.table({"id": pa.array([1], pa.int32()), "v": ["a"], "rowkind": ["-D"]}))
    else:
        t.refresh().write_arrow(pa.table({"id": pa.array([5], pa.int32()), "v": ["e"]}, schema=schema))
    t = t.refresh()
    for start, end in [(1, 2), (1, 3), (2, 3)]:
        ours = _ours(t, start, end)
        assert ours and ours == _theirs(pypaimon, catalog.warehouse, start, end), (start, end)
    if primary_key:
        assert ("-D", 1, "a") in _ours(t, 2, 3)
