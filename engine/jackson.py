"""JSON laid out as Jackson's default pretty printer lays it out, which is what Java Paimon writes
for snapshots, schemas, tags and hints: two-space indentation, ``"key" : value``, arrays on one
line (``[ 1, 2 ]``), empty objects and arrays as ``{ }`` and ``[ ]``, non-ASCII kept as is.
Byte-for-byte output matters: Java readers do not care, but identical files make dyntable's
metadata diffable against Java's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring  # json.dumps of one str, ensure_ascii=False
from typing import Any


class RawNumber(str):
    """A JSON number that must be written verbatim (e.g. ``86400.000000000``)."""


def jackson_json(value: Any, indent: str = "") -> str:
    """``value`` (dicts, lists, tuples, strings, numbers, booleans, None) as Jackson prints it."""
    kind = type(value)
    if kind is int:  # the common leaves first, without json.dumps' per-call encoder set-up
        return str(value)
    if kind is str:
        return encode_basestring(value)
    if isinstance(value, RawNumber):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        if not value:
            return "{ }"
        inner = indent + "  "
        body = ",\n".join(
            f"{inner}{encode_basestring(str(k))} : {jackson_json(v, inner)}" for k, v in value.items()
        )
        return "{\n" + body + "\n" + indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_json(v, indent) for v in value) + " ]"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


__all__ = ["RawNumber", "jackson_json"]
