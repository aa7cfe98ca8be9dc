"""Incremental clustering of append tables (engine.write.clustering through Table.compact)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engine import predicate as P
from engine.errors import InvalidArgumentError, UnsupportedTableError

SCHEMA = pa.schema([("x", pa.int64()), ("y", pa.int64()), ("dt", pa.string())])
OPTIONS = {"bucket": "-1", "clustering.columns": "x,y", "clustering.incremental": "true",
           "num-sorted-run.compaction-trigger": "3"}


def _batch(rng, n: int, dt: str) -> pa.Table:
    return pa.table({"x": rng.integers(0, 1000, n), "y": rng.integers(0, 1000, n), "dt": [dt] * n},
                    schema=SCHEMA)


def _files(t, dt=None):
    pred = None if dt is None else P.equal("dt", dt)
    scan = t.new_scan() if pred is None else t.new_scan().with_filter(pred)
    return [f for s in scan.plan().splits for f in s.files]


def test_new_files_are_clustered_per_partition_and_level_by_level(catalog):
    rng = np.random.default_rng(5)
    t = catalog.create_table("db.c", SCHEMA, partition_keys=["dt"], options=OPTIONS)
    written = []
    for _ in range(2):
        for dt in ("a", "b"):
            written.append(_batch(rng, 500, dt))
            t.write_arrow(written[-1])
    t = t.refresh()
    assert t.compact(full=False).last_snapshot_id is None  # two runs per partition: below the trigger
    written.append(_batch(rng, 500, "a"))
    t.write_arrow(written[-1])
    t = t.refresh()
    t.compact(full=False)
    t = t.refresh()
    assert t.latest_snapshot().commit_kind.name == "COMPACT"
    assert {f.level for f in _files(t, "a")} == {t.store.options.num_levels - 1}
    assert {f.level for f in _files(t, "b")} == {0}  # partition b did not reach the trigger
    a = t.to_arrow(filter=P.equal("dt", "a"))
    z = pa.table({"x": a.column("x"), "y": a.column("y")})
    from engine.write.sort_order import SortOrder, sort_indices

    assert np.array_equal(sort_indices(z, SortOrder("zorder", ("x", "y"))), np.arange(z.num_rows))
    by = [("dt", "ascending"), ("x", "ascending"), ("y", "ascending")]
    expected = pa.concat_tables(written).sort_by(by)
    got = t.to_arrow().sort_by(by)
    assert got.equals(expected)
    t.compact(full=True)
    t = t.refresh()
    assert {f.level for f in _files(t)} == {t.store.options.num_levels - 1}
    assert t.to_arrow().sort_by(by).equals(expected)
    assert t.compact(full=True).last_snapshot_id is None  # one run at the max level, same columns


def test_changed_clustering_columns_recluster_on_full(catalog):
    from engine.schema_changes import SetOption

    rng = np.random.default_rng(6)
    t = catalog.create_table("db.k", SCHEMA, options=OPTIONS)
    t.write_arrow(_batch(rng, 300, "a"))
    t.refresh().compact(full=True)
    t = catalog.alter_table("db.k", [SetOption("clustering.columns", "y")])
    first = t.latest_snapshot().id
    t.compact(full=True)
    t = t.refresh()
    assert t.latest_snapshot().id == first + 1
    y = t.to_arrow().column("y").to_pylist()
    assert y == sorted(y)  # one column: the auto strategy is 'order'


def test_refusals(catalog):
    with pytest.raises(InvalidArgumentError, match="clustering.strategy"):
        catalog.create_table("db.s", SCHEMA, options={**OPTIONS, "clustering.strategy": "spiral"})
    t = catalog.create_table("db.n", SCHEMA, options={"bucket": "-1", "clustering.incremental": "true"})
    t.write_arrow(_batch(np.random.default_rng(1), 10, "a"))
    with pytest.raises(InvalidArgumentError, match="clustering.columns"):
        t.refresh().compact(full=True)
    b = catalog.create_table("db.b", SCHEMA, options={**OPTIONS, "bucket": "2", "bucket-key": "x"})
    b.write_arrow(_batch(np.random.default_rng(1), 10, "a"))
    with pytest.raises(UnsupportedTableError, match="bucket = -1"):
        b.refresh().compact(full=True)
    for name in ("db.n", "db.b"):
        assert catalog.get_table(name).latest_snapshot().id == 1
