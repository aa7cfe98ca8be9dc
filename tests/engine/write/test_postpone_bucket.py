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
