"""Java Paimon reads a table upserted through the bucket-shuffled write (sqlext.execute.bucket_shuffle).

Java writes the base rows (its own bucket assignment), dyntable upserts every key from several
Spark partitions grouped by the JVM bucket expression: had the expression or the writer put a
key in another bucket than Java's, Java would read both versions of that key.
"""

from __future__ import annotations

from collections import Counter

import pytest

from sqlext.execute.native_write import write_table
from tests.compat.java_oracle import JavaPaimon, arrow_rows

pytestmark = [pytest.mark.java, pytest.mark.spark]


def test_java_reads_a_shuffled_upsert_of_its_own_rows(java: JavaPaimon, catalog, spark):
    java.create_table("db.s", [("id", "BIGINT NOT NULL"), ("name", "STRING NOT NULL"), ("v", "STRING")],
                      primary_keys=["id", "name"], options={"bucket": "4"})
    java.write("db.s", [[i, f"name-{i}-{'x' * (i % 11)}", "java"] for i in range(200)])
    changes = spark.sql(
        "SELECT id, concat('name-', id, '-', repeat('x', CAST(id % 11 AS INT))) AS name, 'dyntable' AS v "
        "FROM range(0, 250, 1, 6)"
    )
    write_table(changes, "db.s", catalog.warehouse, shuffle="true")
    expected = sorted((i, f"name-{i}-{'x' * (i % 11)}", "dyntable") for i in range(250))
    assert java.read("db.s") == arrow_rows(catalog.get_table("db.s").to_arrow()) == expected
    # Java's file and one file of ours per bucket: the shuffle grouped the rows by Paimon's bucket
    files = Counter(s.bucket for s in catalog.get_table("db.s").plan().splits for _ in s.files)
    assert files == {b: 2 for b in range(4)}
