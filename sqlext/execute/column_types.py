"""Column type text of dyntable's own DDL read as the session's Spark reads it.

A Spark session names two timestamp types by the one word ``TIMESTAMP``: its setting
``spark.sql.timestampType`` (``TIMESTAMP_LTZ`` unless set, the instant shown in the session's
zone; or ``TIMESTAMP_NTZ``, the wall-clock time) says which. Paimon's Spark connector stores
Spark's TIMESTAMP as Paimon's TIMESTAMP WITH LOCAL TIME ZONE and TIMESTAMP_NTZ as Paimon's
TIMESTAMP, so ``CREATE TABLE t (ts TIMESTAMP)`` here makes the column Spark's own
``CREATE TABLE`` would make, and Spark's casts and literals (``CAST(x AS TIMESTAMP)``,
``TIMESTAMP '…'``, which Spark evaluates) agree with it. ``TIMESTAMP_LTZ``, ``TIMESTAMP_NTZ`` and
Paimon's ``TIMESTAMP WITH LOCAL TIME ZONE`` / ``WITHOUT TIME ZONE`` always name their kind.
Nothing here imports pyspark: planners read the setting through their context.
"""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

from engine import default_text
from engine.types import DataType, TypeRoot, parse_sql_type

TIMESTAMP_TYPE_SETTING = "spark.sql.timestampType"


def timestamp_is_ltz(setting: str | None) -> bool:
    """What a bare ``TIMESTAMP`` means under the session's ``spark.sql.timestampType`` value
    (None: unset, Spark's default TIMESTAMP_LTZ)."""
    return (setting or "TIMESTAMP_LTZ").strip().upper() != "TIMESTAMP_NTZ"


def column_type(text: str, timestamp_setting: str | None) -> DataType:
    """The Paimon type of a column type written in DDL, a bare ``TIMESTAMP`` (alone or nested in
    ARRAY/MAP/STRUCT) meaning what the session's ``spark.sql.timestampType`` says.

    Raises:
        InvalidArgumentError: the text is not a type.
    """
    return parse_sql_type(text, timestamp_ltz=timestamp_is_ltz(timestamp_setting))


ZONE_SETTING = "spark.sql.session.timeZone"
# A typed literal as a DEFAULT (Spark allows them): the quoted text is the value.
_TYPED_LITERAL = re.compile(
    r"^(?:TIMESTAMP(?:_LTZ|_NTZ)?|DATE)\s*('(?:[^'\\]|\\.)*')$", re.IGNORECASE | re.DOTALL
)


def stored_default(text: str | None, dtype: DataType | None, session_zone: str | None) -> str | None:
    """The text a column's DEFAULT is stored as (the field's ``defaultValue``), None for no default.

    ``DATE '…'`` / ``TIMESTAMP '…'`` literals are stored as their quoted text. An instant column's
    (TIMESTAMP_LTZ) wall-clock default is read in the session's zone, as Spark reads it, and stored
    as its UTC wall time: the stored text then means one instant for every reader (the engine's
    writers cast it as UTC; Java Paimon casts it in its JVM's zone, UTC on a server set to UTC).
    """
    if text is None:
        return None
    text = text.strip()
    if text.upper() == "NULL":
        return None
    typed = _TYPED_LITERAL.match(text)
    if typed:
        text = typed.group(1)
    if dtype is None or dtype.root is not TypeRoot.TIMESTAMP_LTZ:
        return text
    value = default_text(text)
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return text  # not a timestamp: the engine's check refuses it with Paimon's message
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo(session_zone or "UTC"))
    utc = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return "'" + utc.isoformat(sep=" ") + "'"
