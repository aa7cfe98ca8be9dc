"""VARIANT values arriving from Spark made writable as Paimon stores them.

Spark's Arrow form of a variant is a struct of ``value`` and ``metadata`` binaries declared NOT
NULL, yet a NULL variant (a NULL row of the struct) leaves NULL children under it. Parquet's
required ``value``/``metadata`` (as Paimon writes them) cannot hold those, so the children of a
NULL variant are filled with empty bytes (the struct's own NULL hides them; readers never see
them). A NULL ``value`` or ``metadata`` under a non-NULL variant is no variant at all and is
refused. Variants nested in ROW, ARRAY and MAP columns are handled the same way. Vectorised:
one ``fill_null`` per child array, and nothing is rebuilt when no child is NULL.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError
from engine.types import DataType, TypeRoot


def holds_variant(t: DataType) -> bool:
    """Whether ``t`` is a VARIANT or has one nested anywhere inside."""
    if t.root is TypeRoot.VARIANT:
        return True
    members = [f.type for f in t.fields] + [m for m in (t.element, t.key, t.value) if m is not None]
    return any(holds_variant(m) for m in members)


def fill_variant_children(col: pa.ChunkedArray, t: DataType, name: str) -> pa.ChunkedArray:
    """``col`` (already of ``t``'s Arrow layout) with the children of NULL variants made non-NULL."""
    if not holds_variant(t):
        return col
    return pa.chunked_array([_fill(c, t, name) for c in col.chunks], col.type)


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _fill(arr: pa.Array, t: DataType, name: str) -> pa.Array:
    if not holds_variant(t):
        return arr
    if arr.offset:  # rebuilt arrays below need unsliced children and offsets
        arr = pa.concat_arrays([arr])
    if t.root is TypeRoot.VARIANT:
        children = [arr.field(i) for i in range(arr.type.num_fields)]
        if not any(c.null_count for c in children):
            return arr
        under_valid = [pc.and_(arr.is_valid(), c.is_null()) for c in children]
        if any(pc.any(u).as_py() for u in under_valid):
            raise InvalidArgumentError(
                f"column '{name}': a non-NULL VARIANT has a NULL value or metadata (not a variant)")
        filled = [pc.fill_null(c, pa.scalar(b"", c.type)) for c in children]
        return pa.StructArray.from_arrays(filled, fields=list(arr.type), mask=_mask(arr))
    if t.root is TypeRoot.ROW:
        children = [_fill(arr.field(i), f.type, f"{name}.{f.name}") for i, f in enumerate(t.fields)]
        return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=_mask(arr))
    if t.root is TypeRoot.ARRAY:
        assert t.element is not None
        values = _fill(arr.values, t.element, f"{name}.element")
        return pa.ListArray.from_arrays(arr.offsets, values, type=arr.type, mask=_mask(arr))
    if t.root is TypeRoot.MAP:
        assert t.key is not None and t.value is not None
        keys = _fill(arr.keys, t.key, f"{name}.key")
        items = _fill(arr.items, t.value, f"{name}.value")
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=arr.type, mask=_mask(arr))
    return arr  # MULTISET<VARIANT>: its variants are map keys, which Arrow never holds NULL

