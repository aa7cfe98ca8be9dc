"""What BI clients see when they browse dyntable-server: impyla's metadata calls, a JDBC program
calling ``DatabaseMetaData`` as DBeaver/DataGrip do (compiled with javac against pyspark's
hive-jdbc), and the answer a client gets when its transport does not match ``--auth``."""

from __future__ import annotations

import glob
import logging
import os
import shutil
import subprocess
from collections import defaultdict

import pytest

from engine.system_tables import DATA_TABLES, METADATA_TABLES
from tests.integration.server.conftest import PASSWORD
from tests.integration.server.test_clients import _beeline

SETUP = [
    "CREATE DATABASE shop",
    "CREATE TABLE shop.orders (id BIGINT NOT NULL COMMENT 'order number', amount DECIMAL(10,2), "
    "placed TIMESTAMP_NTZ, shipped TIMESTAMP, PRIMARY KEY (id) NOT ENFORCED) COMMENT 'one row per order'",
    "CREATE TABLE shop.items (sku STRING, qty INT)",
    "INSERT INTO shop.orders VALUES (1, 9.5, TIMESTAMP_NTZ'2024-01-01 10:00:00', "
    "TIMESTAMP'2024-01-02 10:00:00')",
    "CREATE VIEW shop.big_orders COMMENT 'orders over 5' AS SELECT id FROM shop.orders WHERE amount > 5",
]
SYSTEM_TABLES = sorted(f"orders${n}" for n in (*METADATA_TABLES, *DATA_TABLES))


@pytest.fixture(scope="module")
def shop(plain_server):
    from impala.dbapi import connect

    conn = connect(host="127.0.0.1", port=plain_server.port, auth_mechanism="PLAIN", user="alice",
                   password=PASSWORD)
    try:
        cursor = conn.cursor()
        for stmt in SETUP:
            cursor.execute(stmt)
        cursor.close()
    finally:
        conn.close()
    return plain_server


@pytest.fixture
def impyla(shop):
    from impala.dbapi import connect

    conn = connect(host="127.0.0.1", port=shop.port, auth_mechanism="PLAIN", user="alice", password=PASSWORD)
    cursor = conn.cursor()
    yield cursor
    # Closed here: a cursor left to the garbage collector closes its session then, from wherever
    # the collector runs (after the server stopped, it retries a connection and logs failures).
    cursor.close()
    conn.close()


def test_impyla_metadata_calls(impyla):
    impyla.get_databases()
    assert {"default", "shop"} <= {row[0] for row in impyla.fetchall()}
    impyla.execute("CREATE TEMPORARY VIEW recent AS SELECT id FROM shop.orders")
    impyla.get_tables("shop")  # the session's temporary views come with no schema, as Spark lists them
    assert sorted((row[1], row[2], row[3], row[4]) for row in impyla.fetchall()) == [
        ("", "recent", "VIEW", ""), ("shop", "big_orders", "VIEW", "orders over 5"),
        ("shop", "items", "TABLE", ""), ("shop", "orders", "TABLE", "one row per order")]
    impyla.get_tables()  # every database ('.*')
    assert {("shop", "orders"), ("shop", "items"), ("shop", "big_orders"), ("", "recent")} <= {
        (row[1], row[2]) for row in impyla.fetchall()}
    assert impyla.get_table_schema("orders", "shop") == [
        ("id", "BIGINT"), ("amount", "DECIMAL(10,2)"), ("placed", "TIMESTAMP_NTZ"), ("shipped", "TIMESTAMP")]
    assert impyla.get_table_schema("items") == [("sku", "STRING"), ("qty", "INT")]  # database '.*'
    assert impyla.table_exists("orders", "shop") and not impyla.table_exists("nope", "shop")
    assert impyla.database_exists("shop") and not impyla.database_exists("nowhere")
    impyla.get_functions("sys")
    procedures = {row[2] for row in impyla.fetchall()}
    assert "create_tag" in procedures and "sum" not in procedures


def test_impyla_default_nosasl_is_told_to_use_plain(shop, caplog):
    from impala.dbapi import connect
    from impala.error import HiveServer2Error

    with caplog.at_level(logging.WARNING, logger="dyntable.server"):
        conn = connect(host="127.0.0.1", port=shop.port)  # impyla's default: NOSASL
        try:
            with pytest.raises(HiveServer2Error, match="without SASL") as info:
                conn.cursor()
        finally:
            conn.close()
    assert "auth_mechanism='PLAIN'" in str(info.value)
    assert any("refused" in r.getMessage() and "without SASL" in r.getMessage() for r in caplog.records)


def test_sasl_client_against_nosasl_server_is_told_so(nosasl_server, caplog):
    from impala.dbapi import connect

    with caplog.at_level(logging.WARNING, logger="dyntable.server"):
        with pytest.raises(Exception, match="runs without SASL") as info:  # noqa: B017 - thrift_sasl's error
            conn = connect(host="127.0.0.1", port=nosasl_server.port, auth_mechanism="PLAIN", user="bob",
                           password="x")
            conn.cursor()
    assert "auth_mechanism='NOSASL'" in str(info.value)
    assert any("--auth NOSASL" in r.getMessage() for r in caplog.records)


def test_jdbc_nosasl_url_against_sasl_server(shop):
    done = _beeline(f"jdbc:hive2://127.0.0.1:{shop.port}/default;auth=noSasl", "-n", "alice",
                    sql="SELECT 1;")
    assert done.returncode != 0
    assert "without ;auth=noSasl" in done.stdout + done.stderr, done.stderr


# ------------------------------------------------------------------------------------- JDBC browsing


@pytest.fixture(scope="session")
def browse_program(tmp_path_factory):
    """tests/integration/server/jdbc/Browse.java compiled once against pyspark's jars."""
    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    tools = shutil.which("javac") and shutil.which("java")
    if not glob.glob(os.path.join(jars, "hive-jdbc-*.jar")) or not tools:
        pytest.skip("hive-jdbc (pyspark's jars), javac or java is not available")
    out = tmp_path_factory.mktemp("jdbc_browse")
    source = os.path.join(os.path.dirname(__file__), "jdbc", "Browse.java")
    subprocess.run(["javac", "-d", str(out), "-cp", os.path.join(jars, "*"), source], check=True,
                   capture_output=True, text=True, timeout=300)
    return [str(out), os.path.join(jars, "*")]


def _browse(classpath: list[str], url: str, schema: str, table: str) -> dict[str, list[list[str]]]:
    cmd = ["java", "-cp", os.pathsep.join(classpath), "Browse", url, "alice", PASSWORD, schema, table]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out: dict[str, list[list[str]]] = defaultdict(list)
    for line in done.stdout.splitlines():
        tag, *fields = line.split("\t")
        out[tag].append(fields)
    return out


def test_jdbc_browsing_as_dbeaver_does(shop, browse_program):
    got = _browse(browse_program, f"jdbc:hive2://127.0.0.1:{shop.port}/default", "shop", "orders")
    assert got["product"] == [["Spark SQL"]]
    assert {"default", "shop"} <= {row[0] for row in got["schemas"]}
    # Each table once, with its comment; system tables only where asked for.
    # Views too: the schema's permanent ones and the session's temporary ones (no schema, as Spark).
    assert sorted(got["tables"]) == [
        ["", "recent", "VIEW", ""], ["shop", "big_orders", "VIEW", "orders over 5"],
        ["shop", "items", "TABLE", ""], ["shop", "orders", "TABLE", "one row per order"]]
    assert sorted(got["tables-typed"]) == [
        ["big_orders", "VIEW"], ["items", "TABLE"], ["orders", "TABLE"], ["recent", "VIEW"]]
    assert sorted(got["views-only"]) == [["big_orders"], ["recent"]]
    items_system = [name.replace("orders", "items", 1) for name in SYSTEM_TABLES]
    assert sorted(row[0] for row in got["system"]) == sorted(SYSTEM_TABLES + items_system)
    assert sorted(got["system-named"]) == [[name, "SYSTEM TABLE"] for name in SYSTEM_TABLES]
    assert got["columns"] == [
        ["id", "BIGINT", "-5", "NO", "order number"],
        ["amount", "DECIMAL(10,2)", "3", "YES", ""],
        ["placed", "TIMESTAMP_NTZ", "93", "YES", ""],
        ["shipped", "TIMESTAMP", "93", "YES", ""],
    ]
    assert got["snapshot-columns"] == [["snapshot_id", "BIGINT"]]
    assert got["pk"] == [["id", "1"]]
    # The schema pattern is honoured: 'sys' holds dyntable's procedures and nothing else.
    procedures = got["sys-functions"]
    assert procedures and all(schema == "sys" for schema, _ in procedures)
    assert "create_tag" in {name for _, name in procedures}
    assert got["sys-functions#"] == [[str(len(procedures))]]
    assert int(got["all-functions#"][0][0]) > len(procedures) + 300  # Spark's built-ins, listed once
