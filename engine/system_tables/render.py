"""Text forms of metadata values exactly as Java Paimon's system tables print them.

Two renderings exist in Java and both are reproduced here:

* **SQL cast to STRING** (``CastExecutors.resolveToString``), used for partition values: DATE as
  ``2024-01-01``, TIMESTAMP(p) as ``2024-01-01 10:00:00.000`` (fraction trimmed of trailing
  zeros but never below ``p`` digits), BINARY decoded as UTF-8. A partition *row* is
  ``{v1, v2}`` with ``null`` for a null field (``RowToStringCastRule``); a partition *path* for
  ``$partitions`` is ``k1=v1/k2=v2`` with the default partition name for nulls.
* **Java ``toString`` of the internal object** (``InternalRowUtils.get``), used for key and
  value statistics: DATE as its epoch-day integer, TIME as millis of day, TIMESTAMP as
  ``LocalDateTime.toString`` (``2024-01-01T10:00``), DECIMAL as a plain string. Keys print as
  ``Arrays.toString`` (``[a, 1]``) and statistics as a name-sorted ``Map.toString``
  (``{a=1, b=x}``).

Invariants: FLOAT/DOUBLE follow ``Float.toString``/``Double.toString`` (plain notation for
10^-3 <= |x| < 10^7, otherwise ``1.0E7`` style, shortest round-trip digits); TIMESTAMP_LTZ
values are shown in UTC (Java uses the JVM zone); BINARY statistics print as hex (Java prints a
meaningless array identity). Every function is total over the values ``deserialize_row`` returns.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Mapping, Sequence

import numpy as np

from engine.meta.paths import java_local_time
from engine.types import DataType, TypeRoot

_EPOCH_DAY = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)


# -- numbers ------------------------------------------------------------------------------------
def java_float_string(value: float, single: bool = False) -> str:
    """``Double.toString`` (or ``Float.toString`` when ``single``) of a finite or special value."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    # Python's repr (and numpy's float32 str) give the shortest digits that round-trip, as
    # modern JDKs do; only the layout differs.
    shortest = str(np.float32(value)) if single else repr(float(value))
    sign, digit_tuple, exp = decimal.Decimal(shortest).normalize().as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple))
    e = exp + len(digits) - 1  # value = d.ddd × 10^e
    prefix = "-" if sign else ""
    if -3 <= e < 7:
        if e >= 0:
            whole = digits[: e + 1].ljust(e + 1, "0")
            frac = digits[e + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-e - 1) + digits
        return f"{prefix}{whole}.{frac}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{e}"


def _decimal_string(value: object) -> str:
    return format(decimal.Decimal(value), "f")  # type: ignore[arg-type]


# -- temporal -----------------------------------------------------------------------------------
def _timestamp_parts(value: object) -> tuple[dt.datetime, int]:
    """(naive wall-clock datetime at second precision, nano-of-second) of a decoded timestamp."""
    if isinstance(value, np.datetime64):
        nanos = int(value.astype("datetime64[ns]").astype(np.int64))
        seconds, nano = divmod(nanos, 1_000_000_000)
        return _EPOCH + dt.timedelta(seconds=seconds), nano
    assert isinstance(value, dt.datetime)
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.replace(microsecond=0), value.microsecond * 1000




def _sql_fraction(nano: int, precision: int) -> str:
    """Fraction digits of a SQL timestamp string: trailing zeros trimmed down to ``precision``."""
    fraction = f"{nano:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    return f".{fraction}" if fraction else ""


def _time_parts(value: object) -> tuple[int, int, int, int]:
    if isinstance(value, dt.time):
        return value.hour, value.minute, value.second, value.microsecond * 1000
    millis = int(value)  # type: ignore[call-overload]
    return millis // 3_600_000, millis // 60_000 % 60, millis // 1000 % 60, millis % 1000 * 1_000_000


# -- the two renderings -------------------------------------------------------------------------
def sql_string(value: object, dtype: DataType) -> str:
    """A non-null value cast to STRING with Paimon's SQL cast rules (partition values)."""
    root = dtype.root
    if root is TypeRoot.BOOLEAN:
        return "true" if value else "false"
    if root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        return java_float_string(float(value), single=root is TypeRoot.FLOAT)  # type: ignore[arg-type]
    if root is TypeRoot.DECIMAL:
        return _decimal_string(value)
    if root is TypeRoot.DATE:
        assert isinstance(value, dt.date)
        return value.isoformat()
    if root is TypeRoot.TIME:
        h, m, s, nano = _time_parts(value)
        return f"{h:02d}:{m:02d}:{s:02d}" + _sql_fraction(nano, dtype.precision or 0)
    if root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        wall, nano = _timestamp_parts(value)
        precision = 6 if dtype.precision is None else dtype.precision
        return wall.strftime("%Y-%m-%d %H:%M:%S") + _sql_fraction(nano, precision)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def java_string(value: object, dtype: DataType) -> str:
    """Java ``toString`` of the internal object Paimon holds for a value; ``null`` for None."""
    if value is None:
        return "null"
    root = dtype.root
    if root is TypeRoot.BOOLEAN:
        return "true" if value else "false"
    if root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        return java_float_string(float(value), single=root is TypeRoot.FLOAT)  # type: ignore[arg-type]
    if root is TypeRoot.DECIMAL:
        return _decimal_string(value)
    if root is TypeRoot.DATE and isinstance(value, dt.date):
        return str((value - _EPOCH_DAY).days)
    if root is TypeRoot.TIME and isinstance(value, dt.time):
        h, m, s, nano = _time_parts(value)
        return str(((h * 60 + m) * 60 + s) * 1000 + nano // 1_000_000)
    if root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        wall, nano = _timestamp_parts(value)
        return f"{wall.date().isoformat()}T{java_local_time(wall.hour, wall.minute, wall.second, nano)}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def row_string(values: Sequence[object], types: Sequence[DataType]) -> str:
    """A row cast to STRING: ``{v1, v2}`` (``{}`` for an empty row, ``null`` for null fields)."""
    parts = ["null" if v is None else sql_string(v, t) for v, t in zip(values, types, strict=True)]
    return "{" + ", ".join(parts) + "}"


def partition_spec_string(
    keys: Sequence[str], values: Sequence[object], types: Sequence[DataType], default_name: str
) -> str:
    """``k1=v1/k2=v2`` with SQL-cast values and ``default_name`` for nulls ('' when unpartitioned)."""
    return "/".join(
        f"{k}={default_name if v is None else sql_string(v, t)}"
        for k, v, t in zip(keys, values, types, strict=True)
    )


def key_string(values: Sequence[object], types: Sequence[DataType]) -> str:
    """``Arrays.toString`` of a key row's internal objects: ``[a, 1]``."""
    return "[" + ", ".join(java_string(v, t) for v, t in zip(values, types, strict=True)) + "]"


def stats_map_string(values: Mapping[str, str]) -> str:
    """``TreeMap.toString`` of already rendered values: ``{a=1, b=x}`` ordered by column name."""
    return "{" + ", ".join(f"{k}={values[k]}" for k in sorted(values)) + "}"


def duration_string(millis: int) -> str:
    """``java.time.Duration.toString`` of a whole number of milliseconds (``PT24H``, ``PT1.5S``)."""
    if millis == 0:
        return "PT0S"
    total_seconds = int(millis / 1000)  # truncation towards zero, as Java divides
    frac_ms = abs(millis) % 1000
    hours = int(total_seconds / 3600)
    minutes = int((total_seconds % 3600 if total_seconds >= 0 else -(-total_seconds % 3600)) / 60)
    seconds = total_seconds - hours * 3600 - minutes * 60
    text = "PT"
    if hours:
        text += f"{hours}H"
    if minutes:
        text += f"{minutes}M"
    if seconds == 0 and frac_ms == 0:
        return text
    sign = "-" if millis < 0 and seconds == 0 else ""
    text += f"{sign}{seconds}"
    if frac_ms:
        text += "." + f"{frac_ms:03d}".rstrip("0")
    return text + "S"


def epoch_millis(value: dt.datetime) -> int:
    """Milliseconds of a naive wall-clock datetime, read as if it were UTC (for TIMESTAMP(3) columns)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return (value - _EPOCH) // dt.timedelta(milliseconds=1)
