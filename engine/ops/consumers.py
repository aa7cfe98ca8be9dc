"""Clearing streaming consumers of one table branch (Paimon's ``clear_consumers``).

One job: delete the consumer files whose id matches an *including* regular expression (default:
every consumer) and does not match an *excluding* one, as Paimon's ``ConsumerManager`` does
(both patterns must match the whole id). A cleared consumer stops protecting snapshots from
expiration; a streaming reader using it starts over from its scan mode. Recorded in the
maintenance log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import InvalidArgumentError
from engine.meta.refs import ConsumerStore
from engine.ops.maintenance_log import recorded_run
from engine.store import FileStore


@dataclass(frozen=True)
class ClearedConsumers:
    """The consumer ids that were deleted (or, with ``dry_run``, would be)."""

    ids: tuple[str, ...]
    dry_run: bool = False


def _pattern(text: str | None, what: str) -> re.Pattern[str] | None:
    if text is None or not text.strip():
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise InvalidArgumentError(f"{what} {text!r} is not a regular expression: {e}") from None


def clear_consumers(
    store: FileStore, including: str | None = None, excluding: str | None = None, *, dry_run: bool = False
) -> ClearedConsumers:
    """Delete the consumers matching ``including`` (all when None) and not ``excluding``.

    Raises:
        InvalidArgumentError: a pattern is not a valid regular expression (nothing is deleted).
    """
    inc = _pattern(including, "including_consumers")
    exc = _pattern(excluding, "excluding_consumers")
    consumers = ConsumerStore(store.io, store.paths)
    doomed = tuple(
        cid
        for cid in consumers.ids()
        if (inc is None or inc.fullmatch(cid)) and not (exc is not None and exc.fullmatch(cid))
    )
    with recorded_run(
        store.io, store.paths.root, "clear_consumers", branch=store.branch, dry_run=dry_run
    ) as rec:
        if not dry_run:
            for cid in doomed:
                consumers.delete(cid)
        rec.deleted_files = len(doomed)
        rec.details = {"consumers": list(doomed)}
    return ClearedConsumers(doomed, dry_run)
