"""Shared scenarios for the crash suites: small tables, one operation each, and their outcomes.

A scenario builds a table in a known state (``setup``), runs one operation on it (``run``), and
says what the table must read afterwards if the operation took effect (``expect``). States are
compared as sorted row tuples, read back through a catalog opened with a plain FileIO.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from engine import open_catalog
from engine.table import Table

TABLE = "db.t"
SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.string())])
Rows = list[tuple[Any, ...]]


def rows(p: str, ids: list[int], v: str) -> pa.Table:
    return pa.table({"p": [p] * len(ids), "id": ids, "v": [v] * len(ids)}, schema=SCHEMA)


def as_rows(table: pa.Table) -> Rows:
    return sorted(tuple(r.values()) for r in table.select(["p", "id", "v"]).to_pylist())


def read_state(warehouse: str) -> Rows:
    """The table as a fresh process would see it: new catalog, plain FileIO, no caches of ours."""
    return as_rows(open_catalog(warehouse).get_table(TABLE).to_arrow())


def _upsert(state: Rows, new: pa.Table) -> Rows:
    merged = {(p, i): v for p, i, v in state}
    for p, i, v in as_rows(new):
        merged[(p, i)] = v
    return sorted((p, i, v) for (p, i), v in merged.items())


@dataclass(frozen=True)
class Scenario:
    """One operation on a small table.

    Attributes:
        name: test id.
        primary_key: whether the table has a primary key (with automatic compaction).
        run: performs the operation on a Table (which may carry a fault-injecting FileIO).
        expect: the state after the operation took effect, given the state before it.
    """

    name: str
    primary_key: bool
    run: Callable[[Table], object]
    expect: Callable[[Rows], Rows]
    options: tuple[tuple[str, str], ...] = ()

    def setup(self, warehouse: str) -> Table:
        """Creates ``db.t`` in ``warehouse`` with three commits in two partitions."""
        cat = open_catalog(warehouse)
        cat.create_database("db", ignore_if_exists=True)
        options = {"bucket": "1"}
        if not self.primary_key:
            options["bucket-key"] = "id"
        if self.primary_key:
            # every second sorted run triggers the automatic compaction inside write_arrow
            options["num-sorted-run.compaction-trigger"] = "2"
        options.update(self.options)
        t = cat.create_table(TABLE, SCHEMA, partition_keys=["p"],
                             primary_keys=["p", "id"] if self.primary_key else (), options=options)
        t.write_arrow(rows("a", [1, 2], "base"))
        t.write_arrow(rows("b", [3, 4], "base"))
        # primary key: partition b gets two runs (compacted now); partition a keeps one, so the
        # scenario's write into a makes two and its automatic compaction runs inside the operation
        t.write_arrow(rows("b", [4, 5], "second") if self.primary_key else rows("a", [5], "second"))
        return t


NEW_A = rows("a", [2, 7], "new")
NEW_B = rows("b", [8], "new")


def _write(t: Table) -> object:
    return t.write_arrow(NEW_A)


SCENARIOS: list[Scenario] = [
    Scenario("append-write", False, _write, lambda s: sorted(s + as_rows(NEW_A))),
    Scenario("pk-write", True, _write, lambda s: _upsert(s, NEW_A)),
    # no automatic compaction in setup: partition b keeps two runs for the full compaction to merge
    Scenario("pk-compact-full", True, lambda t: t.compact(full=True), lambda s: s,
             (("num-sorted-run.compaction-trigger", "5"),)),
    Scenario("append-compact-full", False, lambda t: t.compact(full=True), lambda s: s),
    Scenario("overwrite-partition", False, lambda t: t.write_arrow(NEW_A, overwrite={"p": "a"}),
             lambda s: sorted([r for r in s if r[0] != "a"] + as_rows(NEW_A))),
    Scenario("pk-overwrite-partition", True, lambda t: t.write_arrow(NEW_A, overwrite={"p": "a"}),
             lambda s: sorted([r for r in s if r[0] != "a"] + as_rows(NEW_A))),
    Scenario("overwrite-table", False, lambda t: t.write_arrow(NEW_B, overwrite=True),
             lambda s: as_rows(NEW_B)),
    Scenario("drop-partition", False, lambda t: t.drop_partitions([{"p": "a"}]),
             lambda s: [r for r in s if r[0] != "a"]),
    Scenario("pk-drop-partition", True, lambda t: t.drop_partitions([{"p": "b"}]),
             lambda s: [r for r in s if r[0] != "b"]),
    Scenario("truncate", False, lambda t: t.truncate(), lambda s: []),
]
BY_NAME = {s.name: s for s in SCENARIOS}
