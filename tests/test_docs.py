"""The documentation stays true to the repository (issue 22.8): no pointer outside it, no dead
relative link, every procedure, system table and benchmark workload documented, every section the
code cites present, and the README's commands the ones .ci/run runs. No JVM."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").rglob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_pointer_outside_the_repository_and_no_dead_link(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for outside in ("shared/design", "/work/", "../shared"):
        assert outside not in text, f"{doc.name} points outside the repository: {outside}"
    # nothing is published on PyPI: installs are from the source tree or a wheel built from it
    assert not re.search(r"pip install (-U )?[\"']?dyntable\b", text), f"{doc.name}: pip install dyntable"
    for target in LINK.findall(text):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{doc.relative_to(ROOT)} links to a missing {target}"
        assert ROOT in path.parents or path == ROOT, f"{target} leaves the repository"


def test_code_cites_only_sections_the_design_records_have() -> None:
    notes = (ROOT / "docs" / "design" / "format-notes.md").read_text(encoding="utf-8")
    architecture = (ROOT / "docs" / "design" / "architecture.md").read_text(encoding="utf-8")
    sections = {
        "format-notes.md": set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", notes, re.M)),
        "architecture.md": set(re.findall(r"^## (\d+)\. ", architecture, re.M)),
    }
    cited = 0
    for path in [*ROOT.glob("engine/**/*.py"), *ROOT.glob("sqlext/**/*.py"), *ROOT.glob("tests/**/*.py")]:
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        assert "paimon-format.md" not in text and "ARCHITECTURE.md" not in text, path
        for name, refs in re.findall(
            r"(format-notes\.md|architecture\.md)`*\)?\s+((?:§[\d.]+(?:[–, ]+|\s+and\s+)?)+)", text
        ):
            for ref in re.findall(r"§(\d+(?:\.\d+)?)", refs):
                cited += 1
                assert ref in sections[name], (
                    f"{path.relative_to(ROOT)} cites {name} §{ref}, which has no such section"
                )
    assert cited >= 10


def test_every_procedure_and_system_table_is_in_the_sql_reference() -> None:
    from engine.system_tables import DATA_TABLES
    from engine.system_tables.columns import ROW_TYPES
    from sqlext.execute.procedures.registry import REGISTRY

    reference = (ROOT / "docs" / "sql-reference.md").read_text(encoding="utf-8")
    for name in REGISTRY.names():
        procedure = REGISTRY.get(name)
        row = next((line for line in reference.splitlines() if line.startswith(f"| `{name}`")), None)
        assert row is not None, f"procedure {name} is not in docs/sql-reference.md"
        for param in procedure.parameters:
            assert f"`{param.name}" in row, f"{name}: argument {param.name} undocumented"
        for column in procedure.output.names:
            assert f"`{column}`" in row, f"{name}: result column {column} undocumented"
    for table in [*ROW_TYPES, *DATA_TABLES]:
        row = next((line for line in reference.splitlines() if line.startswith(f"| `${table}`")), None)
        assert row is not None, f"system table ${table} is not in docs/sql-reference.md"
        for field in ROW_TYPES.get(table, ()):
            assert f"`{field.name}`" in row, f"${table}: column {field.name} undocumented"


def test_every_benchmark_workload_is_described() -> None:
    from benchmarks import WORKLOADS

    method = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    rows = [line for line in method.splitlines() if line.startswith("| `")]
    for workload in WORKLOADS:
        assert any(f"`{workload.key}" in row for row in rows), (
            f"benchmark {workload.key} is not in docs/benchmarks.md"
        )


def test_the_readme_commands_are_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    quickstart = "pip install -e . && dyntable-sql -f sql-examples/01_quickstart.sql"
    assert quickstart in readme and (ROOT / "sql-examples" / "01_quickstart.sql").exists()
    assert "bash .ci/run" in readme
    assert 'pip install -e ".[test]"' in readme and '-e ".[test]"' in ci
    # The last pytest command is the whole suite (an earlier one re-runs the engine's suite alone).
    pytest_line = [line for line in ci.splitlines() if line.startswith("python -m pytest")][-1]
    assert pytest_line.strip() in readme, "README must quote .ci/run's pytest command"
    assert "lint-imports" in ci and "lint-imports" in readme
