"""engine.meta.file_formats: ORC data files written and read through the engine, as Parquet ones are."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from engine.files.reader import iter_data_file
from engine.meta.file_formats import ORC_ID, format_of
from engine.schema_changes import AddColumn, RenameColumn, SetOption
from engine.types import (
    ARRAY,
    BYTES,
    DATE,
    DECIMAL,
    INT,
    MAP,
    ROW,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    DataField,
)

FIELDS = [
    DataField(0, "i", INT(False)), DataField(1, "s", STRING()), DataField(2, "ts", TIMESTAMP(6)),
    DataField(3, "tl", TIMESTAMP_LTZ(6)), DataField(4, "d", DECIMAL(10, 2)), DataField(5, "t", TIME()),
    DataField(6, "a", ARRAY(INT())), DataField(7, "m", MAP(STRING(), INT())), DataField(8, "dt", DATE()),
    DataField(9, "b", BYTES()), DataField(10, "ti", TINYINT()),
    DataField(11, "r", ROW([DataField(12, "x", INT()), DataField(13, "y", STRING())])),
]
UTC = dt.UTC


def rows(ids) -> pa.Table:
    ids = list(ids)
    n = len(ids)
    return pa.table({
        "i": pa.array(ids, pa.int32()), "s": [f"s{i}" if i % 3 else None for i in ids],
        "ts": [dt.datetime(2024, 1, 2, 3, 4, 5, 678901 + i) for i in ids],
        "tl": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, i, tzinfo=UTC) for i in ids],
                       pa.timestamp("us", "UTC")),
        "d": [decimal.Decimal(f"{i}.25") for i in ids],
        "t": pa.array([3_723_000 + 1000 * i for i in ids], pa.time32("ms")),
        "a": [[i, i + 1] for i in ids],
        "m": pa.array([[("k", i)] for i in ids], pa.map_(pa.string(), pa.int32())),
        "dt": [dt.date(2024, 1, 1)] * n, "b": [bytes([i % 256]) for i in ids],
        "ti": pa.array([i % 100 for i in ids], pa.int8()),
        "r": [{"x": i, "y": str(i)} for i in ids]})


@pytest.mark.parametrize(("name", "fmt"), [
    ("data-1.orc", "orc"), ("data-1.parquet", "parquet"), ("data-1.zstd.orc", "orc"),
    ("data-1.parquet.zstd", "parquet"), ("data-1.avro", "avro"), ("noext", "")])
def test_the_format_is_the_extension_as_paimon_reads_it(name, fmt):
    assert format_of(name) == fmt


@pytest.mark.parametrize("keys", [["i"], []])
def test_every_type_round_trips_through_orc(catalog, keys):
    t = catalog.create_table("db.o", FIELDS, primary_keys=keys,
                             options={"file.format": "orc", **({"bucket": "1"} if keys else {})})
    t.write_arrow(rows(range(5)))
    t.write_arrow(rows([2, 7]))
    t = t.refresh()
    files = [f for s in t.new_scan().plan().splits for f in s.files]
    assert files and all(f.file_name.endswith(".orc") for f in files)
    physical = orc.ORCFile(t.store.paths.data_file("", 0, files[0].file_name)).schema
    assert physical.field("s").metadata[ORC_ID] == b"1" and physical.field("t").type == pa.int32()
    expected = pa.concat_tables([rows([0, 1, 3, 4]), rows([2, 7])] if keys else
                                [rows(range(5)), rows([2, 7])]).sort_by("i")
    assert t.to_arrow().sort_by("i").equals(expected.cast(t.arrow_schema))
    t.compact(full=True)
    assert t.refresh().to_arrow().sort_by("i").equals(expected.cast(t.arrow_schema))


def test_orc_files_read_in_batches_and_through_schema_evolution(catalog):
    t = catalog.create_table("db.e", FIELDS[:3], options={"file.format": "orc"})
    t.write_arrow(rows(range(1000)).select(["i", "s", "ts"]))
    f = next(f for s in t.new_scan().plan().splits for f in s.files)
    path = t.store.paths.data_file("", 0, f.file_name)
    pieces = list(iter_data_file(t.store, path, f, t.store.schema.fields, batch_rows=300))
    assert [p.num_rows for p in pieces] == [300, 300, 300, 100]
    catalog.alter_table("db.e", [RenameColumn(("s",), "s2"), AddColumn(("n",), INT()),
                                 SetOption("file.format", "parquet")])
    t = catalog.get_table("db.e")
    t.write_arrow(pa.table({"i": pa.array([5000], pa.int32()), "s2": ["new"], "ts": [None],
                            "n": pa.array([1], pa.int32())}))
    got = t.to_arrow().sort_by("i")
    assert got.column_names == ["i", "s2", "ts", "n"] and got.num_rows == 1001
    assert got.column("s2")[1].as_py() == "s1" and got.column("n").null_count == 1000
