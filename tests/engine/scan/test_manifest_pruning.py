"""Metadata cost follows the live files: a partition filter opens only the manifests whose
partition statistics can match, and manifest merging keeps the number of manifests bounded however
many commits the table has."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from engine.meta.manifest_store import ManifestStore
from engine.scan import predicate as P

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])


def _commit_partition(table, dt: str, first_id: int) -> None:
    writer = table.new_writer()
    writer.write(pa.table({"dt": [dt], "id": [first_id]}, schema=SCHEMA))
    table.new_commit().commit(writer.prepare_commit())


@pytest.fixture
def opened(monkeypatch):
    """The manifest files any store opens while the test runs."""
    names: list[str] = []
    for method in ("read_entries", "read_entry_table"):  # as records or as Arrow columns
        original = getattr(ManifestStore, method)

        def counting(self, file_name, *args, _original=original, **kwargs):
            names.append(file_name)
            return _original(self, file_name, *args, **kwargs)

        monkeypatch.setattr(ManifestStore, method, counting)
    return names


def test_a_partition_filter_opens_only_manifests_that_can_match(catalog, opened):
    # Merging off (a high minimum count): one manifest per commit, each covering one partition.
    table = catalog.create_table(
        "db.t", SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "1000"}
    )
    days = [f"2026-11-{d:02d}" for d in range(1, 21)]
    for i, day in enumerate(days):
        _commit_partition(table, day, i)
    table = table.refresh()
    snapshot = table.latest_snapshot()
    assert len(table.store.manifests.data_manifests(snapshot)) == len(days)

    opened.clear()
    plan = table.plan(filter=P.equal("dt", "2026-11-07"))
    assert [f.row_count for s in plan.splits for f in s.files] == [1]
    assert len(opened) == 1  # 19 manifests skipped by their partition statistics alone

    opened.clear()
    plan = table.plan(filter=P.greater_or_equal("dt", "2026-11-18"))
    assert sum(len(s.files) for s in plan.splits) == 3
    assert len(opened) == 3


def test_manifest_merging_keeps_the_count_bounded_as_commits_grow(catalog):
    table = catalog.create_table(
        "db.t", SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "5"}
    )
    counts = []
    for i in range(60):
        _commit_partition(table, f"p{i % 7}", i)
        table = table.refresh()
        counts.append(len(table.store.manifests.data_manifests(table.latest_snapshot())))
    # The deltas since the last merge plus about one settled manifest per tier (log2 of the history):
    # doubling the history adds at most one manifest.
    assert max(counts) <= 5 + math.log2(60) + 1
    assert max(counts[30:]) <= max(counts[:30]) + 1
    assert table.to_arrow().num_rows == 60


def test_default_merging_and_compact_manifest_bound_the_count(catalog, opened):
    from engine.ops.compact_manifest import compact_manifests

    table = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"])  # default manifest options
    counts = []
    for i in range(100):
        _commit_partition(table, f"p{i % 9}", i)
        table = table.refresh()
        counts.append(len(table.store.manifests.data_manifests(table.latest_snapshot())))
    # manifest.merge-min-count (30) small manifests at most, plus what merging produced.
    assert max(counts) <= 32
    assert max(counts[50:]) <= max(counts[:50])
    before = table.to_arrow().sort_by("id")

    result = compact_manifests(table.store)
    table = table.refresh()
    assert result.manifests_before == counts[-1]
    assert result.manifests_after == 1  # 100 small entries fit one target-size manifest
    assert len(table.store.manifests.data_manifests(table.latest_snapshot())) == 1
    assert table.to_arrow().sort_by("id").equals(before)
    # And the compacted manifest's partition statistics still let a filtered plan read it right.
    opened.clear()
    plan = table.plan(filter=P.equal("dt", "p3"))
    assert sorted(f.row_count for s in plan.splits for f in s.files) == [1] * 11
    assert len(opened) == 1
