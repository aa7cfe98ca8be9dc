"""Paimon's dynamic table options through SQL: ``SET spark.paimon.…`` and
``/*+ OPTIONS(...) */`` on INSERT."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError
from sqlext.parse.names import TableName
from tests.integration.sql_helpers import run


def tags(session, name):
    t = session.table(TableName.parse(name))
    return {n: t.refs.tags.get(n).snapshot.id for n in t.refs.tags.names()}, t.latest_snapshot().id


@pytest.mark.parametrize("pk", ["", ", PRIMARY KEY (id) NOT ENFORCED"])
def test_an_insert_hint_names_the_batch_tag(session, pk):
    session.sql(f"CREATE TABLE t (id INT, v STRING{pk}) TBLPROPERTIES ('tag.automatic-creation' = 'batch')")
    session.sql("INSERT INTO t /*+ OPTIONS('tag.batch.customized-name' = 'nightly') */ VALUES (1, 'a')")
    found, latest = tags(session, "t")
    assert found == {"nightly": latest}
    session.sql("INSERT INTO t /*+ OPTIONS('tag.batch.customized-name' = 'nightly') */ VALUES (2, 'b')")
    found, latest = tags(session, "t")
    assert found == {"nightly": latest}  # replaced, as Paimon replaces a batch tag of that name


def test_set_spark_paimon_options_apply_to_later_writes_and_reads(session):
    session.sql("CREATE TABLE a (id INT)")
    session.sql("CREATE TABLE b (id INT)")
    run(session, "SET spark.paimon.tag.automatic-creation = batch")
    run(session, "SET spark.paimon.*.default.b.tag.batch.customized-name = b-tag")  # this table only
    session.sql("INSERT INTO a VALUES (1)")
    session.sql("INSERT INTO b VALUES (1)")
    found_a, _ = tags(session, "a")
    assert [n[: len("batch-write-")] for n in found_a] == ["batch-write-"]
    assert tags(session, "b") == ({"b-tag": 1}, 1)
    # A hint wins over the session's keys.
    session.sql("INSERT INTO b /*+ OPTIONS('tag.batch.customized-name' = 'hinted') */ VALUES (2)")
    assert tags(session, "b")[0] == {"b-tag": 1, "hinted": 2}
    run(session, "RESET")
    session.sql("INSERT INTO b VALUES (3)")
    assert tags(session, "b")[0] == {"b-tag": 1, "hinted": 2}  # no longer tagged
    # Reads: Paimon's scan options, globally or for one table.
    run(session, "SET spark.paimon.scan.snapshot-id = 1")
    assert run(session, "SELECT id FROM b") == [(1,)]
    run(session, "SET spark.paimon.dyntable.default.b.scan.snapshot-id = 2")
    assert sorted(run(session, "SELECT id FROM b")) == [(1,), (2,)]
    run(session, "RESET spark.paimon.dyntable.default.b.scan.snapshot-id")
    run(session, "RESET spark.paimon.scan.snapshot-id")
    assert sorted(run(session, "SELECT id FROM b")) == [(1,), (2,), (3,)]


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("spark.paimon.bucket", "4", ["'bucket' cannot change for a statement"]),
        ("spark.paimon.scan.snapshot-idd", "1", ["not a table option", "Did you mean 'scan.snapshot-id'"]),
        ("spark.paimon.*.default.t.snapshot.num-retained.min", "zero", ["snapshot.num-retained.min"]),
        ("spark.paimon.record-level.expire-time", "1 d", ["not supported by dyntable"]),
    ],
)
def test_a_dynamic_option_that_cannot_apply_is_refused(session, key, value, words):
    with pytest.raises(SqlError) as info:
        run(session, f"SET {key} = {value}")
    for w in words:
        assert w in str(info.value), str(info.value)
    assert key not in session.options


# -- Paimon's PaimonOptionTest (paimon-spark-ut), with its answers ---------------------------------


def frame(spark, session, table):
    """``spark.read.format("dyntable")`` of a managed table (the DataFrame path)."""
    return (spark.read.format("dyntable").option("warehouse", session.warehouse)
            .option("table", f"default.{table}").load())


def ids(df):
    return sorted(r[0] for r in df.collect())


@pytest.fixture
def conf(spark):
    """Spark's own configuration, as Paimon's withSparkSQLConf sets it (unset afterwards)."""
    keys: list[str] = []

    def set_(**pairs):
        for key, value in pairs.items():
            spark.conf.set(key, value)
            keys.append(key)

    yield set_
    for key in keys:
        spark.conf.unset(key)


def test_create_table_with_sql_conf_stores_no_scan_option(spark, session, conf):
    conf(**{"spark.paimon.scan.snapshot-id": "2"})
    run(session, "CREATE TABLE t (id INT)")
    assert "scan.snapshot-id" not in session.table(TableName.parse("t")).options


def test_create_table_by_dataframe_with_sql_conf_stores_no_scan_option(spark, session, conf):
    conf(**{"spark.paimon.scan.snapshot-id": "2"})
    (spark.createDataFrame([(1, "x1"), (2, "x2")], "a long, b string").write.format("dyntable")
     .option("warehouse", session.warehouse).option("table", "default.t").mode("append").save())
    assert "scan.snapshot-id" not in session.table(TableName.parse("t")).options
    spark.conf.unset("spark.paimon.scan.snapshot-id")
    assert sorted(run(session, "SELECT a FROM t")) == [(1,), (2,)]


def test_query_table_with_sql_conf(spark, session, conf):
    run(session, "CREATE TABLE t (id INT)")
    run(session, "INSERT INTO t VALUES 1")
    run(session, "INSERT INTO t VALUES 2")
    assert run(session, "SELECT * FROM t ORDER BY id") == [(1,), (2,)]
    conf(**{"spark.paimon.scan.snapshot-id": "1"})
    assert run(session, "SELECT * FROM t ORDER BY id") == [(1,)]
    assert ids(frame(spark, session, "t")) == [1]
    spark.conf.unset("spark.paimon.scan.snapshot-id")
    # An immutable option fails the query, SQL and DataFrame.
    conf(**{"spark.paimon.bucket": "1"})
    with pytest.raises(SqlError, match="'bucket' cannot change"):
        run(session, "SELECT * FROM t ORDER BY id")
    with pytest.raises(Exception, match="'bucket' cannot change"):
        frame(spark, session, "t").collect()


def test_global_deletion_vector_merge_on_read_supports_mixed_tables(spark, session, conf):
    run(session, "CREATE TABLE non_dv (id INT, v STRING)")
    run(session, "CREATE TABLE dv (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', "
                 "'bucket' = '1', 'deletion-vectors.enabled' = 'true', 'write-only' = 'true')")
    run(session, "INSERT INTO non_dv VALUES (1, 'append')")
    run(session, "INSERT INTO dv VALUES (2, 'dv')")
    assert run(session, "SELECT * FROM dv") == []  # level 0 is not visible by default
    conf(**{"spark.paimon.deletion-vectors.merge-on-read": "true"})
    assert run(session, "SELECT * FROM non_dv UNION ALL SELECT * FROM dv ORDER BY id") == [
        (1, "append"), (2, "dv")]
    assert sorted(tuple(r) for r in frame(spark, session, "dv").collect()) == [(2, "dv")]
    spark.conf.unset("spark.paimon.deletion-vectors.merge-on-read")
    merged = (spark.read.format("dyntable").option("warehouse", session.warehouse)
              .option("table", "default.non_dv").option("deletion-vectors.merge-on-read", "true").load())
    assert [tuple(r) for r in merged.collect()] == [(1, "append")]
    # SET through the session is the same setting.
    run(session, "SET spark.paimon.deletion-vectors.merge-on-read = true")
    assert run(session, "SELECT * FROM dv") == [(2, "dv")]


def test_query_one_table_with_sql_conf_and_table_options(spark, session, conf):
    run(session, "CREATE TABLE t (id INT)")
    run(session, "INSERT INTO t VALUES 1")
    run(session, "INSERT INTO t VALUES 2")
    conf(**{"spark.paimon.*.*.t.scan.snapshot-id": "1"})
    assert run(session, "SELECT * FROM t ORDER BY id") == [(1,)]
    assert ids(frame(spark, session, "t")) == [1]
    # A table's key wins over the global one.
    conf(**{"spark.paimon.scan.snapshot-id": "1", "spark.paimon.*.*.t.scan.snapshot-id": "2"})
    assert run(session, "SELECT * FROM t ORDER BY id") == [(1,), (2,)]
    assert ids(frame(spark, session, "t")) == [1, 2]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"spark.paimon.scan.snapshot-id": "1"}, [(1, 1)]),
        ({"spark.paimon.*.*.*.scan.snapshot-id": "1"}, [(1, 1)]),
        ({"spark.paimon.scan.snapshot-id": "1", "spark.paimon.*.*.*.scan.snapshot-id": "2"},
         [(1, 1), (2, 2)]),
        ({"spark.paimon.*.*.t1.scan.snapshot-id": "1", "spark.paimon.*.*.t2.scan.snapshot-id": "1"},
         [(1, 1)]),
        ({"spark.paimon.*.*.t1.scan.snapshot-id": "1", "spark.paimon.*.*.t2.scan.snapshot-id": "2"},
         [(1, 1)]),
        ({"spark.paimon.*.*.t1.scan.snapshot-id": "2", "spark.paimon.*.*.t2.scan.snapshot-id": "2"},
         [(1, 1), (2, 2)]),
        ({"spark.paimon.dyntable.default.t1.scan.snapshot-id": "1"}, [(1, 1)]),
        ({"spark.paimon.other_catalog.default.t1.scan.snapshot-id": "1"}, [(1, 1), (2, 2)]),  # not ours
    ],
)
def test_query_multiple_tables_with_sql_conf_and_table_options(spark, session, conf, settings, expected):
    for t in ("t1", "t2"):
        run(session, f"CREATE TABLE {t} (id INT)")
        run(session, f"INSERT INTO {t} VALUES 1")
        run(session, f"INSERT INTO {t} VALUES 2")
    conf(**settings)
    assert run(session, "SELECT * FROM t1 JOIN t2 ON t1.id = t2.id ORDER BY t1.id") == expected
    joined = frame(spark, session, "t1").join(frame(spark, session, "t2"), "id")
    assert ids(joined) == [r[0] for r in expected]


def test_dynamic_options_reach_streaming_reads(spark, session, conf, tmp_path):
    run(session, "CREATE TABLE t (id INT)")
    for i in (1, 2, 3):
        run(session, f"INSERT INTO t VALUES {i}")
    conf(**{"spark.paimon.scan.mode": "from-snapshot", "spark.paimon.scan.snapshot-id": "3"})
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "ckpt")
    q = (spark.readStream.format("dyntable").option("warehouse", session.warehouse)
         .option("table", "default.t").load().writeStream.format("parquet").option("path", sink)
         .option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    assert sorted(r[0] for r in spark.read.parquet(sink).collect()) == [3]


def test_dynamic_options_reach_dataframe_writes(spark, session, conf):
    run(session, "CREATE TABLE t (id INT)")
    conf(**{"spark.paimon.*.default.t.tag.automatic-creation": "batch",
            "spark.paimon.tag.batch.customized-name": "from-conf"})
    (spark.createDataFrame([(1,)], "id int").write.format("dyntable").option("warehouse", session.warehouse)
     .option("table", "default.t").mode("append").save())
    assert tags(session, "t") == ({"from-conf": 1}, 1)
    # An explicit write option wins over the session's key.
    (spark.createDataFrame([(2,)], "id int").write.format("dyntable").option("warehouse", session.warehouse)
     .option("table", "default.t").option("tag.batch.customized-name", "explicit").mode("append").save())
    assert tags(session, "t") == ({"from-conf": 1, "explicit": 2}, 2)
    assert "tag.automatic-creation" not in session.table(TableName.parse("t")).options  # never stored


def test_dynamic_options_set_in_sparks_configuration_reach_sql_writes(spark, session, conf):
    """A key set with ``spark.conf.set`` (as a notebook or Paimon's withSparkSQLConf does), not by
    ``SET``, reaches SQL writes as it reaches SQL reads and DataFrame writes."""
    run(session, "CREATE TABLE t (id INT)")
    conf(**{"spark.paimon.*.default.t.tag.automatic-creation": "batch",
            "spark.paimon.tag.batch.customized-name": "from-spark-conf"})
    run(session, "INSERT INTO t VALUES 1")
    assert tags(session, "t") == ({"from-spark-conf": 1}, 1)
    conf(**{"spark.paimon.write.merge-schema": "true"})
    run(session, "INSERT INTO t BY NAME SELECT 2 AS id, 'b' AS extra")
    assert run(session, "SELECT id, extra FROM t ORDER BY id") == [(1, None), (2, "b")]
