"""A batch write run from the driver: Spark tasks write, the driver commits.

```
 driver:    WriteJob (picklable) ──► frame.mapInArrow(task) ──► pickled commit messages
 executors: task = WriteJob.tasks().write(task id, attempt, batches)
 driver:    WriteJob.commit(messages): one snapshot, then the post-commit hooks
```
The SQL layer writes through this instead of ``df.write.format("dyntable")``: the commit, its
post-commit hooks (compaction with a Spark runner) and the commit's row count all happen in the
statement's own process, with no Python worker for the commit and no re-opening of the table.
The data source (``sqlext.source.datasource``) keeps the same steps for DataFrame users.

A failed job publishes nothing: ``WriteJob.tasks_failed`` writes the job's marker, then deletes the
job's files; a task still running then finds the marker and deletes its own.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from engine import CommitBuilder, CommitResult, WriteBuilder, WriteJob
from sqlext.source.datasource import write_task

_MESSAGES = "messages"


def job_parallelism(spark: Any) -> int:
    """The parallelism Paimon's Spark writer gives a write job: the larger of Spark's default
    parallelism and ``spark.sql.shuffle.partitions`` (its default number of bucket assigners)."""
    try:
        shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or 0)
    except (TypeError, ValueError):
        shuffle = 0
    return max(1, int(spark.sparkContext.defaultParallelism), shuffle)


def write_job(frame: Any, builder: WriteBuilder, commit: CommitBuilder) -> CommitResult:
    """Write ``frame`` (one task per partition) and commit it; returns the commit's result.
    Dynamic buckets are laid out by as many assigners as the job's parallelism unless the table
    says otherwise (:func:`job_parallelism`, Paimon's default). Cleanup and replays follow
    ``engine.WriteJob``'s rules."""
    job = WriteJob.for_batch(builder.with_job_parallelism(job_parallelism(frame.sparkSession)), commit)
    tasks = job.tasks()

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        messages = write_task(tasks, batches)
        yield pa.record_batch([pa.array([pickle.dumps(messages)], pa.binary())], names=[_MESSAGES])

    try:
        rows = frame.mapInArrow(task, f"{_MESSAGES} binary").collect()
    except BaseException:
        job.tasks_failed()  # nothing was committed
        raise
    return job.commit([m for row in rows for m in pickle.loads(row[0])])
