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
