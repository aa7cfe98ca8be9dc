"""The vectorised ``$files`` rendering equals the per-value rendering, byte for byte.

Oracle: :func:`deserialize_row` + :func:`java_string` / :func:`key_string` one row at a time
(what ``$files`` printed before it was vectorised). A row the oracle cannot decode must be
flagged not-ok; a row flagged ok must render exactly as the oracle does.
"""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import open_catalog
from engine.meta.binary_row import deserialize_row, serialize_row
from engine.schema_changes import AddColumn, RenameColumn
from engine.system_tables import read_system_table
from engine.system_tables.files import FileRenderer, _live_entries
from engine.system_tables.render import java_string, key_string
from engine.system_tables.stats_render import decode_texts, java_key_texts
from engine.types import (
    BIGINT,
    BOOLEAN,
    BYTES,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    DataType,
)

_DATETIMES = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59))
_TYPES: list[tuple[DataType, st.SearchStrategy[object]]] = [
    (BOOLEAN(), st.booleans()),
    (TINYINT(), st.integers(-(2**7), 2**7 - 1)),
    (SMALLINT(), st.integers(-(2**15), 2**15 - 1)),
    (INT(), st.integers(-(2**31), 2**31 - 1)),
    (BIGINT(), st.integers(-(2**63), 2**63 - 1)),
    (FLOAT(), st.floats(width=32)),
    (DOUBLE(), st.floats()),
    (DECIMAL(5, 2), st.decimals(min_value=-999, max_value=999, places=2)),
    (DECIMAL(18, 0), st.integers(-(10**18) + 1, 10**18 - 1).map(decimal.Decimal)),
    (DECIMAL(30, 4), st.decimals(min_value=-(10**20), max_value=10**20, places=4)),
    (STRING(), st.text()),
    (BYTES(), st.binary()),
    (DATE(), st.dates()),
    (TIME(3), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (TIMESTAMP(3), _DATETIMES.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (TIMESTAMP(6), _DATETIMES),
    (TIMESTAMP(9), st.integers(-(2**62), 2**62).map(lambda n: np.datetime64(n, "ns"))),
    (TIMESTAMP_LTZ(3), _DATETIMES.map(lambda t: t.replace(microsecond=0, tzinfo=dt.UTC))),
]


@st.composite
def _rows(draw: st.DrawFn) -> tuple[list[DataType], list[bytes]]:
    picked = draw(st.lists(st.sampled_from(range(len(_TYPES))), min_size=0, max_size=5))
    types = [_TYPES[i][0] for i in picked]
    raws = []
    for _ in range(draw(st.integers(1, 8))):
        arity = draw(st.integers(0, len(types))) if draw(st.booleans()) else len(types)
        values = [draw(st.none() | _TYPES[i][1]) for i in picked[:arity]]
        raw = serialize_row(values, types[:arity])
        mangle = draw(st.sampled_from(["keep", "keep", "keep", "truncate", "flip", "arity"]))
        if mangle == "truncate":
            raw = raw[: draw(st.integers(0, len(raw)))]
        elif mangle == "flip" and len(raw) > 4:
            at = draw(st.integers(4, len(raw) - 1))
            raw = raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1 :]
        elif mangle == "arity":
            raw = (len(types) + 1).to_bytes(4, "big") + raw[4:]
        raws.append(raw)
    return types, raws


def _oracle(raw: bytes, types: list[DataType]) -> tuple[object, ...] | None:
    try:
        return deserialize_row(raw, types)
    except Exception:  # noqa: BLE001 - any failure: the row must be flagged not-ok
        return None


@settings(max_examples=300, deadline=None)
@given(_rows())
def test_decode_texts_match_java_string(case: tuple[list[DataType], list[bytes]]) -> None:
    types, raws = case
    columns, ok = decode_texts(raws, types)
    keys, keys_ok = java_key_texts(raws, types)
    wide = any(t.root.value == "DECIMAL" and (t.precision or 10) > 18 for t in types)
    for j, raw in enumerate(raws):
        values = _oracle(raw, types)
        if values is None:
            assert not ok[j] and not keys_ok[j]
            continue
        assert ok[j] or wide, (raw, types)
        if not ok[j]:
            continue
        for i, t in enumerate(types):
            expected = java_string(values[i], t) if i < len(values) and values[i] is not None else None
            assert columns[i][j].as_py() == expected, (i, raw, types)
        expected_key = key_string(values, types[: len(values)]) if values else None
        assert keys_ok[j] and keys[j].as_py() == expected_key


def test_files_table_matches_per_file_rendering(tmp_path: object) -> None:
    """Across schema evolution (added and renamed columns) and several statistics layouts."""
    catalog = open_catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema(
        [
            ("k", pa.int32()),
            ("s", pa.string()),
            ("f", pa.float32()),
            ("d", pa.float64()),
            ("ts", pa.timestamp("us")),
            ("dec", pa.decimal128(10, 3)),
            ("day", pa.date32()),
        ]
    )
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "2"})
    rows = {
        "k": [1, 2, 3],
        "s": ["a", "a long string value", None],
        "f": [0.1, float("nan"), -0.0],
        "d": [1e7, 1e-4, None],
        "ts": [dt.datetime(2024, 1, 1, 10), dt.datetime(1900, 5, 6, 7, 8, 9, 123456), None],
        "dec": [decimal.Decimal("1.500"), decimal.Decimal("-0.001"), None],
        "day": [dt.date(2024, 1, 2), dt.date(1960, 1, 1), None],
    }
    for _ in range(2):
        w = table.new_writer()
        w.write(pa.table(rows, schema=schema))
        table.new_commit().commit(w.prepare_commit())
    catalog.alter_table("db.t", [AddColumn("extra", "BIGINT"), RenameColumn("s", "s2")])
    table = catalog.get_table("db.t")
    rows2 = {**{k: v for k, v in rows.items() if k != "s"}, "s2": ["x", "y", "z"], "extra": [5, None, 7]}
    w = table.new_writer()
    w.write(pa.table(rows2).select(table.schema.field_names).cast(table.arrow_schema))
    table.new_commit().commit(w.prepare_commit())

    got = read_system_table(table, "files")
    render = FileRenderer(table.store)
    by_name = {e.file.file_name: e.file for e in _live_entries(table.store, table.latest_snapshot())}
    assert got.num_rows == len(by_name) >= 3
    for row in got.to_pylist():
        f = by_name[row["file_path"].rsplit("/", 1)[-1]]
        file_schema = table.store.schema_by_id(f.schema_id)
        nulls, mins, maxs = render.stats(f, file_schema)
        key_types = [file_schema.field(k).type for k in file_schema.trimmed_primary_keys]
        shown = (row["null_value_counts"], row["min_value_stats"], row["max_value_stats"])
        assert shown == (nulls, mins, maxs)
        assert row["min_key"] == render.key(f.min_key, key_types)
        assert row["max_key"] == render.key(f.max_key, key_types)
