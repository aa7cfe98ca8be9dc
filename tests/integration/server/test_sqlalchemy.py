"""Superset's view of dyntable-server: SQLAlchemy reflection through PyHive's ``hive://`` dialect.

Superset lists schemas, tables and views, reflects columns (types from ``DESCRIBE``), checks
tables with ``has_table`` and previews with ``SELECT … LIMIT``; pandas reads with ``read_sql_query``.
Everything here goes through a real ``sqlalchemy.create_engine('hive://…')`` over loopback.
"""

from __future__ import annotations

import warnings

import pytest

from tests.integration.server.conftest import PASSWORD

sqlalchemy = pytest.importorskip("sqlalchemy")
from sqlalchemy import types as sat  # noqa: E402


@pytest.fixture(scope="module")
def engine(plain_server):
    from pyhive import hive

    setup = hive.connect("127.0.0.1", port=plain_server.port, username="alice", password=PASSWORD,
                         auth="CUSTOM")
    try:
        cur = setup.cursor()
        for stmt in (
            "CREATE DATABASE bi",
            "CREATE TABLE bi.orders (id BIGINT NOT NULL, amount DECIMAL(10,2), name STRING, qty INT, "
            "small SMALLINT, ok BOOLEAN, ratio DOUBLE, d DATE, ts TIMESTAMP, wall TIMESTAMP_NTZ, "
            "tags ARRAY<STRING>, PRIMARY KEY (id) NOT ENFORCED) COMMENT 'one row per order'",
            "INSERT INTO bi.orders VALUES (1, 9.50, 'a', 1, 1, true, 0.5, DATE'2024-01-01', "
            "TIMESTAMP'2024-01-01 10:00:00', TIMESTAMP_NTZ'2024-01-01 10:00:00', array('x')), "
            "(2, 19.99, 'b', 2, 2, false, 1.5, DATE'2024-01-02', NULL, NULL, NULL), "
            "(3, NULL, 'c', 3, 3, NULL, NULL, NULL, NULL, NULL, NULL)",
            "CREATE TABLE bi.events (id INT, v STRING, dt STRING) PARTITIONED BY (dt)",
            "INSERT INTO bi.events VALUES (1, 'x', '2024-01-01')",
            "CREATE VIEW bi.big_orders AS SELECT id, amount FROM bi.orders WHERE amount > 10",
        ):
            cur.execute(stmt)
    finally:
        setup.close()
    eng = sqlalchemy.create_engine(f"hive://alice:{PASSWORD}@127.0.0.1:{plain_server.port}/bi?auth=CUSTOM")
    yield eng
    eng.dispose()


def test_reflection_lists_schemas_tables_and_views(engine):
    insp = sqlalchemy.inspect(engine)
    assert {"default", "bi"} <= set(insp.get_schema_names())
    # SHOW TABLES lists views too, as Spark's and Hive's do; PyHive's dialect answers both with it.
    everything = ["big_orders", "events", "orders"]
    assert sorted(insp.get_table_names("bi")) == everything
    assert sorted(insp.get_table_names()) == everything  # the URL's database
    assert sorted(insp.get_view_names("bi")) == everything
    # Superset's Hive/Spark engine spec lists with its own SHOW statements and takes column 0:
    # its tables are SHOW TABLES less SHOW VIEWS.
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        cursor.execute("SHOW TABLES IN `bi`")
        assert sorted(row[0] for row in cursor.fetchall()) == everything
        cursor.execute("SHOW VIEWS IN `bi`")
        assert [row[0] for row in cursor.fetchall()] == ["big_orders"]
    assert insp.has_table("orders", schema="bi")
    assert not insp.has_table("nope", schema="bi")
    assert not insp.has_table("nope")


def test_reflected_column_types(engine):
    from pyhive.sqlalchemy_hive import HiveDate, HiveDecimal, HiveTimestamp

    insp = sqlalchemy.inspect(engine)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cols = {c["name"]: type(c["type"]) for c in insp.get_columns("orders", schema="bi")}
    assert list(cols) == ["id", "amount", "name", "qty", "small", "ok", "ratio", "d", "ts", "wall", "tags"]
    assert cols["id"] is sat.BigInteger and cols["qty"] is sat.Integer and cols["small"] is sat.SmallInteger
    assert cols["amount"] is HiveDecimal and cols["name"] is sat.String and cols["ok"] is sat.Boolean
    assert cols["ratio"] is sat.Float and cols["d"] is HiveDate and cols["ts"] is HiveTimestamp
    assert cols["tags"] is sat.String  # nested types reflect as strings, as with Hive
    # PyHive 0.7 knows no timestamp_ntz (Spark's TIMESTAMP_NTZ, Paimon's wall-clock TIMESTAMP): NullType
    # and a warning, as against Spark's own Thrift server (docs/server.md says how to cast it).
    assert cols["wall"] is sat.NullType
    assert [str(w.message) for w in caught] == ["Did not recognize type 'timestamp_ntz' of column 'wall'"]
    # The partition columns of a partitioned table, as Superset's partition picker reads them.
    assert insp.get_indexes("events", schema="bi") == [
        {"name": "partition", "column_names": ["dt"], "unique": False}]
    # PyHive's dialect reflects no primary keys (its get_pk_constraint answers []): JDBC's
    # getPrimaryKeys and DESCRIBE EXTENDED show them.
    assert insp.get_pk_constraint("orders", schema="bi") == []


def test_select_limit_and_pandas(engine):
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlalchemy.exc.SAWarning)  # the timestamp_ntz column above
        orders = sqlalchemy.Table("orders", sqlalchemy.MetaData(), schema="bi", autoload_with=engine)
    query = sqlalchemy.select(orders.c.id, orders.c.amount, orders.c.d).order_by(orders.c.id).limit(2)
    with engine.connect() as conn:
        rows = conn.execute(query).fetchall()
    from datetime import date
    from decimal import Decimal

    assert [tuple(r) for r in rows] == [
        (1, Decimal("9.50"), date(2024, 1, 1)), (2, Decimal("19.99"), date(2024, 1, 2))]

    frame = pd.read_sql_query("SELECT id, name, qty FROM bi.orders WHERE qty >= 2 ORDER BY id", engine)
    assert frame.to_dict("list") == {"id": [2, 3], "name": ["b", "c"], "qty": [2, 3]}
    counted = pd.read_sql_query(sqlalchemy.text("SELECT count(*) AS n FROM orders"), engine)
    assert counted["n"].tolist() == [3]
