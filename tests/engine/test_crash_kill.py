"""kill -9 at random points of writes, compactions, overwrites and partition drops.

A child process runs a seeded workload (``crash_workload``) and dies by SIGKILL at a FileIO call
chosen by the trial's seed — deterministic, yet a real kill: no handler, ``finally`` or atexit
runs, half-written files stay. The parent then reopens the tables: they must read the state
after every operation the child acknowledged, plus or minus the one it was running, and a
following commit must work. The call number is drawn from the workload's measured call count,
and the kill lands before or after that call (after: the call's effect happened).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from engine import open_catalog
from engine.io.faults import FAULT_ENV
from tests.engine import crash_workload as wl

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = 3  # distinct operation sequences; trial t runs workload t % WORKLOADS


def _run_child(warehouse: str, seed: int, fault: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    if fault is not None:
        env[FAULT_ENV] = fault
    return subprocess.run(
        [sys.executable, "-m", "tests.engine.crash_workload", warehouse, str(seed)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


@cache
def _template(workload: int, root: str) -> tuple[str, int]:
    """The empty tables and the number of FileIO calls the workload makes (one clean run)."""
    warehouse = os.path.join(root, f"template-{workload}")
    wl.create_tables(warehouse)
    probe = os.path.join(root, f"probe-{workload}")
    shutil.copytree(warehouse, probe)
    done = _run_child(probe, workload, "operation=any,call=1000000000,action=raise")
    assert done.returncode == 0, done.stderr
    assert wl.read_state(probe) == wl.model(wl.operations(workload))
    calls = int(done.stdout.strip().splitlines()[-1].split()[1])
    assert calls > 0
    return warehouse, calls


def _trial(root: Path, seed: int) -> None:
    workload = seed % WORKLOADS
    template, calls = _template(workload, str(root))
    rng = random.Random(seed)
    call, after = rng.randint(1, calls), rng.random() < 0.5
    warehouse = str(root / f"trial-{seed}")
    shutil.copytree(template, warehouse)
    child = _run_child(
        warehouse, workload, f"operation=any,call={call},after={int(after)},torn={int(not after)}"
    )
    where = (
        f"seed {seed}: workload {workload} killed at call {call}/{calls} ({'after' if after else 'before'})"
    )
    assert child.returncode == -signal.SIGKILL, (
        f"{where}: child ended with {child.returncode}: {child.stderr[-2000:]}"
    )

    acked = [int(line.split()[1]) for line in child.stdout.splitlines() if line.startswith("ACK ")]
    assert acked == list(range(len(acked))), where
    ops = wl.operations(workload)
    done = len(acked)
    allowed = {wl.model(ops[:done]), wl.model(ops[: done + 1])}
    state = wl.read_state(warehouse)
    assert state in allowed, f"{where}, {done} ops acknowledged, running {ops[done]}: state {state}"

    # the tables take a following commit, and it reads back on top of the surviving state
    cat = open_catalog(warehouse)
    follow = ("ap-append", "c", (99,), "after-kill")
    wl.apply(cat.get_table("db.ap"), cat.get_table("db.pk"), follow)
    wl.apply(cat.get_table("db.ap"), cat.get_table("db.pk"), ("pk-upsert", "c", (99,), "after-kill"))
    ap, pk = wl.read_state(warehouse)
    assert ("c", 99, "after-kill") in ap and ("c", 99, "after-kill") in pk, where
    assert len(ap) == len(state[0]) + 1, where


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_kill_at_a_seeded_fileio_call(seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    _trial(tmp_path_factory.getbasetemp() / "crash-kill", seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 160))
def test_kill_at_a_seeded_fileio_call_many(seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    _trial(tmp_path_factory.getbasetemp() / "crash-kill", seed)
