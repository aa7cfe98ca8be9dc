"""Real HiveServer2 clients against dyntable-server: PyHive, impyla, and beeline
(Hive JDBC from pyspark's jars).

Each creates a managed table, inserts, queries, runs a CALL and reads a system table.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

from tests.integration.server.conftest import PASSWORD

SCRIPT = [
    "CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)",
    "INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, NULL)",
    "CALL sys.create_tag(table => '{t}', tag => 'first')",
    "INSERT INTO {t} VALUES (2, 'B')",
]


def _run_dbapi(cursor, table: str) -> None:
    for stmt in SCRIPT:
        cursor.execute(stmt.format(t=table))
    cursor.execute(f"SELECT id, v FROM {table} ORDER BY id")
    assert cursor.fetchall() == [(1, "a"), (2, "B"), (3, None)]
    cursor.execute(f"SELECT v FROM {table} VERSION AS OF 'first' WHERE id = 2")
    assert cursor.fetchall() == [("b",)]
    cursor.execute(f"SELECT tag_name, snapshot_id FROM `{table}$tags`")
    assert cursor.fetchall() == [("first", 1)]
    cursor.execute(f"SELECT count(*) FROM `{table}$snapshots`")
    assert cursor.fetchall() == [(2,)]


def test_pyhive_sasl_none(none_server):
    from pyhive import hive

    conn = hive.connect("127.0.0.1", port=none_server.port, username="bob")
    try:
        cursor = conn.cursor()
        _run_dbapi(cursor, "pyhive_t")
        assert [d[:2] for d in cursor.description] == [("count(1)", "BIGINT_TYPE")]
    finally:
        conn.close()


def test_pyhive_nosasl(nosasl_server):
    from pyhive import hive

    conn = hive.connect("127.0.0.1", port=nosasl_server.port, username="bob", auth="NOSASL")
    try:
        _run_dbapi(conn.cursor(), "nosasl_t")
    finally:
        conn.close()


def test_impyla_plain_checks_the_password(plain_server):
    from impala.dbapi import connect

    conn = connect(host="127.0.0.1", port=plain_server.port, auth_mechanism="PLAIN", user="alice",
                   password=PASSWORD)
    try:
        cursor = conn.cursor()
        _run_dbapi(cursor, "impyla_t")
        cursor.close()  # not left to the garbage collector: an impyla cursor closes its session then
    finally:
        conn.close()


def test_impyla_wrong_password_gets_no_session(plain_server):
    from impala.dbapi import connect

    # Compared as sets: a session of an earlier test may still be closing (its client has gone).
    before = set(plain_server.state.sessions)
    for user, password in (("alice", "wrong"), ("mallory", PASSWORD), ("alice", "")):
        with pytest.raises(Exception):  # noqa: B017 - each client library raises its own transport error
            conn = connect(host="127.0.0.1", port=plain_server.port, auth_mechanism="PLAIN", user=user,
                           password=password)
            conn.cursor().execute("SELECT 1")
    assert set(plain_server.state.sessions) <= before


def _beeline(url: str, *args: str, sql: str) -> subprocess.CompletedProcess:
    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    if not glob.glob(os.path.join(jars, "hive-beeline-*.jar")) or shutil.which("java") is None:
        pytest.skip("beeline (hive-beeline in pyspark's jars) or java is not available")
    cmd = ["java", "-cp", os.path.join(jars, "*"), "org.apache.hive.beeline.BeeLine", "-u", url, *args,
           "--outputformat=csv2", "--silent=true", "-e", sql]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_beeline_jdbc_plain(plain_server):
    url = f"jdbc:hive2://127.0.0.1:{plain_server.port}/default"
    sql = "; ".join(s.format(t="beeline_t") for s in SCRIPT) + (
        "; SELECT id, v FROM beeline_t ORDER BY id; SELECT tag_name FROM `beeline_t$tags`;"
    )
    done = _beeline(url, "-n", "alice", "-p", PASSWORD, sql=sql)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines[-6:] == ["id,v", "1,a", "2,B", "3,NULL", "tag_name", "first"], done.stdout


def test_beeline_error_shows_sqlstate_and_caret(plain_server):
    url = f"jdbc:hive2://127.0.0.1:{plain_server.port}/default"
    done = _beeline(url, "-n", "alice", "-p", PASSWORD, sql="SELECT * FROM no_such_table;")
    assert done.returncode != 0
    assert "state=42P01" in done.stderr or "state=42P01" in done.stdout
    assert "SELECT * FROM no_such_table" in done.stderr + done.stdout


def test_beeline_wrong_password(plain_server):
    url = f"jdbc:hive2://127.0.0.1:{plain_server.port}/default"
    done = _beeline(url, "-n", "alice", "-p", "nope", sql="SELECT 1;")
    assert done.returncode != 0
    assert "authentication failed" in (done.stdout + done.stderr).lower() or "Could not open" in done.stderr


def test_beeline_nosasl(nosasl_server):
    url = f"jdbc:hive2://127.0.0.1:{nosasl_server.port}/default;auth=noSasl"
    done = _beeline(url, "-n", "bob", sql="SELECT 40 + 2 AS answer, 'x' AS s;")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.strip()][-2:] == ["answer,s", "42,x"]


def test_beeline_url_settings_reach_the_session(plain_server):
    # Settings after '?' reach OpenSession as set:hiveconf: entries.
    url = f"jdbc:hive2://127.0.0.1:{plain_server.port}/default?spark.sql.session.timeZone=Asia/Tokyo"
    done = _beeline(url, "-n", "alice", "-p", PASSWORD, sql="SELECT current_timezone() AS tz;")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.strip()][-2:] == ["tz", "Asia/Tokyo"]
