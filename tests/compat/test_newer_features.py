"""Tables pypaimon 2.1 writes with newer Paimon features: dyntable reads them right or refuses.

The probe of issue 36's first step ("never misread, never damage"): for every feature
``pypaimon_features.py`` can write, dyntable either reads pypaimon's rows or refuses with the
typed unsupported-feature error (``UnsupportedTableError``, SQLSTATE 0A000) naming the feature;
then it writes, compacts and runs ``remove_missing_files`` — which either keeps the table
readable by pypaimon with dyntable's rows, or is refused before anything changed (same snapshot,
pypaimon still reads its own rows).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.errors import UnsupportedTableError
from engine.scan.predicate import equal
from sqlext.errors import sqlstate_for
from tests.compat.harness import PyPaimon, locate_venv

pytestmark = pytest.mark.compat

SCRIPT = Path(__file__).with_name("pypaimon_features.py")

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
DOUBLES = pa.schema([pa.field("k", pa.float64(), nullable=False), pa.field("v", pa.string())])

# feature -> (dyntable reads it: "rows" or "refused", dyntable writes it: "ok", "appends" (appends
# and compaction keep the row ids; remove_missing_files refused), "compacts" (data evolution: appends and
# compaction; remove_missing_files refused), "postpone" (writes into real buckets, a compaction moves
# the pending files into real buckets) or "refused")
EXPECTED = {
    "row_tracking": ("rows", "appends"),
    "data_evolution": ("rows", "compacts"),
    "data_evolution_one_column": ("rows", "compacts"),
    "postpone_bucket": ("rows", "postpone"),
    "external_paths_append": ("rows", "ok"),
    "external_paths_pk": ("rows", "ok"),
    "dv_merge_on_read": ("rows", "ok"),
    "deletion_vectors": ("rows", "ok"),
    "dynamic_bucket": ("rows", "ok"),
    "blob_column": ("refused", "refused"),
    "thin_mode": ("rows", "ok"),
    "dense_stats": ("rows", "ok"),
    "double_keys": ("rows", "ok"),
}
# Filtered reads (pypaimon's rows filtered): dense_stats keeps statistics of 'v' only, so pruning
# must find them by name (_VALUE_STATS_COLS), not by position.
FILTERS = {"dense_stats": (("v", "x"), ("v", "b"), ("id", 7), ("id", 4))}
NAMED = {  # words the refusal must contain
    "row_tracking": "row-tracking.enabled", "data_evolution": "data-evolution.enabled",
    "data_evolution_one_column": "data-evolution.enabled", "postpone_bucket": "bucket = -2",
    "blob_column": "BLOB",
}


def pypaimon_writes(warehouse: Path, feature: str, script: Path = SCRIPT) -> None:
    """Run one scenario of a pypaimon writer script (``pypaimon_features.py`` by default) into
    ``warehouse``, in pypaimon's own venv."""
    python, how = locate_venv()
    assert python is not None, how  # the pypaimon fixture skipped already when it is missing
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([python, str(script), str(warehouse), feature], capture_output=True, text=True,
                          timeout=300, check=False, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])[feature]
    assert result["ok"], result.get("traceback")


def _rows(table: pa.Table) -> list[tuple]:
    """Sorted rows; NaN made comparable (NaN != NaN would fail every comparison)."""
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    rows = [tuple("NaN" if isinstance(x, float) and math.isnan(x) else x for x in r)
            for r in zip(*cols, strict=True)]
    return sorted(rows, key=repr)


def _refused(excinfo: pytest.ExceptionInfo[UnsupportedTableError], feature: str) -> None:
    assert sqlstate_for(excinfo.value) == "0A000"
    assert NAMED.get(feature, "") in str(excinfo.value) and "Paimon" in str(excinfo.value)


def _more_rows(feature: str) -> pa.Table:
    if feature == "double_keys":
        return pa.table({"k": [float("nan"), -0.0, 3.0], "v": ["n3", "mz2", "three"]}, schema=DOUBLES)
    return pa.table({"id": pa.array([2, 9], pa.int64()), "v": ["w2", "w9"]}, schema=ROWS)


@pytest.mark.parametrize("feature", sorted(EXPECTED))
def test_dyntable_reads_or_refuses_and_never_damages(pypaimon: PyPaimon, tmp_path, feature):
    warehouse = tmp_path / "wh"
    pypaimon_writes(warehouse, feature)
    name = f"db.{feature}"
    theirs = _rows(pypaimon.read(warehouse, name))
    before = [s["id"] for s in pypaimon.snapshots(warehouse, name)]
    reads, writes = EXPECTED[feature]
    catalog = open_catalog(str(warehouse))

    if feature == "blob_column":  # the schema itself is refused, for every use
        with pytest.raises(UnsupportedTableError) as e:
            catalog.get_table(name)
        _refused(e, feature)
        assert _rows(pypaimon.read(warehouse, name)) == theirs
        return

    table = catalog.get_table(name)
    # Newer snapshot fields (nextRowId of row tracking) are read as pypaimon wrote them.
    assert [s.next_row_id for s in table.snapshots()] == [
        s["next_row_id"] for s in pypaimon.snapshots(warehouse, name)]
    if reads == "rows":
        assert _rows(table.to_arrow()) == theirs
        for column, value in FILTERS.get(feature, ()):  # pruning by dense statistics loses no row
            at = table.schema.field_names.index(column)
            expected = [r for r in theirs if r[at] == value]
            assert _rows(table.to_arrow(filter=equal(column, value))) == expected, (column, value)
    else:
        with pytest.raises(UnsupportedTableError) as e:
            table.to_arrow()
        _refused(e, feature)

    if writes in ("appends", "compacts"):  # row tracking: appended rows take new row ids (nextRowId goes on)
        table.write_arrow(_more_rows(feature))
        ours = _rows(table.refresh().to_arrow())
        assert _rows(pypaimon.read(warehouse, name)) == ours and len(ours) == len(theirs) + 2
        ids = pypaimon.read(warehouse, name, projection=["id", "_ROW_ID"]).column("_ROW_ID").to_pylist()
        assert sorted(ids) == list(range(len(ours)))
        # a compaction keeps every row's id (written into its file): pypaimon reads the same ids
        by_id = _rows(pypaimon.read(warehouse, name, projection=["_ROW_ID", "id"]))
        table.refresh().compact(full=True)
        assert _rows(pypaimon.read(warehouse, name, projection=["_ROW_ID", "id"])) == by_id
        before = [s["id"] for s in pypaimon.snapshots(warehouse, name)]
        theirs = ours
    if writes == "postpone":  # new rows go to real buckets; a compaction moves the pending Avro files there
        table.write_arrow(_more_rows(feature))
        ours = _rows(table.refresh().to_arrow())
        assert _rows(pypaimon.read(warehouse, name)) == ours == sorted([*theirs, (2, "w2"), (9, "w9")])
        table.refresh().compact(full=True)
        ours = _rows(table.refresh().to_arrow())
        # pypaimon's pending rows (1 a, 2 b, 3 c) arrive after dyntable's write, as in Paimon's
        # postpone compaction (new sequence numbers above the bucket's): (2, 'b') wins over (2, 'w2')
        assert ours == [(1, "a"), (2, "b"), (3, "c"), (9, "w9")] == _rows(pypaimon.read(warehouse, name))
        assert all(e.bucket >= 0 for e in table.refresh().store.live_entries(table.store.snapshots.latest()))
        assert table.maintenance.remove_missing_files().paths == ()
        return
    if writes == "compacts":  # data evolution: one whole-row file per row-id range, the same rows
        table.compact(full=True)
        assert _rows(table.refresh().to_arrow()) == theirs == _rows(pypaimon.read(warehouse, name))
        before = [s["id"] for s in pypaimon.snapshots(warehouse, name)]
    if writes in ("refused", "appends", "compacts"):
        attempts = [lambda: table.maintenance.remove_missing_files()]
        if writes == "refused":
            attempts[:0] = [lambda: table.write_arrow(_more_rows(feature)), lambda: table.compact(full=True)]
        for attempt in attempts:
            with pytest.raises(UnsupportedTableError) as e:
                attempt()
            _refused(e, feature)
        assert [s["id"] for s in pypaimon.snapshots(warehouse, name)] == before
        assert _rows(pypaimon.read(warehouse, name)) == theirs
        return

    table.write_arrow(_more_rows(feature))
    table.compact(full=True)
    missing = table.maintenance.remove_missing_files()
    assert missing.paths == () and missing.snapshot_id is None  # every live file resolves and exists
    ours = _rows(table.refresh().to_arrow())
    assert _rows(pypaimon.read(warehouse, name)) == ours
    assert len(ours) > len(theirs) or feature in ("dv_merge_on_read", "deletion_vectors", "dynamic_bucket",
                                                  "dense_stats", "double_keys", "external_paths_pk")


def test_external_paths_written_as_file_uris_resolve(pypaimon: PyPaimon, tmp_path):
    """pypaimon writes ``_EXTERNAL_PATH`` as ``file:/abs/...``: dyntable reads the file there, and
    remove_missing_files keeps it (it once resolved the path against the working directory,
    called the live file missing and committed a snapshot without it)."""
    warehouse = tmp_path / "wh"
    pypaimon_writes(warehouse, "external_paths_append")
    table = open_catalog(str(warehouse)).get_table("db.external_paths_append")
    files = [f for s in table.new_scan().plan().splits for f in s.files]
    assert files and all(f.external_path and f.external_path.startswith("file:/") for f in files)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # a relative resolution would now look under tmp_path/file:
    try:
        report = table.maintenance.remove_missing_files(dry_run=False)
    finally:
        os.chdir(cwd)
    assert report.paths == () and report.snapshot_id is None
    assert len(table.refresh().to_arrow()) == 5 == len(pypaimon.read(warehouse, "db.external_paths_append"))
