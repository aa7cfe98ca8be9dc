"""W10: concurrent writer processes vs the same writes one after another.

Three writer processes upsert into one primary-key table (automatic compaction on, so each
write also runs a compaction that races the others). ``W10``: each writer has its own
partition; ours runs the three at once, the baseline runs the same three processes one after
another. ``W10s``: the same with all three writers in one partition (their keys are disjoint, so
the expected table is independent of the interleaving); its figure is context, its promise is
100% eventual success and no lost row.

Only the writing is timed: the processes are started once per phase, have generated their
batches and opened the run's fresh table (they print ``READY``) before the timed region; the
timed region sends ``GO`` and waits for every ``DONE`` line. A write that raises is retried by
the writer (a failed commit published nothing, so the retry is safe); each writer reports its
first-try successes, its retries, its writes that failed for good, and the publish races its
commits lost (a snapshot id taken by another process, counted around
``SnapshotStore.try_publish``).

Run as ``python -m benchmarks.workloads_concurrency WAREHOUSE WRITER PARTITION COMMITS ROWS`` for
one writer process (the workload does this); it serves one job per arm run, read from stdin.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from benchmarks import data
from benchmarks.harness import (
    Arm,
    Context,
    Outcome,
    Result,
    arrow_checksum,
    compare,
    expect,
    unique_keys_last,
)

WRITERS = 3
APP_RETRIES = 50  # writes the writer retries itself after the engine's own commit retries gave up
KEY_STRIDE = 1_000_000_000  # writer w owns ids [w * KEY_STRIDE, (w + 1) * KEY_STRIDE)
REPO = Path(__file__).resolve().parent.parent
Runs = list[list[dict[str, Any]]]  # per arm run, per writer: the stats of its DONE line
TABLE_OPTIONS = {"bucket": "2", "commit.max-retries": "20", "commit.max-retry-wait": "200"}


def schema() -> pa.Schema:
    return pa.schema([pa.field("p", pa.string(), nullable=False), *data.T8_SCHEMA])


def batches(writer: int, partition: str, commits: int, rows: int) -> list[pa.Table]:
    """The writer's commits: each upserts half of the previous commit's keys and inserts new ones."""
    out = []
    for c in range(commits):
        t = data.t8(rows, seed=writer * 10_000 + c, first_id=writer * KEY_STRIDE + c * (rows // 2))
        out.append(t.add_column(0, schema().field("p"), pa.array(np.full(rows, partition, dtype=object))))
    return out


def expected_outcome(partitions: list[str], commits: int, rows: int) -> Outcome:
    """The table after every writer's commits (writers' ids are disjoint: the last write per id wins)."""
    parts = []
    for w, p in enumerate(partitions):
        for c, t in enumerate(batches(w, p, commits, rows)):
            parts.append(t.append_column("_order", pa.array(np.full(rows, w * commits + c, np.int64))))
    merged = unique_keys_last(pa.concat_tables(parts), "id", [("id", "ascending"), ("_order", "ascending")])
    return arrow_checksum(merged, schema().names)


# -- one writer process --------------------------------------------------------------------------


def writer_main(warehouse: str, writer: int, partition: str, commits: int, rows: int) -> None:
    """Serve jobs from stdin: ``TABLE name`` (open it, answer READY), then ``GO`` (write, answer DONE)."""
    from engine import open_catalog
    from engine.meta.snapshot_store import SnapshotStore

    lost = [0]
    publish = SnapshotStore.try_publish

    def counting_publish(self: SnapshotStore, snapshot: Any) -> bool:
        won = publish(self, snapshot)
        lost[0] += not won
        return won

    SnapshotStore.try_publish = counting_publish  # type: ignore[method-assign]
    catalog = open_catalog(warehouse)
    todo = batches(writer, partition, commits, rows)
    for line in sys.stdin:
        table = catalog.get_table(line.removeprefix("TABLE ").strip())
        print("READY", flush=True)
        if sys.stdin.readline().strip() != "GO":
            return
        lost[0] = 0
        first_try = retries = failed = 0
        errors: list[str] = []
        for batch in todo:
            for attempt in range(APP_RETRIES + 1):
                try:
                    table.write_arrow(batch)
                except Exception as e:  # noqa: BLE001 - counted and retried; a failed write published nothing
                    retries += 1
                    errors.append(f"{type(e).__name__}: {e}"[:300])
                    if attempt == APP_RETRIES:
                        failed += 1
                else:
                    first_try += attempt == 0
                    break
        stats = {"writes": len(todo), "first_try": first_try, "retries": retries, "failed": failed,
                 "lost_races": lost[0], "errors": errors[:3]}
        print("DONE " + json.dumps(stats), flush=True)


# -- the workload ---------------------------------------------------------------------------------


class _Writers:
    """The writer processes of one phase, started once; each arm run is one job for each of them."""

    def __init__(self, ctx: Context, warehouse: str, partitions: list[str]) -> None:
        size = ctx.size
        self.procs: list[subprocess.Popen[str]] = []
        self.logs = Path(ctx.path("w10-logs"))
        for w, p in enumerate(partitions):
            with open(self.logs / f"writer-{w}.err", "w") as err:
                cmd = [sys.executable, "-m", "benchmarks.workloads_concurrency", warehouse, str(w), p,
                       str(size.writer_commits), str(size.writer_rows)]
                self.procs.append(subprocess.Popen(
                    cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
                ))

    def _send(self, w: int, line: str) -> None:
        self.procs[w].stdin.write(line + "\n")  # type: ignore[union-attr]
        self.procs[w].stdin.flush()  # type: ignore[union-attr]

    def _answer(self, w: int, expected: str) -> str:
        line = self.procs[w].stdout.readline()  # type: ignore[union-attr]
        if not line.startswith(expected):
            err = (self.logs / f"writer-{w}.err").read_text()[-3000:]
            raise RuntimeError(f"W10 writer {w} answered {line!r} instead of {expected}:\n{err}")
        return line[len(expected):]

    def prepare(self, table: str) -> None:
        for w in range(len(self.procs)):
            self._send(w, f"TABLE {table}")
        for w in range(len(self.procs)):
            self._answer(w, "READY")

    def go(self, together: bool) -> list[dict[str, Any]]:
        """Release the writers at once, or one after another; returns each writer's stats."""
        stats = []
        if together:
            for w in range(len(self.procs)):
                self._send(w, "GO")
        for w in range(len(self.procs)):
            if not together:
                self._send(w, "GO")
            stats.append(dict(json.loads(self._answer(w, "DONE "))))
        return stats

    def close(self) -> None:
        for proc in self.procs:
            proc.stdin.close()  # type: ignore[union-attr]
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _arm(writers: _Writers, warehouse: str, together: bool, runs: Runs) -> Arm:
    from engine import open_catalog

    catalog = open_catalog(warehouse)
    state: dict[str, Any] = {}

    def setup() -> None:
        name = f"db.t{'c' if together else 's'}{len(runs)}"
        state["table"] = catalog.create_table(name, schema(), primary_keys=["p", "id"], partition_keys=["p"],
                                              options=TABLE_OPTIONS)
        writers.prepare(name)

    def run() -> Any:
        runs.append(writers.go(together))
        return state["table"]

    return Arm(run=run, setup=setup, verify=lambda t: arrow_checksum(t.refresh().to_arrow(), schema().names))


def _summary(result: Result, runs: Runs, baseline_runs: Runs) -> None:
    """Success and retries of the concurrent arm; a write failed for good in either arm fails the check."""
    stats = [s for r in runs for s in r]
    writes = sum(s["writes"] for s in stats)
    if writes:
        result.extra["success"] = f"{100 * (writes - sum(s['failed'] for s in stats)) / writes:.0f}%"
        result.extra["first try"] = f"{100 * sum(s['first_try'] for s in stats) / writes:.0f}%"
    result.extra["write retries"] = sum(s["retries"] for s in stats)
    result.extra["lost publish races"] = sum(s["lost_races"] for s in stats)
    result.extra["writes"] = writes
    for arm, arm_stats in (("ours", stats), ("baseline", [s for r in baseline_runs for s in r])):
        failed = sum(s["failed"] for s in arm_stats)
        if failed:
            errors = [e for s in arm_stats for e in s["errors"]]
            problem = f"{arm}: {failed} write(s) failed for good ({errors[:1]})"
            result.check = f"FAILED: {problem}" if result.check == "ok" else f"{result.check}; {problem}"


def _phase(ctx: Context, key: str, title: str, target: str, partitions: list[str]) -> Result:
    from engine import open_catalog

    size = ctx.size
    expected = expected_outcome(partitions, size.writer_commits, size.writer_rows)
    ours_runs: Runs = []
    base_runs: Runs = []
    warehouse = ctx.path("w10")
    open_catalog(warehouse).create_database("db")
    writers = _Writers(ctx, warehouse, partitions)
    try:
        ours, baseline = _arm(writers, warehouse, True, ours_runs), _arm(writers, warehouse, False, base_runs)
        rows = WRITERS * size.writer_commits * size.writer_rows
        result = compare(key, title, ours, baseline, pairs=ctx.pairs, rows=rows, target=target,
                         check=expect(expected, expected))
    finally:
        writers.close()
    _summary(result, ours_runs, base_runs)
    result.notes.append(f"{WRITERS} writer processes x {size.writer_commits} commits x {size.writer_rows:,} "
                        "rows, PK table, bucket 2, automatic compaction; success/retries: concurrent arm")
    return result


def run_w10(ctx: Context) -> list[Result]:
    """Three writer processes at once vs one after another: disjoint partitions, then one partition."""
    disjoint = _phase(ctx, "W10", "3 writers, disjoint partitions", ">= 1.5, 100% success",
                      [f"p{w}" for w in range(WRITERS)])
    shared = _phase(ctx, "W10s", "  same, one shared partition", "context; 100% success, no lost rows",
                    ["p0"] * WRITERS)
    return [disjoint, shared]


def _main(argv: list[str]) -> None:
    warehouse, writer, partition, commits, rows = argv
    writer_main(warehouse, int(writer), partition, int(commits), int(rows))


if __name__ == "__main__":
    _main(sys.argv[1:])

