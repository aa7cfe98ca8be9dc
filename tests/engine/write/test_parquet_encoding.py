"""Data files bound each column's Parquet dictionary, so distinct values fall back to plain early."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.write.file_writer import DICTIONARY_PAGE_LIMIT

SCHEMA = pa.schema([("id", pa.int64()), ("token", pa.string()), ("category", pa.string())])
ROWS = 30_000  # ~330 KB of distinct tokens: under pyarrow's 1 MB default, over our limit


def _rows() -> pa.Table:
    ids = np.arange(ROWS, dtype=np.int64)
    token = pc.cast(pa.array(ids * 2_654_435_761), pa.string())  # all distinct
    category = pc.cast(pa.array(ids % 50), pa.string())
    return pa.table({"id": ids, "token": token, "category": category}, schema=SCHEMA)


def _dictionary_bytes(path: str, column: str) -> int:
    meta = pq.ParquetFile(path).metadata
    index = meta.schema.to_arrow_schema().get_field_index(column)
    chunk = meta.row_group(0).column(index)
    assert chunk.has_dictionary_page
    return chunk.data_page_offset - chunk.dictionary_page_offset


def _one_file(table) -> str:
    entries = table.store.live_entries(table.latest_snapshot())
    assert len(entries) == 1
    e = entries[0]
    return table.store.paths.data_file(table.store.partition_dir(()), e.bucket, e.file.file_name)


def _check(table) -> None:
    table.write_arrow(_rows())
    path = _one_file(table)
    assert _dictionary_bytes(path, "token") <= DICTIONARY_PAGE_LIMIT + 4096  # was ~330 KB before the bound
    assert _dictionary_bytes(path, "category") < 1024  # 50 values keep their dictionary
    back = pq.read_table(path, columns=["token", "category"])
    assert back.column("token").equals(_rows().column("token"))
    assert back.column("category").equals(_rows().column("category"))


def test_primary_key_file_bounds_its_dictionaries(catalog):
    _check(catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "1"}))


def test_append_file_bounds_its_dictionaries(catalog):
    _check(catalog.create_table("db.ap", SCHEMA))
