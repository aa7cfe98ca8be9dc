"""Answering "can this data file hold these values?" from its file-index blob.

One job: decode a blob (:func:`engine.fileindex.format.read_file_index`) against the fields of the
schema the data file was written with, and answer per column: :meth:`FileIndexReader.might_contain`
(an equality or IN filter), :meth:`might_be_null` and :meth:`might_be_non_null`. Every answer is
conservative: True unless an index proves no row can match. A literal that does not convert to
the column's type, an index type dyntable does not know, or an empty index answers True.

Floating point: Paimon hashes and keys FLOAT/DOUBLE by their IEEE bits, so ``0.0`` and ``-0.0``
differ in an index while SQL calls them equal; a zero literal is looked up as both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property

import pyarrow as pa

from engine.arrow_types import to_arrow_type
from engine.fileindex import bitmap, bloom
from engine.fileindex.format import read_file_index
from engine.types import DataField, TypeRoot


class FileIndexReader:
    """The indexes of one data file (``fields``: the file schema's fields, by name)."""

    def __init__(self, blob: bytes, fields: Mapping[str, DataField]) -> None:
        self.fields = fields
        self.indexes = read_file_index(blob)

    @cached_property
    def _bitmaps(self) -> dict[str, bitmap.BitmapIndex]:
        out = {}
        for column, types in self.indexes.items():
            data = types.get(bitmap.TYPE_NAME)
            f = self.fields.get(column)
            if data is not None and f is not None and bitmap.supports(f.type):
                out[column] = bitmap.BitmapIndex.parse(data, f.type)
        return out

    def _literals(self, column: str, values: Sequence[object]) -> pa.Array | None:
        f = self.fields[column]
        wanted = [v for v in values if v is not None]
        if f.type.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            wanted += [-0.0 for v in wanted if v == 0]
        try:
            return pa.array(wanted, type=to_arrow_type(f.type))
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None

    def might_contain(self, column: str, values: Sequence[object]) -> bool:
        """False only when no row's ``column`` equals any of ``values`` (an IN list)."""
        types = self.indexes.get(column)
        if not types or column not in self.fields:
            return True
        literals = self._literals(column, values)
        if literals is None:
            return True
        if len(literals) == 0:
            return False  # `= NULL` / `IN (NULL)` never matches
        data = types.get(bloom.TYPE_NAME)
        if data is not None and not bloom.BloomFilter.deserialize(data).might_contain(literals):
            return False
        index = self._bitmaps.get(column)
        keys = bitmap.keys_of(literals, self.fields[column].type) if index is not None else []
        if index is not None and not index.might_contain_keys(keys):
            return False
        return True

    def might_be_null(self, column: str) -> bool:
        index = self._bitmaps.get(column)
        return True if index is None else index.has_null

    def might_be_non_null(self, column: str) -> bool:
        index = self._bitmaps.get(column)
        return True if index is None else bool(index.offsets)
