"""Engine-only workloads (no Spark, no JVM): merge throughput, W5 planning, W6 commit latency, P1, P2.

Each public ``run_*`` function takes a :class:`benchmarks.harness.Context` and returns its
:class:`~benchmarks.harness.Result` lines. Setup (tables, prepared commit messages, files) is
built outside the timed regions; only the operation named in docs/benchmarks.md is timed.

P1 runs pypaimon 2.1 in its own virtual environment (it pins other pyarrow/fsspec versions)
through a small timing server written to the scratch directory: it times the write and the
read inside its own process, so the Arrow IPC hand-off is excluded from pypaimon's figures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from benchmarks import data
from benchmarks.harness import (
    Arm,
    Context,
    Outcome,
    Reported,
    Result,
    arrow_checksum,
    compare,
    expect,
    fmt_seconds,
    unique_keys_last,
)
from engine import CommitMessage, Table, open_catalog

MERGE_RUNS = 5
PLAN_MIN_SECONDS = 0.05  # one plan() takes ~ms: a timed run repeats it until about this long


# ------------------------------------------------------------------------------------------------
# merge throughput
# ------------------------------------------------------------------------------------------------


def merge_input(rows: int, runs: int = MERGE_RUNS, seed: int = 5) -> pa.Table:
    """``runs`` sorted runs of T8 rows over a shared key space, concatenated as a reader would.

    Every run holds distinct keys in key order; keys repeat across runs (key space = rows / 2),
    and later runs carry higher sequence numbers.
    """
    from engine.merge.engines import KIND_COLUMN, SEQUENCE_COLUMN

    rng = np.random.default_rng(seed)
    per_run = rows // runs
    key_space = max(per_run, rows // 2)
    parts = []
    for r in range(runs):
        ids = np.sort(rng.choice(key_space, size=per_run, replace=False)).astype(np.int64)
        part = data.t8(per_run, seed=seed + r, shuffle=False)
        part = part.set_column(0, part.schema.field("id"), pa.array(ids))
        part = part.append_column(
            SEQUENCE_COLUMN, pa.array(np.arange(r * per_run, (r + 1) * per_run, dtype=np.int64))
        )
        part = part.append_column(KIND_COLUMN, pa.array(np.zeros(per_run, np.int8)))
        parts.append(part)
    return pa.concat_tables(parts).combine_chunks()


def run_merge(ctx: Context) -> list[Result]:
    """Rows/s of ``engine.merge.functions.merge`` (deduplicate) vs ``pyarrow.Table.sort_by`` of the
    same rows."""
    from engine.merge.config import MergeConfig
    from engine.merge.engines import SEQUENCE_COLUMN
    from engine.merge.functions import merge

    table = merge_input(ctx.size.merge_rows)
    config = MergeConfig.from_options({}, ["id"])
    order = [("id", "ascending"), (SEQUENCE_COLUMN, "ascending")]
    expected = arrow_checksum(unique_keys_last(table, "id", order), data.T8_SCHEMA.names)
    ours = Arm(
        run=lambda: merge(table, ["id"], config, drop_deletes=True),
        verify=lambda out: arrow_checksum(out, data.T8_SCHEMA.names),
    )
    baseline = Arm(run=lambda: table.sort_by(order), verify=lambda out: Outcome(out.num_rows))
    result = compare(
        "merge",
        f"merge {MERGE_RUNS} runs vs sort_by",
        ours,
        baseline,
        pairs=ctx.pairs,
        rows=table.num_rows,
        target="context",
        check=expect(expected, Outcome(table.num_rows)),
    )
    if result.ours_times:
        result.extra["ours rows/s"] = table.num_rows / float(np.median(result.ours_times))
    return [result]


# ------------------------------------------------------------------------------------------------
# W5 planning vs history
# ------------------------------------------------------------------------------------------------


def clear_manifest_cache() -> None:
    """Empty the engine's process-wide manifest caches (decoded entries and Arrow columns) so the
    next plan() reads every manifest (cold planning)."""
    from engine.meta import manifest_store

    manifest_store.clear_caches()


def _live_files(table: Table) -> dict[tuple[bytes, int, int], list[Any]]:
    groups: dict[tuple[bytes, int, int], list[Any]] = {}
    for split in table.plan().splits:
        groups.setdefault((split.partition, split.bucket, split.total_buckets), []).extend(split.files)
    return groups


def _plan_outcome(table: Table) -> Outcome:
    names = sorted(f.file_name for s in table.plan().splits for f in s.files)
    return Outcome(len(names), hash(tuple(names)))


def _manifest_entries(table: Table) -> int:
    """Manifest entries a cold plan of the latest snapshot reads (base + delta manifests)."""
    store = table.store
    snap = store.snapshots.latest()
    if snap is None:
        return 0
    total = 0
    for name in (snap.base_manifest_list, snap.delta_manifest_list):
        for meta in store.manifests.read_list(name):
            total += meta.num_added_files + meta.num_deleted_files
    return total


def history_tables(ctx: Context, commits: int) -> tuple[Table, Table]:
    """Table A: ``commits`` commits of one file each; table B: the same files in one commit."""
    import shutil

    catalog = open_catalog(ctx.path("w5"))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    history = catalog.create_table("db.history", schema)
    committer = history.new_commit()
    for i in range(commits):
        writer = history.new_writer()
        writer.write(pa.table({"id": [i], "v": [f"v{i}"]}, schema=schema))
        committer.commit(writer.prepare_commit())
    one = catalog.create_table("db.one_commit", schema)
    groups = _live_files(history)
    for (_partition, bucket, _total), _files in groups.items():
        # Unpartitioned: the bucket directory holds exactly the live files (nothing was deleted).
        src = Path(history.store.paths.bucket_dir("", bucket))
        shutil.copytree(src, one.store.paths.bucket_dir("", bucket), dirs_exist_ok=True)
    messages = [CommitMessage(p, b, t, new_files=tuple(files)) for (p, b, t), files in groups.items()]
    one.new_commit().commit(messages)
    return history, one


def _plan_loop(table: Table, reps: int, cold: bool) -> Any:
    def run() -> Outcome:
        for _ in range(reps):
            if cold:
                clear_manifest_cache()
            table.plan()
        return _plan_outcome(table)

    return run


def run_w5(ctx: Context) -> list[Result]:
    """plan() of the same live files reached by N commits (ours) vs by 1 commit (baseline)."""
    commits = ctx.size.history_commits
    history, one = history_tables(ctx, commits)
    clear_manifest_cache()
    start = time.perf_counter()
    history.plan()
    once = time.perf_counter() - start
    reps = max(1, min(200, int(PLAN_MIN_SECONDS / max(once, 1e-4))))
    results = []
    for cold, key, title in (
        (True, "W5", f"plan {commits:,} commits vs 1"),
        (False, "W5w", "  same, warm cache"),
    ):
        result = compare(
            key,
            title,
            Arm(run=_plan_loop(history, reps, cold)),
            Arm(run=_plan_loop(one, reps, cold)),
            pairs=ctx.pairs,
            target=">= 0.67" if cold else "context",
        )
        per_plan = float(np.median(result.ours_times)) / reps if result.ours_times else 0.0
        entries = _manifest_entries(history)
        result.extra["live files"] = commits
        result.extra["plan"] = fmt_seconds(per_plan)
        if per_plan > 0:
            result.extra["entries/s"] = entries / per_plan
        if cold:
            result.target = ">= 0.67, >= 50K entries/s"
        result.notes.append(f"{reps} plan{'s' if reps > 1 else ''} per timed run")
        results.append(result)
    return results


# ------------------------------------------------------------------------------------------------
# W6 commit latency and its flatness
# ------------------------------------------------------------------------------------------------


def commits_arm(table: Table, count: int) -> Arm:
    """An arm that commits ``count`` tiny prepared writes to ``table`` one by one (the messages are
    prepared in setup, outside the timed region); its outcome is the number of snapshots made."""
    prepared: list[list[CommitMessage]] = []

    def setup() -> None:
        prepared[:] = _tiny_messages(table, count)

    def run() -> Outcome:
        committer = table.new_commit()
        return Outcome(sum(len(committer.commit(messages).snapshot_ids) for messages in prepared))

    return Arm(run=run, setup=setup)


def _tiny_messages(table: Table, count: int) -> list[list[CommitMessage]]:
    """``count`` prepared 1-file append messages (real files), written outside any timing."""
    out = []
    for i in range(count):
        writer = table.new_writer()
        writer.write(pa.table({"id": [i]}, schema=table.arrow_schema))
        out.append(writer.prepare_commit())
    return out


def _format_floor_arm(table: Table, scratch: Path, count: int) -> Arm:
    """A timed run of ``count`` commits' file operations only, replaying the bytes of ``table``'s
    latest commit: three new metadata files, an atomic snapshot create and a LATEST replace."""
    io, paths = table.store.io, table.store.paths
    snapshot = table.latest_snapshot()
    delta = table.store.manifests.read_list(snapshot.delta_manifest_list)
    payloads = [
        io.read_bytes(paths.manifest_file(name))
        for name in (delta[0].file_name, snapshot.delta_manifest_list, snapshot.base_manifest_list)
    ]
    snapshot_bytes = io.read_bytes(paths.snapshot_file(snapshot.id))
    hint = str(scratch / "LATEST")
    state: dict[str, Path] = {}

    def setup() -> None:  # a fresh directory per run, made outside the timing (commits find theirs)
        state["dir"] = scratch / uuid.uuid4().hex
        state["dir"].mkdir(parents=True)

    def run() -> Outcome:
        run_dir = state["dir"]
        made = 0
        for i in range(count):
            for n, payload in enumerate(payloads):
                io.write_new(str(run_dir / f"meta-{i}-{n}"), payload)
            made += io.try_create(str(run_dir / f"snapshot-{i}"), snapshot_bytes)
            io.write_text(hint, str(i))
        return Outcome(made)

    return Arm(run=run, setup=setup)


def build_snapshots(table: Table, wanted: int, budget_s: float) -> int:
    """Commit until ``wanted`` snapshots exist or the budget is spent; returns the snapshot count.

    Each commit replaces the one live file by a new one (a COMPACT-style delete + add of
    metadata-only file entries: copies of one real file's metadata under new names), so the
    history grows while the live file count stays at one: the commit path (manifests, lists,
    snapshot) is exercised fully, and the snapshot count is the only thing that grows.
    """
    template = _tiny_messages(table, 1)[0][0]
    table.new_commit().commit([template])
    previous = template.new_files[0]
    committer = table.new_commit()
    deadline = time.monotonic() + budget_s
    count = len(table.snapshots())
    store = table.store
    bucket_dir = store.paths.bucket_dir(store.partition_dir([]), template.bucket)  # unpartitioned tables
    while count < wanted and time.monotonic() < deadline:
        replacement = dataclasses.replace(previous, file_name=f"data-{uuid.uuid4()}-0.parquet")
        # A commit checks that the files it adds exist: the copy is a hard link of the real file.
        store.io.link_or_copy(f"{bucket_dir}/{template.new_files[0].file_name}",
                              f"{bucket_dir}/{replacement.file_name}")
        committer.commit(
            [
                dataclasses.replace(
                    template, new_files=(), compact_before=(previous,), compact_after=(replacement,)
                )
            ]
        )
        previous = replacement
        count += 1
    return count


def run_w6(ctx: Context) -> list[Result]:
    """One-file append commits vs bare atomic creates; then commit latency at 10 vs N snapshots."""
    size = ctx.size
    k = size.commits_per_timing
    catalog = open_catalog(ctx.path("w6"))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64())])
    few = catalog.create_table("db.few", schema)
    build_snapshots(few, 10, 60.0)
    io = few.store.io
    publish_dir = Path(ctx.path("w6-publish"))
    payload = bytes(1024)
    state: dict[str, Any] = {}

    def publish_setup() -> None:
        state["paths"] = [str(publish_dir / f"p-{uuid.uuid4()}") for _ in range(k)]

    def publish() -> Outcome:
        return Outcome(sum(1 for p in state["paths"] if io.try_create(p, payload)))

    latency = compare(
        "W6",
        f"commit 1-file append x{k}",
        commits_arm(few, k),
        Arm(run=publish, setup=publish_setup),
        pairs=ctx.pairs,
        target=">= 0.5",
    )
    if latency.ours_times:
        latency.extra["ours per commit"] = fmt_seconds(float(np.median(latency.ours_times)) / k)
        latency.extra["publish per file"] = fmt_seconds(float(np.median(latency.baseline_times)) / k)

    floor = compare(
        "W6m",
        "  ceiling: only the file operations a Paimon commit must make",
        _format_floor_arm(few, publish_dir, k),
        Arm(run=publish, setup=publish_setup),
        pairs=ctx.pairs,
        target="context",
    )
    floor.notes.append(
        "a manifest, a delta and a base manifest list, the snapshot (atomic create) and the LATEST "
        "hint (atomic replace), with the bytes of a real commit encoded in advance: the best W6 "
        "any commit in Paimon's format can reach on this file system"
    )

    few = catalog.create_table("db.few_again", schema)  # a fresh 10-snapshot table: W6 grew the first
    build_snapshots(few, 10, 60.0)
    many = catalog.create_table("db.many", schema)
    started = time.perf_counter()
    built = build_snapshots(many, size.snapshots, size.snapshot_budget_s)
    build_s = time.perf_counter() - started
    flat = compare(
        "W6f",
        f"commit at {built:,} vs 10 snapshots",
        commits_arm(many, k),
        commits_arm(few, k),
        pairs=ctx.pairs,
        target="flatness <= 1.2",
    )
    if flat.ratios:
        flat.extra["flatness median"] = round(1.0 / flat.median, 3)  # type: ignore[operator]
        flat.extra["flatness best"] = round(1.0 / flat.best, 3)  # type: ignore[operator]
    flat.extra["snapshots built"] = built
    flat.extra["build"] = fmt_seconds(build_s)
    if built < size.snapshots:
        flat.notes.append(
            f"only {built:,} of {size.snapshots:,} snapshots fit in the {size.snapshot_budget_s:.0f} s "
            "build budget"
        )
    flat.notes.append(
        f"history of 1-file replace commits (live files stay ~1); each timed run adds {k} snapshots"
    )
    return [latency, floor, flat]


# ------------------------------------------------------------------------------------------------
# P1 engine vs pypaimon
# ------------------------------------------------------------------------------------------------

PYPAIMON_TIMER = r'''
"""Timing server for dyntable's P1 benchmark; runs inside the pypaimon venv (stdlib + pypaimon)."""
import contextlib, json, sys, time, traceback
import pyarrow as pa
from pypaimon import CatalogFactory, Schema

def catalog(req):
    return CatalogFactory.create({"warehouse": req["warehouse"]})

def handle(req):
    op = req["op"]
    if op == "create":
        with pa.memory_map(req["schema"], "r") as src:
            arrow_schema = pa.ipc.open_file(src).schema
        cat = catalog(req)
        cat.create_database(req["table"].split(".")[0], True)
        schema = Schema.from_pyarrow_schema(arrow_schema, primary_keys=req["primary_keys"],
                                            options=req["options"])
        cat.create_table(req["table"], schema, False)
        return {}
    table = catalog(req).get_table(req["table"])
    if op == "write":
        with pa.memory_map(req["data"], "r") as src:
            data = pa.ipc.open_file(src).read_all()
        start = time.perf_counter()
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        writer.write_arrow(data)
        committer.commit(writer.prepare_commit())
        writer.close()
        committer.close()
        return {"seconds": time.perf_counter() - start, "rows": data.num_rows}
    if op == "read":
        start = time.perf_counter()
        builder = table.new_read_builder()
        result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        seconds = time.perf_counter() - start
        with pa.OSFile(req["out"], "wb") as sink, pa.ipc.new_file(sink, result.schema) as w:
            w.write_table(result)
        return {"seconds": seconds, "rows": result.num_rows}
    raise ValueError("unknown op " + op)

out = sys.stdout
for line in sys.stdin:
    try:
        with contextlib.redirect_stdout(sys.stderr):
            reply = {"ok": True, **handle(json.loads(line))}
    except Exception as e:
        reply = {"ok": False, "error": repr(e), "traceback": traceback.format_exc()}
    out.write(json.dumps(reply) + "\n")
    out.flush()
'''


class PypaimonTimer:
    """A long-lived pypaimon process answering create / write / read with in-process timings."""

    def __init__(self, python: str, workdir: str) -> None:
        self.dir = Path(workdir)
        script = self.dir / "pypaimon_timer.py"
        script.write_text(PYPAIMON_TIMER)
        # Our site-packages must not leak into the venv's interpreter (it pins older pyarrow/fsspec).
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        self._stderr = open(self.dir / "pypaimon-stderr.log", "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [python, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
            env=env,
        )

    def call(self, **request: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the pypaimon timer died; see {self.dir / 'pypaimon-stderr.log'}")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise RuntimeError(f"pypaimon failed: {reply.get('error')}\n{reply.get('traceback', '')}")
        return reply

    def ipc_file(self, table: pa.Table | pa.Schema) -> str:
        path = self.dir / f"{uuid.uuid4().hex}.arrow"
        schema = table if isinstance(table, pa.Schema) else table.schema
        with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, schema) as writer:
            if isinstance(table, pa.Table):
                writer.write_table(table)
        return str(path)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


def _read_ipc(path: str) -> pa.Table:
    with pa.memory_map(path, "r") as src:
        return ipc.open_file(src).read_all()


def run_p1(ctx: Context, primary_key: bool = True) -> list[Result]:
    """Engine write then read of the same rows vs pypaimon, PK (bucket 4) or append table."""
    from tests.compat.harness import find_or_create_venv

    key = "P1" if primary_key else "P1a"
    kind = "PK" if primary_key else "append"
    python = find_or_create_venv()
    if python is None:
        from tests.compat.harness import locate_venv

        raise RuntimeError(f"pypaimon is unavailable: {locate_venv()[1]}")
    rows = ctx.size.p1_rows
    table_data = data.t8(rows, seed=11)
    warm_data = table_data.slice(0, max(1, rows // 20))
    expected = arrow_checksum(table_data)
    options = (
        {"bucket": "4", "file.format": "parquet"}
        if primary_key
        else {"bucket": "-1", "file.format": "parquet"}
    )
    pks = ["id"] if primary_key else []
    ours_wh, theirs_wh = ctx.path(f"{key}-ours"), ctx.path(f"{key}-pypaimon")
    catalog = open_catalog(ours_wh)
    catalog.create_database("db")
    timer = PypaimonTimer(python, ctx.path(f"{key}-xchg"))
    try:
        data_file = timer.ipc_file(table_data)
        warm_file = timer.ipc_file(warm_data)
        schema_file = timer.ipc_file(table_data.schema)
        state: dict[str, Any] = {}

        def new_ours() -> None:
            name = f"db.t{uuid.uuid4().hex[:8]}"
            state["ours"] = catalog.create_table(name, table_data.schema, primary_keys=pks, options=options)

        def new_theirs() -> None:
            name = f"db.t{uuid.uuid4().hex[:8]}"
            timer.call(
                op="create",
                warehouse=theirs_wh,
                table=name,
                schema=schema_file,
                primary_keys=pks,
                options=options,
            )
            state["theirs"] = name

        def ours_write(rows_file: pa.Table) -> Table:
            table = state["ours"]
            table.write_arrow(rows_file)
            return table

        def theirs_write(path: str) -> Reported:
            name = state["theirs"]
            reply = timer.call(op="write", warehouse=theirs_wh, table=name, data=path)
            return Reported(reply["seconds"], name)

        def theirs_read_back(name: str) -> Outcome:
            out = str(timer.dir / f"{uuid.uuid4().hex}.arrow")
            timer.call(op="read", warehouse=theirs_wh, table=name, out=out)
            return arrow_checksum(_read_ipc(out))

        write = compare(
            f"{key}w",
            f"{kind} write vs pypaimon",
            Arm(
                run=lambda: ours_write(table_data),
                setup=new_ours,
                verify=lambda t: arrow_checksum(t.to_arrow()),
                warmup=lambda: ours_write(warm_data),
            ),
            Arm(
                run=lambda: theirs_write(data_file),
                setup=new_theirs,
                verify=theirs_read_back,
                warmup=lambda: theirs_write(warm_file),
            ),
            pairs=ctx.pairs,
            rows=rows,
            target="context",
            check=expect(expected, expected),
        )
        # Reads: one table per side, written once, read repeatedly.
        new_ours()
        new_theirs()
        ours_table = ours_write(table_data)
        theirs_name = theirs_write(data_file).value

        def theirs_read() -> Reported:
            out = str(timer.dir / "read.arrow")
            return Reported(
                timer.call(op="read", warehouse=theirs_wh, table=theirs_name, out=out)["seconds"], out
            )

        read = compare(
            f"{key}r",
            f"{kind} {'merged ' if primary_key else ''}read vs pypaimon",
            Arm(run=ours_table.to_arrow, verify=arrow_checksum),
            Arm(run=theirs_read, verify=lambda out: arrow_checksum(_read_ipc(out))),
            pairs=ctx.pairs,
            rows=rows,
            target="context",
            check=expect(expected, expected),
        )
    finally:
        timer.close()
    total = Result(
        key, f"{kind} write+read vs pypaimon", target=">= 10" if primary_key else "context", rows=rows
    )
    for ow, bw, orr, br in zip(
        write.ours_times, write.baseline_times, read.ours_times, read.baseline_times, strict=False
    ):
        total.ours_times.append(ow + orr)
        total.baseline_times.append(bw + br)
        total.ratios.append((bw + br) / (ow + orr))
    total.check = write.check if write.check != "ok" else read.check
    total.notes.append("pypaimon timed inside its own process; Arrow IPC hand-off excluded")
    return [total, write, read]


def run_p1_append(ctx: Context) -> list[Result]:
    return run_p1(ctx, primary_key=False)


# ------------------------------------------------------------------------------------------------
# P2 engine vs the physical floor
# ------------------------------------------------------------------------------------------------

P2_BUCKETS = 4


def run_p2(ctx: Context) -> list[Result]:
    """Engine PK ``write_arrow`` + merged ``to_arrow`` vs pyarrow sort + Parquet write + Parquet read.

    The floor is what any primary-key store must at least do with the same rows: sort them by
    key, write them as Parquet (zstd, the engine's default codec) and read them back. Both arms
    return the rows they read, checked against the input; the parts (write, read) of each run
    are kept as context.
    """
    import pyarrow.parquet as pq

    rows = ctx.size.p1_rows
    table_data = data.t8(rows, seed=12)
    expected = arrow_checksum(table_data)
    catalog = open_catalog(ctx.path("P2-ours"))
    catalog.create_database("db")
    floor_dir = Path(ctx.path("P2-floor"))
    options = {"bucket": str(P2_BUCKETS), "file.format": "parquet"}
    state: dict[str, Any] = {}
    parts: dict[str, list[float]] = {"ours write": [], "ours read": [], "floor write": [], "floor read": []}

    def ours_setup() -> None:
        name = f"db.p2_{uuid.uuid4().hex[:8]}"
        state["table"] = catalog.create_table(name, data.T8_SCHEMA, primary_keys=["id"], options=options)

    def ours_run() -> pa.Table:
        table = state["table"]
        t0 = time.perf_counter()
        table.write_arrow(table_data)
        t1 = time.perf_counter()
        out = table.to_arrow()
        parts["ours write"].append(t1 - t0)
        parts["ours read"].append(time.perf_counter() - t1)
        return out

    def floor_setup() -> None:
        state["path"] = str(floor_dir / f"{uuid.uuid4().hex}.parquet")

    def floor_run() -> pa.Table:
        t0 = time.perf_counter()
        pq.write_table(table_data.sort_by("id"), state["path"], compression="zstd")
        t1 = time.perf_counter()
        out = pq.read_table(state["path"])
        parts["floor write"].append(t1 - t0)
        parts["floor read"].append(time.perf_counter() - t1)
        return out

    result = compare(
        "P2",
        "PK write+read vs physical floor",
        Arm(run=ours_run, setup=ours_setup, verify=arrow_checksum),
        Arm(run=floor_run, setup=floor_setup, verify=arrow_checksum),
        pairs=ctx.pairs,
        rows=rows,
        target=">= 0.5",
        check=expect(expected, expected),
    )
    for name, times in parts.items():
        if len(times) > 1:  # the first entry is the warm-up
            result.extra[name] = fmt_seconds(float(np.median(times[1:])))
    result.notes.append(f"bucket {P2_BUCKETS}; floor = sort_by(id) + 1 zstd Parquet file + read back")
    return [result]
