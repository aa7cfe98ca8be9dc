"""The magics on the shared SparkSession: the progress bar follows the cell's real Spark tasks, and a
Spark error shows with its caret. (The full kernel round trip is tests/integration/test_notebook.py.)"""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402

import sqlext.notebook.magics as magics  # noqa: E402


@pytest.fixture
def magic(session, monkeypatch):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "sqlext")
    magic = shell.magics_manager.registry["SqlMagic"]
    monkeypatch.setattr(magic, "session", session)
    monkeypatch.setattr(magic, "progress_delay", 0.0)
    monkeypatch.setattr(magic, "short_errors", True)
    monkeypatch.setattr(shell, "kernel", object(), raising=False)  # the bar is drawn only under a kernel
    yield magic


def test_progress_bar_counts_the_cells_spark_tasks(magic, spark, tmp_path, monkeypatch):
    flag = str(tmp_path / "bar-drawn")
    drawn = []

    class Bar:
        def show(self, progress):
            drawn.append(progress)
            if progress.total:  # the tracker saw this cell's running stage: let its task finish
                open(flag, "w").close()

        def clear(self):
            pass

    monkeypatch.setattr(magics, "_DisplayBar", Bar)

    def wait_for_bar(x):
        # Runs in a Python worker inside the Spark task; gives up after 60 s so a broken tracker
        # fails the test below instead of hanging it.
        deadline = time.monotonic() + 60
        while not os.path.exists(flag) and time.monotonic() < deadline:
            time.sleep(0.02)
        return x

    spark.udf.register("wait_for_bar", wait_for_bar, "int")
    with capture_output():
        result = magic.shell.run_cell("%sql SELECT wait_for_bar(7) AS v")
    assert result.success, result.error_in_exec
    assert os.path.exists(flag), [p.text for p in drawn]
    running = [p for p in drawn if p.total]
    assert running and running[0].stages >= 1 and "tasks" in running[0].text
    data = magic.shell.display_formatter.format(result.result)[0]
    assert '<td style="text-align:right">7</td>' in data["text/html"]


def test_spark_error_shows_with_its_caret(magic):
    with capture_output() as out:
        result = magic.shell.run_cell("%%sql\nSELECT 1;\nSELECT nope FROM range(3)")
    assert isinstance(result.error_in_exec, magics.SqlMagicError)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("Error [42703] [UNRESOLVED_COLUMN")
    assert lines[1:] == ["  line 2, column 8", "  SELECT nope FROM range(3)", "         ^"]


def test_kernel_interrupt_cancels_the_cells_spark_job(magic, spark, tmp_path, monkeypatch):
    finished = str(tmp_path / "udf-finished")

    class Bar:
        def show(self, progress):
            if progress.total:  # the task is running: the user interrupts the kernel now
                raise KeyboardInterrupt

        def clear(self):
            pass

    monkeypatch.setattr(magics, "_DisplayBar", Bar)

    def stuck(x):
        # Never returns on its own within the test unless the cancellation failed to kill it.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(0.02)
        open(finished, "w").close()
        return x

    spark.udf.register("stuck", stuck, "int")
    with capture_output():
        result = magic.shell.run_cell("%sql SELECT stuck(1) AS v")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 150
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:  # the cancelled job winds down
        time.sleep(0.05)
    assert not tracker.getActiveJobsIds()
    assert not os.path.exists(finished)  # killed by the cancellation, not run to its end


def test_default_session_binds_to_the_running_spark_session(spark, tmp_path):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        session = magics.default_session_factory(
            str(tmp_path / "wh"), "nb", "local[9]",
            {"spark.sql.shuffle.partitions": "3"}, {"table-storage.bucket": "2"},
        )
        assert session.spark is spark  # no second SparkSession, whatever the master says
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"  # a runtime spark.* setting applies
        assert session.warehouse == str(tmp_path / "wh") and session.current_database == "nb"
        assert session.table_defaults() == {"bucket": "2"}
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
