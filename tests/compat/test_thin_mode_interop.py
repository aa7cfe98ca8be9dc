"""Thin-mode tables (``data-file.thin-mode``, Paimon 1.0) written by dyntable, read by pypaimon 2.1.

Java Paimon 0.9 predates thin mode (its readers expect the ``_KEY_`` columns), so pypaimon is the
oracle: it reads what the engine and SQL wrote, after updates and compaction, and dyntable reads
what pypaimon appends to the same table.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import open_catalog
from tests.compat.harness import PyPaimon
from tests.compat.test_newer_features import _rows

pytestmark = pytest.mark.compat

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _physical(t) -> set[tuple[str, ...]]:
    return {tuple(pq.read_schema(t.store.paths.data_file("", s.bucket, f.file_name, f.external_path)).names)
            for s in t.new_scan().plan().splits for f in s.files}


def test_pypaimon_reads_dyntable_thin_files(pypaimon: PyPaimon, tmp_path):
    warehouse = tmp_path / "wh"
    catalog = open_catalog(str(warehouse))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "data-file.thin-mode": "true"})
    t.write_arrow(pa.table({"id": list(range(8)), "v": [f"a{i}" for i in range(8)]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [1, 9], "v": ["b1", "b9"]}, schema=SCHEMA))
    t = t.refresh()
    assert _physical(t) == {("_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "v")}
    assert _rows(pypaimon.read(warehouse, "db.t")) == _rows(t.to_arrow())
    t.compact(full=True)
    t = t.refresh()
    assert _rows(pypaimon.read(warehouse, "db.t")) == _rows(t.to_arrow())
    pypaimon.write(warehouse, "db.t", pa.table({"id": [2, 20], "v": ["p2", "p20"]}, schema=SCHEMA))
    got = _rows(t.refresh().to_arrow())
    assert got == _rows(pypaimon.read(warehouse, "db.t")) and (2, "p2") in got and len(got) == 10


@pytest.mark.spark
def test_sql_writes_thin_files(pypaimon: PyPaimon, spark, tmp_path):
    from sqlext.session import SqlSession

    warehouse = tmp_path / "wh"
    session = SqlSession(spark, warehouse=str(warehouse))
    try:
        list(session.execute("CREATE DATABASE IF NOT EXISTS db"))
        list(session.execute("CREATE TABLE db.s (id BIGINT, v STRING) TBLPROPERTIES ('primary-key' = 'id', "
                             "'bucket' = '1', 'data-file.thin-mode' = 'true')"))
        list(session.execute("INSERT INTO db.s VALUES (1, 'a'), (2, 'b'), (3, 'c')"))
        list(session.execute("UPDATE db.s SET v = 'z' WHERE id = 2"))
        list(session.execute("DELETE FROM db.s WHERE id = 3"))
        got = session.sql("SELECT id, v FROM db.s").toArrow()
        assert _rows(got) == [(1, "a"), (2, "z")]
        assert _rows(pypaimon.read(warehouse, "db.s")) == _rows(got)
        t = open_catalog(str(warehouse)).get_table("db.s")
        assert all(not any(c.startswith("_KEY_") for c in names) for names in _physical(t))
    finally:
        session.stop_jobs()
