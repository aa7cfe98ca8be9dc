"""Checking the option map a user gives a table (CREATE, ALTER, dynamic options).

One job: decide, for every key and value, whether it is a known option whose value parses
(``engine.options`` declares them), a Paimon option dyntable refuses with the reason, an unknown
key stored as a plain property (with a warning when it is a near miss of a known key), or an
option that cannot change once the table has data.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping

from engine.errors import InvalidArgumentError
from engine.options import _BY_KEY, _FIELD_SUFFIXES, find_option

log = logging.getLogger(__name__)


# Paimon option keys without a '.' that dyntable does not declare (stored, never interpreted): known
# keys for the near-miss warning.
_PAIMON_FLAT_KEYS = frozenset({
    "add-column-before-partition", "async-file-write", "auto-create", "blob-as-descriptor",
    "blob-descriptor-field", "blob-field", "blob-view-field", "blob-write-null-on-fetch-failure",
    "blob-write-null-on-missing-file", "bucket-append-ordered", "cache-page-size",
    "disable-explicit-type-casting", "dynamic-partition-overwrite", "file-reader-async-threshold",
    "force-lookup", "incremental-between-scan-mode",
    "incremental-between-tag-to-snapshot", "incremental-to-auto-tag", "index-file-in-data-file-dir",
    "local-merge-buffer-size", "lookup-compact", "lookup-wait", "overwrite-upgrade", "page-size",
    "pk-clustering-override", "sort-engine", "sort-spill-buffer-size", "sort-spill-threshold",
    "spill-compression", "streaming-read-append-overwrite", "streaming-read-overwrite",
    "target-file-row-num", "vector-field", "write-buffer-for-append", "write-buffer-spillable",
    "write-max-writers-to-spill",
})  # fmt: skip
# Paimon options dyntable does not implement whose effect a reader or writer would miss: refused
# (a value set by another engine on a shared table is kept and never re-validated on read).
UNSUPPORTED_PAIMON_OPTIONS: dict[str, str] = {
    "data-file.external-paths": "dyntable writes data files inside the table directory only",
    "data-file.external-paths.strategy": "dyntable writes data files inside the table directory only",
    "data-file.external-paths.specific-fs": "dyntable writes data files inside the table directory only",
    "record-level.expire-time": "dyntable does not expire single records",
    "record-level.time-field": "dyntable does not expire single records",
    "ignore-update-before": "dyntable does not drop UPDATE_BEFORE rows on write (use ignore-delete)",
    "data-evolution.enabled": "data evolution (row-id based column updates) is not supported",
    "chain-table.enabled": "chain tables are not supported",
}


def _known_keys() -> list[str]:
    return [*_BY_KEY, *_PAIMON_FLAT_KEYS, *UNSUPPORTED_PAIMON_OPTIONS]


def near_miss(key: str) -> str | None:
    """The known option key ``key`` most likely misspells (difflib ratio >= 0.8), else None."""
    if key.startswith("fields.") and key.count(".") >= 2:
        head, _, suffix = key.rpartition(".")
        if suffix in _FIELD_SUFFIXES:
            return None
        close = difflib.get_close_matches(suffix, _FIELD_SUFFIXES, n=1, cutoff=0.8)
        return f"{head}.{close[0]}" if close else None
    close = difflib.get_close_matches(key, _known_keys(), n=1, cutoff=0.8)
    return close[0] if close else None


def validate_options(options: Mapping[str, str]) -> list[str]:
    """Check keys and values of table options as a user sets them (CREATE / ALTER / dynamic).

    Known keys (and pattern keys such as ``fields.price.aggregate-function``) must parse and
    pass their checks; the Paimon options dyntable cannot honour are refused (see the module
    docstring). Any other key is accepted and stored, as Paimon does; a near-miss of a known key
    is logged as a warning.

    Returns:
        The warnings (one per near-miss key), also logged to this module's logger.

    Raises:
        InvalidArgumentError: a value does not parse or is out of range, an option is not
            supported by dyntable, or a key/value is not a string.
    """
    warnings: list[str] = []
    for key, value in options.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidArgumentError(f"option {key!r} = {value!r}: keys and values must be strings")
        option = find_option(key)
        if option is not None:
            option.parse(value, key)
            continue
        reason = UNSUPPORTED_PAIMON_OPTIONS.get(key)
        if reason is not None:
            raise InvalidArgumentError(
                f"option '{key}' is not supported by dyntable: {reason}; remove it from the table options"
            )
        guess = near_miss(key)
        if guess is not None:
            text = (f"option '{key}' is not an option dyntable or Paimon knows; it is stored as a plain "
                    f"table property. Did you mean '{guess}'?")
            log.warning("%s", text)
            warnings.append(text)
    return warnings


def check_alterable(key: str) -> None:
    """Refuse a change of an option that cannot change once the table has data.

    Raises:
        InvalidArgumentError: ``key`` is immutable.
    """
    option = find_option(key)
    if option is None or not option.immutable:
        return
    hint = {
        "bucket": " Use ALTER TABLE ... CLUSTERED INTO n BUCKETS, which rewrites the data.",
        "primary-key": " Use ALTER TABLE ... ADD PRIMARY KEY, which rewrites the data.",
    }.get(key, " Create a new table with the new value and copy the data.")
    raise InvalidArgumentError(f"option '{key}' cannot be changed on a table that has data.{hint}")


__all__ = ["UNSUPPORTED_PAIMON_OPTIONS", "check_alterable", "near_miss", "validate_options"]
