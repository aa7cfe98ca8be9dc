"""The Java Paimon oracle itself: Paimon-created tables round-trip every type through its JSON
encodings, dyntable reads what Java creates and writes, failures arrive as Paimon's exception
(and the JVM survives them), and Java writes deletion-vector tables (for the DV work of issue 24)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from engine import open_catalog
from tests.compat.java_oracle import (
    ENV_CLASSPATH,
    JavaOracle,
    JavaOracleError,
    JavaOracleUnavailable,
    JavaPaimon,
    arrow_rows,
    locate_classpath,
    sort_rows,
)

pytestmark = pytest.mark.java

def _f32(x: float) -> float:
    """``x`` as a FLOAT column holds it (rounded to float32), widened back to a Python float."""
    return pa.array([x], pa.float32()).to_pylist()[0]


COLUMNS = [
    ("k", "INT NOT NULL"), ("b", "BOOLEAN"), ("i8", "TINYINT"), ("i16", "SMALLINT"), ("i64", "BIGINT"),
    ("f32", "FLOAT"), ("f64", "DOUBLE"), ("d9", "DECIMAL(9, 2)"), ("d18", "DECIMAL(18, 4)"),
    ("d30", "DECIMAL(30, 4)"), ("s", "STRING"), ("bin", "BYTES"), ("d", "DATE"), ("ts", "TIMESTAMP(6)"),
    ("ts3", "TIMESTAMP(3)"), ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("f32x", "FLOAT"), ("t", "TIME"),
]
ROWS = [
    (1, True, 1, 2, 2**40, 1.5, 2.5, decimal.Decimal("1.25"), decimal.Decimal("12345678901234.5678"),
     decimal.Decimal("12345678901234567890.1234"), "x", b"\x00\xff", dt.date(2024, 1, 2),
     dt.datetime(2024, 1, 2, 3, 4, 5, 123456), dt.datetime(2024, 1, 2, 3, 4, 5, 123000),
     dt.datetime(2024, 1, 2, tzinfo=dt.UTC), _f32(0.1), dt.time(23, 59, 59, 999000)),
    (2, False, -1, None, None, None, 0.0, None, decimal.Decimal("0.0001"), None, "", None,
     dt.date(1969, 12, 31), None, dt.datetime(2000, 1, 1), None, None, dt.time(0, 0)),
    (3, None, None, 3, -5, -2.0, None, decimal.Decimal("-3.50"), None, decimal.Decimal("0.0001"), None, b"",
     None, dt.datetime(1970, 1, 1), None, dt.datetime(2001, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC), _f32(-3.3),
     None),
]


@pytest.fixture
def warehouse(tmp_path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def java(paimon_java: JavaOracle, warehouse) -> JavaPaimon:
    return JavaPaimon(warehouse, paimon_java)


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_java_created_tables_round_trip_every_type_and_dyntable_reads_them(java: JavaPaimon, warehouse, pk):
    name = "db.jtypes_pk" if pk else "db.jtypes"
    java.create_table(name, COLUMNS, primary_keys=["k"] if pk else [], options={"bucket": "1"} if pk else {})
    java.write(name, ROWS[:2])
    java.write(name, [dict(zip([c for c, _ in COLUMNS], ROWS[2], strict=True))])  # a row by column name
    columns, rows = java.read_full(name)
    assert columns == [c for c, _ in COLUMNS]
    assert rows == sort_rows(ROWS)
    java.compact(name)
    table = open_catalog(warehouse).get_table(name)
    assert arrow_rows(table.to_arrow()) == java.read(name) == sort_rows(ROWS)


def test_failures_carry_paimons_exception_and_the_jvm_survives_them(java: JavaPaimon):
    with pytest.raises(JavaOracleError) as missing:
        java.read("db.nope")
    assert missing.value.error_type.endswith("TableNotExistException")
    java.create_table("db.t", [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
                      options={"bucket": "1"})
    with pytest.raises(JavaOracleError, match="must be a list of 2 values"):
        java.write("db.t", [[1]])
    with pytest.raises(JavaOracleError, match="names column nope"):
        java.write("db.t", [{"id": 1, "nope": 2}])
    assert java.write("db.t", [[1, "a"]]) == 1
    assert java.read("db.t") == [(1, "a")]


def test_java_writes_deletion_vector_tables(java: JavaPaimon):
    # Paimon's DV write path (lookup compaction on every write) works through the oracle, so DV
    # tables written by Java can be compared with dyntable's.
    java.create_table("db.dv", [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
                      options={"bucket": "1", "deletion-vectors.enabled": "true"})
    java.write("db.dv", [[i, f"a{i}"] for i in range(10)])
    java.write("db.dv", [[3, "B"]])
    java.write("db.dv", [[5, None]], row_kinds=["-D"])
    files = java.files("db.dv")
    with_dv = [f for f in files if f["deletion_file"] is not None]
    assert with_dv and all(f["level"] > 0 for f in files)  # DV tables keep level 0 out of batch reads
    assert java.read("db.dv") == sorted([(i, "B" if i == 3 else f"a{i}") for i in range(10) if i != 5])


def test_a_class_path_naming_missing_files_is_refused_with_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_CLASSPATH, f"{tmp_path}/gone.jar:{tmp_path}")
    with pytest.raises(JavaOracleUnavailable, match="paimon-java.sh") as refused:
        locate_classpath()
    assert "gone.jar" in str(refused.value)


def test_batch_answers_each_request_in_order_and_a_failure_stops_nothing(java: JavaPaimon, paimon_java):
    java.create_table("db.b", [("id", "BIGINT NOT NULL")], primary_keys=["id"], options={"bucket": "1"})
    request = {"warehouse": java.warehouse, "table": "db.b"}
    answers = paimon_java.batch([
        {"op": "write", **request, "rows": [[1], [2]]},
        {"op": "read", "warehouse": java.warehouse, "table": "db.missing"},
        {"op": "write", **request, "rows": [[3]]},
        {"op": "snapshots", **request},
    ])
    assert [a["ok"] for a in answers] == [True, False, True, True]
    assert answers[1]["error"].endswith("TableNotExistException")
    assert [s["id"] for s in answers[3]["result"]] == [1, 2]
    assert java.read("db.b") == [(1,), (2,), (3,)]


def test_expiration_by_age_keeps_younger_snapshots_and_retain_min(java: JavaPaimon):
    # Paimon turns the cutoff into "now - cutoff" and back, so a cutoff within milliseconds of a
    # snapshot is not exact: the checks use cutoffs a minute away from every snapshot.
    java.create_table("db.age", [("id", "BIGINT NOT NULL")], primary_keys=["id"], options={"bucket": "1"})
    for i in range(4):
        java.write("db.age", [[i]])
    before = java.snapshots("db.age")
    assert java.expire_snapshots("db.age", older_than=before[0]["time_millis"] - 60_000)["expired"] == 0
    assert java.snapshot_ids("db.age") == [1, 2, 3, 4]
    result = java.expire_snapshots("db.age", older_than=before[-1]["time_millis"] + 60_000, retain_min=2)
    assert result["expired"] == 2 and [s["id"] for s in result["snapshots"]] == [3, 4]
    assert java.read("db.age") == [(0,), (1,), (2,), (3,)]


def test_a_jvm_that_cannot_start_or_dies_is_a_typed_error_with_its_reason(tmp_path):
    with pytest.raises(JavaOracleError, match="JVMNotStarted"):
        JavaOracle("x.jar", java=str(tmp_path / "no-java")).version()
    with JavaOracle(str(tmp_path / "empty.jar")) as broken, pytest.raises(JavaOracleError) as died:
        broken.version()
    assert died.value.error_type == "DriverDied" and "PaimonOracle" in died.value.remote_message
