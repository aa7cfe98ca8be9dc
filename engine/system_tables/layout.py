"""System tables of a snapshot's physical layout: ``$file_key_ranges`` and ``$table_indexes``.

One job: lay out Paimon 2.0's ``FileKeyRangesTable`` and ``TableIndexesTable`` rows for one
snapshot (default latest). Invariants:

* ``$file_key_ranges`` is ``$files`` without the statistics columns: the same live files, order,
  partition text, file paths and ``[k1, k2]`` key text (null for append tables), plus
  ``first_row_id``; it never decodes value statistics, so it costs one plan of the snapshot;
* ``$table_indexes`` lists the snapshot's index manifest as stored (every index type: ``HASH``,
  ``DELETION_VECTORS``, global indexes written by other engines), one row per index file, in
  manifest order; ``dv_ranges`` is the per-data-file deletion vector ranges Paimon records
  (``f0`` data file, ``f1`` offset, ``f2`` length, ``_CARDINALITY``), null for other types;
  ``index_field_name`` resolves a global index's field ids against the current schema (null when
  a column was dropped, as Java leaves it); a snapshot naming a missing index manifest is
  ``CorruptMetadataError`` (Java lists nothing);
* Python touches each index file and each distinct partition once, never a row of table data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine.meta.index_files import IndexStore
from engine.system_tables.columns import arrow_schema, build_table
from engine.system_tables.files import (
    FileRenderer,
    by_partition,
    file_formats,
    key_columns,
    resolve_snapshot,
    sorted_live_files,
)

if TYPE_CHECKING:
    from engine.store import FileStore


def read_file_key_ranges(store: FileStore, snapshot_id: int | None) -> pa.Table:
    """``$file_key_ranges``: every live file's location, level, size and key range."""
    live = sorted_live_files(store, resolve_snapshot(store, snapshot_id))
    if live is None:
        return arrow_schema("file_key_ranges").empty_table()
    render = FileRenderer(store)
    partitions, paths = by_partition(render, live)
    min_keys, max_keys = key_columns(render, live)
    return build_table("file_key_ranges", {
        "partition": partitions,
        "bucket": live.column("bucket"),
        "file_path": paths,
        "file_format": file_formats(live.column("file_name").combine_chunks()),
        "schema_id": live.column("schema_id"),
        "level": live.column("level"),
        "record_count": live.column("row_count"),
        "file_size_in_bytes": live.column("file_size"),
        "min_key": min_keys,
        "max_key": max_keys,
        "first_row_id": live.column("first_row_id"),
    })


def _dv_ranges(raw: Any) -> list[dict[str, Any] | None] | None:
    if raw is None:
        return None
    return [
        None if r is None else
        {"f0": r["f0"], "f1": r["f1"], "f2": r["f2"], "_CARDINALITY": r.get("_CARDINALITY")}
        for r in raw
    ]


def read_table_indexes(store: FileStore, snapshot_id: int | None) -> pa.Table:
    """``$table_indexes``: the index files of the snapshot's index manifest."""
    snapshot = resolve_snapshot(store, snapshot_id)
    if snapshot is None or snapshot.index_manifest is None:
        return arrow_schema("table_indexes").empty_table()
    # A missing index manifest is CorruptMetadataError here (Java logs it and lists nothing): a
    # snapshot that names a file it lost is damage to report, not an empty answer.
    entries = IndexStore(store.io, store.paths).read_manifest(snapshot.index_manifest)
    render = FileRenderer(store)
    names_by_id = {f.id: f.name for f in store.logical_schema.fields}
    cols: dict[str, list[Any]] = {name: [] for name in arrow_schema("table_indexes").names}
    for e in entries:
        meta = e.file
        glob = meta.global_index
        cols["partition"].append(render.partition(e.partition)[0])
        cols["bucket"].append(e.bucket)
        cols["index_type"].append(meta.index_type)
        cols["file_name"].append(meta.file_name)
        cols["file_size"].append(meta.file_size)
        cols["row_count"].append(meta.row_count)
        cols["dv_ranges"].append(_dv_ranges(meta.dv_ranges))
        cols["row_range_start"].append(None if glob is None else glob["_ROW_RANGE_START"])
        cols["row_range_end"].append(None if glob is None else glob["_ROW_RANGE_END"])
        cols["index_field_id"].append(None if glob is None else glob["_INDEX_FIELD_ID"])
        field_name = None
        if glob is not None:
            ids = [glob["_INDEX_FIELD_ID"], *(glob.get("_EXTRA_FIELD_IDS") or [])]
            if all(i in names_by_id for i in ids):
                field_name = ",".join(names_by_id[i] for i in ids)
        cols["index_field_name"].append(field_name)
    return build_table("table_indexes", cols)
