"""Batch reads of deletion-vector tables written by Java Paimon 0.9: dyntable returns what Java reads.

Java writes a primary-key table with ``deletion-vectors.enabled`` (inserts, updates, deletes and
compactions, so that DVs exist on files of several levels). dyntable's engine (``Table.to_arrow``)
and a Spark SQL ``SELECT`` through the ``SqlSession`` must return exactly Java's rows at the
latest snapshot and at every earlier one, also with a projection and a filter on a value column.
dyntable then writes, compacts and reads the changes of such a table
(``test_java_deletion_vectors_write.py`` takes turns with Java in depth).

pypaimon (2.1) is not compared: it cannot read any table Java Paimon 0.9 wrote, DVs or not (its
manifest reader requires ``_VALUE_STATS_COLS``, which 0.9 manifests do not have).

Append tables with DVs are not covered here: Paimon 0.9 makes them only through Spark's or
Flink's row-level DELETE (``AppendDeletionFileMaintainer``), which its Java table API, and so the
oracle, does not offer. ``tests/engine/read/test_deletion_vector_read.py`` covers the append path
with DVs built by ``engine.meta.deletion_vectors`` instead.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from engine import open_catalog
from engine.scan.predicate import less_than
from tests.compat.java_oracle import JavaOracle, JavaPaimon, arrow_rows, sort_rows

pytestmark = pytest.mark.java

DV = {"deletion-vectors.enabled": "true", "file.format": "parquet"}
COLUMNS = [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("n", "INT")]


@pytest.fixture
def java(paimon_java: JavaOracle, tmp_path) -> JavaPaimon:
    return JavaPaimon(str(tmp_path / "wh"), paimon_java)


def _delete(java: JavaPaimon, table: str, ids: range) -> None:
    java.write(table, [[i, None, None] for i in ids], row_kinds=["-D"] * len(ids))


def _build_pk_table(java: JavaPaimon) -> None:
    """db.t: two buckets, DVs on files of more than one level, several snapshots to travel to."""
    java.create_table("db.t", COLUMNS, primary_keys=["id"], options={**DV, "bucket": "2"})
    java.write("db.t", [[i, f"a{i}", i % 50] for i in range(2000)])
    java.write("db.t", [[i, f"b{i}", 1000 + i] for i in range(0, 2000, 3)])
    _delete(java, "db.t", range(1, 2000, 7))
    java.compact("db.t", full=True)
    java.write("db.t", [[i, f"c{i}", 7] for i in range(0, 2000, 11)])
    java.write("db.t", [[i, f"d{i}", 8] for i in range(5, 2000, 13)]
               + [[i, f"new{i}", 9] for i in range(2000, 2100)])
    _delete(java, "db.t", range(0, 2000, 17))


def _filtered(rows: list[tuple], columns: list[int], keep) -> list[tuple]:
    return sort_rows(tuple(r[c] for c in columns) for r in rows if keep(r))


def test_engine_reads_a_java_pk_table_with_deletion_vectors_at_every_snapshot(java: JavaPaimon):
    _build_pk_table(java)
    files = java.files("db.t")
    with_dv = [f for f in files if f["deletion_file"] is not None]
    assert len({f["level"] for f in with_dv}) >= 2, files  # DVs at several levels
    assert all(f["level"] > 0 for f in files)  # Java's batch scan skips level 0 of DV tables
    table = open_catalog(java.warehouse).get_table("db.t")
    for snapshot_id in java.snapshot_ids("db.t"):
        expected = java.read("db.t", snapshot_id=snapshot_id)
        assert arrow_rows(table.to_arrow(snapshot_id=snapshot_id)) == expected, snapshot_id
        got = table.to_arrow(snapshot_id=snapshot_id, columns=["id", "v"], filter=less_than("n", 100))
        assert arrow_rows(got) == _filtered(expected, [0, 1], lambda r: r[2] is not None and r[2] < 100)
    latest = java.read("db.t")
    assert arrow_rows(table.to_arrow()) == latest
    ids = {r[0] for r in latest}
    assert 0 not in ids and 1 not in ids and 2099 in ids  # deletes and new keys as Java sees them
    assert arrow_rows(table.to_arrow(columns=["n"])) == _filtered(latest, [2], lambda r: True)


def test_dyntable_writes_and_reads_changes_of_a_java_dv_table(java: JavaPaimon):
    java.create_table("db.w", COLUMNS, primary_keys=["id"], options={**DV, "bucket": "1"})
    java.write("db.w", [[1, "a", 1], [2, "a", 2]])
    java.write("db.w", [[1, "b", 1]])
    table = open_catalog(java.warehouse).get_table("db.w")
    row = {"id": pa.array([2, 3], pa.int64()), "v": ["b", "c"], "n": pa.array([2, 3], pa.int32())}
    table.write_arrow(pa.table(row))
    assert java.read("db.w") == [(1, "b", 1), (2, "b", 2), (3, "c", 3)]
    table.refresh().compact(full=True)
    assert java.read("db.w") == arrow_rows(table.refresh().to_arrow())
    from engine.scan.incremental import ChangeReader, change_splits

    table = table.refresh()
    appended = [s for s in table.snapshots() if s.commit_kind.value == "APPEND"][-1]
    changes = ChangeReader(table.store).read_all(change_splits(table.store, appended))
    assert sort_rows(tuple(r.values()) for r in changes.to_pylist()) == [("+I", 2, "b", 2), ("+I", 3, "c", 3)]


# ---- Spark SQL ---------------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_sql_select_of_a_java_dv_table_matches_java(java: JavaPaimon, spark):
    from sqlext.session import SqlSession
    from sqlext.source.native import ENABLED

    _build_pk_table(java)
    # A second table whose only bucket has files but no DV: the native scan may read it.
    java.create_table("db.clean", COLUMNS, primary_keys=["id"], options={**DV, "bucket": "1"})
    java.write("db.clean", [[i, f"x{i}", i] for i in range(10)])
    session = SqlSession(spark, warehouse=java.warehouse)

    def rows(sql: str) -> list[tuple]:
        return sort_rows(tuple(r) for r in session.sql(sql).collect())

    try:
        for native in ("true", "false"):
            spark.conf.set(ENABLED, native)
            latest = java.read("db.t")
            assert rows("SELECT * FROM db.t") == latest
            assert rows("SELECT id, v FROM db.t WHERE n < 100") == _filtered(
                latest, [0, 1], lambda r: r[2] is not None and r[2] < 100)
            for snapshot_id in java.snapshot_ids("db.t")[:-1]:
                assert rows(f"SELECT * FROM db.t VERSION AS OF {snapshot_id}") == java.read(
                    "db.t", snapshot_id=snapshot_id), snapshot_id
            assert rows("SELECT * FROM db.clean") == java.read("db.clean")
        spark.conf.set(ENABLED, "true")
        plan = session.sql("SELECT * FROM db.t")._jdf.queryExecution().executedPlan().toString()
        # Every bucket of db.t has files with DVs: the Python reader reads them all.
        assert "FileScan parquet" not in plan
        assert "FileScan parquet" in session.sql(
            "SELECT * FROM db.clean")._jdf.queryExecution().executedPlan().toString()
        # Row-level SQL and compaction maintain the DVs; Java reads what dyntable reads after each.
        for sql in ("INSERT INTO db.t VALUES (1, 'x', 1)", "DELETE FROM db.t WHERE id = 3",
                    "UPDATE db.t SET v = 'u' WHERE id = 5", "CALL sys.compact(table => 'db.t')"):
            list(session.execute(sql))
            assert rows("SELECT * FROM db.t") == java.read("db.t"), sql
        got = {r[0]: r for r in java.read("db.t")}
        assert got[1] == (1, "x", 1) and 3 not in got and got.get(5, (5, "u"))[1] == "u"
        # A streaming read starts with the full table (level 0 included) and then its changes.
        query = (spark.readStream.format("dyntable").option("warehouse", java.warehouse)
                 .option("table", "db.t").load().writeStream.format("memory").queryName("dv_stream")
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(180)
            streamed = sort_rows(tuple(r) for r in spark.sql("SELECT * FROM dv_stream").collect())
            assert streamed == java.read("db.t")
        finally:
            query.stop()
    finally:
        spark.conf.unset(ENABLED)
        session.stop_jobs()
    assert os.path.isdir(os.path.join(java.warehouse, "db.db", "t", "index"))
