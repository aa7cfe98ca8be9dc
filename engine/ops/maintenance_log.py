"""The maintenance log: one small JSON record per maintenance run, readable as a system table.

One job: record what a maintenance procedure (snapshot/partition/tag expiration, orphan cleanup,
retention mark, …) did — automatic or called — and list those records back.

Layout: ``<table>/.dyntable/maintenance-log/<started_ms:013d>-<run id>.json``, one file per run,
written once with a plain put. One file per run (not an appended log) because object stores
cannot append, and two processes maintaining one table at once must never overwrite each
other's record. Paimon readers never look under ``.dyntable/``; orphan cleanup must skip it.

The log is bounded: after writing, the writer deletes the oldest records beyond the newest
1000. Recording never raises: a maintenance run whose
record cannot be written still did its work (the failure is logged to the Python logger).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.io import FileIO
from engine.meta.paths import join

LOG_DIR = ".dyntable/maintenance-log"
DEFAULT_NUM_RETAINED = 1000  # records kept per table: months of hourly runs, a few hundred KB

_logger = logging.getLogger(__name__)


@dataclass
class MaintenanceRecord:
    """One run of one maintenance procedure.

    ``deleted_files``/``deleted_bytes`` are what was deleted (or, with ``dry_run``, what would
    have been); ``details`` holds procedure-specific counters (e.g. ``{"snapshots": 12}``);
    ``error`` is ``"<ErrorType>: message"`` when the run failed, else None.
    """

    procedure: str
    trigger: str  # "automatic" or "called"
    branch: str = "main"
    started_at_ms: int = 0
    duration_ms: int = 0
    dry_run: bool = False
    deleted_files: int = 0
    deleted_bytes: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    run_id: str = ""


def _log_dir(table_root: str) -> str:
    return join(table_root.rstrip("/"), LOG_DIR)


def write_record(
    io: FileIO, table_root: str, record: MaintenanceRecord, *, num_retained: int = DEFAULT_NUM_RETAINED
) -> None:
    """Store ``record`` and prune the oldest records beyond ``num_retained``; never raises."""
    try:
        if not record.run_id:
            record.run_id = uuid.uuid4().hex[:12]
        name = f"{record.started_at_ms:013d}-{record.run_id}.json"
        io.write_bytes(join(_log_dir(table_root), name), json.dumps(asdict(record), sort_keys=True).encode())
        statuses = sorted(
            (s for s in io.list_dir(_log_dir(table_root)) if not s.is_dir), key=lambda s: s.path
        )
        for stale in statuses[: max(0, len(statuses) - max(1, num_retained))]:
            io.delete(stale.path)
    except Exception:  # noqa: BLE001 - the run's work is done; losing its record must not fail it
        _logger.warning("could not write the maintenance log record of %s", record.procedure, exc_info=True)


def read_records(io: FileIO, table_root: str) -> list[MaintenanceRecord]:
    """Every stored record, oldest first (records that cannot be parsed are skipped, logged)."""
    directory = _log_dir(table_root)
    if not io.exists(directory):
        return []
    records = []
    for status in sorted((s for s in io.list_dir(directory) if not s.is_dir), key=lambda s: s.path):
        try:
            records.append(MaintenanceRecord(**json.loads(io.read_bytes(status.path))))
        except FileNotFoundError:
            continue  # pruned by a concurrent writer
        except (ValueError, TypeError):
            _logger.warning("skipping an unreadable maintenance log record %s", status.path)
    return records


# (table root, procedure, branch) -> (newest record name read, newest matching record): each record
# file is read at most once per process by last_record, whatever the log holds.
_LAST: dict[tuple[str, str, str], tuple[str, MaintenanceRecord | None]] = {}
_LAST_LOCK = threading.Lock()


def last_record(io: FileIO, table_root: str, procedure: str, branch: str) -> MaintenanceRecord | None:
    """The newest successful, real (not dry-run) record of ``procedure`` on ``branch``, or None.

    One listing per call; a record file is read once per process (the answer is cached with the
    newest name read, and only newer records are read next time; a log whose cached newest
    record is gone — a dropped and recreated table — is read again from scratch).
    """
    directory = _log_dir(table_root)
    names = sorted(s.path for s in io.list_dir(directory) if not s.is_dir) if io.exists(directory) else []
    key = (table_root.rstrip("/"), procedure, branch)
    with _LAST_LOCK:
        seen, found = _LAST.get(key, ("", None))
    if seen and seen not in names:
        seen, found = "", None
    for path in reversed([n for n in names if n > seen]):
        try:
            record = MaintenanceRecord(**json.loads(io.read_bytes(path)))
        except FileNotFoundError:
            continue  # pruned by a concurrent writer
        except (ValueError, TypeError):
            continue  # unreadable: read_records logs it
        wanted = (procedure, branch, None, False)
        if (record.procedure, record.branch, record.error, record.dry_run) == wanted:
            found = record
            break
    if names:
        with _LAST_LOCK:
            _LAST[key] = (names[-1], found)
    return found


@contextmanager
def recorded_run(
    io: FileIO,
    table_root: str,
    procedure: str,
    *,
    trigger: str = "called",
    branch: str = "main",
    dry_run: bool = False,
    num_retained: int = DEFAULT_NUM_RETAINED,
) -> Iterator[MaintenanceRecord]:
    """Time a maintenance run and store its record, also when it raises (the error is recorded
    and re-raised). The body fills ``deleted_files``, ``deleted_bytes`` and ``details``."""
    record = MaintenanceRecord(procedure=procedure, trigger=trigger, branch=branch, dry_run=dry_run)
    record.started_at_ms = int(time.time() * 1000)
    start = time.monotonic()
    try:
        yield record
    except BaseException as e:
        record.error = f"{type(e).__name__}: {e}"
        raise
    finally:
        record.duration_ms = int((time.monotonic() - start) * 1000)
        write_record(io, table_root, record, num_retained=num_retained)
