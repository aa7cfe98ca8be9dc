"""Postpone-bucket tables (``bucket = -2``, Paimon 1.1) written by the engine: rows go straight into
real buckets (Paimon's ``postpone.batch-write-fixed-bucket``), each partition keeping the bucket
count of its files and a new partition taking ``postpone.default-bucket-num``; writers and
compaction record each partition's own count."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.errors import InvalidArgumentError
from engine.schema_changes import SetOption

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string()),
                    pa.field("pt", pa.string(), nullable=False)])


def rows(ks, v, pt) -> pa.Table:
    ks = list(ks)
    return pa.table({"k": ks, "v": [v] * len(ks), "pt": [pt] * len(ks)}, schema=SCHEMA)


def layout(t) -> dict[str, set[tuple[int, int]]]:
    out: dict[str, set[tuple[int, int]]] = {}
    for s in t.refresh().new_scan().plan().splits:
        out.setdefault(s.partition_values[0], set()).add((s.bucket, s.total_buckets))
    return out


def test_partitions_keep_their_bucket_count_and_new_ones_take_the_default(catalog):
    t = catalog.create_table("db.pp", SCHEMA, primary_keys=["k", "pt"], partition_keys=["pt"],
                             options={"bucket": "-2"})
    t.write_arrow(pa.concat_tables([rows(range(50), "a", "1"), rows(range(50), "a", "2")]))
    assert layout(t) == {"1": {(0, 1)}, "2": {(0, 1)}}
    catalog.alter_table("db.pp", [SetOption("postpone.default-bucket-num", "4")])
    t = catalog.get_table("db.pp")
    t.write_arrow(pa.concat_tables([rows(range(40, 60), "b", "1"), rows(range(100), "c", "3")]))
    got = layout(t)
    assert got["1"] == {(0, 1)} and got["3"] == {(b, 4) for b in range(4)}
    t.compact(full=True)
    assert layout(t) == got
    data = t.refresh().to_arrow()
    assert data.num_rows == 60 + 50 + 100
    assert sorted(data.filter(pa.compute.equal(data.column("pt"), "1")).column("v").to_pylist()) == \
        ["a"] * 40 + ["b"] * 20


def test_a_postpone_table_without_a_primary_key_or_a_bad_default_is_refused(catalog):
    with pytest.raises(InvalidArgumentError, match="primary-key tables"):
        catalog.create_table("db.app", SCHEMA, options={"bucket": "-2"})
    with pytest.raises(InvalidArgumentError, match="postpone.default-bucket-num"):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k", "pt"],
                             options={"bucket": "-2", "postpone.default-bucket-num": "0"})


# -- pending files (written by another engine) and the postpone compaction --------------------------
def _pending(t, ks, v, pt, first_seq, kinds=None):
    """Commit one pending file into ``bucket-postpone`` of partition ``pt``, as Paimon's postpone
    writers leave them (key-value layout, their own sequence numbers)."""
    from engine.commit_messages import CommitMessage
    from engine.features import POSTPONE_BUCKET
    from engine.meta.binary_row import serialize_row
    from engine.write.file_writer import DataFileWriter

    store = t.store
    data = rows(ks, v, pt)
    n = data.num_rows
    data = data.append_column("_SEQUENCE_NUMBER", pa.array(range(first_seq, first_seq + n), pa.int64()))
    data = data.append_column("_VALUE_KIND", pa.array(kinds or [0] * n, pa.int8()))
    files = DataFileWriter(store, store.partition_dir([pt]), POSTPONE_BUCKET).write_kv(data)
    partition = serialize_row([pt], store.partition_types)
    t.new_commit().commit([CommitMessage(partition=partition, bucket=POSTPONE_BUCKET,
                                         total_buckets=POSTPONE_BUCKET, new_files=tuple(files))])


def _pending_files(t) -> list[str]:
    store = t.refresh().store
    return [e.file.file_name for e in store.live_entries(store.snapshots.latest()) if e.bucket == -2]


def test_a_compaction_moves_pending_files_into_real_buckets(catalog):
    t = catalog.create_table("db.pend", SCHEMA, primary_keys=["k", "pt"], partition_keys=["pt"],
                             options={"bucket": "-2", "file.format": "avro",
                                      "postpone.target-row-num-per-bucket": "4"})
    t.write_arrow(rows(range(10), "a", "1"))  # straight into a real bucket (1 bucket)
    _pending(t, range(5, 12), "p", "1", 0)
    _pending(t, [0, 11, 14], "q", "1", 100, kinds=[3, 0, 0])  # a newer file: deletes 0, rewrites 11
    _pending(t, range(10), "n", "2", 0)  # a new partition: ceil(10 / 4) = 3 buckets
    t = t.refresh()
    assert len(_pending_files(t)) == 3
    assert sorted(t.to_arrow().column("k").to_pylist()) == list(range(10))  # readers skip them
    with pytest.raises(InvalidArgumentError, match="pending files"):
        t.compact(full=True, partitions=[{"pt": "1"}])
    t.compact(full=True)
    assert _pending_files(t) == []
    got = {(r["pt"], r["k"]): r["v"] for r in t.refresh().to_arrow().to_pylist()}
    expected = {("1", k): "a" for k in range(1, 5)} | {("1", k): "p" for k in range(5, 11)}
    expected |= {("1", 11): "q", ("1", 14): "q"} | {("2", k): "n" for k in range(10)}
    assert got == expected
    assert layout(t) == {"1": {(0, 1)}, "2": {(b, 3) for b in range(3)}}
    t.compact(full=True)  # nothing pending any more: an ordinary compaction
    assert {(r["pt"], r["k"]): r["v"] for r in t.refresh().to_arrow().to_pylist()} == expected


def test_a_writes_post_commit_compaction_leaves_pending_files_alone(catalog):
    t = catalog.create_table("db.pend2", SCHEMA, primary_keys=["k", "pt"], partition_keys=["pt"],
                             options={"bucket": "-2"})
    _pending(t, range(3), "p", "1", 0)
    t.refresh().write_arrow(rows(range(2, 5), "w", "1"))
    assert len(_pending_files(t)) == 1  # only a compaction of the table moves them, as in Paimon
    assert sorted(t.refresh().to_arrow().column("k").to_pylist()) == [2, 3, 4]
