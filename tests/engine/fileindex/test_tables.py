"""Tables with data-file indexes end to end through the engine (no Spark): writers build them,
scans skip files on them under Paimon's rules, rewrite_file_index adds them, cleanup keeps them."""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest

import engine.read.split_reader as split_reader
from engine import InvalidArgumentError
from engine import predicate as P
from engine.fileindex import FileIndexReader
from engine.schema_changes import DropColumn, RenameColumn, SetOption

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())])
BLOOM = {"file-index.bloom-filter.columns": "id,name", "file-index.bloom-filter.id.items": "100",
         "file-index.bloom-filter.name.items": "100"}
BITMAP = {"file-index.bitmap.columns": "name"}


def batch(ids):
    ids = list(ids)
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "score": [i / 2 for i in ids]}, schema=SCHEMA)


def live_files(table, predicate=None):
    return [f for s in table.new_scan().with_filter(predicate).plan().splits for f in s.files]


@pytest.fixture
def files_read(monkeypatch):
    """Counts the data files a read opens."""
    opened: list[str] = []
    real = split_reader.read_data_file

    def counting(store, path, *a, **kw):
        opened.append(path)
        return real(store, path, *a, **kw)

    monkeypatch.setattr(split_reader, "read_data_file", counting)
    return opened


def written(catalog, name, options, writes=4, **kw):
    t = catalog.create_table(name, SCHEMA, options=options, **kw)
    for k in range(writes):
        t.write_arrow(batch(range(k * 10, k * 10 + 10)))
    return t


@pytest.mark.parametrize("options", [BLOOM, BITMAP, {**BLOOM, **BITMAP}])
def test_equality_and_in_filters_skip_files_and_read_the_same_rows(catalog, options, files_read):
    t = written(catalog, "db.t", options)
    everything = t.to_arrow()
    assert len(live_files(t)) == 4
    cases = [(P.equal("name", "n13"), 1), (P.is_in("name", ["n3", "n35", "zz"]), 2),
             (P.equal("name", "absent"), 0), (P.equal("name", "n13") | P.equal("name", "n35"), 2)]
    for predicate, files in cases:
        files_read.clear()
        got = t.to_arrow(filter=predicate)
        assert len(files_read) == files, predicate
        assert sorted(got.to_pylist(), key=str) == sorted(
            everything.filter(predicate.to_arrow()).to_pylist(), key=str)


def test_embedded_below_the_threshold_separate_file_above(catalog, warehouse):
    small = written(catalog, "db.small", {**BITMAP, "file-index.in-manifest-threshold": "1 kb"}, writes=1)
    (f,) = live_files(small)
    assert f.embedded_file_index is not None and f.extra_files == ()
    reader = FileIndexReader(f.embedded_file_index, {x.name: x for x in small.schema.fields})
    assert set(reader.indexes) == {"name"}
    big = written(catalog, "db.big", {"file-index.bloom-filter.columns": "id"}, writes=1)  # 1,000,000 items
    (g,) = live_files(big)
    assert g.embedded_file_index is None and g.extra_files == (g.file_name + ".index",)
    bucket_dir = os.path.join(big.path, "bucket-0")
    assert os.path.exists(os.path.join(bucket_dir, g.extra_files[0]))
    assert len(live_files(big, P.equal("id", 12345))) == 0


def test_read_enabled_false_leaves_statistics_only(catalog):
    on = written(catalog, "db.on", BITMAP)
    off = written(catalog, "db.off", {**BITMAP, "file-index.read.enabled": "false"})
    # 'n131' lies inside the name range of two files ('n0'..'n9' and 'n10'..'n19'): statistics keep them.
    assert len(live_files(off, P.equal("name", "n131"))) == 2
    assert len(live_files(on, P.equal("name", "n131"))) == 0


def test_compaction_outputs_carry_indexes(catalog):
    t = written(catalog, "db.t", {**BITMAP, "bucket": "1", "bucket-key": "id"})
    t.compact(full=True)
    files = live_files(t)
    assert len(files) == 1 and files[0].embedded_file_index is not None
    assert len(live_files(t, P.equal("name", "n5"))) == 1 and len(live_files(t, P.equal("name", "x"))) == 0


def test_primary_key_tables_follow_paimon_rules(catalog):
    opts = {**BITMAP, "bucket": "1"}
    t = written(catalog, "db.pk", opts, writes=3, primary_keys=["id"])
    # Three overlapping level-0 files: the bucket is read whole when any file may match ...
    assert len(live_files(t, P.equal("name", "n13"))) == 3
    # ... and dropped when none can.
    assert len(live_files(t, P.equal("name", "absent"))) == 0
    # An update moves n13 to a newer file: the filter still finds the current row only.
    t.write_arrow(pa.table({"id": [13], "name": ["changed"], "score": [0.0]}, schema=SCHEMA))
    assert t.to_arrow(filter=P.equal("name", "n13")).num_rows == 0
    assert t.to_arrow(filter=P.equal("name", "changed")).column("id").to_pylist() == [13]
    t.compact(full=True)  # one sorted run: files are tested one by one
    assert len(live_files(t)) == 1 and len(live_files(t, P.equal("name", "n13"))) == 0


def test_partial_update_buckets_are_never_dropped_whole(catalog):
    t = written(catalog, "db.pu", {**BITMAP, "bucket": "1", "merge-engine": "partial-update"}, writes=2,
                primary_keys=["id"])
    assert len(live_files(t, P.equal("name", "absent"))) == 2


def test_options_are_checked_against_the_schema(catalog):
    cases = [
        ({"file-index.bloom-filter.columns": "nope"}, "not a column"),
        ({"file-index.bitmap.columns": "score"}, None),  # DOUBLE is fine
        ({"file-index.bloom-filter.columns": "id,"}, "empty column"),
        ({"file-index.bloom-filter.columns": "m[k]"}, "map entries"),
        ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.name.fpp": "0.1"},
         "does not list"),
        ({"file-index.bloom-filter.id.fpp": "1.5"}, "between 0 and 1"),
        ({"file-index.bsi.columns": "id"}, "not supported"),
    ]
    for i, (options, words) in enumerate(cases):
        if words is None:
            catalog.create_table(f"db.ok{i}", SCHEMA, options=options)
            continue
        with pytest.raises(InvalidArgumentError, match=words):
            catalog.create_table(f"db.bad{i}", SCHEMA, options=options)
    flags = pa.schema([("id", pa.int64()), ("flag", pa.bool_())])
    with pytest.raises(InvalidArgumentError, match="BOOLEAN"):
        catalog.create_table("db.flags", flags, options={"file-index.bitmap.columns": "flag"})
    t = catalog.create_table("db.alter", SCHEMA)
    with pytest.raises(InvalidArgumentError, match="not a column"):
        catalog.alter_table("db.alter", [SetOption("file-index.bitmap.columns", "nope")])
    assert "file-index.bitmap.columns" not in t.refresh().options


def test_rewrite_file_index_indexes_existing_files(catalog):
    t = written(catalog, "db.t", {}, writes=3)
    assert t.maintenance.rewrite_file_index().written_indexes == 0  # nothing configured, nothing to do
    first = t.latest_snapshot().id
    assert t.latest_snapshot().id == first
    catalog.alter_table("db.t", [SetOption("file-index.bitmap.columns", "name")])
    t = catalog.get_table("db.t")
    dry = t.maintenance.rewrite_file_index(dry_run=True)
    assert (dry.written_partitions, dry.written_indexes, dry.snapshot_id) == (1, 3, None)
    assert t.latest_snapshot().id == first
    done = t.maintenance.rewrite_file_index()
    assert (done.written_partitions, done.written_indexes) == (1, 3)
    assert t.latest_snapshot().commit_kind.name == "COMPACT"
    assert all(f.embedded_file_index is not None for f in live_files(t))
    assert len(live_files(t, P.equal("name", "n12"))) == 1
    assert t.to_arrow().num_rows == 30
    assert t.maintenance.rewrite_file_index().written_indexes == 0  # the same indexes again: left alone


def test_rewrite_file_index_replaces_separate_files_and_cleanup_follows(catalog):
    t = written(catalog, "db.t", {}, writes=2)
    catalog.alter_table("db.t", [SetOption("file-index.bloom-filter.columns", "id")])
    t = catalog.get_table("db.t")
    t.maintenance.rewrite_file_index()
    first = {f.file_name: f.extra_files for f in live_files(t)}
    assert all(x == (n + ".index",) for n, x in first.items())
    t.maintenance.rewrite_file_index()  # a separate index is never overwritten: the next one is numbered
    second = {f.file_name: f.extra_files for f in live_files(t)}
    assert all(x == (n + "-1.index",) for n, x in second.items())
    bucket_dir = os.path.join(t.path, "bucket-0")
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    left = set(os.listdir(bucket_dir))
    for name, extras in second.items():
        assert name in left and extras[0] in left  # live: kept with their data file
        assert first[name][0] not in left  # the replaced index died with its snapshots
    orphan = os.path.join(bucket_dir, "data-never-committed-0.parquet.index")
    with open(orphan, "wb") as out:
        out.write(b"x")
    old = time.time() - 3 * 86400
    for name in os.listdir(bucket_dir):
        os.utime(os.path.join(bucket_dir, name), (old, old))
    t.maintenance.remove_orphan_files(older_than=dt.timedelta(days=1))
    assert not os.path.exists(orphan)
    assert set(os.listdir(bucket_dir)) == {*second, *(x[0] for x in second.values())}
    assert t.to_arrow(filter=P.equal("id", 3)).num_rows == 1


def test_renamed_columns_keep_their_index(catalog):
    t = written(catalog, "db.t", BITMAP, writes=2)
    catalog.alter_table("db.t", [RenameColumn("name", "label"),
                                 SetOption("file-index.bitmap.columns", "label")])
    t = catalog.get_table("db.t")
    assert len(live_files(t, P.equal("label", "n3"))) == 1
    assert t.to_arrow(filter=P.equal("label", "n3")).num_rows == 1


def test_null_tests_use_the_bitmap(catalog):
    t = catalog.create_table("db.t", SCHEMA, options=BITMAP)
    t.write_arrow(batch(range(3)))
    t.write_arrow(pa.table({"id": [7], "name": pa.array([None], pa.string()), "score": [1.0]}, schema=SCHEMA))
    assert len(live_files(t, P.is_null("name"))) == 1
    assert t.to_arrow(filter=P.is_null("name")).column("id").to_pylist() == [7]
    assert len(live_files(t, P.is_not_null("name"))) == 1


def test_aborted_and_uncommitted_writes_leave_no_index_files(catalog):
    from engine.commit_messages import delete_uncommitted

    options = {"file-index.bloom-filter.columns": "name", "bucket": "1"}
    # A tiny buffer and target size: each write goes to storage and finishes a file (with its index).
    tiny = {"bucket-key": "id", "write-buffer-size": "1 b", "target-file-size": "1 b"}
    append = catalog.create_table("db.a", SCHEMA, options={**options, **tiny})
    writer = append.new_writer()
    writer.write(batch(range(5)))
    writer.write(batch(range(5, 9)))
    assert any(n.endswith(".index") for n in os.listdir(os.path.join(append.path, "bucket-0")))
    writer.abort()
    assert os.listdir(os.path.join(append.path, "bucket-0")) == []
    keyed = catalog.create_table("db.k", SCHEMA, primary_keys=["id"], options=options)
    writer = keyed.new_writer()
    writer.write(batch(range(5)))
    messages = writer.prepare_commit()  # the files now belong to the messages ...
    bucket_dir = os.path.join(keyed.path, "bucket-0")
    assert any(n.endswith(".index") for n in os.listdir(bucket_dir))
    delete_uncommitted(keyed.store, messages)  # ... and a failed commit deletes them with their index
    assert os.listdir(bucket_dir) == []


def test_renaming_or_dropping_an_indexed_column_updates_the_options(catalog):
    options = {"file-index.bloom-filter.columns": "id,name", "file-index.bloom-filter.name.items": "64",
               "file-index.bitmap.columns": "name"}
    t = written(catalog, "db.t", options, writes=2)
    t = catalog.alter_table("db.t", [RenameColumn("name", "label")])
    assert {k: v for k, v in t.options.items() if k.startswith("file-index")} == {
        "file-index.bloom-filter.columns": "id,label", "file-index.bloom-filter.label.items": "64",
        "file-index.bitmap.columns": "label"}
    assert len(live_files(t, P.equal("label", "n3"))) == 1  # the old files' indexes still serve
    t = catalog.alter_table("db.t", [DropColumn("label")])
    assert {k: v for k, v in t.options.items() if k.startswith("file-index")} == {
        "file-index.bloom-filter.columns": "id"}
    t.write_arrow(pa.table({"id": [100], "score": [1.0]}))
    assert t.to_arrow(filter=P.equal("id", 100)).num_rows == 1


def test_a_lost_index_file_costs_skipping_not_the_read(catalog):
    t = written(catalog, "db.t", {"file-index.bloom-filter.columns": "name"}, writes=3)
    files = live_files(t)
    assert len(live_files(t, P.equal("name", "n13"))) == 1
    os.remove(os.path.join(t.path, "bucket-0", files[0].extra_files[0]))
    kept = live_files(t, P.equal("name", "n13"))
    assert files[0].file_name in {f.file_name for f in kept}  # unknown now: read
    assert t.to_arrow(filter=P.equal("name", "n13")).column("id").to_pylist() == [13]


def test_rewrite_file_index_on_a_primary_key_table(catalog):
    t = written(catalog, "db.pk", {"bucket": "1"}, writes=2, primary_keys=["id"])
    t.compact(full=True)
    t = catalog.alter_table("db.pk", [SetOption("file-index.bitmap.columns", "name")])
    assert len(live_files(t, P.equal("name", "absent"))) == 1
    assert t.maintenance.rewrite_file_index().written_indexes == 1
    assert len(live_files(t, P.equal("name", "absent"))) == 0
    assert t.to_arrow(filter=P.equal("name", "n7")).column("id").to_pylist() == [7]
