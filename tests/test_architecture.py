"""The layering rule, enforced: engine/ never imports Spark, SQL libraries or sqlext."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("pyspark", "lark", "sqlglot", "sqlext")


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


def _runtime_imports(path: Path) -> set[str]:
    """Modules a file imports when it runs (imports under ``if TYPE_CHECKING:`` are annotations)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
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
        name: {m for m in _runtime_imports(path) if m in modules and m != name and not name.startswith(m + ".")}
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


def test_spark_auto_registration_hook_names_the_dyntable_format():
    # Spark imports ``pyspark_dyntable.DefaultSource`` by itself; a stale import path there only
    # shows up in a user's session, so check it here.
    from pyspark_dyntable import DefaultSource

    assert DefaultSource.name() == "dyntable"
