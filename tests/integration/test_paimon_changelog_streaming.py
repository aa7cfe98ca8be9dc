"""Paimon 2.0's AuditLogStreamingReadTest and the PaimonCDCSourceTest cases not already in
test_stream_paimon_source.py, translated: tables made and changed with SQL, ``T$audit_log`` and
``read.changelog`` streams read into Spark's memory sink, Paimon's expected rows. Paimon names the
streamed table with ``readStream.format("paimon").table("`T$audit_log`")``; dyntable plugs no Spark
catalog in, so the stream names it with the ``table`` option (the same table)."""

from __future__ import annotations

import pytest

from tests.integration.test_paimon_sink import AB, FileStream, _append_batch


def sql(session, text):
    frame = list(session.execute(text))[-1].dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


class Memory:
    """A stream of one table into Spark's memory sink ``name``."""

    def __init__(self, spark, warehouse, tmp_path, name, table, **options):
        self.spark, self.name = spark, name
        reader = spark.readStream.format("dyntable").option("warehouse", warehouse).option("table", table)
        self.query = (reader.options(**options).load().writeStream.format("memory").queryName(name)
                      .option("checkpointLocation", str(tmp_path / f"ckpt-{name}"))
                      .outputMode("append").start())
        # The stream fixes its start on its first trigger, which runs in the query's own thread:
        # wait for it here, or a statement run right after could land before the start (and be
        # read as the starting snapshot's rows instead of as changes).
        self.query.processAllAvailable()

    def rows(self):
        self.query.processAllAvailable()
        return sorted((tuple(r) for r in self.spark.sql(f"SELECT * FROM {self.name}").collect()), key=str)


@pytest.fixture
def started():
    streams: list = []
    yield streams
    for s in streams:
        s.query.stop()


def test_audit_log_delete_with_primary_key_partial_update_remove_record_on_delete_lookup(
        session, spark, warehouse, tmp_path, started):
    sql(session, "CREATE TABLE T (id INT, name STRING, age INT) TBLPROPERTIES ('primary-key' = 'id', "
                 "'bucket' = '4', 'merge-engine' = 'partial-update', "
                 "'partial-update.remove-record-on-delete' = 'true', 'changelog-producer' = 'lookup')")
    audit = Memory(spark, warehouse, tmp_path, "mem_audit", "default.T$audit_log")
    started.append(audit)
    sql(session, "INSERT INTO T VALUES (1, 'a', NULL)")
    sql(session, "INSERT INTO T VALUES (2, 'b', NULL)")
    sql(session, "INSERT INTO T VALUES (1, NULL, 16)")
    assert sorted(sql(session, "SELECT * FROM T")) == [(1, "a", 16), (2, "b", None)]
    sql(session, "DELETE FROM T WHERE id = 1")
    assert sql(session, "SELECT * FROM T") == [(2, "b", None)]
    assert audit.rows() == sorted([
        ("+I", 1, "a", None), ("+I", 2, "b", None), ("-U", 1, "a", None), ("+U", 1, "a", 16),
        ("-D", 1, "a", 16)], key=str)


def test_cdc_streaming_write_and_streaming_read_change_log(session, spark, warehouse, tmp_path, started):
    sql(session, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ("
                 "'primary-key'='a', 'bucket'='2', 'changelog-producer' = 'lookup')")
    source = FileStream(spark, tmp_path, AB, "a INT, b STRING")
    write = (source.df.writeStream.option("checkpointLocation", str(tmp_path / "ckpt-write"))
             .foreachBatch(_append_batch(warehouse)).start())
    try:
        read = Memory(spark, warehouse, tmp_path, "mem_cdc", "default.T", **{
            "read.changelog": "true", "scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
        started.append(read)
        steps = [
            ([(1, "v_1")], [("+I", 1, "v_1")]),
            ([(2, "v_2")], [("+I", 2, "v_2")]),
            ([(2, "v_2_new")], [("-U", 2, "v_2"), ("+U", 2, "v_2_new")]),
            ([(1, "v_1_new"), (3, "v_3")], [("-U", 1, "v_1"), ("+U", 1, "v_1_new"), ("+I", 3, "v_3")]),
        ]
        expected: list = []
        for rows, changes in steps:
            source.add(*rows)
            write.processAllAvailable()
            expected += changes
            assert read.rows() == sorted(expected, key=str)
    finally:
        write.stop()


def test_cdc_streaming_read_change_log_with_audit_log_system_table(
        session, spark, warehouse, tmp_path, started):
    sql(session, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ("
                 "'primary-key'='a', 'bucket'='2', 'changelog-producer' = 'lookup')")
    audit = Memory(spark, warehouse, tmp_path, "mem_cdc_audit", "default.T$audit_log")
    started.append(audit)
    sql(session, "INSERT INTO T VALUES (1, 'v_1')")
    assert audit.rows() == [("+I", 1, "v_1")]
    sql(session, "INSERT INTO T VALUES (2, 'v_2')")
    assert audit.rows() == [("+I", 1, "v_1"), ("+I", 2, "v_2")]
