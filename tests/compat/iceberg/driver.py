"""Runs inside pyiceberg's own virtual environment (.ci/pyiceberg-venv.sh): reads an Iceberg table
from its metadata file and answers as JSON on stdout, the rows as an Arrow IPC file.

Usage: python driver.py REQUEST_JSON. The request: ``metadata`` (a ``v<N>.metadata.json`` path),
``out`` (a directory for the Arrow files), ``snapshots`` (the snapshot ids to read besides the
current one: Iceberg time travel), ``refs`` (tag names to read), ``filters`` (row filters in
pyiceberg's syntax, each read on its own), ``columns`` (a projection, all columns if absent),
``reader``: ``pyiceberg`` (the default) or ``polars`` — polars' native Iceberg scan, which plans
with pyiceberg and reads the Parquet files with its own reader, by Iceberg field id. Never
imported by the test suite.
"""

import json
import os
import sys

import pyarrow as pa
import pyarrow.ipc as ipc
from pyiceberg.table import StaticTable


def _save(table: pa.Table, path: str) -> None:
    with pa.OSFile(path, "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _polars_scan(table: StaticTable, snapshot_id: int | None, columns: list[str] | None) -> pa.Table:
    os.environ.setdefault("POLARS_ICEBERG_PLANNER", "pyiceberg")  # no polars_iceberg plugin here
    import polars as pl

    frame = pl.scan_iceberg(table, snapshot_id=snapshot_id, reader_override="native")
    if columns:
        frame = frame.select(columns)
    return frame.collect().to_arrow()


def main() -> None:
    req = json.loads(sys.argv[1])
    columns = req.get("columns")
    table = StaticTable.from_metadata(req["metadata"])
    meta = table.metadata
    out = {
        "current_snapshot_id": meta.current_snapshot_id,
        "snapshot_ids": [s.snapshot_id for s in meta.snapshots],
        "schema": json.loads(table.schema().model_dump_json()),
        "refs": {name: ref.snapshot_id for name, ref in meta.refs.items()},
        "files": {},
        "data_files": sorted(t.file.file_path for t in table.scan().plan_files()),
    }
    reads = [("current", None)] + [(str(s), s) for s in req.get("snapshots", [])]
    reads += [(f"ref:{r}", meta.refs[r].snapshot_id) for r in req.get("refs", [])]
    for name, snapshot_id in reads:
        path = f"{req['out']}/{name.replace(':', '_')}.arrow"
        if req.get("reader") == "polars":
            _save(_polars_scan(table, snapshot_id, columns), path)
        else:
            fields = tuple(columns) if columns else ("*",)
            _save(table.scan(selected_fields=fields, snapshot_id=snapshot_id).to_arrow(), path)
        out["files"][name] = path
    for i, text in enumerate(req.get("filters", [])):  # pruned by partition summaries and column bounds
        path = f"{req['out']}/filter_{i}.arrow"
        _save(table.scan(row_filter=text).to_arrow(), path)
        out["files"][f"filter:{i}"] = path
    print(json.dumps(out))


if __name__ == "__main__":
    main()
