"""The in-process compaction runner compacts several buckets at once and keeps task order."""

from __future__ import annotations

import pyarrow as pa

from engine.compaction import plan, run_in_process

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def test_threaded_runner_compacts_every_bucket_in_task_order(catalog):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["id"], options={"bucket": "4"})
    for round_ in range(3):  # three runs per bucket; the last value of each key wins
        ids = pa.array(range(1_000), pa.int64())
        values = pa.array([round_ * 10_000 + i for i in range(1_000)], pa.int64())
        t.write_arrow(pa.table({"id": ids, "v": values}))
    t = t.refresh()
    tasks = plan(t.store, full=True)
    assert len(tasks) == 4
    messages = run_in_process(t.store, tasks)
    assert [(m.partition, m.bucket) for m in messages] == [(task.partition, task.bucket) for task in tasks]
    t.new_commit().commit(messages)
    t = t.refresh()
    assert len(t.store.live_entries(t.latest_snapshot())) == 4  # one file per bucket
    got = t.to_arrow().sort_by("id")
    assert got.column("v").to_pylist() == [20_000 + i for i in range(1_000)]
