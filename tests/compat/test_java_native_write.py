"""Java Paimon reads, merges, compacts and expires files written by Spark's own Parquet writer
(sqlext.execute.native_write): level-0 files over Java's own files, and Java's files over ours."""

from __future__ import annotations

from decimal import Decimal

import pyarrow.parquet as pq
import pytest

from sqlext.session import SqlSession
from tests.compat.java_oracle import JavaPaimon, arrow_rows

pytestmark = [pytest.mark.java, pytest.mark.spark]

COLUMNS = [("id", "BIGINT NOT NULL"), ("name", "STRING NOT NULL"), ("v", "STRING"), ("d", "DOUBLE"),
           ("m", "DECIMAL(10, 2)"), ("w", "DECIMAL(25, 3)"), ("dt", "STRING NOT NULL")]
SOURCE = ("SELECT id, concat('n', id % 7) AS name, concat('ours-', id) AS v, id * 0.5 AS d, "
          "CAST(id AS DECIMAL(10, 2)) / 4 AS m, CAST(id AS DECIMAL(25, 3)) * 1000000 AS w, "
          "IF(id % 2 = 0, 'even', 'odd') AS dt FROM range(0, {n}, 1, 5)")


def _spark_written(table) -> int:
    """How many live files Spark's writer wrote."""
    store = table.store
    return sum(
        b"org.apache.spark.version" in (pq.read_metadata(store.paths.data_file(
            store.partition_dir(s.partition_values), s.bucket, f.file_name)).metadata or {})
        for s in table.plan().splits for f in s.files
    )


@pytest.mark.parametrize("partitioned", [False, True])
def test_java_merges_compacts_and_expires_native_files(java: JavaPaimon, catalog, spark, partitioned):
    parts = ["dt"] if partitioned else []
    java.create_table("db.t", COLUMNS, partition_keys=parts, primary_keys=["id", "name", *parts],
                      options={"bucket": "3"})
    java.write("db.t", [[i, f"n{i % 7}", "java", None, None, None, "even" if i % 2 == 0 else "odd"]
                        for i in range(0, 300, 3)])
    session = SqlSession(spark, warehouse=catalog.warehouse)
    list(session.execute("SET write.bucket-shuffle = true"))
    list(session.execute("SET write.native-write.enabled = true"))
    # duplicates of every key from other Spark partitions: the last in input order wins
    list(session.execute(f"INSERT INTO db.t {SOURCE.format(n=200)} UNION ALL "
                         f"SELECT id, name, concat('last-', id), d, m, w, dt FROM ({SOURCE.format(n=100)})"))
    table = catalog.get_table("db.t")
    assert _spark_written(table) == len({(s.partition_values, s.bucket) for s in table.plan().splits})
    ours = arrow_rows(table.to_arrow())
    assert java.read("db.t") == ours
    by_id = {r[0]: r for r in ours}
    assert set(by_id) == set(range(200)) | set(range(0, 300, 3))
    assert by_id[3][2] == "last-3" and by_id[150][2] == "ours-150" and by_id[201][2] == "java"
    assert by_id[10][3:6] == (5.0, Decimal("2.50"), Decimal("10000000.000"))  # as Java decodes them
    java.compact("db.t", full=True)
    assert java.read("db.t") == arrow_rows(catalog.get_table("db.t").to_arrow()) == ours
    # our next write continues after Java's compacted sequence numbers, and Java's expiration
    # removes what it replaced
    list(session.execute("INSERT INTO db.t SELECT id, name, 'again', d, m, w, dt FROM db.t WHERE id < 50"))
    again = arrow_rows(catalog.get_table("db.t").to_arrow())
    assert {r[0]: r[2] for r in again if r[0] < 50} == {i: "again" for i in by_id if i < 50}
    java.expire_snapshots("db.t", retain_max=1, retain_min=1)
    assert java.read("db.t") == arrow_rows(catalog.get_table("db.t").to_arrow()) == again
