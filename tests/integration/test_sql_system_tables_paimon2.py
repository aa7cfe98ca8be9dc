"""Paimon 2.0's newer system tables from SQL: ``t$file_key_ranges``, ``t$table_indexes``,
``t$aggregation_fields``, ``t$statistics``, ``t$row_tracking`` (refused), and the global
``sys.tables``, ``sys.partitions``, ``sys.all_table_options``, ``sys.catalog_options``."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError


def run(session, sql):
    result = list(session.execute(sql))[-1]
    return [tuple(r) for r in result.dataframe.collect()] if result.dataframe is not None else None


def columns(session, sql):
    return [(r[0], r[1]) for r in run(session, sql)]


@pytest.fixture
def tables(session):
    run(
        session,
        "CREATE TABLE agg (id INT NOT NULL, total BIGINT, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '1', 'merge-engine' = 'aggregation', "
        "'fields.total.aggregate-function' = 'sum', 'deletion-vectors.enabled' = 'true')",
    )
    run(session, "INSERT INTO agg VALUES (1, 10, 'd1'), (2, 20, 'd1'), (3, 30, 'd2')")
    run(session, "CREATE TABLE logs (id INT, msg STRING) WITH ('bucket' = '-1')")
    run(session, "INSERT INTO logs VALUES (1, 'a')")
    return session


def test_per_table_system_tables(tables):
    s = tables
    ranges = run(
        s, "SELECT partition, bucket, min_key, max_key, file_path FROM agg$file_key_ranges ORDER BY 1"
    )
    assert [r[:4] for r in ranges] == [("{d1}", 0, "[1]", "[2]"), ("{d2}", 0, "[3]", "[3]")]
    assert [r[4] for r in ranges] == [
        r[0] for r in run(s, "SELECT file_path FROM agg$files ORDER BY partition")
    ]
    assert run(s, "SELECT field_name, field_type, function FROM agg$aggregation_fields") == [
        ("id", "INT NOT NULL", "[]"),
        ("total", "BIGINT", "[sum]"),
        ("dt", "STRING NOT NULL", "[]"),
    ]
    assert run(s, "SELECT count(*) FROM agg$statistics") == [(0,)]
    assert run(s, "SELECT count(*) FROM agg$table_indexes") == [(0,)]
    # an unaware-bucket append table has no index; see the engine tests for HASH and DV rows
    assert run(s, "SELECT * FROM logs$table_indexes") == []
    described = columns(s, "DESCRIBE agg$table_indexes")
    assert described[:3] == [("partition", "string"), ("bucket", "int"), ("index_type", "string")]
    assert ("dv_ranges", "array<struct<f0:string,f1:int,f2:int,_CARDINALITY:bigint>>") in described
    assert [c for c, _ in columns(s, "DESCRIBE agg$statistics")] == [
        "snapshot_id",
        "schema_id",
        "mergedRecordCount",
        "mergedRecordSize",
        "colstat",
    ]


def test_row_tracking_is_refused_by_name(tables):
    with pytest.raises(SqlError, match="row_tracking.*row-tracking.enabled"):
        run(tables, "SELECT * FROM agg$row_tracking")


def test_global_system_tables(tables):
    s = tables
    assert run(
        s, "SELECT database_name, table_name, partitioned, primary_key, record_count FROM sys.tables"
    ) == [("default", "agg", True, True, 3), ("default", "logs", False, False, 1)]
    assert run(s, "SELECT table_name, partition_name, record_count, done FROM sys.partitions") == [
        ("agg", "dt=d1", 2, False),
        ("agg", "dt=d2", 1, False),
    ]
    opts = run(
        s, "SELECT table_name, value FROM sys.all_table_options WHERE key = 'bucket' ORDER BY table_name"
    )
    assert opts == [("agg", "1"), ("logs", "-1")]
    joined = run(
        s,
        "SELECT t.table_name, count(o.key) > 0 FROM sys.tables t "
        "JOIN sys.all_table_options o ON o.table_name = t.table_name GROUP BY 1 ORDER BY 1",
    )
    assert joined == [("agg", True), ("logs", True)]
    assert [c for c, _ in columns(s, "DESCRIBE sys.partitions")] == [
        "database_name",
        "table_name",
        "partition_name",
        "record_count",
        "file_size_in_bytes",
        "file_count",
        "last_file_creation_time",
        "done",
    ]
    with pytest.raises(SqlError, match="catalog-options-table.enabled"):
        run(s, "SELECT * FROM sys.catalog_options")
    # CALL sys.<procedure> still works beside the sys tables
    assert run(s, "CALL sys.create_tag(table => 'default.agg', tag => 't1')") is not None


def test_catalog_options_when_enabled(spark, warehouse):
    from sqlext.session import SqlSession

    s = SqlSession(spark, warehouse=warehouse, **{"catalog-options-table.enabled": "true"})
    rows = dict(run(s, "SELECT key, value FROM sys.catalog_options"))
    assert rows["catalog-options-table.enabled"] == "true" and rows["warehouse"].endswith("wh")


def test_dataframe_source_reads_new_and_global_system_tables(tables, spark, warehouse):
    def load(name, **options):
        return (spark.read.format("dyntable").option("warehouse", warehouse).option("table", name)
                .options(**options).load())

    ranges = load("default.agg$file_key_ranges")
    assert ranges.columns[:3] == ["partition", "bucket", "file_path"] and ranges.count() == 2
    assert [tuple(r) for r in load("default.agg$aggregation_fields", columns="field_name,function")
            .collect()] == [("id", "[]"), ("total", "[sum]"), ("dt", "[]")]
    listed = load("sys.tables").select("database_name", "table_name", "record_count").collect()
    assert [tuple(r) for r in listed] == [("default", "agg", 3), ("default", "logs", 1)]
    assert load("sys.partitions", columns="partition_name").columns == ["partition_name"]
    assert load("sys.all_table_options").filter("key = 'bucket'").count() == 2
