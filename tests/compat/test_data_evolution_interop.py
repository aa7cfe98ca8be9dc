"""Data-evolution tables written by pypaimon 2.1: dyntable reads pypaimon's rows at every snapshot,
and its appends and compactions keep the table pypaimon's.

pypaimon (``pypaimon_data_evolution.py``) writes each scenario — every column updated by row id
(issue 36's defect 1), one column in layers, a backfilled column, a column-subset write, deletions
by row id, partitions — and the test compares, snapshot by snapshot, dyntable's read with
pypaimon's (whole rows, a projection, a filter). Then dyntable appends and compacts: pypaimon
still reads dyntable's rows, the row ids of the old rows are unchanged, and after the compaction
no row-id range is held by more than one file (deleted rows stay hidden: their deletion vectors
move onto the new files). pypaimon then deletes and updates by row id again, and both read the
same rows.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.meta.row_ranges import group_by_row_id
from engine.scan.predicate import equal
from tests.compat.harness import PyPaimon, locate_venv
from tests.compat.test_newer_features import pypaimon_writes

pytestmark = pytest.mark.compat

SCRIPT = Path(__file__).with_name("pypaimon_data_evolution.py")
SCENARIOS = ["update_all_columns", "update_one_column", "backfilled_column", "column_subset_write",
             "deletion_vectors", "partitioned"]


def _writes(warehouse: Path, scenario: str) -> None:
    pypaimon_writes(warehouse, scenario, SCRIPT)


def _rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple]:
    names = columns or table.column_names
    cols = [table.column(n).to_pylist() for n in names]
    return sorted(zip(*cols, strict=True), key=repr)


def _more_rows(table) -> pa.Table:
    data = {"id": pa.array([100, 101], pa.int64()), "v": ["m", "n"], "n": pa.array([7, 8], pa.int32())}
    for name in table.schema.field_names:
        if name not in data:
            data[name] = pa.array(["q", "q"] if name == "p" else [None, None], pa.string())
    return pa.table({n: data[n] for n in table.schema.field_names})


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_dyntable_reads_pypaimon_rows_at_every_snapshot(pypaimon: PyPaimon, tmp_path, scenario):
    warehouse = tmp_path / "wh"
    _writes(warehouse, scenario)
    name = f"db.{scenario}"
    table = open_catalog(str(warehouse)).get_table(name)
    snapshots = [s["id"] for s in pypaimon.snapshots(warehouse, name)]
    assert [s.id for s in table.snapshots()] == snapshots
    for sid in snapshots:
        ours = table.to_arrow(snapshot_id=sid)
        theirs = pypaimon.read(warehouse, name, snapshot_id=sid)
        common = [c for c in ours.column_names if c in theirs.column_names]
        assert common == ours.column_names, (sid, ours.column_names, theirs.column_names)
        assert _rows(ours) == _rows(theirs, common), sid
    latest = table.to_arrow()
    theirs = pypaimon.read(warehouse, name)
    assert _rows(table.to_arrow(columns=["v", "id"])) == _rows(theirs, ["v", "id"])
    for value in {r for r in latest.column("v").to_pylist() if r is not None}:
        expected = [r for r in _rows(theirs, latest.column_names) if r[1] == value]
        assert _rows(table.to_arrow(filter=equal("v", value))) == expected, value


def test_update_of_every_column_reads_three_rows(pypaimon: PyPaimon, tmp_path):
    """Issue 36, defect 1: after pypaimon rewrites every column by _ROW_ID, three rows, the new ones."""
    warehouse = tmp_path / "wh"
    _writes(warehouse, "update_all_columns")
    rows = _rows(open_catalog(str(warehouse)).get_table("db.update_all_columns").to_arrow())
    assert rows == [(1, "x", 11), (2, "y", 21), (3, "z", 31)]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_dyntable_appends_and_compaction_keep_the_table_pypaimons(pypaimon: PyPaimon, tmp_path, scenario):
    warehouse = tmp_path / "wh"
    _writes(warehouse, scenario)
    name = f"db.{scenario}"
    table = open_catalog(str(warehouse)).get_table(name)
    ids_before = _rows(pypaimon.read(warehouse, name, projection=["id", "_ROW_ID"]), ["id", "_ROW_ID"])

    table.write_arrow(_more_rows(table))
    ours = _rows(table.refresh().to_arrow())
    assert _rows(pypaimon.read(warehouse, name), table.schema.field_names) == ours
    ids = _rows(pypaimon.read(warehouse, name, projection=["id", "_ROW_ID"]), ["id", "_ROW_ID"])
    assert [r for r in ids if r[0] < 100] == ids_before  # the old rows keep their ids
    assert len({r[1] for r in ids}) == len(ids)  # the new rows take new ones

    table.compact(full=True)  # (deletion vectors: the anchors' move onto the new files)
    table = table.refresh()
    assert _rows(table.to_arrow()) == ours
    assert _rows(pypaimon.read(warehouse, name), table.schema.field_names) == ours
    assert _rows(pypaimon.read(warehouse, name, projection=["id", "_ROW_ID"]), ["id", "_ROW_ID"]) == ids
    for split in table.new_scan().plan().splits:  # every range is one whole-row file now
        assert all(len(g) == 1 and g[0].write_cols is None for g in group_by_row_id(split.files))
    if scenario == "deletion_vectors":  # pypaimon deletes and updates the compacted rows by row id
        _pypaimon_more(warehouse, name, ids)
        theirs = _rows(pypaimon.read(warehouse, name), table.schema.field_names)
        assert _rows(table.refresh().to_arrow()) == theirs and len(theirs) == len(ours) - 1


def _pypaimon_more(warehouse: Path, name: str, ids: list[tuple]) -> None:
    """pypaimon deletes the row of id 4 and updates n of id 3 (after dyntable's compaction)."""
    by_id = dict(ids)
    script = (
        "import sys, pyarrow as pa\n"
        f"sys.path.insert(0, {str(SCRIPT.parent)!r})\n"
        "from pypaimon_data_evolution import Writer, _delete, _update\n"
        f"w = Writer({str(warehouse)!r}); t = w.catalog.get_table({name!r})\n"
        f"_delete(t, [{by_id[4]}])\n"
        f"_update(w, w.catalog.get_table({name!r}), [{by_id[3]}], {{'n': pa.array([333], pa.int32())}})\n"
    )
    python, _ = locate_venv()
    assert python is not None
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=300, check=False,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
