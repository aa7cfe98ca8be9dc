"""Maintenance workloads (engine only, no Spark): W7 snapshot expiration.

W7: a table of 1,001 snapshots (``small``; 51 at ``tiny``), each a commit replacing the 10 live
data files by 10 new ones, so expiring the oldest 1,000 snapshots frees 10,000 data files plus
their manifests and manifest lists. Ours: ``Table.maintenance.expire_snapshots(retain_max=1)`` on a fresh
copy of the table (every anchor read, reachability of the expired and kept snapshots, parallel
deletes, EARLIEST hint, maintenance-log record). Baseline: the least any expiration must do on
another copy — read each snapshot, each manifest list and each distinct manifest once, then
unlink exactly the files that must go (computed before timing) and the snapshot files. Both
results are checked against the files snapshot 1,001 needs, computed independently. The data
files are 1-byte stand-ins (nobody reads them; only their metadata and their unlinking count).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import uuid
from pathlib import Path

import pyarrow as pa

from benchmarks.harness import Arm, Context, Outcome, Result, compare
from engine import Table, open_catalog
from engine.meta.manifest_store import ManifestStore
from engine.meta.snapshot import Snapshot

FILES_PER_COMMIT = 10


def _remaining(root: str) -> Outcome:
    """The files left under the table (not the maintenance log), as a count and a name hash."""
    names = []
    for dirpath, _dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel.split(os.sep)[0] == ".dyntable":
            continue
        names.extend(os.path.join(rel, f) for f in files)
    names.sort()
    return Outcome(len(names), hashlib.sha1("\n".join(names).encode()).hexdigest())


def build_history(ctx: Context, snapshots: int) -> Table:
    catalog = open_catalog(ctx.path("w7"))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table("db.hist", schema, options={"snapshot.num-retained.min": "1"})
    writer = table.new_writer()
    writer.write(pa.table({"id": [1]}, schema=schema))
    template = writer.prepare_commit()[0]
    stand_in = template.new_files[0]
    bucket_dir = table.store.paths.bucket_dir("", template.bucket)

    def new_files() -> tuple:  # type: ignore[type-arg]
        out = []
        for _ in range(FILES_PER_COMMIT):
            meta = dataclasses.replace(stand_in, file_name=f"data-{uuid.uuid4()}-0.parquet")
            with open(os.path.join(bucket_dir, meta.file_name), "wb") as f:
                f.write(b"x")
            out.append(meta)
        return tuple(out)

    os.unlink(os.path.join(bucket_dir, stand_in.file_name))
    committer = table.new_commit()
    live = new_files()
    committer.commit([dataclasses.replace(template, new_files=live)])
    for _ in range(snapshots - 1):
        after = new_files()
        committer.commit(
            [dataclasses.replace(template, new_files=(), compact_before=live, compact_after=after)]
        )
        live = after
    return table


def _needed_by_latest(table: Table) -> set[str]:
    """Files the newest snapshot needs (its lists, manifests, live data), computed directly."""
    store = table.store
    head = store.snapshots.latest()
    assert head is not None
    out = {store.paths.snapshot_file(head.id)}
    for name in (head.base_manifest_list, head.delta_manifest_list):
        out.add(store.paths.manifest_file(name))
        for meta in store.manifests.read_list(name):
            out.add(store.paths.manifest_file(meta.file_name))
    for split in table.plan().splits:
        out.update(store.paths.data_file("", split.bucket, f.file_name) for f in split.files)
    return out


def run_w7(ctx: Context) -> list[Result]:
    snapshots = ctx.size.expiry_snapshots
    template = build_history(ctx, snapshots)
    root = template.path
    needed = {os.path.relpath(p, root) for p in _needed_by_latest(template)}
    everything = {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}
    keep_always = {
        p
        for p in everything
        if p.startswith(("schema/", "snapshot/")) and not p.startswith("snapshot/snapshot-")
    }
    doomed_rel = sorted(p for p in everything - needed - keep_always if not p.startswith("snapshot/"))
    state: dict[str, object] = {}

    def fresh_copy() -> str:
        target = Path(ctx.path("w7-copy")) / "hist"
        shutil.copytree(root, target)
        return str(target)

    def ours_setup() -> None:
        from benchmarks.workloads_engine import clear_manifest_cache

        clear_manifest_cache()
        path = fresh_copy()
        state["ours"] = Table(
            template.catalog,
            template.identifier,
            template.store.io,
            type(template.store.paths)(path),
            template.store.schema,
        )

    def ours_run() -> Outcome:
        table = state["ours"]
        assert isinstance(table, Table)
        report = table.maintenance.expire_snapshots(retain_max=1, max_deletes=snapshots, older_than=2**62)
        state["freed"] = report.count
        return _remaining(table.path)

    def base_setup() -> None:
        from benchmarks.workloads_engine import clear_manifest_cache

        clear_manifest_cache()
        state["base"] = fresh_copy()

    def base_run() -> Outcome:
        path = str(state["base"])
        paths = type(template.store.paths)(path)
        manifests = ManifestStore(template.store.io, paths)
        seen_lists: set[str] = set()
        seen: set[str] = set()
        for sid in range(1, snapshots):
            with open(paths.snapshot_file(sid), "rb") as f:
                snap = Snapshot.from_json(f.read())
            for name in (snap.base_manifest_list, snap.delta_manifest_list):
                if name in seen_lists:
                    continue
                seen_lists.add(name)
                for meta in manifests.read_list(name):
                    if meta.file_name not in seen:
                        seen.add(meta.file_name)
                        manifests.read_entries(meta.file_name)
        for rel in doomed_rel:
            os.unlink(os.path.join(path, rel))
        for sid in range(1, snapshots):
            os.unlink(paths.snapshot_file(sid))
        with open(os.path.join(path, "snapshot", "EARLIEST"), "w") as f:
            f.write(str(snapshots))
        return _remaining(path)

    result = compare(
        "W7",
        f"expire {snapshots - 1:,} snapshots freeing {len(doomed_rel):,} files",
        Arm(run=ours_run, setup=ours_setup),
        Arm(run=base_run, setup=base_setup),
        pairs=ctx.pairs,
        target=">= 0.5",
    )
    data_files = sum(1 for p in doomed_rel if p.startswith("bucket-"))
    result.extra["data files freed"] = data_files
    result.extra["files freed"] = len(doomed_rel)
    if state.get("freed") != len(doomed_rel):
        result.check = f"FAILED: expiration deleted {state.get('freed')} files, {len(doomed_rel)} had to go"
    return [result]
