"""``df.write.format("dyntable")`` of multi-partition DataFrames into dynamic-bucket tables
(partition-local and cross-partition upsert): the tasks write independently, the rows are plain
Spark's."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.meta.index_files import HASH_INDEX, IndexStore


@pytest.fixture
def catalog(warehouse):
    cat = open_catalog(warehouse)
    cat.create_database("db")
    return cat


def _write(df, warehouse, table, mode="append"):
    df.write.format("dyntable").option("warehouse", warehouse).option("table", table).mode(mode).save()


def _read(spark, warehouse, table):
    return spark.read.format("dyntable").option("warehouse", warehouse).option("table", table).load()


def _sorted(rows):
    return sorted(tuple(r) for r in rows)


def test_default_bucket_table_takes_four_partition_writes_twice(spark, warehouse, catalog):
    """The README's table (bucket -1 by default): a 4-partition write, then a 4-partition upsert of
    overlapping keys; the rows equal plain Spark's dedup by key (the later write wins)."""
    t = catalog.create_table("db.pk", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                             primary_keys=["id"])
    assert t.store.options.bucket == -1
    first = spark.range(0, 20_000).repartition(4).selectExpr("id", "concat('a', id) v")
    second = spark.range(10_000, 30_000).repartition(4).selectExpr("id", "concat('b', id) v")
    _write(first, warehouse, "db.pk")
    _write(second, warehouse, "db.pk")
    expected = _sorted(
        first.join(second.select("id"), "id", "left_anti").union(second).collect())
    got = _read(spark, warehouse, "db.pk")
    assert got.count() == 30_000 == got.select("id").distinct().count()
    assert _sorted(got.collect()) == expected
    # one HASH file per bucket, holding every key of the bucket
    t = catalog.get_table("db.pk")
    store = IndexStore(t.store.io, t.store.paths)
    entries = [e for e in store.read_manifest(t.latest_snapshot().index_manifest)
               if e.file.index_type == HASH_INDEX]
    assert len({(e.partition, e.bucket) for e in entries}) == len(entries)
    assert sum(e.file.row_count for e in entries) == 30_000


def test_partitioned_dynamic_bucket_table(spark, warehouse, catalog):
    catalog.create_table(
        "db.part", pa.schema([("id", pa.int64()), ("v", pa.int64()), ("dt", pa.string())]),
        partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"dynamic-bucket.target-row-num": "1000"})
    base = spark.range(0, 6_000).repartition(3)
    first = base.selectExpr("id", "id v", "cast(id % 2 as string) dt")
    second = base.filter("id % 3 = 0").selectExpr("id", "-id v", "cast(id % 2 as string) dt")
    _write(first, warehouse, "db.part")
    _write(second, warehouse, "db.part")
    expected = _sorted(first.join(second, ["id", "dt"], "left_anti").select("id", "v", "dt")
                       .union(second).collect())
    assert _sorted(_read(spark, warehouse, "db.part").collect()) == expected


def test_cross_partition_upsert_table_moves_keys_once(spark, warehouse, catalog):
    catalog.create_table(
        "db.cross", pa.schema([("id", pa.int64()), ("v", pa.int64()), ("region", pa.string())]),
        partition_keys=["region"], primary_keys=["id"])
    first = spark.range(0, 4_000).repartition(4).selectExpr("id", "id v", "cast(id % 3 as string) region")
    # every key once, each in another region than before
    second = spark.range(0, 4_000, 2).repartition(4).selectExpr(
        "id", "id * 10 v", "cast((id + 1) % 3 as string) region")
    _write(first, warehouse, "db.cross")
    _write(second, warehouse, "db.cross")
    expected = _sorted(first.join(second.select("id"), "id", "left_anti").union(second).collect())
    got = _read(spark, warehouse, "db.cross")
    assert got.count() == 4_000 == got.select("id").distinct().count()
    assert _sorted(got.collect()) == expected


def test_cross_partition_key_in_two_tasks_and_partitions_is_refused(spark, warehouse, catalog):
    t = catalog.create_table(
        "db.clash", pa.schema([("id", pa.int64()), ("region", pa.string())]),
        partition_keys=["region"], primary_keys=["id"])
    # id 7 in partition 0 with region 'a' and in partition 1 with region 'b'
    df = spark.createDataFrame([(7, "a"), (8, "a"), (7, "b")], "id long, region string")
    df = df.repartition(2, "region")
    # the commit's typed error, raised in the Python worker that commits, reaches the driver
    refused = "InvalidArgumentError(.|\n)*Repartition the input by the primary key"
    with pytest.raises(Exception, match=refused):
        _write(df, warehouse, "db.clash")
    assert t.latest_snapshot() is None
    # by the key, it is one task's input: the later row (input order) wins
    _write(df.repartition(2, "id"), warehouse, "db.clash")
    rows = _read(spark, warehouse, "db.clash").collect()
    assert len(rows) == 2 and {r.id for r in rows} == {7, 8}


def test_default_assigners_are_the_sessions_parallelism(spark, warehouse, catalog):
    """As Paimon's Spark writer: without 'dynamic-bucket.assigner-parallelism', new keys spread over
    as many assigners as the job's parallelism (two in this session), each opening its own bucket."""
    for name, options in (("db.lanes", {}), ("db.one", {"dynamic-bucket.assigner-parallelism": "1"})):
        catalog.create_table(name, pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options=options)
        _write(spark.range(0, 1_000).repartition(3).selectExpr("id", "concat('a', id) v"), warehouse, name)
        t = catalog.get_table(name)
        buckets = {s.bucket for s in t.new_scan().plan().splits}
        assert buckets == ({0, 1} if name == "db.lanes" else {0})
        assert _read(spark, warehouse, name).count() == 1_000
