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
    session.sql("INSERT INTO t VALUES (1, 2023, 1), (2, 2024, 10), (4, 2024, 11)")
    session.sql("INSERT OVERWRITE t PARTITION (ds=2024, hh) VALUES (3, 10)")  # all of ds=2024
    assert sorted(rows(session, "SELECT * FROM t")) == [(1, 2023, 1), (3, 2024, 10)]
    session.sql("INSERT OVERWRITE t VALUES (9, 2025, 5)")  # the partitions written, as Paimon's commit
    assert sorted(rows(session, "SELECT * FROM t")) == [(1, 2023, 1), (3, 2024, 10), (9, 2025, 5)]


def test_partition_table_overwrite_csv(session):
    """PaimonFormatTableTest: partition table overwrite: csv."""
    session.sql("CREATE TABLE t (age INT, name STRING, id INT) USING CSV PARTITIONED BY (id)")
    session.sql("INSERT INTO t PARTITION (id = 1) VALUES (5, 'Ben'), (7, 'Larry')")
    session.sql("INSERT OVERWRITE t PARTITION (id = 1) VALUES (5, 'Jerry'), (7, 'Tom')")
    assert rows(session, "SELECT id, age, name FROM t ORDER BY id, age") == [(1, 5, "Jerry"), (1, 7, "Tom")]
    session.sql("INSERT INTO t PARTITION (id = 3) VALUES (5, 'Alice')")
    session.sql("INSERT OVERWRITE t VALUES (5, 'Jerry', 1), (7, 'Tom', 2)")
    assert rows(session, "SELECT id, age, name FROM t ORDER BY id, age") == [
        (1, 5, "Jerry"), (2, 7, "Tom"), (3, 5, "Alice")]


def test_overwrite_of_empty_data_leaves_the_partition_directory(session, warehouse):
    """PaimonFormatTableTest: partition path validate when insert overwrite empty data."""
    for name in ("t", "r"):
        session.sql(f"CREATE TABLE {name} (f0 INT, f1 STRING, f2 INT, ds BIGINT) USING CSV "
                    "TBLPROPERTIES ('file.compression'='none') PARTITIONED BY (ds)")
    assert rows(session, "SELECT * FROM t WHERE ds = 20250920") == []
    session.sql("INSERT OVERWRITE t PARTITION (ds = 20250920) SELECT f0, f1, f2 FROM r WHERE ds = 20250920")
    assert os.path.isdir(os.path.join(warehouse, "default.db", "t", "ds=20250920"))


def test_partition_key_in_diff_position(session):
    """PaimonFormatTableTest: write: partition key in diff position."""
    session.sql("CREATE TABLE t (ds BIGINT, age INT, ds1 BIGINT, name STRING, ds2 BIGINT) USING ORC "
                "PARTITIONED BY (ds, ds1, ds2)")
    session.sql("INSERT INTO t VALUES (5, 11, 12, 'ab', 13), (7, 11, 12, 'Larry', 13)")
    assert rows(session, "SELECT ds, age, ds1, name, ds2 FROM t ORDER BY ds") == [
        (5, 11, 12, "ab", 13), (7, 11, 12, "Larry", 13)]
    assert rows(session, "SELECT * FROM t ORDER BY ds")[0] == (5, 11, 12, "ab", 13)


@pytest.mark.parametrize(("fmt", "compression"), [("csv", "gzip"), ("json", "gzip"), ("parquet", "zstd"),
                                                  ("orc", "zstd")])
def test_partitioned_table_filters(session, fmt, compression):
    """PaimonFormatTableTest: partitioned table."""
    session.sql(f"CREATE TABLE t (id INT, name STRING, value DOUBLE, dept STRING) USING {fmt} "
                f"PARTITIONED BY (dept) TBLPROPERTIES ('file.compression'='{compression}')")
    session.sql("INSERT INTO t VALUES (1, 'Alice', 10.5, 'Engineering'), (2, 'Bob', 20.7, 'Engineering'),"
                " (3, 'Charlie', 30.9, 'Sales'), (4, 'David', 25.3, 'Sales'), (5, 'Eve', 15.8, 'Marketing')")
    assert [r[0] for r in rows(session, "SELECT * FROM t ORDER BY id")] == [1, 2, 3, 4, 5]
    assert rows(session, "SELECT name, value FROM t WHERE dept = 'Sales' ORDER BY id") == [
        ("Charlie", 30.9), ("David", 25.3)]
    assert rows(session, "SELECT id, dept FROM t WHERE value > 20.0 ORDER BY id") == [
        (2, "Engineering"), (3, "Sales"), (4, "Sales")]
    assert sorted(rows(session, "SELECT name FROM t WHERE dept = 'Sales' AND value > 25.0")) == [
        ("Charlie",), ("David",)]
    session.sql("DROP TABLE t")


@pytest.mark.xfail(strict=True, reason="Paimon's own CSV writer takes a line delimiter of any length; "
                   "Spark's CSV source, which dyntable reads and writes with, takes at most 2 characters")
def test_csv_custom_line_delimiter(session):
    session.sql("CREATE TABLE t (age INT, name STRING) USING CSV "
                "TBLPROPERTIES ('file.compression'='gzip', 'lineSep'='abc')")
    session.sql("INSERT INTO t VALUES (5, 'ab'), (7, 'Larry')")
    assert rows(session, "SELECT age, name FROM t ORDER BY age") == [(5, "ab"), (7, "Larry")]


def test_csv_mode(session, warehouse):
    """PaimonFormatTableRead: csv mode (permissive by default; ALTER … SET 'mode' drops malformed)."""
    session.sql("CREATE TABLE t (f0 INT, f1 STRING, f2 INT, ds BIGINT) USING CSV "
                "TBLPROPERTIES ('sep'='|', 'lineSep'='\n') PARTITIONED BY (ds)")
    path = os.path.join(warehouse, "default.db", "t", "ds=20250920", "part-00000-c001.csv")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("1|asfasdfsdf|aaaa|10\n2|asfasdfsdf|11")
    assert sorted(rows(session, "SELECT * FROM t")) == [
        (1, "asfasdfsdf", None, 20250920), (2, "asfasdfsdf", 11, 20250920)]


def test_read_compressed_files(session, warehouse):
    import gzip

    for fmt in ("csv", "json"):
        session.sql(f"CREATE TABLE c_{fmt} (a INT, b INT, c INT) USING {fmt}")
        session.sql(f"INSERT INTO c_{fmt} VALUES (1, 2, 3)")
        root = os.path.join(warehouse, "default.db", f"c_{fmt}")
        name = next(n for n in os.listdir(root) if not n.startswith(("_", ".")) and n != "schema")
        path = os.path.join(root, name)
        with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
            g.write(f.read())
        os.remove(os.path.join(root, name))
        assert rows(session, f"SELECT * FROM c_{fmt}") == [(1, 2, 3)]


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


@pytest.mark.parametrize(("fmt", "compression"), FORMATS)
def test_show_partitions(session, fmt, compression):
    session.sql(f"CREATE TABLE t (id INT, p1 INT, p2 STRING) USING {fmt} PARTITIONED BY (p1, p2) "
                f"TBLPROPERTIES ('file.compression'='{compression}')")
    for values in ("(1, 1, '1')", "(2, 1, '1')", "(3, 2, '1')", "(3, 2, '2')"):
        session.sql(f"INSERT INTO t VALUES {values}")
    assert rows(session, "SHOW PARTITIONS t") == [("p1=1/p2=1",), ("p1=2/p2=1",), ("p1=2/p2=2",)]
    assert rows(session, "SHOW PARTITIONS t PARTITION (p1=1)") == [("p1=1/p2=1",)]
    assert rows(session, "SHOW PARTITIONS t PARTITION (p1=2, p2='2')") == [("p1=2/p2=2",)]


def test_show_create_table_and_describe(session):
    session.sql("CREATE TABLE t1 (id INT, p1 INT, p2 INT) USING csv PARTITIONED BY (p1, p2) "
                "OPTIONS ('csv.field-delimiter' ';')")
    text = rows(session, "SHOW CREATE TABLE t1")[0][0]
    assert "PARTITIONED BY (p1, p2)" in text and "'csv.field-delimiter' = ';'" in text and "USING csv" in text
    assert rows(session, "DESCRIBE t1")[:3] == [("id", "int", None), ("p1", "int", None), ("p2", "int", None)]
    assert ("csv.field-delimiter", ";") in rows(session, "SHOW TBLPROPERTIES t1")
    assert ("default", "t1", False) in rows(session, "SHOW TABLES")


def test_count_and_join_with_a_data_table(session):
    session.sql("CREATE TABLE t1 (f0 INT, f1 INT) USING CSV")
    session.sql("CREATE TABLE t2 (f0 INT, f2 INT)")  # a Paimon data table
    session.sql("INSERT INTO t1 VALUES (1, 1), (2, 2)")
    session.sql("INSERT INTO t2 VALUES (1, 10)")
    assert rows(session, "SELECT count(*) FROM t1") == [(2,)]
    assert rows(session, "SELECT t1.f0, t1.f1, t2.f2 FROM t1, t2 WHERE t1.f0 = t2.f0") == [(1, 1, 10)]
    session.sql("INSERT INTO t2 SELECT f0, f1 FROM t1 WHERE f0 = 2")  # a format table read into a data table
    assert sorted(rows(session, "SELECT * FROM t2")) == [(1, 10), (2, 2)]


def test_create_table_like_copies_the_format_table(session):
    """PaimonFormatTableTest: create table like copies properties for same provider."""
    session.sql("CREATE TABLE source_tbl (id INT, pt STRING) USING CSV PARTITIONED BY (pt) "
                "COMMENT 'source comment' TBLPROPERTIES ('k' = 'v', 'csv.field-delimiter' = ';')")
    session.sql("CREATE TABLE target_tbl LIKE source_tbl")
    text = rows(session, "SHOW CREATE TABLE target_tbl")[0][0]
    assert "USING csv" in text and "PARTITIONED BY (pt)" in text and "COMMENT 'source comment'" in text
    assert "'k' = 'v'" in text and "'csv.field-delimiter' = ';'" in text


def test_alter_table_properties_change_the_reader(session, warehouse):
    """PaimonFormatTableRead: csv mode; ALTER TABLE SET TBLPROPERTIES ('mode'='dropmalformed')."""
    session.sql("CREATE TABLE t (f0 INT, f1 STRING, f2 INT) USING CSV TBLPROPERTIES ('sep'='|')")
    with open(os.path.join(warehouse, "default.db", "t", "part-0.csv"), "w") as f:
        f.write("1|a|aaaa|10\n2|b|11")
    assert sorted(rows(session, "SELECT * FROM t")) == [(1, "a", None), (2, "b", 11)]
    session.sql("ALTER TABLE t SET TBLPROPERTIES ('mode'='dropmalformed')")
    assert rows(session, "SELECT * FROM t") == [(2, "b", 11)]


def test_more_refusals(session):
    session.sql("CREATE TABLE t (id INT, v STRING) USING csv")
    session.sql("CREATE TABLE s (id INT, v STRING)")
    for sql in ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "TRUNCATE TABLE t",
                "CALL sys.create_tag(table => 't', tag => 'x')", "ALTER TABLE t ADD COLUMN w INT",
                "SELECT * FROM t$snapshots"):
        with pytest.raises((SqlError, FormatTableError)) as info:
            session.sql(sql).collect()
        assert "format table" in str(info.value), sql


def test_show_table_extended_lists_a_format_table(session):
    session.sql("CREATE TABLE f (id INT, dt STRING) USING json PARTITIONED BY (dt)")
    session.sql("CREATE TABLE d (id INT)")
    listed = {r[1]: r[3] for r in rows(session, "SHOW TABLE EXTENDED LIKE '*'")}
    assert "Provider: json" in listed["f"] and "Partition Columns: [`dt`]" in listed["f"]
    assert "Provider: dyntable" in listed["d"]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_case_insensitive_read_of_an_external_location(session, tmp_path, fmt):
    """FormatTableCaseInsensitiveTest: two tables over one LOCATION, columns spelled differently
    (the catalog's case-sensitive = false half; Spark matches names case-insensitively)."""
    data = str(tmp_path / f"{fmt}_ci")
    session.sql(f"CREATE TABLE writer_tbl (Event_Name STRING, Campaign_ID STRING, Amount BIGINT) "
                f"USING {fmt} LOCATION '{data}'")
    session.sql("INSERT INTO writer_tbl VALUES ('install', 'c001', 100), ('purchase', 'c002', 200)")
    session.sql(f"CREATE TABLE reader_tbl (event_name STRING, campaign_id STRING, amount BIGINT) "
                f"USING {fmt} LOCATION '{data}'")
    assert rows(session, "SELECT * FROM reader_tbl ORDER BY amount") == [
        ("install", "c001", 100), ("purchase", "c002", 200)]
    assert rows(session, "SELECT event_name, amount FROM reader_tbl ORDER BY amount") == [
        ("install", 100), ("purchase", 200)]
    session.sql("DROP TABLE reader_tbl")  # the files stay: another table reads them
    assert len(rows(session, "SELECT * FROM writer_tbl")) == 2


def test_case_insensitive_nested_struct(session, tmp_path):
    data = str(tmp_path / "nested")
    session.sql("CREATE TABLE nested_writer (Event_Name STRING, User_Info STRUCT<User_Name: STRING, "
                f"User_Age: BIGINT>) USING parquet LOCATION '{data}'")
    session.sql("INSERT INTO nested_writer VALUES"
                " ('install', named_struct('User_Name', 'alice', 'User_Age', 20L)),"
                " ('login', named_struct('User_Name', 'bob', 'User_Age', 30L))")
    session.sql("CREATE TABLE nested_reader (event_name STRING, user_info STRUCT<user_name: STRING, "
                f"user_age: BIGINT>) USING parquet LOCATION '{data}'")
    assert rows(session, "SELECT event_name, user_info.user_name, user_info.user_age FROM nested_reader "
                         "ORDER BY event_name") == [("install", "alice", 20), ("login", "bob", 30)]


def test_ctas_with_partitioned_table_is_refused(session):
    """FormatTableTestBase: CTAS with partitioned table (Paimon: UnsupportedOperationException)."""
    session.sql("CREATE TABLE t1 (id INT, p1 INT, p2 INT) USING csv PARTITIONED BY (p1, p2)")
    session.sql("INSERT INTO t1 VALUES (1, 2, 3)")
    with pytest.raises(SqlError, match="format table") as info:
        session.sql("CREATE TABLE t2 USING csv PARTITIONED BY (p1, p2) AS SELECT * FROM t1")
    assert info.value.sqlstate == "0A000"


def test_ctas_of_an_unpartitioned_format_table(session):
    session.sql("CREATE TABLE t USING csv AS SELECT CAST(2 AS BIGINT) AS id, 'new' AS data")
    assert rows(session, "SELECT * FROM t") == [(2, "new")]
