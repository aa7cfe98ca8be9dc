"""Paimon 2.0's DeletionVectorTest (paimon-spark-ut) translated: the same tables, statements and
expected rows, run through dyntable's SQL. Where Paimon inspects its DVs with its Java maintainer,
these tests read them through the engine (``dv_scan_files``) and find the rows' positions by
reading the data files.

``bucketModes`` is Paimon's ``Seq(3, -1)``; its random ``deletion-vectors.bitmap64`` is fixed per
case (both kinds are covered) so a run is repeatable, and its random e2e test uses a seeded
generator and fewer rows.

Not translated (they need something a Spark-only user does not have):
* ``runAndCheckSplitScan`` (every row-level case): asserts which Spark physical scan class
  (``PaimonSplitScan``) Paimon's planner picked, an internal of Paimon's connector; the rows and
  DVs it leads to are checked here instead.
"""

from __future__ import annotations

import io
import random

import numpy as np
import pyarrow.parquet as pq
import pytest

from engine.append_deletions import dv_scan_files
from engine.meta.deletion_vectors import dv_metas
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexStore
from tests.integration.test_sql_dml import table

BUCKETS = [(3, "true"), (-1, "false")]
PT_TABLE = "CREATE TABLE T (id INT, name STRING, pt STRING) PARTITIONED BY (pt) "
PT_ROWS = "INSERT INTO T VALUES (1, 'a', '2024'), (2, 'b', '2024'), (3, 'c', '2025'), (4, 'd', '2025')"



def sql(session, text):
    """The rows of the last statement of ``text`` as tuples (Spark's order)."""
    frame = list(session.execute(text))[-1].dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


def dvs(session, name="T", partitions=None):
    """The latest snapshot's DVs: {data file name: deleted positions}, of ``partitions`` (values
    of ``pt``) only when given; files without a DV are left out (as Paimon's maintainer does)."""
    t = table(session, name).refresh()
    out = {}
    for f in dv_scan_files(t.store, t.latest_snapshot()):
        if partitions is not None and not any(f"/pt={p}/" in f.path for p in partitions):
            continue
        if f.deleted.size:
            out[f.name] = tuple(int(p) for p in f.deleted)
    return out


def positions_of(session, ids, name="T"):
    """Paimon's ``getFilePathAndRowIndex``: {data file name: positions of the live rows whose id
    is in ``ids``}, from the data files themselves."""
    t = table(session, name).refresh()
    out = {}
    for f in dv_scan_files(t.store, t.latest_snapshot()):
        col = pq.read_table(io.BytesIO(t.store.io.read_bytes(f.path)), columns=["id"]).column("id")
        pos = np.setdiff1d(np.flatnonzero(np.isin(col.to_numpy(zero_copy_only=False), ids)), f.deleted)
        if pos.size:
            out[f.name] = tuple(int(p) for p in pos)
    return out


def assert_marked(found, expected):
    """Every position ``expected`` names is deleted in ``found`` (Paimon's ``dv.isDeleted``)."""
    for name, positions in expected.items():
        assert set(positions) <= set(found.get(name, ())), (name, positions, found)


def _props(bucket, bitmap64):
    key = ", 'bucket-key' = 'id'" if bucket > 1 else ""
    return (f"TBLPROPERTIES ('deletion-vectors.enabled' = 'true', 'deletion-vectors.bitmap64' = "
            f"'{bitmap64}', 'bucket' = '{bucket}'{key})")


@pytest.mark.parametrize(("bucket", "bitmap64"), BUCKETS)
def test_merge_into(session, spark, bucket, bitmap64):
    spark.createDataFrame(
        [(1, 100, "c11"), (3, 300, "c33"), (5, 500, "c55"), (7, 700, "c77"), (9, 900, "c99")],
        "a INT, b INT, c STRING",
    ).createOrReplaceTempView("source")
    key = ", 'bucket-key' = 'a'" if bucket > 1 else ""
    sql(session, f"CREATE TABLE target (a INT, b INT, c STRING) TBLPROPERTIES ('deletion-vectors.enabled' = "
                 f"'true', 'deletion-vectors.bitmap64' = '{bitmap64}', 'bucket' = '{bucket}'{key})")
    sql(session, "INSERT INTO target values (1, 10, 'c1'), (2, 20, 'c2'), (3, 30, 'c3'), (4, 40, 'c4'), "
                 "(5, 50, 'c5')")
    sql(session, """
        MERGE INTO target
        USING source
        ON target.a = source.a
        WHEN MATCHED AND target.a = 5 THEN UPDATE SET b = source.b + target.b
        WHEN MATCHED AND source.c > 'c2' THEN UPDATE SET *
        WHEN MATCHED THEN DELETE
        WHEN NOT MATCHED AND c > 'c9' THEN INSERT (a, b, c) VALUES (a, b * 1.1, c)
        WHEN NOT MATCHED THEN INSERT *""")
    assert sql(session, "SELECT * FROM target ORDER BY a, b") == [
        (2, 20, "c2"), (3, 300, "c33"), (4, 40, "c4"), (5, 550, "c5"), (7, 700, "c77"), (9, 990, "c99")]
    assert dvs(session, "target")


@pytest.mark.parametrize(("bucket", "bitmap64"), BUCKETS)
def test_update_for_append_non_partitioned_table(session, bucket, bitmap64):
    sql(session, f"CREATE TABLE T (id INT, name STRING) {_props(bucket, bitmap64)}")
    sql(session, "INSERT INTO T VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert dvs(session) == {}

    rows = positions_of(session, [2])
    sql(session, "UPDATE T SET name = 'b_2' WHERE id = 2")
    assert sql(session, "SELECT * from T ORDER BY id") == [(1, "a"), (2, "b_2"), (3, "c")]
    dv2 = dvs(session)
    assert len(dv2) == 1
    assert_marked(dv2, rows)

    sql(session, "INSERT INTO T VALUES (4, 'd'), (5, 'e')")
    assert sql(session, "SELECT * from T ORDER BY id") == [(1, "a"), (2, "b_2"), (3, "c"), (4, "d"), (5, "e")]
    assert dvs(session) == dv2

    sql(session, "UPDATE T SET name = concat(name, '_2') WHERE id % 2 = 1")
    assert sql(session, "SELECT * from T ORDER BY id") == [
        (1, "a_2"), (2, "b_2"), (3, "c_2"), (4, "d"), (5, "e_2")]
    sql(session, "UPDATE T SET name = '_all'")
    every = [(i, "_all") for i in range(1, 6)]
    assert sql(session, "SELECT * from T ORDER BY id") == every

    sql(session, "CALL sys.compact('T')")
    assert dvs(session) == {}
    assert sql(session, "SELECT * from T ORDER BY id") == every


@pytest.mark.parametrize(("bucket", "bitmap64"), BUCKETS)
def test_update_for_append_partitioned_table(session, bucket, bitmap64):
    sql(session, PT_TABLE + _props(bucket, bitmap64))
    sql(session, PT_ROWS)
    assert dvs(session) == {}

    rows1 = positions_of(session, [2])
    sql(session, "UPDATE T SET name = 'b_2' WHERE id = 2")
    assert sql(session, "SELECT * from T ORDER BY id") == [
        (1, "a", "2024"), (2, "b_2", "2024"), (3, "c", "2025"), (4, "d", "2025")]
    dv2 = dvs(session, partitions=["2024", "2025"])
    assert len(dv2) == 1
    assert_marked(dv2, rows1)

    rows2 = {**rows1, **positions_of(session, [3, 4])}
    sql(session, "UPDATE T SET name = concat(name, '_2') WHERE pt = '2025'")
    expected = [(1, "a", "2024"), (2, "b_2", "2024"), (3, "c_2", "2025"), (4, "d_2", "2025")]
    assert sql(session, "SELECT * from T ORDER BY id") == expected
    assert dvs(session, partitions=["2024"]) == dv2
    assert_marked(dvs(session, partitions=["2024", "2025"]), rows2)

    sql(session, "CALL sys.compact('T')")
    assert dvs(session) == {}
    assert sql(session, "SELECT * from T ORDER BY id") == expected


@pytest.mark.parametrize(("bucket", "bitmap64"), BUCKETS)
def test_delete_for_append_non_partitioned_table(session, bucket, bitmap64):
    sql(session, f"CREATE TABLE T (id INT, name STRING) {_props(bucket, bitmap64)}")
    sql(session, "INSERT INTO T VALUES (1, 'a'), (2, 'b')")
    assert dvs(session) == {}

    rows = positions_of(session, [2])
    sql(session, "DELETE FROM T WHERE id = 2")
    assert sql(session, "SELECT * from T ORDER BY id") == [(1, "a")]
    dv2 = dvs(session)
    assert len(dv2) == 1
    assert_marked(dv2, rows)

    sql(session, "INSERT INTO T VALUES (2, 'bb'), (3, 'c'), (4, 'd')")
    assert sql(session, "SELECT * from T ORDER BY id") == [(1, "a"), (2, "bb"), (3, "c"), (4, "d")]
    assert dvs(session) == dv2

    sql(session, "DELETE FROM T WHERE id % 2 = 1")
    assert sql(session, "SELECT * from T ORDER BY id") == [(2, "bb"), (4, "d")]
    sql(session, "CALL sys.compact('T')")
    assert dvs(session) == {}
    assert sql(session, "SELECT * from T ORDER BY id") == [(2, "bb"), (4, "d")]


@pytest.mark.parametrize(("bucket", "bitmap64"), BUCKETS)
def test_delete_for_append_partitioned_table(session, bucket, bitmap64):
    sql(session, PT_TABLE + _props(bucket, bitmap64))
    sql(session, PT_ROWS)
    assert dvs(session) == {}

    rows1 = positions_of(session, [2])
    sql(session, "DELETE FROM T WHERE id = 2")
    assert sql(session, "SELECT * from T ORDER BY id") == [
        (1, "a", "2024"), (3, "c", "2025"), (4, "d", "2025")]
    dv2 = dvs(session, partitions=["2024", "2025"])
    assert len(dv2) == 1
    assert_marked(dv2, rows1)

    rows2 = {**rows1, **positions_of(session, [3])}
    sql(session, "DELETE FROM T WHERE id = 3")
    expected = [(1, "a", "2024"), (4, "d", "2025")]
    assert sql(session, "SELECT * from T ORDER BY id") == expected
    assert dvs(session, partitions=["2024"]) == dv2
    assert_marked(dvs(session, partitions=["2024", "2025"]), rows2)

    sql(session, """CALL sys.compact(table => 'T', partitions => "pt = '2024'")""")
    assert dvs(session, partitions=["2024"]) == {}
    assert dvs(session, partitions=["2025"]) != {}
    assert sql(session, "SELECT * from T ORDER BY id") == expected

    sql(session, """CALL sys.compact(table => 'T', where => "pt = '2025'")""")
    assert dvs(session, partitions=["2025"]) == {}
    assert sql(session, "SELECT * from T ORDER BY id") == expected


@pytest.mark.parametrize("shuffle", [
    "",
    "SET write.bucket-shuffle = true",
])
@pytest.mark.parametrize("bitmap64", ["true", "false"])
def test_deletion_vector_write_verification(session, bitmap64, shuffle):
    if shuffle:  # one writer per bucket, as Paimon's Spark write always has
        sql(session, shuffle)
    sql(session, "CREATE TABLE T (id INT, name STRING) TBLPROPERTIES ('bucket' = '1', 'primary-key' = 'id', "
                 f"'file.format' = 'parquet', 'deletion-vectors.enabled' = 'true', "
                 f"'deletion-vectors.bitmap64' = '{bitmap64}')")
    # f1 (1, 2, 3) with positions 0 and 2 deleted by f2 (1, 3)
    sql(session, "INSERT INTO T VALUES (1, 'aaaaaaaaaaaaaaaaaaa'), (2, 'b'), (3, 'c')")
    sql(session, "INSERT INTO T VALUES (1, 'a_new1'), (3, 'c_new1')")
    assert sql(session, "SELECT * from T ORDER BY id") == [(1, "a_new1"), (2, "b"), (3, "c_new1")]
    dv1 = dvs(session)
    assert len(dv1) == 1
    assert all({0, 2} <= set(p) for p in dv1.values())

    sql(session, "CALL sys.compact('T')")  # f3 (1, 2, 3), nothing deleted
    assert dvs(session) == {}

    sql(session, "INSERT INTO T VALUES (2, 'b_new2')")  # position 1 of f3 deleted
    assert sql(session, "SELECT * from T ORDER BY id") == [(1, "a_new1"), (2, "b_new2"), (3, "c_new1")]
    dv3 = dvs(session)
    assert len(dv3) == 1
    assert all(1 in p for p in dv3.values())


@pytest.mark.parametrize(("bucket", "changelog", "fmt"), [
    ("-1", "lookup", "parquet"), ("3", "none", "parquet"),
    ("3", "none", "orc"),
    ("1", "lookup", "avro")])
def test_e2e_random_write(session, bucket, changelog, fmt):
    rnd = random.Random(f"{bucket}{changelog}{fmt}")
    sql(session, f"""CREATE TABLE dv_tbl (id INT, name STRING, pt STRING) TBLPROPERTIES (
        'primary-key' = 'id, pt', 'deletion-vectors.enabled' = 'true', 'deletion-vectors.bitmap64' =
        '{rnd.choice(["true", "false"])}', 'bucket' = '{bucket}', 'changelog-producer' = '{changelog}',
        'file.format' = '{fmt}', 'read.batch-size' = '{rnd.randint(1, 1024)}') PARTITIONED BY (pt)""")
    sql(session, "CREATE TABLE result_tbl (id INT, name STRING, pt STRING) TBLPROPERTIES ("
                 "'primary-key' = 'id, pt', 'deletion-vectors.enabled' = 'false') PARTITIONED BY (pt)")

    def both(statement):
        sql(session, statement.format(t="dv_tbl"))
        sql(session, statement.format(t="result_tbl"))

    def insert(count=200):
        values = ", ".join(f"({rnd.randrange(2000)}, '{chr(97 + rnd.randrange(26))}', 'p{rnd.randrange(3)}')"
                           for _ in range(count))
        both("INSERT INTO {t} VALUES " + values)

    def ids(count=30):
        return ", ".join(str(rnd.randrange(2000)) for _ in range(count))

    def update():
        both(f"UPDATE {{t}} SET name = '{chr(97 + rnd.randrange(26))}' WHERE id IN ({ids()})")

    def delete():
        both(f"DELETE FROM {{t}} WHERE id IN ({ids()})")

    def check():
        got = sql(session, "SELECT * FROM dv_tbl ORDER BY id, pt")
        assert got == sql(session, "SELECT * FROM result_tbl ORDER BY id, pt")

    insert()
    check()
    for op in (update, delete, rnd.choice([insert, update, delete])):  # each kind once, then one at random
        op()
        check()


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_select_with_format_filter_push_down(session, spark, fmt):
    sql(session, "CREATE TABLE T (id INT, name STRING) TBLPROPERTIES ('primary-key' = 'id', "
                 f"'deletion-vectors.enabled' = 'true', 'deletion-vectors.bitmap64' = 'false', "
                 f"'file.format' = '{fmt}', 'file.block-size' = '1024b', 'bucket' = '1')")
    source = spark.range(1, 10001).selectExpr("CAST(id AS INT) AS id", "'a' AS name")
    source.createOrReplaceTempView("source_tbl")
    sql(session, "INSERT INTO T SELECT * FROM source_tbl")
    sql(session, "INSERT INTO T VALUES (1111, 'a_new'), (2222, 'a_new')")  # an update: DVs
    assert sql(session, "SELECT count(*) FROM T") == [(10000,)]
    where = "(id > 1000 and id <= 2000) or (id > 3000 and id <= 4000)"
    assert sql(session, f"SELECT count(*) FROM T WHERE {where}") == [(2000,)]
    assert sql(session, "SELECT name FROM T WHERE id = 1111") == [("a_new",)]
    assert sql(session, "SELECT name FROM T WHERE id = 2222") == [("a_new",)]


def test_get_cardinality(session):
    sql(session, "CREATE TABLE T (id INT) TBLPROPERTIES ('deletion-vectors.enabled' = 'true', "
                 "'deletion-vectors.bitmap64' = 'true', 'bucket-key' = 'id', 'bucket' = '1')")
    sql(session, "INSERT INTO T SELECT /*+ REPARTITION(1) */ id FROM range (1, 50000)")
    sql(session, "DELETE FROM T WHERE id >= 111 and id <= 444")
    t = table(session, "T").refresh()
    entries = IndexStore(t.store.io, t.store.paths).read_manifest(t.latest_snapshot().index_manifest)
    dv_entries = [e for e in entries if e.file.index_type == DELETION_VECTORS_INDEX]
    metas = dv_metas(dv_entries[0].file)
    assert metas[0].cardinality == 334


def test_delete_from_non_pk_table_with_data_file_directory(session):
    sql(session, "CREATE TABLE T (id INT) TBLPROPERTIES ('deletion-vectors.enabled' = 'true', "
                 "'deletion-vectors.bitmap64' = 'false', 'bucket-key' = 'id', 'bucket' = '1', "
                 "'data-file.path-directory' = 'data')")
    sql(session, "INSERT INTO T SELECT /*+ REPARTITION(1) */ id FROM range (1, 50000)")
    sql(session, "DELETE FROM T WHERE id >= 111 and id <= 444")
    assert sql(session, "SELECT count(*) FROM T") == [(49665,)]


def test_delete_from_non_pk_table_with_data_file_external_paths(session, tmp_path):
    external = tmp_path / "external"
    external.mkdir()
    sql(session, "CREATE TABLE T (id INT, v INT) TBLPROPERTIES ('deletion-vectors.enabled' = 'true', "
                 "'deletion-vectors.bitmap64' = 'true', 'bucket-key' = 'id', 'bucket' = '1', "
                 f"'data-file.external-paths' = 'file://{external}', "
                 "'data-file.external-paths.strategy' = 'round-robin')")
    sql(session, "INSERT INTO T SELECT /*+ REPARTITION(1) */ id, id FROM range (1, 50000)")
    sql(session, "DELETE FROM T WHERE id >= 111 and id <= 444")
    assert sql(session, "SELECT count(*) FROM T") == [(49665,)]
    assert sql(session, "SELECT sum(v) FROM T") == [(1249882315,)]

    sql(session, "UPDATE T SET v = v + 1 WHERE id >= 555 and id <= 666")
    assert sql(session, "SELECT count(*) FROM T") == [(49665,)]
    assert sql(session, "SELECT sum(v) FROM T") == [(1249882427,)]

    sql(session, "UPDATE T SET v = v + 1 WHERE id >= 600 and id <= 800")
    assert sql(session, "SELECT count(*) FROM T") == [(49665,)]
    assert sql(session, "SELECT sum(v) FROM T") == [(1249882628,)]
    assert any(external.rglob("data-*"))  # the data went to the external path


@pytest.mark.parametrize("fmt", ["avro", "orc", "parquet"])
def test_work_v1_with_v2(session, fmt):
    # Paimon's case is Avro; the Parquet variant shows the 32-bit then 64-bit DVs themselves work,
    # the ORC one that DELETE finds rows of files Spark's Parquet scan cannot read.
    sql(session, "CREATE TABLE T (id INT) TBLPROPERTIES ('deletion-vectors.enabled' = 'true', "
                 f"'deletion-vectors.bitmap64' = 'false', 'file.format' = '{fmt}')")
    sql(session, "INSERT INTO T VALUES (1), (2)")
    sql(session, "INSERT INTO T VALUES (3), (4)")
    sql(session, "DELETE FROM T WHERE id = 1")
    sql(session, "ALTER TABLE T SET TBLPROPERTIES ('deletion-vectors.bitmap64' = 'true')")
    sql(session, "DELETE FROM T WHERE id = 3")
    assert sorted(sql(session, "SELECT * FROM T")) == [(2,), (4,)]


def test_metadata_columns_file_path_and_row_index(session):
    # Paimon's getFilePathAndRowIndex: the metadata columns a user selects to see where a row lives.
    sql(session, "CREATE TABLE T (id INT, name STRING) TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    sql(session, "INSERT INTO T VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    rows = sql(session, "SELECT __paimon_file_path, __paimon_row_index FROM T WHERE id = 2 ORDER BY id")
    ((path, index),) = rows
    name = path.rsplit("/", 1)[-1]
    assert positions_of(session, [2]) == {name: (index,)}
