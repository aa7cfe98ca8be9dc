"""A DataFrame write's post-commit compaction runs in the writing driver as Spark tasks
(``sqlext.source.session_conf``), not in the Python worker that commits the job; without the
driver's wrapper (a session Spark registered on its own) the commit compacts as before."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sqlext.source.session_conf as session_conf
from engine.meta.snapshot import CommitKind


@pytest.fixture
def runs(monkeypatch):
    """The buckets each driver-side compaction runner was handed, recorded on the way through."""
    seen: list[int] = []
    real = session_conf.spark_runner

    def recording(spark):
        runner = real(spark)

        def run(store, tasks):
            seen.append(len(tasks))
            return runner(store, tasks)

        return run

    monkeypatch.setattr(session_conf, "spark_runner", recording)
    return seen


def _frame(spark, ids, tag):
    rows = [(i, f"{tag}{i}", i % 3) for i in ids]
    return spark.createDataFrame(rows, "id BIGINT, v STRING, p INT").repartition(3)


def test_df_write_compacts_in_the_driver_as_spark_tasks(spark, warehouse, catalog, runs):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("p", pa.int32())])
    t = catalog.create_table("db.t", schema, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "2", "num-sorted-run.compaction-trigger": "2"})
    for tag in ("a", "b", "c"):
        (_frame(spark, range(30), tag).write.format("dyntable").option("warehouse", warehouse)
         .option("table", "db.t").mode("append").save())
    t = t.refresh()
    kinds = [s.commit_kind for s in t.snapshots()]
    assert CommitKind.COMPACT in kinds and runs and all(n > 0 for n in runs)
    assert sum(runs) >= 2  # several buckets were rewritten, each its own task
    rows = t.to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], r["v"]) for r in rows] == [(i, f"c{i}") for i in range(30)]


def test_a_write_only_table_is_not_compacted(spark, warehouse, catalog, runs):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("p", pa.int32())])
    t = catalog.create_table("db.w", schema, primary_keys=["id", "p"],
                             options={"bucket": "1", "write-only": "true"})
    for tag in ("a", "b", "c", "d", "e", "f"):
        (_frame(spark, range(5), tag).write.format("dyntable").option("warehouse", warehouse)
         .option("table", "db.w").mode("append").save())
    assert CommitKind.COMPACT not in [s.commit_kind for s in t.refresh().snapshots()]
    assert runs == []


def test_the_commit_user_given_is_kept(spark, warehouse, catalog, runs):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("p", pa.int32())])
    t = catalog.create_table("db.u", schema, primary_keys=["id", "p"],
                             options={"bucket": "1", "full-compaction.delta-commits": "1"})
    (_frame(spark, range(5), "a").write.format("dyntable").option("warehouse", warehouse)
     .option("table", "db.u").option("commit-user", "me").mode("append").save())
    snaps = t.refresh().snapshots()
    assert [s.commit_user for s in snaps if s.commit_kind is CommitKind.APPEND] == ["me"]
    assert snaps[-1].commit_kind is CommitKind.COMPACT and runs == [1]
