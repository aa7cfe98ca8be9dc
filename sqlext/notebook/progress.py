"""Spark job progress for a notebook cell: poll the status tracker while a statement runs elsewhere.

The statement runs in a worker thread and the cell's own (main) thread polls Spark's
``StatusTracker`` and redraws the bar: output published from the main thread reaches the
cell it belongs to, and a kernel interrupt (``KeyboardInterrupt``) lands there too, where it
becomes a cancellation of the statement's Spark job group. No IPython import here: the bar is
any object with ``show(progress)`` and ``clear()``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Progress:
    """How far the running statement's Spark stages are."""

    done: int  # completed tasks of the active stages
    total: int  # tasks of the active stages (0: no stage running, e.g. planning or committing)
    stages: int
    elapsed: float  # seconds since the statement started

    @property
    def text(self) -> str:
        """E.g. ``37/100 tasks, 2 stages, 3.2 s`` or ``running... 3.2 s``."""
        if not self.total:
            return f"running... {self.elapsed:.1f} s"
        stages = "1 stage" if self.stages == 1 else f"{self.stages} stages"
        return f"{self.done}/{self.total} tasks, {stages}, {self.elapsed:.1f} s"


class Bar(Protocol):
    def show(self, progress: Progress) -> None: ...

    def clear(self) -> None: ...


def stage_progress(tracker: Any, elapsed: float, group: str | None = None) -> Progress:
    """The progress of the active stages (of ``group``'s jobs when given) from a pyspark ``StatusTracker``.

    The tracker talks to the JVM: any failure (a stopping context) reads as "no stage running"
    rather than breaking the statement it only reports on.
    """
    infos = []
    if tracker is not None:
        try:
            active = list(tracker.getActiveStageIds())
            if group is not None:
                ours: set[int] = set()
                for job_id in tracker.getJobIdsForGroup(group):
                    job = tracker.getJobInfo(job_id)
                    if job is not None:
                        ours.update(job.stageIds)
                active = [s for s in active if s in ours]
            for stage_id in active:
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    infos.append(info)
        except Exception:  # noqa: BLE001 - see docstring
            infos = []
    total = sum(int(i.numTasks) for i in infos)
    # A retried or speculative task can count twice: cap each stage at its own task count.
    done = sum(min(int(i.numCompletedTasks), int(i.numTasks)) for i in infos)
    return Progress(done, total, len(infos), elapsed)


def run_with_progress(
    work: Callable[[], Any],
    *,
    bar: Bar | None,
    tracker: Any = None,
    group: str | None = None,
    cancel: Callable[[], None] | None = None,
    delay: float = 1.0,
    interval: float = 0.25,
) -> Any:
    """Run ``work`` in a worker thread; show progress on ``bar`` once it has run ``delay`` seconds.

    Returns what ``work`` returned and raises what it raised. On ``KeyboardInterrupt`` (a kernel
    interrupt) ``cancel`` is called to stop the Spark jobs, then the interrupt propagates.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as e:  # noqa: BLE001 - handed to the cell's thread, which re-raises it
            box["error"] = e

    thread = threading.Thread(target=target, name="dyntable-notebook-statement", daemon=True)
    start = time.monotonic()
    thread.start()
    shown = False
    try:
        while thread.is_alive():
            thread.join(interval)
            elapsed = time.monotonic() - start
            if bar is not None and thread.is_alive() and elapsed >= delay:
                shown = True  # before drawing: an interrupt can arrive while it draws
                bar.show(stage_progress(tracker, elapsed, group))
    except KeyboardInterrupt:
        if cancel is not None:
            try:
                cancel()
            except Exception:  # noqa: BLE001 - best effort: the statement may have just finished
                pass
        raise
    finally:
        if bar is not None and shown:
            bar.clear()
    if "error" in box:
        raise box["error"]
    return box.get("value")
