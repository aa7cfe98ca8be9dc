"""No private name crosses a module: ``from a.b import _name`` (or ``a.b._name``) between two
modules of the project is refused, except the imports listed below, which are the ones still
waiting for their module to be converted (docs/design/planners.md). The list only shrinks: a new
private import fails, and so does an entry that no longer occurs (remove it from the list)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "sqlext")

# (importing file, module imported from, private name): each still to be made public or moved.
WAITING: frozenset[tuple[str, str, str]] = frozenset({
    ("engine/meta/index_files.py", "engine.meta.manifest", "_avro_codec"),
    ("engine/meta/index_files.py", "engine.meta.manifest", "_decode"),
    ("engine/option_checks.py", "engine.options", "_BY_KEY"),
    ("engine/option_checks.py", "engine.options", "_FIELD_SUFFIXES"),
})


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private_imports() -> set[tuple[str, str, str]]:
    """Every private name one project module imports from another."""
    found: set[tuple[str, str, str]] = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            here = _module_of(path)
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.ImportFrom):
                    continue
                source = _absolute(path, node)
                if source.split(".")[0] not in PACKAGES or source == here:
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.add((str(path.relative_to(ROOT)), source, alias.name))
    return found


def test_no_private_name_crosses_a_module():
    found = private_imports()
    new = sorted(found - WAITING)
    assert not new, "private names imported across modules (make them public or move them):\n" + "\n".join(
        f"{f} imports {n} from {m}" for f, m, n in new
    )
    gone = sorted(WAITING - found)
    assert not gone, "no longer imported, remove from WAITING:\n" + "\n".join(map(str, gone))


def test_the_check_sees_a_private_import(tmp_path: Path):
    # The scan must recognise both absolute and relative forms, or the contract above proves nothing.
    tree = ast.parse("from sqlext.execute.common import _x\nfrom .dml import _y\n")
    fake = ROOT / "sqlext" / "execute" / "probe.py"
    sources = [_absolute(fake, n) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert sources == ["sqlext.execute.common", "sqlext.execute.dml"]
