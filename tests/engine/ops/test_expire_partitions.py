"""engine.ops.expire_partitions: Paimon's partition expiration, mark-delete only, automatic after commits."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from engine.commit import FileStoreCommit
from engine.errors import CommitConflictError, InvalidArgumentError
from engine.ops import expire_partitions as ep
from engine.ops.maintenance_log import read_records
from engine.ops.reachability import reachable_files
from engine.schema_changes import SetOption

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string()), ("hr", pa.string())])
NOW = dt.datetime(2024, 6, 10, 12, 0, 0)


def data(parts: list[tuple[str, str]], v: str = "x") -> pa.Table:
    return pa.table(
        {
            "id": list(range(len(parts))),
            "v": [v] * len(parts),
            "dt": [p[0] for p in parts],
            "hr": [p[1] for p in parts],
        },
        schema=SCHEMA,
    )


def partitions(t) -> list[tuple[str, str]]:
    got = t.to_arrow()
    return sorted(set(zip(got.column("dt").to_pylist(), got.column("hr").to_pylist(), strict=True)))


@pytest.mark.parametrize(
    ("text", "formatter", "expected"),
    [
        ("2024-06-01", None, dt.datetime(2024, 6, 1)),
        ("2024-6-1 7:05:09", None, dt.datetime(2024, 6, 1, 7, 5, 9)),
        ("2024-06-01 07:05:09.25", None, dt.datetime(2024, 6, 1, 7, 5, 9, 250000)),
        ("20240601", "yyyyMMdd", dt.datetime(2024, 6, 1)),
        ("20240601 13", "yyyyMMdd HH", dt.datetime(2024, 6, 1, 13)),
        ("2024/06/01T13:45", "yyyy/MM/dd'T'HH:mm", dt.datetime(2024, 6, 1, 13, 45)),
    ],
)
def test_partition_times(text, formatter, expected):
    assert ep.parse_partition_time(text, formatter) == expected


def test_bad_times_and_patterns():
    for text, formatter in (("June", None), ("2024-06", None), ("2024-06-01", "yyyyMMdd")):
        with pytest.raises(ValueError):
            ep.parse_partition_time(text, formatter)
    with pytest.raises(InvalidArgumentError, match="letter"):
        ep.parse_partition_time("x", "yyyy-QQ")
    # the longest column name wins where names share a prefix ($dt vs $dt1)
    assert ep.time_text(["dt", "dt1"], ["a", "b"], "$dt1/$dt") == "b/a"
    assert ep.time_text(["dt", "hr"], ["2024-06-01", "07"], None) == "2024-06-01"


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_expire_with_a_pattern_and_formatter(catalog, primary_key):
    t = catalog.create_table(
        "db.ev",
        SCHEMA,
        partition_keys=["dt", "hr"],
        primary_keys=["id", "dt", "hr"] if primary_key else (),
        options={
            "bucket": "1",
            "bucket-key": "id",
            "partition.timestamp-formatter": "yyyyMMdd HH",
            "partition.timestamp-pattern": "$dt $hr",
        },
    )
    t.write_arrow(
        data([("20240601", "01"), ("20240601", "02"), ("20240609", "23"), ("20240610", "11"), ("bad", "00")])
    )
    t.refs.tags.create("before")
    before_files = reachable_files(t.store.io, t.path).paths()
    dry = ep.expire_partitions(t.store, expiration_time="1 d", dry_run=True, now=NOW)
    assert dry.texts() == ["dt=20240601, hr=01", "dt=20240601, hr=02"] and dry.snapshot_id is None
    assert len(partitions(t)) == 5
    done = ep.expire_partitions(t.store, expiration_time="1 d", now=NOW, max_expires=1)
    assert done.texts() == ["dt=20240601, hr=01"] and done.files == 1
    # Every time form means the same bound (engine.time_bound): an int is an instant (epoch ms), as
    # for the other procedures, not a duration; a timedelta is an age.
    day_before = int((NOW - dt.timedelta(days=1)).timestamp() * 1000)
    assert ep.expire_partitions(t.store, expiration_time=day_before, now=NOW, dry_run=True).texts() == [
        "dt=20240601, hr=02"
    ]
    done = ep.expire_partitions(t.store, expiration_time=dt.timedelta(days=1), now=NOW)
    assert done.texts() == ["dt=20240601, hr=02"]
    # an unparsable partition ("bad") never expires; 2024-06-09 23:00 is less than a day before NOW
    assert partitions(t) == [("20240609", "23"), ("20240610", "11"), ("bad", "00")]
    # mark-delete: every file is still there for the tag and the older snapshots
    assert all(os.path.exists(p) for p in before_files)
    assert len(t.to_arrow(tag="before")) == 5
    assert ep.expire_partitions(t.store, expiration_time="1 d", now=NOW).partitions == ()


def test_defaults_come_from_the_options_and_update_time(catalog):
    t = catalog.create_table(
        "db.opt", SCHEMA, partition_keys=["dt"], options={"partition.expiration-time": "7 d"}
    )
    t.write_arrow(data([("2024-05-01", "0"), ("2999-06-09", "0")]))
    assert partitions(t) == [("2999-06-09", "0")]  # the write's automatic run used the option
    assert ep.expire_partitions(t.store, now=dt.datetime(2999, 6, 16, 1), dry_run=True).texts() == [
        "dt=2999-06-09"
    ]
    assert ep.expire_partitions(t.store, now=dt.datetime(2999, 6, 15, 23), dry_run=True).texts() == []
    # update-time: the files were just written, so nothing is older than a day
    assert (
        ep.expire_partitions(t.store, expiration_time="1 d", expire_strategy="update-time").partitions == ()
    )
    far = dt.datetime.now() + dt.timedelta(days=3)
    assert ep.expire_partitions(
        t.store, expiration_time="1 d", expire_strategy="update-time", now=far
    ).texts() == ["dt=2999-06-09"]
    plain = catalog.create_table("db.nopt", SCHEMA, partition_keys=["dt"])
    with pytest.raises(InvalidArgumentError, match="partition.expiration-time"):
        plain.maintenance.expire_partitions()
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        catalog.create_table("db.flat", SCHEMA).maintenance.expire_partitions("1 d")
    with pytest.raises(InvalidArgumentError, match="expire_strategy"):
        t.maintenance.expire_partitions("1 d", expire_strategy="soon")


def test_table_api_records_each_run(catalog):
    t = catalog.create_table("db.rec", SCHEMA, partition_keys=["dt"])
    t.write_arrow(data([("2000-01-01", "0"), ("2999-01-01", "0")]))
    assert t.maintenance.expire_partitions("1 d", dry_run=True).texts() == ["dt=2000-01-01"]
    result = t.maintenance.expire_partitions("1 d")
    assert result.snapshot_id == t.latest_snapshot().id
    assert t.latest_snapshot().commit_kind.name == "OVERWRITE"
    runs = [r for r in read_records(t.store.io, t.path) if r.procedure == "expire_partitions"]
    assert sorted((r.trigger, r.dry_run, r.details["partitions"]) for r in runs) == [
        ("called", False, ["dt=2000-01-01"]),
        ("called", True, ["dt=2000-01-01"]),
    ]


def test_a_lost_race_is_planned_again_within_bounds(catalog, monkeypatch):
    t = catalog.create_table("db.race", SCHEMA, partition_keys=["dt"])
    t.write_arrow(data([("2000-01-01", "0"), ("2000-01-02", "0"), ("2999-01-01", "0")]))
    real = FileStoreCommit.drop_partitions
    calls = []

    def racing(self, specs, **kw):
        calls.append([dict(s) for s in specs])
        if len(calls) == 1:
            # a concurrent writer drops one of them first, then our commit conflicts
            real(FileStoreCommit(self.store), [specs[0]])
            raise CommitConflictError("lost the race")
        return real(self, specs, **kw)

    monkeypatch.setattr(FileStoreCommit, "drop_partitions", racing)
    result = t.maintenance.expire_partitions("1 d")
    assert result.attempts == 2 and result.texts() == ["dt=2000-01-02"]
    assert partitions(t) == [("2999-01-01", "0")]

    def always(self, specs, **kw):
        raise CommitConflictError("lost again")

    t.write_arrow(data([("2000-01-05", "0")]))
    monkeypatch.setattr(FileStoreCommit, "drop_partitions", always)
    with pytest.raises(CommitConflictError):
        t.maintenance.expire_partitions("1 d")


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_runs_automatically_after_commits_when_the_interval_passed(catalog, primary_key):
    t = catalog.create_table(
        f"db.auto_{primary_key}",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id", "dt"] if primary_key else (),
        options={
            "bucket": "1",
            "bucket-key": "id",
            "partition.expiration-time": "7 d",
            "partition.expiration-check-interval": "1 h",
        },
    )
    t.write_arrow(data([("2000-01-01", "0"), ("2999-01-01", "0")]))
    assert partitions(t) == [("2999-01-01", "0")]  # the write itself triggered the expiration
    t.write_arrow(data([("2000-01-02", "0")]))  # within the interval: no check
    assert ("2000-01-02", "0") in partitions(t)
    autos = [r for r in read_records(t.store.io, t.path) if r.trigger == "automatic"]
    assert [r.details["partitions"] for r in autos] == [["dt=2000-01-01"]]
    # the interval is shared through the table (another process sees the same check time)
    ep._last_check.clear()
    t.write_arrow(data([("2000-01-03", "0")]))
    assert ("2000-01-03", "0") in partitions(t)
    later = int(dt.datetime.now().timestamp() * 1000) + 2 * 3_600_000
    assert ep.run_after_commit(t.store, now_ms=later).texts() == ["dt=2000-01-02", "dt=2000-01-03"]


def test_an_automatic_failure_never_fails_the_commit(catalog):
    t = catalog.create_table(
        "db.autobad",
        SCHEMA,
        partition_keys=["dt"],
        options={
            "partition.expiration-time": "7 d",
            "partition.expiration-check-interval": "0 s",
            "partition.timestamp-formatter": "yyyy-QQ",
        },
    )
    result = t.write_arrow(data([("2000-01-01", "0")]))
    assert result.snapshot_ids and partitions(t) == [("2000-01-01", "0")]
    [record] = [r for r in read_records(t.store.io, t.path) if r.procedure == "expire_partitions"]
    assert record.trigger == "automatic" and record.error.startswith("InvalidArgumentError")


def test_end_input_check_expires_at_the_end_of_every_batch_write(catalog):
    """end-input.check-partition-expire: a batch commit (the batch identifier) checks at once, whatever
    the interval; a streaming commit (its own identifier) still waits for the interval, as in Paimon."""
    t = catalog.create_table(
        "db.endinput",
        SCHEMA,
        partition_keys=["dt"],
        options={
            "partition.expiration-time": "7 d",
            "partition.expiration-check-interval": "1 d",
            "end-input.check-partition-expire": "true",
        },
    )
    t.write_arrow(data([("2000-01-01", "0"), ("2999-01-01", "0")]))
    assert partitions(t) == [("2999-01-01", "0")]
    t.write_arrow(data([("2000-01-02", "0")]))  # within the interval, but the end of a batch write
    assert partitions(t) == [("2999-01-01", "0")]
    t.write_arrow(data([("2000-01-03", "0")]), identifier=7)  # a streaming commit: interval applies
    assert ("2000-01-03", "0") in partitions(t)
    autos = [r for r in read_records(t.store.io, t.path) if r.trigger == "automatic"]
    assert [r.details["partitions"] for r in autos] == [["dt=2000-01-01"], ["dt=2000-01-02"]]
    t = catalog.alter_table(t.identifier, [SetOption("end-input.check-partition-expire", "false")])
    t.write_arrow(data([("2000-01-04", "0")]))  # off again: the interval decides
    assert ("2000-01-04", "0") in partitions(t)
