"""Sorted compaction through SQL: ``CALL sys.compact(..., order_strategy, order_by)``.

The cases restate Paimon's CompactProcedureTestBase order-strategy tests ('sort compact', 'sort
compact with partition', 'with multi-partitions', 'with partition filter', 'with null values in
string clustering column', 'compact with wrong usage') with Paimon's expected row orders, and its
incremental clustering tests ('cluster for unpartitioned table', 'cluster for partitioned table',
'... with partition filter', 'cluster with deletion vectors').
"""

from __future__ import annotations

import pyarrow as pa

from sqlext.parse.names import TableName
from tests.integration.sql_helpers import fails, run

GRID = [(a, b) for a in range(3) for b in range(3)]
ZORDER = [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (1, 2), (2, 0), (2, 1), (2, 2)]
HILBERT = [(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2)]


def test_sort_compact_orders_rows_as_paimon(session):
    """'sort compact': nine one-row commits, then zorder, hilbert and order rewrite the table."""
    session.sql("CREATE TABLE T (a INT, b INT) TBLPROPERTIES ('bucket' = '-1')")
    for a, b in GRID:
        session.sql(f"INSERT INTO T VALUES ({a}, {b})")
    assert run(session, "SELECT * FROM T") == GRID
    for strategy, expected in (("zorder", ZORDER), ("hilbert", HILBERT), ("order", GRID)):
        call = f"CALL sys.compact(table => 'T', order_strategy => '{strategy}', order_by => 'a,b')"
        assert run(session, call)[0][0] is True
        assert run(session, "SELECT * FROM T") == expected
    table = session.table(TableName.parse("T"))
    assert sum(len(s.files) for s in table.new_scan().plan().splits) == 1


def test_sort_compact_one_partition_leaves_the_others(session):
    """'sort compact with partition': partitions => 'p=0' sorts p=0 only."""
    session.sql("CREATE TABLE T (p INT, a INT, b INT) PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '-1')")
    for p in (0, 1):
        for a, b in GRID:
            session.sql(f"INSERT INTO T VALUES ({p}, {a}, {b})")
    p1 = [(1, a, b) for a, b in GRID]
    for strategy, expected in (("zorder", ZORDER), ("hilbert", HILBERT), ("order", GRID)):
        run(session, f"CALL sys.compact(table => 'T', partitions => 'p=0', order_strategy => '{strategy}', "
                     "order_by => 'a,b')")
        assert run(session, "SELECT * FROM T WHERE p = 0") == [(0, a, b) for a, b in expected]
        assert run(session, "SELECT * FROM T WHERE p = 1") == p1


def test_sort_compact_every_partition(session):
    """'sort compact with multi-partitions': each partition ends sorted by id."""
    for strategy in ("order", "zorder"):
        session.sql("DROP TABLE IF EXISTS T")
        session.sql("CREATE TABLE T (id INT, pt STRING) PARTITIONED BY (pt)")
        session.sql("INSERT INTO T VALUES (1, 'p1'), (3, 'p1'), (1, 'p2'), (4, 'p2'), (3, 'p3'), (2, 'p3'), "
                    "(1, 'p4'), (2, 'p4')")
        session.sql("INSERT INTO T VALUES (4, 'p1'), (2, 'p1'), (2, 'p2'), (3, 'p2'), (1, 'p3'), (4, 'p3'), "
                    "(3, 'p4'), (4, 'p4')")
        call = f"CALL sys.compact(table => 'T', order_strategy => '{strategy}', order_by => 'id')"
        assert run(session, call)[0][0] is True
        for pt in ("p1", "p2", "p3", "p4"):
            assert run(session, f"SELECT id FROM T WHERE pt = '{pt}'") == [(1,), (2,), (3,), (4,)]


def test_sort_compact_with_where(session):
    """'sort compact with partition filter': where => 'pt = 1' (dyntable commits it as COMPACT,
    Paimon as OVERWRITE: the rows do not change, so streaming readers skip it)."""
    session.sql("CREATE TABLE t (a INT, pt INT) PARTITIONED BY (pt)")
    session.sql("INSERT INTO t VALUES (2, 1)")
    session.sql("INSERT INTO t VALUES (1, 1)")
    session.sql("INSERT INTO t VALUES (5, 2)")
    run(session, "CALL sys.compact(table => 't', order_strategy => 'order', where => 'pt = 1', "
                 "order_by => 'a')")
    assert run(session, "SELECT * FROM t WHERE pt = 1") == [(1, 1), (2, 1)]
    table = session.table(TableName.parse("t"))
    assert table.latest_snapshot().commit_kind.name == "COMPACT"
    files = {s.partition_values[0]: len(s.files) for s in table.new_scan().plan().splits}
    assert files == {1: 1, 2: 1}


def test_sort_compact_null_strings(session):
    """'sort compact with null values in string clustering column': no row lost, nulls first."""
    session.sql("CREATE TABLE T (a STRING, b INT) TBLPROPERTIES ('bucket' = '-1')")
    session.sql("INSERT INTO T VALUES (null, 1), ('abc', 2), (null, 3), ('def', 4)")
    session.sql("INSERT INTO T VALUES ('ghi', 5), (null, 6)")
    run(session, "CALL sys.compact(table => 'T', order_strategy => 'zorder', order_by => 'a,b')")
    assert run(session, "SELECT * FROM T") == [
        (None, 1), (None, 3), (None, 6), ("abc", 2), ("def", 4), ("ghi", 5)]
    session.sql("INSERT INTO T VALUES (null, 7), ('jkl', 8)")
    run(session, "CALL sys.compact(table => 'T', order_strategy => 'hilbert', order_by => 'a,b')")
    assert sorted(run(session, "SELECT b FROM T")) == [(i,) for i in range(1, 9)]


def test_sort_compact_wrong_usage(session):
    """'compact with wrong usage' and dyntable's typed refusals; nothing is committed."""
    session.sql("CREATE TABLE T (id INT, value STRING, pt STRING) PARTITIONED BY (pt) "
                "TBLPROPERTIES ('bucket' = '-1')")
    session.sql("INSERT INTO T VALUES (1, 'a', 'p1')")
    session.sql("CREATE TABLE K (id INT, v INT) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')")
    session.sql("INSERT INTO K VALUES (1, 1)")
    cases = [
        ("CALL sys.compact(table => 'T', order_strategy => 'zorder', order_by => 'pt')", "22023",
         "should not contain partition"),
        ("CALL sys.compact(table => 'T', order_strategy => 'sort', order_by => 'id')", "22023",
         "order_strategy"),
        ("CALL sys.compact(table => 'T', order_strategy => 'zorder', order_by => 'nope')", "42703", "nope"),
        ("CALL sys.compact(table => 'T', order_strategy => 'hilbert', order_by => 'id')", "22023", "two"),
        ("CALL sys.compact(table => 'T', order_by => 'id')", "22023", "none"),
        ("CALL sys.compact(table => 'T', order_strategy => 'zorder')", "22023", "order_by"),
        ("CALL sys.compact(table => 'K', order_strategy => 'order', order_by => 'v')", "0A000",
         "bucket = -1"),
    ]
    for sql, state, word in cases:
        assert fails(session, sql, word).sqlstate == state, sql
    assert session.table(TableName.parse("T")).latest_snapshot().id == 1
    assert session.table(TableName.parse("K")).latest_snapshot().id == 1


def _levels(session, name):
    splits = session.table(TableName.parse(name)).new_scan().plan().splits
    return [f.level for s in splits for f in s.files]


def _text(row: int) -> str:
    """80 CJK characters that differ per row (hardly compressible)."""
    return "".join(chr(0x4E00 + ((i + 80 * row) * 2654435761 >> 7) % 20000) for i in range(80))


def test_incremental_clustering_of_an_unpartitioned_table(session):
    """'cluster for unpartitioned table': nine one-row commits cluster into level 5; two later
    commits into level 4 (each level ordered on its own); a full clustering makes one level-5 file.

    Paimon's first rows share one random 40-character string; here each row has its own 80
    characters, so that in dyntable's Parquet files too the clustered level-5 run outweighs the two
    new runs and the universal strategy's size ratio leaves it alone (the picks depend on file sizes)."""
    session.sql("CREATE TABLE T (a INT, b INT, c STRING) TBLPROPERTIES ('bucket' = '-1', 'num-levels' = '6', "
                "'num-sorted-run.compaction-trigger' = '2', 'clustering.columns' = 'a,b', "
                "'clustering.strategy' = 'zorder', 'clustering.incremental' = 'true')")
    text = {(a, b): _text(a * 3 + b) for a, b in GRID}
    for a, b in GRID:
        session.sql(f"INSERT INTO T VALUES ({a}, {b}, '{text[a, b]}')")
    assert run(session, "CALL sys.compact(table => 'T')")[0][0] is True
    first = [(a, b, text[a, b]) for a, b in ZORDER]
    assert run(session, "SELECT * FROM T") == first
    assert _levels(session, "T") == [5]
    assert session.table(TableName.parse("T")).latest_snapshot().commit_kind.name == "COMPACT"
    # Two commits of one file each, as Paimon's two stream batches (a SQL INSERT of VALUES may
    # write one file per Spark task).
    table = session.table(TableName.parse("T"))
    for a, b in (([0, 1, 2], [3, 3, 3]), ([3, 3, 3, 3], [0, 1, 2, 3])):
        table.refresh().write_arrow(pa.table({"a": pa.array(a, pa.int32()), "b": pa.array(b, pa.int32()),
                                              "c": pa.array([None] * len(a), pa.string())}))
    run(session, "CALL sys.compact(table => 'T')")
    assert run(session, "SELECT * FROM T") == first + [
        (0, 3, None), (1, 3, None), (3, 0, None), (3, 1, None), (2, 3, None), (3, 2, None), (3, 3, None)]
    assert _levels(session, "T") == [5, 4]
    run(session, "CALL sys.compact(table => 'T', compact_strategy => 'full')")
    full = [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0), (3, 1),
            (2, 2), (2, 3), (3, 2), (3, 3)]
    assert run(session, "SELECT * FROM T") == [(a, b, text.get((a, b))) for a, b in full]
    assert _levels(session, "T") == [5]
    snapshot = session.table(TableName.parse("T")).latest_snapshot().id
    run(session, "CALL sys.compact(table => 'T', compact_strategy => 'full')")  # nothing left to do
    assert session.table(TableName.parse("T")).latest_snapshot().id == snapshot


def test_incremental_clustering_with_deletion_vectors(session):
    """'cluster with deletion vectors': a level-0 file's deletion vector goes with its clustering,
    the level-5 file's stays; a full clustering leaves none. (Per-row strings as in the test above.)"""
    session.sql("CREATE TABLE T (a INT, b INT, c STRING) TBLPROPERTIES ('bucket' = '-1', "
                "'deletion-vectors.enabled' = 'true', 'num-levels' = '6', "
                "'num-sorted-run.compaction-trigger' = '2', 'clustering.columns' = 'a,b', "
                "'clustering.strategy' = 'zorder', 'clustering.incremental' = 'true')")
    text = {(a, b): _text(a * 3 + b) for a, b in GRID}
    for a, b in GRID:
        session.sql(f"INSERT INTO T VALUES ({a}, {b}, '{text[a, b]}')")
    run(session, "CALL sys.compact(table => 'T')")
    first = [(a, b, text[a, b]) for a, b in ZORDER]
    assert run(session, "SELECT * FROM T") == first
    assert _levels(session, "T") == [5]
    table = session.table(TableName.parse("T"))
    for a, b in (([0, 1, 2], [3, 3, 3]), ([3, 3, 3, 3], [0, 1, 2, 3])):
        table.refresh().write_arrow(pa.table({"a": pa.array(a, pa.int32()), "b": pa.array(b, pa.int32()),
                                              "c": pa.array([None] * len(a), pa.string())}))
    session.sql("DELETE FROM T WHERE a = 0 AND b = 0")  # in the level-5 file
    session.sql("DELETE FROM T WHERE a = 0 AND b = 3")  # in a level-0 file
    run(session, "CALL sys.compact(table => 'T')")
    assert run(session, "SELECT * FROM T") == first[1:] + [
        (1, 3, None), (3, 0, None), (3, 1, None), (2, 3, None), (3, 2, None), (3, 3, None)]
    split = session.table(TableName.parse("T")).new_scan().plan().splits[0]
    assert [f.level for f in split.files] == [5, 4]
    with_dv = {d.data_file for d in split.deletion_files}
    assert with_dv == {split.files[0].file_name}
    run(session, "CALL sys.compact(table => 'T', compact_strategy => 'full')")
    split = session.table(TableName.parse("T")).new_scan().plan().splits[0]
    assert len(split.files) == 1 and not split.deletion_files
    assert sorted(run(session, "SELECT a, b FROM T")) == sorted(
        [(a, b) for a, b in GRID if (a, b) != (0, 0)] + [(1, 3), (2, 3), (3, 0), (3, 1), (3, 2), (3, 3)])


def test_incremental_clustering_of_a_partitioned_table(session):
    """'cluster for partitioned table': partition 0 (long strings) clusters its new files into level
    4 beside level 5; partition 1 (nulls: the new runs outweigh level 5) reclusters all into level 5."""
    session.sql("CREATE TABLE T (a INT, b INT, c STRING, pt INT) PARTITIONED BY (pt) TBLPROPERTIES ("
                "'bucket' = '-1', 'num-levels' = '6', 'num-sorted-run.compaction-trigger' = '2', "
                "'clustering.columns' = 'a,b', 'clustering.strategy' = 'zorder', "
                "'clustering.incremental' = 'true')")
    text = {(a, b, 0): _text(a * 3 + b) for a, b in GRID}
    for pt in (0, 1):
        for a, b in GRID:
            c = f"'{text[a, b, pt]}'" if pt == 0 else "null"
            session.sql(f"INSERT INTO T VALUES ({a}, {b}, {c}, {pt})")
    run(session, "CALL sys.compact(table => 'T')")
    for pt in (0, 1):
        expected = [(a, b, text.get((a, b, pt)), pt) for a, b in ZORDER]
        assert run(session, f"SELECT * FROM T WHERE pt = {pt}") == expected
    assert _levels(session, "T") == [5, 5]
    table = session.table(TableName.parse("T"))
    for pt in (0, 1):
        for a, b in (([0, 1, 2], [3, 3, 3]), ([3, 3, 3, 3], [0, 1, 2, 3])):
            table.refresh().write_arrow(pa.table({
                "a": pa.array(a, pa.int32()), "b": pa.array(b, pa.int32()),
                "c": pa.array([None] * len(a), pa.string()), "pt": pa.array([pt] * len(a), pa.int32())}))
    run(session, "CALL sys.compact(table => 'T')")
    assert run(session, "SELECT * FROM T WHERE pt = 0") == [(a, b, text[a, b, 0], 0) for a, b in ZORDER] + [
        (0, 3, None, 0), (1, 3, None, 0), (3, 0, None, 0), (3, 1, None, 0), (2, 3, None, 0), (3, 2, None, 0),
        (3, 3, None, 0)]
    full = [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0), (3, 1),
            (2, 2), (2, 3), (3, 2), (3, 3)]
    assert run(session, "SELECT * FROM T WHERE pt = 1") == [(a, b, None, 1) for a, b in full]
    splits = session.table(TableName.parse("T")).new_scan().plan().splits
    assert {s.partition_values[0]: [f.level for f in s.files] for s in splits} == {0: [5, 4], 1: [5]}


def test_incremental_clustering_with_a_partition_filter(session):
    """'cluster for partitioned table with partition filter': where => 'pt = 0' clusters partition 0
    only ($files levels), then where => 'pt = 1' the other."""
    session.sql("CREATE TABLE T (a INT, b INT, pt INT) PARTITIONED BY (pt) TBLPROPERTIES ("
                "'bucket' = '-1', 'num-levels' = '6', 'num-sorted-run.compaction-trigger' = '2', "
                "'clustering.columns' = 'a,b', 'clustering.strategy' = 'zorder', "
                "'clustering.incremental' = 'true')")
    for a, b in GRID:
        session.sql(f"INSERT INTO T VALUES ({a}, {b}, 0), ({a}, {b}, 1)")
    levels = "SELECT DISTINCT partition, level FROM `T$files` ORDER BY partition"
    run(session, "CALL sys.compact(table => 'T', where => 'pt = 0')")
    assert run(session, levels) == [("{0}", 5), ("{1}", 0)]
    run(session, "CALL sys.compact(table => 'T', where => 'pt = 1')")
    assert run(session, levels) == [("{0}", 5), ("{1}", 5)]
