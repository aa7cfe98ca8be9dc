"""The table options statements read besides the engine's: dyntable's own computed columns and
watermarks, stored as ``dyntable.computed-column.<name>`` / ``dyntable.watermark.<column>`` so
that any Paimon reader keeps them (and hidden again where options are shown), and Paimon's column
defaults (``fields.<c>.default-value``) as the SQL expressions writes fill in."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from engine import Table
from engine.types import DataType

COMPUTED_PREFIX = "dyntable.computed-column."
WATERMARK_PREFIX = "dyntable.watermark."
INTERNAL_OPTION_PREFIXES = (COMPUTED_PREFIX, WATERMARK_PREFIX)
# The property that is the table's comment, not an option (Spark's reserved key; Paimon's schema comment).
COMMENT_PROPERTY = "comment"
_DEFAULT_VALUE = re.compile(r"^fields\.(.+)\.default-value$")


def computed_columns(options: Mapping[str, str]) -> dict[str, str]:
    """Each computed column's expression, by column name."""
    return {k[len(COMPUTED_PREFIX):]: v for k, v in options.items() if k.startswith(COMPUTED_PREFIX)}


def watermarks(options: Mapping[str, str]) -> dict[str, str]:
    """Each watermark's expression, by the column it is declared on."""
    return {k[len(WATERMARK_PREFIX):]: v for k, v in options.items() if k.startswith(WATERMARK_PREFIX)}


def column_defaults(table: Table, type_text: Callable[[DataType], str]) -> dict[str, str]:
    """``{column: SQL expression of its declared default}`` (``fields.<c>.default-value``), cast to
    the column's type as ``type_text`` spells it for the SQL engine."""
    types = {f.name: f.type for f in table.schema.fields}
    out = {}
    for key, value in table.schema.options.items():
        m = _DEFAULT_VALUE.match(key)
        if m and m.group(1) in types:
            text = str(value).replace("\\", "\\\\").replace("'", "\\'")
            out[m.group(1)] = f"CAST('{text}' AS {type_text(types[m.group(1)])})"
    return out
