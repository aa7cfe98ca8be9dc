"""pypaimon reads and merges files written by Spark's own Parquet writer (sqlext.execute.native_write),
with pypaimon's own later writes on top of them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.session import SqlSession
from tests.compat.harness import PyPaimon
from tests.compat.java_oracle import arrow_rows

pytestmark = [pytest.mark.compat, pytest.mark.spark]

DDL = ("CREATE TABLE db.t (id BIGINT, s STRING, d DOUBLE, m DECIMAL(10, 2), w DECIMAL(30, 5), dt DATE, "
       "ntz TIMESTAMP_NTZ, ltz TIMESTAMP, b BOOLEAN, t TINYINT, bin BINARY, part STRING, "
       "PRIMARY KEY (part, id) NOT ENFORCED) PARTITIONED BY (part) TBLPROPERTIES ('bucket' = '3')")
SOURCE = ("SELECT id, concat('s', id), id / 3, CAST(id AS DECIMAL(10, 2)) / 8, "
          "CAST(id AS DECIMAL(30, 5)) * 1e15, "
          "date_add(DATE'2024-01-01', CAST(id AS INT)), "
          "timestamp_micros(id * 1000001) :: TIMESTAMP_NTZ, timestamp_micros(id * 999999), id % 2 = 0, "
          "CAST(id % 100 AS TINYINT), CAST(concat('b', id) AS BINARY), IF(id % 3 = 0, 'p0', 'p1') "
          "FROM range(0, {n}, 1, 4)")


def test_pypaimon_reads_native_files_and_writes_over_them(pypaimon: PyPaimon, catalog, spark):
    session = SqlSession(spark, warehouse=catalog.warehouse)
    for sql in (DDL, "SET write.bucket-shuffle = true", "SET write.native-write.enabled = true",
                f"INSERT INTO db.t {SOURCE.format(n=300)}",
                f"INSERT INTO db.t {SOURCE.format(n=100)}"):
        list(session.execute(sql))
    table = catalog.get_table("db.t")
    store = table.store
    written = [pq.read_metadata(store.paths.data_file(store.partition_dir(s.partition_values), s.bucket,
                                                      f.file_name)).metadata or {}
               for s in table.plan().splits for f in s.files]
    assert written and all(b"org.apache.spark.version" in m for m in written)
    schema = table.arrow_schema
    ours = table.to_arrow()
    assert ours.num_rows == 300
    assert arrow_rows(pypaimon.read(catalog.warehouse, "db.t", schema=schema)) == arrow_rows(ours)
    # pypaimon's write continues after our sequence numbers: its rows win over ours
    update = ours.filter(pa.compute.less(ours.column("id"), 10))
    update = update.set_column(1, schema.field("s"), pa.array(["pypaimon"] * update.num_rows))
    pypaimon.write(catalog.warehouse, "db.t", update.cast(schema))
    merged = catalog.get_table("db.t").to_arrow()
    assert {r["id"]: r["s"] for r in merged.to_pylist() if r["id"] < 12} == {
        **{i: "pypaimon" for i in range(10)}, 10: "s10", 11: "s11"}
    assert arrow_rows(pypaimon.read(catalog.warehouse, "db.t", schema=schema)) == arrow_rows(merged)
