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

from engine.types import DataType, parse_sql_type

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
