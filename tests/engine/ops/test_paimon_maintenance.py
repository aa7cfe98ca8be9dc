"""Paimon's further maintenance operations on real local tables: clearing consumers, dropping missing
files, compacting manifests, purging, marking partitions done, rolling back to a watermark."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from engine.errors import InvalidArgumentError, NoSuchSnapshotError
from engine.meta.snapshot import CommitKind
from engine.ops.maintenance_log import read_records
from engine.ops.partition_done import read_success_file
from tests.engine.ops.conftest import content, rows


def procedures(t) -> list[str]:
    return [r.procedure for r in read_records(t.store.io, t.path)]


# -- clear_consumers --------------------------------------------------------------------------------


def test_clear_consumers_by_including_and_excluding_patterns(append_table):
    t = append_table
    for cid in ("myid1", "myid2", "other"):
        t.refs.consumers.reset(cid, 1)
    assert t.refs.consumers.clear("myid.*", "myid2", dry_run=True).ids == ("myid1",)
    assert t.refs.consumers.ids() == ["myid1", "myid2", "other"]  # a dry run changes nothing
    assert t.refs.consumers.clear("myid.*", "myid2").ids == ("myid1",)
    assert t.refs.consumers.ids() == ["myid2", "other"]
    assert t.refs.consumers.clear().ids == ("myid2", "other")  # default: every consumer
    assert t.refs.consumers.ids() == []
    with pytest.raises(InvalidArgumentError, match="regular expression"):
        t.refs.consumers.clear("(")
    assert procedures(t).count("clear_consumers") == 3


def test_clear_consumers_patterns_match_the_whole_id(append_table):
    t = append_table
    t.refs.consumers.reset("abc", 1)
    assert t.refs.consumers.clear("b").ids == ()  # Paimon's Matcher.matches: a partial match is no match
    assert t.refs.consumers.ids() == ["abc"]


# -- remove_unexisting_files --------------------------------------------------------------------------


def test_missing_files_are_listed_then_dropped_in_one_snapshot(append_table):
    t = append_table
    entries = t.store.live_entries(t.latest_snapshot())
    victim = next(e for e in entries if e.file.row_count == 1)  # the file of row 3 (partition b)
    from engine.ops.missing_files import _path

    path = _path(t.store, victim, {})
    os.remove(path)
    head = t.latest_snapshot().id
    dry = t.maintenance.remove_missing_files(dry_run=True)
    assert dry.paths == (path,) and dry.snapshot_id is None and t.latest_snapshot().id == head
    result = t.maintenance.remove_missing_files()
    assert result.paths == (path,) and result.snapshot_id == head + 1
    assert [r[0] for r in content(t)] == [1, 2, 4, 5]  # the table reads again, without the lost rows
    assert t.maintenance.remove_missing_files().paths == ()  # nothing left to drop
    assert procedures(t).count("remove_unexisting_files") == 3


def test_no_missing_files_on_an_empty_table(catalog):
    from tests.engine.ops.conftest import SCHEMA

    t = catalog.create_table("db.empty", SCHEMA)
    assert t.maintenance.remove_missing_files().paths == ()
    assert t.maintenance.remove_missing_files(dry_run=True).paths == ()


# -- compact_manifest ------------------------------------------------------------------------------


def test_compact_manifest_merges_into_a_compact_snapshot_with_the_same_rows(catalog):
    from tests.engine.ops.conftest import SCHEMA

    t = catalog.create_table("db.many", SCHEMA, partition_keys=["p"])
    for i in range(6):
        t.write_arrow(rows([i], p=f"p{i % 2}"))
    before = content(t)
    n_before = len(t.store.manifests.data_manifests(t.latest_snapshot()))
    assert n_before >= 6
    dry = t.maintenance.compact_manifests(dry_run=True)
    assert dry.snapshot_id is None and dry.manifests_before == n_before and t.latest_snapshot().id == 6
    result = t.maintenance.compact_manifests()
    assert result.snapshot_id == 7 and result.manifests_after < n_before
    latest = t.latest_snapshot()
    assert latest.commit_kind is CommitKind.COMPACT
    assert content(t) == before and content(t, snapshot_id=6) == before
    assert len(t.store.manifests.data_manifests(latest)) == result.manifests_after
    t.write_arrow(rows([99]))  # writes continue on the merged manifests
    assert len(content(t)) == len(before) + 1


def test_file_store_commit_compact_manifests_is_public_and_keeps_the_merge_setting(catalog):
    from engine.commit import FileStoreCommit
    from tests.engine.ops.conftest import SCHEMA

    t = catalog.create_table("db.many2", SCHEMA)
    for i in range(4):
        t.write_arrow(rows([i]))
    before = content(t)
    committer = FileStoreCommit(t.store)
    setting = committer.merge_min_count
    sid = committer.compact_manifests()
    assert committer.merge_min_count == setting  # the forced merge is for this call only
    assert sid == 5 and t.latest_snapshot().commit_kind is CommitKind.COMPACT
    assert len(t.store.manifests.data_manifests(t.latest_snapshot())) == 1
    assert content(t) == before


# -- purge_files ------------------------------------------------------------------------------------


def test_purge_files_empties_the_table_and_its_history(append_table):
    t = append_table
    t.refs.tags.create("t1", 1)
    t.refs.branches.create("b1")
    t.refs.consumers.reset("c1", 2)
    dry = t.maintenance.purge_files(dry_run=True)
    assert (dry.branches, dry.tags, dry.consumers, dry.live_files, dry.snapshots) == (
        ("b1",),
        ("t1",),
        ("c1",),
        3,
        3,
    )
    assert any("would delete 1 tag(s): t1" in line for line in dry.lines())
    assert len(content(t)) == 5 and t.refs.tags.names() == ["t1"]  # the dry run changed nothing
    report = t.maintenance.purge_files()
    assert not report.dry_run
    t = t.refresh()
    assert content(t) == [] and t.refs.tags.names() == []
    assert t.refs.branches.names() == [] and t.refs.consumers.ids() == []
    assert [s.id for s in t.snapshots()] == [4]  # only the latest (empty) snapshot is left, as Paimon
    data = [f for d, _, fs in os.walk(t.path) for f in fs if f.endswith(".parquet")]
    assert data == []  # every data file went
    t.write_arrow(rows([7]))  # the table is usable afterwards
    assert [r[0] for r in content(t)] == [7]
    assert "purge_files" in procedures(t) and "remove_orphan_files" in procedures(t)


# -- mark_partition_done ---------------------------------------------------------------------------


def test_mark_partition_done_writes_paimons_success_file(append_table):
    t = append_table
    assert t.maintenance.mark_partitions_done([{"p": "a"}, {"p": "b"}]) == ["p=a", "p=b"]
    first = read_success_file(t.store, {"p": "a"})
    assert set(first) == {"creationTime", "modificationTime"}
    with open(os.path.join(t.path, "p=a", "_SUCCESS")) as f:
        assert json.load(f) == first
    t.maintenance.mark_partitions_done([{"p": "a"}])
    again = read_success_file(t.store, {"p": "a"})
    assert (
        again["creationTime"] == first["creationTime"]
        and again["modificationTime"] >= first["modificationTime"]
    )
    # Orphan cleanup keeps _SUCCESS files (they are not data files).
    t.maintenance.remove_orphan_files(older_than=int(time.time() * 1000), force=True)
    assert read_success_file(t.store, {"p": "a"}) == again
    with pytest.raises(InvalidArgumentError, match="partition column"):
        t.maintenance.mark_partitions_done([{}])
    assert "mark_partition_done" in procedures(t)


def test_done_partition_action_adds_the_dot_done_partition_with_the_success_file(catalog):
    """partition.mark-done-action = success-file,done-partition (Paimon's AddDonePartitionAction: the
    last partition value gets '.done'); the done partition survives orphan cleanup."""
    from engine.ops.partition_done import done_partitions
    from tests.engine.ops.conftest import SCHEMA

    two = pa.schema([*SCHEMA, pa.field("hr", pa.string())])
    t = catalog.create_table("db.done", two, partition_keys=["p", "hr"],
                             options={"partition.mark-done-action": "success-file,done-partition"})
    t.write_arrow(pa.table({"id": [1], "v": ["x"], "p": ["20240713"], "hr": ["02"]}, schema=two))
    assert t.maintenance.mark_partitions_done([{"p": "20240713", "hr": "02"}]) == ["p=20240713/hr=02"]
    assert os.path.isdir(os.path.join(t.path, "p=20240713", "hr=02.done"))
    assert read_success_file(t.store, {"p": "20240713", "hr": "02"}) is not None
    assert done_partitions(t.store) == ["p=20240713/hr=02.done"]
    t.maintenance.mark_partitions_done([{"p": "20240713", "hr": "02"}])  # marking again changes nothing
    assert done_partitions(t.store) == ["p=20240713/hr=02.done"]
    t.maintenance.remove_orphan_files(older_than=int(time.time() * 1000), force=True)
    assert done_partitions(t.store) == ["p=20240713/hr=02.done"]
    assert [r["id"] for r in t.to_arrow().to_pylist()] == [1]  # the marker is no data

    only = catalog.create_table("db.done1", SCHEMA, partition_keys=["p"],
                                options={"partition.mark-done-action": "done-partition"})
    only.maintenance.mark_partitions_done([{"p": "20201202"}])
    assert done_partitions(only.store) == ["p=20201202.done"]
    assert read_success_file(only.store, {"p": "20201202"}) is None  # done-partition alone: no _SUCCESS


# -- rollback_to_watermark -----------------------------------------------------------------------------


def _commit_with_watermark(t, data, watermark):
    writer = t.new_writer()
    writer.write(data)
    return t.new_commit().commit(writer.prepare_commit(), watermark=watermark)


def test_rollback_to_watermark_picks_the_newest_snapshot_at_or_below_it(catalog):
    from tests.engine.ops.conftest import SCHEMA

    t = catalog.create_table("db.wm", SCHEMA)
    with pytest.raises(NoSuchSnapshotError):
        t.refs.rollback_to_watermark(10)
    _commit_with_watermark(t, rows([1]), 1000)
    _commit_with_watermark(t, rows([2]), 2000)
    t.write_arrow(rows([3]))  # no watermark of its own: it carries 2000 forward, as Paimon's commit does
    _commit_with_watermark(t, rows([4]), 3000)
    assert [s.watermark for s in t.snapshots()] == [1000, 2000, 2000, 3000]
    with pytest.raises(NoSuchSnapshotError, match="watermark"):
        t.refs.rollback_to_watermark(999)
    result = t.refs.rollback_to_watermark(2500)
    assert (result.previous_snapshot_id, result.current_snapshot_id) == (4, 5)
    assert [r[0] for r in content(t)] == [1, 2, 3]
    t.refs.rollback_to_watermark(1000)  # an exact match
    assert [r[0] for r in content(t)] == [1]


# -- repair_earliest_snapshot -------------------------------------------------------------------------


def test_repair_earliest_snapshot_after_a_gap(catalog):
    from tests.engine.ops.conftest import SCHEMA

    t = catalog.create_table("db.gap", SCHEMA)
    for i in range(1, 7):
        t.write_arrow(rows([i]))
    os.remove(t.store.paths.snapshot_file(3))  # lost: 1, 2 | 4, 5, 6
    t = catalog.get_table("db.gap")  # a fresh process's view (no cached snapshot 3)
    with pytest.raises(InvalidArgumentError, match="gap"):
        t.maintenance.repair_earliest_snapshot(5)
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        t.maintenance.repair_earliest_snapshot(2)
    with pytest.raises(InvalidArgumentError, match="later than the latest"):
        t.maintenance.repair_earliest_snapshot(7)
    assert t.maintenance.repair_earliest_snapshot(4) == 1
    assert t.snapshot_id_range() == (4, 6)
    with pytest.raises(InvalidArgumentError, match="earlier than the current earliest"):
        t.maintenance.repair_earliest_snapshot(1)
    assert "repair_earliest_snapshot" in procedures(t)
