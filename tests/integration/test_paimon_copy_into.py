"""COPY INTO (Paimon 2.0), translated from Paimon's Spark tests ``CopyIntoTestBase`` and
``CopyIntoOnErrorTest`` (release-2.0.0): files loaded into tables through SQL, with Paimon's
options, result rows, load history and ON_ERROR modes; tables and queries written to files."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError

COLUMNS = ["file_name", "status", "rows_loaded", "rows_parsed", "errors_seen", "first_error"]


def _write(directory, name, text):
    path = directory / name
    path.write_text(text)
    return path


def _rows(session, sql):
    return [tuple(r) for r in session.sql(sql).collect()]


def _copy(session, sql):
    df = session.sql(sql)
    assert df.columns == COLUMNS
    return [tuple(r) for r in df.collect()]


def test_basic_csv_import(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING, age INT)")
    _write(tmp_path, "data.csv", "1,Alice,30\n2,Bob,25\n")
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV)")
    assert result == [("data.csv", "LOADED", 2, 2, 0, None)]
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [(1, "Alice", 30), (2, "Bob", 25)]


@pytest.mark.parametrize(
    ("options", "text", "expected"),
    [
        ("FIELD_DELIMITER = '|'", "1|Alice\n2|Bob\n", [(1, "Alice"), (2, "Bob")]),
        ("SKIP_HEADER = 1", "id,name\n1,Alice\n2,Bob\n", [(1, "Alice"), (2, "Bob")]),
        (
            "QUOTE = '\"', ESCAPE = '\"'",
            '1,"Alice ""the great"""\n2,"Bob"\n',
            [(1, 'Alice "the great"'), (2, "Bob")],
        ),
        ("NULL_IF = ('NULL', 'N/A')", "1,NULL\n2,N/A\n3,Carol\n", [(1, None), (2, None), (3, "Carol")]),
        ("EMPTY_FIELD_AS_NULL = TRUE", "1,\n2,Bob\n", [(1, None), (2, "Bob")]),
        ("field_delimiter = '|'", "1|Alice\n", [(1, "Alice")]),  # lowercase options
    ],
)
def test_csv_options(session, tmp_path, options, text, expected):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.csv", text)
    session.sql(f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV, {options})")
    assert _rows(session, "SELECT * FROM t ORDER BY id") == expected


def test_pattern_filters_files(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "a.csv", "1,Alice\n")
    _write(tmp_path, "b.txt", "2,Bob\n")
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV) PATTERN = '.*[.]csv'")
    assert [r[0] for r in result] == ["a.csv"]
    assert _rows(session, "SELECT * FROM t") == [(1, "Alice")]


def test_explicit_column_list_and_default(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING, status STRING DEFAULT 'active', age INT)")
    _write(tmp_path, "data.csv", "1,Alice\n2,Bob\n")
    session.sql(f"COPY INTO t (id, name) FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV)")
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [
        (1, "Alice", "active", None),
        (2, "Bob", "active", None),
    ]


def test_force_false_skips_loaded_files_and_force_true_reloads(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.csv", "1,Alice\n")
    sql = f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV)"
    assert _copy(session, sql)[0][1] == "LOADED"
    assert _copy(session, sql) == [("data.csv", "SKIPPED", 0, 0, 0, None)]
    assert _rows(session, "SELECT count(*) FROM t") == [(1,)]
    assert _copy(session, sql + " FORCE = TRUE")[0][1] == "LOADED"
    assert _rows(session, "SELECT count(*) FROM t") == [(2,)]


@pytest.mark.parametrize(
    ("text", "sqlstate"),
    [
        ("abc,Alice\n", "22018"),  # a bad numeric cast
        ("1,Alice,extra\n", "22P02"),  # too many CSV columns
        ("1\n", "22P02"),  # too few
    ],
)
def test_abort_statement_refuses_bad_data_and_writes_nothing(session, tmp_path, text, sqlstate):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.csv", "2,Bob\n")
    _write(tmp_path, "data2.csv", text)
    with pytest.raises(SqlError) as e:
        session.sql(f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV)")
    assert e.value.sqlstate == sqlstate, str(e.value)
    assert _rows(session, "SELECT count(*) FROM t") == [(0,)]


@pytest.mark.parametrize(
    ("options", "message", "sqlstate"),
    [
        ("TYPE = ORC", "Unsupported file format type", "0A000"),
        ("FIELD_DELIMITER = ','", "FILE_FORMAT must include TYPE", "42601"),
        ("TYPE = CSV, TYPE = CSV", "Duplicate FILE_FORMAT option", "42601"),
        ("TYPE = CSV, BOGUS_OPTION = TRUE", "Unsupported FILE_FORMAT options", "22023"),
        ("TYPE = CSV, SKIP_HEADER = 2", "SKIP_HEADER supports only 0 or 1", "22023"),
        ("TYPE = JSON, FIELD_DELIMITER = ','", "Unsupported FILE_FORMAT options for import", "22023"),
        ("TYPE = PARQUET, SKIP_HEADER = 1", "Unsupported FILE_FORMAT options for import", "22023"),
    ],
)
def test_bad_file_format_is_refused(session, tmp_path, options, message, sqlstate):
    session.sql("CREATE TABLE t (id INT)")
    _write(tmp_path, "data.csv", "1\n")
    with pytest.raises(SqlError, match=message) as e:
        session.sql(f"COPY INTO t FROM '{tmp_path}'\nFILE_FORMAT = ({options})")
    assert e.value.sqlstate == sqlstate
    assert e.value.line is not None


def test_duplicate_column_list(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    with pytest.raises(SqlError, match="Duplicate columns"):
        session.sql(f"COPY INTO t (id, id) FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV)")


def test_json_import_by_name_extra_and_missing_fields(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING, age INT)")
    _write(tmp_path, "data.json", '{"name": "Alice", "id": 1, "age": 30, "x": 9}\n{"id": 2, "name": "Bob"}\n')
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = JSON)")
    assert result == [("data.json", "LOADED", 2, 2, 0, None)]
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [(1, "Alice", 30), (2, "Bob", None)]


def test_json_multi_line(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.json", '[\n {"id": 1, "name": "Alice"},\n {"id": 2, "name": "Bob"}\n]\n')
    session.sql(f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = JSON, MULTI_LINE = TRUE)")
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [(1, "Alice"), (2, "Bob")]


def test_parquet_import_by_name(session, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    session.sql("CREATE TABLE t (id INT, name STRING, age INT)")
    source = pa.table({"name": ["Alice", "Bob"], "id": [1, 2], "extra": [1.5, 2.5]})
    pq.write_table(source, tmp_path / "d.parquet")
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = PARQUET)")
    assert result == [("d.parquet", "LOADED", 2, 2, 0, None)]
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [(1, "Alice", None), (2, "Bob", None)]


def test_on_error_continue_skips_bad_csv_rows(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.csv", "1,Alice\nabc,Bob\n3,Carol\n")
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV) ON_ERROR = CONTINUE")
    assert result[0][:5] == ("data.csv", "PARTIALLY_LOADED", 2, 3, 1)
    assert "Cast failure in column 'id'" in result[0][5]
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [(1, "Alice"), (3, "Carol")]


def test_on_error_continue_all_rows_fail_is_load_failed_and_does_not_block_rerun(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.csv", "abc,Alice\nxyz,Bob\n")
    sql = f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV) ON_ERROR = CONTINUE"
    assert _copy(session, sql)[0][:5] == ("data.csv", "LOAD_FAILED", 0, 2, 2)
    assert _copy(session, sql)[0][1] == "LOAD_FAILED"  # not recorded as loaded


def test_on_error_skip_file(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "good.csv", "1,Alice\n2,Bob\n")
    _write(tmp_path, "bad file.csv", "3,Carol\nabc,Dave\n")  # a name a URI escapes
    sql = f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV) ON_ERROR = SKIP_FILE"
    result = sorted(_copy(session, sql))
    assert [r[:5] for r in result] == [
        ("bad file.csv", "LOAD_FAILED", 0, 2, 1),
        ("good.csv", "LOADED", 2, 2, 0),
    ]
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [(1, "Alice"), (2, "Bob")]


def test_on_error_continue_json_malformed(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.json", '{"id": 1, "name": "Alice"}\n{bad json\n{"id": 3, "name": "Carol"}\n')
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = JSON) ON_ERROR = CONTINUE")
    assert result[0][:5] == ("data.json", "PARTIALLY_LOADED", 2, 3, 1)
    assert result[0][5].startswith("Malformed record")
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [(1, "Alice"), (3, "Carol")]


def test_export_table_to_csv_and_overwrite(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    session.sql("INSERT INTO t VALUES (1, 'Alice'), (2, 'Bob')")
    out = tmp_path / "out"
    df = session.sql(f"COPY INTO '{out}' FROM t FILE_FORMAT = (TYPE = CSV, HEADER = TRUE)")
    row = tuple(df.collect()[0])
    assert df.columns == ["output_path", "file_count", "rows_written"] and row[2] == 2 and row[1] >= 1
    with pytest.raises(SqlError):
        session.sql(f"COPY INTO '{out}' FROM t FILE_FORMAT = (TYPE = CSV)")
    session.sql(
        f"COPY INTO '{out}' FROM (SELECT id FROM t WHERE id IN (1)) FILE_FORMAT = (TYPE = JSON)"
        " OVERWRITE = TRUE"
    )
    session.sql("CREATE TABLE back (id INT, name STRING)")
    session.sql(f"COPY INTO back FROM '{out}' FILE_FORMAT = (TYPE = JSON) PATTERN = '.*[.]json'")
    assert _rows(session, "SELECT * FROM back") == [(1, None)]


def test_export_rejects_import_only_options(session, tmp_path):
    session.sql("CREATE TABLE t (id INT)")
    with pytest.raises(SqlError, match="Unsupported FILE_FORMAT options for export"):
        session.sql(f"COPY INTO '{tmp_path}/o' FROM t FILE_FORMAT = (TYPE = CSV, SKIP_HEADER = 1)")


def test_json_date_and_timestamp_columns(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, dt DATE, ts TIMESTAMP)")
    _write(
        tmp_path,
        "data.json",
        '{"id":"1","dt":"2024-01-15","ts":"2024-01-15T10:30:00"}\n'
        '{"id":"2","dt":"2024-06-20","ts":"2024-06-20T14:45:30"}\n',
    )
    session.sql(f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = JSON)")
    rows = _rows(session, "SELECT id, CAST(dt AS STRING), CAST(ts AS STRING) FROM t ORDER BY id")
    assert rows == [(1, "2024-01-15", "2024-01-15 10:30:00"), (2, "2024-06-20", "2024-06-20 14:45:30")]


def test_case_insensitive_column_list_and_no_namespace(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING, age INT)")
    _write(tmp_path, "data.csv", "1,Alice\n")
    session.sql(f"COPY INTO t (ID, NAME) FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV)")
    assert _rows(session, "SELECT * FROM t") == [(1, "Alice", None)]


def test_rows_loaded_counts_each_file(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "a.csv", "1,a\n2,b\n3,c\n")
    _write(tmp_path, "b.json", "")  # no rows: listed, nothing parsed
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV) PATTERN = 'a[.]csv'")
    assert result == [("a.csv", "LOADED", 3, 3, 0, None)]


def _parquet(path, ids, names):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array(ids, pa.string()), "name": names}), path)


def test_parquet_continue_and_skip_file_on_cast_errors(session, tmp_path):
    session.sql("CREATE TABLE c (id INT, name STRING)")
    one = tmp_path / "one"
    one.mkdir()
    _parquet(one / "data.parquet", ["1", "abc", "3"], ["Alice", "Bad", "Charlie"])
    result = _copy(session, f"COPY INTO c FROM '{one}' FILE_FORMAT = (TYPE = PARQUET) ON_ERROR = CONTINUE")
    assert result[0][:5] == ("data.parquet", "PARTIALLY_LOADED", 2, 3, 1)
    assert _rows(session, "SELECT id FROM c ORDER BY id") == [(1,), (3,)]

    session.sql("CREATE TABLE s (id INT, name STRING)")
    two = tmp_path / "two"
    two.mkdir()
    _parquet(two / "good.parquet", ["1", "2"], ["Alice", "Bob"])
    _parquet(two / "bad.parquet", ["abc"], ["Bad"])
    result = _copy(session, f"COPY INTO s FROM '{two}' FILE_FORMAT = (TYPE = PARQUET) ON_ERROR = SKIP_FILE")
    assert sorted(r[:2] for r in result) == [("bad.parquet", "LOAD_FAILED"), ("good.parquet", "LOADED")]
    assert _rows(session, "SELECT * FROM s ORDER BY id") == [(1, "Alice"), (2, "Bob")]


def test_parquet_abort_on_cast_failure_and_force_false_skips(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _parquet(tmp_path / "d.parquet", ["1", "x"], ["a", "b"])
    with pytest.raises(SqlError, match="Cast failure in column 'id'"):
        session.sql(f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = PARQUET)")
    _parquet(tmp_path / "d.parquet", ["1", "2"], ["a", "b"])
    sql = f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = PARQUET)"
    assert _copy(session, sql)[0][1] == "LOADED"
    assert _copy(session, sql)[0][1] == "SKIPPED"
    assert _rows(session, "SELECT count(*) FROM t") == [(2,)]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("1,Alice\n2,Bob,20\n", [(2, "Bob", 20)]),  # a row with fewer columns
        ("1,Alice,30,extra\n2,Bob,20\n", [(2, "Bob", 20)]),  # a row with more
    ],
)
def test_continue_skips_csv_rows_with_a_wrong_column_count(session, tmp_path, text, kept):
    session.sql("CREATE TABLE t (id INT, name STRING, age INT)")
    _write(tmp_path, "data.csv", text)
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV) ON_ERROR = CONTINUE")
    assert result[0][1:3] == ("PARTIALLY_LOADED", 1) and result[0][4] == 1
    assert _rows(session, "SELECT * FROM t") == kept


def test_continue_json_cast_errors_are_reported(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.json", '{"id": "1", "name": "a"}\n{"id": "x", "name": "b"}\n')
    result = _copy(session, f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = JSON) ON_ERROR = CONTINUE")
    assert result[0][:5] == ("data.json", "PARTIALLY_LOADED", 1, 2, 1)
    assert "Cast failure in column 'id'" in result[0][5]


def test_parquet_export_then_import_round_trip(session, tmp_path):
    session.sql("CREATE TABLE src (id INT, name STRING, score DOUBLE)")
    session.sql("INSERT INTO src VALUES (1, 'Alice', 95.5), (2, 'Bob', 87.3)")
    session.sql("CREATE TABLE dst (id INT, name STRING, score DOUBLE)")
    out = tmp_path / "export"
    session.sql(f"COPY INTO '{out}' FROM src FILE_FORMAT = (TYPE = PARQUET)")
    session.sql(f"COPY INTO dst FROM '{out}' FILE_FORMAT = (TYPE = PARQUET) PATTERN = '.*[.]parquet'")
    assert _rows(session, "SELECT * FROM dst ORDER BY id") == [(1, "Alice", 95.5), (2, "Bob", 87.3)]


def test_export_of_values_and_refusal_of_side_effects(session, tmp_path):
    df = session.sql(f"COPY INTO '{tmp_path}/v' FROM (VALUES (1, 'a'), (2, 'b')) FILE_FORMAT = (TYPE = CSV)")
    assert tuple(df.collect()[0])[2] == 2
    session.sql("CREATE TABLE t (id INT)")
    session.sql("INSERT INTO t VALUES (1), (2)")
    for query in ("DROP TABLE t", "INSERT INTO t VALUES (3)"):
        with pytest.raises(SqlError) as e:
            session.sql(f"COPY INTO '{tmp_path}/r' FROM ({query}) FILE_FORMAT = (TYPE = CSV)")
        assert e.value.sqlstate == "42601"
    assert _rows(session, "SELECT count(*) FROM t") == [(2,)]


def test_json_null_if(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(
        tmp_path,
        "data.json",
        '{"id":"1","name":"NULL"}\n{"id":"2","name":"\\\\N"}\n{"id":"3","name":"Alice"}\n',
    )
    session.sql(f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = JSON, NULL_IF = ('NULL', '\\\\N'))")
    assert _rows(session, "SELECT * FROM t ORDER BY id") == [(1, None), (2, None), (3, "Alice")]


def test_json_malformed_data_aborts(session, tmp_path):
    session.sql("CREATE TABLE t (id INT, name STRING)")
    _write(tmp_path, "data.json", '{"id":"1","name":"Alice"}\n{this is not valid json}\n')
    with pytest.raises(SqlError) as e:
        session.sql(f"COPY INTO t FROM '{tmp_path}' FILE_FORMAT = (TYPE = JSON)")
    assert e.value.sqlstate == "22P02"
    assert _rows(session, "SELECT count(*) FROM t") == [(0,)]


def test_json_export_with_compression_and_round_trip(session, tmp_path):
    session.sql("CREATE TABLE src (id INT, name STRING)")
    session.sql("INSERT INTO src VALUES (1, 'Alice'), (2, 'Bob')")
    out = tmp_path / "out"
    df = session.sql(f"COPY INTO '{out}' FROM src FILE_FORMAT = (TYPE = JSON, COMPRESSION = GZIP)")
    assert tuple(df.collect()[0])[2] == 2
    assert any(p.name.endswith(".gz") for p in out.iterdir())
    session.sql("CREATE TABLE dst (id INT, name STRING)")
    session.sql(
        f"COPY INTO dst FROM '{out}' FILE_FORMAT = (TYPE = JSON, COMPRESSION = GZIP) PATTERN = '[.]json'"
    )
    assert _rows(session, "SELECT * FROM dst ORDER BY id") == [(1, "Alice"), (2, "Bob")]


def test_primary_key_partitioned_table_upserts(session, tmp_path):
    session.sql(
        "CREATE TABLE k (id INT, dt STRING, v INT, PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt)"
        " TBLPROPERTIES ('bucket' = '2')"
    )
    session.sql("INSERT INTO k VALUES (1, 'a', 10)")
    _write(tmp_path, "d.csv", "1,a,11\n2,b,20\n")
    result = _copy(session, f"COPY INTO k FROM '{tmp_path}' FILE_FORMAT = (TYPE = CSV)")
    assert result == [("d.csv", "LOADED", 2, 2, 0, None)]
    assert _rows(session, "SELECT * FROM k ORDER BY id") == [(1, "a", 11), (2, "b", 20)]


def test_load_history_has_paimons_layout_and_a_changed_file_loads_again(session, tmp_path):
    import hashlib
    import json
    import os

    session.sql("CREATE TABLE t (id INT, name STRING)")
    src = tmp_path / "src"
    src.mkdir()
    data = _write(src, "data.csv", "1,Alice\n")
    sql = f"COPY INTO t FROM '{src}' FILE_FORMAT = (TYPE = CSV)"
    session.sql(sql)
    history = os.path.join(session.catalog.get_table("default.t").path, "copy-into", "history")
    (name,) = os.listdir(history)
    uri = f"file:{data}"
    assert name.startswith(f"load-{hashlib.sha256(uri.encode()).hexdigest()[:16]}-")
    record = json.loads(open(os.path.join(history, name)).read())
    assert set(record) == {"filePath", "fileSize", "lastModified", "loadedAt", "snapshotId", "rowsLoaded"}
    assert (record["filePath"], record["fileSize"], record["rowsLoaded"]) == (uri, 8, 1)
    assert record["snapshotId"] == session.catalog.get_table("default.t").latest_snapshot().id
    data.write_text("2,Bob\n3,Carol\n")  # another size: eligible again
    assert _copy(session, sql) == [("data.csv", "LOADED", 2, 2, 0, None)]
    assert _rows(session, "SELECT count(*) FROM t") == [(3,)]
