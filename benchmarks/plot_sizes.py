"""Growth: every workload's ratio and absolute time against the data size, drawn as one PNG.

Where :mod:`benchmarks.plot` follows one size over time, this view takes, for each size
(``small``, ``medium``, ``large``), the newest recorded run that measured a key, and draws the
median ratio (left axis) and our median time (right axis, log scale) against the size. A flat
ratio line means the cost grows like the baseline's; a falling one is a cliff. Loading
(:func:`load_growth`) and the Markdown tables (:func:`growth_table`, :func:`memory_table`) need
only the standard library; drawing needs matplotlib. Only runs on one kind of master are compared
(default ``local``: a ``local-cluster`` run of ``small`` must not stand in for the one-JVM figure).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.plot import DEFAULT_DIRS, HISTORY_DIR, _records, master_kind, parse_target

SIZE_ORDER = ("small", "medium", "large")
# How far the ratio at the largest measured size may drift from the ratio at small (issue 25).
GROWTH_TOLERANCE = 0.20


@dataclass
class Growth:
    """One result key across sizes: per size, the newest run's median ratio and our median time."""

    key: str
    title: str = ""
    target: float | None = None
    sizes: list[str] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    ours_s: list[float] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    peak_rss_mib: list[dict[str, int]] = field(default_factory=list)

    def drift(self) -> float | None:
        """Ratio at the largest measured size over the ratio at ``small``, minus one (None without both)."""
        if len(self.sizes) < 2 or self.sizes[0] != "small" or self.ratios[0] <= 0:
            return None
        return self.ratios[-1] / self.ratios[0] - 1.0


def load_growth(
    dirs: Sequence[Path] = DEFAULT_DIRS,
    sizes: Sequence[str] = SIZE_ORDER,
    warn: Callable[[str], None] = print,
    master: str = "local",
) -> dict[str, Growth]:
    """For every key, the newest run of each size on ``master`` (a :func:`benchmarks.plot.master_kind`)
    that measured it, in ``sizes`` order."""
    newest: dict[tuple[str, str], tuple[str, dict]] = {}
    for stamp, doc in _records(dirs, warn):
        size = doc["meta"].get("size")
        if size not in sizes or master_kind(doc["meta"]) != master:
            continue
        for result in doc["results"]:
            median, ours = result.get("median"), result.get("ours_times") or []
            if isinstance(median, (int, float)) and math.isfinite(median) and ours:
                newest[(result["key"], size)] = (stamp, result)  # records come oldest first
    growth: dict[str, Growth] = {}
    for size in sizes:
        for (key, s), (stamp, result) in sorted(newest.items()):
            if s != size:
                continue
            g = growth.setdefault(key, Growth(key))
            g.title = result.get("title", "").strip()
            g.target = parse_target(result.get("target")) or g.target
            g.sizes.append(size)
            g.ratios.append(float(result["median"]))
            g.ours_s.append(float(statistics.median(result["ours_times"])))
            g.runs.append(stamp)
            rss = result.get("peak_rss_mib")
            g.peak_rss_mib.append(dict(rss) if isinstance(rss, dict) else {})
    return growth


def _cell(values: dict[str, float], size: str, fmt: str) -> str:
    return format(values[size], fmt) if size in values else "–"


def growth_table(growth: dict[str, Growth], sizes: Sequence[str] = SIZE_ORDER) -> str:
    """A Markdown table: per key, the median ratio and our median time at each size, and the drift
    of the largest size's ratio from small's, marked when beyond :data:`GROWTH_TOLERANCE`."""
    head = ["key", *(f"ratio {s}" for s in sizes), *(f"ours {s}" for s in sizes), "largest / small"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, g in growth.items():
        if len(g.sizes) < 2:
            continue
        ratio = dict(zip(g.sizes, g.ratios, strict=True))
        ours = dict(zip(g.sizes, g.ours_s, strict=True))
        drift = g.drift()
        if drift is None:
            verdict = "–"
        else:
            verdict = f"{drift:+.0%}" + (" **beyond 20 %**" if abs(drift) > GROWTH_TOLERANCE else "")
        cells = [key, *(_cell(ratio, s, ".2f") for s in sizes), *(_cell(ours, s, ".3g") + " s" * (s in ours)
                                                                  for s in sizes), verdict]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def memory_table(growth: dict[str, Growth], size: str = "large") -> str:
    """A Markdown table of the peak resident memory (MiB) per process kind of every key at ``size``
    (keys of one workload share the workload's peaks, so each workload is listed once)."""
    kinds = ("driver_python", "driver_jvm", "executor_jvm", "python_worker")
    lines = ["| keys | " + " | ".join(kinds) + " |", "|" + "---|" * (len(kinds) + 1)]
    rows: dict[tuple, list[str]] = {}
    for key, g in growth.items():
        if size not in g.sizes:
            continue
        i = g.sizes.index(size)
        rss = g.peak_rss_mib[i]
        if not rss:
            continue
        rows.setdefault((g.runs[i], tuple(rss.get(k) for k in kinds)), []).append(key)
    for (_run, peaks), keys in rows.items():
        cells = [str(p) if p is not None else "–" for p in peaks]
        lines.append("| " + ", ".join(keys) + " | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def draw_growth(growth: dict[str, Growth], out: Path) -> Path:
    """One panel per key: ratio (line, left) and our time (bars, right, log) per size.

    Raises:
        RuntimeError: matplotlib is not installed, or no key was measured at two sizes.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError("plotting needs matplotlib: pip install -e '.[bench]'") from e
    keys = [k for k, g in growth.items() if len(g.sizes) >= 2]
    if not keys:
        raise RuntimeError("no workload has recorded runs at two or more sizes")
    cols = min(4, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.9 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys, strict=False):
        g = growth[key]
        xs = list(range(len(g.sizes)))
        times = ax.twinx()
        times.bar(xs, g.ours_s, width=0.4, color="tab:gray", alpha=0.35)
        times.set_yscale("log")
        times.tick_params(labelsize=6)
        ax.set_zorder(times.get_zorder() + 1)
        ax.patch.set_visible(False)
        ax.plot(xs, g.ratios, "-o", color="tab:blue", markersize=4)
        top = max(g.ratios + ([g.target] if g.target is not None else []))
        if g.target is not None:
            ax.axhline(g.target, linestyle="--", linewidth=1, color="tab:green")
        ax.set_ylim(0, top * 1.2 if top > 0 else 1)
        ax.set_xticks(xs)
        ax.set_xticklabels(g.sizes, fontsize=7)
        ax.tick_params(labelsize=7)
        ax.set_title(f"{key}: {g.title}", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.suptitle(
        "dyntable benchmarks by size: ratio (blue, left; dashed = target) and our median time "
        "(grey bars, right, log seconds); newest run of each size",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def plot_growth(
    dirs: Sequence[Path] = DEFAULT_DIRS, out: Path | None = None, echo: Callable[[str], None] = print
) -> Path:
    """Draw ``growth.png`` from the newest local-mode run of each size found in ``dirs``."""
    growth = load_growth(dirs, warn=echo)
    path = draw_growth(growth, out or HISTORY_DIR / "growth.png")
    echo(f"{sum(len(g.sizes) >= 2 for g in growth.values())} workloads at two or more sizes: {path}")
    return path


__all__ = [
    "GROWTH_TOLERANCE", "SIZE_ORDER", "Growth", "draw_growth", "growth_table", "load_growth", "memory_table",
    "plot_growth",
]
