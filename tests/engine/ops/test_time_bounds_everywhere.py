"""One time-bound rule for every maintenance and reference operation (engine.time_bound).

The same instant, spelled as a datetime, ISO text, epoch milliseconds or (where it is an age) a
duration, selects the same snapshots, files, partitions and tags in every operation; a value that is
no time is the same typed error naming the argument everywhere.
"""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest

from engine.errors import TimeBoundError

FAR_FUTURE = dt.datetime(2099, 1, 1)
FAR_FUTURE_FORMS = [
    FAR_FUTURE,
    "2099-01-01 00:00:00",
    "2099-01-01",
    "2099-01-01T00:00:00",
    int(FAR_FUTURE.timestamp() * 1000),
    str(int(FAR_FUTURE.timestamp() * 1000)),
    FAR_FUTURE.astimezone(dt.UTC).isoformat(),
]


@pytest.mark.parametrize("older_than", FAR_FUTURE_FORMS, ids=repr)
def test_expire_tags_older_than_text_expires_what_the_datetime_does(append_table, older_than):
    """Text used to expire nothing while the same value as a datetime worked."""
    t = append_table
    t.refs.tags.create("a", 1)
    t.refs.tags.create("b", 2)
    assert t.maintenance.expire_tags(older_than=older_than, dry_run=True).tags == ("a", "b")
    assert t.refs.tags.names() == ["a", "b"]
    assert t.maintenance.expire_tags(older_than=older_than).tags == ("a", "b")
    assert t.refs.tags.names() == []


def test_expire_tags_keeps_tags_created_after_the_bound(append_table):
    t = append_table
    t.refs.tags.create("a", 1)
    for past in ("2000-01-01 00:00:00", dt.datetime(2000, 1, 1), 946_684_800_000, "1 d"):
        assert t.maintenance.expire_tags(older_than=past).tags == ()
    assert t.refs.tags.names() == ["a"]


@pytest.mark.parametrize("older_than", FAR_FUTURE_FORMS, ids=repr)
def test_expire_snapshots_reads_every_form_alike(append_table, older_than):
    report = append_table.maintenance.expire_snapshots(retain_max=1, older_than=older_than, dry_run=True)
    assert report.snapshots == (1, 2)


def test_expire_snapshots_reads_an_age_and_a_past_bound(append_table):
    t = append_table
    for older_than in (dt.timedelta(days=1), "1 d", "2000-01-01", 0):
        report = t.maintenance.expire_snapshots(retain_min=1, older_than=older_than, dry_run=True)
        assert report.snapshots == (), older_than


def _plant_old_orphan(t) -> str:
    path = os.path.join(t.path, "p=a", "bucket-0", "data-orphan-0.parquet")
    with open(path, "wb") as f:
        f.write(b"x")
    two_days_ago = time.time() - 2 * 86_400
    os.utime(path, (two_days_ago, two_days_ago))
    return path


def test_remove_orphan_files_reads_an_age_text_and_millis_alike(append_table):
    t = append_table
    _plant_old_orphan(t)
    day_ago = dt.datetime.now() - dt.timedelta(days=1)
    for older_than in (
        dt.timedelta(days=1),
        "1 d",
        "24h",
        day_ago,
        day_ago.strftime("%Y-%m-%d %H:%M:%S"),
        int(day_ago.timestamp() * 1000),
    ):
        found = t.maintenance.remove_orphan_files(older_than=older_than, dry_run=True)
        assert [os.path.basename(p) for p in found.paths()] == ["data-orphan-0.parquet"], older_than
    three_days_ago = dt.datetime.now() - dt.timedelta(days=3)
    for older_than in ("3 d", three_days_ago.isoformat(), three_days_ago.date()):
        assert t.maintenance.remove_orphan_files(older_than=older_than, dry_run=True).count == 0, older_than


def test_expire_partitions_reads_a_bound_and_an_age_alike(catalog):
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = catalog.create_table("db.parts", schema, partition_keys=["dt"])
    t.write_arrow(pa.table({"id": [1, 2], "dt": ["2000-01-01", "2999-01-01"]}, schema=schema))
    for older_than in ("1 d", dt.timedelta(days=1), dt.datetime.now(), "2001-01-01", dt.date(2001, 1, 1),
                       int(dt.datetime(2001, 1, 1).timestamp() * 1000)):
        result = t.maintenance.expire_partitions(older_than, dry_run=True)
        assert result.texts() == ["dt=2000-01-01"], older_than
    assert t.maintenance.expire_partitions("1999-12-31", dry_run=True).texts() == []


def test_points_in_time_of_tags_and_rollback_take_the_same_forms(append_table):
    t = append_table
    second = t.store.snapshots.get(2).time_millis
    as_text = dt.datetime.fromtimestamp(second / 1000).isoformat(sep=" ", timespec="milliseconds")
    assert t.refs.tags.create_from_timestamp("by-text", as_text).snapshot.id == 2
    assert t.refs.tags.create_from_timestamp("by-millis", second).snapshot.id == 2
    assert t.refs.rollback_to_timestamp(as_text).current_snapshot_id > 3
    assert t.to_arrow().num_rows == t.to_arrow(snapshot_id=2).num_rows


@pytest.mark.parametrize(
    ("argument", "call"),
    [
        ("older_than", lambda t: t.maintenance.expire_snapshots(older_than="someday")),
        ("older_than", lambda t: t.maintenance.expire_tags(older_than="someday")),
        ("older_than", lambda t: t.maintenance.remove_orphan_files(older_than="someday")),
        ("expiration_time", lambda t: t.maintenance.expire_partitions("someday")),
        ("timestamp", lambda t: t.refs.tags.create_from_timestamp("x", "someday")),
        ("timestamp", lambda t: t.refs.rollback_to_timestamp("someday")),
        ("time_retained", lambda t: t.refs.tags.create("x", 1, "someday")),
        ("retention", lambda t: t.maintenance.advance_retention_mark("someday")),
    ],
)
def test_a_value_that_is_no_time_is_one_typed_error_everywhere(append_table, argument, call):
    t = append_table
    before = (t.latest_snapshot().id, t.refs.tags.names())
    with pytest.raises(TimeBoundError, match=f"^{argument} = 'someday'") as info:
        call(t)
    assert info.value.argument == argument
    assert (t.latest_snapshot().id, t.refs.tags.names()) == before
