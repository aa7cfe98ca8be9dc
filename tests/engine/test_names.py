"""Names that become path components (issue 8, defect 4): one validation, every entry refuses.

A branch name like ``x/../../../other`` used to resolve to another table's directory: reading it
returned that table's schema and a write published ``snapshot-1``/``LATEST`` into it.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from engine.errors import InvalidArgumentError, InvalidNameError
from engine.identifier import Identifier, max_name_bytes, validate_name
from engine.meta.paths import TablePaths, validate_branch_name

SCHEMA = pa.schema([("a", pa.int64())])
TRAVERSAL = "x/../../../other"


def _tree(root: str) -> list[str]:
    """Every file and directory under ``root``, relative, sorted."""
    out = []
    for base, dirs, files in os.walk(root):
        out += [os.path.relpath(os.path.join(base, n), root) for n in dirs + files]
    return sorted(out)


@pytest.fixture
def two_tables(catalog):
    catalog.create_table("db.t", SCHEMA)
    catalog.create_table("db.other", SCHEMA)
    return catalog


def test_branch_traversal_through_get_table_is_refused_and_touches_nothing(two_tables, tmp_path):
    before = _tree(str(tmp_path))
    with pytest.raises(InvalidNameError, match="branch name"):
        two_tables.get_table(f"db.t$branch_{TRAVERSAL}")
    with pytest.raises(InvalidNameError):
        Identifier("db", "t", TRAVERSAL)
    assert _tree(str(tmp_path)) == before
    # The table the traversal pointed at has no snapshot (the old code wrote snapshot-1 there).
    assert two_tables.get_table("db.other").latest_snapshot() is None


def test_branch_traversal_through_table_paths_is_refused(warehouse):
    with pytest.raises(InvalidNameError):
        TablePaths(os.path.join(warehouse, "db.db", "t"), TRAVERSAL)


def test_table_and_database_names_are_refused_before_any_io(catalog, tmp_path):
    before = _tree(str(tmp_path))
    for ident in ("db.`..`", "../x", "db./etc", "db.a\\b", "db..x", "db.x\x00y", "db..hidden"):
        with pytest.raises(InvalidArgumentError):
            catalog.create_table(ident, SCHEMA)
    for db in ("..", "a/b", ".hidden", "x\ny"):
        with pytest.raises(InvalidNameError):
            catalog.create_database(db)
    assert _tree(str(tmp_path)) == before


@pytest.mark.parametrize(
    ("kind", "name", "words"),
    [
        ("branch", "", "blank"),
        ("branch", "   ", "blank"),
        ("branch", "a/b", "'/'"),
        ("branch", "a\\b", "'\\\\'"),
        ("branch", "..", "'.'"),
        ("branch", "a..b", "'..'"),
        ("branch", ".hidden", "start with '.'"),
        ("branch", "a\x00b", "'\\x00'"),
        ("branch", "a\tb", "'\\t'"),
        ("branch", "a\x7fb", "'\\x7f'"),
        ("branch", "123", "all digits"),
        ("branch", "a$b", "'$'"),
        ("table", "t$x", "'$'"),
        ("tag", "t/../x", "'/'"),
        ("consumer", "../c", "'/'"),
        ("database", "x" * 253, "the limit is 252"),
        ("table", "é" * 128, "256 bytes"),
        ("branch", "b" * 249, "the limit is 248"),
        ("branch", "\ud800", "Unicode"),
    ],
)
def test_validate_name_rules(kind, name, words):
    with pytest.raises(InvalidNameError) as e:
        validate_name(kind, name)
    assert words in str(e.value)


def test_names_at_the_limit_pass_and_fit_one_path_component(tmp_path):
    for kind, prefix, suffix in (("database", "", ".db"), ("table", "", ""), ("branch", "branch-", ""),
                                 ("tag", "tag-", ""), ("consumer", "consumer-", "")):
        name = "é" * (max_name_bytes(kind) // 2) + "x" * (max_name_bytes(kind) % 2)
        assert validate_name(kind, name) == name
        # The component really fits the file system's 255-byte limit.
        (tmp_path / f"{prefix}{name}{suffix}").write_text("")


def test_paimon_creation_rules():
    with pytest.raises(InvalidNameError, match="default branch"):
        validate_branch_name("main")
    # Paimon accepts all-digit tags ('20250122'); a digit string resolves to the tag first.
    assert validate_name("tag", "42", new=True) == "42"
    assert validate_name("tag", "42") == "42"
    assert Identifier.parse("db.t$branch_main").branch == "main"  # the main branch, spelled out
    for ok in ("dev", "feature-1", "2024_q1", "ünïcode", "a.b", "with space"):
        validate_branch_name(ok)


def test_tag_and_consumer_paths_are_validated(two_tables, tmp_path):
    table = two_tables.get_table("db.t")
    before = _tree(str(tmp_path))
    with pytest.raises(InvalidNameError):
        table.refs.tags.exists("../../other/snapshot/snapshot-1")
    with pytest.raises(InvalidNameError):
        table.store.paths.consumer_file("../x")
    assert _tree(str(tmp_path)) == before


def test_very_long_table_name_is_a_clear_invalid_argument(catalog):
    with pytest.raises(InvalidNameError, match="300 bytes in UTF-8; the limit is 255"):
        catalog.create_table("db." + "x" * 300, SCHEMA)
