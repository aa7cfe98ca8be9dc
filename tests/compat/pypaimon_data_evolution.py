"""Write data-evolution tables with pypaimon; this script runs INSIDE the pypaimon venv.

Its one job: given a warehouse directory, create ``db.<scenario>`` for each scenario below — a
table with ``data-evolution.enabled`` whose columns pypaimon rewrites by row id in the ways its
users do (every column, one column, a column added later and backfilled, a column-subset write,
deletions by row id with deletion vectors, partitions, layers of updates) — and print one JSON
object ``{scenario: {"ok": true}}`` (or ``{"ok": false, "error": ..., "traceback": ...}``).

It imports only the standard library, pyarrow and pypaimon, never the dyntable repository (like
``pypaimon_features.py``, whose ``Writer`` it reuses by path). The test
(``test_data_evolution_interop.py``) reads every snapshot with dyntable and with pypaimon.

Usage: ``python pypaimon_data_evolution.py WAREHOUSE [SCENARIO ...]`` (all when none is named).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pypaimon_features import Writer, run  # noqa: E402 - the sibling script, by path

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()),
                  pa.field("n", pa.int32())])
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _rows(ids: list[int], vs: list[str | None], ns: list[int | None]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.string()),
                     "n": pa.array(ns, pa.int32())}, schema=ROWS)


def _update(w: Writer, table, row_ids: list[int], columns: dict[str, pa.Array], only: bool = True) -> None:
    data = pa.table({"_ROW_ID": pa.array(row_ids, pa.int64()), **columns})
    w.update_by_row_id(table, data, list(columns) if only else None)


def update_all_columns(w: Writer) -> None:
    """Issue 36's defect 1: every column rewritten by row id; 3 rows, not 6."""
    t = w.create("update_all_columns", ROWS, options=EVOLUTION)
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"], [10, 20, 30]))
    _update(w, t, [0, 1, 2], {"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["x", "y", "z"]),
                              "n": pa.array([11, 21, 31], pa.int32())}, only=False)


def update_one_column(w: Writer) -> None:
    """One column of some rows rewritten, twice, with appends between: layers of _WRITE_COLS files."""
    t = w.create("update_one_column", ROWS, options=EVOLUTION)
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"], [10, 20, 30]))
    w.write(t, _rows([4, 5], ["d", "e"], [40, 50]))
    _update(w, t, [0, 2, 4], {"v": pa.array(["A", "C", "E"])})
    _update(w, t, [1, 2], {"n": pa.array([22, 33], pa.int32())})
    _update(w, t, [2, 3], {"v": pa.array(["CC", "DD"])})
    w.write(t, _rows([6], ["f"], [60]))


def backfilled_column(w: Writer) -> None:
    """A column added after the rows were written, then backfilled by row id."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    t = w.create("backfilled_column", ROWS, options=EVOLUTION)
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"], [10, 20, 30]))
    w.catalog.alter_table("db.backfilled_column", [SchemaChange.add_column("w", AtomicType("STRING"))], False)
    t = w.catalog.get_table("db.backfilled_column")
    _update(w, t, [0, 1, 2], {"w": pa.array(["x", None, "z"])})
    schema = pa.schema([*ROWS, pa.field("w", pa.string())])
    w.write(t, pa.table({"id": pa.array([4], pa.int64()), "v": ["d"], "n": pa.array([40], pa.int32()),
                         "w": ["q"]}, schema=schema))
    _update(w, t, [0, 3], {"v": pa.array(["A", "D"])})


def column_subset_write(w: Writer) -> None:
    """New rows written with only some columns (``with_write_type``): the others read as NULL."""
    t = w.create("column_subset_write", ROWS, options=EVOLUTION)
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"], [10, 20, 30]))
    builder = t.new_batch_write_builder()
    write, commit = builder.new_write().with_write_type(["id", "v"]), builder.new_commit()
    try:
        write.write_arrow(pa.table({"id": pa.array([4, 5], pa.int64()), "v": ["d", "e"]}))
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()
    _update(w, t, [3, 4], {"n": pa.array([40, 50], pa.int32())})


def deletion_vectors(w: Writer) -> None:
    """Deletions by row id (deletion vectors on the anchor file), before and after updates."""
    t = w.create("deletion_vectors", ROWS, options={**EVOLUTION, "deletion-vectors.enabled": "true"})
    w.write(t, _rows([1, 2, 3], ["a", "b", "c"], [10, 20, 30]))
    w.write(t, _rows([4, 5], ["d", "e"], [40, 50]))
    _update(w, t, [1, 3], {"n": pa.array([21, 41], pa.int32())})
    _delete(t, [1, 4])
    _update(w, t, [0, 3], {"v": pa.array(["A", "D"])})
    _delete(t, [0])


def _delete(table, row_ids: list[int]) -> None:
    builder = table.new_batch_write_builder()
    messages = builder.new_update().delete_by_row_id(row_ids)
    commit = builder.new_commit()
    try:
        commit.commit(messages)
    finally:
        commit.close()


def partitioned(w: Writer) -> None:
    """Two partitions, rows updated in both (row ids are table-wide)."""
    schema = pa.schema([*ROWS, pa.field("p", pa.string())])
    t = w.create("partitioned", schema, partition_keys=["p"], options=EVOLUTION)
    w.write(t, pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "v": ["a", "b", "c", "d"],
                         "n": pa.array([10, 20, 30, 40], pa.int32()), "p": ["x", "y", "x", "y"]},
                        schema=schema))
    ids = _row_ids(t)
    _update(w, t, [ids[1], ids[2]], {"v": pa.array(["B", "C"])})


def _row_ids(table) -> dict[int, int]:
    """id -> _ROW_ID as pypaimon reads them."""
    builder = table.new_read_builder().with_projection(["id", "_ROW_ID"])
    data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return dict(zip(data.column("id").to_pylist(), data.column("_ROW_ID").to_pylist(), strict=True))


SCENARIOS: dict[str, Callable[[Writer], None]] = {f.__name__: f for f in (
    update_all_columns, update_one_column, backfilled_column, column_subset_write, deletion_vectors,
    partitioned,
)}


def main(argv: list[str]) -> int:
    return run(SCENARIOS, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
