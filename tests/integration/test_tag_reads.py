"""Reading by tags through the Spark source: incremental-between two tags or snapshot ids (batch),
and streams that start from a tag."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from engine import open_catalog


@pytest.fixture
def table(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        pa.schema([("id", pa.int64()), ("v", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "input"},
    )
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))  # snapshot 1
    t.refs.tags.create("t1")
    t.write_arrow(pa.table({"id": [2, 3], "v": ["B", "c"]}))  # 2
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "rowkind": ["-D"]}))  # 3
    t.refs.tags.create("t2")
    return t


def read(spark, warehouse, **options):
    df = (
        spark.read.format("dyntable")
        .option("warehouse", warehouse)
        .option("table", "db.t")
        .options(**options)
        .load()
    )
    return sorted(tuple(r) for r in df.collect())


def expire(table, snapshot_id):
    """What another process's snapshot expiration leaves: the snapshot file gone, tags kept."""
    os.remove(f"{table.store.paths.snapshot_dir}/snapshot-{snapshot_id}")
    table.store.snapshots.forget(snapshot_id)


def test_incremental_between_tags_and_snapshot_ids(spark, warehouse, table):
    changes = sorted([("+I", 2, "B"), ("+I", 3, "c"), ("-D", 1, "a")])
    assert read(spark, warehouse, **{"incremental-between": "t1,t2", "read.changelog": "true"}) == changes
    assert read(spark, warehouse, **{"incremental-between": "1,3", "read.changelog": "true"}) == changes
    # Without row kinds a batch read shows the after-images only.
    assert read(spark, warehouse, **{"incremental-between": "t1,t2"}) == [(2, "B"), (3, "c")]
    assert read(spark, warehouse, **{"incremental-between": "t1,t2", "columns": "v"}) == [("B",), ("c",)]
    assert read(spark, warehouse, **{"incremental-between": "t2,t2"}) == []
    # Paimon 2.0 diffs two tags whatever the scan mode: no -U, and a changed row comes with the
    # kind the end state stores (an upsert's +I).
    diff = read(
        spark,
        warehouse,
        **{"incremental-between": "t1,t2", "read.changelog": "true", "incremental-between-scan-mode": "diff"},
    )
    assert diff == changes


def test_incremental_between_tags_after_their_snapshots_expired(spark, warehouse, table):
    expire(table, 2)
    expire(table, 1)
    assert read(spark, warehouse, **{"incremental-between": "t1,t2"}) == [(2, "B"), (3, "c")]
    with pytest.raises(Exception, match="out of the available snapshots"):
        read(spark, warehouse, **{"incremental-between": "1,3"})


def test_incremental_between_unknown_tag_is_an_error(spark, warehouse, table):
    with pytest.raises(Exception, match="nope"):
        read(spark, warehouse, **{"incremental-between": "t1,nope"})


def stream_rows(spark, warehouse, tmp_path, name, **options):
    sink, checkpoint = str(tmp_path / f"sink-{name}"), str(tmp_path / f"ckpt-{name}")
    q = (
        spark.readStream.format("dyntable")
        .option("warehouse", warehouse)
        .option("table", "db.t")
        .options(**options)
        .load()
        .writeStream.format("parquet")
        .option("path", sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert q.exception() is None
    return sorted(tuple(r) for r in spark.read.parquet(sink).collect())


@pytest.mark.parametrize("mode", ["default", "from-snapshot"])
def test_stream_starts_from_a_tag(spark, warehouse, table, tmp_path, mode):
    expire(table, 1)  # the tag's own snapshot is gone: its content comes from the tag
    rows = stream_rows(
        spark,
        warehouse,
        tmp_path,
        mode,
        **{"scan.mode": mode, "scan.tag-name": "t1", "read.changelog": "true"},
    )
    assert rows == sorted(
        [
            ("+I", 1, "a"),
            ("+I", 2, "b"),  # the tag's content
            ("+I", 2, "B"),
            ("+I", 3, "c"),
            ("-D", 1, "a"),
        ]
    )  # then what followed it


@pytest.mark.parametrize("options", [
    {"scan.mode": "latest", "scan.tag-name": "t1"},
    {"scan.mode": "latest-full", "scan.tag-name": "t1"},
    {"scan.mode": "from-timestamp", "scan.tag-name": "t1", "scan.timestamp-millis": "0"},
    {"scan.mode": "from-snapshot", "scan.tag-name": "t1", "scan.snapshot-id": "2"},
    {"scan.tag-name": "nope"},
], ids=["latest", "latest-full", "from-timestamp", "two-starts", "unknown-tag"])
def test_stream_from_a_tag_refuses_what_it_would_ignore(spark, warehouse, table, tmp_path, options):
    with pytest.raises(Exception, match="scan.tag-name|nope|only one of"):
        stream_rows(spark, warehouse, tmp_path, "bad", **options)


def test_stream_from_a_tag_of_a_branch_continues_with_the_branch(spark, warehouse, table, tmp_path):
    table.refs.branches.create("dev", from_tag="t1")
    dev = open_catalog(warehouse).get_table("db.t$branch_dev")
    dev.write_arrow(pa.table({"id": [9], "v": ["dev"]}))
    rows = stream_rows(spark, warehouse, tmp_path, "branch",
                       **{"branch": "dev", "scan.tag-name": "t1", "read.changelog": "true"})
    assert rows == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 9, "dev")]
