"""engine.row_tracking: _ROW_ID / _SEQUENCE_NUMBER and the metadata columns, as Paimon's readers
compute them, and the files rewrites write (compaction, rows that keep their ids), without Spark."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import row_tracking
from engine.commit_rebase import assign_row_ids
from engine.errors import UnsupportedTableError
from engine.meta.manifest import FileKind, FileSource
from engine.scan.predicate import equal

SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string())])
TRACKED = ["id", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]


def _rows(ids):
    return pa.table({"id": pa.array(ids, pa.int32()), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def _read(table, columns=TRACKED, filter=None):
    rb = table.refresh().new_read_builder().with_projection(columns).with_filter(filter)
    return sorted(tuple(r.values()) for r in rb.new_read().to_arrow(rb.new_scan().plan().splits).to_pylist())


def _files(table):
    return [f for s in table.refresh().new_read_builder().new_scan().plan().splits for f in s.files]


def test_ids_and_sequence_numbers_of_appended_files(catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(_rows([1, 2]))
    t.write_arrow(_rows([3]))
    assert _read(t) == [(1, "v1", 0, 1), (2, "v2", 1, 1), (3, "v3", 2, 2)]
    assert _read(t, ["_ROW_ID"], equal("id", 3)) == [(2,)]
    assert row_tracking.metadata_names(t.schema)[:2] == ["_ROW_ID", "_SEQUENCE_NUMBER"]
    # not a column of `*`: a read without a projection has the table's columns only
    assert t.refresh().to_arrow().column_names == ["id", "v"]


def test_metadata_columns_of_every_table(catalog):
    t = catalog.create_table("db.p", pa.schema([("id", pa.int32()), ("dt", pa.string())]),
                             partition_keys=["dt"])
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "dt": ["a", "a", "b"]}))
    assert "_ROW_ID" not in row_tracking.metadata_names(t.schema)
    got = _read(t, ["id", "__paimon_row_index", "__paimon_partition", "__paimon_bucket"])
    assert got == [(1, 0, {"dt": "a"}, 0), (2, 1, {"dt": "a"}, 0), (3, 0, {"dt": "b"}, 0)]
    paths = {p for (p,) in _read(t, ["__paimon_file_path"])}
    assert {p.rsplit("/", 1)[-1] for p in paths} == {f.file_name for f in _files(t)}


def test_deleted_rows_keep_their_positions(catalog):
    """A row's id and index count the rows a deletion vector hides: ids are never reused."""
    t = catalog.create_table("db.dv", SCHEMA, options={"row-tracking.enabled": "true",
                                                       "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows([1, 2, 3]))
    builder = t.refresh().new_write_builder()
    deletions = builder.new_deletion_commit(t.refresh().latest_snapshot())
    deletions.delete({_files(t)[0].file_name: [1]})
    builder.new_commit().commit_with_deletions(deletions, [])
    assert _read(t, ["id", "_ROW_ID", "__paimon_row_index"]) == [(1, 0, 0), (3, 2, 2)]


def test_compaction_keeps_ids_in_the_new_file(catalog, warehouse):
    t = catalog.create_table("db.c", SCHEMA, options={"row-tracking.enabled": "true"})
    for i in (1, 2, 3):
        t.write_arrow(_rows([i]))
    t.refresh().compact(full=True)
    (f,) = _files(t)
    assert (f.file_source, f.first_row_id, f.min_sequence_number, f.max_sequence_number) == (
        FileSource.COMPACT, 0, 1, 3)
    assert f.write_cols == ("id", "v", "_ROW_ID", "_SEQUENCE_NUMBER")
    path = next(Path(warehouse).rglob(f.file_name))
    physical = pq.read_table(path)
    assert physical.column("_ROW_ID").to_pylist() == [0, 1, 2]
    assert physical.schema.field("_ROW_ID").metadata[b"PARQUET:field_id"] == b"2147483642"
    assert _read(t) == [(1, "v1", 0, 1), (2, "v2", 1, 2), (3, "v3", 2, 3)]
    t.write_arrow(_rows([4]))
    assert _read(t)[-1] == (4, "v4", 3, 5)  # after the compaction's snapshot 4


def test_tracked_file_follows_paimons_sequence_rules(catalog):
    t = catalog.create_table("db.r", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(_rows([1]))
    meta = _files(t)[0]
    rows = pa.table({"_ROW_ID": pa.array([5, 6, 7], pa.int64()),
                     "_SEQUENCE_NUMBER": pa.array([3, None, 2], pa.int64())})
    f = row_tracking.tracked_file(meta, ["id", "v"], rows)
    assert (f.first_row_id, f.min_sequence_number, f.max_sequence_number) == (5, 2, 0)
    gap = rows.set_column(0, "_ROW_ID", pa.array([5, 7, 8], pa.int64()))
    assert row_tracking.tracked_file(meta, ["id", "v"], gap).first_row_id is None
    updated = rows.set_column(1, "_SEQUENCE_NUMBER", pa.nulls(3, pa.int64()))
    g = row_tracking.tracked_file(meta, ["id", "v"], updated)
    assert (g.min_sequence_number, g.max_sequence_number) == (0, 0)
    # the commit: new rows (min 0) take the snapshot; rows partly updated (max 0) keep their minimum
    entries = [_entry(meta, g), _entry(meta, f)]
    out, next_id = assign_row_ids(entries, 10, 9)
    assert [(e.file.min_sequence_number, e.file.max_sequence_number, e.file.first_row_id) for e in out] == [
        (9, 9, 5), (2, 9, 5)]
    assert next_id == 10  # files holding their ids take none


def _entry(meta, file):
    from engine.meta.manifest import ManifestEntry

    return ManifestEntry(FileKind.ADD, b"", 0, 1, file)


def test_what_would_not_keep_ids_stays_refused(catalog):
    from engine.ops.merge_branch import merge_branch

    t = catalog.create_table("db.m", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(_rows([1]))
    t.refs.tags.create("base", 1)
    t.refs.branches.create("dev", from_tag="base")
    with pytest.raises(UnsupportedTableError, match="row-tracking.enabled"):
        merge_branch(t.store, "dev")
    with pytest.raises(UnsupportedTableError, match="row-tracking.enabled"):
        t.maintenance.remove_missing_files()


def test_only_a_rewrite_writes_row_ids(catalog):
    """A plain write's _ROW_ID column is not the table's (Paimon refuses it too); a rewrite that asks
    for it (WriteBuilder.keeping_row_ids) keeps the ids it is given."""
    from engine.errors import InvalidArgumentError

    t = catalog.create_table("db.w", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(_rows([1, 2]))
    carried = _rows([2]).append_column("_ROW_ID", pa.array([1], pa.int64()))
    with pytest.raises(InvalidArgumentError, match="_ROW_ID"):
        t.write_arrow(carried)
    builder = t.refresh().new_write_builder().keeping_row_ids()
    messages = builder.new_write().write_all([carried.to_batches()[0]])
    builder.new_commit().commit(messages)
    # the rewritten row keeps id 1; its NULL sequence number becomes the commit's snapshot (2)
    assert [r for r in _read(t) if r[0] == 2] == [(2, "v2", 1, 1), (2, "v2", 1, 2)]
    assert t.refresh().latest_snapshot().next_row_id == 2
