"""Paimon's BinaryRow codec for single rows, and the row hash that picks a fixed bucket.

One job: turn a tuple of Python values of atomic Paimon types into the exact bytes Java's
``BinaryRowWriter`` produces (and back), plus the word-wise murmur hash Java's
``BinaryRow.hashCode`` computes over those bytes. Partition values, primary keys and min/max
statistics in manifests are stored this way; the hash decides ``bucket = |hash % N|``.

Invariants (see ``docs/design/format-notes.md`` §7 and §9):

* Layout = header/null-bitset of ``W`` bytes, one 8-byte little-endian slot per field, then a
  variable part of 8-byte aligned chunks whose offsets count from the first header byte.
* Header byte 0 is the RowKind and is always 0 (INSERT) here.
* Null slots are zero, except that DECIMAL with precision > 18 and TIMESTAMP/TIMESTAMP_LTZ with
  precision > 3 still reserve their 16 / 8 zero bytes in the variable part and keep the cursor in
  the slot, exactly like Java's row builders (pypaimon does not; we follow Java).
* The bytes are canonical: equal values give equal bytes, so the hash is stable across writers.
* Every decoding failure raises :class:`CorruptMetadataError` (never ``IndexError`` or
  ``struct.error``); every bad input value raises :class:`InvalidArgumentError`.

Value conventions follow ``engine.types``; in addition TIMESTAMP/LTZ accept objects with a
``nanosecond`` attribute (pandas ``Timestamp``) and ``numpy.datetime64``, and decode to a
``numpy.datetime64[ns]`` (UTC for LTZ) only when the value has sub-microsecond digits. A naive
datetime given for TIMESTAMP_LTZ is taken as UTC; an aware one given for TIMESTAMP keeps its
wall-clock fields. DATE also accepts an int (days since epoch) and TIME an int (millis of day).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
from collections.abc import Sequence

import numpy as np

from engine.errors import CorruptMetadataError, InvalidArgumentError
from engine.types import DataType, TypeRoot

__all__ = [
    "EMPTY_ROW",
    "bucket_of",
    "check_atomic_types",
    "decode_row",
    "deserialize_row",
    "encode_row",
    "fixed_part_size",
    "hash_row_bytes",
    "is_compact_decimal",
    "is_compact_timestamp",
    "null_bits_size",
    "row_arity",
    "serialize_row",
]

# Murmur3-x86-32 as Paimon's MurmurHashUtils uses it: seed, body constants, the per-word addend
# and the two final-mix multipliers.
HASH_SEED = 42
C1 = 0xCC9E2D51
C2 = 0x1B873593
BODY_ADD = 0xE6546B64
FMIX1 = 0x85EBCA6B
FMIX2 = 0xC2B2AE35
_M32 = 0xFFFFFFFF

#: Largest string/binary length stored inline in its slot (Java's MAX_FIX_PART_DATA_SIZE).
MAX_INLINE = 7
_MAX_COMPACT_DECIMAL_PRECISION = 18
_MAX_COMPACT_TIMESTAMP_PRECISION = 3
_DECIMAL_VAR_BYTES = 16
_TIMESTAMP_VAR_BYTES = 8

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_EPOCH = _dt.datetime(1970, 1, 1)
_MILLIS_PER_DAY = 86_400_000
_NANOS_PER_MILLI = 1_000_000
_NP_UNIT_NANOS = {
    "D": 86_400 * 10**9,
    "h": 3600 * 10**9,
    "m": 60 * 10**9,
    "s": 10**9,
    "ms": 10**6,
    "us": 10**3,
    "ns": 1,
}

_INT_RANGES = {
    TypeRoot.TINYINT: (-(2**7), 2**7 - 1, "<b"),
    TypeRoot.SMALLINT: (-(2**15), 2**15 - 1, "<h"),
    TypeRoot.INT: (-(2**31), 2**31 - 1, "<i"),
    TypeRoot.BIGINT: (-(2**63), 2**63 - 1, "<q"),
}
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
# VARIANT is atomic in a schema but has no BinaryRow form here: it is never a key or partition
# value, and its statistics slot is empty.
_ATOMIC = frozenset(TypeRoot) - {
    TypeRoot.ARRAY, TypeRoot.MULTISET, TypeRoot.MAP, TypeRoot.ROW, TypeRoot.VARIANT}


# --------------------------------------------------------------------------------------------
# Layout helpers (shared with engine.meta.bucket)
# --------------------------------------------------------------------------------------------
def null_bits_size(arity: int) -> int:
    """Bytes of header + null bitset for a row of ``arity`` fields (a multiple of 8)."""
    return ((arity + 63 + 8) // 64) * 8


def fixed_part_size(arity: int) -> int:
    """Bytes of the fixed part: header/bitset plus one 8-byte slot per field."""
    return null_bits_size(arity) + 8 * arity


def is_compact_decimal(t: DataType) -> bool:
    """True when a DECIMAL is stored as an unscaled int64 in its slot (precision <= 18)."""
    return (t.precision if t.precision is not None else 10) <= _MAX_COMPACT_DECIMAL_PRECISION


def is_compact_timestamp(t: DataType) -> bool:
    """True when a TIMESTAMP/LTZ is stored as epoch millis in its slot (precision <= 3)."""
    return (t.precision if t.precision is not None else 6) <= _MAX_COMPACT_TIMESTAMP_PRECISION


def check_atomic_types(types: Sequence[DataType]) -> None:
    """Raise InvalidArgumentError unless every type is atomic (BinaryRow keys/stats only)."""
    for i, t in enumerate(types):
        if not isinstance(t, DataType):
            raise InvalidArgumentError(f"field {i}: expected a DataType, got {type(t).__name__}")
        if t.root not in _ATOMIC:
            raise InvalidArgumentError(
                f"field {i}: {t.root.value} cannot be part of a partition, key or statistics row; "
                "only atomic types are supported there"
            )


# --------------------------------------------------------------------------------------------
# Value -> slot / variable bytes
# --------------------------------------------------------------------------------------------
def _decimal_unscaled(value: object, t: DataType, i: int) -> int:
    """The unscaled integer of ``value`` at the type's scale (HALF_UP like Java), range-checked."""
    precision = t.precision if t.precision is not None else 10
    scale = t.scale if t.scale is not None else 0
    if isinstance(value, bool) or not isinstance(value, (decimal.Decimal, int, float)):
        raise InvalidArgumentError(f"field {i}: DECIMAL expects decimal.Decimal, got {value!r}")
    dec = value if isinstance(value, decimal.Decimal) else decimal.Decimal(repr(value))
    if not dec.is_finite():
        raise InvalidArgumentError(f"field {i}: DECIMAL cannot hold {value!r}")
    sign, digits, exp = dec.as_tuple()
    coeff = int("".join(map(str, digits))) if digits else 0
    shift = int(exp) + scale
    if shift >= 0:
        unscaled = coeff * 10**shift
    else:
        # Round half away from zero on the magnitude, as BigDecimal.setScale(HALF_UP) does.
        unscaled, rem = divmod(coeff, 10**-shift)
        if 2 * rem >= 10**-shift:
            unscaled += 1
    if sign:
        unscaled = -unscaled
    if abs(unscaled) >= 10**precision:
        raise InvalidArgumentError(f"field {i}: {value!r} does not fit DECIMAL({precision}, {scale})")
    return unscaled


def timestamp_epoch_nanos(value: object, t: DataType, i: int) -> int:
    """Nanoseconds since 1970-01-01T00:00 of a timestamp value (UTC instant for LTZ)."""
    if isinstance(value, np.datetime64):
        unit, count = np.datetime_data(value.dtype)
        if np.isnat(value) or unit not in _NP_UNIT_NANOS:
            raise InvalidArgumentError(f"field {i}: unsupported timestamp value {value!r}")
        return int(value.astype(np.int64)) * _NP_UNIT_NANOS[unit] * count
    if not isinstance(value, _dt.datetime):
        raise InvalidArgumentError(f"field {i}: {t.root.value} expects datetime.datetime, got {value!r}")
    nanos_extra = int(getattr(value, "nanosecond", 0) or 0)
    if value.tzinfo is not None:
        if t.root is TypeRoot.TIMESTAMP_LTZ:
            value = value.astimezone(_dt.UTC)
        value = value.replace(tzinfo=None)
    days = value.toordinal() - _EPOCH_ORDINAL
    seconds = days * 86_400 + value.hour * 3600 + value.minute * 60 + value.second
    return (seconds * 1_000_000 + value.microsecond) * 1000 + nanos_extra


def _text_bytes(value: object, t: DataType, i: int) -> bytes:
    if t.is_string:
        if not isinstance(value, str):
            raise InvalidArgumentError(f"field {i}: {t.root.value} expects str, got {value!r}")
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"field {i}: string is not valid UTF-8 text: {exc}") from exc
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"field {i}: {t.root.value} expects bytes, got {value!r}")
    return bytes(value)


def _fixed_slot(value: object, t: DataType, i: int) -> bytes:
    """The 8 slot bytes of a non-null fixed-size value."""
    root = t.root
    try:
        if root is TypeRoot.BOOLEAN:
            if not isinstance(value, (bool, int, np.bool_)) or value not in (0, 1):
                raise InvalidArgumentError(f"field {i}: BOOLEAN expects bool, got {value!r}")
            return bytes([1 if value else 0]) + bytes(7)
        if root in _INT_RANGES:
            lo, hi, fmt = _INT_RANGES[root]
            if not isinstance(value, (int, np.integer)) or not lo <= int(value) <= hi:
                raise InvalidArgumentError(f"field {i}: {value!r} is not a valid {root.value}")
            return struct.pack(fmt, int(value)).ljust(8, b"\0")
        if root is TypeRoot.FLOAT:
            return struct.pack("<f", float(value)).ljust(8, b"\0")  # type: ignore[arg-type]
        if root is TypeRoot.DOUBLE:
            return struct.pack("<d", float(value))  # type: ignore[arg-type]
        if root is TypeRoot.DATE:
            if isinstance(value, _dt.datetime):
                value = value.date()
            if isinstance(value, _dt.date):
                days = value.toordinal() - _EPOCH_ORDINAL
            elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                days = int(value)
            else:
                raise InvalidArgumentError(f"field {i}: DATE expects datetime.date, got {value!r}")
            return struct.pack("<i", days).ljust(8, b"\0")
        if root is TypeRoot.TIME:
            if isinstance(value, _dt.time):
                millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + (
                    value.microsecond // 1000
                )
            elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                millis = int(value)
            else:
                raise InvalidArgumentError(f"field {i}: TIME expects datetime.time, got {value!r}")
            return struct.pack("<i", millis).ljust(8, b"\0")
    except (struct.error, OverflowError, TypeError, ValueError) as exc:
        if isinstance(exc, InvalidArgumentError):
            raise
        raise InvalidArgumentError(f"field {i}: cannot store {value!r} as {root.value}: {exc}") from exc
    raise InvalidArgumentError(f"field {i}: unsupported type {root.value}")  # pragma: no cover


def encode_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """Encode one row as canonical Java BinaryRow bytes (RowKind INSERT, no arity prefix).

    Args:
        values: One Python value (or None) per field, following ``engine.types`` conventions.
        types: The atomic Paimon type of each field.

    Returns:
        The fixed part followed by the variable part; the length is a multiple of 8.

    Raises:
        InvalidArgumentError: A nested type, a length mismatch, or a value the type cannot hold.
    """
    if len(values) != len(types):
        raise InvalidArgumentError(f"row has {len(values)} values but {len(types)} types")
    check_atomic_types(types)
    arity = len(types)
    header = null_bits_size(arity)
    fixed = bytearray(header + 8 * arity)
    var = bytearray()
    for i, (value, t) in enumerate(zip(values, types, strict=True)):
        slot_at = header + 8 * i
        cursor = len(fixed) + len(var)
        root = t.root
        if value is None:
            bit = i + 8
            fixed[bit >> 3] |= 1 << (bit & 7)
            # Java reserves the variable region of wide decimals/timestamps even for nulls.
            if root is TypeRoot.DECIMAL and not is_compact_decimal(t):
                fixed[slot_at : slot_at + 8] = _U64.pack(cursor << 32)
                var += bytes(_DECIMAL_VAR_BYTES)
            elif root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ) and not is_compact_timestamp(t):
                fixed[slot_at : slot_at + 8] = _U64.pack(cursor << 32)
                var += bytes(_TIMESTAMP_VAR_BYTES)
            continue
        if t.is_string or t.is_binary:
            data = _text_bytes(value, t, i)
            if len(data) <= MAX_INLINE:
                fixed[slot_at : slot_at + 8] = data.ljust(7, b"\0") + bytes([0x80 | len(data)])
            else:
                fixed[slot_at : slot_at + 8] = _U64.pack((cursor << 32) | len(data))
                var += data + bytes(-len(data) % 8)
        elif root is TypeRoot.DECIMAL:
            unscaled = _decimal_unscaled(value, t, i)
            if is_compact_decimal(t):
                fixed[slot_at : slot_at + 8] = _I64.pack(unscaled)
            else:
                # BigInteger.toByteArray: minimal big-endian two's complement (>= 1 byte).
                nbytes = (unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()) // 8 + 1
                if nbytes > _DECIMAL_VAR_BYTES:
                    raise InvalidArgumentError(f"field {i}: {value!r} needs more than 16 bytes")
                raw = unscaled.to_bytes(nbytes, "big", signed=True)
                fixed[slot_at : slot_at + 8] = _U64.pack((cursor << 32) | nbytes)
                var += raw.ljust(_DECIMAL_VAR_BYTES, b"\0")
        elif root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
            millis, nano_of_milli = divmod(timestamp_epoch_nanos(value, t, i), _NANOS_PER_MILLI)
            if not -(2**63) <= millis < 2**63:
                raise InvalidArgumentError(f"field {i}: timestamp {value!r} is out of range")
            if is_compact_timestamp(t):
                fixed[slot_at : slot_at + 8] = _I64.pack(millis)
            else:
                fixed[slot_at : slot_at + 8] = _U64.pack((cursor << 32) | nano_of_milli)
                var += _I64.pack(millis)
        else:
            fixed[slot_at : slot_at + 8] = _fixed_slot(value, t, i)
    return bytes(fixed + var)


# --------------------------------------------------------------------------------------------
# Bytes -> values
# --------------------------------------------------------------------------------------------
def _var_region(buf: memoryview, base: int, slot: int, i: int, what: str) -> tuple[int, int]:
    """(absolute start, length) of a variable-part reference, bounds-checked."""
    start = base + (slot >> 32)
    length = slot & _M32
    if start + length > len(buf) or slot >> 32 < 8:
        raise CorruptMetadataError(
            f"BinaryRow field {i} ({what}) points outside the row bytes "
            f"(offset {slot >> 32}, length {length}, buffer {len(buf) - base} bytes); "
            "the metadata file is damaged or was written with another schema"
        )
    return start, length


def _decode_value(buf: memoryview, base: int, slot_at: int, t: DataType, i: int) -> object:
    slot_bytes = bytes(buf[slot_at : slot_at + 8])
    slot = _U64.unpack(slot_bytes)[0]
    root = t.root
    if t.is_string or t.is_binary:
        if slot_bytes[7] & 0x80:
            length = slot_bytes[7] & 0x7F
            if length > MAX_INLINE:
                raise CorruptMetadataError(f"BinaryRow field {i}: inline length {length} > 7")
            data = slot_bytes[:length]
        else:
            start, length = _var_region(buf, base, slot, i, root.value)
            data = bytes(buf[start : start + length])
        if t.is_binary:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptMetadataError(f"BinaryRow field {i}: string is not UTF-8: {exc}") from exc
    if root is TypeRoot.BOOLEAN:
        return slot_bytes[0] != 0
    if root in _INT_RANGES:
        fmt = _INT_RANGES[root][2]
        return struct.unpack_from(fmt, slot_bytes)[0]
    if root is TypeRoot.FLOAT:
        return struct.unpack_from("<f", slot_bytes)[0]
    if root is TypeRoot.DOUBLE:
        return struct.unpack_from("<d", slot_bytes)[0]
    if root is TypeRoot.DATE:
        days = struct.unpack_from("<i", slot_bytes)[0]
        try:
            return _dt.date.fromordinal(days + _EPOCH_ORDINAL)
        except (ValueError, OverflowError) as exc:
            raise CorruptMetadataError(f"BinaryRow field {i}: DATE {days} out of range") from exc
    if root is TypeRoot.TIME:
        millis = struct.unpack_from("<i", slot_bytes)[0]
        if not 0 <= millis < _MILLIS_PER_DAY:
            raise CorruptMetadataError(f"BinaryRow field {i}: TIME {millis} ms is not a time of day")
        secs, ms = divmod(millis, 1000)
        return _dt.time(secs // 3600, secs // 60 % 60, secs % 60, ms * 1000)
    if root is TypeRoot.DECIMAL:
        scale = t.scale if t.scale is not None else 0
        if is_compact_decimal(t):
            unscaled = _I64.unpack(slot_bytes)[0]
        else:
            start, length = _var_region(buf, base, slot, i, "DECIMAL")
            if not 1 <= length <= _DECIMAL_VAR_BYTES:
                raise CorruptMetadataError(f"BinaryRow field {i}: DECIMAL of {length} bytes")
            unscaled = int.from_bytes(buf[start : start + length], "big", signed=True)
        digits = decimal.Decimal(abs(unscaled)).as_tuple().digits
        return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))
    if root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        if is_compact_timestamp(t):
            millis, nano_of_milli = _I64.unpack(slot_bytes)[0], 0
        else:
            start = base + (slot >> 32)
            nano_of_milli = slot & _M32
            if slot >> 32 < 8 or start + 8 > len(buf) or nano_of_milli >= _NANOS_PER_MILLI:
                raise CorruptMetadataError(f"BinaryRow field {i}: bad TIMESTAMP slot {slot:#x}")
            millis = _I64.unpack(bytes(buf[start : start + 8]))[0]
        return _timestamp_value(millis, nano_of_milli, t, i)
    raise CorruptMetadataError(f"BinaryRow field {i}: cannot decode {root.value}")  # pragma: no cover


def _timestamp_value(millis: int, nano_of_milli: int, t: DataType, i: int) -> object:
    try:
        if nano_of_milli % 1000:
            # Sub-microsecond digits do not fit datetime; numpy keeps them (UTC for LTZ).
            return np.datetime64(millis * _NANOS_PER_MILLI + nano_of_milli, "ns")
        value = _EPOCH + _dt.timedelta(microseconds=millis * 1000 + nano_of_milli // 1000)
    except (OverflowError, ValueError) as exc:
        raise CorruptMetadataError(
            f"BinaryRow field {i}: timestamp {millis} ms is outside the representable range"
        ) from exc
    if t.root is TypeRoot.TIMESTAMP_LTZ:
        return value.replace(tzinfo=_dt.UTC)
    return value


def decode_row(data: bytes | memoryview, types: Sequence[DataType], offset: int = 0) -> tuple[object, ...]:
    """Decode the BinaryRow that starts at ``offset`` of ``data``.

    Args:
        data: A buffer holding the row (variable-part offsets count from ``offset``).
        types: The atomic type of each field; their number is the row's arity.
        offset: Where the row's header byte is.

    Returns:
        One Python value (or None) per field.

    Raises:
        CorruptMetadataError: The bytes are truncated or inconsistent with the types.
        InvalidArgumentError: A type is nested.
    """
    check_atomic_types(types)
    buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
    arity = len(types)
    header = null_bits_size(arity)
    if offset < 0 or offset + fixed_part_size(arity) > len(buf):
        raise CorruptMetadataError(
            f"BinaryRow of {arity} fields needs {fixed_part_size(arity)} bytes at offset {offset} "
            f"but the buffer has {len(buf)} bytes; the metadata file is truncated or damaged"
        )
    out: list[object] = []
    for i, t in enumerate(types):
        bit = i + 8
        if buf[offset + (bit >> 3)] & (1 << (bit & 7)):
            out.append(None)
            continue
        out.append(_decode_value(buf, offset, offset + header + 8 * i, t, i))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Manifest form (4-byte big-endian arity prefix)
# --------------------------------------------------------------------------------------------
def serialize_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """The manifest form of a row: 4-byte big-endian arity followed by :func:`encode_row`."""
    return struct.pack(">i", len(types)) + encode_row(values, types)


def row_arity(data: bytes) -> int:
    """The arity prefix of a serialized row.

    Raises:
        CorruptMetadataError: Fewer than 4 bytes, or a negative arity.
    """
    if len(data) < 4:
        raise CorruptMetadataError(
            f"serialized BinaryRow has {len(data)} bytes, fewer than its 4-byte arity prefix"
        )
    arity = struct.unpack_from(">i", data)[0]
    if arity < 0:
        raise CorruptMetadataError(f"serialized BinaryRow has negative arity {arity}")
    return arity


def deserialize_row(data: bytes, types: Sequence[DataType]) -> tuple[object, ...]:
    """Decode a serialized row (manifest form), returning exactly ``arity`` values.

    The arity comes from the prefix; ``types`` gives the types of the leading fields. A row
    with fewer fields than ``types`` (e.g. stats written for fewer columns) yields fewer values
    and the caller matches them up.

    Raises:
        CorruptMetadataError: Truncated/garbled bytes, or more fields than ``types``.
    """
    arity = row_arity(data)
    if arity > len(types):
        raise CorruptMetadataError(
            f"serialized BinaryRow has {arity} fields but only {len(types)} types are known; "
            "the metadata does not match the schema"
        )
    return decode_row(memoryview(data)[4:], types[:arity])


#: Serialized arity-0 row: the 4-byte arity 0 plus an 8-byte all-zero header.
EMPTY_ROW: bytes = bytes(12)


# --------------------------------------------------------------------------------------------
# Hash and bucket
# --------------------------------------------------------------------------------------------
def hash_row_bytes(row: bytes) -> int:
    """Paimon's ``BinaryRow.hashCode``: murmur3 word hash (seed 42) of the row bytes.

    Args:
        row: Row bytes as produced by :func:`encode_row` (no arity prefix).

    Returns:
        The hash as a signed 32-bit int.

    Raises:
        InvalidArgumentError: The length is not a multiple of 4.
    """
    if len(row) % 4:
        raise InvalidArgumentError(f"row bytes length {len(row)} is not a multiple of 4")
    h = HASH_SEED
    for (k,) in struct.iter_unpack("<I", row):
        k = (k * C1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        k = (k * C2) & _M32
        h ^= k
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + BODY_ADD) & _M32
    h ^= len(row)
    h ^= h >> 16
    h = (h * FMIX1) & _M32
    h ^= h >> 13
    h = (h * FMIX2) & _M32
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def bucket_of(values: Sequence[object], types: Sequence[DataType], num_buckets: int) -> int:
    """The fixed bucket of a bucket-key row: Java's ``Math.abs(hash % num_buckets)``.

    Raises:
        InvalidArgumentError: ``num_buckets`` is not positive, or a value is invalid.
    """
    if num_buckets <= 0:
        raise InvalidArgumentError(f"num_buckets must be positive, got {num_buckets}")
    # Python's abs(h) % n equals Java's abs(h % n) for every int32, MIN_VALUE included.
    return abs(hash_row_bytes(encode_row(values, types))) % num_buckets
