"""``t$maintenance_log``: the table's maintenance log (``engine.ops.maintenance_log``) as rows.

One job: lay the stored run records out as one row each, oldest first. The log covers the whole
table (every branch; the ``branch`` column tells which). ``started_at`` is the run's start (true
epoch milliseconds) shown as a UTC wall-clock value, like the other system tables' commit times;
``details`` is the record's procedure-specific counters as a compact JSON object.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pyarrow as pa

from engine.ops.maintenance_log import read_records
from engine.system_tables.columns import build_table

if TYPE_CHECKING:
    from engine.store import FileStore


def read_maintenance_log(store: FileStore) -> pa.Table:
    records = read_records(store.io, store.paths.root)
    return build_table(
        "maintenance_log",
        {
            "procedure": [r.procedure for r in records],
            "trigger": [r.trigger for r in records],
            "branch": [r.branch for r in records],
            "started_at": [r.started_at_ms for r in records],
            "duration_ms": [r.duration_ms for r in records],
            "dry_run": [bool(r.dry_run) for r in records],
            "deleted_files": [r.deleted_files for r in records],
            "deleted_bytes": [r.deleted_bytes for r in records],
            "details": [json.dumps(r.details, sort_keys=True, separators=(",", ":")) for r in records],
            "error": [r.error for r in records],
        },
    )
