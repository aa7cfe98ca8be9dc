"""A primary-key table whose key does not cover the partition, through SQL and ``df.write``, as
Paimon 2.0 behaves: with dynamic buckets a key has one partition (cross-partition upsert, see
test_sql_dynamic_bucket); with fixed buckets (Paimon 1.3+) each partition keeps its own keys, a
write never moves a key, and an UPDATE that would move one is refused instead of leaving the row
in both partitions."""

from __future__ import annotations

import pytest

from sqlext.errors import SqlError
from tests.integration.test_sql_dml import contents, run


def test_fixed_buckets_keep_each_partitions_keys(session, warehouse):
    run(session, "CREATE TABLE f (id INT, v STRING, dt STRING) PARTITIONED BY (dt) "
                 "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2')")
    run(session, "INSERT INTO f VALUES (1, 'a', 'x'), (2, 'b', 'x')")
    run(session, "INSERT INTO f VALUES (1, 'A', 'y'), (2, 'B', 'x')")  # key 1 now in x and y
    assert contents(session, "f") == [(1, "A", "y"), (1, "a", "x"), (2, "B", "x")]
    frame = session.spark.createDataFrame([(1, "d", "x"), (3, "c", "y")], "id int, v string, dt string")
    frame.write.format("dyntable").option("warehouse", warehouse).option("table", "default.f") \
        .mode("append").save()
    assert contents(session, "f") == [(1, "A", "y"), (1, "d", "x"), (2, "B", "x"), (3, "c", "y")]
    run(session, "DELETE FROM f WHERE id = 1 AND dt = 'x'")  # the input's own delete moves nothing else
    run(session, "UPDATE f SET v = 'u' WHERE id = 2")
    assert contents(session, "f") == [(1, "A", "y"), (2, "u", "x"), (3, "c", "y")]
    with pytest.raises(SqlError) as info:  # the row would stay in x as well
        run(session, "UPDATE f SET dt = 'z' WHERE id = 2")
    assert info.value.sqlstate == "42000" and "partition" in str(info.value)
    run(session, "UPDATE f SET dt = dt WHERE id = 2")  # unchanged: fine
    with pytest.raises(SqlError) as info:
        run(session, "MERGE INTO f t USING (SELECT 3 AS id, 'z' AS dt) s ON t.id = s.id "
                     "WHEN MATCHED THEN UPDATE SET t.dt = s.dt")
    assert info.value.sqlstate == "42000"
    assert contents(session, "f") == [(1, "A", "y"), (2, "u", "x"), (3, "c", "y")]
