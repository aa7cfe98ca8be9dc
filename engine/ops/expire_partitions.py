"""Partition expiration: drop the partitions whose time lies more than an expiration time ago.

One job: pick the expired partitions of a table branch's latest snapshot and mark-delete them
in one OVERWRITE commit (``FileStoreCommit.drop_partitions``). No data file is deleted here:
snapshot expiration deletes them once no snapshot, tag or branch references them any more.

Semantics follow Paimon (``partition.*`` options, same defaults):

* ``values-time`` (default): a partition's time is parsed from its values. Without
  ``partition.timestamp-pattern`` the first partition column's value is the time text; with a
  pattern such as ``$dt $hour:00:00`` each ``$column`` is replaced by that column's value (the
  longest column name wins where names share a prefix). Without
  ``partition.timestamp-formatter`` the text is ``y-M-d`` with an optional `` H:m:s[.fraction]``;
  with one, a Java ``DateTimeFormatter`` pattern (``yyyyMMdd``, ``yyyy-MM-dd HH``; letters
  y M d H m s S and quoted literals) — a pattern without time fields means midnight. A partition
  whose time cannot be parsed, or holding a null value, never expires (logged).
* ``update-time``: a partition's time is the newest creation time of its live files.
* A partition expires when its time is strictly before the bound ``expiration_time`` gives
  (``engine.time_bound``: a duration is that long before now; the table option is a duration),
  compared on the local wall clock (partition values are wall-clock text). At most ``max_expires`` (default
  ``partition.expiration-max-num``) go per run, the first in the order of their joined values.
* A commit that loses against a concurrent change of those partitions is re-planned on the new
  latest snapshot, at most :data:`MAX_ATTEMPTS` times.

Automatic runs (:func:`run_after_commit`, called by ``Table.after_commit``) happen when
``partition.expiration-time`` is set and ``partition.expiration-check-interval`` has passed since
the table's last automatic check. That time is kept in ``.dyntable/partition-expiration-check``
(one small file, so every process and Spark job shares it) and cached in the process; an
automatic run never raises and is recorded in the maintenance log with trigger "automatic".
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import CommitConflictError, DyntableError, InvalidArgumentError
from engine.meta.binary_row import deserialize_row
from engine.meta.paths import join, partition_value_string
from engine.options import (
    END_INPUT_CHECK_PARTITION_EXPIRE,
    PARTITION_EXPIRATION_CHECK_INTERVAL,
    PARTITION_EXPIRATION_MAX_NUM,
    PARTITION_EXPIRATION_STRATEGY,
    PARTITION_EXPIRATION_TIME,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
)
from engine.store import BATCH_COMMIT_IDENTIFIER, FileStore
from engine.time_bound import TimeBound, parse_time_bound

MAX_ATTEMPTS = 5
CHECK_FILE = ".dyntable/partition-expiration-check"
STRATEGIES = ("values-time", "update-time")

log = logging.getLogger(__name__)
_last_check: dict[str, int] = {}  # table root + branch -> epoch ms of the last automatic check
_lock = threading.Lock()


@dataclass(frozen=True)
class PartitionExpiration:
    """The partitions a run expired (or would expire, with ``dry_run``), in Paimon's order.

    ``partitions``: column → value text, per partition; ``snapshot_id``: the OVERWRITE snapshot
    that dropped them (None for a dry run or when nothing expired); ``files``: data files
    mark-deleted; ``attempts``: commits tried.
    """

    partitions: tuple[dict[str, str], ...]
    snapshot_id: int | None = None
    dry_run: bool = False
    files: int = 0
    attempts: int = 0

    def texts(self) -> list[str]:
        """Each partition as ``k1=v1, k2=v2`` (Paimon's procedure output)."""
        return [", ".join(f"{k}={v}" for k, v in p.items()) for p in self.partitions]


# ---------------------------------------------------------------------------------------------
# Partition times

_DEFAULT_TIME = re.compile(
    r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?"
)
_FIELDS = {
    "y": "year",
    "u": "year",
    "M": "month",
    "L": "month",
    "d": "day",
    "H": "hour",
    "m": "minute",
    "s": "second",
    "S": "fraction",
}


def _compile_formatter(pattern: str) -> re.Pattern[str]:
    """A Java DateTimeFormatter pattern (the subset partition times use) as a regular expression."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise InvalidArgumentError(f"timestamp formatter {pattern!r} has an unclosed quote")
            out.append(re.escape(pattern[i + 1 : end]) if end > i + 1 else "'")
            i = end + 1
            continue
        if c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            n = j - i
            name = _FIELDS.get(c)
            if name is None:
                raise InvalidArgumentError(
                    f"timestamp formatter {pattern!r}: letter {c!r} is not supported; "
                    "use y, M, d, H, m, s, S "
                    "and quoted literals (e.g. 'yyyyMMdd', 'yyyy-MM-dd HH:mm:ss')"
                )
            if f"(?P<{name}>" in "".join(out):
                raise InvalidArgumentError(f"timestamp formatter {pattern!r} names the {name} twice")
            if name == "year":
                width = r"\d{4}" if n == 4 else (r"\d{2}" if n == 2 else r"\d{1,10}")
            elif name == "fraction":
                width = rf"\d{{{n}}}"
            else:
                width = r"\d{2}" if n == 2 else r"\d{1,2}"
            out.append(f"(?P<{name}>{width})")
            i = j
            continue
        out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def parse_partition_time(text: str, formatter: str | None) -> dt.datetime:
    """The wall-clock time of a partition's time text; ValueError when it is not one."""
    if formatter is None:
        m = _DEFAULT_TIME.fullmatch(text)
        if m is None:
            raise ValueError(f"{text!r} is not y-M-d[ H:m:s]")
        y, mo, d, h, mi, s, frac = m.groups()
        micros = int((frac or "0").ljust(9, "0")[:6])
        return dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micros)
    m = _compile_formatter(formatter).fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} does not match {formatter!r}")
    g = m.groupdict()
    year = int(g["year"]) if "year" in g else 1970
    if "year" in g and len(g["year"]) == 2:
        year += 2000
    frac = g.get("fraction") or "0"
    return dt.datetime(
        year,
        int(g.get("month") or 1),
        int(g.get("day") or 1),
        int(g.get("hour") or 0),
        int(g.get("minute") or 0),
        int(g.get("second") or 0),
        int(frac.ljust(9, "0")[:6]),
    )


def time_text(keys: Sequence[str], values: Sequence[str], pattern: str | None) -> str:
    """The time text of one partition: its first value, or ``pattern`` with ``$column`` replaced."""
    if pattern is None:
        return values[0]
    order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "$" and i + 1 < len(pattern):
            hit = next((k for k in order if pattern.startswith(keys[k], i + 1)), None)
            if hit is not None:
                out.append(values[hit])
                i += 1 + len(keys[hit])
                continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Selecting and dropping


def expired_partitions(
    store: FileStore,
    expire_before: dt.datetime,
    *,
    strategy: str,
    formatter: str | None,
    pattern: str | None,
    max_expires: int,
) -> tuple[list[dict[str, object]], list[dict[str, str]], int]:
    """Typed specs and value texts of the expired partitions of the latest snapshot, and their file count."""
    keys = list(store.partition_keys)
    types = store.partition_types
    default_name = store.options.partition_default_name
    entries = store.live_entries(store.snapshots.latest())
    files: dict[bytes, int] = {}
    newest: dict[bytes, int] = {}
    for e in entries:
        files[e.partition] = files.get(e.partition, 0) + 1
        created = e.file.creation_time_millis or 0
        newest[e.partition] = max(newest.get(e.partition, 0), created)
    picked: list[tuple[list[str], dict[str, object], bytes]] = []
    for part in files:
        values = deserialize_row(part, types)
        texts = [partition_value_string(v, t, default_name, True) for v, t in zip(values, types, strict=True)]
        if strategy == "update-time":
            # _CREATION_TIME is local wall-clock millis (Paimon's convention), like expire_before.
            when = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=newest[part])
        else:
            if any(v is None for v in values):
                log.warning(
                    "partition %s of %s holds a null value and never expires by its values; drop it "
                    "by hand or use partition.expiration-strategy=update-time",
                    texts,
                    store.paths.root,
                )
                continue
            try:
                when = parse_partition_time(time_text(keys, texts, pattern), formatter)
            except ValueError as err:
                log.warning(
                    "cannot read a time from partition %s of %s (%s); check partition.timestamp-formatter "
                    "/ partition.timestamp-pattern, or drop it by hand",
                    texts,
                    store.paths.root,
                    err,
                )
                continue
        if when < expire_before:
            picked.append((texts, dict(zip(keys, values, strict=True)), part))
    picked.sort(key=lambda p: ":".join(p[0]))
    picked = picked[:max_expires]
    return (
        [spec for _, spec, _ in picked],
        [dict(zip(keys, t, strict=True)) for t, _, _ in picked],
        sum(files[p] for _, _, p in picked),
    )


def expire_partitions(
    store: FileStore,
    *,
    expiration_time: object = None,
    timestamp_formatter: str | None = None,
    timestamp_pattern: str | None = None,
    max_expires: int | None = None,
    dry_run: bool = False,
    expire_strategy: str | None = None,
    now: dt.datetime | None = None,
) -> PartitionExpiration:
    """Mark-delete the expired partitions of ``store``'s branch (arguments default to its options).

    Raises:
        InvalidArgumentError: No expiration time (argument or option), an unpartitioned table, or a
            bad formatter/strategy/max_expires.
        CommitConflictError: Concurrent commits kept changing those partitions (after the retries).
    """
    opts = store.options
    if not store.partition_keys:
        raise InvalidArgumentError(
            f"table {store.paths.root} is not partitioned, so it has no partitions to expire"
        )
    if expiration_time is None:
        option_ms = opts.get(PARTITION_EXPIRATION_TIME)
        if option_ms is None:
            raise InvalidArgumentError(
                "no expiration time: pass expiration_time (e.g. '7 d') "
                "or set the table option partition.expiration-time"
            )
        bound = TimeBound.ago(int(option_ms))  # the option is a duration: that long before now
    else:
        bound = parse_time_bound(expiration_time, "expiration_time")
    strategy = (expire_strategy or opts.get(PARTITION_EXPIRATION_STRATEGY)).lower()
    if strategy not in STRATEGIES:
        raise InvalidArgumentError(f"expire_strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    formatter = (
        timestamp_formatter if timestamp_formatter is not None else opts.get(PARTITION_TIMESTAMP_FORMATTER)
    )
    pattern = timestamp_pattern if timestamp_pattern is not None else opts.get(PARTITION_TIMESTAMP_PATTERN)
    if formatter is not None:
        _compile_formatter(formatter)  # a bad formatter is the caller's error, not a per-partition warning
    limit = opts.get(PARTITION_EXPIRATION_MAX_NUM) if max_expires is None else max_expires
    if limit < 1:
        raise InvalidArgumentError(f"max_expires must be at least 1, not {limit}")
    expire_before = bound.local_datetime(now)  # partition times are local wall-clock times
    from engine.commit import FileStoreCommit

    attempt = 0
    while True:
        attempt += 1
        specs, texts, files = expired_partitions(
            store, expire_before, strategy=strategy, formatter=formatter, pattern=pattern, max_expires=limit
        )
        if dry_run or not specs:
            return PartitionExpiration(tuple(texts), None, dry_run, files, 0 if dry_run else attempt - 1)
        try:
            result = FileStoreCommit(store).drop_partitions(specs, if_exists=True)
        except CommitConflictError:
            if attempt >= MAX_ATTEMPTS:
                raise
            log.info(
                "partition expiration of %s lost a race (attempt %d); planning again",
                store.paths.root,
                attempt,
            )
            continue
        return PartitionExpiration(tuple(texts), result.last_snapshot_id, False, files, attempt)


def expire_table_partitions(
    store: FileStore, *, trigger: str = "called", **kwargs: object
) -> PartitionExpiration:
    """:func:`expire_partitions` recorded in the table's maintenance log (also when it fails)."""
    from engine.ops.maintenance_log import recorded_run

    with recorded_run(
        store.io,
        store.paths.root,
        "expire_partitions",
        trigger=trigger,
        branch=store.branch,
        dry_run=bool(kwargs.get("dry_run")),
    ) as record:
        result = expire_partitions(store, **kwargs)  # type: ignore[arg-type]
        record.details = {
            "partitions": result.texts(),
            "snapshot_id": result.snapshot_id,
            "mark_deleted_files": result.files,
            "attempts": result.attempts,
        }
    return result


# ---------------------------------------------------------------------------------------------
# Automatic runs


def _check_file(store: FileStore) -> str:
    suffix = "" if store.is_main else f"-{store.branch}"
    return join(store.paths.root, CHECK_FILE + suffix)


def _due(store: FileStore, interval_ms: int, now_ms: int) -> bool:
    """Whether the check interval passed since the last automatic check (this process or the file)."""
    key = f"{store.paths.root}#{store.branch}"
    with _lock:
        last = _last_check.get(key)
    if last is not None and now_ms - last < interval_ms:
        return False
    try:
        stored = int(store.io.read_text(_check_file(store)).strip() or 0)
    except FileNotFoundError:
        stored = 0
    except (DyntableError, OSError, ValueError):
        stored = 0  # an unreadable mark only makes the check run once more
    with _lock:
        _last_check[key] = max(stored, _last_check.get(key) or 0)
    return now_ms - stored >= interval_ms


def _batch_commit(store: FileStore) -> bool:
    """Whether the commit just made ended a batch write (Paimon's end of input: the batch identifier)."""
    latest = store.snapshots.latest()
    return latest is not None and latest.commit_identifier == BATCH_COMMIT_IDENTIFIER


def _mark_checked(store: FileStore, now_ms: int) -> None:
    with _lock:
        _last_check[f"{store.paths.root}#{store.branch}"] = now_ms
    store.io.write_text(_check_file(store), str(now_ms))


def run_after_commit(store: FileStore, *, now_ms: int | None = None) -> PartitionExpiration | None:
    """The automatic expiration after a commit: when the option is set and the interval passed.

    Never raises: a failure is logged and recorded, and the next commit after the interval tries
    again. Returns what expired (None when nothing was due).
    """
    try:
        opts = store.options
        if not store.partition_keys or opts.get(PARTITION_EXPIRATION_TIME) is None:
            return None
        now = int(time.time() * 1000) if now_ms is None else now_ms
        end_input = bool(opts.get(END_INPUT_CHECK_PARTITION_EXPIRE)) and _batch_commit(store)
        if not end_input and not _due(store, opts.get(PARTITION_EXPIRATION_CHECK_INTERVAL), now):
            return None
        _mark_checked(store, now)
        return expire_table_partitions(store, trigger="automatic")
    except Exception as e:  # noqa: BLE001 - the commit is published; expiration must not change its outcome
        log.warning(
            "automatic partition expiration of %s failed and will be tried again after the check "
            "interval: %s",
            store.paths.root,
            e,
        )
        return None
