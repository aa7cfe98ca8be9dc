"""Paimon's Spark procedure tests, restated for dyntable (shared Spark session).

Each test follows one of Paimon's ``paimon-spark-ut`` procedure tests (named in its docstring):
the same statements, the same expected rows, with dyntable's SQL spelling where it differs.
"""

from __future__ import annotations

import pytest

from sqlext.parse.names import TableName
from tests.integration.sql_helpers import fails, run


def table(session, name):
    return session.table(TableName.parse(name))


# -- tags -----------------------------------------------------------------------------------------


def test_delete_tag_of_a_missing_tag_answers_true(session):
    """CreateAndDeleteTagProcedureTest: deleting a tag that does not exist is not an error."""
    session.sql("CREATE TABLE T (a INT, b STRING)")
    session.sql("INSERT INTO T VALUES (1, 'a')")
    assert run(session, "CALL sys.delete_tag(table => 'T', tag => 'no_such_tag')") == [(True,)]
    run(session, "CALL sys.create_tag(table => 'T', tag => 'one')")
    # A list mixing existing and missing tags deletes the existing ones.
    assert run(session, "CALL sys.delete_tag(table => 'T', tag => 'one,nope')") == [(True,)]
    assert table(session, "T").refs.tags.all() == {}


def test_expire_tags_with_nothing_to_expire_answers_one_row(session):
    """ExpireTagsProcedureTest: no tag expired → the single row 'No expired tags.'."""
    session.sql("CREATE TABLE T (id STRING, name STRING)")
    for i in range(1, 6):
        session.sql(f"INSERT INTO T VALUES ('{i}', '{i}')")
    run(session, "CALL sys.create_tag(table => 'T', tag => 'tag-1', snapshot => 1)")
    run(session, "CALL sys.create_tag(table => 'T', tag => 'tag-2', snapshot => 2, time_retained => '1h')")
    assert run(session, "CALL sys.expire_tags(table => 'T')") == [("No expired tags.",)]
    assert run(session, "CALL sys.expire_tags(table => 'T', older_than => '2999-01-01 00:00:00')") == [
        ("tag-1",),
        ("tag-2",),
    ]


def test_all_digit_tags_are_created_read_and_rolled_back_to(session):
    """RollbackProcedureTest 'rollback to tag check test': tag '20250122', rollback by version/tag."""
    session.sql("CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key' = 'a', 'bucket' = '3')")
    query = "SELECT * FROM T ORDER BY a"
    session.sql("INSERT INTO T VALUES (1, 'a')")
    assert run(session, "CALL sys.create_tag(table => 'T', tag => '20250122', snapshot => 1)") == [(True,)]
    session.sql("INSERT INTO T VALUES (2, 'b')")
    session.sql("INSERT INTO T VALUES (3, 'c')")
    session.sql("INSERT INTO T VALUES (4, 'd')")
    assert run(session, query) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    # A quoted digit string names the tag when one exists.
    assert run(session, "SELECT * FROM T VERSION AS OF '20250122'") == [(1, "a")]
    fails(session, "CALL sys.rollback(table => 'T_exception', version => '4')")
    # version '3' is no tag: it is snapshot 3.
    run(session, "CALL sys.rollback(table => 'T', version => '3')")
    assert run(session, query) == [(1, "a"), (2, "b"), (3, "c")]
    for bad in (
        "version => '20250122', tag => '20250122'",
        "version => '20250122', snapshot => 1",
        "tag => '20250122', snapshot => 1",
    ):
        fails(session, f"CALL sys.rollback(table => 'T', {bad})", "exactly one")
    run(session, "CALL sys.rollback(table => 'T', snapshot => 2)")
    assert run(session, query) == [(1, "a"), (2, "b")]
    run(session, "CALL sys.rollback(table => 'T', tag => '20250122')")
    assert run(session, query) == [(1, "a")]
    # A tag argument never falls back to a snapshot id.
    fails(session, "CALL sys.rollback(table => 'T', tag => '2')", "does not exist")


def test_tag_named_1_wins_over_snapshot_1_for_a_quoted_version(session):
    """Paimon's TimeTravelUtil: a version string is a tag first, then a snapshot id."""
    session.sql("CREATE TABLE T (a INT)")
    for i in range(1, 4):
        session.sql(f"INSERT INTO T VALUES ({i})")
    run(session, "CALL sys.create_tag(table => 'T', tag => '1', snapshot => 3)")
    assert sorted(run(session, "SELECT a FROM T VERSION AS OF '1'")) == [(1,), (2,), (3,)]
    assert sorted(run(session, "SELECT a FROM T VERSION AS OF '2'")) == [(1,), (2,)]


def test_tag_named_1_wins_over_snapshot_1_for_an_unquoted_version(session):
    """Paimon resolves VERSION AS OF 1 as it does '1': the tag named 1 first, then snapshot 1."""
    session.sql("CREATE TABLE T (a INT)")
    for i in range(1, 4):
        session.sql(f"INSERT INTO T VALUES ({i})")
    assert sorted(run(session, "SELECT a FROM T VERSION AS OF 1")) == [(1,)]
    run(session, "CALL sys.create_tag(table => 'T', tag => '1', snapshot => 3)")
    assert sorted(run(session, "SELECT a FROM T VERSION AS OF 1")) == [(1,), (2,), (3,)]
    assert sorted(run(session, "SELECT a FROM T FOR SYSTEM_VERSION AS OF 1")) == [(1,), (2,), (3,)]
    assert sorted(run(session, "SELECT a FROM T VERSION AS OF 2")) == [(1,), (2,)]


# -- partitions -------------------------------------------------------------------------------------


def test_expire_partitions_takes_options(session):
    """ExpirePartitionsProcedureTest: options => 'partition.expiration-time = 1d, ...' for this run."""
    session.sql("CREATE TABLE T (k STRING, pt STRING) PARTITIONED BY (pt)")
    rows = (("a", "2024-06-01"), ("b", "2024-06-02"), ("c", "2024-06-03"), ("Never-expire", "9999-09-09"))
    for k, pt in rows:
        session.sql(f"INSERT INTO T VALUES ('{k}', '{pt}')")
    rows = run(
        session,
        "CALL sys.expire_partitions(table => 'T', options => 'partition.expiration-time = 1d,"
        " partition.expiration-max-num = 2, partition.expiration-batch-size = 2,"
        " partition.timestamp-formatter = yyyy-MM-dd')",
    )
    assert rows == [("pt=2024-06-01",), ("pt=2024-06-02",)]
    assert sorted(run(session, "SELECT * FROM T")) == [("Never-expire", "9999-09-09"), ("c", "2024-06-03")]
    fails(session, "CALL sys.expire_partitions(table => 'T', options => 'nonsense')", "key=value")


# -- table properties -------------------------------------------------------------------------------


def test_arbitrary_table_properties_are_stored_as_paimon_stores_them(session):
    """DDLWithHiveCatalogTestBase / PaimonViewTestBase: TBLPROPERTIES ('k1' = 'v1') is a plain property."""
    session.sql("CREATE TABLE T (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'k1' = 'v1')")
    assert table(session, "T").options["k1"] == "v1"
    session.sql("ALTER TABLE T SET TBLPROPERTIES ('xyc' = 'abc')")
    assert table(session, "T").options["xyc"] == "abc"
    props = dict(run(session, "SHOW TBLPROPERTIES T"))
    assert props["k1"] == "v1" and props["xyc"] == "abc"
    session.sql("ALTER TABLE T UNSET TBLPROPERTIES ('xyc')")
    assert "xyc" not in table(session, "T").options
    # A near-miss of a known option is refused, naming the option it resembles, and nothing changes.
    fails(session, "ALTER TABLE T SET TBLPROPERTIES ('snapshot.num-retained.mx' = '5')",
          "Did you mean 'snapshot.num-retained.max'?")
    assert "snapshot.num-retained.mx" not in table(session, "T").options
    # An option dyntable cannot honour is refused, and nothing changes.
    fails(session, "ALTER TABLE T SET TBLPROPERTIES ('record-level.expire-time' = '1 d')", "not supported")
    assert "record-level.expire-time" not in table(session, "T").options


# -- Paimon's further maintenance procedures --------------------------------------------------------


def test_clear_consumers(session):
    """ClearConsumersProcedure: regular expressions over consumer ids, excluding wins."""
    session.sql("CREATE TABLE T (id INT)")
    session.sql("INSERT INTO T VALUES (1)")
    t = table(session, "T")
    for cid in ("myid1", "myid2", "other"):
        t.refs.consumers.reset(cid, 1)
    assert run(
        session,
        "CALL sys.clear_consumers(table => 'T', including_consumers => 'myid.*', "
        "excluding_consumers => 'myid2')",
    ) == [(True,)]
    assert t.refs.consumers.ids() == ["myid2", "other"]
    assert run(session, "CALL sys.clear_consumers('T')") == [(True,)]
    assert t.refs.consumers.ids() == []


def test_compact_manifest(session):
    """CompactManifestProcedureTest: after compact_manifest no manifest holds deleted files."""
    session.sql(
        "CREATE TABLE T (id INT, value STRING, dt STRING, hh INT) PARTITIONED BY (dt, hh) "
        "TBLPROPERTIES ('write-only' = 'true')"
    )
    session.sql("INSERT INTO T VALUES (5, '5', '2024-01-02', 0), (6, '6', '2024-01-02', 1)")
    for _ in range(3):
        session.sql("INSERT OVERWRITE T VALUES (5, '5', '2024-01-02', 0), (6, '6', '2024-01-02', 1)")
    [(deleted,)] = run(session, "SELECT sum(num_deleted_files) FROM `T$manifests`")
    assert deleted == 6
    assert run(session, "CALL sys.compact_manifest(table => 'T', dry_run => true)") == [(True,)]
    assert run(session, "SELECT sum(num_deleted_files) FROM `T$manifests`") == [(6,)]
    assert run(session, "CALL sys.compact_manifest(table => 'T')") == [(True,)]
    assert run(session, "SELECT sum(num_deleted_files) FROM `T$manifests`") == [(0,)]
    assert sorted(run(session, "SELECT id FROM T")) == [(5,), (6,)]
    fails(session, "CALL sys.compact_manifest(table => 'T', manifest_sort_enabled => true)", "not supported")


def test_purge_files(session):
    """PurgeFilesProcedureTest: the table is empty, one snapshot is left, and it takes writes again."""
    session.sql("CREATE TABLE T (id STRING, name STRING)")
    session.sql("INSERT INTO T VALUES ('1', 'aa')")
    run(session, "CALL sys.create_tag(table => 'T', tag => 'keep')")
    rows = run(session, "CALL sys.purge_files(table => 'T', dry_run => true)")
    assert ("would delete 1 tag(s): keep",) in rows and run(session, "SELECT * FROM T") == [("1", "aa")]
    assert run(session, "CALL sys.purge_files(table => 'T')") == [("Success",)]
    assert run(session, "SELECT * FROM T") == []
    assert len(run(session, "SELECT snapshot_id FROM `T$snapshots`")) == 1
    session.sql("INSERT INTO T VALUES ('2', 'aa')")
    assert run(session, "SELECT * FROM T") == [("2", "aa")]


def test_remove_unexisting_files(session):
    """RemoveUnexistingFilesProcedureTest: nothing on an empty table; a lost file is listed, then dropped."""
    import os

    from engine.ops.missing_files import _path

    session.sql("CREATE TABLE t_empty (id INT)")
    assert run(session, "CALL sys.remove_unexisting_files(table => 't_empty', dry_run => true)") == []
    assert run(session, "CALL sys.remove_unexisting_files(table => 't_empty')") == []
    session.sql("CREATE TABLE T (id INT, pt INT) PARTITIONED BY (pt)")
    for i in range(4):
        session.sql(f"INSERT INTO T VALUES ({i}, {i % 2})")
    t = table(session, "T")
    lost = next(e for e in t.store.live_entries(t.latest_snapshot()) if e.file.row_count == 1)
    path = _path(t.store, lost, {})
    os.remove(path)
    [(listed,)] = run(session, "CALL sys.remove_unexisting_files(table => 'T', dry_run => true)")
    assert listed == path and "pt=" in listed
    assert run(session, "CALL sys.remove_unexisting_files(table => 'T')") == [(path,)]
    assert len(run(session, "SELECT * FROM T")) == 3


def test_rollback_to_watermark(session):
    """RollbackToWatermarkProcedure: the newest snapshot whose watermark is at or below the argument."""
    session.sql("CREATE TABLE T (a INT)")
    t = table(session, "T")
    import pyarrow as pa

    for i, wm in ((1, 1000), (2, 2000), (3, 3000)):
        writer = t.new_writer()
        writer.write(pa.table({"a": pa.array([i], pa.int32())}))
        t.new_commit().commit(writer.prepare_commit(), watermark=wm)
    assert run(session, "CALL sys.rollback_to_watermark(table => 'T', watermark => 2001)") == [(3, 4)]
    assert sorted(run(session, "SELECT a FROM T")) == [(1,), (2,)]
    fails(session, "CALL sys.rollback_to_watermark(table => 'T', watermark => 999)", "watermark")


def test_mark_partition_done(session):
    """MarkPartitionDoneProcedureTest: a _SUCCESS file in each marked partition."""
    import os

    session.sql(
        "CREATE TABLE T (id STRING, name STRING, day STRING) PARTITIONED BY (day) "
        "TBLPROPERTIES ('primary-key' = 'day,id', 'partition.mark-done-action' = 'success-file')"
    )
    session.sql("INSERT INTO T VALUES ('1', 'a', '2024-07-13')")
    session.sql("INSERT INTO T VALUES ('2', 'b', '2024-07-14')")
    assert run(
        session, "CALL sys.mark_partition_done(table => 'T', partitions => 'day=2024-07-13;day=2024-07-14')"
    ) == [(True,)]
    root = table(session, "T").path
    for day in ("2024-07-13", "2024-07-14"):
        assert os.path.exists(os.path.join(root, f"day={day}", "_SUCCESS"))
    fails(
        session,
        "ALTER TABLE T SET TBLPROPERTIES ('partition.mark-done-action' = 'success-file,custom')",
        "custom",
    )


def test_trigger_tag_automatic_creation(session):
    """TriggerTagAutomaticCreationProcedureTest: a daily process-time tag for yesterday, made on demand."""
    import datetime as dt

    session.sql("CREATE TABLE T (id INT, name STRING) TBLPROPERTIES ('primary-key' = 'id')")
    session.sql("INSERT INTO T VALUES (1, 'a')")
    assert run(session, "SHOW TAGS T") == []
    session.sql(
        "ALTER TABLE T SET TBLPROPERTIES ('tag.automatic-creation' = 'process-time', "
        "'tag.creation-period' = 'daily', 'tag.creation-delay' = '10 m', "
        "'tag.num-retained-max' = '90')"
    )
    assert run(session, "CALL sys.trigger_tag_automatic_creation(table => 'T')") == [(True,)]
    yesterday = (dt.date.today() - dt.timedelta(days=1)).isoformat()
    assert run(session, "SHOW TAGS T") == [(yesterday,)]


def test_compact_database(session):
    """CompactDatabaseProcedureTest: every matching table gets a COMPACT snapshot; the answer counts them."""
    for db in ("test_db1", "test_db2"):
        session.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    for name in ("test_db1.T1", "test_db1.T2", "test_db2.T3"):
        session.sql(
            f"CREATE TABLE {name} (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', "
            "'write-only' = 'true')"
        )
        session.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
        session.sql(f"INSERT INTO {name} VALUES (3, 'c'), (4, 'd')")
    [(text,)] = run(
        session, "CALL sys.compact_database(including_databases => 'test_db1', excluding_tables => '.*T2')"
    )
    assert text == "Compact database finished. Success: 1, Failed: 0"
    kinds = {
        n: table(session, n).latest_snapshot().commit_kind.value
        for n in ("test_db1.T1", "test_db1.T2", "test_db2.T3")
    }
    assert kinds == {"test_db1.T1": "COMPACT", "test_db1.T2": "APPEND", "test_db2.T3": "APPEND"}
    [(text,)] = run(session, "CALL sys.compact_database()")
    assert "Success: " in text and "Failed: 0" in text
    assert table(session, "test_db2.T3").latest_snapshot().commit_kind.value == "COMPACT"


# -- tables: rescale, copy, migrate -----------------------------------------------------------------


def test_rescale(session):
    """RescaleProcedureTest: rows survive a bucket increase and decrease (Paimon sets 'bucket' first;
    dyntable's rescale changes it itself, as ALTER TABLE ... CLUSTERED INTO does)."""
    session.sql("CREATE TABLE T (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2')")
    session.sql("INSERT INTO T VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')")
    expected = run(session, "SELECT * FROM T ORDER BY id")
    assert run(session, "CALL sys.rescale(table => 'T', bucket_num => 4)") == [(True,)]
    assert table(session, "T").options["bucket"] == "4"
    assert {s.bucket for s in table(session, "T").new_scan().plan().splits} <= {0, 1, 2, 3}
    assert run(session, "SELECT * FROM T ORDER BY id") == expected
    assert run(session, "CALL sys.rescale(table => 'T')") == [(True,)]  # the current bucket count
    assert run(session, "CALL sys.rescale(table => 'T', bucket_num => 2)") == [(True,)]
    assert {s.bucket for s in table(session, "T").new_scan().plan().splits} <= {0, 1}
    assert run(session, "SELECT * FROM T ORDER BY id") == expected
    fails(session, "CALL sys.rescale(table => 'T', bucket_num => 4, partitions => 'pt=p1')", "bucket count")
    assert run(
        session, "SELECT count(*) FROM T$maintenance_log WHERE procedure = 'rescale' AND error IS NULL"
    ) == [(3,)]


def test_copy(session):
    """CopyFilesProcedureTest: the target equals the source, also after a second copy."""
    session.sql("CREATE TABLE tbl (k INT, v STRING, dt STRING, hh INT) PARTITIONED BY (dt, hh)")
    session.sql("INSERT INTO tbl VALUES (1, 'a', '2025-08-17', 5), (2, 'b', '2025-10-06', 0)")
    for _ in range(2):
        assert run(session, "CALL sys.copy(source_table => 'tbl', target_table => 'target_tbl')") == [(True,)]
        assert sorted(run(session, "SELECT * FROM target_tbl")) == sorted(run(session, "SELECT * FROM tbl"))
    assert table(session, "target_tbl").partition_keys == ("dt", "hh")
    session.sql("INSERT INTO tbl VALUES (3, 'c', '2025-08-17', 5)")
    run(
        session,
        "CALL sys.copy(source_table => 'tbl', target_table => 'target_tbl', where => \"dt = '2025-08-17'\")",
    )
    assert sorted(run(session, "SELECT k FROM target_tbl")) == [(1,), (2,), (3,)]


def test_procedures_of_missing_features_are_refused_with_the_feature(session):
    for call, feature in (
        ("create_function(name => 'f', inputParams => '[]')", "catalog functions"),
        ("alter_view_dialect(view => 'v', action => 'add')", "views"),
        ("create_global_index(table => 'T', index_column => 'a', index_type => 'btree')", "global indexes"),
        ("compact_chain_table(table => 'T')", "chain tables"),
        ("reassign_row_id(table => 'T')", "row ids"),
        ("repair('db')", "metastore"),
    ):
        e = fails(session, f"CALL sys.{call}", feature)
        assert e.sqlstate == "0A000", (call, e.sqlstate)


def _spark_parquet_table(session, name):
    import shutil
    from urllib.parse import urlparse

    spark = session.spark
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    # The Spark warehouse is shared by the test session: clear what an earlier failed run left.
    shutil.rmtree(urlparse(spark.conf.get("spark.sql.warehouse.dir")).path + f"/{name}", ignore_errors=True)
    spark.sql(f"CREATE TABLE {name} (id INT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(
        f"INSERT INTO {name} VALUES (1, 'a', '2024-01-01'), (2, 'b', '2024-01-02'), (3, 'c', '2024-01-02')"
    )


def _spark_has(session, name):
    return any(t.name == name for t in session.spark.catalog.listTables("default"))


def test_migrate_table_in_place_and_into_a_target(session):
    """MigrateTableProcedureTest: a Parquet table becomes a dyntable table with the same rows."""
    _spark_parquet_table(session, "mig_src")
    expected = sorted(tuple(r) for r in session.spark.sql("SELECT * FROM mig_src").collect())
    assert run(session, "CALL sys.migrate_table(source_type => 'parquet', table => 'default.mig_src')") == [
        (True,)
    ]
    assert not _spark_has(session, "mig_src")
    assert table(session, "mig_src").partition_keys == ("dt",)
    assert sorted(run(session, "SELECT id, v, dt FROM mig_src")) == expected
    _spark_parquet_table(session, "mig_keep")
    assert run(
        session,
        "CALL sys.migrate_table('hive', 'default.mig_keep', 'file.compression=snappy', false, "
        "'default.mig_new')",
    ) == [(True,)]
    assert _spark_has(session, "mig_keep")  # delete_origin => false keeps the origin
    assert table(session, "mig_new").options["file.compression"] == "snappy"
    assert sorted(run(session, "SELECT id, v, dt FROM mig_new")) == expected
    fails(session, "CALL sys.migrate_table(source_type => 'parquet', table => 'default.mig_new')", "already")
    fails(
        session, "CALL sys.migrate_table(source_type => 'orc', table => 'default.mig_keep')", "not supported"
    )
    session.spark.sql("DROP TABLE IF EXISTS mig_keep")


def test_migrate_table_that_fails_loses_nothing(session, monkeypatch):
    import sqlext.execute.writes as writes

    _spark_parquet_table(session, "mig_fail")

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(writes, "write_frame", broken)
    with pytest.raises(OSError, match="disk full"):
        list(session.execute("CALL sys.migrate_table(source_type => 'parquet', table => 'default.mig_fail')"))
    assert _spark_has(session, "mig_fail")  # the origin is untouched
    assert session.spark.sql("SELECT count(*) FROM mig_fail").collect()[0][0] == 3
    assert "mig_fail__migrating" not in session.catalog.list_tables("default")  # the half-made table went
    session.spark.sql("DROP TABLE IF EXISTS mig_fail")


def test_repair_earliest_snapshot(session):
    """RepairEarliestSnapshotProcedureTest: snapshots 1 and 5 only; 5 becomes the earliest."""
    session.sql("CREATE TABLE T (k INT)")
    for i in range(5):
        session.sql(f"INSERT INTO T VALUES ({i})")
    t = table(session, "T")
    import os

    for sid in (2, 3, 4):
        os.remove(t.store.paths.snapshot_file(sid))
    assert run(session, "CALL sys.repair_earliest_snapshot(table => 'T', snapshot_id => 5)") == [(1, 5)]
    assert table(session, "T").snapshot_id_range() == (5, 5)
    assert run(session, "SELECT k FROM T ORDER BY k") == [(0,), (1,), (2,), (3,), (4,)]


def test_migrate_database(session):
    """MigrateDatabaseProcedureTest: every Parquet table of the database, counted in the answer."""
    session.spark.sql("CREATE DATABASE IF NOT EXISTS mig_db")
    session.sql("CREATE DATABASE IF NOT EXISTS mig_db")
    for name in ("mig_db.a", "mig_db.b"):
        _spark_parquet_table(session, name)
    assert run(
        session,
        "CALL sys.migrate_database(source_type => 'hive', database => 'mig_db', "
        "options => 'file.compression=snappy')",
    ) == [("migrate database is finished, success cnt: 2 , failed cnt: 0",)]
    for name in ("mig_db.a", "mig_db.b"):
        assert len(run(session, f"SELECT * FROM {name}")) == 3
        assert table(session, name).options["file.compression"] == "snappy"


def test_a_missing_snapshot_in_a_tag_or_rollback_call_points_at_its_argument(session, warehouse):
    """The caret is under the offending argument; the message names the table, not its files."""
    session.sql("CREATE TABLE t (a INT)")
    session.sql("INSERT INTO t VALUES (1)")
    run(session, "CALL sys.create_tag('t', 'y')")
    for sql, argument in (
        ("CALL sys.create_tag(table => 't', tag => 'x', snapshot => 99)", "99"),
        ("CALL sys.replace_tag('t', 'y', 99)", "99"),
        ("CALL sys.rollback(table => 't', snapshot => 99)", "99"),
        ("CALL sys.rollback(table => 't',\n  version => '99')", "'99'"),
    ):
        error = fails(session, sql, "table 'default.t'", "99")
        assert warehouse not in str(error) and "/snapshot" not in str(error), str(error)
        lines = sql.split("\n")
        assert error.snippet == lines[error.line - 1]
        assert error.snippet[error.column - 1 :].startswith(argument), str(error)
    session.sql("CREATE TABLE e (a INT)")
    error = fails(session, "CALL sys.create_tag(table => 'e', tag => 'x')", "table 'default.e' has no snap")
    assert warehouse not in str(error) and error.snippet[error.column - 1 :].startswith("'e'")
    assert run(session, "SELECT tag_name, snapshot_id FROM `t$tags`") == [("y", 1)]
