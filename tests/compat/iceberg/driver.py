"""Runs inside pyiceberg's own virtual environment (.ci/pyiceberg-venv.sh): reads an Iceberg table
from its metadata file and answers as JSON on stdout, the rows as an Arrow IPC file.

Usage: python driver.py REQUEST_JSON. The request: ``metadata`` (a ``v<N>.metadata.json`` path),
``out`` (a directory for the Arrow files), ``snapshots`` (the snapshot ids to read besides the
current one: Iceberg time travel), ``refs`` (tag names to read), ``filters`` (row filters in
pyiceberg's syntax, each read on its own). Never imported by the test suite.
"""

import json
import sys

import pyarrow as pa
import pyarrow.ipc as ipc
from pyiceberg.table import StaticTable


def _save(table: pa.Table, path: str) -> None:
    with pa.OSFile(path, "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def main() -> None:
    req = json.loads(sys.argv[1])
    table = StaticTable.from_metadata(req["metadata"])
    meta = table.metadata
    out = {
        "current_snapshot_id": meta.current_snapshot_id,
        "snapshot_ids": [s.snapshot_id for s in meta.snapshots],
        "schema": json.loads(table.schema().model_dump_json()),
        "refs": {name: ref.snapshot_id for name, ref in meta.refs.items()},
        "files": {},
    }
    reads = [("current", None)] + [(str(s), s) for s in req.get("snapshots", [])]
    reads += [(f"ref:{r}", meta.refs[r].snapshot_id) for r in req.get("refs", [])]
    for name, snapshot_id in reads:
        scan = table.scan() if snapshot_id is None else table.scan(snapshot_id=snapshot_id)
        path = f"{req['out']}/{name.replace(':', '_')}.arrow"
        _save(scan.to_arrow(), path)
        out["files"][name] = path
        if snapshot_id is None:
            out["data_files"] = sorted(t.file.file_path for t in scan.plan_files())
    for i, text in enumerate(req.get("filters", [])):  # pruned by partition summaries and column bounds
        path = f"{req['out']}/filter_{i}.arrow"
        _save(table.scan(row_filter=text).to_arrow(), path)
        out["files"][f"filter:{i}"] = path
    print(json.dumps(out))


if __name__ == "__main__":
    main()
