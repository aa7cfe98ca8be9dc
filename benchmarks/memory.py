"""Peak resident memory of the processes one benchmark workload runs in.

A workload runs in up to four kinds of process: the driver's Python (this process), the driver's
JVM (started by PySpark), executor JVMs (only on ``local-cluster`` or a real cluster; a ``local``
master runs its tasks in the driver JVM) and Python workers (started by a JVM for each Python
task). :class:`PeakMemory` samples the process tree under this process from ``/proc`` and
reports, per kind, the largest peak resident set (``VmHWM``, which the kernel keeps, so a peak
between two samples is not missed while the process lives). At the start of a workload the peaks
are reset (``/proc/<pid>/clear_refs``) so each workload reports its own. Linux only; elsewhere the
report is empty.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

PROC = Path("/proc")
KINDS = ("driver_python", "driver_jvm", "executor_jvm", "python_worker")


def _children() -> dict[int, list[int]]:
    """Parent pid → child pids, for every process visible in /proc."""
    tree: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: the ppid follows the last ')'.
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _command(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _peak_kib(pid: int) -> int:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def classify(root: int) -> dict[int, str]:
    """The kind of every process under ``root`` (``root`` itself is the driver's Python)."""
    return classify_tree(root, _children(), _command)


#: In the command line of every Spark executor JVM (``CoarseGrainedExecutorBackend`` on
#: local-cluster, standalone and YARN, ``KubernetesExecutorBackend`` on Kubernetes).
EXECUTOR_CLASS = "ExecutorBackend"


def classify_tree(root: int, tree: dict[int, list[int]], command: Callable[[int], str]) -> dict[int, str]:
    """The kinds of the processes under ``root`` in ``tree`` (parent → children), reading each
    one's command line with ``command``.

    The first JVM below the driver's Python is the driver JVM; a JVM running Spark's executor
    class is an executor; Python processes below a JVM are workers (PySpark's daemon and the
    workers it forks). Any other process that looks like a JVM below a JVM (or an executor below an
    identical one) is not counted: it is the JVM itself in the moment between fork and exec of a
    child it starts (the Python daemon, a shell), showing the parent's command line and, sharing
    its memory, the parent's peak — once it was a 1.5 GB "executor" of a ``local[*]`` run.
    """
    kinds = {root: "driver_python"}
    stack = [(child, "driver_python", "") for child in tree.get(root, [])]
    while stack:
        pid, parent_kind, parent_line = stack.pop()
        line = command(pid)
        program = line.split(" ", 1)[0]
        record = False
        if "java" in program:
            if parent_kind == "driver_python":
                kind, record = "driver_jvm", True
            elif EXECUTOR_CLASS in line and line != parent_line:
                kind, record = "executor_jvm", True
            else:
                kind = parent_kind  # a JVM between fork and exec: not a process of its own
        elif "python" in program and parent_kind != "driver_python":
            kind, record = "python_worker", True
        else:
            kind = parent_kind  # a shell or launcher in between keeps its parent's kind
        if record:
            kinds[pid] = kind
        stack.extend((child, kind, line) for child in tree.get(pid, []))
    return kinds


class PeakMemory:
    """Samples the peak RSS per process kind while a workload runs (``with PeakMemory() as m``)."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self.peaks_kib: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._root = os.getpid()

    @staticmethod
    def available() -> bool:
        return (PROC / str(os.getpid()) / "status").exists()

    def _sample(self) -> None:
        for pid, kind in classify(self._root).items():
            self.peaks_kib[kind] = max(self.peaks_kib.get(kind, 0), _peak_kib(pid))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> PeakMemory:
        if not self.available():
            return self
        for pid in classify(self._root):
            try:  # "5" resets the peak resident set (VmHWM) to the current one
                (PROC / str(pid) / "clear_refs").write_text("5")
            except OSError:
                pass
        self._sample()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._sample()

    def report_mib(self) -> dict[str, int]:
        """Peak RSS in MiB per kind seen (kinds never seen are left out)."""
        return {kind: round(self.peaks_kib[kind] / 1024) for kind in KINDS if self.peaks_kib.get(kind)}


__all__ = ["EXECUTOR_CLASS", "KINDS", "PeakMemory", "classify", "classify_tree"]
