"""Append tables with deletion vectors, without a JVM: marking rows, one snapshot per change,
merging with earlier DVs, the index layout of both bucket modes, conflicts, and compaction
applying and dropping DVs (``engine.append_deletions``, ``engine.write.append_compaction``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import (
    AppendDeletionCommit,
    CommitConflictError,
    InvalidArgumentError,
    group_positions,
)
from engine.append_deletions import dv_scan_files
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexStore
from engine.meta.snapshot import CommitKind

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string())])


def _table(catalog, name="db.dv", bucket="-1", partitioned=False, **options):
    opts = {"deletion-vectors.enabled": "true", "bucket": bucket, **options}
    if bucket != "-1":
        opts["bucket-key"] = "k"
    return catalog.create_table(name, SCHEMA, partition_keys=["p"] if partitioned else (), options=opts)


def _write(t, ks, p="a"):
    t.write_arrow(pa.table({"k": pa.array(ks, pa.int64()), "p": [p] * len(ks)}))
    return t.refresh()


def _ks(t, **kw):
    return sorted(t.to_arrow(**kw).column("k").to_pylist())


def _delete_where(t, predicate) -> int:
    """Delete the rows whose k satisfies ``predicate`` (a numpy function), as the SQL path does."""
    snap = t.latest_snapshot()
    found: dict[str, np.ndarray] = {}
    for f in dv_scan_files(t.store, snap):
        rows = t.store.io.read_bytes(f.path)
        import io

        import pyarrow.parquet as pq

        k = pq.read_table(io.BytesIO(rows), columns=["k"]).column("k").to_numpy()
        pos = np.flatnonzero(predicate(k))
        if pos.size:
            found[f.name] = pos
    c = AppendDeletionCommit(t.store, snap)
    n = c.delete(found)
    c.commit()
    return n


def _dv_entries(t):
    snap = t.latest_snapshot()
    return [e for e in IndexStore(t.store.io, t.store.paths).read_manifest(snap.index_manifest)
            if e.file.index_type == DELETION_VECTORS_INDEX]


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_delete_marks_rows_in_one_snapshot_and_merges_with_earlier_dvs(catalog, bucket):
    t = _table(catalog, bucket=bucket)
    t = _write(t, list(range(10)))
    t = _write(t, list(range(10, 20)))
    files_before = {f.name for f in dv_scan_files(t.store, t.latest_snapshot())}
    first = t.latest_snapshot().id
    assert _delete_where(t, lambda k: k % 3 == 0) == 7
    t = t.refresh()
    assert t.latest_snapshot().id == first + 1
    assert t.latest_snapshot().commit_kind is CommitKind.OVERWRITE  # Paimon: a DML that marks rows
    assert _ks(t) == [k for k in range(20) if k % 3]
    # no data file was rewritten
    assert {f.name for f in dv_scan_files(t.store, t.latest_snapshot())} == files_before
    # rows deleted already are not counted again; the DVs are merged
    assert _delete_where(t, lambda k: k % 2 == 0) == 6
    t = t.refresh()
    assert _ks(t) == [k for k in range(20) if k % 3 and k % 2]
    # one DV file per (partition, bucket) slot, every file's DV in it
    entries = _dv_entries(t)
    assert len({e.slot for e in entries}) == len(entries)
    assert sum(e.file.row_count for e in entries) == len(files_before)
    # time travel sees each snapshot's DVs
    assert _ks(t, snapshot_id=first) == list(range(20))
    assert _ks(t, snapshot_id=first + 1) == [k for k in range(20) if k % 3]


def test_inserts_into_a_dv_table_keep_the_dvs_of_older_files(catalog):
    t = _write(_table(catalog), [1, 2, 3])
    _delete_where(t, lambda k: k == 2)
    t = _write(t.refresh(), [4, 5])
    assert _ks(t) == [1, 3, 4, 5]


def test_compaction_applies_and_drops_the_dvs(catalog):
    t = _table(catalog, partitioned=True)
    for i in range(3):
        t = _write(t, [i * 10 + j for j in range(5)], p="a")
    t = _write(t, [100, 101], p="b")
    _delete_where(t, lambda k: (k % 2 == 1) & (k < 100))
    t = t.refresh()
    expected = _ks(t)
    assert _dv_entries(t)
    t.compact(full=True)
    t = t.refresh()
    assert t.latest_snapshot().commit_kind is CommitKind.COMPACT
    assert _ks(t) == expected
    assert _dv_entries(t) == []  # every file with a DV was rewritten, every DV dropped
    files = dv_scan_files(t.store, t.latest_snapshot())
    assert sum(f.row_count for f in files) == len(expected)


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_compaction_of_one_big_file_with_a_dv_rewrites_it_when_full(catalog, bucket):
    # "1 b": every file counts as big; 10 % deleted stays under compaction.delete-ratio-threshold
    t = _write(_table(catalog, bucket=bucket, **{"target-file-size": "1 b"}), list(range(50)))
    _delete_where(t, lambda k: k < 5)
    t = t.refresh()
    t.compact(full=False)  # not due: one big file, few of its rows deleted
    assert _dv_entries(t.refresh())
    t.compact(full=True)
    t = t.refresh()
    assert _dv_entries(t) == [] and _ks(t) == list(range(5, 50))


def test_a_delete_based_on_an_older_snapshot_conflicts_with_a_concurrent_delete_of_the_same_slot(catalog):
    t = _write(_table(catalog), list(range(10)))
    snap = t.latest_snapshot()
    (f,) = dv_scan_files(t.store, snap)
    a = AppendDeletionCommit(t.store, snap)
    a.delete({f.name: np.array([1])})
    b = AppendDeletionCommit(t.store, snap)
    b.delete({f.name: np.array([2])})
    a.commit()
    with pytest.raises(CommitConflictError, match="deletion vectors of the same files"):
        b.commit()
    assert _ks(t.refresh()) == [0, *range(2, 10)]
    # an unrelated append meanwhile is no conflict
    snap = t.refresh().latest_snapshot()
    c = AppendDeletionCommit(t.store, snap)
    c.delete({f.name: np.array([3])})
    _write(t, [99])
    c.commit()
    assert _ks(t.refresh()) == [0, 2, *range(4, 10), 99]


def test_a_compaction_that_missed_a_delete_does_not_bring_the_rows_back(catalog):
    t = _table(catalog)
    for i in range(3):
        t = _write(t, [i * 10, i * 10 + 1])
    from engine.compaction import _commit, plan, run_in_process

    tasks = plan(t.store, full=True)
    messages = run_in_process(t.store, tasks)
    _delete_where(t, lambda k: k == 10)
    with pytest.raises(CommitConflictError):
        _commit(t.refresh().store, tasks, list(messages))
    assert _ks(t.refresh()) == [0, 1, 11, 20, 21]
    t.refresh().compact(full=True)  # a fresh compaction sees the delete
    assert _ks(t.refresh()) == [0, 1, 11, 20, 21]


def test_positions_outside_the_file_and_unknown_files_are_refused(catalog):
    t = _write(_table(catalog), [1, 2])
    snap = t.latest_snapshot()
    (f,) = dv_scan_files(t.store, snap)
    c = AppendDeletionCommit(t.store, snap)
    with pytest.raises(InvalidArgumentError, match="outside data file"):
        c.delete({f.name: np.array([2])})
    with pytest.raises(CommitConflictError, match="not live"):
        c.delete({"data-nope.parquet": np.array([0])})


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["f1", "f2", "f3"]), st.integers(0, 1000)), max_size=60))
def test_group_positions_matches_a_dict_of_lists(pairs):
    got = group_positions(pa.array([p[0] for p in pairs], pa.string()),
                          pa.array([p[1] for p in pairs], pa.int64()))
    want: dict[str, list[int]] = {}
    for name, pos in pairs:
        want.setdefault(name, []).append(pos)
    assert {k: v.tolist() for k, v in got.items()} == want


def test_streaming_changes_are_the_added_files_and_a_dv_only_delete_adds_none(catalog):
    """Paimon's streaming read of an append DV table: each snapshot's new files, read whole;
    a DELETE that wrote only DVs is no change. A batch range read returns the same."""
    from engine.scan.incremental import ChangeReader, IncrementalRange, change_splits, range_splits

    t = _write(_table(catalog), [1, 2, 3])
    _delete_where(t, lambda k: k == 2)
    t = _write(t.refresh(), [4])
    reader = ChangeReader(t.store)
    per_snapshot = []
    for snap in t.snapshots():
        rows = reader.read_all(change_splits(t.store, snap)).to_pylist()
        per_snapshot.append(sorted((r["rowkind"], r["k"]) for r in rows))
    assert per_snapshot == [[("+I", 1), ("+I", 2), ("+I", 3)], [], [("+I", 4)]]
    whole = reader.read_all(range_splits(t.store, IncrementalRange(None, t.latest_snapshot(), "delta", 0)))
    assert sorted((r["rowkind"], r["k"]) for r in whole.to_pylist()) == [
        ("+I", 1), ("+I", 2), ("+I", 3), ("+I", 4)]


def test_overwrite_and_truncate_drop_the_dvs_of_the_replaced_files(catalog):
    t = _table(catalog, partitioned=True)
    t = _write(t, [1, 2, 3], p="a")
    t = _write(t, [4, 5], p="b")
    _delete_where(t, lambda k: (k == 2) | (k == 4))
    t = t.refresh()
    assert len(_dv_entries(t)) == 2
    t.write_arrow(pa.table({"k": pa.array([9], pa.int64()), "p": ["a"]}), overwrite={"p": "a"})
    t = t.refresh()
    assert _ks(t) == [5, 9]
    assert [e.partition for e in _dv_entries(t)] == [next(
        f for f in t.new_scan().plan().splits if f.partition_values == ("b",)).partition]
    t.truncate()
    t = t.refresh()
    assert _ks(t) == [] and _dv_entries(t) == []
