"""Round trips through pypaimon alone, proving the harness (driver + venv) works.

These tests only exercise pypaimon via ``PyPaimon``; dyntable-vs-pypaimon interop tests build on
the same fixture elsewhere. They skip (with the reason) when no pypaimon venv is available.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from tests.compat.harness import DRIVER, ENV_PYTHON, PyPaimon, PyPaimonError, locate_venv

pytestmark = pytest.mark.compat

APPEND_SCHEMA = pa.schema([
    pa.field("id", pa.int32()),
    pa.field("name", pa.string()),
    pa.field("dt", pa.string()),
])

PK_SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("k", pa.int64(), nullable=False),
    pa.field("v", pa.string()),
    pa.field("n", pa.int32()),
])


def _rows(table: pa.Table, *keys: str) -> list[dict]:
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


def _data_dirs(table_root: Path) -> set[str]:
    return {str(p.parent.relative_to(table_root)) for p in table_root.rglob("data-*.parquet")}


def test_append_partitioned_two_commits_then_partition_overwrite(pypaimon: PyPaimon, tmp_path: Path):
    wh = tmp_path / "wh"
    pypaimon.create_table(wh, "db.events", APPEND_SCHEMA, partition_keys=["dt"])

    s1 = pypaimon.write(wh, "db.events", pa.table(
        {"id": [1, 2, 3], "name": ["a", "b", "c"], "dt": ["2024-01-01", "2024-01-02", "2024-01-01"]},
        schema=APPEND_SCHEMA))
    s2 = pypaimon.write(wh, "db.events", pa.table(
        {"id": [4], "name": ["d"], "dt": ["2024-01-02"]}, schema=APPEND_SCHEMA))
    assert (s1, s2) == (1, 2)
    assert _rows(pypaimon.read(wh, "db.events"), "id") == [
        {"id": 1, "name": "a", "dt": "2024-01-01"},
        {"id": 2, "name": "b", "dt": "2024-01-02"},
        {"id": 3, "name": "c", "dt": "2024-01-01"},
        {"id": 4, "name": "d", "dt": "2024-01-02"},
    ]

    s3 = pypaimon.write(wh, "db.events", pa.table(
        {"id": [10], "name": ["z"], "dt": ["2024-01-01"]}, schema=APPEND_SCHEMA),
        overwrite={"dt": "2024-01-01"})
    assert s3 == 3
    assert _rows(pypaimon.read(wh, "db.events"), "id") == [
        {"id": 2, "name": "b", "dt": "2024-01-02"},
        {"id": 4, "name": "d", "dt": "2024-01-02"},
        {"id": 10, "name": "z", "dt": "2024-01-01"},
    ]
    # time travel still sees the pre-overwrite state
    assert [r["id"] for r in _rows(pypaimon.read(wh, "db.events", snapshot_id=2), "id")] == [1, 2, 3, 4]

    snaps = pypaimon.snapshots(wh, "db.events")
    assert [(s["id"], s["commit_kind"]) for s in snaps] == [(1, "APPEND"), (2, "APPEND"), (3, "OVERWRITE")]
    assert [s["total_record_count"] for s in snaps] == [3, 4, 3]
    assert [s["delta_record_count"] for s in snaps] == [3, 1, -1]  # +1 added, -2 deleted

    root = wh / "db.db" / "events"
    assert _data_dirs(root) == {"dt=2024-01-01/bucket-0", "dt=2024-01-02/bucket-0"}
    assert (root / "snapshot" / "LATEST").read_text() == "3"


def test_full_overwrite_replaces_every_partition(pypaimon: PyPaimon, tmp_path: Path):
    wh = tmp_path / "wh"
    pypaimon.create_table(wh, "db.t", APPEND_SCHEMA, partition_keys=["dt"])
    pypaimon.write(wh, "db.t", pa.table(
        {"id": [1, 2], "name": ["a", "b"], "dt": ["x", "y"]}, schema=APPEND_SCHEMA))
    pypaimon.write(wh, "db.t", pa.table(
        {"id": [9], "name": ["n"], "dt": ["z"]}, schema=APPEND_SCHEMA), overwrite=True)
    assert pypaimon.read(wh, "db.t").to_pylist() == [{"id": 9, "name": "n", "dt": "z"}]


def test_static_overwrite_rejects_rows_of_other_partitions(pypaimon: PyPaimon, tmp_path: Path):
    wh = tmp_path / "wh"
    pypaimon.create_table(wh, "db.t", APPEND_SCHEMA, partition_keys=["dt"])
    with pytest.raises(PyPaimonError, match="does not belong"):
        pypaimon.write(wh, "db.t", pa.table({"id": [1], "name": ["a"], "dt": ["y"]}, schema=APPEND_SCHEMA),
                       overwrite={"dt": "x"})


def test_pk_fixed_buckets_updates_merge(pypaimon: PyPaimon, tmp_path: Path):
    wh = tmp_path / "wh"
    pypaimon.create_table(wh, "db.pk", PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k"],
                          options={"bucket": "2"})
    schema = pypaimon.schema(wh, "db.pk")
    assert schema["bucket_mode"] == "HASH_FIXED"
    assert schema["options"] == {"bucket": "2"}
    assert [f["type"] for f in schema["fields"]] == ["STRING NOT NULL", "BIGINT NOT NULL", "STRING", "INT"]

    pypaimon.write(wh, "db.pk", pa.table(
        {"dt": ["a", "a", "b"], "k": [1, 2, 3], "v": ["x", "y", "z"], "n": [1, 2, 3]}, schema=PK_SCHEMA))
    pypaimon.write(wh, "db.pk", pa.table(
        {"dt": ["a", "b", "b"], "k": [1, 3, 4], "v": ["X", "Z", "w"], "n": [None, 30, 4]}, schema=PK_SCHEMA))

    assert _rows(pypaimon.read(wh, "db.pk"), "dt", "k") == [
        {"dt": "a", "k": 1, "v": "X", "n": None},  # deduplicate: the whole last row wins
        {"dt": "a", "k": 2, "v": "y", "n": 2},
        {"dt": "b", "k": 3, "v": "Z", "n": 30},
        {"dt": "b", "k": 4, "v": "w", "n": 4},
    ]
    assert _rows(pypaimon.read(wh, "db.pk", snapshot_id=1), "dt", "k")[0] == \
        {"dt": "a", "k": 1, "v": "x", "n": 1}
    projected = pypaimon.read(wh, "db.pk", projection=["v", "k"], filter={"dt": "b"})
    assert projected.column_names == ["v", "k"]
    assert _rows(projected, "k") == [{"v": "Z", "k": 3}, {"v": "w", "k": 4}]

    snaps = pypaimon.snapshots(wh, "db.pk")
    assert [(s["commit_kind"], s["total_record_count"], s["delta_record_count"]) for s in snaps] == \
        [("APPEND", 3, 3), ("APPEND", 6, 3)]  # record counts are unmerged file rows

    # every file is a level-0 file in bucket 0 or 1 with _TOTAL_BUCKETS = 2
    manifest = pypaimon.manifest(wh, "db.pk")
    entries = [e for lst in manifest["lists"].values() for m in lst["manifests"] for e in m["entries"]]
    assert {(e["_TOTAL_BUCKETS"], e["_FILE"]["_LEVEL"]) for e in entries} == {(2, 0)}
    assert {e["_BUCKET"] for e in entries} <= {0, 1}


def test_pk_deletes_through_rowkind_field(pypaimon: PyPaimon, tmp_path: Path):
    wh = tmp_path / "wh"
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])
    pypaimon.create_table(wh, "db.d", schema, primary_keys=["k"],
                          options={"bucket": "1", "rowkind.field": "op"})
    pypaimon.write(wh, "db.d", pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I"] * 3},
                                        schema=schema))
    pypaimon.write(wh, "db.d", pa.table({"k": [2, 3], "v": [None, "C"], "op": ["-D", "+U"]},
                                        schema=schema))
    assert _rows(pypaimon.read(wh, "db.d"), "k") == [
        {"k": 1, "v": "a", "op": "+I"}, {"k": 3, "v": "C", "op": "+U"}]

    changes = pypaimon.read_incremental(wh, "db.d", 1, 2)
    assert changes.column_names[0] == "_row_kind"
    assert _rows(changes, "k") == [
        {"_row_kind": "-D", "k": 2, "v": None, "op": "-D"},
        {"_row_kind": "+U", "k": 3, "v": "C", "op": "+U"},
    ]


def test_read_casts_to_requested_schema(pypaimon: PyPaimon, tmp_path: Path):
    wh = tmp_path / "wh"
    pypaimon.create_table(wh, "db.t", APPEND_SCHEMA)
    # large_string / int64 input is cast to the table's types by the driver before writing
    pypaimon.write(wh, "db.t", pa.table({
        "id": pa.array([1], pa.int64()), "name": pa.array(["a"], pa.large_string()),
        "dt": pa.array(["x"], pa.large_string())}))
    plain = pypaimon.read(wh, "db.t")
    assert plain.schema == APPEND_SCHEMA
    wanted = pa.schema([("name", pa.large_string()), ("id", pa.int64())])
    assert pypaimon.read(wh, "db.t", schema=wanted).schema == wanted


def test_errors_carry_the_pypaimon_exception(pypaimon: PyPaimon, tmp_path: Path):
    with pytest.raises(PyPaimonError) as info:
        pypaimon.read(tmp_path / "wh", "db.missing")
    assert info.value.error_type == "TableNotExistException"
    with pytest.raises(PyPaimonError, match="unknown request keys"):
        pypaimon.call("snapshots", warehouse=str(tmp_path), table="db.t", bogus=1)
    # the server survives errors
    assert pypaimon.version()["pypaimon"] == "2.1.0"


def test_one_shot_cli_reports_errors_as_json_on_stderr(pypaimon: PyPaimon, tmp_path: Path):
    proc = subprocess.run([pypaimon.python, str(DRIVER), "snapshots"],
                          input=json.dumps({"warehouse": str(tmp_path), "table": "db.none"}),
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1
    err = json.loads(proc.stderr.strip().splitlines()[-1])
    assert err["error"] == "TableNotExistException"
    assert "db.none" in err["message"]


def test_locate_venv_honours_env_override(monkeypatch: pytest.MonkeyPatch, pypaimon: PyPaimon):
    monkeypatch.setenv(ENV_PYTHON, "/nonexistent/python")
    python, reason = locate_venv()
    assert python is None and ENV_PYTHON in reason
    monkeypatch.setenv(ENV_PYTHON, pypaimon.python)
    assert locate_venv()[0] == pypaimon.python
    assert os.access(pypaimon.python, os.X_OK)


def test_handle_is_reusable_after_close(pypaimon: PyPaimon, tmp_path: Path):
    handle = PyPaimon(pypaimon.python)
    try:
        handle.create_table(tmp_path / "wh", "db.t", APPEND_SCHEMA)
        handle.close()
        handle.write(tmp_path / "wh", "db.t", pa.table(
            {"id": [1], "name": ["a"], "dt": ["x"]}, schema=APPEND_SCHEMA))
        assert handle.read(tmp_path / "wh", "db.t").num_rows == 1
    finally:
        handle.close()


def test_create_from_paimon_type_strings_assigns_ids_depth_first(pypaimon: PyPaimon, tmp_path: Path):
    stored = pypaimon.create_table_typed(tmp_path / "wh", "db.typed", [
        ("a", "INT NOT NULL"),
        ("b", {"type": "ROW", "fields": [{"name": "x", "type": "DECIMAL(10, 2)"},
                                         {"name": "y", "type": "TIMESTAMP(3)"}]}),
        ("c", "DATE"),
    ], primary_keys=("a",), options={"bucket": "1"})
    assert [(f["id"], f["name"]) for f in stored["fields"]] == [(0, "a"), (1, "b"), (4, "c")]
    assert [(f["id"], f["name"]) for f in stored["fields"][1]["type"]["fields"]] == [(2, "x"), (3, "y")]
    assert "b: struct<x: decimal128(10, 2), y: timestamp[ms]>" in stored["arrow_schema"]
