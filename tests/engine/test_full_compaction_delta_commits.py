"""``full-compaction.delta-commits`` as Paimon's Spark writer honours it (PaimonSinkTest "set
full-compaction.delta-commits with batch write / streaming write"): every batch commit is followed
by a full compaction of the buckets it wrote; a streaming commit when its identifier (the batch id)
+ 1 is a multiple of the option. With ``changelog-producer = full-compaction`` the changelog of
those compactions is what a stream reads."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import CommitKind
from engine.errors import InvalidArgumentError

SCHEMA = pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.int32())])


def _rows(pairs):
    return pa.table({"a": [p[0] for p in pairs], "b": [p[1] for p in pairs]}, schema=SCHEMA)


def test_every_batch_write_is_fully_compacted(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["a"],
                             options={"bucket": "1", "full-compaction.delta-commits": "1"})
    t.write_arrow(_rows([(1, 1)]))
    t.write_arrow(_rows([(2, 2)]))
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["a"]) == [{"a": 1, "b": 1}, {"a": 2, "b": 2}]
    assert t.latest_snapshot().commit_kind is CommitKind.COMPACT
    assert all(s.raw_convertible for s in t.plan().splits)  # one sorted run: fully compacted


def test_a_streaming_writer_fully_compacts_every_n_batches(catalog):
    t = catalog.create_table("db.s", SCHEMA, primary_keys=["a"],
                             options={"bucket": "1", "full-compaction.delta-commits": "2"})
    builder = t.new_write_builder(commit_user="stream-x")
    kinds = []
    for batch_id, pairs in enumerate([[(1, 1)], [(2, 1)], [(2, 2)], [(3, 1)]]):
        builder.new_commit().with_identifier(batch_id).commit(builder.new_write().write_all([_rows(pairs)]))
        kinds.append(t.refresh().latest_snapshot().commit_kind)
    assert kinds == [CommitKind.APPEND, CommitKind.COMPACT, CommitKind.APPEND, CommitKind.COMPACT]
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["a"]) == [
        {"a": 1, "b": 1}, {"a": 2, "b": 2}, {"a": 3, "b": 1}]


def test_with_the_full_compaction_changelog_producer_the_stream_reads_those_compactions(catalog):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["a"], options={
        "bucket": "1", "changelog-producer": "full-compaction", "full-compaction.delta-commits": "1"})
    t.write_arrow(_rows([(1, 1), (2, 1)]))
    t.write_arrow(_rows([(2, 2)]))
    builder = t.new_read_builder()
    scan, read = builder.new_stream_scan(), builder.new_read()
    rows = [(r["rowkind"], r["a"], r["b"]) for s in scan.change_splits(0, scan.latest_id() or 0)
            for part in read.read(s) for r in part.to_pylist()]
    assert rows == [("+I", 1, 1), ("+I", 2, 1), ("-U", 2, 1), ("+U", 2, 2)]


def test_refused_where_paimon_refuses_it(catalog):
    with pytest.raises(InvalidArgumentError, match="needs a primary key"):
        catalog.create_table("db.a", SCHEMA, options={"full-compaction.delta-commits": "1"})
    with pytest.raises(InvalidArgumentError, match="lookup"):
        catalog.create_table("db.l", SCHEMA, primary_keys=["a"], options={
            "changelog-producer": "lookup", "full-compaction.delta-commits": "1"})
    with pytest.raises(InvalidArgumentError):
        catalog.create_table("db.z", SCHEMA, primary_keys=["a"],
                             options={"full-compaction.delta-commits": "0"})
