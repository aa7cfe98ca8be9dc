"""Java Paimon (the 0.9 oracle) reads tables whose schema dyntable's merge-schema writes evolved:
new top-level columns (one a struct) and a widened type, at every snapshot.

A new field inside an existing struct is left to the pypaimon test
(``test_merge_schema_interop.py``): Paimon 0.9 reads no nested evolution at all ("Only support
column type evolution in atomic data type"), whoever wrote it; later Paimon versions do."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.compat.java_oracle import JavaPaimon, arrow_rows

pytestmark = pytest.mark.java


def _ours(table: pa.Table) -> list[tuple]:
    # The oracle hands a ROW back as the list of its field values.
    return [tuple(list(v.values()) if isinstance(v, dict) else v for v in row) for row in arrow_rows(table)]


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_java_reads_every_snapshot_of_an_evolved_table(java: JavaPaimon, catalog, primary_key):
    id_ = pa.field("id", pa.int32(), nullable=not primary_key)
    t = catalog.create_table("db.m", pa.schema([id_, ("v", pa.string())]),
                             primary_keys=["id"] if primary_key else (),
                             options={"bucket": "2"} if primary_key else {})
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    t.write_arrow(pa.table({"id": pa.array([2, 3], pa.int32()), "n": pa.array([20, 30], pa.int32()),
                            "s": [{"x": "p"}, None]}), merge_schema=True)
    wide = t.refresh().with_options({"write.merge-schema.type-widening": "true"})
    wide.write_arrow(pa.table({"id": pa.array([4], pa.int32()), "n": pa.array([2**40], pa.int64()),
                               "s": [{"x": "q"}]}), merge_schema=True)
    t = t.refresh()
    assert [t.schema.id, *t.schema.field_names] == [2, "id", "v", "n", "s"]
    for snapshot_id in java.snapshot_ids("db.m"):
        ours = _ours(t.to_arrow(snapshot_id=snapshot_id))
        assert java.read("db.m", snapshot_id=snapshot_id) == ours
    latest = java.read("db.m")
    assert latest == _ours(t.to_arrow())
    assert any(row[0] == 4 and row[2] == 2**40 for row in latest)


def test_java_reads_a_widened_primary_key_and_an_explicit_cast(java: JavaPaimon, catalog):
    # PaimonSinkTest "enable schema evolution": key a INT -> BIGINT, b STRING -> DATE, c added;
    # Java reads the old files through the new types, and finds key 2 rewritten once, in its bucket.
    import datetime as dt

    schema = pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())])
    t = catalog.create_table("db.k", schema, primary_keys=["a"], options={"bucket": "3"})
    t.write_arrow(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["2023-08-09", "2023-08-09"]}))
    day = dt.date(2023, 8, 10)
    evolving = t.with_options({"write.merge-schema": "true", "write.merge-schema.type-widening": "true",
                               "write.merge-schema.explicit-cast": "true"})
    evolving.write_arrow(pa.table({"a": pa.array([1, 3], pa.int64()), "b": [day, day],
                                   "c": pa.array([1, 3], pa.int32())}))
    t.refresh().write_arrow(pa.table({"a": pa.array([2], pa.int64()), "b": [day],
                                      "c": pa.array([2], pa.int32())}))
    t = t.refresh()
    for snapshot_id in java.snapshot_ids("db.k"):
        assert sorted(java.read("db.k", snapshot_id=snapshot_id)) == sorted(
            _ours(t.to_arrow(snapshot_id=snapshot_id)))
    assert sorted(java.read("db.k")) == [(1, day, 1), (2, day, 2), (3, day, 3)]
