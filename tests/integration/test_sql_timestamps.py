"""Timestamps of both kinds through SQL: CTAS, INSERT, literals and functions.

Spark's ``TIMESTAMP`` is an instant shown in the session's time zone; it becomes Paimon's
``TIMESTAMP_LTZ(6)`` (UTC microseconds). ``TIMESTAMP_NTZ`` is a wall-clock time; it becomes
Paimon's ``TIMESTAMP(6)``. In dyntable's own DDL a bare ``TIMESTAMP`` means what Spark means by
it: the kind ``spark.sql.timestampType`` names (TIMESTAMP_LTZ unless set). The session here runs in
New York (UTC-5 in January, UTC-4 in June), so an instant stored as the wall-clock value would be
off by hours, and the rows are read back through the engine (no Spark) as instants and wall-clock
times.
"""

from __future__ import annotations

import datetime as dt
import shutil
from urllib.parse import urlparse
from zoneinfo import ZoneInfo

import pytest

from engine.types import type_to_sql
from sqlext.parse.names import TableName

UTC = dt.UTC
ZONE = "America/New_York"


@pytest.fixture
def ny(spark, warehouse):
    from sqlext.session import SqlSession

    own = spark.newSession()  # a session of its own: the time zone setting stays here
    own.conf.set("spark.sql.session.timeZone", ZONE)
    s = SqlSession(own, warehouse=warehouse)
    yield s
    s.stop_jobs()


def _table(session, name):
    return session.table(TableName.parse(name))


def _types(session, name) -> dict[str, str]:
    return {f.name: type_to_sql(f.type) for f in _table(session, name).schema.fields}


def _rows(session, name, order: str) -> list[dict]:
    return sorted(_table(session, name).to_arrow().to_pylist(), key=lambda r: r[order])


def _run(session, sql: str):
    return list(session.execute(sql))[-1]


def test_ctas_with_timestamp_functions_and_literals(ny):
    before = dt.datetime.now(UTC).replace(microsecond=0)
    _run(ny, """
        CREATE TABLE loads AS SELECT
            1 AS id,
            current_timestamp() AS loaded_at,
            now() AS now_at,
            TIMESTAMP '2024-01-02 03:04:05.123456' AS ltz,
            TIMESTAMP_NTZ '2024-01-02 03:04:05.123456' AS ntz,
            to_timestamp('2024-06-01 10:00:00') AS parsed,
            CAST('2024-06-01 10:00:00' AS TIMESTAMP) AS cast_ltz,
            CAST('2024-06-01 10:00:00' AS TIMESTAMP_NTZ) AS cast_ntz,
            array(TIMESTAMP '2024-01-02 00:00:00') AS arr,
            named_struct('at', TIMESTAMP '2024-01-02 00:00:00') AS st
    """)
    after = dt.datetime.now(UTC)
    assert _types(ny, "loads") == {
        "id": "INT NOT NULL",
        "loaded_at": "TIMESTAMP_LTZ NOT NULL",
        "now_at": "TIMESTAMP_LTZ NOT NULL",
        "ltz": "TIMESTAMP_LTZ NOT NULL",
        "ntz": "TIMESTAMP_NTZ NOT NULL",
        "parsed": "TIMESTAMP_LTZ",
        "cast_ltz": "TIMESTAMP_LTZ",
        "cast_ntz": "TIMESTAMP_NTZ",
        "arr": "ARRAY<TIMESTAMP_LTZ NOT NULL> NOT NULL",
        "st": "STRUCT<at: TIMESTAMP_LTZ NOT NULL> NOT NULL",
    }
    schema = _table(ny, "loads").schema
    assert {schema.field(c).type.precision for c in ("loaded_at", "ltz", "ntz", "parsed")} == {6}
    (row,) = _rows(ny, "loads", "id")
    assert before <= row["loaded_at"] <= after and row["now_at"] == row["loaded_at"]
    # New York wall-clock times, stored as the instants they name
    assert row["ltz"] == dt.datetime(2024, 1, 2, 8, 4, 5, 123456, tzinfo=UTC)
    assert row["parsed"] == row["cast_ltz"] == dt.datetime(2024, 6, 1, 14, 0, tzinfo=UTC)
    assert row["arr"] == [dt.datetime(2024, 1, 2, 5, 0, tzinfo=UTC)]
    assert row["st"] == {"at": dt.datetime(2024, 1, 2, 5, 0, tzinfo=UTC)}
    # wall-clock times stay as written
    assert row["ntz"] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert row["cast_ntz"] == dt.datetime(2024, 6, 1, 10, 0)
    # and Spark reads them back as it wrote them
    shown = _run(ny, "SELECT CAST(ltz AS STRING), CAST(ntz AS STRING), CAST(parsed AS STRING) FROM loads")
    assert [tuple(r) for r in shown.dataframe.collect()] == [
        ("2024-01-02 03:04:05.123456", "2024-01-02 03:04:05.123456", "2024-06-01 10:00:00")]


def test_insert_timestamps_of_both_kinds(ny):
    _run(ny, "CREATE TABLE events (id INT, wall TIMESTAMP_NTZ, at TIMESTAMP_LTZ, "
             "PRIMARY KEY (id) NOT ENFORCED)")
    assert _types(ny, "events") == {"id": "INT NOT NULL", "wall": "TIMESTAMP_NTZ", "at": "TIMESTAMP_LTZ"}
    _run(ny, "INSERT INTO events VALUES "
             "(1, TIMESTAMP_NTZ '2024-01-02 03:04:05', TIMESTAMP '2024-01-02 03:04:05'), "
             "(2, TIMESTAMP '2024-06-01 10:00:00', TIMESTAMP_NTZ '2024-06-01 10:00:00')")
    before = dt.datetime.now(UTC).replace(microsecond=0)
    _run(ny, "INSERT INTO events SELECT 3, localtimestamp(), current_timestamp()")
    _run(ny, "INSERT INTO events SELECT 4, to_timestamp_ntz('2024-03-10 02:30:00'), "
             "to_timestamp('2024-03-10 12:00:00')")
    after = dt.datetime.now(UTC)
    rows = _rows(ny, "events", "id")
    assert rows[0]["wall"] == dt.datetime(2024, 1, 2, 3, 4, 5)
    assert rows[0]["at"] == dt.datetime(2024, 1, 2, 8, 4, 5, tzinfo=UTC)
    # Spark's casts between the kinds read the wall clock in the session's zone (EDT in June)
    assert rows[1]["wall"] == dt.datetime(2024, 6, 1, 10, 0)
    assert rows[1]["at"] == dt.datetime(2024, 6, 1, 14, 0, tzinfo=UTC)
    assert before <= rows[2]["at"] <= after
    ny_now = rows[2]["at"].astimezone(ZoneInfo(ZONE)).replace(tzinfo=None)
    assert abs(rows[2]["wall"] - ny_now) < dt.timedelta(seconds=5)  # the same moment, on New York's clock
    assert rows[3]["wall"] == dt.datetime(2024, 3, 10, 2, 30)  # a wall-clock time New York skipped
    assert rows[3]["at"] == dt.datetime(2024, 3, 10, 16, 0, tzinfo=UTC)
    # read in another zone, an instant moves and a wall-clock time does not
    utc = ny.spark.newSession()
    utc.conf.set("spark.sql.session.timeZone", "UTC")
    from sqlext.session import SqlSession

    other = SqlSession(utc, warehouse=ny.warehouse)
    shown = _run(other, "SELECT CAST(wall AS STRING), CAST(at AS STRING) FROM events WHERE id = 1")
    assert [tuple(r) for r in shown.dataframe.collect()] == [("2024-01-02 03:04:05", "2024-01-02 08:04:05")]


def test_ctas_over_the_cast_of_a_table_column(ny):
    _run(ny, "CREATE TABLE raw (id INT, txt STRING)")
    _run(ny, "INSERT INTO raw VALUES (1, '2024-01-02 03:04:05'), (2, NULL)")
    _run(ny, "CREATE TABLE typed AS SELECT id, CAST(txt AS TIMESTAMP) AS at, "
             "CAST(txt AS TIMESTAMP_NTZ) AS wall FROM raw")
    assert [(r["id"], r["at"], r["wall"]) for r in _rows(ny, "typed", "id")] == [
        (1, dt.datetime(2024, 1, 2, 8, 4, 5, tzinfo=UTC), dt.datetime(2024, 1, 2, 3, 4, 5)),
        (2, None, None),
    ]


def test_migrate_table_with_timestamps(ny):
    """CALL sys.migrate_table of a Spark Parquet table with both kinds of timestamps."""
    spark = ny.spark
    spark.sql("DROP TABLE IF EXISTS mig_ts")
    shutil.rmtree(urlparse(spark.conf.get("spark.sql.warehouse.dir")).path + "/mig_ts", ignore_errors=True)
    spark.sql("CREATE TABLE mig_ts (id INT, at TIMESTAMP, wall TIMESTAMP_NTZ) USING parquet")
    spark.sql("INSERT INTO mig_ts VALUES "
              "(1, TIMESTAMP '2024-01-02 03:04:05', TIMESTAMP_NTZ '2024-01-02 03:04:05')")
    _run(ny, "CALL sys.migrate_table(source_type => 'parquet', table => 'default.mig_ts')")
    assert _types(ny, "mig_ts") == {"id": "INT", "at": "TIMESTAMP_LTZ", "wall": "TIMESTAMP_NTZ"}
    assert _rows(ny, "mig_ts", "id") == [
        {"id": 1, "at": dt.datetime(2024, 1, 2, 8, 4, 5, tzinfo=UTC),
         "wall": dt.datetime(2024, 1, 2, 3, 4, 5)}]


# -- TIMESTAMP in dyntable's DDL means what it means in Spark (spark.sql.timestampType) ---------------


@pytest.fixture
def ntz_session(ny):
    """The New York session with ``spark.sql.timestampType=TIMESTAMP_NTZ`` (set by SQL, as users do)."""
    _run(ny, "SET spark.sql.timestampType = TIMESTAMP_NTZ")
    yield ny
    _run(ny, "RESET spark.sql.timestampType")


def test_ddl_timestamp_is_sparks_timestamp(ny):
    """Unset, ``spark.sql.timestampType`` is TIMESTAMP_LTZ: a TIMESTAMP column is an instant
    (Paimon's TIMESTAMP_LTZ, as Paimon's Spark connector stores Spark's TIMESTAMP), nested too."""
    assert ny.spark.conf.get("spark.sql.timestampType") == "TIMESTAMP_LTZ"
    _run(ny, "CREATE TABLE kinds (id INT, at TIMESTAMP, wall TIMESTAMP_NTZ, inst TIMESTAMP_LTZ, "
             "paimon_ltz TIMESTAMP(3) WITH LOCAL TIME ZONE, paimon_ntz TIMESTAMP(3) WITHOUT TIME ZONE, "
             "milli TIMESTAMP(3), arr ARRAY<TIMESTAMP>, m MAP<STRING, TIMESTAMP>, "
             "st STRUCT<at: TIMESTAMP, wall: TIMESTAMP_NTZ>) PARTITIONED BY (day TIMESTAMP)")
    assert _types(ny, "kinds") == {
        "id": "INT", "at": "TIMESTAMP_LTZ", "wall": "TIMESTAMP_NTZ", "inst": "TIMESTAMP_LTZ",
        "paimon_ltz": "TIMESTAMP_LTZ(3)", "paimon_ntz": "TIMESTAMP_NTZ(3)", "milli": "TIMESTAMP_LTZ(3)",
        "arr": "ARRAY<TIMESTAMP_LTZ>", "m": "MAP<STRING,TIMESTAMP_LTZ>",
        "st": "STRUCT<at: TIMESTAMP_LTZ, wall: TIMESTAMP_NTZ>", "day": "TIMESTAMP_LTZ",
    }
    # DESCRIBE prints what Spark prints for the same columns
    described = {r[0]: r[1] for r in _run(ny, "DESCRIBE kinds").dataframe.collect()
                 if r[0] and r[0][0] != "#"}
    assert described["at"] == described["inst"] == described["day"] == "timestamp"
    assert described["wall"] == "timestamp_ntz"
    assert described["st"] == "struct<at:timestamp,wall:timestamp_ntz>"
    # ALTER TABLE: ADD COLUMN(S) and ALTER COLUMN ... TYPE read TIMESTAMP the same way
    _run(ny, "ALTER TABLE kinds ADD COLUMNS (added TIMESTAMP, added_arr ARRAY<TIMESTAMP>)")
    _run(ny, "ALTER TABLE kinds ALTER COLUMN milli TYPE TIMESTAMP")  # LTZ(3) -> LTZ(6): a widening
    types = _types(ny, "kinds")
    assert (types["added"], types["added_arr"], types["milli"]) == (
        "TIMESTAMP_LTZ", "ARRAY<TIMESTAMP_LTZ>", "TIMESTAMP_LTZ")
    # Spark's literal and CAST agree with the column: the New York wall-clock time, stored as its instant
    _run(ny, "INSERT INTO kinds (id, at, wall, added) VALUES "
             "(1, TIMESTAMP '2024-01-02 03:04:05', TIMESTAMP_NTZ '2024-01-02 03:04:05', "
             "CAST('2024-01-02 03:04:05' AS TIMESTAMP))")
    (row,) = _rows(ny, "kinds", "id")
    instant = dt.datetime(2024, 1, 2, 8, 4, 5, tzinfo=UTC)
    assert (row["at"], row["added"], row["wall"]) == (instant, instant, dt.datetime(2024, 1, 2, 3, 4, 5))
    # SHOW CREATE TABLE names each kind, so it recreates the same schema under either setting
    [(text,)] = _run(ny, "SHOW CREATE TABLE kinds").dataframe.collect()
    assert "`at` TIMESTAMP_LTZ" in text and "`wall` TIMESTAMP_NTZ" in text
    _run(ny, "SET spark.sql.timestampType = TIMESTAMP_NTZ")
    try:
        _run(ny, text.replace("CREATE TABLE default.kinds", "CREATE TABLE kinds_copy"))
    finally:
        _run(ny, "RESET spark.sql.timestampType")
    assert _table(ny, "kinds_copy").schema.fields == _table(ny, "kinds").schema.fields


def test_ddl_timestamp_follows_the_session_setting(ntz_session):
    """With ``spark.sql.timestampType=TIMESTAMP_NTZ`` Spark's TIMESTAMP is the wall-clock kind: in
    DDL, literals and CASTs alike (Spark evaluates those; the statement text reaches it unchanged)."""
    s = ntz_session
    _run(s, "CREATE TABLE walls (id INT, at TIMESTAMP, inst TIMESTAMP_LTZ, arr ARRAY<TIMESTAMP>)")
    _run(s, "ALTER TABLE walls ADD COLUMN added TIMESTAMP")
    assert _types(s, "walls") == {"id": "INT", "at": "TIMESTAMP_NTZ", "inst": "TIMESTAMP_LTZ",
                                  "arr": "ARRAY<TIMESTAMP_NTZ>", "added": "TIMESTAMP_NTZ"}
    _run(s, "CREATE TABLE walls_ctas AS SELECT 1 AS id, TIMESTAMP '2024-01-02 03:04:05' AS lit, "
            "CAST('2024-01-02 03:04:05' AS TIMESTAMP) AS cast_ts, "
            "TIMESTAMP_LTZ '2024-01-02 03:04:05' AS inst")
    assert _types(s, "walls_ctas") == {"id": "INT NOT NULL", "lit": "TIMESTAMP_NTZ NOT NULL",
                                       "cast_ts": "TIMESTAMP_NTZ", "inst": "TIMESTAMP_LTZ NOT NULL"}
    (row,) = _rows(s, "walls_ctas", "id")
    assert row["lit"] == row["cast_ts"] == dt.datetime(2024, 1, 2, 3, 4, 5)
    assert row["inst"] == dt.datetime(2024, 1, 2, 8, 4, 5, tzinfo=UTC)


def test_writes_to_an_instant_column_under_the_wall_clock_setting(ny):
    """dyntable's own casts to a table's types name the kind (``timestamp_ltz``), so a table of
    instants is written the same under either setting: INSERT, defaults, computed columns."""
    _run(ny, "CREATE TABLE stamped (id INT, at TIMESTAMP, "
             "seen TIMESTAMP DEFAULT TIMESTAMP '2024-06-01 10:00:00', later AS at + INTERVAL 1 HOUR)")
    assert _types(ny, "stamped") == {"id": "INT", "at": "TIMESTAMP_LTZ", "seen": "TIMESTAMP_LTZ",
                                     "later": "TIMESTAMP_LTZ"}
    _run(ny, "SET spark.sql.timestampType = TIMESTAMP_NTZ")
    try:
        _run(ny, "INSERT INTO stamped (id, at) VALUES (1, TIMESTAMP '2024-01-02 03:04:05')")
        _run(ny, "INSERT INTO stamped (id, at) SELECT 2, CAST('2024-01-02 03:04:05' AS TIMESTAMP_LTZ)")
    finally:
        _run(ny, "RESET spark.sql.timestampType")
    rows = _rows(ny, "stamped", "id")
    instant = dt.datetime(2024, 1, 2, 8, 4, 5, tzinfo=UTC)
    assert [(r["at"], r["later"]) for r in rows] == [(instant, instant + dt.timedelta(hours=1))] * 2
    assert [r["seen"] for r in rows] == [dt.datetime(2024, 6, 1, 14, 0, tzinfo=UTC)] * 2


def test_existing_tables_keep_their_types(ny):
    """A table made before (Paimon's TIMESTAMP(6) in its schema file, here written by the engine)
    is still wall-clock: its column reads as Spark's TIMESTAMP_NTZ whatever the session's setting."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("us"))])
    table = ny.catalog.create_table("default.legacy", schema)
    table.write_arrow(pa.table({"id": [1], "ts": [dt.datetime(2024, 1, 2, 3, 4, 5)]},
                               schema=table.arrow_schema))
    assert _types(ny, "legacy") == {"id": "INT", "ts": "TIMESTAMP_NTZ"}
    described = {r[0]: r[1] for r in _run(ny, "DESCRIBE legacy").dataframe.collect()}
    assert described["ts"] == "timestamp_ntz"
    shown = _run(ny, "SELECT CAST(ts AS STRING) AS s, typeof(ts) AS t FROM legacy")
    assert [tuple(r) for r in shown.dataframe.collect()] == [("2024-01-02 03:04:05", "timestamp_ntz")]
    _run(ny, "ALTER TABLE legacy ADD COLUMN note STRING")  # a change keeps the column's kind
    assert _types(ny, "legacy") == {"id": "INT", "ts": "TIMESTAMP_NTZ", "note": "STRING"}
