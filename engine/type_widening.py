"""Which type changes a schema may make: the lossless widenings (:func:`is_widening`) and, beyond
them, Paimon's implicit casts to FLOAT/DOUBLE (:func:`castable`) — the rules of ALTER COLUMN TYPE
and of schema evolution on write.

Kept apart from :mod:`engine.types`, which defines the types and their serialisations; these rules
only read them.
"""

from __future__ import annotations

from engine.types import MAX_LENGTH, DataType, TypeRoot

_INT_ORDER = (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT)
_INT_DIGITS = {TypeRoot.TINYINT: 3, TypeRoot.SMALLINT: 5, TypeRoot.INT: 10, TypeRoot.BIGINT: 19}
_EXACT_IN_FLOAT = {TypeRoot.FLOAT: (TypeRoot.TINYINT, TypeRoot.SMALLINT),
                   TypeRoot.DOUBLE: (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT)}  # fmt: skip


def is_widening(src: DataType, dst: DataType) -> bool:  # noqa: C901 - a table of rules
    """Whether every value of ``src`` converts to ``dst`` without loss (ALTER COLUMN TYPE).

    Allowed: the same type; a nullable target (a NOT NULL target needs a NOT NULL source);
    TINYINT < SMALLINT < INT < BIGINT; integers to FLOAT/DOUBLE only where exact (FLOAT holds
    TINYINT/SMALLINT, DOUBLE also INT; BIGINT → DOUBLE is refused: it loses digits); integers
    to DECIMAL with enough integer digits; FLOAT → DOUBLE; DECIMAL to one with at least as many
    integer digits and at least the scale; CHAR/VARCHAR(n) to CHAR/VARCHAR of length ≥ n (CHAR
    only to CHAR of the same length or to VARCHAR) and STRING; BINARY/VARBINARY(n) likewise to
    VARBINARY(≥ n)/BYTES; every non-binary atomic type to STRING (values are rendered as text);
    DATE → TIMESTAMP(p) (midnight; not to TIMESTAMP_LTZ, which would need a zone); TIME,
    TIMESTAMP and TIMESTAMP_LTZ to a larger precision of the same kind; ARRAY/MAP/MULTISET whose
    members widen (map keys must stay equal); ROW with the same field names in the same order,
    each widening. Field ids are not compared (the schema keeps the old ones).
    """
    if src.nullable and not dst.nullable:
        return False
    s, d = src.root, dst.root
    if s is TypeRoot.ROW or d is TypeRoot.ROW:
        return (
            s is d
            and len(src.fields) == len(dst.fields)
            and all(
                a.name == b.name and is_widening(a.type, b.type)
                for a, b in zip(src.fields, dst.fields, strict=True)
            )
        )
    if s in (TypeRoot.ARRAY, TypeRoot.MULTISET) or d in (TypeRoot.ARRAY, TypeRoot.MULTISET):
        return s is d and is_widening(src.element, dst.element)  # type: ignore[arg-type]
    if s is TypeRoot.MAP or d is TypeRoot.MAP:
        return (
            s is d
            and src.key == dst.key
            and is_widening(src.value, dst.value)  # type: ignore[arg-type]
        )
    if src.copy(True) == dst.copy(True):
        return True
    if d is TypeRoot.VARCHAR and dst.length == MAX_LENGTH and not src.is_binary:
        return True  # any atomic value can be rendered as text
    if src.is_integer:
        if dst.is_integer:
            return _INT_ORDER.index(s) <= _INT_ORDER.index(d)
        if d is TypeRoot.DECIMAL:
            return (dst.precision or 0) - (dst.scale or 0) >= _INT_DIGITS[s]
        return s in _EXACT_IN_FLOAT.get(d, ())
    if s is TypeRoot.FLOAT:
        return d is TypeRoot.DOUBLE
    if s is TypeRoot.DECIMAL and d is TypeRoot.DECIMAL:
        return (dst.scale or 0) >= (src.scale or 0) and (
            (dst.precision or 0) - (dst.scale or 0) >= (src.precision or 0) - (src.scale or 0)
        )
    if src.is_string and dst.is_string:  # CHAR -> longer CHAR would change the padding
        return d is TypeRoot.VARCHAR and (dst.length or 0) >= (src.length or 0)
    if src.is_binary and dst.is_binary:
        return d is TypeRoot.VARBINARY and (dst.length or 0) >= (src.length or 0)
    if s is TypeRoot.DATE:
        return d is TypeRoot.TIMESTAMP
    if s is d and s in (TypeRoot.TIME, TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return (dst.precision or 0) >= (src.precision or 0)
    return False


_NUMBERS = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT, TypeRoot.DECIMAL,
                      TypeRoot.FLOAT, TypeRoot.DOUBLE})


def castable(src: DataType, dst: DataType) -> bool:
    """Whether ALTER COLUMN TYPE may change ``src`` to ``dst``.

    Lossless widenings (:func:`is_widening`), plus Paimon's implicit casts of numbers
    to FLOAT/DOUBLE (``DataTypeCasts``: every integer and DECIMAL to FLOAT, every number to
    DOUBLE), which round to the nearest float as Java's conversion does. Paimon's explicit casts
    (narrowing, text to number, ...) are refused: their read-time behaviour on values that do
    not fit differs between engines.
    """
    if is_widening(src, dst):
        return True
    if src.nullable and not dst.nullable:
        return False
    floating = {TypeRoot.FLOAT: _NUMBERS - {TypeRoot.DOUBLE}, TypeRoot.DOUBLE: _NUMBERS}
    return src.root in floating.get(dst.root, frozenset())


_STRINGS = frozenset({TypeRoot.CHAR, TypeRoot.VARCHAR})
_BINARIES = frozenset({TypeRoot.BINARY, TypeRoot.VARBINARY})
_INTEGERS = frozenset(_INT_ORDER)
_TIMESTAMPS = frozenset({TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ})
# Paimon's explicit casting rules (``DataTypeCasts``), target -> the sources it casts explicitly,
# without the casts whose value is not the same in every reader: numbers and booleans to or from
# instants (epoch seconds in Paimon, the storage unit in Arrow), text or wall-clock times to
# TIMESTAMP_LTZ and back (they depend on the reader's time zone), and nested values as text.
_ATOMIC = frozenset(TypeRoot) - {TypeRoot.ARRAY, TypeRoot.MULTISET, TypeRoot.MAP, TypeRoot.ROW}
_EXPLICIT: dict[TypeRoot, frozenset[TypeRoot]] = {
    **dict.fromkeys(_STRINGS, _ATOMIC),
    TypeRoot.BOOLEAN: _STRINGS | _INTEGERS,
    **dict.fromkeys(_BINARIES, _STRINGS | _BINARIES),
    TypeRoot.DECIMAL: _STRINGS | _NUMBERS - {TypeRoot.FLOAT, TypeRoot.DOUBLE},
    **dict.fromkeys(_INTEGERS, _NUMBERS | _STRINGS | {TypeRoot.BOOLEAN}),
    TypeRoot.FLOAT: _NUMBERS | _STRINGS | {TypeRoot.BOOLEAN},
    TypeRoot.DOUBLE: _NUMBERS | _STRINGS | {TypeRoot.BOOLEAN},
    TypeRoot.DATE: _STRINGS | {TypeRoot.DATE, TypeRoot.TIMESTAMP},
    TypeRoot.TIME: _STRINGS | {TypeRoot.TIME, TypeRoot.TIMESTAMP},
    TypeRoot.TIMESTAMP: _STRINGS | {TypeRoot.DATE, TypeRoot.TIME, TypeRoot.TIMESTAMP},
    TypeRoot.TIMESTAMP_LTZ: frozenset({TypeRoot.TIMESTAMP_LTZ}),
}


def explicit_castable(src: DataType, dst: DataType) -> bool:
    """Whether ``write.merge-schema.explicit-cast`` may change ``src`` to ``dst``: :func:`castable`,
    or one of Paimon's explicit casts (``DataTypeCasts``: text to numbers, dates and times,
    narrower numbers, shorter lengths, lower precisions, ...) whose result is the same in every
    reader (the exclusions are listed at ``_EXPLICIT``). Such a cast may fail on a value, so the
    rows already stored must be checked before a schema makes it (engine.write.type_changes).
    Atomic types only; nested types change only through their members.
    """
    if castable(src, dst):
        return True
    if src.is_nested or dst.is_nested:
        return False
    return src.root in _EXPLICIT.get(dst.root, frozenset())


#: :func:`key_bytes_kept`'s answers: every value keeps its bytes, or only values >= 0 do.
ALWAYS = "always"
NON_NEGATIVE = "non-negative"
_COMPACT_DECIMAL = 18  # Paimon's BinaryRow keeps precision <= 18 in the fixed slot, larger out of it
_COMPACT_TIMESTAMP = 3


def key_bytes_kept(src: DataType, dst: DataType) -> str | None:
    """Whether a key column's values keep their BinaryRow bytes when ``src`` widens to ``dst``.

    A primary-key or bucket-key value is stored as BinaryRow bytes (a file's key range and key
    statistics) and hashed from them (its bucket, the dynamic-bucket index). A type change that
    keeps the bytes keeps every stored key valid: text and binary of a larger length, a DECIMAL of
    the same scale on the same side of the compact limit, a TIMESTAMP likewise (:data:`ALWAYS`);
    an integer widened to a wider integer keeps the bytes of values >= 0 only: the slot is
    little-endian and zero-padded, so a negative value gains sign bytes (:data:`NON_NEGATIVE`).
    None: the bytes change (a number as a float, a date as a timestamp, ...).
    """
    if src.copy(True) == dst.copy(True):
        return ALWAYS
    if not is_widening(src.copy(True), dst.copy(True)):
        return None
    if (src.is_string and dst.is_string) or (src.is_binary and dst.is_binary):
        return ALWAYS
    if src.is_integer and dst.is_integer:
        return NON_NEGATIVE
    if src.root is dst.root and src.root is TypeRoot.DECIMAL and src.scale == dst.scale:
        compact = _COMPACT_DECIMAL
    elif src.root is dst.root and src.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        compact = _COMPACT_TIMESTAMP
    else:
        return None
    return ALWAYS if ((src.precision or 0) <= compact) == ((dst.precision or 0) <= compact) else None
