"""Building the file-index blob of a data file from the Arrow data written into it.

One job: given the rows of one data file (any Arrow table holding the table's columns by name)
and the table's :class:`~engine.fileindex.options.FileIndexConfig`, produce the blob Paimon's
``DataFileIndexWriter`` would, and say where it belongs: embedded in the manifest when it is at
most ``file-index.in-manifest-threshold`` bytes, else in ``<data file>.index`` next to the data
file (listed in ``_EXTRA_FILES``). Every index is built vectorised over the whole column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from engine.fileindex import bitmap, bloom
from engine.fileindex.format import INDEX_FILE_SUFFIX, write_file_index
from engine.fileindex.options import FileIndexConfig
from engine.types import DataField


@dataclass(frozen=True, slots=True)
class FileIndexBlob:
    """A built blob and where it goes: ``embedded`` (manifest) or ``file_name`` (``.index`` file)."""

    data: bytes
    embedded: bool

    @staticmethod
    def file_name(data_file: str) -> str:
        """Paimon's name of a data file's separate index file."""
        return data_file + INDEX_FILE_SUFFIX


def build_indexes(
    rows: pa.Table, fields: Sequence[DataField], config: FileIndexConfig
) -> dict[str, dict[str, bytes]]:
    """Column → index type → index bytes of the configured columns ``rows`` holds."""
    by_name = {f.name: f for f in fields}
    out: dict[str, dict[str, bytes]] = {}
    for column, specs in config.columns.items():
        f = by_name.get(column)
        if f is None or column not in rows.column_names:
            continue  # a column the file's schema does not have (dropped or renamed): no index
        values = rows.column(column)
        for spec in specs:
            if spec.index_type == bloom.TYPE_NAME:
                data = bloom.BloomFilter.build(values, spec.items, spec.fpp).serialize()
            else:
                data = bitmap.build(values, f.type)
            out.setdefault(column, {})[spec.index_type] = data
    return out


def build_blob(rows: pa.Table, fields: Sequence[DataField], config: FileIndexConfig) -> FileIndexBlob | None:
    """The file-index blob of one data file's rows, or None when the table has no indexes."""
    if config.empty:
        return None
    indexes = build_indexes(rows, fields, config)
    if not indexes:
        return None
    data = write_file_index(indexes)
    return FileIndexBlob(data, len(data) <= config.in_manifest_threshold)
