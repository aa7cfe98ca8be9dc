"""Bucket-shuffled SQL writes (sqlext.execute.bucket_shuffle): one sorted run per bucket and write,
whatever the number of input partitions, and the same rows as an unshuffled write."""

from __future__ import annotations

from collections import Counter

import pytest

from sqlext.execute.bucket_shuffle import MIN_ESTIMATED_BYTES, should_shuffle, write_table
from tests.integration.test_sql_dml import contents, run, table

# 8 input partitions of 500 keys each; every partition holds keys of every bucket.
SOURCE = "SELECT id, concat('v', id) AS v FROM range(0, 4000, 1, 8)"


def _layout(session, name):
    """(partition values, bucket, level) -> number of data files in the latest snapshot."""
    return Counter(
        (split.partition_values, split.bucket, f.level)
        for split in table(session, name).plan().splits
        for f in split.files
    )


def _create(session, name, extra=""):
    run(session, f"CREATE TABLE {name} (id BIGINT, v STRING{extra}) "
                 "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '4')")


def test_insert_from_many_partitions_writes_one_file_per_bucket(session):
    _create(session, "shuffled")
    _create(session, "plain")
    run(session, "SET write.bucket-shuffle = true")
    run(session, f"INSERT INTO shuffled {SOURCE}")
    assert _layout(session, "shuffled") == {((), b, 0): 1 for b in range(4)}
    run(session, "SET write.bucket-shuffle = false")
    run(session, f"INSERT INTO plain {SOURCE}")
    # unshuffled: each of the 8 tasks wrote every bucket, and the compaction after it merged them
    assert sum(_layout(session, "plain").values()) >= 4
    assert contents(session, "shuffled") == contents(session, "plain")
    assert len(contents(session, "shuffled")) == 4000


def test_auto_writes_a_small_input_from_many_partitions_in_one_task(session):
    # Below MIN_ESTIMATED_BYTES no exchange: the 8 input tasks are coalesced into one writer, so
    # each bucket still gets one level-0 file, as Paimon's (always shuffled) Spark write leaves it.
    _create(session, "t")
    run(session, f"INSERT INTO t {SOURCE}")
    assert _layout(session, "t") == {((), b, 0): 1 for b in range(4)}
    assert len(contents(session, "t")) == 4000


def test_upserts_add_one_run_per_bucket_and_leave_the_base_alone(session):
    _create(session, "t")
    run(session, "SET write.bucket-shuffle = true")
    run(session, f"INSERT INTO t {SOURCE}")
    base = {f.file_name for s in table(session, "t").plan().splits for f in s.files}
    for i in range(3):
        run(session, f"INSERT INTO t SELECT id, concat('u{i}', id) FROM range({i * 1000}, 4000, 3, 8)")
    files = [f for s in table(session, "t").plan().splits for f in s.files]
    assert base <= {f.file_name for f in files}  # 4 runs per bucket stay below the compaction trigger
    runs = Counter(s.bucket for s in table(session, "t").plan().splits for _ in s.files)
    assert runs == {b: 4 for b in range(4)}
    expected = {i: f"v{i}" for i in range(4000)}
    for i in range(3):
        expected.update({k: f"u{i}{k}" for k in range(i * 1000, 4000, 3)})
    assert contents(session, "t") == sorted(expected.items())


def test_partitioned_table_one_file_per_partition_and_bucket(session):
    run(session, "CREATE TABLE p (id BIGINT, v STRING, dt STRING) PARTITIONED BY (dt) "
                 "TBLPROPERTIES ('primary-key' = 'dt,id', 'bucket' = '3')")
    run(session, "SET write.bucket-shuffle = true")
    run(session, "INSERT INTO p SELECT id, concat('v', id), concat('d', id % 5) FROM range(0, 3000, 1, 6)")
    layout = _layout(session, "p")
    assert set(layout.values()) == {1}
    assert {(part, b) for part, b, _ in layout} == {((f"d{d}",), b) for d in range(5) for b in range(3)}
    assert len(contents(session, "p")) == 3000


def test_update_merge_and_delete_through_the_shuffle(session):
    _create(session, "t")
    run(session, "SET write.bucket-shuffle = true")
    run(session, f"INSERT INTO t {SOURCE}")
    run(session, "UPDATE t SET v = 'even' WHERE id % 2 = 0")
    run(session, "DELETE FROM t WHERE id >= 3990")
    run(session, "MERGE INTO t USING (SELECT id, 'm' AS v FROM range(3980, 4010)) s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    expected = {i: ("even" if i % 2 == 0 else f"v{i}") for i in range(3990)}
    expected.update({i: "m" for i in range(3980, 4010)})
    assert contents(session, "t") == sorted(expected.items())


def test_auto_shuffles_large_inputs_of_known_size_only(session, spark, warehouse):
    small = spark.sql("SELECT * FROM VALUES (1, 'a'), (2, 'b') AS v(id, v)")
    large = spark.range(0, MIN_ESTIMATED_BYTES)  # 8 bytes per row: far above the threshold
    assert not should_shuffle(small)
    assert should_shuffle(large)
    assert should_shuffle(small, "true") and not should_shuffle(large, "false")
    _create(session, "t")
    run(session, "INSERT INTO t VALUES (1, 'a')")
    # a read through the Python source has no size estimate: written as before, unshuffled
    source = spark.read.format("dyntable").option("warehouse", warehouse).option("table", "default.t").load()
    assert not should_shuffle(source)
    assert not should_shuffle(source.join(large, "id"))


def test_write_table_helper_applies_row_kinds(session, spark, warehouse):
    _create(session, "t")
    run(session, f"INSERT INTO t {SOURCE}")
    changes = spark.sql(
        "SELECT id, 'new' AS v, IF(id % 3 = 0, '-D', '+U') AS rowkind FROM range(0, 4000, 1, 8)"
    )
    write_table(changes, "default.t", warehouse, shuffle="true")
    expected = sorted((i, "new") for i in range(4000) if i % 3)
    assert contents(session, "t") == expected


def test_a_bad_setting_is_refused(session):
    _create(session, "t")
    run(session, "SET write.bucket-shuffle = sometimes")
    with pytest.raises(Exception, match="write.bucket-shuffle"):
        run(session, "INSERT INTO t VALUES (1, 'a')")
