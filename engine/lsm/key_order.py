"""Decoded primary-key tuples made comparable in Paimon's key order (per-file metadata only).

File metadata (``min_key``/``max_key``) decodes to Python tuples, and planning compares them
(interval sections, sorted runs, overlap checks). Python's own order differs from Paimon's for
floating-point keys: ``NaN`` compares false with everything and ``-0.0 == 0.0``, whereas Paimon
orders ``FLOAT``/``DOUBLE`` keys like Java's ``Double.compare`` (``-0.0 < 0.0``, every NaN equal
and greater than ``+inf``). The vectorised merge already sorts rows that way
(``engine.merge.functions.key_sort_codes``); this module gives the per-file comparisons the same order,
so file ranges, sorted runs and row order never disagree.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

from engine.meta.binary_row import deserialize_row

_SIGN_MASK = 0x7FFFFFFFFFFFFFFF
_NAN_BITS = struct.unpack(">q", struct.pack(">d", math.nan))[0]


def double_order_code(value: float) -> int:
    """An int whose order is ``Double.compare``'s over doubles (and float32 values widened)."""
    bits = _NAN_BITS if math.isnan(value) else struct.unpack(">q", struct.pack(">d", value))[0]
    # Negative doubles: flip the magnitude bits so that larger magnitudes sort lower.
    return bits ^ _SIGN_MASK if bits < 0 else bits


def _component(value: Any) -> Any:
    if isinstance(value, float):
        return double_order_code(value)
    return value


def orderable_key(values: Sequence[Any]) -> tuple[Any, ...]:
    """``values`` with every float replaced by its ``Double.compare`` code (others unchanged)."""
    return tuple(_component(v) for v in values)


def key_range_decoder(key_types: Sequence[Any]) -> Callable[[Any], tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """``file -> (min_key, max_key)`` as orderable tuples, for files of the given key types."""
    types = list(key_types)

    def key_range(f: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return orderable_key(deserialize_row(f.min_key, types)), orderable_key(
            deserialize_row(f.max_key, types)
        )

    return key_range
