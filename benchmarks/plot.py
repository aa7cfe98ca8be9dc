"""The history of every workload's ratio over recorded runs, drawn as one PNG.

Reads the JSON records ``python -m benchmarks run`` writes (``benchmarks/results/`` is scratch
and git-ignored; ``benchmarks/history/`` holds the runs kept in the repository), keeps the runs
of one ``--size`` (figures of different sizes are not comparable), and draws one small panel
per result key: the median ratio per run as a line, the best as dots, the target as a dashed
line. Invariants:
* Loading and shaping the history (:func:`load_history`) needs only the standard library, so it
  is testable without matplotlib; drawing needs matplotlib (the ``bench`` extra).
* A record that cannot be parsed is skipped with a message, never fatal: one truncated file
  (an interrupted run) must not hide the rest of the history.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
HISTORY_DIR = BENCH_DIR / "history"
RESULTS_DIR = BENCH_DIR / "results"
DEFAULT_DIRS = (HISTORY_DIR, RESULTS_DIR)
_TARGET = re.compile(r">=\s*([0-9]*\.?[0-9]+)")


@dataclass
class Series:
    """One result key's ratios across runs (run indexes refer to :attr:`History.runs`)."""

    key: str
    title: str = ""
    target: float | None = None
    runs: list[int] = field(default_factory=list)
    medians: list[float] = field(default_factory=list)
    bests: list[float] = field(default_factory=list)


@dataclass
class History:
    """The runs of one size, oldest first, and the series of every result key seen in them."""

    size: str
    runs: list[str] = field(default_factory=list)  # record stamps (file names without .json)
    series: dict[str, Series] = field(default_factory=dict)


def parse_target(text: str | None) -> float | None:
    """The first ``>= x`` of a printed target (``">= 0.67, >= 50K entries/s"`` → 0.67), else None."""
    match = _TARGET.search(text or "")
    return float(match.group(1)) if match else None


def master_kind(meta: dict) -> str:
    """``local`` (``local[*]``, ``local[4]``: one JVM), ``local-cluster`` or ``cluster``.

    Runs on separate executor JVMs rank the arms differently from one-JVM runs, so the plots keep
    them apart; records older than the ``master`` field ran on the default ``local[*]``.
    """
    conf = meta.get("spark_conf")
    master = str(meta.get("master") or (conf.get("master") if isinstance(conf, dict) else None) or "local[*]")
    if master.startswith("local-cluster"):
        return "local-cluster"
    return "local" if master.startswith("local") else "cluster"


def _records(dirs: Iterable[Path], warn: Callable[[str], None]) -> list[tuple[str, dict]]:
    seen: dict[str, dict] = {}
    for directory in dirs:
        for path in sorted(Path(directory).glob("*.json")):
            if path.stem in seen:  # the same run kept in history and still in results
                continue
            try:
                doc = json.loads(path.read_text())
                if not isinstance(doc.get("meta"), dict) or not isinstance(doc.get("results"), list):
                    raise ValueError("not a benchmark record (no meta/results)")
            except (OSError, ValueError, AttributeError) as e:
                warn(f"skipped {path}: {type(e).__name__}: {e}")
                continue
            seen[path.stem] = doc
    return sorted(seen.items())  # stamps are UTC timestamps: name order is time order


def load_history(
    size: str,
    dirs: Sequence[Path] = DEFAULT_DIRS,
    warn: Callable[[str], None] = print,
    master: str = "local",
) -> History:
    """Every run of ``size`` on ``master`` (a :func:`master_kind`) found in ``dirs`` with its ratios
    per result key (errors skipped)."""
    history = History(size)
    for stamp, doc in _records(dirs, warn):
        if doc["meta"].get("size") != size or master_kind(doc["meta"]) != master:
            continue
        index = len(history.runs)
        history.runs.append(stamp)
        for result in doc["results"]:
            median, best = result.get("median"), result.get("best")
            if not isinstance(median, (int, float)) or not math.isfinite(median):
                continue
            series = history.series.get(result["key"])
            if series is None:
                series = history.series[result["key"]] = Series(result["key"])
            series.title = result.get("title", "").strip()
            series.target = parse_target(result.get("target")) or series.target
            series.runs.append(index)
            series.medians.append(float(median))
            series.bests.append(float(best) if isinstance(best, (int, float)) else float(median))
    return history


def _run_label(stamp: str) -> str:
    # 20261124T085444698543Z -> 11-24 08:54
    if len(stamp) >= 13 and stamp[8] == "T":
        return f"{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}"
    return stamp


def draw(history: History, out: Path) -> Path:
    """Draw ``history`` as a grid of panels (one per result key) into the PNG ``out``.

    Raises:
        RuntimeError: matplotlib is not installed, or there is nothing to draw.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, never a display
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError("plotting needs matplotlib: pip install -e '.[bench]'") from e
    if not history.series:
        raise RuntimeError(f"no recorded run of size {history.size!r} has a ratio to plot")
    keys = list(history.series)
    cols = min(4, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.9 * rows), squeeze=False)
    last = len(history.runs) - 1
    for ax, key in zip(axes.flat, keys, strict=False):
        s = history.series[key]
        ax.plot(s.runs, s.medians, "-o", color="tab:blue", markersize=4, label="median")
        ax.plot(s.runs, s.bests, ".", color="tab:cyan", markersize=5, label="best")
        top = max(s.bests + s.medians)
        if s.target is not None:
            met = s.medians[-1] >= s.target
            ax.axhline(s.target, linestyle="--", linewidth=1, color="tab:green" if met else "tab:red")
            top = max(top, s.target)
        ax.set_ylim(0, top * 1.15 if top > 0 else 1)
        ax.set_xlim(-0.5, max(last, 0) + 0.5)
        target = f"  (target {s.target:g})" if s.target is not None else ""
        ax.set_title(f"{key}: {s.title}{target}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.annotate(f"{s.medians[-1]:.2f}", (s.runs[-1], s.medians[-1]), textcoords="offset points",
                    xytext=(4, 4), fontsize=7)
        ticks = sorted(set(s.runs))
        if len(ticks) > 8:
            ticks = ticks[:: math.ceil(len(ticks) / 8)]
        ax.set_xticks(ticks)
        ax.set_xticklabels([_run_label(history.runs[i]) for i in ticks], rotation=30, ha="right", fontsize=6)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(
        f"dyntable benchmarks, size={history.size}: ratio = baseline time / our time (higher is better), "
        f"{len(history.runs)} run(s); dashed = target (green met, red missed by the last run)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def plot(
    size: str = "small",
    dirs: Sequence[Path] = DEFAULT_DIRS,
    out: Path | None = None,
    echo: Callable[[str], None] = print,
) -> Path:
    """Load the history of ``size`` from ``dirs`` and write the PNG (default ``history/<size>.png``)."""
    history = load_history(size, dirs, echo)
    path = draw(history, out or HISTORY_DIR / f"{size}.png")
    echo(f"{len(history.runs)} run(s), {len(history.series)} series: {path}")
    return path


__all__ = [
    "DEFAULT_DIRS", "HISTORY_DIR", "History", "Series", "draw", "load_history", "master_kind", "parse_target",
    "plot",
]
