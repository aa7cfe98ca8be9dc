"""dyntable's benchmark suite: ratios against in-process baselines (method: docs/benchmarks.md).

This module holds the registry of workloads and :func:`run_suite`, which runs a selection,
prints one line per result as it arrives and writes the JSON record. Invariants:
* Spark workloads are imported (and the JVM started) only when one of them is selected, so
  engine-only runs such as ``--size tiny --only merge,W5`` never start a JVM.
* A workload that raises is recorded as an error line and the suite continues; the return
  code says whether every selected workload ran and passed its result checks.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import SIZES, Context, Result, failed, format_line, write_json
from benchmarks.memory import PeakMemory


@dataclass(frozen=True)
class Workload:
    """A registered workload: ``module.function(ctx) -> list[Result]``."""

    key: str
    title: str
    module: str
    function: str
    spark: bool


WORKLOADS: tuple[Workload, ...] = (
    Workload("merge", "merge throughput", "benchmarks.workloads_engine", "run_merge", False),
    Workload("W5", "planning vs history", "benchmarks.workloads_engine", "run_w5", False),
    Workload("W6", "commit latency and flatness", "benchmarks.workloads_engine", "run_w6", False),
    Workload("W6i", "commit with Iceberg metadata", "benchmarks.workloads_iceberg", "run_w6i", False),
    Workload("P1", "engine vs pypaimon, PK table", "benchmarks.workloads_engine", "run_p1", False),
    Workload(
        "P1a", "engine vs pypaimon, append table", "benchmarks.workloads_engine", "run_p1_append", False
    ),
    Workload("P2", "engine PK write+read vs physical floor", "benchmarks.workloads_engine", "run_p2", False),
    Workload("W7", "snapshot expiration", "benchmarks.workloads_maintenance", "run_w7", False),
    Workload("W8", "orphan file cleanup", "benchmarks.workloads_cleanup", "run_w8", False),
    Workload("T", "tags and fast-forward, long history", "benchmarks.workloads_refs", "run_refs", False),
    Workload("FI", "file indexes: lookup, write", "benchmarks.workloads_fileindex", "run_fileindex", False),
    Workload("CL", "z-order clustering: two-column filter", "benchmarks.workloads_clustering",
             "run_clustering", False),
    Workload("CL2", "z-order clustering: two-column filter in SQL", "benchmarks.workloads_clustering",
             "run_clustering_sql", True),
    Workload("W1", "append write", "benchmarks.workloads_spark", "run_w1", True),
    Workload("W2", "primary-key upsert write", "benchmarks.workloads_spark", "run_w2", True),
    Workload("W2d", "W2 on a default-bucket table", "benchmarks.workloads_spark", "run_w2d", True),
    Workload("W2s", "PK upsert shuffled by bucket", "benchmarks.workloads_shuffle", "run_w2s", True),
    Workload("W2n", "SQL INSERT into a PK table vs bucketed Parquet", "benchmarks.workloads_shuffle",
             "run_w2n", True),
    Workload("W3", "merge-on-read scan", "benchmarks.workloads_spark", "run_w3", True),
    Workload("W3b", "scan after full compaction", "benchmarks.workloads_spark", "run_w3b", True),
    Workload("W3q", "1% filter on merge-on-read, SQL", "benchmarks.workloads_filters", "run_w3q", True),
    Workload("W3c", "small files before/after compaction", "benchmarks.workloads_spark", "run_w3c", True),
    Workload("W4", "full compaction", "benchmarks.workloads_spark", "run_w4", True),
    Workload("W9", "streaming change read", "benchmarks.workloads_spark", "run_w9", True),
    Workload("M", "metadata at scale", "benchmarks.workloads_metadata", "run_metadata", False),
    Workload("W10", "concurrent writer processes", "benchmarks.workloads_concurrency", "run_w10", False),
    Workload("W11", "DELETE 1% via deletion vectors vs rewrite", "benchmarks.workloads_dml", "run_w11", True),
    *(Workload(k, t, "benchmarks.workloads_dv", f, True) for k, t, f in (
        ("W2dv", "PK upsert into a deletion-vector table", "run_w2dv"),
        ("W3dv", "scan of a deletion-vector table", "run_w3dv"),
        ("W3dvf", "filtered scan, DV vs merge-on-read", "run_w3dvf"))),
    Workload("W12dv", "2M-row DV tables in a 1 GB driver", "benchmarks.workloads_dv_scale", "run_w12dv",
             True),
    Workload("Q1", "count/min/max answered from metadata", "benchmarks.workloads_answers", "run_q1", True),
)
DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def _load() -> list[float] | None:
    """The 1/5/15-minute load averages: how busy the shared machine was (context for the figures)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _commit() -> str | None:
    """The checked-out commit the run measured (None outside a git work tree)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def select(only: Sequence[str] | None) -> list[Workload]:
    """The registered workloads named in ``only`` (case-insensitive), in registry order; all if None.

    Raises:
        ValueError: an unknown name.
    """
    if not only:
        return list(WORKLOADS)
    wanted = {name.strip().lower() for name in only if name.strip()}
    known = {w.key.lower() for w in WORKLOADS}
    unknown = sorted(wanted - known)
    if unknown:
        raise ValueError(f"unknown workload(s) {unknown}; known: {[w.key for w in WORKLOADS]}")
    return [w for w in WORKLOADS if w.key.lower() in wanted]


def run_suite(
    size: str = "small",
    only: Sequence[str] | None = None,
    pairs: int = 3,
    out: str | Path | None = None,
    workdir: str | Path | None = None,
    echo: Callable[[str], None] = print,
    spark_conf: Mapping[str, str] | None = None,
) -> tuple[list[Result], Path]:
    """Run the selected workloads and write ``<out>/<timestamp>.json``.

    Args:
        size: a key of :data:`benchmarks.harness.SIZES`.
        only: workload keys to run (default: all).
        pairs: timed A/B pairs per comparison (at least 3).
        out: directory of the JSON record (default ``benchmarks/results``).
        workdir: scratch directory for tables (default: a temporary directory, removed after).
        echo: where printed lines go.
        spark_conf: extra Spark settings for the suite's session (on top of ``build_spark``'s).

    Returns:
        The results and the JSON path.
    """
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; use one of {sorted(SIZES)}")
    chosen = select(only)
    scratch = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="dyntable-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    ctx = Context(SIZES[size], max(3, pairs), scratch)
    ctx.cache["spark_conf"] = dict(spark_conf or {})
    results: list[Result] = []
    load_before, commit = _load(), _commit()
    started = time.perf_counter()
    record: Path | None = None

    def save(complete: bool) -> Path:
        # Rewritten after every workload: a long run stopped half-way keeps the lines it finished.
        meta = {
            "size": size,
            "pairs": ctx.pairs,
            "only": [w.key for w in chosen],
            "complete": complete,
            "elapsed_s": round(time.perf_counter() - started, 1),
            "spark_conf": ctx.cache["spark_conf"],
            "master": ctx.cache["spark_conf"].get("master", "local[*]"),
            "commit": commit,
            "load_avg_start": load_before,
            "load_avg_end": _load(),
        }
        return write_json(results, out or DEFAULT_OUT, meta, record)

    echo(
        f"dyntable benchmarks  size={size}  pairs={ctx.pairs}  "
        "ratio = baseline time / our time (higher is better)"
    )
    try:
        for workload in chosen:
            t0 = time.perf_counter()
            memory = PeakMemory()
            try:
                with memory:
                    fn = getattr(importlib.import_module(workload.module), workload.function)
                    produced = fn(ctx)
            except Exception as e:  # noqa: BLE001 - one broken workload must not hide the others
                produced = [failed(workload.key, workload.title, e)]
            for result in produced:
                result.seconds = round(time.perf_counter() - t0, 1)
                result.peak_rss_mib = memory.report_mib()
                results.append(result)
                echo(format_line(result))
            record = save(complete=False)
    finally:
        session = ctx.cache.get("spark")
        if session is not None:
            session.stop()
        if workdir is None:
            shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.perf_counter() - started
    path = save(complete=True)
    echo(
        f"{len(results)} results in {elapsed:.0f} s; "
        f"{sum(1 for r in results if not r.ok)} failed; JSON: {path}"
    )
    return results, path


__all__ = ["DEFAULT_OUT", "WORKLOADS", "Workload", "run_suite", "select"]
