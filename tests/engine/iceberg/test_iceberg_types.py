"""TIME, nanosecond timestamps and VARIANT in the Iceberg metadata (engine.iceberg.schema), as
Paimon 2.0 maps them: the types, the Avro partition values and the column bounds, and the typed
refusals. tests/compat/iceberg/test_iceberg_types_read.py reads such tables with Iceberg readers."""

from __future__ import annotations

import datetime as dt
import json
import logging
import struct
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pytest

from engine.iceberg import sync
from engine.iceberg.avro import read_container
from engine.iceberg.schema import IcebergUnsupportedError, iceberg_schema, partition_avro_fields
from engine.schema import TableSchema
from engine.schema_changes import SetOption
from engine.types import INT, TIME, TIMESTAMP, TIMESTAMP_LTZ, DataField

ICEBERG = {"metadata.iceberg.storage": "table-location"}
V3 = {**ICEBERG, "metadata.iceberg.format-version": "3"}
NANOS = np.datetime64("2024-05-06T07:08:09.123456789", "ns")


def _types(s: TableSchema, version: int) -> dict[str, object]:
    return {f["name"]: f["type"] for f in iceberg_schema(s, version)["fields"]}


def _current(table) -> dict:
    meta = Path(table.path) / "metadata"
    version = int((meta / "version-hint.text").read_text())
    return json.loads((meta / f"v{version}.metadata.json").read_text())


def _entries(meta: dict) -> list[dict]:
    snapshot = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    out = []
    for m in read_container(Path(snapshot["manifest-list"]).read_bytes(), "list")[0]:
        out.extend(read_container(Path(m["manifest_path"]).read_bytes(), "manifest")[0])
    return out


def test_types_as_paimon_maps_them() -> None:
    s = TableSchema.create(
        [
            ("t0", "TIME(0)"), ("t3", "TIME(3)"), ("ts6", "TIMESTAMP(6)"), ("ts9", "TIMESTAMP(9)"),
            ("tz7", "TIMESTAMP_LTZ(7)"), ("tz3", "TIMESTAMP_LTZ(3)"), ("r", "STRUCT<x: TIMESTAMP(9)>"),
        ]
    )  # fmt: skip
    got = _types(s, 3)
    assert [got[n] for n in ("t0", "t3", "ts6", "ts9", "tz7", "tz3")] == [
        "time", "time", "timestamp", "timestamp_ns", "timestamptz_ns", "timestamptz",
    ]  # fmt: skip
    assert got["r"]["fields"][0]["type"] == "timestamp_ns"  # type: ignore[index]
    # Format version 2 has no nanosecond timestamps: refused, naming the first such column and the fix.
    with pytest.raises(IcebergUnsupportedError, match=r"column ts9 .*TIMESTAMP\(9\).*format-version' = '3'"):
        iceberg_schema(s, 2)
    assert _types(TableSchema.create([("t", "TIME(3)"), ("ts", "TIMESTAMP(3)")]), 2) == {
        "t": "time", "ts": "timestamp",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("column", "why"),
    [
        ("TIME(4)", r"column c has type TIME\(4\).*precision 0 to 3"),
        ("TIME(9)", r"column c has type TIME\(9\)"),
        ("TIMESTAMP(2)", r"column c has type TIMESTAMP\(2\)"),
        ("TIMESTAMP_LTZ(0)", r"column c has type TIMESTAMP_LTZ\(0\)"),
        ("VARIANT", r"column c has type VARIANT.*row lineage"),
        ("ARRAY<VARIANT>", r"column c\.element has type VARIANT"),
    ],
)
def test_what_paimon_refuses_is_refused_in_both_versions(column: str, why: str) -> None:
    s = TableSchema.create([("k", "INT"), ("c", column)])
    for version in (2, 3):
        with pytest.raises(IcebergUnsupportedError, match=why):
            iceberg_schema(s, version)


def test_time_partitions_and_nanosecond_bounds(catalog) -> None:
    """A TIME partition value in Avro (``time-micros``) and the nanosecond bounds of a data file:
    Iceberg's single-value form of a timestamp_ns is its nanoseconds, little-endian."""
    fields = [DataField(0, "id", INT()), DataField(1, "pt", TIME(3)), DataField(2, "tz", TIMESTAMP_LTZ(9))]
    t = catalog.create_table("db.ns", fields, partition_keys=["pt"], options=V3)
    tz = pa.array([NANOS, NANOS + 7, NANOS - 3], pa.timestamp("ns")).cast(pa.timestamp("ns", "UTC"))
    data = {"id": [1, 2, 3], "pt": [dt.time(1, 2, 3, 456000)] * 3, "tz": tz}
    t.write_arrow(pa.table(data, schema=t.arrow_schema))
    meta = _current(t)
    assert {f["name"]: f["type"] for f in meta["schemas"][-1]["fields"]}["tz"] == "timestamptz_ns"
    [entry] = _entries(meta)
    micros = 3_723_456_000
    assert entry["data_file"]["partition"] == {"pt": micros}
    nanos = int(NANOS.astype(np.int64))
    lower = {b["key"]: b["value"] for b in entry["data_file"]["lower_bounds"]}
    upper = {b["key"]: b["value"] for b in entry["data_file"]["upper_bounds"]}
    assert lower[2] == struct.pack("<q", nanos - 3) and upper[2] == struct.pack("<q", nanos + 7)
    [listed] = read_container(Path(meta["snapshots"][-1]["manifest-list"]).read_bytes(), "list")[0]
    summary = listed["partitions"][0]
    assert summary["lower_bound"] == summary["upper_bound"] == struct.pack("<q", micros)
    with open(listed["manifest_path"], "rb") as f:
        manifest_schema = fastavro.reader(f).writer_schema
    assert manifest_schema is not None
    data_file = next(f for f in manifest_schema["fields"] if f["name"] == "data_file")["type"]["fields"]
    record = next(f for f in data_file if f["name"] == "partition")["type"]["fields"]
    assert [f["type"][1]["logicalType"] for f in record] == ["time-micros"]


def test_nanosecond_partition_keys_are_refused() -> None:
    """Iceberg's Avro timestamp-nanos partition values are read by no pyiceberg release, and
    Paimon's Avro manifest writer refuses them: the table is not published."""
    s = TableSchema.create([("k", "INT"), ("p", "TIMESTAMP_LTZ(9)")], partition_keys=["p"])
    iceberg_schema(s, 3)  # the column itself is fine
    with pytest.raises(IcebergUnsupportedError, match=r"partition column p has type TIMESTAMP_LTZ\(9\)"):
        partition_avro_fields(s)


def test_version_2_refuses_nanosecond_timestamps_until_version_3_is_set(catalog, caplog) -> None:
    t = catalog.create_table("db.t", [DataField(0, "id", INT()), DataField(1, "ts", TIMESTAMP(9))],
                             options=ICEBERG)  # fmt: skip
    rows = pa.table({"id": [1], "ts": pa.array([NANOS], pa.timestamp("ns"))}, schema=t.arrow_schema)
    with caplog.at_level(logging.WARNING, logger="engine.iceberg"):
        t.write_arrow(rows)
    assert "metadata.iceberg.format-version' = '3'" in caplog.text
    assert t.refresh().to_arrow().num_rows == 1  # the commit itself went through
    assert not (Path(t.path) / "metadata").exists()
    with pytest.raises(IcebergUnsupportedError, match="timestamp_ns"):
        sync(t.store)
    catalog.alter_table("db.t", [SetOption("metadata.iceberg.format-version", "3")])
    t = catalog.get_table("db.t")
    t.write_arrow(rows)
    meta = _current(t)
    assert meta["format-version"] == 3 and meta["current-snapshot-id"] == t.latest_snapshot().id
    assert sum(e["data_file"]["record_count"] for e in _entries(meta)) == 2
