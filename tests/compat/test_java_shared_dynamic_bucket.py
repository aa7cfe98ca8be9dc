"""Java Paimon 0.9 reads and continues dynamic-bucket tables written by independent tasks of one
commit (``engine.write.shared_assignment``, what ``df.write.format("dyntable")`` runs): the rows
are ours, no key is in two buckets, and Java's writer keeps existing keys where the unioned HASH
files put them."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from tests.compat.java_oracle import JavaPaimon, arrow_rows

pytestmark = pytest.mark.java

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])


def _kv(ids, v, dt="a") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "dt": [dt] * len(ids)}, schema=KV)


def _tasks_write(t, task_rows, job_parallelism=None):
    builder = t.new_write_builder().for_independent_tasks().with_job_parallelism(job_parallelism)
    job = str(uuid.uuid4())
    messages = [m for i, rows in enumerate(task_rows)
                for m in builder.new_task_write(job, i).write_all([rows])]
    builder.new_commit().commit(messages)


def _placement(t) -> dict[tuple[str, int], int]:
    out = {}
    reader = t.new_read(["id", "dt"])
    for split in t.plan().splits:
        for part in reader.read(split):
            for r in part.to_pylist():
                assert (r["dt"], r["id"]) not in out, f"key {r} is in two buckets"
                out[(r["dt"], r["id"])] = split.bucket
    return out


@pytest.mark.parametrize(("cross", "job_parallelism"), [(False, None), (True, None), (False, 4)])
def test_java_reads_a_table_written_by_independent_tasks(java: JavaPaimon, catalog, cross, job_parallelism):
    """``job_parallelism``: a Spark job's default number of assigners (4 lanes, each opening its
    own buckets), as ``df.write`` and SQL writes lay a table out."""
    t = catalog.create_table("db.shared", KV, partition_keys=["dt"],
                             primary_keys=["id"] if cross else ["dt", "id"],
                             options={"dynamic-bucket.target-row-num": "10"})
    for round_ in range(2):
        _tasks_write(t, [_kv(list(range(8 * i, 8 * i + 16)), f"r{round_}t{i}-") for i in range(3)]
                     + [_kv(list(range(100 + round_ * 5, 110 + round_ * 5)), f"r{round_}b-", "b")],
                     job_parallelism)
        t = t.refresh()
        _placement(t)
        ours = arrow_rows(t.to_arrow())
        theirs = java.read("db.shared")
        assert theirs == ours
        keys = [(r[0], r[2]) if not cross else r[0] for r in theirs]
        assert len(keys) == len(set(keys))
    if job_parallelism:
        # each lane opened a bucket of its own in partition a (one lane would have opened one)
        assert {b for (dt, _), b in _placement(t).items() if dt == "a"} == {0, 1, 2, 3}
    if cross:
        return  # Java's cross-partition writer needs RocksDB, absent from the oracle's class path
    placed = _placement(t)
    java.write("db.shared", [[i, f"java-{i}", "a"] for i in range(40)])
    after = _placement(t.refresh())
    assert {k: b for k, b in after.items() if k in placed} == placed
    assert java.read("db.shared") == arrow_rows(t.refresh().to_arrow())
