"""Tables written by SQL with 'metadata.iceberg.storage' (docs/iceberg.md) read by pyiceberg: every
statement that commits (INSERT, INSERT OVERWRITE, UPDATE, DELETE, MERGE, ALTER … ADD COLUMNS,
COMPACT, CALL rollback) leaves Iceberg metadata whose rows are exactly dyntable's."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlext.parse.names import TableName
from tests.compat.iceberg.oracle import pyiceberg_python, read_iceberg

pytestmark = pytest.mark.compat


def _rows(table, columns):
    return sorted((tuple(r[c] for c in columns) for r in table.to_pylist()), key=repr)


def _check(session, python, name: str) -> None:
    t = session.table(TableName.parse(name))
    latest = t.latest_snapshot().id
    got = read_iceberg(python, Path(t.path) / "metadata" / f"v{latest}.metadata.json")
    ours = t.to_arrow()
    assert got.current_snapshot_id == latest
    assert _rows(got.current, ours.column_names) == _rows(ours, ours.column_names)


def test_sql_statements_keep_the_iceberg_view_in_step(session):
    python = pyiceberg_python()
    run = lambda sql: list(session.execute(sql))  # noqa: E731
    run("CREATE TABLE ev (id BIGINT, kind STRING, day DATE) PARTITIONED BY (day) "
        "TBLPROPERTIES ('metadata.iceberg.storage' = 'table-location')")
    run("INSERT INTO ev VALUES (1, 'a', DATE'2024-01-01'), (2, 'b', DATE'2024-01-02'), (3, NULL, NULL)")
    _check(session, python, "ev")
    run("UPDATE ev SET kind = 'z' WHERE id = 2")
    run("DELETE FROM ev WHERE id = 1")
    _check(session, python, "ev")
    run("MERGE INTO ev t USING (SELECT 3 AS id, 'm' AS kind) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET kind = s.kind WHEN NOT MATCHED THEN INSERT (id, kind, day) "
        "VALUES (s.id, s.kind, NULL)")
    run("INSERT OVERWRITE ev PARTITION (day = DATE'2024-01-02') VALUES (4, 'o')")
    run("ALTER TABLE ev ADD COLUMNS (score DOUBLE)")
    run("INSERT INTO ev VALUES (5, 'n', DATE'2024-01-03', 1.5)")
    _check(session, python, "ev")
    run("CALL sys.rollback(table => 'ev', snapshot => 2)")
    _check(session, python, "ev")

    run("CREATE TABLE kv (k BIGINT NOT NULL, v STRING) TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '2', "
        "'metadata.iceberg.storage' = 'table-location', 'full-compaction.delta-commits' = '1')")
    run("INSERT INTO kv VALUES (1, 'a'), (2, 'b')")
    run("INSERT INTO kv VALUES (2, 'B'), (3, 'c')")
    _check(session, python, "kv")  # each batch commit compacted fully: Iceberg sees every key once
