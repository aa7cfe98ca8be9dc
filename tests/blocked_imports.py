"""A pytest plugin that makes named packages impossible to import, as if they were not installed.

The engine must run without the SQL/Spark layer (``pyspark``, ``sqlext``, ``lark``, ``sqlglot``).
The import-linter contracts see the engine's own imports; this plugin also sees the tests' and
the lazy ones, by running the engine suite with those packages blocked:

    python -m pytest -p tests.blocked_imports --block-imports pyspark,sqlext,lark,sqlglot tests/engine

``--block-imports`` installs a finder at the front of ``sys.meta_path`` before any conftest or
test module is imported; importing a blocked package or one of its submodules then raises
``ModuleNotFoundError`` naming the option. A package that is already imported when the option
takes effect cannot be blocked any more, so that is a usage error rather than a silent pass.
The plugin is loaded with ``-p`` (tests/test_blocked_imports.py runs it on a throw-away suite).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

import pytest


class BlockingFinder:
    """A meta-path finder that refuses the named top-level packages and all their submodules."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = frozenset(names)

    def blocks(self, fullname: str) -> bool:
        return fullname.partition(".")[0] in self.names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if self.blocks(fullname):
            raise ModuleNotFoundError(
                f"import of {fullname!r} is blocked by --block-imports (this suite must not need it)",
                name=fullname,
            )
        return None  # not ours: the next finder decides


def parse_names(value: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``; refuses dotted names (the block is per top-level package)."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    dotted = [n for n in names if "." in n]
    if dotted:
        raise pytest.UsageError(f"--block-imports takes top-level package names, not {', '.join(dotted)}")
    return names


def install(names: Sequence[str]) -> BlockingFinder:
    """Put a BlockingFinder for ``names`` first on ``sys.meta_path`` (once per process)."""
    for finder in sys.meta_path:
        if isinstance(finder, BlockingFinder) and finder.names == frozenset(names):
            return finder
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in set(names))
    if loaded:
        raise pytest.UsageError(
            f"--block-imports: {', '.join(loaded[:5])} already imported before the block took effect "
            "(load this plugin with -p so it runs first)"
        )
    finder = BlockingFinder(names)
    sys.meta_path.insert(0, finder)
    return finder


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--block-imports",
        metavar="PKG[,PKG...]",
        default=None,
        help="make these top-level packages (and their submodules) fail to import, as if not installed",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # Called for plugins given with -p, before tests/conftest.py and any test module is imported.
    value = early_config.known_args_namespace.block_imports
    if value:
        install(parse_names(value))


def pytest_configure(config: pytest.Config) -> None:
    # Loaded some other way (pytest_plugins in a conftest): block from here on.
    value = config.getoption("block_imports")
    if value:
        install(parse_names(value))
