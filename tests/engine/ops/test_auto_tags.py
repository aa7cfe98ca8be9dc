"""Automatic tags after commits: periods, name formats, delay, watermark, batch, retention, failures."""

from __future__ import annotations

import datetime as dt
import time as real_time
import types

import pytest

import engine.commit
from engine.errors import InvalidArgumentError
from engine.history.retention_mark import advance
from engine.meta.snapshot import Tag
from engine.ops import auto_tags
from engine.ops.auto_tags import Period
from engine.schema_changes import SetOption
from tests.engine.ops.conftest import SCHEMA, content, rows


class FakeClock:
    """Commit times under test control: local wall-clock datetimes turned into epoch millis."""

    def __init__(self, start: dt.datetime) -> None:
        self.at = start

    def time(self) -> float:
        return self.at.timestamp()

    def set(self, when: dt.datetime) -> None:
        self.at = when


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock(dt.datetime(2024, 7, 18, 10, 30))
    fake = types.SimpleNamespace(time=c.time, monotonic=real_time.monotonic, sleep=real_time.sleep)
    monkeypatch.setattr(engine.commit, "time", fake)
    return c


def make(catalog, name="db.t", **options):
    opts = {k.replace("_", "."): v for k, v in options.items()}
    return catalog.create_table(name, SCHEMA, options=opts)


def set_mode(catalog, t, mode):
    return catalog.alter_table(t.identifier, [SetOption("tag.automatic-creation", mode)])


def write_at(t, clock, when, ids=(1,)):
    clock.set(when)
    t.write_arrow(rows(ids))
    return t.latest_snapshot().id


D = dt.datetime


# -- names and periods (pure) -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "fmt", "name"),
    [
        ("daily", "with_dashes", "2024-07-17"),
        ("daily", "without_dashes", "20240717"),
        ("hourly", "with_dashes", "2024-07-18 09"),
        ("hourly", "without_dashes", "20240718 09"),
        ("hourly", "without_dashes_and_spaces", "2024071809"),
        ("two-hours", "without_dashes", "2024-07-18 08"),  # two-hours always uses dashes
    ],
)
def test_period_names_the_period_before_the_time(kind, fmt, name):
    p = Period(kind, fmt)
    start = p.previous_start(D(2024, 7, 18, 10, 30))
    assert p.name(start) == name
    assert p.parse(name) == start


def test_parse_recognises_only_automatic_names():
    daily = Period("daily", "with_dashes")
    assert daily.parse("2024-07-18 10") == D(2024, 7, 18)  # the part before the space counts
    assert daily.parse("v1") is None and daily.parse("2024-13-01") is None
    assert Period("hourly", "with_dashes").parse("2024-07-18") is None


# -- process-time -----------------------------------------------------------------------------
def test_daily_process_time_tags_the_first_snapshot_of_each_new_day(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "process-time"})
    s1 = write_at(t, clock, D(2024, 7, 18, 10))
    assert t.refs.tags.names() == ["2024-07-17"] and t.refs.tags.get("2024-07-17").snapshot.id == s1
    write_at(t, clock, D(2024, 7, 18, 23, 59), [2])
    assert t.refs.tags.names() == ["2024-07-17"]
    s3 = write_at(t, clock, D(2024, 7, 19, 0, 1), [3])
    write_at(t, clock, D(2024, 7, 19, 5), [4])
    assert t.refs.tags.names() == ["2024-07-17", "2024-07-18"]
    assert t.refs.tags.get("2024-07-18").snapshot.id == s3
    assert content(t, tag="2024-07-18") == sorted([(1, "x1", "a"), (2, "x2", "a"), (3, "x3", "a")])


def test_hourly_without_dashes_and_delay(catalog, clock):
    t = make(
        catalog,
        **{
            "tag.automatic-creation": "process-time",
            "tag.creation-period": "hourly",
            "tag.period-formatter": "without_dashes",
            "tag.creation-delay": "10 min",
        },
    )
    write_at(t, clock, D(2024, 7, 18, 10, 30))
    assert t.refs.tags.names() == ["20240718 09"]
    write_at(t, clock, D(2024, 7, 18, 11, 5), [2])  # hour 10 ended, but the delay has not passed
    assert t.refs.tags.names() == ["20240718 09"]
    s = write_at(t, clock, D(2024, 7, 18, 11, 10), [3])
    assert t.refs.tags.names() == ["20240718 09", "20240718 10"]
    assert t.refs.tags.get("20240718 10").snapshot.id == s


def test_daily_without_dashes_creates_an_all_digit_name(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "process-time", "tag.period-formatter": "without_dashes"})
    write_at(t, clock, D(2024, 7, 18, 10))
    assert t.refs.tags.names() == ["20240717"]


def test_two_hours(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "process-time", "tag.creation-period": "two-hours"})
    write_at(t, clock, D(2024, 7, 18, 11, 59))
    write_at(t, clock, D(2024, 7, 18, 12, 0), [2])
    assert t.refs.tags.names() == ["2024-07-18 08", "2024-07-18 10"]


def test_snapshots_missed_by_the_hook_are_found_and_tagged_at_the_first_due_one(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "process-time"})
    write_at(t, clock, D(2024, 7, 18, 10))
    # Written with the option off (as by another writer): no hook ran for these.
    t = set_mode(catalog, t, "none")
    write_at(t, clock, D(2024, 7, 18, 12), [2])
    s3 = write_at(t, clock, D(2024, 7, 19, 1), [3])
    write_at(t, clock, D(2024, 7, 19, 2), [4])
    write_at(t, clock, D(2024, 7, 20, 3), [5])
    write_at(t, clock, D(2024, 7, 20, 4), [6])
    assert t.refs.tags.names() == ["2024-07-17"]
    t = set_mode(catalog, t, "process-time")
    assert t.auto_tag() == ["2024-07-18", "2024-07-19"]
    assert t.refs.tags.get("2024-07-18").snapshot.id == s3
    assert t.refs.tags.get("2024-07-19").snapshot.id == s3 + 2
    assert t.auto_tag() == []  # idempotent


def test_periodic_tags_start_at_the_retention_mark(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "none"})
    for i, when in enumerate([D(2024, 7, 18, 10), D(2024, 7, 18, 12), D(2024, 7, 19, 1)], 1):
        write_at(t, clock, when, [i])
    s4 = write_at(t, clock, D(2024, 7, 19, 2), [4])
    s5 = write_at(t, clock, D(2024, 7, 20, 3), [5])
    advance(t.store, 0, now_ms=t.store.snapshots.get(s4).time_millis)  # history before s4 is hidden
    t = set_mode(catalog, t, "process-time")
    assert t.auto_tag() == ["2024-07-18", "2024-07-19"]
    assert [t.refs.tags.get(n).snapshot.id for n in t.refs.tags.names()] == [s4, s5]
    assert content(t, tag="2024-07-18") == sorted((i, f"x{i}", "a") for i in range(1, 5))


def test_an_existing_tag_of_the_period_is_not_recreated(catalog, clock):
    t = make(catalog)
    clock.set(D(2024, 7, 17, 9))
    t.write_arrow(rows([1]))
    t.refs.tags.create("keep")
    # A concurrent writer already published this period's tag on snapshot 1.
    t.store.io.write_text(t.store.paths.tag_file("2024-07-16"), Tag(t.latest_snapshot()).to_json())
    t = set_mode(catalog, t, "process-time")
    write_at(t, clock, D(2024, 7, 17, 10), [2])
    assert sorted(t.refs.tags.names()) == ["2024-07-16", "keep"]
    assert t.refs.tags.get("2024-07-16").snapshot.id == 1


# -- watermark --------------------------------------------------------------------------------
def commit_with_watermark(t, watermark_ms, ids):
    w = t.new_writer()
    w.write(rows(ids))
    t.new_commit().commit(w.prepare_commit(), watermark=watermark_ms)
    return t.auto_tag()


def test_watermark_mode_uses_the_snapshot_watermark_in_its_time_zone(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "watermark", "tag.creation-period": "hourly"})
    assert commit_with_watermark(t, None, [1]) == []  # no watermark: nothing to tag
    utc = dt.UTC
    wm = int(dt.datetime(2024, 7, 18, 10, 15, tzinfo=utc).timestamp() * 1000)
    assert commit_with_watermark(t, wm, [2]) == ["2024-07-18 09"]
    wm2 = int(dt.datetime(2024, 7, 18, 11, 0, tzinfo=utc).timestamp() * 1000)
    assert commit_with_watermark(t, wm2, [3]) == ["2024-07-18 10"]


# -- batch ------------------------------------------------------------------------------------
def test_batch_mode_tags_each_batch_write_and_replaces_the_days_tag(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "batch"})
    write_at(t, clock, D(2024, 7, 18, 10))
    assert t.refs.tags.names() == ["batch-write-2024-07-18"]
    s2 = write_at(t, clock, D(2024, 7, 18, 11), [2])
    assert (
        t.refs.tags.names() == ["batch-write-2024-07-18"]
        and t.refs.tags.get("batch-write-2024-07-18").snapshot.id == s2
    )
    write_at(t, clock, D(2024, 7, 19, 11), [3])
    assert t.refs.tags.names() == ["batch-write-2024-07-18", "batch-write-2024-07-19"]


def test_batch_mode_ignores_streaming_commits(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "batch"})
    t.write_arrow(rows([1]), commit_user="stream", identifier=7)
    assert t.refs.tags.names() == []


# -- retention ----------------------------------------------------------------------------------
def test_num_retained_max_deletes_only_the_oldest_automatic_tags_and_their_files(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "process-time", "tag.num-retained-max": "2"})
    write_at(t, clock, D(2024, 7, 18, 10))
    t.refs.tags.create("manual", 1)
    for day in (19, 20, 21):
        write_at(t, clock, D(2024, 7, day, 1), [day])
    assert sorted(t.refs.tags.names()) == ["2024-07-19", "2024-07-20", "manual"]
    assert content(t, tag="manual") == [(1, "x1", "a")]


def test_num_retained_max_in_batch_mode_counts_batch_tags_only(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "batch", "tag.num-retained-max": "1"})
    write_at(t, clock, D(2024, 7, 18, 10))
    t.refs.tags.create("manual")
    write_at(t, clock, D(2024, 7, 19, 10), [2])
    assert sorted(t.refs.tags.names()) == ["batch-write-2024-07-19", "manual"]


def test_default_time_retained_is_written_with_the_injected_now(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "process-time", "tag.default-time-retained": "1 d"})
    write_at(t, clock, D(2024, 7, 18, 10))
    fixed = D(2024, 7, 18, 10, 0, 1, 123456)
    assert auto_tags.run_after_commit(t.store, now=lambda: fixed) == []  # already tagged
    t.refs.tags.delete(["2024-07-17"])
    assert auto_tags.run_after_commit(t.store, now=lambda: fixed) == ["2024-07-17"]
    tag = t.refs.tags.get("2024-07-17")
    assert tag.time_retained_ms == 86_400_000 and tag.create_time == D(2024, 7, 18, 10, 0, 1, 123000)


# -- failures never fail the write ------------------------------------------------------------
def test_a_failing_tag_creation_never_fails_the_write(catalog, clock, monkeypatch, caplog):
    t = make(catalog, **{"tag.automatic-creation": "process-time"})

    real = t.store.io.try_create

    def boom(path, data):
        if "/tag/" in path:
            raise OSError("disk full")
        return real(path, data)

    monkeypatch.setattr(t.store.io, "try_create", boom)
    clock.set(D(2024, 7, 18, 10))
    result = t.write_arrow(rows([1]))
    assert result.snapshot_ids and content(t) == [(1, "x1", "a")] and t.refs.tags.names() == []
    assert "automatic tag creation" in caplog.text
    monkeypatch.undo()


def test_a_bad_delay_is_logged_not_raised(catalog, clock, caplog):
    t = make(
        catalog,
        **{
            "tag.automatic-creation": "process-time",
            "tag.creation-period": "hourly",
            "tag.creation-delay": "2 h",
        },
    )
    clock.set(D(2024, 7, 18, 10))
    t.write_arrow(rows([1]))
    assert t.refs.tags.names() == [] and "must be shorter" in caplog.text


def test_an_unknown_period_formatter_is_refused_at_create(catalog):
    with pytest.raises(InvalidArgumentError, match="tag.period-formatter"):
        make(catalog, **{"tag.period-formatter": "with_slashes"})


# -- tag.period-duration, tag.automatic-completion, tag.batch.customized-name ------------------
def test_period_duration_names_periods_by_their_start_minute(catalog, clock):
    p = Period("duration", "with_dashes", dt.timedelta(minutes=30))
    start = p.previous_start(D(2024, 7, 18, 10, 45))
    assert start == D(2024, 7, 18, 10, 0) and p.name(start) == "202407181000"
    assert p.parse("202407181000") == start and p.parse("2024-07-18") is None
    t = make(catalog, **{"tag.automatic-creation": "process-time", "tag.period-duration": "30 min",
                         "tag.creation-period": "daily"})  # the duration wins over the named period
    s1 = write_at(t, clock, D(2024, 7, 18, 10, 45))  # tags 10:00-10:30, the period before
    write_at(t, clock, D(2024, 7, 18, 10, 59), [2])  # 10:30-11:00 has not ended
    s3 = write_at(t, clock, D(2024, 7, 18, 11, 10), [3])
    assert t.refs.tags.names() == ["202407181000", "202407181030"]
    tags = t.refs.tags
    assert (tags.get("202407181000").snapshot.id, tags.get("202407181030").snapshot.id) == (s1, s3)


def test_period_duration_must_be_positive(catalog):
    with pytest.raises(InvalidArgumentError):
        make(catalog, **{"tag.period-duration": "0 s"})


@pytest.mark.parametrize("completion", [False, True])
def test_automatic_completion_fills_skipped_periods_one_per_due_snapshot(catalog, clock, completion):
    t = make(catalog, **{"tag.automatic-creation": "process-time",
                         "tag.automatic-completion": str(completion).lower()})
    write_at(t, clock, D(2024, 7, 18, 10))  # tags 2024-07-17
    s2 = write_at(t, clock, D(2024, 7, 21, 9), [2])  # three days without commits
    s3 = write_at(t, clock, D(2024, 7, 21, 10), [3])
    tags = t.refs.tags
    if completion:  # 07-18, then 07-19 at the next commit; 07-20 follows with the next one
        assert tags.names() == ["2024-07-17", "2024-07-18", "2024-07-19"]
        assert (tags.get("2024-07-18").snapshot.id, tags.get("2024-07-19").snapshot.id) == (s2, s3)
    else:  # the period before the snapshot's; the gap stays
        assert tags.names() == ["2024-07-17", "2024-07-20"] and tags.get("2024-07-20").snapshot.id == s2


def test_batch_customized_name_is_replaced_by_each_batch_write(catalog, clock):
    t = make(catalog, **{"tag.automatic-creation": "batch", "tag.batch.customized-name": "nightly"})
    write_at(t, clock, D(2024, 7, 18, 10))
    s2 = write_at(t, clock, D(2024, 7, 19, 10), [2])
    assert t.refs.tags.names() == ["nightly"] and t.refs.tags.get("nightly").snapshot.id == s2
    assert content(t, tag="nightly") == [(1, "x1", "a"), (2, "x2", "a")]
