"""``t$binlog``: Paimon's binlog system table, the audit log with every column as an array.

One job: turn audit-log rows (``rowkind`` first, then the table's columns) into binlog rows, as
Paimon 2.0's ``BinlogTable`` shows them: the same ``rowkind`` column, then each column of the
table as an ``ARRAY`` of its (nullable) type.

* A batch read (the merged rows of a snapshot, their kinds kept as ``$audit_log`` keeps them)
  gives one-element arrays: ``[value]``.
* A change read (a stream, an incremental read of snapshot files) packs an update: a ``-U`` row
  and the row after it become one row of kind ``+U`` whose arrays are ``[before, after]``; any
  other change is one row with one-element arrays and its own kind (a ``-U`` with no row after
  it too, as Paimon's reader leaves it).

Vectorised: the output's values are the input columns unchanged, only the list offsets differ
(one row per input row, or two for a packed update), so no Python runs per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROWKIND = "rowkind"


def binlog_schema(audit: pa.Schema) -> pa.Schema:
    """The binlog schema of an audit-log schema: ``rowkind``, then each column as a list."""
    fields = [audit.field(ROWKIND)]
    fields += [pa.field(f.name, pa.list_(pa.field("element", f.type, nullable=True)), nullable=True)
               for f in audit if f.name != ROWKIND]
    return pa.schema(fields)


def to_binlog(audit: pa.Table, *, pack_updates: bool) -> pa.Table:
    """Binlog rows of audit-log rows (``rowkind`` first); ``pack_updates`` for change reads."""
    n = audit.num_rows
    kinds = audit.column(ROWKIND).combine_chunks()
    starts = np.arange(n, dtype=np.int32)
    if pack_updates and n > 1:
        i = np.flatnonzero(pc.equal(kinds, "-U").to_numpy(zero_copy_only=False))
        # Read in order, a -U takes the row after it. In a run of consecutive -U rows the first,
        # third, ... open a pair (the second, fourth, ... are taken as after-images).
        new_run = np.ones(i.size, dtype=bool)
        new_run[1:] = np.diff(i) != 1
        run_start = np.maximum.accumulate(np.where(new_run, i, 0))
        opens = i[((i - run_start) % 2 == 0) & (i + 1 < n)]
        taken = np.zeros(n, dtype=bool)
        taken[opens + 1] = True
        starts = np.flatnonzero(~taken).astype(np.int32)
    offsets = pa.array(np.append(starts, np.int32(n)), pa.int32())
    # A packed row has the after-image's kind: the kind of the last row it holds.
    last = np.append(starts[1:], np.int32(n)) - 1 if starts.size else starts
    out_kinds = kinds.take(pa.array(last, pa.int32()))
    schema = binlog_schema(audit.schema)
    columns: list[pa.Array] = [out_kinds]
    for field in schema:
        if field.name == ROWKIND:
            continue
        values = audit.column(field.name).combine_chunks()
        columns.append(pa.ListArray.from_arrays(offsets, values, type=field.type))
    return pa.Table.from_arrays(columns, schema=schema)
