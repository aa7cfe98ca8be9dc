"""Spark job progress for notebook cells: reading the status tracker, and the polling loop."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from sqlext.notebook.progress import Progress, run_with_progress, stage_progress


class Tracker:
    """pyspark's StatusTracker API over fixed stages: job 1 (ours) runs stage 7, another job stage 8."""

    def getActiveStageIds(self):  # noqa: N802 - pyspark's names
        return [7, 8]

    def getJobIdsForGroup(self, group):  # noqa: N802
        return [1] if group == "ours" else []

    def getJobInfo(self, job_id):  # noqa: N802
        return SimpleNamespace(stageIds=[7])

    def getStageInfo(self, stage_id):  # noqa: N802
        return SimpleNamespace(
            numTasks=10 if stage_id == 7 else 4, numCompletedTasks=12 if stage_id == 7 else 1
        )


def test_stage_progress_counts_the_groups_active_stages():
    assert stage_progress(Tracker(), 1.0, "ours") == Progress(10, 10, 1, 1.0)  # completed capped at total
    assert stage_progress(Tracker(), 1.0) == Progress(11, 14, 2, 1.0)
    assert stage_progress(Tracker(), 1.0, "theirs") == Progress(0, 0, 0, 1.0)


def test_stage_progress_survives_a_failing_tracker():
    class Dying(Tracker):
        def getActiveStageIds(self):  # noqa: N802
            raise RuntimeError("SparkContext stopped")

    assert stage_progress(Dying(), 2.5) == Progress(0, 0, 0, 2.5)
    assert stage_progress(None, 2.5).text == "running... 2.5 s"


def test_progress_text():
    assert Progress(3, 10, 1, 1.25).text == "3/10 tasks, 1 stage, 1.2 s"
    assert Progress(3, 10, 2, 1.0).text == "3/10 tasks, 2 stages, 1.0 s"


class Bar:
    def __init__(self, on_show=None):
        self.shown: list[Progress] = []
        self.cleared = False
        self.on_show = on_show or (lambda: None)

    def show(self, progress):
        self.shown.append(progress)
        self.on_show()

    def clear(self):
        self.cleared = True


def test_bar_is_drawn_while_the_work_runs_then_cleared():
    released = threading.Event()
    bar = Bar(on_show=released.set)
    assert (
        run_with_progress(
            lambda: released.wait(30) and "done",
            bar=bar,
            tracker=Tracker(),
            group="ours",
            delay=0.0,
            interval=0.01,
        )
        == "done"
    )
    assert bar.shown and bar.shown[0].total == 10 and bar.cleared


def test_fast_work_shows_no_bar_and_errors_propagate():
    bar = Bar()
    assert run_with_progress(lambda: 42, bar=bar, delay=60.0) == 42
    assert not bar.shown and not bar.cleared

    def fail():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_with_progress(fail, bar=None)


def test_interrupt_cancels_the_spark_jobs():
    released = threading.Event()
    cancelled: list[bool] = []

    def interrupt():  # a kernel interrupt arrives while the cell's thread draws the bar
        raise KeyboardInterrupt

    def cancel():
        cancelled.append(True)
        released.set()  # what cancelling the job group does to the running statement

    bar = Bar(on_show=interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_with_progress(lambda: released.wait(30), bar=bar, cancel=cancel, delay=0.0, interval=0.01)
    assert cancelled == [True] and bar.cleared
