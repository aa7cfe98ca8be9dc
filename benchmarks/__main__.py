"""Command line: ``python -m benchmarks run [--size tiny|small|medium|large] [--only W1,W2]
[--pairs N] [--out DIR]``

Also ``--workdir DIR`` (keep the tables) and ``--conf KEY=VALUE`` (extra Spark settings);
``python -m benchmarks plot [--size small] [--dir DIR ...] [--png FILE]`` draws the history of
every ratio over the recorded runs (``--by-size``: ratio and time against size instead;
``--by-size --table``: the same as Markdown tables, with peak memory at ``large``);
``python -m benchmarks list`` names the workloads.

Exit code 0 when every selected workload ran and its result checks passed, 1 otherwise (slow
is never a failure: the ratios are reported, not judged), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from benchmarks import WORKLOADS, run_suite
from benchmarks.harness import SIZES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="dyntable benchmark suite")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run workloads and print one line per result")
    run.add_argument(
        "--size",
        choices=sorted(SIZES),
        default="small",
        help="data size: tiny (smoke test), small (a few minutes on 2 cores), medium (x3), large (x10)",
    )
    run.add_argument(
        "--only", default="", help="comma-separated workload keys: " + ",".join(w.key for w in WORKLOADS)
    )
    run.add_argument("--pairs", type=int, default=3, help="timed A/B pairs per comparison (minimum 3)")
    run.add_argument("--out", default=None, help="directory for the JSON record (default benchmarks/results)")
    run.add_argument(
        "--workdir", default=None, help="keep tables in this directory instead of a temporary one"
    )
    run.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting for the suite's session (repeatable)",
    )
    commands.add_parser("list", help="list the workloads")
    plot = commands.add_parser("plot", help="draw the history of every ratio over the recorded runs (PNG)")
    plot.add_argument("--size", choices=sorted(SIZES), default="small", help="which runs to plot")
    plot.add_argument(
        "--dir",
        action="append",
        default=[],
        help="directory of JSON records (repeatable; default benchmarks/history and benchmarks/results)",
    )
    plot.add_argument("--png", default=None, help="output file (default benchmarks/history/<size>.png)")
    plot.add_argument(
        "--by-size",
        action="store_true",
        help="ratio and time against size (newest small/medium/large runs) -> benchmarks/history/growth.png",
    )
    plot.add_argument(
        "--table",
        action="store_true",
        help="with --by-size: print Markdown tables (ratio and time per size, peak memory at large), no PNG",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "list":
        for w in WORKLOADS:
            print(f"{w.key:<6}{w.title}{'  (Spark)' if w.spark else ''}")
        return 0
    if args.command == "plot":
        from pathlib import Path

        from benchmarks.plot import DEFAULT_DIRS, plot
        from benchmarks.plot_sizes import growth_table, load_growth, memory_table, plot_growth

        dirs = [Path(d) for d in args.dir] or DEFAULT_DIRS
        png = Path(args.png) if args.png else None
        if args.by_size and args.table:
            growth = load_growth(dirs)
            print(growth_table(growth))
            print()
            print(memory_table(growth))
            return 0
        try:
            if args.by_size:
                plot_growth(dirs, png)
            else:
                plot(args.size, dirs, png)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0
    only = [k for k in args.only.split(",") if k.strip()] or None
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            print(f"error: --conf expects KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        conf[key.strip()] = value.strip()
    try:
        results, _path = run_suite(args.size, only, args.pairs, args.out, args.workdir, spark_conf=conf)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
