"""A write job's lifecycle without a JVM (``engine.WriteJob``): the tasks, the commit, and the one
rule for cleanup — a failed or replayed commit and an abort before publishing delete the job's
files; an abort after publishing (or when it cannot tell) deletes nothing; a task that finishes
after its batch job was aborted deletes its own files. Batch jobs and micro-batches alike."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from engine import CommitStateUnknownError, JobAbortedError, WriteJob
from engine.builders.commit import CommitBuilder
from engine.errors import StorageError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _batches(ids):
    return [pa.record_batch({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)]


def _files(table) -> set[str]:
    return {f for _d, _s, fs in os.walk(table.path) for f in fs if f.startswith("data-")}


def _ids(table) -> list[int]:
    return sorted(table.refresh().to_arrow().column("id").to_pylist())


@pytest.fixture
def table(catalog):
    options = {"bucket": "2", "write-only": "true"}
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options=options)


def _batch_job(table, user="u", identifier=None) -> WriteJob:
    builder = table.new_write_builder(commit_user=user)
    return WriteJob.for_batch(builder, builder.new_commit().with_identifier(identifier))


def test_tasks_then_one_commit(table):
    job = _batch_job(table)
    messages = job.write_task(0, 0, _batches([1, 2])) + job.write_task(1, 0, _batches([3]))
    result = job.commit(messages)
    assert len(result.snapshot_ids) == 1 and _ids(table) == [1, 2, 3]
    job.abort(messages)  # Spark may still call abort: the published files stay
    assert _ids(table) == [1, 2, 3]


def test_a_failed_commit_deletes_every_file_of_the_job(table, monkeypatch):
    job = _batch_job(table)
    messages = job.write_task(0, 0, _batches([1]))
    job.write_task(1, 0, _batches([2]))  # a task whose messages never reached the commit
    monkeypatch.setattr(CommitBuilder, "commit", lambda *_a: (_ for _ in ()).throw(StorageError("disk")))
    with pytest.raises(StorageError):
        job.commit(messages)
    assert _files(table) == set()


def test_an_unknown_commit_outcome_keeps_the_files(table, monkeypatch):
    job = _batch_job(table)
    messages = job.write_task(0, 0, _batches([1]))
    monkeypatch.setattr(CommitBuilder, "commit",
                        lambda *_a: (_ for _ in ()).throw(CommitStateUnknownError("lost reply")))
    with pytest.raises(CommitStateUnknownError):
        job.commit(messages)
    assert len(_files(table)) == 1


def test_a_replayed_identifier_commits_nothing_and_deletes_the_attempt(table):
    first = _batch_job(table, identifier=7)
    first.commit(first.write_task(0, 0, _batches([1])))
    before = _files(table)
    again = _batch_job(table, identifier=7)
    result = again.commit(again.write_task(0, 0, _batches([1])))
    assert result.snapshot_ids == () and _files(table) == before and _ids(table) == [1]


def test_an_abort_before_publishing_deletes_and_stops_late_tasks(table):
    job = _batch_job(table)
    messages = job.write_task(0, 0, _batches([1]))
    job.abort(messages)
    assert _files(table) == set()
    with pytest.raises(JobAbortedError):  # a task still running when the job was aborted
        job.write_task(1, 0, _batches([2]))
    assert _files(table) == set() and table.refresh().latest_snapshot() is None


def test_tasks_failed_deletes_what_finished_tasks_wrote(table):
    job = _batch_job(table)
    job.write_task(0, 0, _batches([1, 2]))
    job.tasks_failed()
    assert _files(table) == set()


def test_an_abort_that_cannot_read_the_table_deletes_nothing(table, monkeypatch):
    job = _batch_job(table)
    messages = job.write_task(0, 0, _batches([1]))
    monkeypatch.setattr(CommitBuilder, "is_published", lambda *_a, **_k: (_ for _ in ()).throw(OSError("x")))
    job.abort(messages)
    assert len(_files(table)) == 1


def test_micro_batches_replay_and_abort_by_their_messages(table):
    builder = table.new_write_builder(commit_user="stream")

    def micro_batch(ids, batch_id, commit=True):
        job = WriteJob.for_stream(builder)  # Spark makes the sink's writer afresh for each batch
        messages = job.write_task(0, 0, _batches(ids))
        return job, messages, (job.commit(messages, batch_id) if commit else None)

    micro_batch([1], 0)
    job, second, _ = micro_batch([2], 1)
    kept = _files(table)
    _, _, replayed = micro_batch([2], 1)  # batch 1 again, after a restart
    assert replayed.snapshot_ids == () and _files(table) == kept
    job.abort(second, 1)  # published: nothing goes
    job, third, _ = micro_batch([3], 2, commit=False)
    job.abort(third, 2)  # never published: only its own files go, not the earlier batches'
    assert _files(table) == kept and _ids(table) == [1, 2]
