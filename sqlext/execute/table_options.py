"""The table options statements read besides the engine's: dyntable's own computed columns and
watermarks, stored as ``dyntable.computed-column.<name>`` / ``dyntable.watermark.<column>`` so
that any Paimon reader keeps them (and hidden again where options are shown), and Paimon's column
defaults (the field's ``defaultValue``, or the older ``fields.<c>.default-value``) as the SQL
expressions writes fill in."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping

from engine import Table, default_text
from engine.types import DataType, TypeRoot

COMPUTED_PREFIX = "dyntable.computed-column."
WATERMARK_PREFIX = "dyntable.watermark."
INTERNAL_OPTION_PREFIXES = (COMPUTED_PREFIX, WATERMARK_PREFIX)
# The property that is the table's comment, not an option (Spark's reserved key; Paimon's schema comment).
COMMENT_PROPERTY = "comment"
# Session options ``SET table-storage.<option> = …`` are the options of the tables CREATE TABLE makes.
STORAGE_PREFIX = "table-storage."
_DEFAULT_VALUE = re.compile(r"^fields\.(.+)\.default-value$")


def computed_columns(options: Mapping[str, str]) -> dict[str, str]:
    """Each computed column's expression, by column name."""
    return {k[len(COMPUTED_PREFIX):]: v for k, v in options.items() if k.startswith(COMPUTED_PREFIX)}


def watermarks(options: Mapping[str, str]) -> dict[str, str]:
    """Each watermark's expression, by the column it is declared on."""
    return {k[len(WATERMARK_PREFIX):]: v for k, v in options.items() if k.startswith(WATERMARK_PREFIX)}


def column_defaults(table: Table, type_text: Callable[[DataType], str]) -> dict[str, str]:
    """``{column: SQL expression of its declared default}``: the field's ``defaultValue`` (Paimon
    1.2+; the text without its quotes, cast to the column's type, as Paimon's writers read it), else
    the older option ``fields.<c>.default-value``; cast to the type as ``type_text`` spells it for
    the SQL engine."""
    types = {f.name: f.type for f in table.schema.fields}
    texts = {}
    for key, value in table.schema.options.items():
        m = _DEFAULT_VALUE.match(key)
        if m and m.group(1) in types:
            texts[m.group(1)] = str(value)
    texts.update(
        {f.name: default_text(f.default_value) for f in table.schema.fields if f.default_value is not None}
    )
    out = {}
    for name, value in texts.items():
        instant = utc_micros(value) if types[name].root is TypeRoot.TIMESTAMP_LTZ else None
        if instant is not None:  # stored as UTC wall time: a CAST would read it in the session's zone
            out[name] = f"timestamp_micros({instant})"
            continue
        text = value.replace("\\", "\\\\").replace("'", "\\'")
        out[name] = f"CAST('{text}' AS {type_text(types[name])})"
    return out


def utc_micros(text: str) -> int | None:
    """Microseconds since the epoch of an instant default stored as UTC wall time (None: not a time)."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


def table_defaults(options: Mapping[str, str]) -> dict[str, str]:
    """The table options a session's ``table-storage.*`` options give every table it creates."""
    return {k[len(STORAGE_PREFIX):]: v for k, v in options.items() if k.startswith(STORAGE_PREFIX)}
