"""Decoding the statistics stored in manifests into per-column :class:`ColumnStats`.

Value statistics are written against the schema a file was written with; they are mapped to
the current schema by field id, so renamed columns keep their statistics and added columns have
none (unknown, never skipped on).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.meta.binary_row import deserialize_row
from engine.meta.manifest import DataFileMeta, SimpleStats
from engine.scan.predicate import ColumnStats
from engine.schema import TableSchema
from engine.types import BIGINT, DataField, DataType


def stats_type(dtype: DataType) -> DataType:
    """The type a stats slot is decoded with: nested columns carry no min/max (a null slot)."""
    return BIGINT() if dtype.is_unordered else dtype.copy(True)


def decode_stats(stats: SimpleStats, fields: Sequence[DataField]) -> dict[int, ColumnStats]:
    """Stats of ``fields`` (in order) keyed by field id; unknown when the stats are shorter."""
    types = [stats_type(f.type) for f in fields]
    try:
        mins = deserialize_row(stats.min_values, types)
        maxs = deserialize_row(stats.max_values, types)
    except Exception:  # noqa: BLE001 - unreadable stats only cost skipping, never correctness
        return {}
    nulls = stats.null_counts or ()
    out: dict[int, ColumnStats] = {}
    for i, f in enumerate(fields):
        out[f.id] = ColumnStats(
            mins[i] if i < len(mins) else None,
            maxs[i] if i < len(maxs) else None,
            nulls[i] if i < len(nulls) else None,
        )
    return out


def value_stats_by_name(
    file: DataFileMeta, file_schema: TableSchema, schema: TableSchema
) -> dict[str, ColumnStats]:
    """A data file's value statistics under the current schema's column names."""
    if file.value_stats_cols is None:
        cols = file.write_cols if file.write_cols is not None else file_schema.field_names
    else:
        cols = file.value_stats_cols
    fields = [file_schema.field(c) for c in cols if c in file_schema.field_names]
    by_id = decode_stats(file.value_stats, fields)
    return {f.name: by_id[f.id] for f in schema.fields if f.id in by_id}


def key_stats_by_name(
    file: DataFileMeta, file_schema: TableSchema, schema: TableSchema
) -> dict[str, ColumnStats]:
    """A primary-key file's key statistics (over the trimmed primary key) by current column name."""
    fields = [file_schema.field(c) for c in file_schema.trimmed_primary_keys]
    by_id = decode_stats(file.key_stats, fields)
    return {f.name: by_id[f.id] for f in schema.fields if f.id in by_id}
