"""The engine's front door: read, write and commit builders, each step picklable, and the
post-commit hooks the commit carries (run once, after the publish, never failing it)."""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pytest

from engine import JobAbortedError, OverwriteSpec, predicate
from engine.compaction import run_in_process

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("p", pa.string())])


def _rows(ids, p="a"):
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


def _shipped(obj):
    """What a Spark task gets: the object after a pickle round trip."""
    return pickle.loads(pickle.dumps(obj))


@pytest.fixture
def pk(catalog):
    return catalog.create_table("db.k", SCHEMA, partition_keys=["p"], primary_keys=["p", "id"],
                                options={"bucket": "2", "num-sorted-run.compaction-trigger": "2"})


def test_plan_in_the_driver_read_in_tasks_equals_to_arrow(pk):
    pk.write_arrow(_rows([1, 2, 3]))
    pk.write_arrow(_rows([4], p="b"))
    builder = pk.new_read_builder().with_projection(["id", "p"]).with_filter(predicate.equal("p", "a"))
    plan = builder.new_scan().plan()
    read = _shipped(builder.new_read())
    got = pa.concat_tables([t for s in builder.new_scan().task_splits(plan) for t in read.read(_shipped(s))])
    assert sorted(got.column("id").to_pylist()) == [1, 2, 3]
    assert got.schema.names == ["id", "p"]
    expected = pk.to_arrow(columns=["id", "p"], filter=predicate.equal("p", "a"))
    assert sorted(got.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())


def test_time_travel_by_version_prefers_a_tag_of_that_name(pk):
    pk.write_arrow(_rows([1]))  # snapshot 1
    pk.write_arrow(_rows([2]))
    pk.refs.tags.create("1", snapshot_id=2)
    assert pk.new_read_builder().at(version="1").snapshot.id == 2  # the tag named "1"
    assert pk.new_read_builder().at(snapshot_id=1).snapshot.id == 1
    ids = pk.new_read_builder().at(snapshot_id=1).new_read().to_arrow(
        pk.new_read_builder().at(snapshot_id=1).new_scan().plan().splits).column("id").to_pylist()
    assert ids == [1]


def test_task_writes_commit_once_with_the_rows_of_the_messages(pk):
    builder = _shipped(pk.new_write_builder(commit_user="job-user"))
    messages = []
    for task in range(3):  # three tasks, one job: distinct file names and sequence ranges
        write = _shipped(builder).new_task_write("job1", task)
        messages += write.write_all([_rows([task * 10 + 1, task * 10 + 2])])
    names = [f.file_name for m in messages for f in m.new_files]
    assert len(names) == len(set(names)) and all("job1" in n for n in names)
    result = builder.new_commit().commit(messages)
    assert result.rows_added == 6
    assert sorted(pk.refresh().to_arrow().column("id").to_pylist()) == [1, 2, 11, 12, 21, 22]


def test_the_commit_runs_the_compaction_hook_with_its_runner(pk):
    calls = []

    def runner(store, tasks):
        calls.append(len(tasks))
        return run_in_process(store, tasks)

    builder = pk.new_write_builder()
    pk.write_arrow(_rows([1, 2]))
    messages = builder.new_write().write_all([_rows([1, 2])])  # a second sorted run in each bucket
    result = builder.new_commit().with_compaction_runner(runner).commit(messages)
    assert calls, "the post-commit compaction did not run"
    assert len(result.snapshot_ids) == 2 and result.rows_added == 2  # the write's rows, not the compaction's
    kinds = [s.commit_kind.value for s in pk.refresh().snapshots()]
    assert kinds[-2:] == ["APPEND", "COMPACT"]


def test_write_only_commits_never_compact_nor_expire(catalog):
    t = catalog.create_table("db.w", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "write-only": "true",
                                      "num-sorted-run.compaction-trigger": "2",
                                      "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    calls = []
    for i in range(3):
        builder = t.new_write_builder()
        messages = builder.new_write().write_all([_rows([i])])
        builder.new_commit().with_compaction_runner(lambda s, ts: calls.append(ts) or []).commit(messages)
    assert not calls
    assert len(t.refresh().snapshots()) == 3  # no expiration either: a dedicated job does both


def test_a_failing_hook_does_not_fail_the_commit(pk):
    def runner(_store, _tasks):
        raise RuntimeError("executor lost")

    pk.write_arrow(_rows([1]))
    builder = pk.new_write_builder()
    messages = builder.new_write().write_all([_rows([1])])
    result = builder.new_commit().with_compaction_runner(runner).commit(messages)
    assert len(result.snapshot_ids) == 1 and result.rows_added == 1


def test_dynamic_overwrite_through_the_builders(pk):
    pk.write_arrow(_rows([1, 2], p="a"))
    pk.write_arrow(_rows([3], p="b"))
    builder = pk.new_write_builder(OverwriteSpec(dynamic=True))
    result = builder.new_commit().commit(builder.new_write().write_all([_rows([9], p="a")]))
    assert result.rows_added == 1
    got = pk.refresh().to_arrow().sort_by("id")
    pairs = list(zip(got.column("id").to_pylist(), got.column("p").to_pylist(), strict=True))
    assert pairs == [(3, "b"), (9, "a")]


def _job_files(table, job):
    return [f for _d, _s, fs in os.walk(table.path) for f in fs if job in f and f.startswith("data-")]


def test_an_aborted_job_deletes_its_files_and_a_late_task_its_own(pk):
    builder = pk.new_write_builder()
    early = builder.new_task_write("job2", 0, abortable=True).write_all([_rows([1])])
    assert early
    builder.abort_job("job2")  # the job failed: marker first, then every file of the job
    assert _job_files(pk, "job2") == []
    with pytest.raises(JobAbortedError):
        builder.new_task_write("job2", 1, abortable=True).write_all([_rows([2])])
    assert _job_files(pk, "job2") == []
    assert pk.refresh().latest_snapshot() is None


def test_a_replayed_identifier_publishes_nothing(pk):
    builder = pk.new_write_builder(commit_user="stream-1")
    commit = builder.new_commit().with_identifier(7)
    assert commit.commit(builder.new_write().write_all([_rows([1])])).snapshot_ids
    assert commit.is_published(7) and commit.latest_committed_identifier() == 7
    replay = builder.new_write().write_all([_rows([1])])
    assert commit.commit(replay).snapshot_ids == ()
    commit.abort(replay)  # the caller deletes the replay's files
    assert pk.refresh().to_arrow().num_rows == 1
