"""Choosing the writer for a table's layout: append, primary key (LSM), or count layout."""

from __future__ import annotations

from typing import Any

from engine.count_layout import is_count_layout, logical_schema, to_count_rows
from engine.meta.paths import FileNamer
from engine.store import FileStore
from engine.write.append_writer import AppendWriter
from engine.write.conform import conform
from engine.write.kv_writer import KIND_COLUMNS, KeyValueWriter, split_kinds


class CountWriter:
    """Writes a count-layout table: every row becomes (row, +1) or (row, -1) by its kind."""

    def __init__(self, store: FileStore, **kv_options: Any) -> None:
        self.kv = KeyValueWriter(store, **kv_options)
        self.logical = logical_schema(store.schema)

    def write(self, data: object) -> None:
        table, kinds = split_kinds(conform(data, self.logical, extra_columns=KIND_COLUMNS))
        if table.num_rows:
            self.kv.write(to_count_rows(table, kinds))

    def __getattr__(self, name: str) -> Any:  # prepare_commit, abort, flush, compact_splits, ...
        return getattr(self.kv, name)


def new_writer(
    store: FileStore,
    *,
    compact: bool | None = None,
    sequence_offset: int = 0,
    namer: FileNamer | None = None,
    shared_base: int | None = None,
    keep_row_ids: bool = False,
) -> AppendWriter | KeyValueWriter | CountWriter:
    """The writer for ``store``'s layout; ``compact=False`` leaves compaction to the caller;
    ``shared_base``: the snapshot independent writers of one commit assign dynamic buckets from
    (``engine.write.shared_assignment``); ``keep_row_ids``: rows of a row-tracking table that come
    with ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` keep them (a row-level statement's rewrite)."""
    if is_count_layout(store.schema):
        return CountWriter(store, compact=compact, sequence_offset=sequence_offset, namer=namer,
                           shared_base=shared_base)
    if store.has_primary_key:
        return KeyValueWriter(store, compact=compact, sequence_offset=sequence_offset, namer=namer,
                              shared_base=shared_base)
    return AppendWriter(store, namer=namer, keep_row_ids=keep_row_ids)

