"""Paimon's dynamic table options: ``SET spark.paimon.*`` session keys and hints, as one table's overrides.

Paimon's Spark integration lets a session tune table options without altering the table:
``SET spark.paimon.<option> = v`` applies to every table, ``SET spark.paimon.<catalog>.<db>.<table>.
<option> = v`` to the tables it names (each of catalog, db and table may be ``*``); table keys win
over global ones, and a statement's ``/*+ OPTIONS(...) */`` hint wins over both. The SQL session
turns these into the options of each read and write request; the data source applies the ones
that are table options to the table it opens (:func:`table_overrides`). An option that cannot
apply is refused here, never ignored: an unknown key, and an immutable one (``bucket``,
``primary-key``, ``merge-engine``, …), which only a stored table option may carry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from engine import InvalidArgumentError, near_miss, validate_options
from engine.options import find_option

PREFIX = "spark.paimon."
# Catalog names a table-specific key may use for dyntable's tables (Spark's session catalog, and
# the names dyntable and Paimon's docs give the catalog).
CATALOG_NAMES = frozenset({"*", "dyntable", "spark_catalog", "paimon"})
_TABLE_KEY = re.compile(r"([^.]+)\.([^.]+)\.([^.]+)\.(.+)")


def split_key(key: str) -> tuple[tuple[str, str] | None, str]:
    """``spark.paimon.`` key → ((database, table) or None for a global key, option key)."""
    rest = key[len(PREFIX):]
    m = _TABLE_KEY.fullmatch(rest)
    if m is not None and m.group(1).lower() in CATALOG_NAMES:
        return (m.group(2), m.group(3)), m.group(4)
    return None, rest


def check_option(key: str, value: str, where: str) -> None:
    """Refuse a dynamic option that could not apply: unknown, unsupported, immutable or a bad value.

    Raises:
        InvalidArgumentError: with what to do instead.
    """
    option = find_option(key)
    if option is None:
        validate_options({key: value})  # an option dyntable cannot honour says why
        guess = near_miss(key)
        hint = f" Did you mean '{guess}'?" if guess else ""
        raise InvalidArgumentError(
            f"{where}: '{key}' is not a table option dyntable knows, so it would have no effect.{hint}"
        )
    if option.immutable:
        raise InvalidArgumentError(
            f"{where}: option '{key}' cannot change for a statement (the table's files depend on it);"
            " set it when creating the table"
        )
    validate_options({key: value})


def check_session_key(key: str, value: str) -> None:
    """Validate ``SET spark.paimon.… = value`` before the session keeps it."""
    _, option = split_key(key)
    check_option(option, value, f"SET {key}")


def session_overrides(options: Mapping[str, str], database: str, table: str) -> dict[str, str]:
    """The dynamic options a session's ``spark.paimon.*`` keys give ``database.table``."""
    global_: dict[str, str] = {}
    specific: dict[str, str] = {}
    for key, value in options.items():
        if not key.startswith(PREFIX):
            continue
        scope, option = split_key(key)
        if scope is None:
            global_[option] = value
        elif all(p == "*" or p.lower() == n.lower() for p, n in zip(scope, (database, table), strict=True)):
            specific[option] = value
    return {**global_, **specific}


def table_overrides(options: Mapping[str, str]) -> dict[str, str]:
    """The table options among a request's other options (its passthrough): the dynamic options
    the opened table applies. Other keys (``consumer-id``…) are the data source's own."""
    found = {k: v for k, v in options.items() if find_option(k) is not None}
    for key, value in found.items():
        check_option(key, value, "dynamic option")
    return found
