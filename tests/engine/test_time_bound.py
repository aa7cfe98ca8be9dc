"""engine.time_bound: every accepted form of a time argument, the zone of naive values, typed refusals."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError, TimeBoundError
from engine.time_bound import (
    ACCEPTED_FORMS,
    TimeBound,
    parse_duration_argument,
    parse_time_bound,
    time_bound_millis,
)

NOW_MS = 1_717_977_600_000  # 2024-06-10T00:00:00Z
LOCAL_NOON = dt.datetime(2024, 5, 1, 12, 0, 0)  # naive: the local zone of the process
LOCAL_NOON_MS = int(LOCAL_NOON.timestamp() * 1000)


@pytest.mark.parametrize(
    ("value", "expected_ms"),
    [
        (LOCAL_NOON, LOCAL_NOON_MS),
        (dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC), 1_714_564_800_000),
        (dt.datetime(2024, 5, 1, 14, tzinfo=dt.timezone(dt.timedelta(hours=2))), 1_714_564_800_000),
        (dt.date(2024, 5, 1), int(dt.datetime(2024, 5, 1).timestamp() * 1000)),
        (1_714_564_800_000, 1_714_564_800_000),
        ("1714564800000", 1_714_564_800_000),
        (" 2024-05-01 12:00:00 ", LOCAL_NOON_MS),
        ("2024-05-01T12:00:00", LOCAL_NOON_MS),
        ("2024-05-01 12:00:00.250", LOCAL_NOON_MS + 250),
        ("2024-05-01", int(dt.datetime(2024, 5, 1).timestamp() * 1000)),
        ("2024-05-01T12:00:00Z", 1_714_564_800_000),
        ("2024-05-01T14:00:00+02:00", 1_714_564_800_000),
        (dt.timedelta(days=1), NOW_MS - 86_400_000),
        ("1 d", NOW_MS - 86_400_000),
        ("2h", NOW_MS - 7_200_000),
        ("30 min", NOW_MS - 1_800_000),
        ("PT1H", NOW_MS - 3_600_000),
        (TimeBound.ago(5), NOW_MS - 5),
        (TimeBound.at(42), 42),
    ],
)
def test_every_form_names_one_instant(value, expected_ms):
    assert time_bound_millis(value, now_ms=NOW_MS) == expected_ms


def test_an_age_is_fixed_when_used_not_when_parsed():
    bound = parse_time_bound("1 h")
    assert bound == TimeBound.ago(3_600_000)
    assert bound.millis(NOW_MS) == NOW_MS - 3_600_000
    assert bound.millis(NOW_MS + 10) == NOW_MS + 10 - 3_600_000


def test_naive_values_use_the_given_zone_else_the_local_one():
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert parse_time_bound("2024-05-01 14:00:00", zone=plus_two).millis() == 1_714_564_800_000
    assert parse_time_bound(dt.datetime(2024, 5, 1, 14), zone=plus_two).millis() == 1_714_564_800_000
    assert parse_time_bound("2024-05-01 12:00:00").millis() == LOCAL_NOON_MS
    # An explicit zone in the value wins over the default.
    assert parse_time_bound("2024-05-01T12:00:00Z", zone=plus_two).millis() == 1_714_564_800_000


def test_local_datetime_is_the_wall_clock_for_tag_and_partition_times():
    assert parse_time_bound("2024-05-01 12:00:00").local_datetime() == LOCAL_NOON
    assert parse_time_bound(LOCAL_NOON_MS).local_datetime() == LOCAL_NOON
    assert parse_time_bound("1 d").local_datetime(LOCAL_NOON) == LOCAL_NOON - dt.timedelta(days=1)
    # A negative age is after now: the operation decides whether that makes sense.
    in_an_hour = parse_time_bound(dt.timedelta(hours=-1))
    assert in_an_hour.local_datetime(LOCAL_NOON) == LOCAL_NOON + dt.timedelta(hours=1)


@pytest.mark.parametrize(
    "value", [True, None, 1.5, "yesterday", "", "2024-13-01", "1 fortnight", "12:00", b"2024-05-01", [1]]
)
def test_anything_else_is_a_typed_error_naming_the_argument_and_the_forms(value):
    with pytest.raises(TimeBoundError) as info:
        parse_time_bound(value, "expiration_time")
    assert info.value.argument == "expiration_time"
    assert str(info.value).startswith("expiration_time = ")
    assert ACCEPTED_FORMS in str(info.value)
    assert isinstance(info.value, InvalidArgumentError)  # SQLSTATE 22023 in SQL


def test_a_bound_is_an_instant_or_an_age():
    with pytest.raises(InvalidArgumentError):
        TimeBound()
    with pytest.raises(InvalidArgumentError):
        TimeBound(epoch_ms=1, age_ms=1)
    assert str(TimeBound.ago(86_400_000)) == "1 d ago"
    assert str(TimeBound.at(LOCAL_NOON_MS)) == "2024-05-01 12:00:00"
    assert str(TimeBound.at(2**62)) == f"{2**62} epoch ms"


@pytest.mark.parametrize(
    ("value", "ms"), [(5, 5), (dt.timedelta(minutes=2), 120_000), ("1 d", 86_400_000), ("PT1H", 3_600_000)]
)
def test_durations(value, ms):
    assert parse_duration_argument(value, "time_retained") == ms


@pytest.mark.parametrize("value", [-1, True, "soon", 1.5, dt.timedelta(seconds=-1), None])
def test_bad_durations_name_the_argument(value):
    with pytest.raises(TimeBoundError, match="^retention = ") as info:
        parse_duration_argument(value, "retention")
    assert info.value.argument == "retention"


@given(st.datetimes(min_value=dt.datetime(1971, 1, 2), max_value=dt.datetime(2900, 1, 1)))
def test_text_and_datetime_agree(moment):
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
    utc = moment.replace(tzinfo=dt.UTC)
    assert time_bound_millis(utc.isoformat()) == time_bound_millis(utc) == int(utc.timestamp() * 1000)
    assert time_bound_millis(moment.isoformat(sep=" ")) == time_bound_millis(moment)
    assert time_bound_millis(str(time_bound_millis(utc))) == time_bound_millis(utc)
