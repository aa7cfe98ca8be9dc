"""Moving an uncommitted primary-key data file's sequence numbers up by a fixed amount.

Used by the commit when two writers raced on one bucket (see :mod:`engine.commit`): the file
is rewritten under a new name with ``_SEQUENCE_NUMBER + shift`` and otherwise the same bytes'
worth of rows, schema (with field ids), statistics and level. The original stays until the
commit knows which version the snapshot references.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.compute as pc

from engine.files.reader import SEQUENCE_NUMBER, arrow_path
from engine.meta.binary_row import deserialize_row
from engine.meta.file_formats import format_of, read_table
from engine.meta.manifest import DataFileMeta
from engine.meta.paths import FileNamer
from engine.store import FileStore
from engine.write.file_writer import ROWS_PER_SLICE, FileLocator, format_writer


def rewrite_with_sequence_shift(
    store: FileStore, partition: bytes, bucket: int, file: DataFileMeta, shift: int
) -> DataFileMeta:
    """Write a copy of ``file`` whose sequence numbers are ``shift`` higher; returns its metadata."""
    part_dir = store.partition_dir(deserialize_row(partition, store.partition_types))
    source = store.paths.data_file(part_dir, bucket, file.file_name, file.external_path)
    fs = store.io.arrow_fs()
    table = read_table(fs, source, None)
    index = table.schema.get_field_index(SEQUENCE_NUMBER)
    shifted = pc.add(table.column(index), pa.scalar(shift, pa.int64()))
    table = table.set_column(index, table.schema.field(index), shifted)
    prefix = file.file_name.split("-", 1)[0] + "-"
    name = FileNamer().data_file(prefix, file.file_name.rsplit(".", 1)[-1])
    target, external = FileLocator(store, part_dir, bucket).new_file(name)
    with fs.open_output_stream(arrow_path(target)) as sink:
        with format_writer(sink, table.schema, store.options, format_of(file.file_name)) as writer:
            writer.write_table(table, row_group_size=ROWS_PER_SLICE)
        size = sink.tell()
    return dataclasses.replace(
        file,
        file_name=name,
        file_size=size,
        external_path=external,
        min_sequence_number=file.min_sequence_number + shift,
        max_sequence_number=file.max_sequence_number + shift,
    )
