"""Paimon's format tables through dyntable's SQL (Paimon 2.0's FormatTableTestBase and
PaimonFormatTableTest, the cases that need no Hive metastore): CREATE … USING csv|parquet|json|orc,
SELECT with Spark's own readers, INSERT INTO / OVERWRITE in Hive-style partition directories,
DROP TABLE, and Paimon's refusals."""

from __future__ import annotations

import os

import pytest

from engine import FormatTableError
from sqlext.errors import SqlError

FORMATS = [("csv", "gzip"), ("orc", "zlib"), ("parquet", "zstd"), ("json", "none")]


def rows(session, sql):
    return [tuple(r) for r in session.sql(sql).collect()]


def test_csv_with_field_delimiter(session, warehouse):
    session.sql("CREATE TABLE t (f0 INT, f1 INT) USING CSV OPTIONS ('csv.field-delimiter' ';')")
    path = os.path.join(warehouse, "default.db", "t", "part-00000-0a28422e-c000.csv")
    with open(path, "w") as f:
        f.write("1;2\n3;4")
    assert sorted(rows(session, "SELECT * FROM t")) == [(1, 2), (3, 4)]


@pytest.mark.parametrize(("fmt", "compression"), FORMATS)
def test_write_partitioned_table(session, warehouse, fmt, compression):
    session.sql(f"CREATE TABLE t (id INT, p1 INT, p2 INT) USING {fmt} PARTITIONED BY (p1, p2) "
                f"TBLPROPERTIES ('file.compression'='{compression}')")
    session.sql("INSERT INTO t VALUES (1, 2, 3)")
    dirs = os.listdir(os.path.join(warehouse, "default.db", "t"))
    assert sum(d.startswith("p1=") for d in dirs) == 1
    assert rows(session, "SELECT * FROM t") == [(1, 2, 3)]
    assert rows(session, "SELECT id FROM t") == [(1,)]
    assert rows(session, "SELECT p1 FROM t") == [(2,)]
    assert rows(session, "SELECT p2 FROM t") == [(3,)]


def test_insert_overwrite_static_and_dynamic(session):
    session.sql("CREATE TABLE t (f0 INT, ds BIGINT, hh INT) USING CSV PARTITIONED BY (ds, hh)")
    session.sql("INSERT INTO t VALUES (1, 2023, 1), (2, 2024, 10)")
    session.sql("INSERT OVERWRITE t PARTITION (ds=2024, hh) VALUES (3, 10)")
    assert sorted(rows(session, "SELECT * FROM t")) == [(1, 2023, 1), (3, 2024, 10)]
    session.sql("INSERT OVERWRITE t VALUES (9, 2025, 5)")  # static mode: the whole table
    assert rows(session, "SELECT * FROM t") == [(9, 2025, 5)]
    session.sql("INSERT INTO t VALUES (1, 2023, 1)")
    session.sql("SET spark.sql.sources.partitionOverwriteMode = dynamic")
    try:
        session.sql("INSERT OVERWRITE t VALUES (7, 2023, 1)")
    finally:
        session.sql("SET spark.sql.sources.partitionOverwriteMode = static")
    assert sorted(rows(session, "SELECT * FROM t")) == [(7, 2023, 1), (9, 2025, 5)]


def test_unpartitioned_append_and_overwrite_keep_the_table(session):
    session.sql("CREATE TABLE t (id INT, v STRING) USING parquet")
    assert rows(session, "SELECT * FROM t") == []
    session.sql("INSERT INTO t VALUES (1, 'a')")
    session.sql("INSERT INTO t SELECT id + 1, v FROM t")
    assert sorted(rows(session, "SELECT * FROM t")) == [(1, "a"), (2, "a")]
    session.sql("INSERT OVERWRITE t VALUES (3, 'c')")
    assert rows(session, "SELECT * FROM t") == [(3, "c")]
    session.sql("DROP TABLE t")
    assert rows(session, "SHOW TABLES") == [] or all(r[1] != "t" for r in rows(session, "SHOW TABLES"))


@pytest.mark.parametrize("props", [
    "'csv.field-delimiter'=';', 'csv.include-header'='true', 'csv.null-literal'='null', "
    "'format-table.file.compression'='gzip'",
    "'sep'=';', 'header'='true', 'nullvalue'='null', 'compression'='gzip'",
    "'k'='v'",
])
def test_format_table_and_spark_props(session, props):
    session.sql(f"CREATE TABLE t (id INT, v STRING) USING CSV TBLPROPERTIES ({props})")
    session.sql("INSERT INTO t SELECT /*+ REPARTITION(1) */ id, CAST(id + 1 AS STRING) FROM range(2)")
    session.sql("INSERT INTO t VALUES (2, null)")
    assert rows(session, "SELECT * FROM t ORDER BY id") == [(0, "1"), (1, "2"), (2, None)]


def test_paimon_refusals(session):
    session.sql("CREATE TABLE t (id INT, v STRING) USING csv")
    session.sql("INSERT INTO t VALUES (1, 'a')")
    for sql in ("SELECT * FROM t VERSION AS OF 1", "DELETE FROM t WHERE id = 1",
                "UPDATE t SET v = 'b'", "CALL sys.compact(table => 't')"):
        with pytest.raises((SqlError, FormatTableError)) as info:
            session.sql(sql).collect()
        assert "format table" in str(info.value), sql
    with pytest.raises((SqlError, FormatTableError, ValueError), match="Cannot define primary-key"):
        session.sql("CREATE TABLE k (id INT, v STRING) USING csv TBLPROPERTIES ('primary-key'='id')")
    with pytest.raises((SqlError, ValueError), match="csv.quote-character must not be empty"):
        session.sql("CREATE TABLE q (f0 INT, f1 STRING) USING CSV OPTIONS ('csv.quote-character' '')")
