"""Applying deletion vectors to data read from a file: the row mask of Paimon's DV read.

One job: given a split's :class:`~engine.meta.deletion_vectors.DeletionFile` for a data file,
load its DV (index files are read once per reader and cached: one index file holds the DVs of
many data files of a bucket) and drop the rows it marks from the file's rows, vectorised. A
position is a row's 0-based number within the data file, so the mask must be applied to the
whole file as read, before any filter or retraction drop changes the row numbering (a file read
in batches numbers each batch's rows from the batch's offset in the file).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from engine.errors import CorruptMetadataError
from engine.io import FileIO
from engine.meta.deletion_vectors import DeletionFile, DeletionVector, read_deletion_file


class DeletionVectorLoader:
    """Loads DVs for one reader, reading each index file once."""

    def __init__(self, io: FileIO) -> None:
        self.io = io
        self._files: dict[str, bytes] = {}

    def load(self, file: DeletionFile) -> DeletionVector:
        """The DV ``file`` points at.

        Raises:
            CorruptMetadataError: the index file is missing or the record is bad.
        """
        data = self._files.get(file.path)
        if data is None:
            try:
                data = self.io.read_bytes(file.path)
            except FileNotFoundError:
                raise CorruptMetadataError(
                    f"deletion-vector index file {file.path} is listed in the index manifest but missing"
                ) from None
            self._files[file.path] = data
        return read_deletion_file(data, file)


def apply_deletion_vector(table: pa.Table, dv: DeletionVector, data_file: str) -> pa.Table:
    """``table`` (every row of ``data_file``, in file order) without the rows ``dv`` marks.

    Raises:
        CorruptMetadataError: the DV marks a position past the end of the file.
    """
    if dv.is_empty():
        return table
    n = table.num_rows
    positions = dv.positions()
    if positions.size and int(positions[-1]) >= n:
        raise CorruptMetadataError(
            f"the deletion vector of data file {data_file} marks row {int(positions[-1])}, "
            f"but the file has {n} rows"
        )
    mask = np.ones(n, dtype=bool)
    mask[positions] = False
    return table.filter(pa.array(mask, pa.bool_()))


def apply_deletion_vector_batches(
    batches: Iterable[pa.Table], dv: DeletionVector | None, data_file: str
) -> Iterator[pa.Table]:
    """:func:`apply_deletion_vector` over a file read in batches (every row, in file order): each
    batch loses the rows whose file positions (batch offset + row) the DV marks.

    Raises:
        CorruptMetadataError: once the file is read, the DV marks a position past its end.
    """
    positions = dv.positions() if dv is not None and not dv.is_empty() else None
    offset = 0
    for table in batches:
        n = table.num_rows
        if positions is not None:
            lo, hi = np.searchsorted(positions, [offset, offset + n])
            if hi > lo:
                mask = np.ones(n, dtype=bool)
                mask[positions[lo:hi] - offset] = False
                table = table.filter(pa.array(mask, pa.bool_()))
        offset += n
        yield table
    if positions is not None and positions.size and int(positions[-1]) >= offset:
        raise CorruptMetadataError(
            f"the deletion vector of data file {data_file} marks row {int(positions[-1])}, "
            f"but the file has {offset} rows"
        )
