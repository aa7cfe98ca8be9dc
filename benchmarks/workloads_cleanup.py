"""Cleanup workloads (no Spark): W8 orphan file cleanup against its I/O floor.

W8 (docs/benchmarks.md): a table of live files plus 1% orphans, protected by 50 tags and branches;
ours is ``Table.remove_orphan_files`` (listing, reachability over every snapshot, tag and branch,
deletion); the baseline is the floor any correct cleanup pays: list the table's files, decode
each manifest the anchors reference once, and unlink exactly the orphans (known in advance).
Both arms start from a fresh copy of the same table with a cold manifest cache; the copy is made
outside the timed region. The check: both deleted exactly the planted orphans.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pyarrow as pa

from benchmarks.harness import Arm, Context, Outcome, Result, compare, fmt_seconds
from benchmarks.workloads_engine import clear_manifest_cache
from engine import open_catalog
from engine.ops.reachability import FileKindRef, reachable_files

REFS = 50  # tags and branches protecting history
BRANCHES = 5


def build_w8_table(ctx: Context, commits: int) -> tuple[str, int]:
    """A table of ``commits`` one-file commits, 45 tags and 5 branches, 1% orphans; all two days old.

    Returns the warehouse and the number of planted orphans.
    """
    warehouse = ctx.path("w8-template")
    catalog = open_catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.t", schema)
    committer = t.new_commit()
    every = max(1, commits // REFS)
    refs = 0
    for i in range(commits):
        writer = t.new_writer()
        writer.write(pa.table({"id": [i], "v": [f"v{i}"]}, schema=schema))
        committer.commit(writer.prepare_commit())
        if (i + 1) % every == 0 and refs < REFS:
            if refs < REFS - BRANCHES:
                t.refs.tags.create(f"tag{refs}")
            else:
                t.refs.branches.create(f"br{refs}", from_snapshot=t.latest_snapshot().id)
            refs += 1
    bucket = t.store.paths.bucket_dir("", 0)
    orphans = max(1, commits // 100)
    for i in range(orphans):
        Path(bucket, f"data-orphan-{i}.parquet").write_bytes(b"x" * 2048)
    when = time.time() - 2 * 86_400
    for d, _, files in os.walk(t.path):
        for name in files:
            os.utime(os.path.join(d, name), (when, when))
    return warehouse, orphans


def run_w8(ctx: Context) -> list[Result]:
    """Orphan cleanup vs listing + one read of the live manifests + unlinking exactly the orphans."""
    commits = ctx.size.history_commits
    started = time.perf_counter()
    template, orphans = build_w8_table(ctx, commits)
    build_s = time.perf_counter() - started
    root_of = lambda wh: os.path.join(wh, "db.db", "t")  # noqa: E731
    template_table = open_catalog(template).get_table("db.t")
    reach = reachable_files(template_table.store.io, template_table.path)
    manifests = sorted(os.path.basename(p) for p in reach.paths(FileKindRef.MANIFEST))
    orphan_names = sorted(f"data-orphan-{i}.parquet" for i in range(orphans))
    state: dict[str, str] = {}

    def fresh(key: str) -> None:
        target = ctx.path(f"w8-{key}")
        shutil.rmtree(target)
        shutil.copytree(template, target)
        state[key] = target
        clear_manifest_cache()

    def ours() -> Outcome:
        t = open_catalog(state["ours"]).get_table("db.t")
        return Outcome(t.maintenance.remove_orphan_files().count)

    def baseline() -> Outcome:
        t = open_catalog(state["base"]).get_table("db.t")
        io, ms = t.store.io, t.store.manifests
        listed = io.list_files_recursive(root_of(state["base"]))
        for name in manifests:
            ms.read_entries(name)
        bucket = t.store.paths.bucket_dir("", 0)
        for name in orphan_names:
            io.delete(os.path.join(bucket, name))
        return Outcome(len(orphan_names) if listed else 0)

    result = compare(
        "W8",
        f"orphan cleanup, {commits:,} live files + {orphans} orphans, {REFS} tags/branches",
        Arm(run=ours, setup=lambda: fresh("ours")),
        Arm(run=baseline, setup=lambda: fresh("base")),
        pairs=ctx.pairs,
        target=">= 0.67",
    )
    result.extra["manifests"] = len(manifests)
    result.extra["referenced files"] = len(reach.files)
    result.extra["build"] = fmt_seconds(build_s)
    return [result]
