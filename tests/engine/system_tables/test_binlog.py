"""``$binlog`` rows from audit-log rows: one-element arrays, and updates packed as Paimon's
``BinlogTable`` packs them in change reads."""

from __future__ import annotations

import pyarrow as pa

from engine.system_tables.binlog import binlog_schema, to_binlog


def audit(kinds, ids):
    return pa.table({"rowkind": pa.array(kinds, pa.string()), "id": pa.array(ids, pa.int32()),
                     "v": pa.array([None if i is None else f"v{i}" for i in ids], pa.string())})


def test_every_column_becomes_a_nullable_array_after_rowkind():
    schema = binlog_schema(audit([], []).schema)
    assert schema.names == ["rowkind", "id", "v"]
    assert schema.field("id").type == pa.list_(pa.field("element", pa.int32(), nullable=True))
    out = to_binlog(audit(["+I", "-U", "+U", "-D"], [1, 2, 2, None]), pack_updates=False)
    assert out.schema == schema
    assert out.to_pylist() == [
        {"rowkind": "+I", "id": [1], "v": ["v1"]},
        {"rowkind": "-U", "id": [2], "v": ["v2"]},
        {"rowkind": "+U", "id": [2], "v": ["v2"]},
        {"rowkind": "-D", "id": [None], "v": [None]},
    ]


def test_change_reads_pack_each_update_before_with_the_row_after_it():
    rows = audit(["+I", "-U", "+U", "-D", "-U", "-U", "+U", "-U"], [1, 2, 3, 4, 5, 6, 7, 8])
    out = to_binlog(rows, pack_updates=True).to_pylist()
    assert [(r["rowkind"], r["id"]) for r in out] == [
        ("+I", [1]),
        ("+U", [2, 3]),  # [before, after], the after-image's kind
        ("-D", [4]),
        ("-U", [5, 6]),  # a -U takes whatever row follows it (here another -U) ...
        ("+U", [7]),  # ... so the +U after that stands alone
        ("-U", [8]),  # and a -U with no row after it stays one row
    ]
    assert to_binlog(rows.slice(0, 0), pack_updates=True).num_rows == 0
    long_run = audit(["-U"] * 5 + ["+U"], list(range(6)))
    assert [r["id"] for r in to_binlog(long_run, pack_updates=True).to_pylist()] == [[0, 1], [2, 3], [4, 5]]
