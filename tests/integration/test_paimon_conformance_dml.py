"""Conformance with Apache Paimon's Spark SQL DML semantics (issue 9): statements and expected rows
follow Paimon's documented behaviour and its Spark tests (the class is named in each test's
comment; the statements are re-expressed here, not copied). Results are read with the engine.
"""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError
from sqlext.parse.names import TableName


def run(session, sql):
    result = list(session.execute(sql))[-1]
    frame = result.dataframe
    return [tuple(r) for r in frame.collect()] if frame is not None else None


def contents(session, name):
    t = session.table(TableName.parse(name))
    cols = list(t.schema.field_names)
    return sorted((tuple(r[c] for c in cols) for r in t.to_arrow().to_pylist()), key=repr)


def snapshots(session, name):
    return len(session.table(TableName.parse(name)).snapshots())


def refused(session, sql, sqlstate, *words):
    with pytest.raises(SqlError) as info:
        list(session.execute(sql))
    assert info.value.sqlstate == sqlstate, str(info.value)
    for w in words:
        assert w in str(info.value), str(info.value)


def pk_table(session, name, engine, extra=""):
    run(
        session,
        f"CREATE TABLE {name} (id INT, name STRING, age INT, PRIMARY KEY (id) NOT ENFORCED) "
        f"WITH ('merge-engine' = '{engine}'{extra})",
    )


# -- DELETE on every merge engine ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "engine, extra",
    [
        ("deduplicate", ""),
        ("partial-update", ""),
        ("aggregation", ""),
        ("partial-update", ", 'partial-update.remove-record-on-delete' = 'true'"),
        ("aggregation", ", 'aggregation.remove-record-on-delete' = 'true'"),
    ],
)
def test_delete_with_every_merge_engine(session, engine, extra):
    # DeleteFromTableTestBase "test delete with merge engine" / "test delete with lookup": after
    # (1,'a',NULL), (2,'b',NULL), (1,NULL,16) and DELETE WHERE id = 1 only (2,'b',NULL) is left.
    pk_table(session, "t", engine, extra)
    run(session, "INSERT INTO t VALUES (1, 'a', NULL)")
    run(session, "INSERT INTO t VALUES (2, 'b', NULL)")
    run(session, "INSERT INTO t VALUES (1, NULL, 16)")
    assert run(session, "DELETE FROM t WHERE id = 1") == [(1,)]
    assert contents(session, "t") == [(2, "b", None)]
    # The key can be written again afterwards and is a new row.
    run(session, "INSERT INTO t VALUES (1, 'c', 3)")
    assert contents(session, "t") == [(1, "c", 3), (2, "b", None)]


def test_delete_on_aggregation_table_removes_the_row(session):
    # Issue 9: a sum column became 0 and the row stayed. Paimon rewrites the affected data.
    run(
        session,
        "CREATE TABLE agg (id INT, total BIGINT, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('merge-engine' = 'aggregation', 'fields.total.aggregate-function' "
        "= 'sum')",
    )
    run(session, "INSERT INTO agg VALUES (1, 4, 'a'), (2, 5, 'a'), (3, 6, 'b')")
    run(session, "INSERT INTO agg VALUES (1, 6, 'a')")
    assert run(session, "DELETE FROM agg WHERE total >= 10") == [(1,)]
    assert contents(session, "agg") == [(2, 5, "a"), (3, 6, "b")]
    run(session, "INSERT INTO agg VALUES (2, 1, 'a')")  # the survivors keep aggregating
    assert contents(session, "agg") == [(2, 6, "a"), (3, 6, "b")]


def test_delete_rewrite_conflicts_with_a_concurrent_write(session, monkeypatch):
    # A copy-on-write DELETE replaces partitions computed from the snapshot it read: a write landing
    # in them meanwhile must fail the DELETE, not be erased by it.
    from sqlext.execute import row_level_writes

    run(session, "CREATE TABLE agg (id INT, total BIGINT, PRIMARY KEY (id) NOT ENFORCED) "
                 "WITH ('merge-engine' = 'aggregation', 'fields.total.aggregate-function' = 'sum')")
    run(session, "INSERT INTO agg VALUES (1, 1), (2, 2)")
    original = row_level_writes.matching_partitions

    def with_concurrent_write(*args, **kwargs):
        found = original(*args, **kwargs)
        run(session, "INSERT INTO agg VALUES (2, 5), (3, 3)")
        return found

    monkeypatch.setattr(row_level_writes, "matching_partitions", with_concurrent_write)
    with pytest.raises(SqlError, match="changed the partitions being overwritten"):
        list(session.execute("DELETE FROM agg WHERE id = 1"))
    assert contents(session, "agg") == [(1, 1), (2, 7), (3, 3)]


def test_delete_on_first_row_needs_compacted_files_as_in_paimon(session):
    # DeleteFromTableTestBase "test delete with merge engine FIRST_ROW": with 'write-only' the
    # inserts stay on level 0, and DELETE asks for a compaction first (nothing written); after
    # CALL sys.compact it rewrites the files, leaving (2,'b',NULL).
    pk_table(session, "t", "first-row", ", 'changelog-producer' = 'lookup', 'write-only' = 'true'")
    run(session, "INSERT INTO t VALUES (1, 'a', NULL)")
    run(session, "INSERT INTO t VALUES (2, 'b', NULL)")
    run(session, "INSERT INTO t VALUES (1, NULL, 16)")
    snapshots = len(session.catalog.get_table("default.t").snapshots())
    refused(session, "DELETE FROM t WHERE id = 1", "55000", "CALL sys.compact(table => 'default.t')")
    assert len(session.catalog.get_table("default.t").snapshots()) == snapshots
    run(session, "CALL sys.compact(table => 't')")
    assert run(session, "DELETE FROM t WHERE id = 1") == [(1,)]
    assert contents(session, "t") == [(2, "b", None)]
    run(session, "INSERT INTO t VALUES (1, 'c', 3)")
    run(session, "CALL sys.compact(table => 't')")
    assert contents(session, "t") == [(1, "c", 3), (2, "b", None)]


def test_delete_first_row_table(session):
    # DeleteFromTableTestBase "Paimon Delete: first-row table".
    pk_table(session, "f", "first-row")
    run(session, "INSERT INTO f VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")
    run(session, "DELETE FROM f WHERE id = 3")
    assert contents(session, "f") == [(1, "a", 1), (2, "b", 2)]


# -- UPDATE / MERGE refused where the merge engine cannot take them ---------------------------------------
@pytest.mark.parametrize("engine", ["first-row", "aggregation"])
def test_update_and_merge_refused_on_first_row_and_aggregation(session, engine):
    # UpdateTableTestBase "test update with merge engine": UnsupportedOperationException for the
    # engines outside deduplicate / partial-update; MergeInto has the same rule (RowLevelOp).
    pk_table(session, "t", engine)
    run(session, "INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20)")
    before = snapshots(session, "t")
    refused(session, "UPDATE t SET age = 5 WHERE id = 1", "0A000", engine, "UPDATE")
    refused(
        session,
        "MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET age = 5",
        "0A000",
        engine,
    )
    assert snapshots(session, "t") == before
    assert contents(session, "t") == [(1, "a", 10), (2, "b", 20)]


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_update_with_supported_merge_engines(session, engine):
    # UpdateTableTestBase "test update with merge engine": [[1,a_new,11], [2,b,22]].
    run(
        session,
        f"CREATE TABLE t (id INT, name STRING, dt STRING, PRIMARY KEY (id) NOT ENFORCED) "
        f"WITH ('merge-engine' = '{engine}')",
    )
    run(session, "INSERT INTO t VALUES (1, 'a', '11'), (2, 'b', '22')")
    run(session, "UPDATE t SET name = 'a_new' WHERE id = 1")
    assert contents(session, "t") == [(1, "a_new", "11"), (2, "b", "22")]


def test_update_primary_key_column_refused_but_self_assignment_accepted(session):
    # UpdateTableTestBase "test update with primary key": "Can't update the primary key column."
    pk_table(session, "t", "deduplicate")
    run(session, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    refused(session, "UPDATE t SET id = 11 WHERE name = 'a'", "42000", "key")
    run(session, "UPDATE t SET id = id, age = 5 WHERE name = 'a'")
    assert contents(session, "t") == [(1, "a", 5), (2, "b", 2)]


def test_merge_delete_refused_where_a_delete_row_cannot_remove_the_key(session):
    # PrimaryKeyTableUtils.validatePKUpsertDeletable: partial-update takes -D only with
    # 'partial-update.remove-record-on-delete'; a written -D would make the table unreadable.
    pk_table(session, "t", "partial-update")
    run(session, "INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20)")
    refused(session, "MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE", "0A000",
            "remove-record-on-delete")
    assert contents(session, "t") == [(1, "a", 10), (2, "b", 20)]


# -- nested field UPDATE -------------------------------------------------------------------------------
def test_update_struct_field(session):
    # UpdateTableTestBase "test update with struct column" and "test update with conflicted column".
    run(
        session,
        "CREATE TABLE t (id INT, s STRUCT<c1: INT, c2: STRING>, dt STRING, PRIMARY KEY (id, "
        "dt) NOT ENFORCED) "
        "PARTITIONED BY (dt)",
    )
    run(
        session,
        "INSERT INTO t VALUES (1, struct(1, 'a'), '11'), (2, struct(2, 'b'), '22'), (3, struct(3, 'c'), "
        "'33')",
    )
    run(session, "UPDATE t SET s.c2 = 'a_new' WHERE s.c1 = 1")
    assert contents(session, "t") == [
        (1, {"c1": 1, "c2": "a_new"}, "11"),
        (2, {"c1": 2, "c2": "b"}, "22"),
        (3, {"c1": 3, "c2": "c"}, "33"),
    ]
    refused(session, "UPDATE t SET s.c2 = 'x', s = struct(11, 'y') WHERE s.c1 = 1", "42701", "more than once")


def test_update_struct_field_on_append_table(session):
    run(session, "CREATE TABLE a (id INT, s STRUCT<c1: INT, c2: STRING>)")
    run(session, "INSERT INTO a VALUES (1, struct(1, 'a')), (2, NULL)")
    run(session, "UPDATE a SET s.c2 = 'z'")
    assert contents(session, "a") == [(1, {"c1": 1, "c2": "z"}), (2, {"c1": None, "c2": "z"})]


# -- MERGE ------------------------------------------------------------------------------------------------
def _merge_tables(session):
    run(session, "CREATE TABLE target (a INT, b INT, c STRING, PRIMARY KEY (a) NOT ENFORCED)")
    run(session, "INSERT INTO target VALUES (1, 10, 'c1'), (2, 20, 'c2')")
    session.spark.createDataFrame([(1, 100, "c11"), (3, 300, "c33")], "a INT, b INT, c STRING") \
        .createOrReplaceTempView("source")


def test_merge_update_key_and_insert_unqualified_source_names(session):
    # MergeIntoTableTestBase "Paimon MergeInto: update + insert": SET a = source.a on the join key,
    # unqualified names of NOT MATCHED resolve to the source.
    _merge_tables(session)
    run(
        session,
        "MERGE INTO target USING source ON target.a = source.a "
        "WHEN MATCHED THEN UPDATE SET a = source.a, b = source.b, c = source.c "
        "WHEN NOT MATCHED THEN INSERT (a, b, c) VALUES (a, b, c)",
    )
    assert contents(session, "target") == [(1, 100, "c11"), (2, 20, "c2"), (3, 300, "c33")]


def test_merge_refuses_a_changing_key(session):
    # MergeIntoTableTestBase "fail in case that maybe update primary key column".
    _merge_tables(session)
    before = contents(session, "target")
    refused(
        session,
        "MERGE INTO target USING source ON target.b * 10 = source.b "
        "WHEN MATCHED THEN UPDATE SET a = source.a + 100, b = source.b",
        "42000",
        "key",
    )
    assert contents(session, "target") == before


def test_merge_partial_insert_with_default_value(session):
    # MergeIntoTableTestBase "Paimon MergeInto: partial insert with default value".
    run(
        session,
        "CREATE TABLE target (a INT, b INT DEFAULT 6, c STRING DEFAULT 'test', PRIMARY KEY (a) NOT ENFORCED)",
    )
    run(session, "INSERT INTO target VALUES (1, 10, 'c1'), (2, 20, 'c2')")
    session.spark.createDataFrame([(1, 100, "c11"), (3, 300, "c33")], "a INT, b INT, c STRING") \
        .createOrReplaceTempView("source")
    run(
        session,
        "MERGE INTO target USING source ON target.a = source.a WHEN NOT MATCHED THEN INSERT (a) VALUES (a)",
    )
    assert contents(session, "target") == [(1, 10, "c1"), (2, 20, "c2"), (3, 6, "test")]


@pytest.mark.parametrize("key", ["PRIMARY KEY (a) NOT ENFORCED", None])
def test_merge_not_matched_by_source(session, key):
    # Spark's WHEN NOT MATCHED BY SOURCE (Paimon MergeIntoTableTestBase "multiple clauses" covers the
    # BY SOURCE branch on Spark 3.4+): rows of the target without a source row are updated/deleted.
    cols = "a INT, b INT, c STRING" + (f", {key}" if key else "")
    run(session, f"CREATE TABLE target ({cols})")
    run(session, "INSERT INTO target VALUES (1, 10, 'c1'), (2, 20, 'c2'), (4, 40, 'c4')")
    session.spark.createDataFrame([(1, 100, "c11"), (3, 300, "c33")], "a INT, b INT, c STRING") \
        .createOrReplaceTempView("source")
    run(
        session,
        "MERGE INTO target t USING source s ON t.a = s.a "
        "WHEN MATCHED THEN UPDATE SET b = s.b "
        "WHEN NOT MATCHED BY SOURCE AND t.a = 2 THEN UPDATE SET c = concat(c, '_gone') "
        "WHEN NOT MATCHED BY SOURCE THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT *",
    )
    assert contents(session, "target") == [(1, 100, "c1"), (2, 20, "c2_gone"), (3, 300, "c33")]


# -- INSERT OVERWRITE: static by default, dynamic on request ------------------------------------------------
def _overwrite_table(session, options=""):
    run(session, f"CREATE TABLE my_table (id INT, pt STRING) PARTITIONED BY (pt){options}")
    run(session, "INSERT INTO my_table VALUES (1, 'p1'), (2, 'p2')")


def test_insert_overwrite_static_default(session):
    # Paimon docs spark/sql-write "Dynamic Overwrite Partition": static overwrite replaces the whole
    # table, also with PARTITION (pt) naming the column without a value.
    _overwrite_table(session)
    run(session, "INSERT OVERWRITE my_table VALUES (3, 'p1')")
    assert contents(session, "my_table") == [(3, "p1")]
    run(session, "INSERT INTO my_table VALUES (2, 'p2')")
    run(session, "INSERT OVERWRITE my_table PARTITION (pt) VALUES (4, 'p1')")
    assert contents(session, "my_table") == [(4, "p1")]
    run(session, "INSERT INTO my_table VALUES (2, 'p2')")
    run(session, "INSERT OVERWRITE my_table PARTITION (pt = 'p1') VALUES (5)")
    assert contents(session, "my_table") == [(2, "p2"), (5, "p1")]


def test_insert_overwrite_dynamic_by_session_setting(session):
    # Paimon docs spark/sql-write: SET spark.sql.sources.partitionOverwriteMode=dynamic overwrites only
    # the partitions written (InsertOverwriteTableTestBase covers the same mode).
    _overwrite_table(session)
    run(session, "SET spark.sql.sources.partitionOverwriteMode = dynamic")
    try:
        run(session, "INSERT OVERWRITE my_table VALUES (3, 'p1')")
        assert contents(session, "my_table") == [(2, "p2"), (3, "p1")]
        # A per-statement hint wins over the session.
        run(
            session,
            "INSERT OVERWRITE my_table /*+ OPTIONS('dynamic-partition-overwrite' = 'false') */ VALUES "
            "(4, 'p1')",
        )
        assert contents(session, "my_table") == [(4, "p1")]
    finally:
        run(session, "RESET spark.sql.sources.partitionOverwriteMode")


@pytest.mark.parametrize("pk", [True, False])
def test_dynamic_overwrite_multi_partitioned(session, pk):
    # InsertOverwriteTableTestBase "dynamic insert overwrite mutil-partitioned table": with static
    # values for some partition columns, only the written partitions under them are replaced.
    key = ", PRIMARY KEY (a, pt1, pt2) NOT ENFORCED" if pk else ""
    run(session, f"CREATE TABLE T (a INT, b STRING, pt1 STRING, pt2 INT{key}) PARTITIONED BY (pt1, pt2)")
    run(
        session,
        "INSERT INTO T VALUES (1, 'a', 'ptv1', 11), (2, 'b', 'ptv1', 11), (3, 'c', 'ptv1', 22), (4, 'd', "
        "'ptv2', 22)",
    )
    run(session, "SET spark.sql.sources.partitionOverwriteMode = dynamic")
    try:
        run(session, "INSERT OVERWRITE T PARTITION (pt2 = 22) VALUES (3, 'c2', 'ptv1'), (4, 'd2', 'ptv3')")
        assert contents(session, "T") == sorted(
            [(1, "a", "ptv1", 11), (2, "b", "ptv1", 11), (3, "c2", "ptv1", 22), (4, "d", "ptv2", 22),
             (4, "d2", "ptv3", 22)], key=repr)
        run(session, "INSERT OVERWRITE T PARTITION (pt1 = 'ptv3') VALUES (4, 'd3', 22)")
        run(session, "INSERT OVERWRITE T PARTITION (pt1 = 'ptv1', pt2 = 11) VALUES (5, 'e')")
        assert contents(session, "T") == sorted(
            [(3, "c2", "ptv1", 22), (4, "d", "ptv2", 22), (4, "d3", "ptv3", 22), (5, "e", "ptv1", 11)],
            key=repr,
        )
        run(
            session,
            "INSERT OVERWRITE T VALUES (1, 'a5', 'ptv1', 11), (3, 'c5', 'ptv1', 22), (4, 'd5', 'ptv3', 22)",
        )
        assert contents(session, "T") == sorted(
            [(1, "a5", "ptv1", 11), (3, "c5", "ptv1", 22), (4, "d", "ptv2", 22), (4, "d5", "ptv3", 22)],
            key=repr,
        )
    finally:
        run(session, "RESET spark.sql.sources.partitionOverwriteMode")


def test_insert_overwrite_dynamic_by_table_option(session):
    # Paimon's table option dynamic-partition-overwrite, when set on the table.
    _overwrite_table(session, " WITH ('dynamic-partition-overwrite' = 'true')")
    run(session, "INSERT OVERWRITE my_table VALUES (3, 'p1')")
    assert contents(session, "my_table") == [(2, "p2"), (3, "p1")]


# -- DEFAULT values ---------------------------------------------------------------------------------------
def test_insert_with_default_values(session):
    # SparkWriteITCase.testWriteWithDefaultValue: partial column list and VALUES (3, DEFAULT, DEFAULT).
    run(session, "CREATE TABLE T (a INT, b INT DEFAULT 2, c STRING DEFAULT 'my_value')")
    run(session, "INSERT INTO T (a) VALUES (1), (2)")
    assert contents(session, "T") == [(1, 2, "my_value"), (2, 2, "my_value")]
    run(session, "INSERT INTO T VALUES (3, DEFAULT, DEFAULT)")
    assert contents(session, "T") == [(1, 2, "my_value"), (2, 2, "my_value"), (3, 2, "my_value")]
    run(session, "UPDATE T SET b = DEFAULT, c = 'x' WHERE a = 3")
    assert (3, 2, "x") in contents(session, "T")
    # Paimon docs flink/default-value: a NULL written to a column with a default becomes the default
    # (DefaultValueTest "Default Value: MAP TYPE" shows the same for explicit NULLs).
    run(session, "INSERT INTO T VALUES (4, NULL, NULL)")
    assert (4, 2, "my_value") in contents(session, "T")


# -- DROP PARTITION ---------------------------------------------------------------------------------------
def test_drop_partition_missing_refuses_whole_statement(session):
    # Spark's ALTER TABLE DROP PARTITION: a missing partition fails the statement unless IF EXISTS.
    run(session, "CREATE TABLE p (id INT, dt STRING) PARTITIONED BY (dt)")
    run(session, "INSERT INTO p VALUES (1, 'a'), (2, 'c')")
    before = snapshots(session, "p")
    refused(session, "ALTER TABLE p DROP PARTITION (dt = 'a'), PARTITION (dt = 'b')", "428FT", "not found")
    assert snapshots(session, "p") == before and contents(session, "p") == [(1, "a"), (2, "c")]
    run(session, "ALTER TABLE p DROP IF EXISTS PARTITION (dt = 'a'), PARTITION (dt = 'b')")
    assert contents(session, "p") == [(2, "c")]


# -- partial-update sequence groups ---------------------------------------------------------------
def test_partial_update_sequence_groups(session):
    # Paimon's partial-update documentation, "Sequence Group": a group changes only when its
    # sequence column is set and not lower; DELETE still removes the whole row.
    run(
        session,
        "CREATE TABLE sg (k INT, a INT, b INT, g_1 INT, c INT, d INT, g_2 INT, PRIMARY KEY (k) NOT ENFORCED) "
        "WITH ('merge-engine' = 'partial-update', 'fields.g_1.sequence-group' = 'a,b', "
        "'fields.g_2.sequence-group' = 'c,d')",
    )
    run(session, "INSERT INTO sg VALUES (1, 1, 1, 1, 1, 1, 1), (2, 5, 5, 5, 5, 5, 5)")
    run(session, "INSERT INTO sg VALUES (1, 2, 2, 2, 2, 2, CAST(NULL AS INT))")
    assert contents(session, "sg") == [(1, 2, 2, 2, 1, 1, 1), (2, 5, 5, 5, 5, 5, 5)]
    run(session, "INSERT INTO sg VALUES (1, 3, 3, 1, 3, 3, 3)")
    assert contents(session, "sg") == [(1, 2, 2, 2, 3, 3, 3), (2, 5, 5, 5, 5, 5, 5)]
    assert run(session, "UPDATE sg SET c = 9, g_2 = 4 WHERE k = 1") == [(1,)]
    assert contents(session, "sg") == [(1, 2, 2, 2, 9, 3, 4), (2, 5, 5, 5, 5, 5, 5)]
    assert run(session, "DELETE FROM sg WHERE k = 2") == [(1,)]
    assert contents(session, "sg") == [(1, 2, 2, 2, 9, 3, 4)]
    refused(
        session,
        "ALTER TABLE sg SET TBLPROPERTIES ('fields.a.aggregate-function' = 'first_value')",
        "22023",
        "first_value",
        "sequence group",
    )


def test_partial_update_sequence_group_with_a_sum(session):
    # Paimon's documentation: an aggregate function inside a sequence group folds every row whose
    # group sequence is set, older ones included.
    run(
        session,
        "CREATE TABLE sgs (a INT, b INT, c INT, d INT, PRIMARY KEY (a) NOT ENFORCED) WITH ("
        "'merge-engine' = 'partial-update', 'fields.c.sequence-group' = 'd', "
        "'fields.d.aggregate-function' = 'sum')",
    )
    for values in ("(1, 1, 1, 1)", "(1, 2, NULL, 5)", "(1, NULL, 2, 1)", "(1, 3, 0, 10)"):
        run(session, f"INSERT INTO sgs VALUES {values}")
    assert contents(session, "sgs") == [(1, 3, 2, 12)]
