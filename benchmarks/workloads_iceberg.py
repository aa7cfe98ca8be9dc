"""W6i: the cost of Iceberg-compatible metadata on a commit (``metadata.iceberg.storage``).

The same prepared 1-file append commits as W6, on a table that publishes Iceberg metadata after
every snapshot (engine.iceberg: a manifest, a manifest list, ``v<N>.metadata.json`` and the
version hint, the previous manifests reused) against a table that does not. Both tables start
from 10 snapshots. ``ratio = plain / with Iceberg``: 0.5 means a commit costs twice as much.
The check: both arms made as many snapshots, and the Iceberg table's current metadata version is
its latest snapshot with every live data file listed once.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.harness import CheckFailed, Context, Outcome, Result, compare, fmt_seconds
from benchmarks.workloads_engine import build_snapshots, commits_arm
from engine import Table, open_catalog

ICEBERG = {"metadata.iceberg.storage": "table-location"}


def _check_metadata(table: Table) -> None:
    """The latest version names the latest snapshot and exactly the live files."""
    from engine.iceberg.avro import read_container

    table = table.refresh()
    latest = table.latest_snapshot()
    assert latest is not None
    meta_dir = Path(table.path) / "metadata"
    meta = json.loads((meta_dir / f"v{latest.id}.metadata.json").read_text())
    if meta["current-snapshot-id"] != latest.id:
        raise CheckFailed(f"Iceberg metadata names snapshot {meta['current-snapshot-id']}, not {latest.id}")
    current = next(s for s in meta["snapshots"] if s["snapshot-id"] == latest.id)
    files: list[str] = []
    for m in read_container(Path(current["manifest-list"]).read_bytes(), "list")[0]:
        entries = read_container(Path(m["manifest_path"]).read_bytes(), "manifest")[0]
        files += [e["data_file"]["file_path"] for e in entries if e["status"] != 2]
    live = len(table.store.live_entries(latest))
    if len(files) != live or len(set(files)) != live:
        raise CheckFailed(f"Iceberg lists {len(files)} files ({len(set(files))} distinct), Paimon {live}")


def run_w6i(ctx: Context) -> list[Result]:
    k = ctx.size.commits_per_timing
    catalog = open_catalog(ctx.path("w6i"))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64())])
    plain = catalog.create_table("db.plain", schema)
    iceberg = catalog.create_table("db.iceberg", schema, options=ICEBERG)
    for table in (plain, iceberg):
        build_snapshots(table, 10, 60.0)

    def check(ours: Outcome, baseline: Outcome) -> None:
        if ours.rows != baseline.rows:
            raise CheckFailed(f"{ours.rows} snapshots with Iceberg metadata, {baseline.rows} without")
        _check_metadata(iceberg)

    result = compare(
        "W6i",
        f"commit 1-file append x{k} with Iceberg metadata",
        commits_arm(iceberg, k),
        commits_arm(plain, k),
        pairs=ctx.pairs,
        target=">= 0.5",
        check=check,
    )
    if result.ours_times:
        result.extra["with Iceberg per commit"] = fmt_seconds(float(np.median(result.ours_times)) / k)
        result.extra["without per commit"] = fmt_seconds(float(np.median(result.baseline_times)) / k)
    result.notes.append("both tables start at 10 snapshots and grow by the commits timed (no expiration)")
    return [result]
