"""M: metadata at scale — system tables, partition-pruned planning and manifest counts of a table
with many live files (issue 25).

The table is a partitioned append table of real (one-row) Parquet files: ``metadata_files`` files
over ``metadata_partitions`` partitions, committed in blocks of consecutive partitions (one file
each) as a daily or hourly ingest would, so a manifest's partition statistics cover a narrow
range until merging combines manifests. Measured, each as the
fastest of ``pairs`` runs with a cold manifest cache:

* M1: reading ``$files``, ``$snapshots`` and ``$partitions`` through the engine (target < 2 s at
  100,000 files: a user's query of a system table stays interactive), with the manifests decoded
  cold; ``decode`` is the cold manifest decoding alone into Arrow columns plus the live-file
  merge (the floor the system tables pay before rendering), ``decode records`` the same into one
  record per live file (what an unfiltered plan pays), and ``fastavro dicts`` / ``arrow columns``
  the raw decoding of the manifest bytes alone (the ceiling of a fastavro-based reader, and the
  Arrow decoder's);
* M1w: the same tables with the manifests already cached (a second query of the same snapshot):
  the rendering cost alone;
* M2: planning with an equality filter on the partition column, and how many manifests the plan
  opened out of the snapshot's total (pruning by the manifests' partition statistics);
* M3: the number of data manifests the table's own merging keeps, and after ``compact_manifest``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from benchmarks.harness import Context, Result, fmt_seconds
from engine import Table, open_catalog
from engine.meta import manifest_arrow
from engine.meta.manifest_store import clear_caches
from engine.scan import predicate as P
from engine.scan.planner import TableScan

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


BLOCK = 100  # partitions (= files) per commit


def build(ctx: Context) -> Table:
    """The table: each commit adds one file to each of the next BLOCK partitions, cycling."""
    files, partitions = ctx.size.metadata_files, ctx.size.metadata_partitions
    catalog = open_catalog(ctx.path("metadata"))
    catalog.create_database("db")
    table = catalog.create_table("db.wide", SCHEMA, partition_keys=["dt"])
    committer = table.new_commit()
    block = max(1, min(BLOCK, partitions // 5))  # at least five blocks: pruning can show
    for commit in range(-(-files // block)):
        first = commit * block
        names = pa.array([f"p{(first + i) % partitions:05d}" for i in range(block)])
        ids = pa.array(range(first, first + block), pa.int64())
        writer = table.new_writer()
        writer.write(pa.table({"dt": names, "id": ids, "v": pa.compute.cast(ids, pa.string())}))
        committer.commit(writer.prepare_commit())
    return table.refresh()


def _fastest(pairs: int, run: Callable[[], Any], cold: bool = True) -> tuple[float, Any]:
    best, out = float("inf"), None
    if not cold:
        run()  # fills the manifest cache
    for _ in range(pairs):
        if cold:
            clear_caches()
        start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - start)
    return best, out


def _counting_manifest_reads(table: Table) -> tuple[list[str], Callable[[], None]]:
    """Record every manifest file any store opens, as records or as Arrow columns (the plan may
    use a store of its own snapshot's schema), until the returned undo is called."""
    cls = type(table.store.manifests)
    opened: list[str] = []
    originals = {m: getattr(cls, m) for m in ("read_entries", "read_entry_table")}

    def counting(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, file_name: str, *args: Any, **kwargs: Any) -> Any:
            opened.append(file_name)
            return original(self, file_name, *args, **kwargs)

        return wrapper

    for name, original in originals.items():
        setattr(cls, name, counting(original))

    def undo() -> None:
        for name, original in originals.items():
            setattr(cls, name, original)

    return opened, undo


def _decode_ceiling(table: Table, snapshot: Any, pairs: int) -> dict[str, str]:
    """The raw decoding floor of the snapshot's manifests, bytes already in memory: fastavro into
    dicts with no further work (what any fastavro-based reader pays), and the Arrow decoding the
    engine uses (polars when installed)."""
    import io

    import fastavro

    store = table.store
    datas = [
        store.io.read_bytes(store.paths.manifest_file(m.file_name))
        for m in store.manifests.data_manifests(snapshot)
    ]

    def dicts() -> int:
        return sum(1 for d in datas for _ in fastavro.reader(io.BytesIO(d)))

    def columns() -> int:
        return sum(manifest_arrow.read_manifest_table(d).num_rows for d in datas)

    out = {}
    for label, run in (("fastavro dicts", dicts), ("arrow columns", columns)):
        seconds, _ = _fastest(pairs, run, cold=False)
        out[label] = fmt_seconds(seconds)
    out["arrow decoder"] = "polars" if manifest_arrow.USE_POLARS else "fastavro"
    return out


def run_metadata(ctx: Context) -> list[Result]:
    from engine.ops.compact_manifest import compact_manifests
    from engine.system_tables import read_system_table

    start = time.perf_counter()
    table = build(ctx)
    built = time.perf_counter() - start
    files = ctx.size.metadata_files
    results = []

    m1 = Result("M1", f"system tables of {files:,} files", target="< 2 s each")
    for name in ("files", "snapshots", "partitions"):
        seconds, rows = _fastest(ctx.pairs, lambda name=name: read_system_table(table, name))
        m1.extra[f"${name}"] = fmt_seconds(seconds)
        m1.extra[f"${name} rows"] = rows.num_rows
        if name == "files" and rows.num_rows != files:
            m1.check = f"$files has {rows.num_rows:,} rows, expected {files:,}"
    snapshot = table.latest_snapshot()
    seconds, _ = _fastest(ctx.pairs, lambda: TableScan(table.store).read_entry_table(snapshot))
    m1.extra["decode"] = fmt_seconds(seconds)
    seconds, _ = _fastest(ctx.pairs, lambda: TableScan(table.store).read_entries(snapshot))
    m1.extra["decode records"] = fmt_seconds(seconds)
    m1.extra.update(_decode_ceiling(table, snapshot, ctx.pairs))
    m1.notes.append(f"table built in {fmt_seconds(built)} ({files:,} one-row Parquet files)")
    results.append(m1)

    m1w = Result("M1w", f"system tables of {files:,} files, manifests cached", target="< 2 s each")
    for name in ("files", "snapshots", "partitions"):
        seconds, _ = _fastest(ctx.pairs, lambda name=name: read_system_table(table, name), cold=False)
        m1w.extra[f"${name}"] = fmt_seconds(seconds)
    results.append(m1w)

    wanted = "p00007"
    total = len(table.store.manifests.data_manifests(snapshot))
    opened, undo = _counting_manifest_reads(table)
    try:
        seconds, plan = _fastest(ctx.pairs, lambda: table.plan(filter=P.equal("dt", wanted)))
    finally:
        undo()
    per_run = len(opened) // ctx.pairs
    m2 = Result("M2", "plan with a partition filter", target="opens only manifests that can match")
    m2.extra["plan"] = fmt_seconds(seconds)
    m2.extra["manifests opened"] = per_run
    m2.extra["manifests in snapshot"] = total
    got = sum(f.row_count for s in plan.splits for f in s.files)
    expected = files // ctx.size.metadata_partitions
    if got != expected:
        m2.check = f"the plan holds {got} rows of partition {wanted}, expected {expected}"
    results.append(m2)

    compacted = compact_manifests(table.store)
    m3 = Result("M3", "data manifests kept by merging", target="bounded, not growing with commits")
    m3.extra["commits"] = snapshot.id
    m3.extra["manifests"] = compacted.manifests_before
    m3.extra["after compact_manifest"] = compacted.manifests_after
    results.append(m3)
    return results


__all__ = ["build", "run_metadata"]
