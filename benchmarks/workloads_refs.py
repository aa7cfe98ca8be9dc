"""Tag and branch workloads (engine only): create tag, delete tag and fast-forward on a long history.

One job: time the metadata operations of issue 11 on a table with ``history_commits`` snapshots
(1,000 at ``small``) and 10 files per commit (10K live files), each against the baseline
"reading the same metadata once": a cold read of the snapshot's manifest list and every manifest
it names (the live file set a tag keeps, or, for fast-forward, main's and the branch's heads).

The table is built from metadata-only commits (copies of one real file's metadata under new
names: the operations never open data files), so building 1,000 snapshots takes seconds. Every
timed run starts cold: a freshly opened table (no snapshot cache) and an empty manifest cache.
"""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from typing import Any

import pyarrow as pa

from benchmarks.harness import Arm, Context, Outcome, Result, compare, expect
from benchmarks.workloads_engine import clear_manifest_cache
from engine import CommitMessage, Table, open_catalog

FILES_PER_COMMIT = 10
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _metadata_commit(table: Table, template: CommitMessage, count: int) -> None:
    """One commit adding ``count`` metadata-only files (copies of the template's file under new names)."""
    f = template.new_files[0]
    files = tuple(dataclasses.replace(f, file_name=f"data-{uuid.uuid4()}-0.parquet") for _ in range(count))
    # A commit checks that the files it adds exist: each copy is a hard link of the real file.
    bucket_dir = table.store.paths.bucket_dir("", template.bucket)  # unpartitioned table
    for copy in files:
        table.store.io.link_or_copy(f"{bucket_dir}/{f.file_name}", f"{bucket_dir}/{copy.file_name}")
    table.new_commit().commit([dataclasses.replace(template, new_files=files)])


def build(ctx: Context) -> tuple[str, int]:
    """A warehouse with table ``db.t`` (``commits`` snapshots of FILES_PER_COMMIT files each) and
    branch ``dev`` made at 90% of the history with 10 commits of its own; returns (path, commits)."""
    commits = ctx.size.history_commits
    path = ctx.path("refs")
    catalog = open_catalog(path)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA)
    writer = table.new_writer()
    writer.write(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA))
    template = writer.prepare_commit()[0]
    table.new_commit().commit([template])
    branch_at = max(2, commits * 9 // 10)
    for i in range(2, commits + 1):
        _metadata_commit(table, template, FILES_PER_COMMIT)
        if i == branch_at:
            table.refs.branches.create("dev", from_snapshot=i)
    dev = catalog.get_table("db.t$branch_dev")
    for _ in range(10):
        _metadata_commit(dev, template, FILES_PER_COMMIT)
    return path, commits


def _fresh(path: str, branch: str = "") -> Table:
    clear_manifest_cache()
    return open_catalog(path).get_table(f"db.t{branch}")


def _read_live(table: Table) -> int:
    """The baseline: one cold read of the head's manifest list and manifests (its live files)."""
    return len(table.store.live_entries(table.store.snapshots.latest()))


def run_refs(ctx: Context) -> list[Result]:
    path, commits = build(ctx)
    live = _read_live(_fresh(path))
    state: dict[str, Any] = {}

    def fresh_setup() -> None:
        state["table"] = _fresh(path)

    def baseline_read() -> Outcome:
        return Outcome(_read_live(state["table"]))

    baseline = Arm(run=baseline_read, setup=fresh_setup)

    # -- create tag ------------------------------------------------------------------------------
    def create_tag() -> Outcome:
        name = f"c-{uuid.uuid4().hex[:12]}"
        tag = state["table"].refs.tags.create(name)
        return Outcome(live if tag.snapshot.id == commits else -1)

    create = compare("T1", f"create tag, {commits:,} snapshots, {live:,} files",
                     Arm(run=create_tag, setup=fresh_setup), baseline, pairs=ctx.pairs, target=">= 0.5")
    table = _fresh(path)
    created = [n for n in table.refs.tags.names() if n.startswith("c-")]
    if created:  # T1's tags would be extra anchors for T2
        table.refs.tags.delete(created)

    # -- delete tag (the tag's files are all still live: it deletes no data file) ------------------
    def delete_setup() -> None:
        table = _fresh(path)
        state["tag"] = f"d-{uuid.uuid4().hex[:12]}"
        table.refs.tags.create(state["tag"])
        state["table"] = _fresh(path)

    def delete_tag() -> Outcome:
        result = state["table"].refs.tags.delete(state["tag"])
        return Outcome(result.files.count)

    delete = compare("T2", "delete tag (nothing to free)", Arm(run=delete_tag, setup=delete_setup), baseline,
                     pairs=ctx.pairs, target=">= 0.5", check=expect(Outcome(0), Outcome(live)))

    # -- delete a tag whose snapshot expired: the full reachability pass (context) -----------------
    half = commits // 2

    def expired_setup() -> None:
        copy = _copy(ctx, path, state)
        table = _fresh(copy)
        table.refs.tags.create("old", half)
        for sid in range(1, half + 1):  # an expiration of the first half (it frees nothing here)
            table.store.io.delete(table.store.paths.snapshot_file(sid))
        table.store.snapshots.write_earliest_hint(half + 1)
        state["table"] = _fresh(copy)

    def delete_expired() -> Outcome:
        return Outcome(state["table"].refs.tags.delete("old").files.count)

    def half_setup() -> None:
        state["table"] = _fresh(path)

    def read_half() -> Outcome:
        store = state["table"].store
        return Outcome(len(store.live_entries(store.snapshots.get(half))))

    expired = compare("T2x", "  same, tag of an expired snapshot",
                      Arm(run=delete_expired, setup=expired_setup), Arm(run=read_half, setup=half_setup),
                      pairs=ctx.pairs, target="context",
                      check=expect(Outcome(2), None))  # only its two manifest lists
    expired.notes.append("baseline: cold read of the tagged snapshot's manifests; ours reads every anchor's")

    # -- fast-forward main to the branch ---------------------------------------------------------
    def ff_setup() -> None:
        state["table"] = _fresh(_copy(ctx, path, state))

    def fast_forward() -> Any:
        return state["table"].refs.branches.fast_forward("dev")

    def ff_verify(_result: Any) -> Outcome:
        return Outcome(_read_live(_fresh(state["copy"])))

    def both_heads_setup() -> None:
        state["main"], state["dev"] = _fresh(path), open_catalog(path).get_table("db.t$branch_dev")

    def read_both_heads() -> Outcome:
        _read_live(state["main"])
        return Outcome(_read_live(state["dev"]))

    ff = compare("T3", "fast-forward main to a branch",
                 Arm(run=fast_forward, setup=ff_setup, verify=ff_verify),
                 Arm(run=read_both_heads, setup=both_heads_setup), pairs=ctx.pairs, target=">= 0.5")
    for r in (create, delete, expired, ff):
        r.extra["snapshots"] = commits
        r.extra["live files"] = live
    ff.notes.append("baseline: cold read of main's head and the branch head (manifest lists + manifests)")
    return [create, delete, expired, ff]


def _copy(ctx: Context, path: str, state: dict[str, Any]) -> str:
    """A fresh copy of the built warehouse (the previous copy is removed), untimed."""
    if "copy" in state:
        shutil.rmtree(state["copy"], ignore_errors=True)
    copy = ctx.path("refs-copy")
    shutil.rmtree(copy)
    shutil.copytree(path, copy)
    state["copy"] = copy
    return copy
