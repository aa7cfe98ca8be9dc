"""Iceberg readers read the TIME and nanosecond-timestamp columns dyntable publishes as Paimon 2.0
does, with exactly dyntable's rows (tests/engine/iceberg/test_iceberg_types.py checks the files).

* TIME(0..3), stored as Parquet TIME_MILLIS, published as Iceberg ``time``: polars' native Iceberg
  scan (pyiceberg plans it, polars reads the Parquet files by Iceberg field id) reads every column,
  at every snapshot, across a rename and a drop-and-add. pyiceberg's own pyarrow reader reads no
  file holding such a column, not even a projection without it: it converts the file's whole
  schema first and has no millisecond time (the limitation docs/iceberg.md states).
* TIMESTAMP(7..9) / TIMESTAMP_LTZ(7..9), stored as INT64 nanosecond timestamps, published as
  ``timestamp_ns`` / ``timestamptz_ns`` with format version 3: pyiceberg reads them to the
  nanosecond, at every snapshot, with row filters pruned by their bounds.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine.schema_changes import AddColumn, DropColumn, RenameColumn
from engine.types import INT, STRING, TIME, TIMESTAMP, TIMESTAMP_LTZ, DataField
from tests.compat.iceberg.oracle import pyiceberg_python, read_iceberg, require_polars

pytestmark = pytest.mark.compat

ICEBERG = {"metadata.iceberg.storage": "table-location"}


@pytest.fixture(scope="module")
def python() -> str:
    return pyiceberg_python()


def _metadata(table) -> str:
    return f"{table.path}/metadata/v{table.latest_snapshot().id}.metadata.json"


def _rows(table: pa.Table, columns: list[str]) -> list[tuple[Any, ...]]:
    """The rows, timestamps as their epoch nanoseconds (exact whatever unit a reader returns)."""
    cols = []
    for name in columns:
        col = table.column(name)
        if pa.types.is_timestamp(col.type):
            col = pc.cast(col, pa.timestamp("ns", col.type.tz)).cast(pa.int64())
        cols.append(col.to_pylist())
    return sorted(zip(*cols, strict=True), key=repr)


def _same(iceberg: pa.Table, ours: pa.Table) -> None:
    assert _rows(iceberg, ours.column_names) == _rows(ours, ours.column_names)


def test_time_columns(catalog, python) -> None:
    require_polars(python)
    fields = [
        DataField(0, "id", INT()),
        DataField(1, "t", TIME(3)),
        DataField(2, "t0", TIME(0)),
        DataField(3, "s", STRING()),
        DataField(4, "pt", TIME(0)),
    ]
    t = catalog.create_table("db.times", fields, partition_keys=["pt"], options=ICEBERG)
    t.write_arrow(pa.table({
        "id": [1, 2, 3], "t": [dt.time(1, 2, 3, 456000), None, dt.time(23, 59, 59, 999000)],
        "t0": [dt.time(4, 5, 6), dt.time(0), None], "s": ["a", None, "c"], "pt": [dt.time(12)] * 2 + [None],
    }, schema=t.arrow_schema))  # fmt: skip
    t.write_arrow(pa.table({
        "id": [4], "t": [dt.time(0, 0, 0, 1000)], "t0": [dt.time(9)], "s": ["d"], "pt": [dt.time(13)],
    }, schema=t.arrow_schema))  # fmt: skip
    # Renamed s keeps its id (old files read under the new name); t0 dropped and added again is a
    # new id (old files have no value for it): both only read right when columns match by id.
    catalog.alter_table("db.times", [RenameColumn("s", "s2"), DropColumn("t0"), AddColumn("t0", "TIME(0)")])
    t = catalog.get_table("db.times")
    t.write_arrow(pa.table({
        "id": [5], "t": [dt.time(10, 11, 12, 13000)], "s2": ["e"], "pt": [dt.time(12)], "t0": [dt.time(1)],
    }, schema=t.arrow_schema))  # fmt: skip
    t = t.refresh()
    got = read_iceberg(python, _metadata(t), snapshots=[1, 2, 3], reader="polars")
    ours = t.to_arrow()
    _same(got.current, ours)
    assert ours.column("t0").to_pylist().count(None) == 4  # the new t0 is empty in the old files
    for sid in (1, 2, 3):
        _same(got.at[sid], t.to_arrow(snapshot_id=sid))
    assert {f["name"]: f["type"] for f in got.schema["fields"]}["t"] == "time"
    projected = read_iceberg(python, _metadata(t), columns=["id", "s2"], reader="polars")
    _same(projected.current, ours.select(["id", "s2"]))
    # pyiceberg's pyarrow reader refuses any file with a TIME_MILLIS column, even when not asked for it.
    with pytest.raises(AssertionError, match=r"Column 't' has an unsupported type: time32\[ms\]"):
        read_iceberg(python, _metadata(t), columns=["id", "s2"])


NANOS = np.datetime64("2024-05-06T07:08:09.123456789", "ns")


def test_nanosecond_timestamps_with_format_version_3(catalog, python) -> None:
    fields = [
        DataField(0, "id", INT()),
        DataField(1, "ts9", TIMESTAMP(9)),
        DataField(2, "tz9", TIMESTAMP_LTZ(9)),
        DataField(3, "ts7", TIMESTAMP(7)),
        DataField(4, "p", STRING()),
    ]
    options = {**ICEBERG, "metadata.iceberg.format-version": "3"}
    t = catalog.create_table("db.nanos", fields, partition_keys=["p"], options=options)

    def batch(start: int, n: int) -> pa.Table:
        at = [NANOS + np.timedelta64(start + i, "ns") if i % 3 != 2 else None for i in range(n)]
        return pa.table({
            "id": list(range(start, start + n)),
            "ts9": pa.array(at, pa.timestamp("ns")),
            "tz9": pa.array(at[::-1], pa.timestamp("ns")).cast(pa.timestamp("ns", "UTC")),
            "ts7": pa.array([None, *at[1:]], pa.timestamp("ns")),
            "p": [f"p{start % 20}"] * n,
        }, schema=t.arrow_schema)  # fmt: skip

    for k in range(3):
        t.write_arrow(batch(10 * k, 4))
    t = t.refresh()
    # pyiceberg 0.10 binds no literal to a nanosecond column (a filter on one fails): filter on p,
    # pruned by the partition summaries of manifests whose files carry nanosecond bounds.
    got = read_iceberg(python, _metadata(t), snapshots=[1, 2, 3], filters=["p = 'p10'"])
    ours = t.to_arrow()
    _same(got.current, ours)
    for sid in (1, 2, 3):
        _same(got.at[sid], t.to_arrow(snapshot_id=sid))
    types = {f["name"]: f["type"] for f in got.schema["fields"]}
    assert (types["ts9"], types["tz9"], types["ts7"]) == ("timestamp_ns", "timestamptz_ns", "timestamp_ns")
    expected = ours.filter(pc.equal(ours.column("p"), "p10"))
    assert expected.num_rows == 4
    _same(got.filtered[0], expected)


def test_decimals_of_every_parquet_width_and_millisecond_timestamps(catalog, python) -> None:
    """Decimals stored as INT32, INT64 and fixed-length binary, TIMESTAMP(3) and TIMESTAMP_LTZ(3)
    (Parquet milliseconds), with NULLs; filters pruned by their bounds keep every matching row."""
    schema = pa.schema([
        ("id", pa.int32()), ("d5", pa.decimal128(5, 2)), ("d18", pa.decimal128(18, 4)),
        ("d38", pa.decimal128(38, 10)), ("ts3", pa.timestamp("ms")), ("tz3", pa.timestamp("ms", "UTC")),
    ])  # fmt: skip
    t = catalog.create_table("db.widths", schema, options=ICEBERG)
    base = dt.datetime(2024, 2, 3, 4, 5, 6, 789000)
    for k in range(3):
        ids = list(range(10 * k, 10 * k + 4))

        def some(make, ids=ids) -> list[Any]:  # every fourth row NULL
            return [make(i) if i % 4 != 3 else None for i in ids]

        t.write_arrow(pa.table({
            "id": ids,
            "d5": some(lambda i: decimal.Decimal(f"-{i}.25")),
            "d18": some(lambda i: decimal.Decimal(f"{i}12345678901.2345")),
            "d38": some(lambda i: decimal.Decimal(f"-{i}1234567890123456789012345.0123456789")),
            "ts3": some(lambda i: base + dt.timedelta(days=i)),
            "tz3": some(lambda i: (base + dt.timedelta(hours=i)).replace(tzinfo=dt.UTC)),
        }, schema=schema))  # fmt: skip
    t = t.refresh()
    filters = {
        "d38 < -101234567890123456789012345": lambda r: r["d38"] is not None
        and r["d38"] < decimal.Decimal("-101234567890123456789012345"),
        "d5 >= -1.25": lambda r: r["d5"] is not None and r["d5"] >= decimal.Decimal("-1.25"),
        "d18 > 1012345678901.2345": lambda r: r["d18"] is not None
        and r["d18"] > decimal.Decimal("1012345678901.2345"),
        "tz3 >= '2024-02-03T15:05:06.789+00:00'": lambda r: r["tz3"] is not None
        and r["tz3"] >= dt.datetime(2024, 2, 3, 15, 5, 6, 789000, tzinfo=dt.UTC),
    }
    got = read_iceberg(python, _metadata(t), snapshots=[1, 2], filters=list(filters))
    ours = t.to_arrow()
    _same(got.current, ours)
    for sid in (1, 2):
        _same(got.at[sid], t.to_arrow(snapshot_id=sid))
    for (text, keep), filtered in zip(filters.items(), got.filtered, strict=True):
        expected = pa.Table.from_pylist([r for r in ours.to_pylist() if keep(r)], schema=ours.schema)
        assert expected.num_rows > 0, text
        _same(filtered, expected)
