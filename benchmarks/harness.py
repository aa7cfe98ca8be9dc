"""Benchmark machinery: paired timing of two arms, ratios, result checks, printing and JSON.

Invariants (docs/benchmarks.md):
* A figure is always ``ratio = baseline_time / our_time`` (higher is better), both arms timed
  in this process, in this run, on the same rows. Each arm is warmed up once, then the arms
  alternate A B A B for ``pairs`` pairs; the best and median of the per-pair ratios are reported.
* Only ``Arm.run`` is timed. ``Arm.setup`` (fresh copies, prepared messages) runs before each
  call and ``Arm.verify`` (reading a result back) after it, both outside the timed region.
* Every comparison checks its result (row count and checksum) on the warm-up and the first
  pair (every pair when the arm's run returns its :class:`Outcome` itself, which is free); a
  failed check is recorded and printed, never hidden, so a fast wrong answer cannot pass.
* Checksums are order-independent and vectorised (numpy over Arrow buffers); no per-row Python.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import os
import platform
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

MIN_PAIRS = 3
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xBF58476D1CE4E5B9)
_K3 = np.uint64(0x94D049BB133111EB)
_NULL_CODE = np.uint64(0x5BD1E9955BD1E995)


# ------------------------------------------------------------------------------------------------
# sizes
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    """How big each workload's data is for one ``--size``.

    Attributes:
        name: ``tiny`` | ``small`` | ``medium`` | ``large``.
        rows: rows of scan/write tables (W1, W2 base, W3 base, P1).
        cdc_rows: rows of the W2 CDC batch.
        update_rows: rows of each of the 4 update runs of W3/W4.
        history_commits: commits of the W5 history table (= its live files).
        snapshots: retained snapshots of the W6 flatness table.
        snapshot_budget_s: seconds allowed for building the W6 table; fewer snapshots if exceeded.
        commits_per_timing: commits timed together in one W6 run (one commit is ~ms).
        stream_commits: commits a W9 stream reads.
        merge_rows: rows of the merge-throughput input (5 runs).
        p1_rows: rows written and read by P1.
        writer_commits: commits each W10 writer process makes.
        writer_rows: rows of each W10 commit.
        small_file_commits: commits of the W3c small-files table (one small file each).
        small_file_rows: rows of each W3c commit.
        expiry_snapshots: snapshots of the W7 expiration table.
        metadata_files: live files of the M1-M3 table (one per partition per commit).
        metadata_partitions: partitions of the M1-M3 table.

    ``medium`` is ``small`` times three and ``large`` ``small`` times ten in every direction
    issue 25 names: rows for W1-W4, W9, P1/P2 and the merge input; history (commits, snapshots,
    live files) for W5-W8, T and M.
    """

    name: str
    rows: int
    cdc_rows: int
    update_rows: int
    history_commits: int
    snapshots: int
    snapshot_budget_s: float
    commits_per_timing: int
    stream_commits: int
    merge_rows: int
    p1_rows: int
    writer_commits: int = 5
    writer_rows: int = 500
    small_file_commits: int = 20
    small_file_rows: int = 250
    expiry_snapshots: int = 1001
    metadata_files: int = 10_000
    metadata_partitions: int = 1_000


SIZES: dict[str, Size] = {
    "tiny": Size(
        "tiny", 5_000, 2_000, 1_000, 30, 60, 20.0, 5, 10, 20_000, 5_000, 3, 200, expiry_snapshots=51,
        metadata_files=500, metadata_partitions=50,
    ),
    "small": Size(
        "small", 1_000_000, 1_000_000, 200_000, 1_000, 10_000, 90.0, 20, 100, 2_000_000, 1_000_000,
        20, 20_000, 500, 4_000,
    ),
    "medium": Size(
        "medium", 3_000_000, 3_000_000, 600_000, 3_000, 30_000, 300.0, 30, 100, 6_000_000, 3_000_000,
        20, 20_000, 500, 12_000, 3_001, 30_000,
    ),
    "large": Size(
        "large", 10_000_000, 10_000_000, 2_000_000, 10_000, 100_000, 900.0, 50, 100, 20_000_000,
        10_000_000, 20, 20_000, 500, 40_000, 10_001, 100_000,
    ),
}


@dataclass
class Context:
    """What every workload gets: the size, the pair count, a scratch directory, a shared cache.

    ``cache`` holds fixtures several workloads share (the Spark session, the PK table with
    update runs); :meth:`path` hands out fresh directories under ``workdir``.
    """

    size: Size
    pairs: int
    workdir: Path
    cache: dict[str, Any] = field(default_factory=dict)
    _counter: int = 0

    def path(self, name: str) -> str:
        self._counter += 1
        directory = self.workdir / f"{name}-{self._counter}"
        directory.mkdir(parents=True, exist_ok=True)
        return str(directory)


# ------------------------------------------------------------------------------------------------
# outcomes and checksums
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one arm produced, reduced to what can be compared: a row count and a checksum."""

    rows: int
    checksum: Any = None


class CheckFailed(Exception):
    """An arm's result differs from what it must be."""


def same_result(ours: Outcome, baseline: Outcome) -> None:
    """The default check: both arms produced the same rows (count, and checksum when both have one)."""
    if ours.rows != baseline.rows:
        raise CheckFailed(f"row count {ours.rows:,} differs from the baseline's {baseline.rows:,}")
    if ours.checksum is not None and baseline.checksum is not None and ours.checksum != baseline.checksum:
        raise CheckFailed(f"checksum {ours.checksum} differs from the baseline's {baseline.checksum}")


def expect(
    expected_ours: Outcome | None, expected_baseline: Outcome | None
) -> Callable[[Outcome, Outcome], None]:
    """A check against fixed expectations per arm (for arms that by design produce different rows)."""

    def check(ours: Outcome, baseline: Outcome) -> None:
        if expected_ours is not None:
            try:
                same_result(ours, expected_ours)
            except CheckFailed as e:
                raise CheckFailed(f"ours: {e} (expected)") from None
        if expected_baseline is not None:
            try:
                same_result(baseline, expected_baseline)
            except CheckFailed as e:
                raise CheckFailed(f"baseline: {e} (expected)") from None

    return check


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, vectorised (uint64 arithmetic wraps, which is intended)."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * _K2
        x = x ^ (x >> np.uint64(27))
        x = x * _K3
        return x ^ (x >> np.uint64(31))


_SHORT_BYTES = 64  # strings up to this length are hashed column-by-column, longer ones by prefix sums
_WEIGHTS = None


def _position_weights(count: int) -> np.ndarray:
    global _WEIGHTS
    if _WEIGHTS is None or len(_WEIGHTS) < count:
        _WEIGHTS = _mix(np.arange(max(count, _SHORT_BYTES), dtype=np.uint64) + _K1)
    return _WEIGHTS


def _bytes_codes(arr: pa.Array) -> np.ndarray:
    """One uint64 per string/binary value from its bytes (position-sensitive), vectorised."""
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        offset_type = np.int64
    else:
        offset_type = np.int32
    _validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[arr.offset : arr.offset + len(arr) + 1].astype(
        np.int64
    )
    lengths = np.diff(offsets)
    n = len(lengths)
    longest = int(lengths.max()) if n else 0
    if data_buf is None or longest == 0:
        return _mix(lengths.astype(np.uint64) * _K1)
    data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]]
    starts = offsets[:-1] - offsets[0]
    sums = np.zeros(n, np.uint64)
    with np.errstate(over="ignore"):
        if int(lengths.min()) == longest:  # fixed width: a matrix, one column per byte position
            matrix = data.reshape(n, longest)
            weights = _position_weights(longest)
            for j in range(longest):
                sums += (matrix[:, j].astype(np.uint64) + np.uint64(1)) * weights[j]
        elif longest <= _SHORT_BYTES:
            weights = _position_weights(longest)
            last = len(data) - 1
            for j in range(longest):
                present = lengths > j
                byte = data[np.minimum(starts + j, last)].astype(np.uint64) + np.uint64(1)
                sums += np.where(present, byte * weights[j], np.uint64(0))
        else:
            position = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
            weights = _mix(position.astype(np.uint64) + _K1)
            prefix = np.concatenate(
                [
                    np.zeros(1, np.uint64),
                    np.cumsum((data.astype(np.uint64) + np.uint64(1)) * weights, dtype=np.uint64),
                ]
            )
            sums = prefix[starts + lengths] - prefix[starts]
        return _mix(sums + lengths.astype(np.uint64) * _K1)


def _array_codes(arr: pa.Array) -> np.ndarray:
    """One uint64 per value; equal values (after normalising the type) give equal codes."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_timestamp(t):
        arr = arr.cast(pa.timestamp("us", t.tz)).cast(pa.int64())
    elif pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        arr = arr.cast(pa.int64()) if t.bit_width == 64 else arr.cast(pa.int32()).cast(pa.int64())
    elif pa.types.is_boolean(t) or pa.types.is_integer(t):
        arr = arr.cast(pa.int64())
    elif pa.types.is_floating(t):
        arr = arr.cast(pa.float64())
    elif not (
        pa.types.is_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_string(t)
        or pa.types.is_large_binary(t)
    ):
        arr = arr.cast(pa.string())  # decimals, nested: compare by their canonical text
    if (
        pa.types.is_string(arr.type)
        or pa.types.is_binary(arr.type)
        or pa.types.is_large_string(arr.type)
        or pa.types.is_large_binary(arr.type)
    ):
        codes = _bytes_codes(arr)
    else:
        values = arr.fill_null(0).to_numpy(zero_copy_only=False)
        codes = _mix(values.view(np.uint64) + _K1)
    if arr.null_count:
        codes = np.where(arr.is_null().to_numpy(zero_copy_only=False), _NULL_CODE, codes)
    return codes


def arrow_checksum(table: pa.Table, columns: Sequence[str] | None = None) -> Outcome:
    """Row count and an order-independent checksum of ``table`` (optionally of some columns).

    The checksum is the wrapping sum of a per-row hash that mixes each column's value codes in
    column order, so it does not depend on row order or chunking, and normalises types that
    different engines hand back differently (timestamp units, int widths, string vs large_string).
    """
    names = list(columns) if columns is not None else table.column_names
    table = table.select(names).combine_chunks()
    n = table.num_rows
    if n == 0:
        return Outcome(0, 0)
    row = np.zeros(n, np.uint64)
    with np.errstate(over="ignore"):
        for i, name in enumerate(names):
            column = table.column(name)
            codes = _array_codes(
                column.chunk(0) if column.num_chunks == 1 else pa.concat_arrays(column.chunks)
            )
            row = _mix(row * _K1 + codes + np.uint64(i + 1))
        total = int(np.sum(row, dtype=np.uint64))
    return Outcome(n, total)


def spark_checksum(df: Any) -> Outcome:
    """Row count and an order-independent checksum of a Spark DataFrame (one aggregate job).

    Uses Spark's 32-bit ``hash`` summed into a bigint: cheap, and the sum of 2^31 values can
    not overflow below ~4 billion rows (ANSI mode would raise on overflow).
    """
    from pyspark.sql import functions as F

    row = df.agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.hash(*[F.col(c) for c in df.columns])).alias("h")
    ).collect()[0]
    return Outcome(int(row["n"]), int(row["h"] or 0))


# ------------------------------------------------------------------------------------------------
# arms, pairs and results
# ------------------------------------------------------------------------------------------------


@dataclass
class Arm:
    """One side of a comparison.

    Attributes:
        run: the timed work; returns an :class:`Outcome`, or anything ``verify`` understands.
        setup: untimed preparation before each run (e.g. a fresh copy of the input table).
        verify: untimed, turns ``run``'s return value into an :class:`Outcome` (e.g. reads the
            written table back); called on the warm-up and the first pair only.
        warmup: a cheaper run used only to warm up (imports, JIT, caches); default ``run``.
    """

    run: Callable[[], Any]
    setup: Callable[[], None] | None = None
    verify: Callable[[Any], Outcome] | None = None
    warmup: Callable[[], Any] | None = None


@dataclass
class Result:
    """One printed line / JSON record."""

    key: str
    title: str
    target: str = ""
    ratios: list[float] = field(default_factory=list)
    ours_times: list[float] = field(default_factory=list)
    baseline_times: list[float] = field(default_factory=list)
    rows: int | None = None
    check: str = "ok"
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    error_detail: str | None = None  # the full traceback text, JSON only
    seconds: float | None = None  # wall time of the whole workload (setup included), for context
    # Peak resident memory (MiB) of the workload's processes by kind (benchmarks/memory.py), JSON only.
    peak_rss_mib: dict[str, int] = field(default_factory=dict)

    @property
    def best(self) -> float | None:
        return max(self.ratios) if self.ratios else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    @property
    def ok(self) -> bool:
        return self.error is None and self.check == "ok"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["best"] = self.best
        out["median"] = self.median
        out["ours_median_s"] = statistics.median(self.ours_times) if self.ours_times else None
        out["baseline_median_s"] = statistics.median(self.baseline_times) if self.baseline_times else None
        return out


@dataclass(frozen=True)
class Reported:
    """A run's return value carrying its own elapsed time, measured inside another process.

    Used when the wall clock around the call would include a hand-off that is not part of the
    work (e.g. pypaimon in its own interpreter: request parsing, Arrow IPC exchange).
    """

    seconds: float
    value: Any = None


def _timed(arm: Arm, fn: Callable[[], Any]) -> tuple[float, Any]:
    if arm.setup is not None:
        arm.setup()
    gc.collect()
    start = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - start
    if isinstance(value, Reported):
        return value.seconds, value.value
    return elapsed, value


def _outcome(arm: Arm, value: Any) -> Outcome | None:
    if arm.verify is not None:
        return arm.verify(value)
    return value if isinstance(value, Outcome) else None


def compare(
    key: str,
    title: str,
    ours: Arm,
    baseline: Arm,
    *,
    pairs: int,
    rows: int | None = None,
    target: str = "",
    check: Callable[[Outcome, Outcome], None] = same_result,
) -> Result:
    """Warm up both arms, then time ``pairs`` alternating pairs and check the results.

    Args:
        key: short workload id (``W1``).
        title: what is measured.
        ours: our arm.
        baseline: the baseline arm.
        pairs: timed pairs (at least :data:`MIN_PAIRS`).
        rows: rows processed per run, printed for context.
        target: the target ratio (docs/benchmarks.md), printed for context.
        check: raises :class:`CheckFailed` when the outcomes are wrong.

    Returns:
        The result; a failed check is recorded in ``result.check``, not raised.
    """
    pairs = max(MIN_PAIRS, pairs)
    result = Result(key, title, target, rows=rows)
    problems: list[str] = []
    checked = 0

    def verify(ours_value: Any, base_value: Any) -> None:
        nonlocal checked
        a, b = _outcome(ours, ours_value), _outcome(baseline, base_value)
        if a is None or b is None:
            return
        checked += 1
        try:
            check(a, b)
        except CheckFailed as e:
            problems.append(str(e))

    _, ours_value = _timed(ours, ours.warmup or ours.run)
    _, base_value = _timed(baseline, baseline.warmup or baseline.run)
    if ours.warmup is None and baseline.warmup is None:
        verify(ours_value, base_value)
    for i in range(pairs):
        t_ours, ours_value = _timed(ours, ours.run)
        t_base, base_value = _timed(baseline, baseline.run)
        result.ours_times.append(t_ours)
        result.baseline_times.append(t_base)
        result.ratios.append(t_base / t_ours if t_ours > 0 else float("inf"))
        cheap = ours.verify is None and baseline.verify is None
        if i == 0 or cheap:
            verify(ours_value, base_value)
    if not checked:
        problems.append("no outcome to check: an arm returned neither an Outcome nor has a verify")
    if problems:
        result.check = "FAILED: " + "; ".join(dict.fromkeys(problems))
    return result


def _portable(text: str) -> str:
    """``text`` with the checkout's and the environment's directories cut off the paths, so a
    recorded traceback names files as ``benchmarks/harness.py`` and ``site-packages/pyspark/...``."""
    root = str(Path(__file__).resolve().parents[1]) + "/"
    return re.sub(r'"[^"]*/site-packages/', '"site-packages/', text.replace(root, ""))


def failed(key: str, title: str, error: BaseException) -> Result:
    """A result for a workload that raised: recorded and printed (condensed), the suite goes on."""
    import traceback

    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    summary = lines[0] if lines else ""
    if len(lines) > 1:
        summary += " ... " + lines[-1]
    if len(summary) > 400:
        summary = summary[:400] + " ..."
    detail = _portable("".join(traceback.format_exception(type(error), error, error.__traceback__)))
    return Result(key, title, error=f"{type(error).__name__}: {summary}", error_detail=detail)


# ------------------------------------------------------------------------------------------------
# printing and JSON
# ------------------------------------------------------------------------------------------------


def fmt_seconds(seconds: float) -> str:
    if seconds < 0.1:
        return f"{seconds * 1000:.2f} ms"
    return f"{seconds:.2f} s"


def _fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


_UNPRINTED = {"latencies_s"}  # kept in the JSON only


def format_line(result: Result) -> str:
    """``W1  append write   ratio best 0.91 median 0.88  (ours 1.23 s, baseline 1.12 s, 1,000,000 rows)``."""
    head = f"{result.key:<6}{result.title:<33} "
    if result.error is not None:
        return f"{head}ERROR {result.error}"
    parts = [head]
    if result.ratios:
        parts.append(f"ratio best {result.best:.2f} median {result.median:.2f}")
        context = [
            f"ours {fmt_seconds(statistics.median(result.ours_times))}",
            f"baseline {fmt_seconds(statistics.median(result.baseline_times))}",
        ]
        if result.rows is not None:
            context.append(f"{result.rows:,} rows")
        parts.append(f"  ({', '.join(context)})")
    if result.target:
        parts.append(f"  target {result.target}")
    shown = {k: v for k, v in result.extra.items() if k not in _UNPRINTED}
    if shown:
        parts.append("  " + ", ".join(f"{k} {_fmt_value(v)}" for k, v in shown.items()))
    parts.append("  check ok" if result.check == "ok" else f"  CHECK {result.check}")
    if result.peak_rss_mib:
        parts.append("  peak MiB " + " ".join(f"{k} {v}" for k, v in result.peak_rss_mib.items()))
    for note in result.notes:
        parts.append(f"  [{note}]")
    return "".join(parts)


def write_json(
    results: Sequence[Result],
    out_dir: str | os.PathLike[str],
    meta: dict[str, Any],
    path: Path | None = None,
) -> Path:
    """Write the run as ``<out_dir>/<UTC timestamp>.json`` (or over ``path``: a run rewrites its own
    record after every workload) and return the path. The file is replaced atomically, so a run
    killed while writing leaves the previous complete record, never a truncated one."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    if path is None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = directory / f"{stamp}.json"
    doc = {
        "meta": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "pyarrow": pa.__version__,
            "numpy": np.__version__,
            **meta,
        },
        "results": [r.to_json() for r in results],
    }
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(doc, indent=2, default=str))
    os.replace(partial, path)
    return path


def unique_keys_last(table: pa.Table, key: str, order: Sequence[tuple[str, str]]) -> pa.Table:
    """The last row per ``key`` after sorting by ``order`` (vectorised; for expected results)."""
    ordered = table.sort_by(list(order))
    keys = ordered.column(key).to_numpy()
    last = np.ones(len(keys), dtype=bool)
    last[:-1] = keys[1:] != keys[:-1]
    return ordered.filter(pa.array(last))


__all__ = [
    "Arm",
    "CheckFailed",
    "Context",
    "MIN_PAIRS",
    "Outcome",
    "Reported",
    "Result",
    "SIZES",
    "Size",
    "arrow_checksum",
    "compare",
    "expect",
    "failed",
    "fmt_seconds",
    "format_line",
    "same_result",
    "spark_checksum",
    "unique_keys_last",
    "write_json",
]
