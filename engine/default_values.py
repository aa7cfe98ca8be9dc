"""Column default values as Paimon 1.2+ stores them: the text of a field's ``defaultValue`` in the
schema file (``'my_value'``, ``5``, ``true``), read as a value of the column's type.

Paimon's rule (``DefaultValueUtils``): one pair of surrounding single quotes is dropped, and the
rest is cast from STRING to the column's type; text that does not cast is refused ("Unsupported
default value"), so expressions such as ``current_timestamp()`` are refused as in Paimon. Writers
put the default where a row holds NULL (Paimon's ``TableWriteImpl``); reads never fill it in.

Decision: defaults of ARRAY, MAP, MULTISET and ROW columns are refused (dyntable has no cast from
text to those types), and so are defaults of nested fields (Paimon's writers fill only top-level
columns).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from engine.arrow_types import to_arrow_type
from engine.errors import InvalidArgumentError
from engine.types import DataType, type_to_sql


def default_text(text: str) -> str:
    """The text a default casts from: ``text`` without one pair of surrounding single quotes."""
    if len(text) >= 2 and text.startswith("'") and text.endswith("'"):
        return text[1:-1]
    return text


def check_default_value(t: DataType, text: str) -> Any:
    """The Python value of the default ``text`` for type ``t``, or InvalidArgumentError."""
    if t.is_nested:
        raise InvalidArgumentError(
            f"default values of {t.root.value} columns are not supported (only atomic types): `{text}`"
        )
    target = to_arrow_type(t)
    text_array = pa.array([default_text(text)], pa.string())
    try:
        if pa.types.is_timestamp(target) and target.tz is not None:
            # An instant's text without a zone is a UTC wall time (Paimon casts it in its JVM's
            # zone; dyntable's SQL layer stores instants so): cast as wall time, then mark UTC.
            try:
                return text_array.cast(target)[0].as_py()
            except pa.ArrowInvalid:
                return text_array.cast(pa.timestamp(target.unit)).cast(target)[0].as_py()
        return text_array.cast(target)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise InvalidArgumentError(
            f"Unsupported default value `{text}` for type {type_to_sql(t)}: give a literal of the "
            "column's type (expressions are not evaluated)"
        ) from None
