"""The count layout: tables without a primary key that accept retractions.

The managed-table design stores such a table as an LSM whose key is the whole row and whose
value is a count: +1 for an insert (+I/+U), -1 for a retraction (-U/-D), summed when runs merge
and at compaction; a row is visible as many times as its count says (nothing at 0 or below).

On disk this is an ordinary Paimon primary-key table, so Paimon's readers can read it: every
user column is a key column (nullable keys allowed), plus one value column ``_VALUE_COUNT``
BIGINT merged by the ``aggregation`` engine with ``sum``. The option ``retractions.enabled``
marks the layout. dyntable shows the *logical* table (the user's columns, no key) and
translates on write (kinds → counts) and read (counts → repeated rows).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import InvalidArgumentError
from engine.merge.functions import COUNT_COLUMN
from engine.options import BUCKET, MERGE_ENGINE, CoreOptions
from engine.schema import TableSchema
from engine.types import BIGINT, DataField

LAYOUT_OPTION = "retractions.enabled"


def is_count_layout(schema: TableSchema) -> bool:
    return str(schema.options.get(LAYOUT_OPTION, "false")).lower() == "true"


def physical_create_args(
    fields: list[DataField], partition_keys: tuple[str, ...], options: dict[str, str]
) -> tuple[list[DataField], tuple[str, ...], dict[str, str]]:
    """Fields, primary key and options of the stored table for a logical no-key table."""
    for f in fields:
        if f.type.is_unordered:
            raise InvalidArgumentError(
                f"'{LAYOUT_OPTION}' tables key on the whole row; column '{f.name}' has a nested or VARIANT "
                "type, which "
                "cannot be part of a key"
            )
        if f.name == COUNT_COLUMN:
            raise InvalidArgumentError(f"column name '{COUNT_COLUMN}' is reserved by the count layout")
    next_id = max(f.id for f in fields) + 1
    physical = list(fields) + [DataField(next_id, COUNT_COLUMN, BIGINT(False), "row count (count layout)")]
    opts = dict(options)
    if MERGE_ENGINE.key in opts and CoreOptions(opts).merge_engine != "aggregation":
        raise InvalidArgumentError(f"'{LAYOUT_OPTION}' tables use the aggregation merge engine internally")
    opts.update({
        "merge-engine": "aggregation",
        f"fields.{COUNT_COLUMN}.aggregate-function": "sum",
        "primary-key.nullable": "true",
    })
    opts.setdefault(BUCKET.key, str(BUCKET.default))
    return physical, tuple(f.name for f in fields), opts


def logical_schema(physical: TableSchema) -> TableSchema:
    """What users see: the stored schema without the count column and without a primary key."""
    return replace(
        physical,
        fields=tuple(f for f in physical.fields if f.name != COUNT_COLUMN),
        primary_keys=(),
    )


def to_count_rows(table: pa.Table, kinds: pa.Array) -> pa.Table:
    """Rows with their kinds → rows with a signed count (+1 insert, -1 retraction), all +I."""
    k = pc.fill_null(kinds, 0).to_numpy(zero_copy_only=False)
    counts = np.where((k == 1) | (k == 3), -1, 1).astype(np.int64)
    return table.append_column(pa.field(COUNT_COLUMN, pa.int64(), nullable=False), pa.array(counts))


def expand(table: pa.Table, columns: list[str]) -> pa.Table:
    """Merged count rows → each row repeated ``count`` times (zero or negative counts vanish)."""
    counts = pc.fill_null(table.column(COUNT_COLUMN), 0).to_numpy(zero_copy_only=False)
    rows = np.repeat(np.arange(table.num_rows, dtype=np.int64), np.maximum(counts, 0))
    return table.select(columns).take(pa.array(rows))


def expand_changes(table: pa.Table, columns: list[str], rowkind: str) -> pa.Table:
    """Change rows of count files → ``+I`` per positive and ``-D`` per negative unit of count."""
    counts = pc.fill_null(table.column(COUNT_COLUMN), 0).to_numpy(zero_copy_only=False)
    rows = np.repeat(np.arange(table.num_rows, dtype=np.int64), np.abs(counts))
    kinds = np.repeat(np.where(counts < 0, "-D", "+I"), np.abs(counts))
    out = table.select(columns).take(pa.array(rows))
    return out.add_column(0, pa.field(rowkind, pa.string(), nullable=False), pa.array(kinds, pa.string()))
