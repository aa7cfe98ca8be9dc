"""Data-file index workloads (no Spark): what a bloom-filter / bitmap index buys and costs.

FI1: a point lookup (``id = x``) on an append table of 20 files whose ids are shuffled across the
files (min/max statistics keep every file); ours has ``file-index.bloom-filter.columns = id``
(embedded, sized to the file), the baseline is the same rows without an index. Ratio = baseline
time / ours (the skipped files are the gain); both must return the same row.

FI2: writing the table with a bloom filter on ``id`` and a bitmap on a 16-value column against
writing it without indexes: the cost of building the indexes (ratio = baseline / ours, ~1 means
free). Both must hold the same rows.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from benchmarks.harness import Arm, Context, Outcome, Result, compare
from engine import open_catalog
from engine import predicate as P

FILES = 20
SCHEMA = pa.schema([("id", pa.int64()), ("kind", pa.int32()), ("payload", pa.string())])


def _batches(rows: int) -> list[pa.Table]:
    rng = np.random.default_rng(7)
    ids = rng.permutation(rows).astype(np.int64)
    per = max(1, rows // FILES)
    out = []
    for start in range(0, rows, per):
        chunk = ids[start : start + per]
        out.append(pa.table({"id": chunk, "kind": (chunk % 16).astype(np.int32),
                             "payload": pa.array(chunk.astype(str))}, schema=SCHEMA))
    return out


def _options(rows: int, indexed: bool) -> dict[str, str]:
    if not indexed:
        return {}
    items = str(max(1, rows // FILES))
    return {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": items,
            "file-index.bitmap.columns": "kind", "file-index.in-manifest-threshold": "16 mb"}


def _write(warehouse: str, name: str, batches: list[pa.Table], options: dict[str, str]) -> Outcome:
    catalog = open_catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table(name, SCHEMA, options=options)
    for b in batches:
        t.write_arrow(b)
    return Outcome(sum(b.num_rows for b in batches))


def run_fileindex(ctx: Context) -> list[Result]:
    rows = ctx.size.rows
    batches = _batches(rows)
    warehouse = ctx.path("fi")
    _write(warehouse, "db.plain", batches, _options(rows, False))
    _write(warehouse, "db.indexed", batches, _options(rows, True))
    catalog = open_catalog(warehouse)
    plain, indexed = catalog.get_table("db.plain"), catalog.get_table("db.indexed")
    target_id = int(batches[len(batches) // 2].column("id")[0].as_py())

    def lookup(table) -> Outcome:
        got = table.to_arrow(filter=P.equal("id", target_id))
        return Outcome(got.num_rows, tuple(got.column("payload").to_pylist()))

    fi1 = compare(
        "FI1", f"point lookup, {FILES} files of {rows:,} shuffled ids: bloom-filter index vs none",
        Arm(run=lambda: lookup(indexed)), Arm(run=lambda: lookup(plain)), pairs=ctx.pairs, target=">= 3",
    )
    fi1.extra["files read"] = sum(len(s.files) for s in indexed.new_scan().with_filter(
        P.equal("id", target_id)).plan().splits)
    counter = {"n": 0}

    def fresh_write(indexed_arm: bool) -> Outcome:
        counter["n"] += 1
        return _write(warehouse, f"db.w{counter['n']}", batches, _options(rows, indexed_arm))

    fi2 = compare(
        "FI2", f"append write of {rows:,} rows in {FILES} commits: bloom + bitmap indexes vs none",
        Arm(run=lambda: fresh_write(True)), Arm(run=lambda: fresh_write(False)), pairs=ctx.pairs,
        rows=rows, target=">= 0.7",
    )
    return [fi1, fi2]
