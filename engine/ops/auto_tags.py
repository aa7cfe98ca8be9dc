"""Automatic tags after a commit: ``tag.automatic-creation`` and its companion options.

One job: after a commit is published, create the tags the table's options ask for and drop the
oldest automatic tags beyond ``tag.num-retained-max``. :func:`run_after_commit` never raises
(failures are logged) because the commit it follows is already visible.

Rules (Paimon's ``TagAutoCreation`` / ``TagPeriodHandler`` / ``TagTimeExtractor`` /
``TagBatchCreation``, restated):

* ``process-time``: a snapshot's time is its commit time in the local zone; ``watermark``: its
  watermark in ``sink.watermark-time-zone`` (default UTC); a snapshot without one is skipped.
* A snapshot whose time minus ``tag.creation-delay`` reaches the end of the period after the
  last automatic tag (or any snapshot, when there is no automatic tag yet) gets a tag named after
  the period *before* the one its time falls in: the previous day (``2024-07-17``), hour
  (``2024-07-18 09``) or even two-hour slot. Periods are aligned on the local clock, not UTC.
  ``tag.period-formatter``: ``with_dashes`` (default), ``without_dashes`` (``20240717``,
  ``20240718 09``), ``without_dashes_and_spaces`` (hourly: ``2024071809``); ``two-hours`` always
  uses dashes.
* ``tag.period-duration`` (a duration) replaces ``tag.creation-period``: periods of that length,
  aligned on the local clock from the epoch, named ``yyyyMMddHHmm`` after their start.
* ``tag.automatic-completion``: when a snapshot is due and periods were skipped since the last
  automatic tag (no commit in them), the tag is named after the first skipped period instead of
  the period before the snapshot's; each later due snapshot fills the next one (one tag per
  snapshot, as Paimon does), so the gaps are completed as commits keep coming.
* A tag name is an automatic one when it parses in the period's format (daily also accepts an
  hourly name: the part before the space counts). Only such tags are counted and deleted by
  ``tag.num-retained-max``, oldest snapshot first; a tag named otherwise is never touched.
* ``batch``: after a batch write (commit identifier ``Long.MAX_VALUE``, not a streaming
  micro-batch) the latest snapshot is tagged ``batch-write-<yyyy-MM-dd>`` (local date of its
  commit), or ``tag.batch.customized-name`` when set, replacing an earlier tag of that name.
  ``tag.num-retained-max`` counts only these tags here (Paimon counts every tag; the manual ones
  are never deleted by dyntable).
* ``tag.default-time-retained`` gives new automatic tags a retention.
* ``incremental-to-auto-tag`` reads between an automatic tag and the one of the period before it
  (:func:`range_to_auto_tag`): automatic names are what this module knows.

Idempotence and concurrency: periods are derived from the tags on storage at each run, not from
writer state, so a rerun finds its tag and moves on; tags are published create-if-absent, so two
writers racing for one period produce one tag. The snapshots examined are those after the last
automatic tag's; commit times (and watermarks) grow with snapshot ids, so the first snapshot past
a period's end is found by binary search, not by reading every snapshot. Deviation from Paimon:
auto-tag names that are all digits (daily ``without_dashes``) are created even though a user may
not create such a tag (``VERSION AS OF '20240717'`` then reads as a snapshot id, as in Paimon).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from engine.errors import InvalidArgumentError, NoSuchSnapshotError, SnapshotExpiredConcurrentlyError
from engine.history.retention_mark import check_visible, store_mark
from engine.identifier import validate_name
from engine.meta.publish import publish_ref
from engine.meta.refs import snapshot_still_exists
from engine.meta.snapshot import Snapshot, Tag
from engine.ops.tags import TagOps
from engine.options import (
    TAG_AUTOMATIC_COMPLETION,
    TAG_AUTOMATIC_CREATION,
    TAG_BATCH_CUSTOMIZED_NAME,
    TAG_CREATION_DELAY,
    TAG_CREATION_PERIOD,
    TAG_DEFAULT_TIME_RETAINED,
    TAG_NUM_RETAINED_MAX,
    TAG_PERIOD_DURATION,
    TAG_PERIOD_FORMATTER,
    CoreOptions,
)
from engine.scan.incremental import IncrementalRange, empty_range
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore

log = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]
BATCH_TAG_PREFIX = "batch-write-"
_EPOCH = dt.datetime(1970, 1, 1)
_PERIODS = {
    "daily": dt.timedelta(days=1),
    "hourly": dt.timedelta(hours=1),
    "two-hours": dt.timedelta(hours=2),
}


@dataclass(frozen=True, slots=True)
class Period:
    """One ``tag.creation-period`` with its name format (Paimon's period handler)."""

    kind: str  # daily | hourly | two-hours | duration (tag.period-duration)
    formatter: str  # with_dashes | without_dashes | without_dashes_and_spaces
    duration: dt.timedelta | None = None  # the length of a ``duration`` period

    @property
    def length(self) -> dt.timedelta:
        return self.duration if self.duration is not None else _PERIODS[self.kind]

    def _dashes(self) -> bool:
        return self.kind == "two-hours" or self.formatter == "with_dashes"

    def name(self, start: dt.datetime) -> str:
        """The tag name of the period starting at ``start``."""
        if self.kind == "duration":
            return f"{start.year}{start.month:02d}{start.day:02d}{start.hour:02d}{start.minute:02d}"
        day = (
            f"{start.year}-{start.month:02d}-{start.day:02d}"
            if self._dashes()
            else f"{start.year}{start.month:02d}{start.day:02d}"
        )
        if self.kind == "daily":
            return day
        if self.kind == "hourly" and self.formatter == "without_dashes_and_spaces":
            return f"{day}{start.hour:02d}"
        return f"{day} {start.hour:02d}"

    def parse(self, name: str) -> dt.datetime | None:
        """The start of the period a tag name denotes, or None if it is not an automatic tag's name."""
        if self.kind == "duration":
            pattern = r"(\d{1,10})(\d{2})(\d{2})(\d{2})(\d{2})"
        elif self.kind == "daily":
            name = name.split(" ")[0]
            pattern = r"(\d{1,10})-(\d{2})-(\d{2})" if self._dashes() else r"(\d{1,10})(\d{2})(\d{2})"
        elif self.kind == "hourly" and self.formatter == "without_dashes_and_spaces":
            pattern = r"(\d{1,10})(\d{2})(\d{2})(\d{2})"
        elif self._dashes():
            pattern = r"(\d{1,10})-(\d{2})-(\d{2}) (\d{2})"
        else:
            pattern = r"(\d{1,10})(\d{2})(\d{2}) (\d{2})"
        m = re.fullmatch(pattern, name)
        if m is None:
            return None
        try:
            # 3 to 5 groups (year, month, day[, hour[, minute]]); the missing ones are 0.
            year, month, day, hour, minute = [*(int(g) for g in m.groups()), 0, 0][:5]
            return dt.datetime(year, month, day, hour, minute)
        except ValueError:  # month 13, hour 25, year 0 ...
            return None

    def previous_start(self, time: dt.datetime) -> dt.datetime:
        """The start of the period before the one ``time`` falls in (aligned on the wall clock)."""
        floored = _EPOCH + ((time - _EPOCH) // self.length) * self.length
        return floored - self.length


def period_of(options: CoreOptions) -> Period:
    """The Period a table's options configure (``tag.period-duration`` wins over the named periods)."""
    duration = options.get(TAG_PERIOD_DURATION)
    if duration is not None:
        return Period("duration", options.get(TAG_PERIOD_FORMATTER), dt.timedelta(milliseconds=duration))
    return Period(options.get(TAG_CREATION_PERIOD), options.get(TAG_PERIOD_FORMATTER))


def _local(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000)


def _now() -> dt.datetime:
    return dt.datetime.now()


class AutoTagger:
    """Applies the automatic-tag options of one table branch (``store``) after a commit."""

    def __init__(self, store: FileStore, now: Clock = _now) -> None:
        self.store = store
        self.now = now
        self.options = store.options
        self.mode: str = self.options.get(TAG_AUTOMATIC_CREATION)
        self.retained_max: int | None = self.options.get(TAG_NUM_RETAINED_MAX)
        self.time_retained: int | None = self.options.get(TAG_DEFAULT_TIME_RETAINED)
        self.completion: bool = self.options.get(TAG_AUTOMATIC_COMPLETION)
        self.ops = TagOps(store)

    # -- entry ----------------------------------------------------------------------------------
    def run(self) -> list[str]:
        """Create the due tags and trim the automatic ones; returns the names created."""
        if self.mode == "none":
            return []
        if self.mode == "batch":
            return self._run_batch()
        return self._run_periodic()

    # -- periodic (process-time, watermark) -----------------------------------------------------
    def _time_of(self, snapshot: Snapshot) -> dt.datetime | None:
        if self.mode == "process-time":
            return _local(snapshot.time_millis)
        if snapshot.watermark is None:
            return None
        zone = ZoneInfo(self.options.to_dict().get("sink.watermark-time-zone", "UTC"))
        return dt.datetime.fromtimestamp(snapshot.watermark / 1000, zone).replace(tzinfo=None)

    def _run_periodic(self) -> list[str]:
        period = period_of(self.options)
        delay = dt.timedelta(milliseconds=self.options.get(TAG_CREATION_DELAY))
        if delay >= period.length:
            raise InvalidArgumentError(
                f"tag.creation-delay ({delay}) must be shorter than the period "
                f"({period.kind}: {period.length})"
            )
        snapshots = self.store.snapshots
        latest = snapshots.latest_id()
        if latest is None:
            return []
        auto = self._auto_tags(period)
        if auto:
            last_name, last_tag = auto[-1]
            start = last_tag.snapshot.id + 1
            last_start = period.parse(last_name)
            assert last_start is not None  # _auto_tags keeps only the names that parse
            next_tag: dt.datetime | None = last_start + period.length
        else:
            start, next_tag = snapshots.earliest_id() or 1, None
        mark = store_mark(self.store)
        if mark is not None:  # a tag below the mark could never be read: tag only visible history
            start = max(start, mark.snapshot_id)
        created = []
        while start <= latest:
            found = self._first_due(start, latest, next_tag, period, delay)
            if found is None:
                break
            snapshot, time = found
            tag_time = period.previous_start(time)
            if self.completion and next_tag is not None:
                tag_time = next_tag  # the first period without a tag since the last automatic one
            name = period.name(tag_time)
            if self._create_if_absent(name, snapshot):
                created.append(name)
            next_tag = tag_time + period.length
            start = snapshot.id + 1
        if created:
            self._trim([n for n, _ in self._auto_tags(period)])
        return created

    def _is_due(
        self, snapshot: Snapshot, next_tag: dt.datetime | None, period: Period, delay: dt.timedelta
    ) -> dt.datetime | None:
        time = self._time_of(snapshot)
        if time is None:
            return None
        if next_tag is None or time - delay >= next_tag + period.length:
            return time
        return None

    def _first_due(
        self, lo: int, hi: int, next_tag: dt.datetime | None, period: Period, delay: dt.timedelta
    ) -> tuple[Snapshot, dt.datetime] | None:
        """The first snapshot in ``lo..hi`` that is due for a tag (times grow with ids: bisect)."""

        def load(sid: int) -> Snapshot | None:
            try:
                return self.store.snapshots.get(sid)
            except NoSuchSnapshotError:  # expired meanwhile: treat as not due
                return None

        last = load(hi)
        if last is None or self._is_due(last, next_tag, period, delay) is None:
            return None
        best = last
        while lo < best.id:
            mid = (lo + best.id - 1) // 2
            snap = load(mid)
            if snap is not None and self._is_due(snap, next_tag, period, delay) is not None:
                best = snap
            else:
                lo = mid + 1
        return best, self._is_due(best, next_tag, period, delay)  # type: ignore[return-value]

    def _auto_tags(self, period: Period) -> list[tuple[str, Tag]]:
        """Automatic tags, oldest snapshot first (ties: oldest period first)."""
        out = [(n, t, period.parse(n)) for n, t in self.ops.tags.all().items()]
        ordered = sorted((x for x in out if x[2] is not None), key=lambda x: (x[1].snapshot.id, x[2]))
        return [(n, t) for n, t, _ in ordered]

    # -- batch ----------------------------------------------------------------------------------
    def _run_batch(self) -> list[str]:
        snapshots = self.store.snapshots
        latest = snapshots.latest()
        if latest is None:
            return []
        # The write this follows may have been compacted since: look past COMPACT snapshots.
        write = latest
        while write.commit_kind.name == "COMPACT" and write.id > 1:
            try:
                write = snapshots.get(write.id - 1)
            except NoSuchSnapshotError:
                break
        if write.commit_identifier != BATCH_COMMIT_IDENTIFIER:
            return []  # a streaming micro-batch: batch tags are made by batch writes only
        custom = self.options.get(TAG_BATCH_CUSTOMIZED_NAME)
        name = custom or BATCH_TAG_PREFIX + _local(latest.time_millis).strftime("%Y-%m-%d")
        tags = self.ops.tags
        if tags.exists(name):
            if tags.get(name).snapshot.id == latest.id:
                return []
            self.ops.delete([name])  # with the files only it kept, as Paimon replaces it
        created = [name] if self._create_if_absent(name, latest) else []
        self._trim(
            sorted(
                (n for n in tags.names() if n.startswith(BATCH_TAG_PREFIX) or n == custom),
                key=lambda n: (tags.get(n).snapshot.id, n),
            )
        )
        return created

    # -- shared ---------------------------------------------------------------------------------
    def _create_if_absent(self, name: str, snapshot: Snapshot) -> bool:
        validate_name("tag", name)  # not new=True: automatic names may be all digits (as Paimon's)
        if self.time_retained is None:
            tag = Tag(snapshot)
        else:
            now = self.now()
            tag = Tag(
                snapshot,
                create_time=now.replace(microsecond=now.microsecond // 1000 * 1000),
                time_retained_ms=self.time_retained,
            )
        io, paths = self.store.io, self.store.paths
        try:
            return publish_ref(io, paths.tag_file(name), tag.to_json().encode(),
                               verify=snapshot_still_exists(io, paths, snapshot.id, f"tag '{name}'"))
        except SnapshotExpiredConcurrentlyError as e:
            log.warning("automatic tag not created: %s", e)  # the snapshot is gone; nothing to tag
            return False

    def _trim(self, oldest_first: Sequence[str]) -> None:
        if self.retained_max is None or len(oldest_first) <= self.retained_max:
            return
        doomed = list(oldest_first[: len(oldest_first) - self.retained_max])
        log.info(
            "deleting automatic tags %s of %s: tag.num-retained-max is %d",
            doomed,
            self.store.paths.root,
            self.retained_max,
        )
        self.ops.delete(doomed)


def run_after_commit(store: FileStore, now: Clock = _now) -> list[str]:
    """Automatic tags for the table branch ``store`` after a commit; never raises.

    Returns the names of the tags created (empty when the options ask for none, or on failure,
    which is logged: the commit is already published and a later commit retries).
    """
    try:
        return AutoTagger(store, now).run()
    except Exception as e:  # noqa: BLE001 - the commit is published; its outcome must not change
        log.warning("automatic tag creation for %s failed; a later commit retries: %s", store.paths.root, e)
        return []



def range_to_auto_tag(store: FileStore, end_tag: str) -> IncrementalRange:
    """``incremental-to-auto-tag`` (Paimon's ``IncrementalDiffStartingScanner.toEndAutoTag``): the
    diff from the newest automatic tag of an earlier period to ``end_tag`` (empty when either does
    not exist).

    Raises:
        InvalidArgumentError: ``end_tag`` is not an automatic tag's name.
    """
    from engine.meta.refs import TagStore

    period = period_of(store.options)
    end_time = period.parse(end_tag)
    if end_time is None:
        raise InvalidArgumentError(
            f"incremental-to-auto-tag: tag '{end_tag}' is not an automatic tag's name for this table's "
            "tag.creation-period and tag.period-formatter"
        )
    tags = TagStore(store.io, store.paths)
    if not tags.exists(end_tag):
        return empty_range()
    earlier = [(t, name) for name in tags.names() if (t := period.parse(name)) is not None and t < end_time]
    if not earlier:
        return empty_range()
    start = tags.get(max(earlier)[1]).snapshot
    end = tags.get(end_tag).snapshot
    check_visible(store, start, f"read incremental-to-auto-tag '{end_tag}'")
    return IncrementalRange(start, end, "diff", start.id)


__all__ = ("AutoTagger", "Period", "period_of", "range_to_auto_tag", "run_after_commit")
