"""The Spark writer's commit and abort, driven in-process as Spark drives them (no JVM needed).

Spark calls ``write`` per task, then ``commit`` with every task's message, and ``abort`` when
anything fails — including a failure raised by ``commit`` itself, and in another Python
worker process (so nothing may be remembered in memory between the two).
"""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pytest

from engine import JobAbortedError
from engine.errors import StorageError
from engine.table import Table
from sqlext.source.datasource import DyntableWriter, write_task
from sqlext.source.requests import TableTarget, WriteRequest

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _batches(ids):
    return iter([pa.record_batch({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)])


def _data_files(table_path: str) -> set[str]:
    return {f for _d, _s, files in os.walk(table_path) for f in files if f.startswith("data-")}


def _writer(warehouse: str, table: str = "db.t") -> DyntableWriter:
    return DyntableWriter(WriteRequest(TableTarget(warehouse, table)))


def _in_another_worker(writer: DyntableWriter) -> DyntableWriter:
    """Spark runs commit and abort in Python workers: only what pickles survives."""
    return pickle.loads(pickle.dumps(writer))


@pytest.fixture
def pk_table(catalog):
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})


def test_a_failing_compaction_after_commit_does_not_fail_the_job(warehouse, pk_table, monkeypatch):
    def broken(*_a, **_k):
        raise StorageError("compaction blew up")

    monkeypatch.setattr(Table, "compact", broken)
    writer = _writer(warehouse)
    message = writer.write(_batches([1, 2, 3]))
    _in_another_worker(writer).commit([message])  # must not raise: the snapshot is published
    assert sorted(pk_table.refresh().to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_abort_after_a_published_commit_deletes_nothing(warehouse, pk_table):
    writer = _writer(warehouse)
    message = writer.write(_batches([1, 2]))
    _in_another_worker(writer).commit([message])
    files = _data_files(pk_table.path)
    # Spark would call abort if anything after the publish raised (e.g. in a future version).
    _in_another_worker(writer).abort([message])
    assert _data_files(pk_table.path) == files
    assert sorted(pk_table.refresh().to_arrow().column("id").to_pylist()) == [1, 2]


def test_abort_of_an_unpublished_job_deletes_its_files(warehouse, pk_table):
    pk_table.write_arrow(pa.table({"id": [0], "v": ["old"]}, schema=SCHEMA))
    before = _data_files(pk_table.path)
    writer = _writer(warehouse)
    message = writer.write(_batches([1, 2]))
    assert _data_files(pk_table.path) > before
    _in_another_worker(writer).abort([message])
    assert _data_files(pk_table.path) == before


def test_a_task_that_finishes_after_the_abort_deletes_its_own_files(warehouse, pk_table):
    writer = _writer(warehouse)
    before = _data_files(pk_table.path)
    # The job fails and is aborted while this task is still running ...
    _in_another_worker(writer).abort([None])
    # ... then the task finishes writing: it finds the abort marker and removes its files.
    with pytest.raises(JobAbortedError):
        write_task(writer.job.tasks(), _batches([5, 6]))
    assert _data_files(pk_table.path) == before
    assert pk_table.refresh().latest_snapshot() is None
