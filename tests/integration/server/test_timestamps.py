"""Both kinds of timestamps over dyntable-server, as Hive clients get them.

Spark's TIMESTAMP (Paimon's TIMESTAMP_LTZ, an instant) and TIMESTAMP_NTZ (Paimon's TIMESTAMP, a
wall-clock time) both reach a client as Hive's ``TIMESTAMP_TYPE`` in the result set metadata,
their values as ``yyyy-MM-dd HH:mm:ss[.f…]`` text, which PyHive, impyla and Hive's JDBC driver
turn into their timestamp values: an instant shown on the clock of the connection's
``spark.sql.session.timeZone`` (as Spark shows it), a wall-clock time as written. Each connection's
``spark.sql.timestampType`` says what ``TIMESTAMP`` means in its DDL, literals and CASTs.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import shutil
import subprocess

import pytest

from tests.integration.server.conftest import PASSWORD

NEW_YORK = {"set:hiveconf:spark.sql.session.timeZone": "America/New_York"}
WALL = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)  # written in New York: 08:04:05.123456 UTC


@pytest.fixture(scope="module")
def kinds(plain_server):
    """A table with both kinds, written by a New York session; the server's port."""
    from pyhive import hive

    conn = hive.connect("127.0.0.1", port=plain_server.port, username="alice", password=PASSWORD,
                        auth="CUSTOM", configuration=NEW_YORK)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TABLE ts_kinds (id INT, at TIMESTAMP, wall TIMESTAMP_NTZ, "
                    "arr ARRAY<TIMESTAMP>)")
        cur.execute("INSERT INTO ts_kinds VALUES (1, TIMESTAMP '2024-01-02 03:04:05.123456', "
                    "TIMESTAMP_NTZ '2024-01-02 03:04:05.123456', array(TIMESTAMP '2024-01-02 03:04:05')), "
                    "(2, NULL, NULL, NULL)")
    finally:
        conn.close()
    return plain_server.port


def _pyhive(port: int, configuration: dict[str, str]):
    from pyhive import hive

    return hive.connect("127.0.0.1", port=port, username="alice", password=PASSWORD, auth="CUSTOM",
                        configuration=configuration)


def test_pyhive_types_both_kinds_as_timestamps(kinds):
    conn = _pyhive(kinds, NEW_YORK)
    try:
        cur = conn.cursor()
        cur.execute("SELECT id, at, wall, arr, CAST(at AS DATE) AS d FROM ts_kinds ORDER BY id")
        assert [(d[0], d[1]) for d in cur.description] == [
            ("id", "INT_TYPE"), ("at", "TIMESTAMP_TYPE"), ("wall", "TIMESTAMP_TYPE"), ("arr", "ARRAY_TYPE"),
            ("d", "DATE_TYPE")]
        # PyHive parses TIMESTAMP_TYPE text into datetimes: both round-trip to the microsecond
        assert cur.fetchall() == [(1, WALL, WALL, '["2024-01-02 03:04:05"]', "2024-01-02"),
                                  (2, None, None, None, None)]
        cur.execute("DESCRIBE ts_kinds")
        assert [tuple(r[:2]) for r in cur.fetchall()] == [
            ("id", "int"), ("at", "timestamp"), ("wall", "timestamp_ntz"), ("arr", "array<timestamp>")]
    finally:
        conn.close()
    # Another zone: the instant moves on the clock, the wall-clock time does not.
    conn = _pyhive(kinds, {"set:hiveconf:spark.sql.session.timeZone": "UTC"})
    try:
        cur = conn.cursor()
        cur.execute("SELECT at, wall FROM ts_kinds WHERE id = 1")
        assert cur.fetchall() == [(dt.datetime(2024, 1, 2, 8, 4, 5, 123456), WALL)]
    finally:
        conn.close()


def test_impyla_types_both_kinds_as_timestamps(kinds):
    from impala.dbapi import connect

    conn = connect(host="127.0.0.1", port=kinds, auth_mechanism="PLAIN", user="alice", password=PASSWORD)
    cur = conn.cursor()
    try:
        cur.execute("SET spark.sql.session.timeZone = America/New_York")
        cur.execute("SELECT id, at, wall FROM ts_kinds ORDER BY id")
        assert [(d[0], d[1]) for d in cur.description] == [("id", "INT"), ("at", "TIMESTAMP"),
                                                           ("wall", "TIMESTAMP")]
        assert cur.fetchall() == [(1, WALL, WALL), (2, None, None)]
    finally:
        cur.close()
        conn.close()


def test_timestamp_follows_the_connections_setting(kinds):
    """A JDBC URL's ``?spark.sql.timestampType=TIMESTAMP_NTZ`` (a ``set:hiveconf:`` entry) makes
    TIMESTAMP the wall-clock kind for that connection only, as in a Spark session."""
    ntz = _pyhive(kinds, {"set:hiveconf:spark.sql.timestampType": "TIMESTAMP_NTZ"})
    try:
        cur = ntz.cursor()
        cur.execute("CREATE TABLE ts_walls (id INT, at TIMESTAMP, inst TIMESTAMP_LTZ)")
        cur.execute("INSERT INTO ts_walls VALUES (1, TIMESTAMP '2024-01-02 03:04:05', "
                    "TIMESTAMP_LTZ '2024-01-02 03:04:05')")
        cur.execute("SELECT typeof(TIMESTAMP '2024-01-02 03:04:05'), typeof(CAST('2024-01-02' AS TIMESTAMP))")
        assert cur.fetchall() == [("timestamp_ntz", "timestamp_ntz")]
        cur.execute("DESCRIBE ts_walls")
        assert [tuple(r[:2]) for r in cur.fetchall()] == [
            ("id", "int"), ("at", "timestamp_ntz"), ("inst", "timestamp")]
    finally:
        ntz.close()
    default = _pyhive(kinds, {})
    try:
        cur = default.cursor()
        cur.execute("SELECT typeof(TIMESTAMP '2024-01-02 03:04:05')")
        assert cur.fetchall() == [("timestamp",)]
    finally:
        default.close()


@pytest.fixture(scope="session")
def timestamps_program(tmp_path_factory):
    """tests/integration/server/jdbc/Timestamps.java compiled once against pyspark's jars."""
    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    tools = shutil.which("javac") and shutil.which("java")
    if not glob.glob(os.path.join(jars, "hive-jdbc-*.jar")) or not tools:
        pytest.skip("hive-jdbc (pyspark's jars), javac or java is not available")
    out = tmp_path_factory.mktemp("jdbc_timestamps")
    source = os.path.join(os.path.dirname(__file__), "jdbc", "Timestamps.java")
    subprocess.run(["javac", "-d", str(out), "-cp", os.path.join(jars, "*"), source], check=True,
                   capture_output=True, text=True, timeout=300)
    return [str(out), os.path.join(jars, "*")]


def test_jdbc_reads_both_kinds_as_sql_timestamps(kinds, timestamps_program):
    url = f"jdbc:hive2://127.0.0.1:{kinds}/default?spark.sql.session.timeZone=America/New_York"
    cmd = ["java", "-cp", os.pathsep.join(timestamps_program), "Timestamps", url, "alice", PASSWORD,
           "SELECT id, at, wall FROM ts_kinds ORDER BY id"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    # java.sql.Types.TIMESTAMP is 93; the driver's getObject parses the text into java.sql.Timestamp
    assert lines == [
        ["column", "id", "int", "4"], ["column", "at", "timestamp", "93"],
        ["column", "wall", "timestamp", "93"],
        ["row", "java.lang.Integer=1", "java.sql.Timestamp=2024-01-02 03:04:05.123456",
         "java.sql.Timestamp=2024-01-02 03:04:05.123456"],
        ["row", "java.lang.Integer=2", "null", "null"],
    ]
