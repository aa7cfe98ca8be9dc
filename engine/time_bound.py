"""One type for every "older than" / "at or after" argument: :class:`TimeBound`.

Every procedure that takes a point in time (``expire_snapshots``, ``expire_partitions``,
``expire_tags``, ``remove_orphan_files``, ``create_tag_from_timestamp``,
``rollback_to_timestamp``), from Python or from SQL, reads its argument with
:func:`parse_time_bound`, so one value means the same instant everywhere:

==============================================  ===========================================
given                                           means
==============================================  ===========================================
``datetime`` with a zone                        that instant
``datetime`` without a zone, ``date``           that wall-clock time (a date: its midnight)
                                                in the local time zone of the process
``timedelta``                                   that long before now
``int`` / all-digit text (``'1700000000000'``)  epoch milliseconds
ISO text: ``'2024-05-01'``,                     like the datetime it spells; without a zone
``'2024-05-01 12:00:00[.fff]'``,                the local time zone of the process
``'2024-05-01T12:00:00+02:00'``, ``'…Z'``
duration text: ``'1 d'``, ``'2h'``, ``'PT1H'``  that long before now (``engine.option_values``)
==============================================  ===========================================

Naive values use the local zone because Paimon's procedures parse their time text in the JVM's
default zone (which is also Spark's default session zone). Anything else — a bool, a float, a
text that is none of the above — is a :class:`TimeBoundError` naming the argument
and listing these forms. Durations proper (a tag's ``time_retained``, a retention) are read by
:func:`parse_duration_argument` with the same duration syntax.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from engine.errors import InvalidArgumentError, TimeBoundError
from engine.option_values import parse_duration

ACCEPTED_FORMS = (
    "a datetime (without a zone: local time), a date, a timedelta (that long ago), epoch milliseconds, "
    "ISO text such as '2024-05-01', '2024-05-01 12:00:00' or '2024-05-01T12:00:00+02:00' "
    "(without a zone: local time), or a duration such as '1 d', '2 h', 'PT1H' (that long ago)"
)


def now_millis() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class TimeBound:
    """A point in time: an instant (``epoch_ms``) or an age before "now" (``age_ms``; negative: after
    now), fixed only when it is used, so an age given once means the same age for a run that
    starts later. Whether a bound in the future makes sense is the operation's to decide
    (``remove_orphan_files`` refuses one)."""

    epoch_ms: int | None = None
    age_ms: int | None = None

    def __post_init__(self) -> None:
        if (self.epoch_ms is None) == (self.age_ms is None):
            raise InvalidArgumentError("a TimeBound is either an instant (epoch_ms) or an age (age_ms)")

    @staticmethod
    def at(epoch_ms: int) -> TimeBound:
        return TimeBound(epoch_ms=epoch_ms)

    @staticmethod
    def ago(age_ms: int) -> TimeBound:
        return TimeBound(age_ms=age_ms)

    def millis(self, now_ms: int | None = None) -> int:
        """The bound as epoch milliseconds (an age counts back from ``now_ms``, default now)."""
        if self.epoch_ms is not None:
            return self.epoch_ms
        assert self.age_ms is not None
        return (now_millis() if now_ms is None else now_ms) - self.age_ms

    def local_datetime(self, now: dt.datetime | None = None) -> dt.datetime:
        """The bound as a naive local wall-clock time, for comparing with times stored that way
        (a tag's creation time, a partition's time); an age counts back from ``now`` (default now)."""
        if self.age_ms is not None:
            return (now or dt.datetime.now()) - dt.timedelta(milliseconds=self.age_ms)
        assert self.epoch_ms is not None
        return dt.datetime.fromtimestamp(self.epoch_ms / 1000)

    def __str__(self) -> str:
        if self.age_ms is not None:
            from engine.option_values import format_duration

            return f"{format_duration(self.age_ms)} ago"
        assert self.epoch_ms is not None
        try:
            return dt.datetime.fromtimestamp(self.epoch_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            return f"{self.epoch_ms} epoch ms"


TimeBoundLike = TimeBound | dt.datetime | dt.date | dt.timedelta | str | int


def _bad(argument: str, value: object) -> TimeBoundError:
    message = f"{argument} = {value!r} is not a point in time; write {ACCEPTED_FORMS}"
    return TimeBoundError(message, argument=argument)


def _instant(value: dt.datetime, zone: dt.tzinfo | None) -> TimeBound:
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone) if zone is not None else value.astimezone()
    return TimeBound.at(int(value.timestamp() * 1000))


def parse_time_bound(
    value: object, argument: str = "older_than", *, zone: dt.tzinfo | None = None
) -> TimeBound:
    """``value`` (any form in the module's table) as a :class:`TimeBound`.

    ``zone``: the zone of values without one (default: the local time zone of the process).

    Raises:
        TimeBoundError: ``value`` is none of the accepted forms (the message names ``argument``).
    """
    if isinstance(value, TimeBound):
        return value
    if isinstance(value, bool) or value is None:
        raise _bad(argument, value)
    if isinstance(value, int):
        return TimeBound.at(value)
    if isinstance(value, dt.timedelta):
        return TimeBound.ago(int(value / dt.timedelta(milliseconds=1)))
    if isinstance(value, dt.datetime):
        return _instant(value, zone)
    if isinstance(value, dt.date):
        return _instant(dt.datetime(value.year, value.month, value.day), zone)
    if not isinstance(value, str):
        raise _bad(argument, value)
    text = value.strip()
    if text.lstrip("-").isdigit():
        return TimeBound.at(int(text))
    try:
        return _instant(dt.datetime.fromisoformat(text), zone)
    except ValueError:
        pass
    try:
        return TimeBound.ago(parse_duration(text))
    except InvalidArgumentError:
        raise _bad(argument, value) from None


def time_bound_millis(
    value: object, argument: str = "older_than", *, now_ms: int | None = None, zone: dt.tzinfo | None = None
) -> int:
    """Epoch milliseconds of ``value`` read by :func:`parse_time_bound`."""
    return parse_time_bound(value, argument, zone=zone).millis(now_ms)


def parse_duration_argument(value: object, argument: str) -> int:
    """Milliseconds of a duration argument: an int (ms), a ``timedelta`` or duration text
    (``'1 d'``, ``'2h'``, ``'PT1H'``; the syntax of ``engine.option_values``); never negative.

    Raises:
        TimeBoundError: not a duration (the message names ``argument``).
    """
    if isinstance(value, bool) or value is None:
        ms = None
    elif isinstance(value, int):
        ms = value
    elif isinstance(value, dt.timedelta):
        ms = int(value / dt.timedelta(milliseconds=1))
    elif isinstance(value, str):
        try:
            ms = parse_duration(value)
        except InvalidArgumentError:
            ms = None
    else:
        ms = None
    if ms is None or ms < 0:
        raise TimeBoundError(
            f"{argument} = {value!r} is not a duration; write milliseconds, a timedelta, "
            "or text such as '1 d', '2 h', '30 min', 'PT1H'",
            argument=argument,
        )
    return ms


__all__ = [
    "ACCEPTED_FORMS",
    "TimeBound",
    "TimeBoundLike",
    "now_millis",
    "parse_duration_argument",
    "parse_time_bound",
    "time_bound_millis",
]
