"""Crash safety under injected storage faults: every N-th call of every FileIO operation.

For each scenario (writes, compactions, overwrites, partition drops, truncation; see
``crash_scenarios``) and each operation kind, the operation is run once per call number N with
the N-th call of that kind failing — before it acts (with torn writes: half the bytes land) and
after it acted. Then the table, reopened with a plain FileIO, must read exactly its state before
the operation or after it; an operation that raised must have left the old state (unless it
raised CommitStateUnknownError), one that returned the new state; and a following commit works.

Each trial starts from a copy of one template table, so the call counts are the same every time.
The default run covers the operations that change storage; ``slow`` adds reads, stats and lists.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from engine import open_catalog
from engine.errors import CommitStateUnknownError
from engine.io.faults import FailingFileIO
from engine.table import Table
from tests.engine.crash_scenarios import SCENARIOS, TABLE, Rows, Scenario, read_state, rows

MUTATING = ["write", "try_create", "rename", "delete", "mkdirs"]
OBSERVING = ["read", "stat", "list"]
FOLLOW_UP = rows("c", [100], "follow-up")


class _Template:
    """A scenario's table built once; trials run on copies of it."""

    def __init__(self, scenario: Scenario, root: Path) -> None:
        self.scenario = scenario
        self.root = root
        self.warehouse = str(root / "template")
        scenario.setup(self.warehouse)
        self.before = read_state(self.warehouse)
        self.after = scenario.expect(self.before)
        self._copies = 0

    def copy(self) -> str:
        self._copies += 1
        target = str(self.root / f"trial-{self._copies}")
        shutil.copytree(self.warehouse, target)
        return target

    def calls(self, operation: str) -> int:
        """How many calls of ``operation`` the scenario makes (measured on a fault-free copy)."""
        warehouse = self.copy()
        io, _ = self._run(warehouse, FailingFileIO, operation, 10**9)
        shutil.rmtree(warehouse)
        return io.calls

    def _run(
        self, warehouse: str, factory: Any, operation: str, n: int, **kw: Any
    ) -> tuple[Any, BaseException | None]:
        plain = open_catalog(warehouse).get_table(TABLE)
        io = factory(plain.store.io, operation, n, **kw)
        try:
            self.scenario.run(Table(None, plain.identifier, io, plain.store.paths, plain.store.schema))
        except Exception as e:  # noqa: BLE001 - the injected failure, or what it turned into
            return io, e
        return io, None

    def trial(self, operation: str, n: int, after: bool) -> str | None:
        """Runs one faulty trial; returns a description of the violation, or None."""
        warehouse = self.copy()
        try:
            io, error = self._run(warehouse, FailingFileIO, operation, n, after=after, torn=not after)
            where = f"{self.scenario.name} {operation} n={n} {'after' if after else 'before'}"
            if io.failures == 0:
                return None  # the scenario made fewer calls this time: nothing was injected
            try:
                state = read_state(warehouse)
            except Exception as e:  # noqa: BLE001 - a table that cannot be read is the worst outcome
                return f"{where}: table unreadable afterwards: {type(e).__name__}: {e}"
            outcome = _describe(error)
            if state not in (self.before, self.after):
                return f"{where}: partial state after {outcome}: {state}"
            if error is None and state != self.after and self.before != self.after:
                return f"{where}: returned normally but its effect is missing"
            if error is not None and not isinstance(error, CommitStateUnknownError):
                if state != self.before and self.before != self.after:
                    return f"{where}: {outcome} yet the operation took effect"
            return _follow_up(warehouse, state, where)
        finally:
            shutil.rmtree(warehouse, ignore_errors=True)


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "success"
    return f"raised {type(error).__name__}: {str(error)[:160]}"


def _follow_up(warehouse: str, state: Rows, where: str) -> str | None:
    try:
        open_catalog(warehouse).get_table(TABLE).write_arrow(FOLLOW_UP)
        got = read_state(warehouse)
    except Exception as e:  # noqa: BLE001
        return f"{where}: the next commit failed: {type(e).__name__}: {e}"
    if got != sorted(state + [("c", 100, "follow-up")]):
        return f"{where}: the next commit read back {got}"
    return None


def _sweep(template: _Template, operations: list[str]) -> tuple[list[str], int]:
    violations: list[str] = []
    trials = 0
    for operation in operations:
        for n in range(1, template.calls(operation) + 1):
            for after in (False, True):
                trials += 1
                problem = template.trial(operation, n, after)
                if problem:
                    violations.append(problem)
    return violations, trials


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_failing_call_of_a_mutating_operation(scenario: Scenario, tmp_path: Path) -> None:
    template = _Template(scenario, tmp_path)
    violations, trials = _sweep(template, MUTATING)
    assert trials > 0
    assert not violations, f"{len(violations)} of {trials} trials broke the contract:\n" + "\n".join(
        violations
    )


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_failing_call_of_a_reading_operation(scenario: Scenario, tmp_path: Path) -> None:
    template = _Template(scenario, tmp_path)
    violations, trials = _sweep(template, OBSERVING)
    assert trials > 0
    assert not violations, f"{len(violations)} of {trials} trials broke the contract:\n" + "\n".join(
        violations
    )


def test_the_sweep_reaches_data_files_manifests_and_snapshots(tmp_path: Path) -> None:
    """The fault layer must see each kind of file the write produces (the defect-9 regression)."""
    template = _Template(SCENARIOS[0], tmp_path)
    for fragment in (".parquet", "/manifest-list-", "/manifest/manifest-", "/snapshot/snapshot-", "LATEST"):
        warehouse = template.copy()
        io, error = template._run(warehouse, FailingFileIO, "any", 10**9, path_contains=fragment)
        assert error is None and io.calls > 0, fragment
