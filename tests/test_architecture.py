"""The layering rules, enforced: engine/ never imports Spark, SQL libraries or sqlext, nothing
below the engine's ``Table`` facade names it, and each import contract (pyproject.toml and
importlinter-engine.toml, [tool.importlinter]) is shown to fail on a deliberate violation."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("pyspark", "lark", "sqlglot", "sqlext")
# The import-linter configurations: the SQL layer's (annotations may name a higher layer) and the
# engine's (annotations count). CI runs both in one call, as _lint_imports does.
CONTRACT_FILES = ("pyproject.toml", "importlinter-engine.toml")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_engine_is_pure_storage():
    offenders = []
    for path in sorted((ROOT / "engine").rglob("*.py")):
        for module in imported_modules(path):
            if module.split(".")[0] in FORBIDDEN:
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not offenders, "engine/ must not depend on the SQL/Spark layer:\n" + "\n".join(offenders)


# The facade and what sits above it; every other engine module is below and takes the store.
ABOVE_THE_FACADE = {"engine/__init__.py", "engine/catalog.py", "engine/table.py"}


def _names_table(tree: ast.AST) -> list[int]:
    """Lines where a module names ``Table``: imports it, uses the name, or writes it in a string
    annotation (``"Table"``, ``list["Table"]``)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "engine.table":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "Table" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.Import) and any(a.name == "engine.table" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "Table":
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "Table" and not (
            isinstance(node.value, ast.Name) and node.value.id == "pa"
        ):
            lines.append(node.lineno)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    annotations = [n.annotation for n in ast.walk(tree) if isinstance(n, (ast.arg, ast.AnnAssign))]
    annotations += [n.returns for n in ast.walk(tree) if isinstance(n, functions)]
    for annotation in (a for a in annotations if a is not None):
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    inner = ast.parse(node.value, mode="eval")
                except SyntaxError:
                    continue
                if any(isinstance(n, ast.Name) and n.id == "Table" for n in ast.walk(inner)):
                    lines.append(node.lineno)
    return lines


def test_nothing_below_the_facade_names_table():
    # Issue 37, one table identity: below engine/table.py everything takes the store
    # (engine.store.FileStore); the facade is named by no module it delegates to, not even in an
    # annotation, so no call climbs back up into it.
    offenders = []
    for path in sorted((ROOT / "engine").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ABOVE_THE_FACADE:
            continue
        for line in _names_table(ast.parse(path.read_text(), filename=str(path))):
            offenders.append(f"{rel}:{line}")
    assert not offenders, "modules below the Table facade that name it:\n" + "\n".join(offenders)


def test_the_facade_check_sees_every_way_of_naming_table():
    cases = {
        "from engine.table import Table\n": True,
        "import engine.table\n": True,
        "from engine import Table\n": True,
        "def f(t: 'Table') -> None: ...\n": True,
        "def f(t: list['Table']) -> None: ...\n": True,
        "import engine\nx = engine.Table\n": True,
        "import pyarrow as pa\ndef f(t: pa.Table) -> pa.Table: ...\n": False,
        "def f(t: 'FormatTable') -> None: ...\n": False,
    }
    for source, names in cases.items():
        assert bool(_names_table(ast.parse(source))) is names, source


def test_sqlext_uses_engine_through_modules_that_exist():
    # sqlext may import engine modules; this guards against imports of names that moved away.
    missing = []
    for path in sorted((ROOT / "sqlext").rglob("*.py")):
        for module in imported_modules(path):
            if module.startswith("engine"):
                target = ROOT / Path(*module.split("."))
                if not (target.with_suffix(".py").exists() or (target / "__init__.py").exists()):
                    missing.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not missing, "\n".join(missing)


def _imports(path: Path, *, annotations: bool) -> set[str]:
    """Modules a file imports anywhere (top level and functions); imports under
    ``if TYPE_CHECKING:`` count only with ``annotations``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = set() if annotations else {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_sqlext_has_no_import_cycles():
    # Function-level imports count too: a cycle hidden in a function is still a cycle of modules.
    modules = {}
    for path in sorted((ROOT / "sqlext").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        modules[name] = path
    graph = {
        name: {
            m
            for m in _imports(path, annotations=False)
            if m in modules and m != name and not name.startswith(m + ".")
        }
        for name, path in modules.items()
    }
    # Tarjan-free check: repeatedly drop modules that import nothing left; what remains is cyclic.
    remaining = dict(graph)
    while True:
        leaves = [m for m, deps in remaining.items() if not (deps & remaining.keys())]
        if not leaves:
            break
        for m in leaves:
            del remaining[m]
    assert not remaining, "import cycles among: " + ", ".join(sorted(remaining))


def _with_packages(names: set[str]) -> set[str]:
    """``names`` and the packages below ``sqlext`` they are in: importing ``sqlext.execute.procedures.core``
    runs ``sqlext/execute/procedures/__init__.py`` first. (``sqlext`` itself is left out: it imports the
    session only on first use of ``sqlext.SqlSession``.)"""
    out = set(names)
    for name in names:
        parts = name.split(".")
        out.update(".".join(parts[:i]) for i in range(2, len(parts)))
    return out


# The engine's import circles left (annotation imports counted), each inside one package; a circle
# may shrink or go, never grow or appear. The 18-module circle through the Table facade is gone
# (issue 37: one table identity below the facade).
KNOWN_ENGINE_CIRCLES = [
    {"engine.merge.aggregates", "engine.merge.engines", "engine.merge.functions"},
    {"engine.iceberg.commit", "engine.iceberg.deletes", "engine.iceberg.versions"},
    {"engine.write.file_writer", "engine.write.kv_rolling"},
]


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_engine_import_circles_are_only_the_known_ones():
    modules = {}
    for path in sorted((ROOT / "engine").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        modules[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path
    graph = {
        name: {
            m
            for m in _imports(path, annotations=True)
            if m in modules and m != name and not name.startswith(m + ".")
        }
        for name, path in modules.items()
    }
    new = [sorted(c) for c in _circles(graph) if not any(c <= known for known in KNOWN_ENGINE_CIRCLES)]
    assert not new, f"new import circles in the engine: {new}"


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [{"a", "b", "c"}]


def test_planners_stay_out_of_the_session_circle():
    # The session imports every executor and executors name the session in annotations, a circle
    # that annotations alone keep closed. Planners (the modules of the "planners need neither
    # Spark nor the session" contract) must not reach the session by any import, annotations too.
    modules = {}
    for path in sorted((ROOT / "sqlext").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        modules[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path
    contract = next(c for c in _contracts() if c["name"].startswith("planners need neither"))
    offenders = []
    for planner in contract["source_modules"]:
        seen, todo = {planner}, [planner]
        while todo:
            for imported in _with_packages(_imports(modules[todo.pop()], annotations=True)):
                if imported in modules and imported not in seen:
                    seen.add(imported)
                    todo.append(imported)
        if "sqlext.session" in seen:
            offenders.append(planner)
    assert not offenders, f"planner modules that reach sqlext.session: {offenders}"


def test_spark_auto_registration_hook_names_the_dyntable_format():
    # Spark imports ``pyspark_dyntable.DefaultSource`` by itself; a stale import path there only
    # shows up in a user's session, so check it here.
    from pyspark_dyntable import DefaultSource

    assert DefaultSource.name() == "dyntable"


# One deliberate violation per contract: (the contract's name starts with, module written into a copy
# of the tree, its source). Each breaks exactly its own contract.
VIOLATIONS = [
    ("engine is pure storage", "engine/_probe.py", "import sqlglot\n"),
    # An allow-list: a module the old deny-list never named (engine.builders) is refused as well.
    ("sqlext enters the engine by its front door only", "sqlext/_probe.py",
     "from engine.builders.read import ReadBuilder\n"),
    ("sqlext follows a statement's flow", "sqlext/parse/_probe.py", "import sqlext.session\n"),
    ("engine is layered", "engine/io/_probe.py", "import engine.meta.paths\n"),
    # A planner module that reaches for Spark (the copy's table_options.py is replaced by the probe).
    ("planners need neither Spark", "sqlext/execute/table_options.py", "import pyspark\n"),
]


def _contracts() -> list[dict]:
    return [
        c
        for name in CONTRACT_FILES
        for c in tomllib.loads((ROOT / name).read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    ]


def _contract_names() -> list[str]:
    return [c["name"] for c in _contracts()]


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """engine/, sqlext/ and pyproject.toml copied to a directory of their own (sources only)."""
    for package in ("engine", "sqlext"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in CONTRACT_FILES:
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _lint_imports(directory: Path) -> tuple[int, str]:
    """Runs lint-imports on ``directory``; returns its exit code and its output on one line."""
    env = {**os.environ, "PYTHONPATH": str(directory)}
    proc = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
         "--no-cache", *CONTRACT_FILES],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())  # unwrap long contract names


def test_every_import_contract_has_a_violation_test():
    names = _contract_names()
    for prefix, _, _ in VIOLATIONS:
        assert sum(n.startswith(prefix) for n in names) == 1, f"no single contract named {prefix!r}..."
    assert len(names) == len(VIOLATIONS), "a contract without a deliberate violation below"


def test_the_front_door_allows_engine_and_the_listed_value_modules(tree_copy: Path):
    probe = (
        "from engine import ReadBuilder, Table\n"
        "from engine.errors import DyntableError\n"
        "import engine.types\n"
    )
    (tree_copy / "sqlext" / "_probe.py").write_text(probe, encoding="utf-8")
    code, out = _lint_imports(tree_copy)
    assert code == 0, out


def test_the_copied_tree_keeps_every_contract(tree_copy: Path):
    code, out = _lint_imports(tree_copy)
    assert code == 0, out
    assert f"Contracts: {len(VIOLATIONS)} kept, 0 broken." in out


def test_the_engine_contracts_count_annotation_imports(tree_copy: Path):
    # A module low in the engine that names the facade in a type hint only breaks the layers.
    probe = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from engine.table import Table\n"
    (tree_copy / "engine" / "meta" / "_probe.py").write_text(probe, encoding="utf-8")
    code, out = _lint_imports(tree_copy)
    assert code != 0, out
    name = next(n for n in _contract_names() if n.startswith("engine is layered"))
    assert f"{name} BROKEN" in out and "engine.meta._probe" in out, out


@pytest.mark.parametrize(("prefix", "module", "source"), VIOLATIONS, ids=[v[1] for v in VIOLATIONS])
def test_each_contract_fails_on_a_deliberate_violation(
    tree_copy: Path, prefix: str, module: str, source: str
):
    (tree_copy / module).write_text(source, encoding="utf-8")
    code, out = _lint_imports(tree_copy)
    assert code != 0, out
    assert f"Contracts: {len(VIOLATIONS) - 1} kept, 1 broken." in out, out
    name = next(n for n in _contract_names() if n.startswith(prefix))
    assert f"{name} BROKEN" in out, out
    assert module.removesuffix(".py").replace("/", ".") in out, out  # the report names the offender



def test_the_front_door_lists_only_names_it_has_and_sqlext_or_users_need():
    """``from engine import *`` works, and each name in ``engine.__all__`` is used by the SQL layer,
    is a value an engine user handles (an error class, a commit kind), or is a builder type the
    architecture map documents as the engine's API: internals stay out."""
    import engine
    from engine.errors import DyntableError

    sqlext_text = "\n".join(p.read_text() for p in (ROOT / "sqlext").rglob("*.py"))
    sqlext_text += (ROOT / "docs" / "design" / "architecture.md").read_text()
    missing = [name for name in engine.__all__ if not hasattr(engine, name)]
    assert not missing, f"engine.__all__ lists names engine/__init__.py does not define: {missing}"
    unused = [
        name for name in engine.__all__
        if name not in sqlext_text
        and not (isinstance(getattr(engine, name), type) and issubclass(getattr(engine, name), DyntableError))
        and name != "CommitKind"
    ]
    assert not unused, f"front-door names nothing in sqlext uses (import them from their module): {unused}"
