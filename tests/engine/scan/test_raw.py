"""Which splits need no merge (engine.scan.raw): the classification the native Spark scan relies on."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from engine.scan.raw import classify_raw, group_raw_files, needs_merge, raw_files, table_reads_raw
from engine.schema_changes import AddColumn
from engine.system_tables import read_optimized_splits

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _pk(catalog, name, **options):
    opts = {"bucket": "2", **options}
    return catalog.create_table(name, SCHEMA, primary_keys=["id"], options=opts)


def _rows(ids, tag="x"):
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def test_append_files_are_raw_without_a_retraction_filter(catalog):
    t = catalog.create_table("db.a", SCHEMA)
    t.write_arrow(_rows([1, 2]))
    t.write_arrow(_rows([3]))
    splits = t.refresh().plan().splits
    raw, merge = classify_raw(t.store, splits)
    assert merge == [] and len(raw) == 2
    assert all(not f.may_retract and f.path.endswith(".parquet") for f in raw)
    assert sum(f.row_count for f in raw) == 3


def test_primary_key_bucket_with_overlapping_runs_needs_a_merge(catalog):
    t = _pk(catalog, "db.k", **{"write-only": "true"})
    t.write_arrow(_rows(range(10)))
    t.write_arrow(_rows([3, 4], "y"))  # the same keys again: two overlapping runs
    splits = t.refresh().plan().splits
    assert any(needs_merge(t.store, s) for s in splits)
    raw, merge = classify_raw(t.store, splits)
    assert merge and all(not s.raw_convertible for s in merge)


def test_one_level0_run_is_raw_but_filtered_for_retractions(catalog):
    t = _pk(catalog, "db.k0", **{"write-only": "true"})
    t.write_arrow(_rows(range(10)))
    raw, merge = classify_raw(t.store, t.refresh().plan().splits)
    assert merge == [] and raw
    assert all(f.may_retract for f in raw)  # level 0: a 0 delete count is no proof


def test_full_compaction_output_is_trusted_to_hold_no_retractions(catalog):
    t = _pk(catalog, "db.kc", **{"write-only": "true"})
    t.write_arrow(_rows(range(10)))
    t.write_arrow(_rows([3, 4], "y"))
    t.compact(full=True)
    t = t.refresh()
    splits = t.plan().splits
    raw, merge = classify_raw(t.store, splits)
    assert merge == [] and raw and not any(f.may_retract for f in raw)
    # a top-level file that counts deletes is filtered again
    split = splits[0]
    counted = replace(split, files=tuple(replace(f, delete_row_count=1) for f in split.files))
    assert all(f.may_retract for f in raw_files(t.store, counted))
    unknown = replace(split, files=tuple(replace(f, delete_row_count=None) for f in split.files))
    assert all(f.may_retract for f in raw_files(t.store, unknown))


def test_read_optimized_splits_are_raw(catalog):
    t = _pk(catalog, "db.ro", **{"write-only": "true"})
    t.write_arrow(_rows(range(10)))
    t.compact(full=True)
    t.write_arrow(_rows([1], "new"))  # level 0 again: $ro does not see it
    t = t.refresh()
    ro = read_optimized_splits(t.store, list(t.plan().splits))
    raw, merge = classify_raw(t.store, ro, read_optimized=True)
    assert merge == [] and sum(f.row_count for f in raw) == 10


def test_first_row_reads_only_levels_above_zero(catalog):
    t = _pk(catalog, "db.fr", **{"merge-engine": "first-row", "write-only": "true"})
    t.write_arrow(_rows(range(4)))
    splits = t.refresh().plan().splits
    files = [raw_files(t.store, s) for s in splits]
    assert all(f == () for f in files)  # level-0 only: nothing visible yet, nothing to merge


def test_count_layout_tables_never_read_raw(catalog):
    t = _pk(catalog, "db.cl")
    t.write_arrow(_rows([1]))
    schema = replace(t.store.schema, options={**t.store.schema.options, "retractions.enabled": "true"})
    store = t.store.with_schema(schema)
    assert not table_reads_raw(store)
    assert all(needs_merge(store, s) for s in t.plan().splits)
    assert table_reads_raw(t.store)


def test_deletion_vector_splits_read_raw_only_when_no_file_has_a_dv(catalog):
    from engine.meta.deletion_vectors import DeletionFile

    t = _pk(catalog, "db.dv", bucket="1")
    t.write_arrow(_rows([1, 2]))
    t.write_arrow(_rows([2, 3], "y"))  # overlapping runs: a non-DV table would merge
    t.compact(full=True)
    t.write_arrow(_rows([9], "z"))  # a newer file, on whatever level the write leaves it
    schema = replace(t.store.schema, options={**t.store.schema.options, "deletion-vectors.enabled": "true"})
    store = t.store.with_schema(schema)
    assert table_reads_raw(store)
    (split,) = t.refresh().plan().splits
    files = raw_files(store, split)
    assert files is not None  # no DVs: levels above 0 are read as they are, level 0 skipped
    assert len(files) == sum(1 for f in split.files if f.level > 0)
    top = next(f for f in split.files if f.level > 0)
    with_dv = replace(split, deletion_files=(DeletionFile(top.file_name, "index-x", 1, 10, 1),))
    assert raw_files(store, with_dv) is None and needs_merge(store, with_dv)


def test_groups_follow_schema_versions(catalog):
    t = catalog.create_table("db.ev", SCHEMA)
    t.write_arrow(_rows([1]))
    catalog.alter_table("db.ev", [AddColumn("n", "INT")])
    t = catalog.get_table("db.ev")
    t.write_arrow(pa.table({"id": [2], "v": ["b"], "n": [5]}))
    raw, _ = classify_raw(t.store, t.refresh().plan().splits)
    groups = group_raw_files(raw)
    assert [(g.schema_id, len(g.paths), g.row_count) for g in groups] == [(0, 1, 1), (1, 1, 1)]
