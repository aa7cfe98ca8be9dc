"""A ``consumer-id`` stream protects its snapshots from the moment it starts (issue #20, race 6).

The consumer used to be recorded only when the first micro-batch committed, so an expiration
between the stream's start and that commit removed the snapshots (and files) the batch was
reading, and the stream failed. The expiration here runs inside the first micro-batch, before
the batch reads anything: a real Spark stream, a deterministic window.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import open_catalog

FUTURE = 2**62


@pytest.fixture
def catalog(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat


def test_expiration_before_the_first_batch_commits_cannot_fail_a_consumer_stream(spark, warehouse, catalog):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.src", schema)
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}, schema=schema))
    t.write_arrow(pa.table({"id": [2], "v": ["b"]}, schema=schema))
    # An overwrite: the files of snapshots 1 and 2 are referenced by them alone from here on.
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=schema), overwrite=True)
    expired: list[tuple[int, ...]] = []
    seen: list[tuple[int, str]] = []

    def batch(df, _batch_id) -> None:
        if not expired:  # the window: the stream has started, its first batch has not committed
            report = catalog.get_table("db.src").maintenance.expire_snapshots(retain_max=1, older_than=FUTURE)
            expired.append(report.snapshots)
        seen.extend((r.id, r.v) for r in df.collect())

    q = (spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", "db.src")
         .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1").option("consumer-id", "etl")
         .load().writeStream.foreachBatch(batch).trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None
    assert expired == [()]  # the consumer, recorded at the start, kept snapshot 1 and later
    assert sorted(seen) == [(1, "a"), (2, "b")]  # the overwrite delivers no change rows
    # Spark commits a batch's end offset lazily (at the next batch), so the consumer still holds
    # the start, and keeps holding it for the stream's next run.
    assert t.refs.consumers.get("etl").next_snapshot == 1
