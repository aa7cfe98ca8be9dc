"""DESCRIBE / SHOW CREATE TABLE / SHOW PARTITIONS and CALL procedures through SqlSession (shared Spark)."""

from __future__ import annotations

import pytest

from sqlext.errors import ProcedureArgumentError, SqlAnalysisError, SqlError
from sqlext.parse.names import TableName
from tests.integration.sql_helpers import run


def fails(session, sql, sqlstate, *words, cls=SqlError):
    with pytest.raises(cls) as info:
        list(session.execute(sql))
    assert info.value.sqlstate == sqlstate, str(info.value)
    for w in words:
        assert w in str(info.value), str(info.value)
    return info.value


def table(session, name):
    return session.table(TableName.parse(name))


@pytest.fixture
def orders(session):
    session.sql("""
        CREATE TABLE orders (
          id BIGINT NOT NULL COMMENT 'the ''order'' id',
          amount DECIMAL(10, 2),
          tags ARRAY<STRING>,
          addr ROW<street STRING, zip INT NOT NULL>,
          ts TIMESTAMP(3),
          dt STRING COMMENT 'day',
          amount_x2 AS amount * 2 COMMENT 'computed',
          WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
          PRIMARY KEY (id, dt) NOT ENFORCED
        ) COMMENT 'orders \\\\ table' PARTITIONED BY (dt)
        WITH ('bucket' = '2', 'merge-engine' = 'deduplicate', 'changelog-producer' = 'input')
    """)
    # (addr is given: a NULL struct with a NOT NULL field is refused by the writer today)
    session.sql(
        "INSERT INTO orders (id, amount, addr, dt) SELECT id, amount, named_struct('street', 's', 'zip', 1), "
        "dt FROM VALUES (1, 1.5, '2024-01-01'), (2, 2.5, '2024-01-01'), (3, 3.5, '2024-01-02') "
        "AS v(id, amount, dt)"
    )
    return table(session, "orders")


def test_describe_variants(session, orders):
    out = run(session, "DESCRIBE orders")
    # Types as Spark prints them (lower case, no NOT NULL): what Hive clients parse.
    assert out[:6] == [
        ("id", "bigint", "the 'order' id"),
        ("amount", "decimal(10,2)", None),
        ("tags", "array<string>", None),
        ("addr", "struct<street:string,zip:int>", None),
        ("ts", "timestamp", None),  # TIMESTAMP(3): Spark's TIMESTAMP, an instant (Paimon's TIMESTAMP_LTZ(3))
        ("dt", "string", "day"),
    ]
    assert (out[6][0], out[6][2]) == ("amount_x2", "computed") and out[6][1].startswith("decimal(")
    i = out.index(("# Partition Information", "", ""))
    assert out[i + 2] == ("dt", "string", "day")
    assert "# Detailed Table Information" not in [r[0] for r in out]

    ext = run(session, "DESCRIBE TABLE EXTENDED orders")
    details = {r[0]: r[1] for r in ext[ext.index(("# Detailed Table Information", "", "")) + 1 :]}
    latest = orders.latest_snapshot()
    assert details["Name"] == "dyntable.default.orders"
    assert details["file.path"] == orders.path and details["file.format"] == "parquet"
    assert details["bucket"] == "2" and details["bucket-key"] == "id"
    assert details["change-tracking"] == "true"
    assert details["primary-key"] == "id,dt" and details["partition"] == "dt"
    assert details["schema-id"] == "0" and details["latest-snapshot-id"] == str(latest.id)
    assert details["record-count"] == str(latest.total_record_count) == "3"
    assert details["merge-engine"] == "deduplicate" and details["changelog-producer"] == "input"
    assert details["log.system"] == "none" and details["Comment"] == "orders \\ table"
    assert "bucket=2" in details["options"] and "changelog-producer=input" in details["options"]

    part = run(session, "DESCRIBE TABLE EXTENDED orders PARTITION (dt = '2024-01-01')")
    pd = {r[0]: r[1] for r in part[part.index(("# Detailed Partition Information", "", "")) + 1 :]}
    files = [
        f
        for sp in orders.new_scan().plan().splits
        if sp.partition_values == ("2024-01-01",)
        for f in sp.files
    ]
    assert pd == {
        "partition": "dt=2024-01-01",
        "file.path": orders.path + "/dt=2024-01-01",
        "num-files": str(len(files)),
        "record-count": "2",
        "size-in-bytes": str(sum(f.file_size for f in files)),
    }
    assert run(session, "DESCRIBE orders amount") == [
        ("col_name", "amount"),
        ("data_type", "decimal(10,2)"),
        ("comment", None),
    ]
    fails(session, "DESCRIBE EXTENDED orders PARTITION (dt = '1999-01-01')", "428FT", "does not exist")
    fails(session, "DESCRIBE EXTENDED orders PARTITION (id = 1)", "42703", "'id'")
    assert [r[0] for r in run(session, "DESCRIBE orders$snapshots")][:2] == ["snapshot_id", "schema_id"]


def test_show_create_table_round_trips(session, orders):
    [(text,)] = run(session, "SHOW CREATE TABLE orders")
    assert text.startswith("CREATE TABLE default.orders (")
    assert "`amount_x2` AS amount * 2 COMMENT 'computed'" in text
    assert "WATERMARK FOR `ts` AS ts - INTERVAL '5' SECOND" in text
    assert "PRIMARY KEY (`id`, `dt`) NOT ENFORCED" in text and "PARTITIONED BY (`dt`)" in text
    assert "dyntable.computed-column" not in text and "'changelog-producer' = 'input'" in text
    session.sql(text.replace("CREATE TABLE default.orders", "CREATE TABLE copy_of_orders"))
    copy = table(session, "copy_of_orders").schema
    original = orders.schema
    assert copy.fields == original.fields
    assert (copy.primary_keys, copy.partition_keys, copy.comment) == (
        original.primary_keys,
        original.partition_keys,
        original.comment,
    )
    assert dict(copy.options) == dict(original.options)


def test_show_partitions(session, orders):
    assert run(session, "SHOW PARTITIONS orders") == [("dt=2024-01-01",), ("dt=2024-01-02",)]
    assert run(session, "SHOW PARTITIONS orders PARTITION (dt = '2024-01-02')") == [("dt=2024-01-02",)]
    session.sql("CREATE TABLE flat (id INT)")
    fails(session, "SHOW PARTITIONS flat", "42000", "not partitioned")
    session.sql("CREATE TABLE typed (id INT, d DATE, h INT) PARTITIONED BY (d, h)")
    session.sql("INSERT INTO typed VALUES (1, DATE'2024-03-01', 7), (2, NULL, 8)")
    assert run(session, "SHOW PARTITIONS typed") == [
        ("d=2024-03-01/h=7",),
        ("d=null/h=8",),
    ]  # Spark/Paimon print NULL as null


# -- CALL ------------------------------------------------------------------------------------------


def test_call_compact(session, orders):
    session.sql(
        "INSERT INTO orders (id, amount, addr, dt) SELECT id, 9.5, named_struct('street', 's', 'zip', 2), dt "
        "FROM VALUES (1, '2024-01-01'), (3, '2024-01-02') AS v(id, dt)"
    )
    [(ok, sid, n)] = run(
        session, "CALL sys.compact(table => 'default.orders', partitions => 'dt=2024-01-01')"
    )
    assert ok and sid == orders.latest_snapshot().id and n == 1
    t = table(session, "orders")
    per_part = {sp.partition_values: len(sp.files) for sp in t.new_scan().plan().splits}
    assert per_part[("2024-01-01",)] <= 2  # compacted into one file per bucket
    assert (
        sum(sp.row_count for sp in t.new_scan().plan().splits if sp.partition_values == ("2024-01-01",)) == 2
    )
    # where: a predicate on partition columns, evaluated against the partition list
    [(ok, sid, n)] = run(
        session,
        "CALL system.compact(`table` => 'orders', compact_strategy => 'full', "
        "`where` => \"dt > '2024-01-01'\")",
    )
    assert ok and n == 1 and sid == table(session, "orders").latest_snapshot().id
    [(ok, sid, n)] = run(session, "CALL compact(table => 'orders', where => \"dt = '1999'\")")
    assert (ok, sid, n) == (True, None, 0)
    assert sorted(r.as_py() for r in table(session, "orders").to_arrow(columns=["id"]).column("id")) == [
        1,
        2,
        3,
    ]
    fails(
        session,
        "CALL sys.compact(table => 'orders', where => 'amount > 1')",
        "22023",
        "partition columns",
        cls=ProcedureArgumentError,
    )
    fails(
        session,
        "CALL sys.compact(table => 'orders', partitions => 'dt=1', where => 'dt = 1')",
        "22023",
        "together",
    )
    fails(session, "CALL sys.compact(table => 'orders', partitions => 'amount=1')", "22023", "'amount'")
    fails(
        session,
        "CALL sys.compact(table => 'orders', compact_strategy => 'huge')",
        "22023",
        "'full' or 'minor'",
    )
    fails(session, "CALL sys.compact(table => 'nope')", "42P01", "nope", cls=SqlAnalysisError)


def test_call_reset_consumer_and_argument_errors(session, orders):
    session.sql(
        "INSERT INTO orders (id, addr, dt) VALUES (4, named_struct('street', 's', 'zip', 3), '2024-01-03')"
    )
    latest = orders.latest_snapshot().id
    assert run(
        session,
        f"CALL sys.reset_consumer(table => 'orders', consumer_id => 'c1', next_snapshot_id => {latest})",
    ) == [(True, latest)]
    assert orders.refs.consumers.get("c1").next_snapshot == latest
    # Spark's parameter spellings, and a string that converts to the parameter's type
    assert run(
        session, "CALL sys.reset_consumer(table => 'orders', consumerId => 'c2', nextSnapshotId => '1')"
    ) == [(True, 1)]
    assert sorted(orders.refs.consumers.ids()) == ["c1", "c2"]
    assert run(session, "CALL SYS.Reset_Consumer(table => 'orders', consumer_id => 'c1')") == [(True, None)]
    assert orders.refs.consumers.ids() == ["c2"]
    fails(session, "CALL sys.reset_consumer('orders', 'c3', 999)", "22023", "next_snapshot_id")
    fails(session, "CALL sys.reset_consumer('orders', 'c3', 'abc')", "22023", "must be an integer")
    fails(session, "CALL sys.reset_consumer(table => 'orders')", "22023", "'consumer_id' is missing")
    fails(session, "CALL sys.reset_consumer('orders', 'c', 1, 2)", "22023", "at most 3")
    fails(
        session,
        "CALL sys.reset_consumer(table => 'orders', consumer => 'c')",
        "22023",
        "no parameter 'consumer'",
    )
    fails(
        session,
        "CALL sys.reset_consumer(table => 'orders', consumer_id => 'c', TABLE => 'o')",
        "22023",
        "twice",
    )
    err = fails(session, "SELECT 1;\nCALL sys.reset_consumr('orders', 'c')", "42883", "reset_consumer")
    assert err.line == 2
    fails(session, "CALL db.reset_consumer('orders', 'c')", "42883", "sys")
    assert orders.refs.consumers.ids() == ["c2"]
    names = [r[0] for r in run(session, "CALL sys.list_procedures()")]
    assert {"compact", "reset_consumer"} <= set(names)
