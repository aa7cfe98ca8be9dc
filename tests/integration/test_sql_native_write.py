"""Primary-key writes by Spark's own Parquet writer (sqlext.execute.native_write, engine.KvFileImport):
the same rows and the same file statistics as the engine's writer, older files merged and
compacted with them, and a failed job leaves nothing behind."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from sqlext.errors import SqlError
from sqlext.execute.native_write import write_table
from tests.integration.test_sql_dml import contents, run, table

SPARK_KEY = b"org.apache.spark.version"  # Spark's writer leaves it in every footer it writes


def _files(session, name):
    t = table(session, name)
    return [(s.partition_values, s.bucket, f, t.store.paths.data_file(
        t.store.partition_dir(s.partition_values), s.bucket, f.file_name))
        for s in t.plan().splits for f in s.files]


def _spark_written(session, name):
    return {SPARK_KEY in (pq.read_metadata(path).metadata or {}) for _, _, _, path in _files(session, name)}


def _described(session, name):
    """Per file, what its metadata says apart from names, sizes, times and sequence numbers."""
    return sorted(
        (p, b, f.row_count, f.min_key, f.max_key, f.key_stats, f.value_stats, f.delete_row_count, f.level)
        for p, b, f, _ in _files(session, name)
    )


def _both(session, ddl, query, options=""):
    """Create ``nat`` and ``py`` by ``ddl`` and insert ``query`` into each: natively, and with the
    native write off (the engine's writer), both shuffled by bucket."""
    for name in ("nat", "py"):
        run(session, ddl.format(name=name) + options)
    run(session, "SET write.bucket-shuffle = true")
    run(session, "SET write.native-write.enabled = true")
    run(session, f"INSERT INTO nat {query}")
    run(session, "SET write.native-write.enabled = false")
    run(session, f"INSERT INTO py {query}")


TYPES = (
    "CREATE TABLE {name} (id BIGINT, s STRING, d DOUBLE, m DECIMAL(10, 2), w DECIMAL(30, 5), dt DATE, "
    "ntz TIMESTAMP_NTZ, ltz TIMESTAMP, b BOOLEAN, t TINYINT, bin BINARY, PRIMARY KEY (id) NOT ENFORCED) "
    "TBLPROPERTIES ('bucket' = '2'"
)
TYPED_ROWS = (
    "SELECT * FROM VALUES "
    "(1, 'a', 1.5, 1.25, 123456789012345678901.5, DATE'2024-01-02', "
    " TIMESTAMP_NTZ'2024-01-02 03:04:05.123456', "
    " TIMESTAMP'2024-01-02 03:04:05.5', true, 1, X'00FF'), "
    "(2, 'a-much-longer-string-than-sixteen', double('NaN'), -3.50, -1.0, DATE'1999-12-31', "
    " TIMESTAMP_NTZ'1999-12-31 23:59:59', TIMESTAMP'1999-12-31 23:59:59', false, -7, X''), "
    "(1, 'a2', 2.5, 9.99, 0.00001, DATE'2024-01-03', TIMESTAMP_NTZ'2024-01-03 00:00:00', "
    " TIMESTAMP'2024-01-03 00:00:00', NULL, NULL, NULL), "
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
    "(4, 'd', -0.5, 0.01, 5.5, DATE'2000-02-29', TIMESTAMP_NTZ'2000-02-29 12:00:00', "
    " TIMESTAMP'2000-02-29 12:00:00', true, 127, X'01') "
    "AS v(id, s, d, m, w, dt, ntz, ltz, b, t, bin)"
)


def test_every_covered_type_gives_the_engine_writers_rows_and_statistics(session):
    _both(session, TYPES, TYPED_ROWS, ")")
    assert _spark_written(session, "nat") == {True}
    assert _spark_written(session, "py") == {False}
    got = contents(session, "nat")
    assert [r[0] for r in got] == [1, 2, 3, 4]
    assert got[0][1] == "a2"  # the last row of key 1 in the input's order
    assert str(got) == str(contents(session, "py"))  # NaN compares unequal to itself
    assert _described(session, "nat") == _described(session, "py")


PARTITIONED = (
    "CREATE TABLE {name} (id INT, name STRING, v STRING, dt STRING, h INT, "
    "PRIMARY KEY (dt, h, id, name) NOT ENFORCED) PARTITIONED BY (dt, h) TBLPROPERTIES ('bucket' = '3'"
)
PARTITIONED_ROWS = (
    "SELECT * FROM VALUES (1, 'x', 'a', '2024-01-01', 1), (1, 'x', 'b', '2024-01-01', 1), "
    "(1, 'y', 'c', '2024-01-01', 1), (2, 'x', 'd', 'a-long-partition-value', 2), "
    "(1, 'x', 'e', '2024-01-01', 2), (3, 'zzzzzzzzzzzzzzzzzzzz', 'f', '2024-01-01', -3), "
    "(3, 'zzzzzzzzzzzzzzzzzzzz', 'g', '2024-01-01', -3) AS v(id, name, v, dt, h)"
)


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_partitioned_tables_with_composite_keys(session, engine):
    _both(session, PARTITIONED, PARTITIONED_ROWS, f", 'merge-engine' = '{engine}')")
    assert _spark_written(session, "nat") == {True}
    got = contents(session, "nat")
    assert got == contents(session, "py")
    kept = {(r[0], r[1], r[3], r[4]): r[2] for r in got}
    first = engine == "first-row"
    assert kept[(1, "x", "2024-01-01", 1)] == ("a" if first else "b")
    assert kept[(3, "zzzzzzzzzzzzzzzzzzzz", "2024-01-01", -3)] == ("f" if first else "g")
    assert _described(session, "nat") == _described(session, "py")


def test_more_buckets_than_tasks(session):
    # 2 shuffle partitions, 5 buckets: tasks hold several buckets, written into one directory each
    ddl = ("CREATE TABLE {name} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
           "TBLPROPERTIES ('bucket' = '5')")
    _both(session, ddl, "SELECT id, concat('v', id) FROM range(0, 200, 1, 3)")
    assert _spark_written(session, "nat") == {True}
    assert len(contents(session, "nat")) == 200
    assert _described(session, "nat") == _described(session, "py")


def test_later_writes_merge_with_older_files_and_compact(session, spark, warehouse):
    run(session, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
                 "TBLPROPERTIES ('bucket' = '2')")
    run(session, "INSERT INTO t SELECT id, concat('base', id) FROM range(0, 100)")  # the engine's writer
    run(session, "SET write.native-write.enabled = true")
    files = _files(session, "t")
    before = {b: max(f.max_sequence_number for _, bb, f, _ in files if bb == b) for b in (0, 1)}
    changes = spark.createDataFrame(
        [(i, f"u{i}", "+U") for i in range(0, 100, 2)] + [(i, None, "-D") for i in range(1, 100, 10)]
        + [(200, "new", "+I"), (200, "newer", "+I")],
        "id bigint, v string, rowkind string",
    )
    write_table(changes, "default.t", warehouse, shuffle="true", **{"write.native-write.enabled": "true"})
    new = [(b, f) for _, b, f, _ in _files(session, "t") if f.min_sequence_number > before[b]]
    assert new and all(f.level == 0 for _, f in new)
    assert sum(f.delete_row_count for _, f in new) == 10
    expected = {i: f"base{i}" for i in range(100)}
    expected.update({i: f"u{i}" for i in range(0, 100, 2)})
    for i in range(1, 100, 10):
        del expected[i]
    expected[200] = "newer"
    assert contents(session, "t") == sorted(expected.items())
    run(session, "CALL sys.compact(table => 'default.t', compact_strategy => 'full')")
    assert contents(session, "t") == sorted(expected.items())
    assert {f.level for _, _, f, _ in _files(session, "t")} == {5}


def test_a_failed_job_publishes_nothing_and_leaves_no_file(session):
    run(session, "CREATE TABLE t (id BIGINT, v STRING NOT NULL, PRIMARY KEY (id) NOT ENFORCED) "
                 "TBLPROPERTIES ('bucket' = '2')")
    run(session, "SET write.bucket-shuffle = true")
    run(session, "SET write.native-write.enabled = true")
    with pytest.raises(SqlError, match="NOT NULL"):
        run(session, "INSERT INTO t SELECT id, IF(id = 7, NULL, 'x') FROM range(0, 20)")
    t = table(session, "t")
    assert t.snapshots() == []
    left = [os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs if f.endswith(".parquet")]
    assert left == []


def test_tables_whose_merge_needs_the_engine_keep_its_writer(session):
    run(session, "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
                 "TBLPROPERTIES ('bucket' = '2', 'merge-engine' = 'partial-update')")
    run(session, "SET write.bucket-shuffle = true")
    run(session, "SET write.native-write.enabled = true")
    run(session, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    assert _spark_written(session, "t") == {False}
    assert contents(session, "t") == [(1, "a"), (2, "b")]


@pytest.mark.parametrize("option", ["'deletion-vectors.enabled' = 'true'",
                                    "'changelog-producer' = 'full-compaction'"])
def test_deletion_vector_tables_and_full_compaction_changelogs(session, option):
    for name in ("nat", "py"):
        run(session, f"CREATE TABLE {name} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
                     f"TBLPROPERTIES ('bucket' = '2', {option})")
        run(session, f"INSERT INTO {name} SELECT id, concat('base', id) FROM range(0, 50)")
    run(session, "SET write.bucket-shuffle = true")
    for name, native in (("nat", "true"), ("py", "false")):
        run(session, f"SET write.native-write.enabled = {native}")
        run(session, f"INSERT INTO {name} SELECT id, concat('new', id) FROM range(25, 75, 1, 3)")
    expected = sorted([(i, f"base{i}") for i in range(25)] + [(i, f"new{i}") for i in range(25, 75)])
    assert True in _spark_written(session, "nat")  # the base stays the engine's (no compaction yet)
    assert contents(session, "nat") == contents(session, "py") == expected
    for name in ("nat", "py"):
        run(session, f"CALL sys.compact(table => 'default.{name}', compact_strategy => 'full')")
    assert contents(session, "nat") == contents(session, "py") == expected
