"""Every file in sql-examples/ runs here, and its final query returns what the tour promises."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "sql-examples"

EXPECTED = {
    "01_quickstart.sql": [
        ("2024-05-01", 7, 25, 1),
        ("2024-05-01", 8, 40, 1),
        ("2024-05-02", None, 60, 1),
        ("2024-05-02", 7, 15, 1),
    ],
    "02_primary_keys.sql": [
        ("first_seen", "1", "monday"),
        ("first_seen", "2", "tuesday"),
        ("profile", "1", "ada@example.com,+44 20 0000"),
        ("sales", "apple", "7,1.5"),
        ("sales", "pear", "3,2.5"),
        ("users", "1", "ada,Cambridge"),
        ("users", "2", "linus,Portland"),
    ],
    "03_partitions_overwrite.sql": [
        ("2024-01-01", 10, "purchase"),
        ("2024-01-02", 3, "click"),
        ("2024-01-03", 20, "view"),
    ],
    "04_time_travel.sql": [
        ("latest", "tea", 3.5),
        ("v1", "coffee", 4.0),
        ("v1", "tea", 3.0),
        ("v2", "coffee", 4.0),
        ("v2", "tea", 3.5),
    ],
    "05_system_tables.sql": None,  # checked below: partition row counts
    "06_streaming_pipeline.sql": [(1, "ada", 500), (2, "alan", 250)],
    "07_tags_and_rollback.sql": [("apple", 10), ("pear", 5)],
    "08_branches.sql": [("cocoa", 3.8, "cup"), ("coffee", 4.4, "cup"), ("tea", 3.0, "cup")],
    "09_expiration_and_retention.sql": [
        ("snapshot", "3", True, False),
        ("snapshot", "4", False, False),
        ("tag", "first", True, False),
    ],
    "10_orphans_and_partition_expiry.sql": [("29990101", 2), ("29990102", 1)],
}


def test_every_example_is_covered():
    assert sorted(p.name for p in EXAMPLES.glob("*.sql")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_and_runs_again(session, name):
    """A tour can be re-run: the second run in the same warehouse gives the same answer."""
    for attempt in ("first run", "second run"):
        results = list(session.execute((EXAMPLES / name).read_text()))
        assert results, "the example has no statements"
        rows = [tuple(r) for r in results[-1].dataframe.collect()]
        if name == "05_system_tables.sql":
            assert [(r[0], r[1]) for r in rows] == [("dt=2024-01-01", 2), ("dt=2024-01-02", 1)], attempt
            continue
        assert rows == EXPECTED[name], attempt
        session.current_database = "default"  # a new CLI run starts in the default database


def test_create_database_that_exists(session):
    from sqlext.errors import SqlAnalysisError

    session.sql("CREATE DATABASE shop")
    with pytest.raises(SqlAnalysisError) as e:
        session.sql("CREATE DATABASE shop")
    assert e.value.sqlstate == "42710" and "already exists" in e.value.message
    (result,) = session.execute("CREATE DATABASE IF NOT EXISTS shop")
    assert result.message == "Database shop already exists; nothing created"
