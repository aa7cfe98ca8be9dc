"""Append tables with deletion vectors, without a JVM: DV index files rolled at
``deletion-vector.index-file.target-size`` (several per partition, each rewritten only when
touched), compaction picking by ``compaction.delete-ratio-threshold``, and batch
``incremental-between`` reads.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import AppendDeletionCommit
from engine.append_deletions import dv_scan_files
from engine.meta.deletion_vectors import (
    DeletionVector,
    read_deletion_vectors,
    read_index_file,
    write_index_files_rolling,
)
from engine.meta.index_files import (
    DELETION_VECTORS_INDEX,
    IndexFileMeta,
    IndexManifestEntry,
    IndexStore,
    combine,
)
from engine.meta.manifest import FileKind
from engine.scan.incremental import ChangeReader, range_splits, resolve_between

SCHEMA = pa.schema([("k", pa.int64())])


def _table(catalog, bucket="-1", **options):
    opts = {"deletion-vectors.enabled": "true", "bucket": bucket, **options}
    if bucket != "-1":
        opts["bucket-key"] = "k"
    return catalog.create_table("db.dv", SCHEMA, options=opts)


def _write(t, ks):
    t.write_arrow(pa.table({"k": pa.array(ks, pa.int64())}))
    return t.refresh()


def _ks(t, **kw):
    return sorted(t.to_arrow(**kw).column("k").to_pylist())


def _delete(t, predicate) -> int:
    """Delete the rows whose k satisfies ``predicate``, reading each live file minus its DV."""
    import pyarrow.parquet as pq

    snap = t.latest_snapshot()
    found = {}
    for f in dv_scan_files(t.store, snap):
        with t.store.io.open_input(f.path) as fh:
            k = pq.read_table(fh, columns=["k"]).column("k").to_numpy()
        hit = predicate(k)
        hit[f.deleted] = False
        if hit.any():
            found[f.name] = np.flatnonzero(hit)
    c = AppendDeletionCommit(t.store, snap)
    n = c.delete(found)
    c.commit()
    return n


def _dv_entries(t):
    index = IndexStore(t.store.io, t.store.paths)
    return [e for e in index.read_manifest(t.latest_snapshot().index_manifest)
            if e.file.index_type == DELETION_VECTORS_INDEX]


def _dvs_by_file(t):
    index = IndexStore(t.store.io, t.store.paths)
    out = {}
    for e in _dv_entries(t):
        for name, dv in read_deletion_vectors(index, e.file).items():
            assert name not in out, "a data file has DVs in two index files"
            out[name] = dv.positions().tolist()
    return out


# ---- the rolling writer ------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 5000), min_size=1, max_size=40), min_size=0, max_size=12),
    st.integers(1, 400),
)
def test_rolling_keeps_every_dv_once_and_closes_a_file_right_after_it_passes_the_target(dv_lists, target):
    dvs = {f"data-{i}.parquet": DeletionVector.from_positions(np.array(p)) for i, p in enumerate(dv_lists)}
    files = write_index_files_rolling(dvs, target)
    assert (files == []) == (dvs == {})
    back = {}
    for i, (data, metas) in enumerate(files):
        assert metas, "no index file without a DV"
        back.update(read_index_file(data, metas))
        last_start = metas[-1].offset
        assert last_start <= target, "the file passed the target before its last DV"
        if i < len(files) - 1:
            assert len(data) > target, "a file was closed before it passed the target"
    assert list(back) == list(dvs)  # every DV, in order
    assert back == dvs


# ---- the index manifest rule -------------------------------------------------------------------


def _dv_entry(kind, name, bucket=0):
    return IndexManifestEntry(kind, b"", bucket, IndexFileMeta(DELETION_VECTORS_INDEX, name, 10, 1, [], None))


def test_combine_applies_dv_files_by_name_in_unaware_tables_and_by_bucket_otherwise():
    previous = [_dv_entry(FileKind.ADD, n) for n in ("a", "b", "c")]
    # an unaware table: "b" rewritten into two rolled files, "n" added for a file without DV
    changes = [_dv_entry(FileKind.DELETE, "b"), _dv_entry(FileKind.ADD, "b1"), _dv_entry(FileKind.ADD, "b2"),
               _dv_entry(FileKind.ADD, "n")]
    got = combine(previous, changes, dvs_by_file_name=True)
    assert sorted(e.file.file_name for e in got) == ["a", "b1", "b2", "c", "n"]
    # a bucketed table: an ADD replaces every DV file of its bucket (Java's bucketed combiner)
    got = combine(previous + [_dv_entry(FileKind.ADD, "x", bucket=1)], [_dv_entry(FileKind.ADD, "n")])
    assert sorted(e.file.file_name for e in got) == ["n", "x"]


# ---- several DV files per partition -----------------------------------------------------------


def test_dvs_roll_into_several_index_files_and_only_touched_ones_are_rewritten(catalog):
    t = _table(catalog, **{"deletion-vector.index-file.target-size": "1 b"})  # one DV per index file
    for i in range(4):
        t = _write(t, list(range(i * 10, i * 10 + 10)))
    assert _delete(t, lambda k: k % 10 == 3) == 4
    t = t.refresh()
    entries = _dv_entries(t)
    assert len(entries) == 4 and all(e.file.row_count == 1 for e in entries)
    assert {e.bucket for e in entries} == {0}
    assert _ks(t) == [k for k in range(40) if k % 10 != 3]
    before = {e.file.file_name for e in entries}

    # a second DELETE touching one data file rewrites only the index file holding its DV
    assert _delete(t, lambda k: k == 25) == 1
    t = t.refresh()
    after = {e.file.file_name for e in _dv_entries(t)}
    assert len(after) == 4 and len(before - after) == 1 and len(after - before) == 1
    assert _ks(t) == [k for k in range(40) if k % 10 != 3 and k != 25]
    assert sorted(len(v) for v in _dvs_by_file(t).values()) == [1, 1, 1, 2]

    # time travel still reads the earlier set of index files
    first_delete = t.latest_snapshot().id - 1
    assert _ks(t, snapshot_id=first_delete) == [k for k in range(40) if k % 10 != 3]

    # deleting from a file that had no DV adds an index file and keeps the others
    t = _write(t, [40, 41])
    assert _delete(t, lambda k: k == 41) == 1
    t = t.refresh()
    assert {e.file.file_name for e in _dv_entries(t)} > after and len(_dv_entries(t)) == 5

    # a full compaction removes every index file; nothing is left behind
    t.compact(full=True)
    t = t.refresh()
    assert _dv_entries(t) == []
    assert _ks(t) == [k for k in range(41) if k % 10 != 3 and k != 25]


def test_a_larger_target_packs_several_dvs_per_file_and_a_compaction_drops_only_its_files(catalog):
    # files are "big" (target-file-size 1 b), so only the mostly-deleted ones are compacted
    t = _table(catalog, **{"deletion-vector.index-file.target-size": "40 b", "target-file-size": "1 b"})
    for i in range(6):
        t = _write(t, list(range(i * 10, i * 10 + 10)))
    _delete(t, lambda k: k % 10 == 0)  # 10 % of each file
    t = t.refresh()
    entries = _dv_entries(t)
    assert 1 < len(entries) < 6  # rolled, several DVs per file
    assert sum(e.file.row_count for e in entries) == 6
    _delete(t, lambda k: (k >= 10) & (k < 13))  # file 2 reaches 40 %
    t = t.refresh()
    expected = _ks(t)
    t.compact(full=False)  # picks file 2 by compaction.delete-ratio-threshold (0.2)
    t = t.refresh()
    assert _ks(t) == expected
    dvs = _dvs_by_file(t)
    assert len(dvs) == 5 and all(len(v) == 1 for v in dvs.values())
    assert len(dv_scan_files(t.store, t.latest_snapshot())) == 6  # one file rewritten, none merged


def test_bucketed_tables_keep_one_dv_file_per_bucket_whatever_the_target(catalog):
    t = _table(catalog, bucket="2", **{"deletion-vector.index-file.target-size": "1 b"})
    for i in range(3):
        t = _write(t, list(range(i * 10, i * 10 + 10)))
    _delete(t, lambda k: k % 4 == 0)
    t = t.refresh()
    entries = _dv_entries(t)
    assert len({(e.partition, e.bucket) for e in entries}) == len(entries) == 2
    assert _ks(t) == [k for k in range(30) if k % 4]


# ---- compaction.delete-ratio-threshold ---------------------------------------------------------


@pytest.mark.parametrize(("threshold", "compacted"), [(None, True), ("0.5", False)])
def test_a_big_file_is_compacted_once_its_deleted_share_passes_the_threshold(catalog, threshold, compacted):
    opts = {"target-file-size": "1 b"}
    if threshold is not None:
        opts["compaction.delete-ratio-threshold"] = threshold
    t = _write(_table(catalog, **opts), list(range(100)))
    t = _write(t, list(range(100, 200)))
    _delete(t, lambda k: k < 20)  # exactly 20 % of the first file: not more than 0.2
    t = t.refresh()
    assert t.compact(full=False).snapshot_ids == ()
    _delete(t, lambda k: k == 20)  # 21 %
    t = t.refresh()
    result = t.compact(full=False)
    t = t.refresh()
    assert bool(result.snapshot_ids) is compacted
    assert _ks(t) == list(range(21, 200))
    assert (_dvs_by_file(t) == {}) is compacted
    # the other (big, DV-free) file is never rewritten by it
    assert len(dv_scan_files(t.store, t.latest_snapshot())) == 2


def test_bucketed_append_tables_ignore_the_delete_ratio(catalog):
    t = _write(_table(catalog, bucket="1", **{"target-file-size": "1 b"}), list(range(10)))
    _delete(t, lambda k: k < 8)
    t = t.refresh()
    assert t.compact(full=False).snapshot_ids == ()
    assert _dvs_by_file(t.refresh())


# ---- incremental-between ------------------------------------------------------------------------


def _changes(t, between, mode="auto"):
    rng = resolve_between(t.store, between, mode)
    table = ChangeReader(t.store).read_all(range_splits(t.store, rng))
    return sorted((r["rowkind"], r["k"]) for r in table.to_pylist())


def test_incremental_between_returns_the_added_files_whole_as_paimon_does(catalog):
    t = _write(_table(catalog), [1, 2, 3])  # 1
    t = _write(t, [4, 5])  # 2
    _delete(t, lambda k: (k == 2) | (k == 4))  # 3: DVs only
    t = _write(t.refresh(), [6])  # 4
    t.compact(full=True)  # 5: COMPACT
    t = _write(t.refresh(), [7])  # 6
    assert t.latest_snapshot().id == 6
    # rows added in the range and deleted inside it are still returned (files read whole)
    assert _changes(t, "0,6") == [("+I", k) for k in (1, 2, 3, 4, 5, 6, 7)]
    assert _changes(t, "1,6", "delta") == [("+I", k) for k in (4, 5, 6, 7)]
    # a DELETE that only wrote DVs, and a compaction, are no change
    assert _changes(t, "2,3") == []
    assert _changes(t, "4,5") == []
    # the diff mode compares two batch reads, DVs applied
    rng = resolve_between(t.store, "1,6", "diff")
    assert rng.mode == "diff"
    diff = t.new_read_builder().new_incremental("1,6", "diff").diff()
    assert sorted((r["rowkind"], r["k"]) for r in diff.to_pylist()) == [
        ("+I", 5), ("+I", 6), ("+I", 7), ("-D", 2)]
