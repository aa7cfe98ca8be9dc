"""Vectorised Java text of serialized BinaryRows: the statistics and keys columns of ``$files``.

One job: turn many manifest-form BinaryRows (4-byte arity prefix, then the row) of one layout
into the strings :mod:`engine.system_tables.render` would print for them one by one, with numpy
and pyarrow instead of a Python call per file and value. Rows are concatenated into one byte
buffer; fixed-width slots are gathered by fancy indexing, variable-length strings into one
contiguous buffer plus offsets (``pa.BinaryArray.from_buffers``); each column is rendered with
pyarrow casts and the ``{col=value, ...}`` / ``[k1, k2]`` texts are joined element-wise.

Invariants:

* the text equals the per-value rendering exactly (``java_string``; FLOAT/DOUBLE and TIMESTAMP
  text, which no Arrow cast reproduces, is rendered once per distinct value);
* a row the vectorised decoder does not fully vouch for — truncated, an arity the types do not
  cover, an out-of-range DATE/TIME, a wide DECIMAL, text that is not UTF-8 — is flagged
  not-``ok``; the caller renders it with the per-file path, so odd rows keep their exact
  per-file behaviour (including the "unreadable statistics" fallbacks) instead of a new one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.meta.binary_row import is_compact_decimal, is_compact_timestamp, null_bits_size
from engine.meta.paths import java_local_time
from engine.scan.file_stats import stats_type
from engine.schema import TableSchema
from engine.system_tables.render import java_float_string
from engine.types import DataType, TypeRoot

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_MAX_ORDINAL = dt.date.max.toordinal()
_M32 = np.uint64(0xFFFFFFFF)
_INT_WIDTH = {TypeRoot.TINYINT: 1, TypeRoot.SMALLINT: 2, TypeRoot.INT: 4, TypeRoot.BIGINT: 8}
# Epoch milliseconds of 0001-01-01T00:00 and of 10000-01-01T00:00: Python's datetime range.
_MIN_MILLIS = (dt.datetime.min - _EPOCH) // dt.timedelta(milliseconds=1)
_END_MILLIS = (dt.datetime.max - _EPOCH) // dt.timedelta(milliseconds=1) + 1
# The largest int64 nanosecond count, split as millis and the nanos past them (NaT excluded below).
_NS_LIMIT_MILLIS, _NS_LIMIT_REST = divmod(2**63 - 1, 1_000_000)
_HEX = np.frombuffer(b"".join(f"{i:02x}".encode() for i in range(256)), np.uint8).reshape(256, 2)


class Rows:
    """Many serialized rows in one buffer: ``base`` (first byte after the arity prefix) and ``end``."""

    def __init__(self, raws: Sequence[bytes]) -> None:
        lens = np.fromiter(map(len, raws), np.int64, len(raws))
        self.buf = np.frombuffer(b"".join(raws) + bytes(8), np.uint8)  # padding: clamped gathers
        ends = np.cumsum(lens)
        starts = ends - lens
        self.base = starts + 4
        self.end = ends
        self.last = len(self.buf) - 1
        prefix = self.buf[np.minimum(starts[:, None] + np.arange(4), self.last)]
        arity = prefix.astype(np.int64) @ np.array([1 << 24, 1 << 16, 1 << 8, 1], np.int64)
        self.arity = np.where(lens >= 4, np.where(arity >= 1 << 31, -1, arity), -1)

    def take(self, at: np.ndarray, width: int) -> np.ndarray:
        """``width`` bytes at each absolute position (clamped; callers check bounds)."""
        return self.buf[np.minimum(at[:, None] + np.arange(width), self.last)]


def _slot_u64(slot: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(slot).view("<u8").ravel()


def _signed(slot: np.ndarray, width: int) -> np.ndarray:
    return np.ascontiguousarray(slot[:, :width]).view(f"<i{width}").ravel()


def _gather_binary(rows: Rows, start: np.ndarray, length: np.ndarray, valid: np.ndarray) -> pa.Array:
    length = np.where(valid, length, 0)
    offsets = np.zeros(len(length) + 1, np.int64)
    np.cumsum(length, out=offsets[1:])
    total = int(offsets[-1])
    idx = np.repeat(start - offsets[:-1], length) + np.arange(total)
    data = rows.buf[np.minimum(idx, rows.last)]
    validity = pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(
        pa.binary(), len(length), [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    )


def _per_distinct(keys: np.ndarray, valid: np.ndarray, render: Callable[[np.ndarray], str]) -> pa.Array:
    """Strings of ``render(key)`` computed once per distinct key (null where not ``valid``)."""
    if not valid.any():
        return pa.nulls(len(keys), pa.string())
    uniq, inverse = np.unique(keys[valid], return_inverse=True, axis=0 if keys.ndim > 1 else None)
    texts = pa.array([render(u) for u in uniq], pa.string())
    index = np.zeros(len(keys), np.int64)
    index[valid] = inverse.ravel()
    return texts.take(pa.array(index, mask=~valid))


def _decimal_text(unscaled: np.ndarray, valid: np.ndarray, scale: int) -> pa.Array:
    """``BigDecimal.toPlainString`` of compact unscaled values at ``scale``."""
    digits = pc.cast(pa.array(np.abs(unscaled), mask=~valid), pa.string())
    if scale > 0:
        padded = pc.utf8_lpad(digits, scale + 1, "0")
        digits = pc.binary_join_element_wise(
            pc.utf8_slice_codeunits(padded, 0, -scale), pc.utf8_slice_codeunits(padded, -scale), "."
        )
    sign = pa.array(np.where(unscaled < 0, "-", ""), pa.string())
    return pc.binary_join_element_wise(sign, digits, "")


def _timestamp_text(millis: int, nano_of_milli: int) -> str:
    seconds, ms = divmod(millis, 1000)
    wall = _EPOCH + dt.timedelta(seconds=seconds)
    nano = ms * 1_000_000 + nano_of_milli
    return f"{wall.date().isoformat()}T{java_local_time(wall.hour, wall.minute, wall.second, nano)}"


def _float_text(single: bool) -> Callable[[np.ndarray], str]:
    dtype = np.float32 if single else np.float64
    return lambda bits: java_float_string(float(np.array(bits).view(dtype)), single=single)


def _column(rows: Rows, i: int, arity: int, t: DataType) -> tuple[pa.Array, np.ndarray]:
    """Java text of field ``i`` of rows of ``arity`` (null for null values) and the rows decoded ok."""
    n = len(rows.base)
    bit = i + 8
    is_null = (rows.buf[np.minimum(rows.base + (bit >> 3), rows.last)] & (1 << (bit & 7))) != 0
    slot_at = rows.base + null_bits_size(arity) + 8 * i
    slot = rows.take(slot_at, 8)
    valid = ~is_null
    ok = np.ones(n, bool)
    root = t.root
    if t.is_string or t.is_binary:
        word = _slot_u64(slot)
        inline = (slot[:, 7] & 0x80) != 0
        inline_len = (slot[:, 7] & 0x7F).astype(np.int64)
        offset = (word >> np.uint64(32)).astype(np.int64)
        var_len = (word & _M32).astype(np.int64)
        in_bounds = (offset >= 8) & (rows.base + offset + var_len <= rows.end)
        ok = ~valid | np.where(inline, inline_len <= 7, in_bounds)
        start = np.where(inline, slot_at, rows.base + offset)
        raw = _gather_binary(rows, start, np.where(inline, inline_len, var_len), valid & ok)
        if t.is_binary:
            hexed = _HEX[np.frombuffer(raw.buffers()[2] or b"", np.uint8)].ravel()
            offsets = np.frombuffer(raw.buffers()[1], np.int32)[: n + 1] * 2
            return pa.Array.from_buffers(
                pa.string(), n, [raw.buffers()[0], pa.py_buffer(offsets), pa.py_buffer(hexed)]
            ), ok
        try:
            return raw.cast(pa.string()), ok
        except pa.ArrowInvalid:  # text that is not UTF-8: those rows take the per-file path
            values = raw.to_pylist()
            good = np.array([v is None or _utf8(v) for v in values], bool)
            kept = [v if g else None for v, g in zip(values, good.tolist(), strict=True)]
            return pa.array(kept, pa.binary()).cast(pa.string()), ok & good
    if root is TypeRoot.BOOLEAN:
        return pa.array(slot[:, 0] != 0, mask=~valid).cast(pa.string()), ok
    if root in _INT_WIDTH:
        return pc.cast(pa.array(_signed(slot, _INT_WIDTH[root]), mask=~valid), pa.string()), ok
    if root is TypeRoot.DATE:
        days = _signed(slot, 4).astype(np.int64)
        ok = ~valid | ((days + _EPOCH_ORDINAL >= 1) & (days + _EPOCH_ORDINAL <= _MAX_ORDINAL))
        return pc.cast(pa.array(days, mask=~valid), pa.string()), ok
    if root is TypeRoot.TIME:
        millis = _signed(slot, 4)
        ok = ~valid | ((millis >= 0) & (millis < 86_400_000))
        return pc.cast(pa.array(millis, mask=~valid), pa.string()), ok
    if root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        single = root is TypeRoot.FLOAT
        bits = np.ascontiguousarray(slot[:, : 4 if single else 8]).view("<u4" if single else "<u8").ravel()
        return _per_distinct(bits, valid, _float_text(single)), ok
    if root is TypeRoot.DECIMAL and is_compact_decimal(t):
        unscaled = _signed(slot, 8)
        ok = ~valid | (unscaled != np.iinfo(np.int64).min)
        return _decimal_text(unscaled, valid & ok, t.scale or 0), ok
    if root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        if is_compact_timestamp(t):
            millis = _signed(slot, 8)
            nano_of_milli = np.zeros(n, np.int64)
        else:
            word = _slot_u64(slot)
            offset = (word >> np.uint64(32)).astype(np.int64)
            nano_of_milli = (word & _M32).astype(np.int64)
            ok = ~valid | ((offset >= 8) & (rows.base + offset + 8 <= rows.end) & (nano_of_milli < 1_000_000))
            millis = _signed(rows.take(rows.base + offset, 8), 8)
        # Python's datetime range bounds what the per-file decoder accepts; values with
        # sub-microsecond digits become datetime64[ns], whose range is int64 nanoseconds.
        in_range = (millis >= _MIN_MILLIS) & (millis < _END_MILLIS)
        nanos_fit = (millis >= -_NS_LIMIT_MILLIS) & (
            (millis < _NS_LIMIT_MILLIS) | ((millis == _NS_LIMIT_MILLIS) & (nano_of_milli <= _NS_LIMIT_REST))
        )
        ok &= ~valid | (in_range & ((nano_of_milli % 1000 == 0) | nanos_fit))
        pairs = np.stack([millis, nano_of_milli], axis=1)
        return _per_distinct(pairs, valid & ok, lambda p: _timestamp_text(int(p[0]), int(p[1]))), ok
    # Wide decimals (variable part) and anything else: the per-file path renders them.
    return pa.nulls(n, pa.string()), ~valid


def _utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode_texts(raws: Sequence[bytes], types: Sequence[DataType]) -> tuple[list[pa.Array], np.ndarray]:
    """Java text of every field of serialized rows (null where a value is null or past a row's arity).

    Returns one string array per type and a mask of rows decoded ok; a row whose arity exceeds
    ``len(types)`` or whose bytes are inconsistent is not ok (its texts are meaningless).
    """
    rows = Rows(raws)
    n = len(raws)
    ok = (rows.arity >= 0) & (rows.arity <= len(types))
    columns: list[pa.Array] = [pa.nulls(n, pa.string()) for _ in types]
    for arity in np.unique(rows.arity[ok]).tolist():
        members = np.flatnonzero(ok & (rows.arity == arity))
        sub = Rows([raws[j] for j in members.tolist()]) if len(members) < n else rows
        sub_ok = sub.end - sub.base >= null_bits_size(arity) + 8 * arity
        for i in range(arity):
            text, col_ok = _column(sub, i, arity, types[i])
            sub_ok &= col_ok
            columns[i] = _scatter(columns[i], text, members, n)
        ok[members] = sub_ok
    return columns, ok


def _scatter(into: pa.Array, values: pa.Array, at: np.ndarray, n: int) -> pa.Array:
    if len(at) == n:
        return values
    index = np.full(n, -1, np.int64)
    index[at] = np.arange(len(at))
    taken = values.take(pa.array(index, mask=index < 0))
    return pc.if_else(pa.array(index >= 0), taken, into)


def java_key_texts(raws: Sequence[bytes], types: Sequence[DataType]) -> tuple[pa.Array, np.ndarray]:
    """``[k1, k2]`` of serialized key rows (null for arity 0) and the mask of rows decoded ok."""
    columns, ok = decode_texts(raws, types)
    rows_arity = Rows(raws).arity
    out = pa.nulls(len(raws), pa.string())
    for arity in np.unique(rows_arity[ok]).tolist():
        if arity == 0:
            continue
        parts = [pc.fill_null(c, "null") for c in columns[:arity]]
        joined = pc.binary_join_element_wise("[", pc.binary_join_element_wise(*parts, ", "), "]", "")
        out = pc.if_else(pa.array(ok & (rows_arity == arity)), joined, out)
    return out, ok


def stats_map_texts(names: Sequence[str], values: Sequence[pa.Array | str], n: int) -> pa.Array:
    """``TreeMap.toString`` per row: ``{a=1, b=x}`` of already rendered values, ordered by name."""
    if not names:
        return pa.array(["{}"] * n, pa.string())
    order = sorted(range(len(names)), key=lambda j: names[j])
    parts = [pc.binary_join_element_wise(f"{names[j]}=", _full(values[j], n), "") for j in order]
    inner = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, ", ")
    return pc.binary_join_element_wise("{", inner, "}", "")


def _full(value: pa.Array | str, n: int) -> pa.Array:
    if isinstance(value, str):
        return pa.array([value] * n, pa.string()) if n else pa.array([], pa.string())
    return pc.fill_null(value, "null")


def _null_count_texts(counts: pa.Array, width: int) -> list[pa.Array]:
    """Text of the ``i``-th null count of every file for ``i < width`` (null where absent), from
    a ``list<int64>`` array (a null list: no counts)."""
    n = len(counts)
    lists = counts.cast(pa.list_(pa.int64()))
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
    starts = lists.offsets.to_numpy()[:-1]
    out = []
    for i in range(width):
        has = lengths > i
        if not has.any():
            out.append(pa.nulls(n, pa.string()))
            continue
        taken = lists.values.take(pa.array(np.where(has, starts + i, 0), mask=~has))
        out.append(pc.cast(taken, pa.string()))
    return out


def layout_stats_texts(
    schema: TableSchema, file_schema: TableSchema, files: pa.Table
) -> tuple[tuple[pa.Array, pa.Array, pa.Array], np.ndarray]:
    """(null counts, min values, max values) maps of files sharing one statistics layout.

    ``files`` are manifest entry rows (:data:`engine.meta.manifest_arrow.ENTRY_SCHEMA`) that all
    have ``file_schema`` and the same ``value_stats_cols`` / ``write_cols``. Values are mapped to
    ``schema``'s columns by field id, as the per-file ``$files`` rendering does. The mask marks
    the files decoded ok; the others' texts are meaningless (render them one by one).
    """
    value_stats_cols = files.column("value_stats_cols")[0].as_py()
    write_cols = files.column("write_cols")[0].as_py()
    if value_stats_cols is not None:
        cols: Sequence[str] = value_stats_cols
    elif write_cols is not None:
        cols = write_cols
    else:
        cols = file_schema.field_names
    by_name = {f.name: f for f in file_schema.fields}
    stat_fields = [by_name[c] for c in cols if c in by_name]
    types = [stats_type(f.type) for f in stat_fields]
    n = files.num_rows
    mins, ok_min = decode_texts(files.column("value_min_values").to_pylist(), types)
    maxs, ok_max = decode_texts(files.column("value_max_values").to_pylist(), types)
    nulls = _null_count_texts(files.column("value_null_counts").combine_chunks(), len(stat_fields))
    position = {f.id: i for i, f in enumerate(stat_fields)}
    file_ids = {f.id for f in file_schema.fields}
    row_counts: pa.Array | None = None
    names: list[str] = []
    null_texts: list[pa.Array | str] = []
    min_texts: list[pa.Array | str] = []
    max_texts: list[pa.Array | str] = []
    for f in schema.fields:
        names.append(f.name)
        i = position.get(f.id)
        if i is not None:
            null_texts.append(nulls[i])
            min_texts.append(mins[i])
            max_texts.append(maxs[i])
            continue
        # A column added after the file was written is null in all its rows; one the file kept
        # no statistics for is unknown.
        if f.id in file_ids:
            null_texts.append("null")
        else:
            if row_counts is None:
                row_counts = pc.cast(files.column("row_count").combine_chunks(), pa.string())
            null_texts.append(row_counts)
        min_texts.append("null")
        max_texts.append("null")
    maps = (
        stats_map_texts(names, null_texts, n),
        stats_map_texts(names, min_texts, n),
        stats_map_texts(names, max_texts, n),
    )
    return maps, ok_min & ok_max


__all__ = ["Rows", "decode_texts", "java_key_texts", "layout_stats_texts", "stats_map_texts"]
