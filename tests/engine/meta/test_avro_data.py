"""engine.meta.avro_data: Avro data files in Paimon's layout, written and read through polars.

Every type an Avro data file holds round-trips with NULLs (top level and nested), under every
codec; the header is Paimon's schema (names, logical types); a file in the exact layout Paimon's
Java writer produces (plain NOT NULL fields, string-keyed ``map``, ``_KEY_`` columns) reads back;
tables with ``file.format = 'avro'`` are written, read, evolved and compacted through the engine.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json

import fastavro
import numpy as np
import pyarrow as pa
import pytest

from engine.errors import CorruptDataError, UnsupportedTableError
from engine.meta.avro_data import RECORD, AvroWriter, read_avro
from engine.schema_changes import AddColumn, RenameColumn, SetOption
from engine.types import INT

UTC = dt.UTC
D = decimal.Decimal

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int32(), nullable=False),
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("d9", pa.decimal128(9, 2)),
        ("d38", pa.decimal128(38, 10)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("t", pa.time32("ms")),
        ("ts0", pa.timestamp("s")),
        ("ts3", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")),
        ("ltz3", pa.timestamp("ms", "UTC")),
        ("ltz6", pa.timestamp("us", "UTC")),
        ("arr", pa.list_(pa.field("element", pa.int32()))),
        ("arr_rows", pa.list_(pa.field("element", pa.struct([("x", pa.int64()), ("y", pa.string())])))),
        (
            "row",
            pa.struct(
                [
                    ("a", pa.int16()),
                    ("inner", pa.struct([("z", pa.decimal128(5, 1))])),
                    ("l", pa.list_(pa.field("element", pa.string()))),
                ]
            ),
        ),
    ]
)

DATA = pa.table(
    {
        "k": [1, 2, 3, 4],
        "b": [True, None, False, True],
        "i8": pa.array([-128, None, 127, 0], pa.int8()),
        "i16": pa.array([-32768, 32767, None, 1], pa.int16()),
        "i64": [2**62, None, -(2**63), 0],
        "f32": pa.array([1.5, None, float("inf"), -0.0], pa.float32()),
        "f64": [2.5, float("nan"), None, -1e300],
        "d9": [D("1.25"), None, D("-9999999.99"), D("0.00")],
        "d38": [D("1234567890123456789012345678.0123456789"), None, D("-0.0000000001"), D(0)],
        "s": ["x", "", None, "ünïcødé"],
        "bin": [b"\x00\xff", None, b"", b"abc"],
        "d": [dt.date(2024, 1, 2), None, dt.date(1969, 12, 31), dt.date(1, 1, 1)],
        "t": pa.array([3_723_004, None, 0, 86_399_999], pa.time32("ms")),
        "ts0": pa.array(
            [dt.datetime(2024, 1, 2, 3, 4, 5), None, dt.datetime(1900, 1, 1), dt.datetime(1970, 1, 1)],
            pa.timestamp("s"),
        ),
        "ts3": pa.array(
            [
                dt.datetime(2024, 1, 2, 3, 4, 5, 123000),
                None,
                dt.datetime(1960, 6, 1),
                dt.datetime(2100, 1, 1),
            ],
            pa.timestamp("ms"),
        ),
        "ts6": pa.array(
            [
                dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
                None,
                dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                dt.datetime(1970, 1, 1),
            ],
            pa.timestamp("us"),
        ),
        "ltz3": pa.array(
            [
                dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=UTC),
                None,
                dt.datetime(1950, 1, 1, tzinfo=UTC),
                dt.datetime(1970, 1, 1, tzinfo=UTC),
            ],
            pa.timestamp("ms", "UTC"),
        ),
        "ltz6": pa.array(
            [
                dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
                None,
                dt.datetime(1950, 1, 1, tzinfo=UTC),
                dt.datetime(1970, 1, 1, tzinfo=UTC),
            ],
            pa.timestamp("us", "UTC"),
        ),
        "arr": [[1, None, 3], None, [], [None]],
        "arr_rows": [[{"x": 1, "y": "a"}, None, {"x": None, "y": None}], None, [], [{"x": 2, "y": "b"}]],
        "row": [
            {"a": 1, "inner": {"z": D("1.5")}, "l": ["k", None]},
            None,
            {"a": None, "inner": None, "l": None},
            {"a": 2, "inner": {"z": None}, "l": []},
        ],
    },
    schema=SCHEMA,
)


def _write(
    table: pa.Table, options: dict[str, str] | None = None, compression: str = "zstd", pieces: int = 2
) -> bytes:
    sink = pa.BufferOutputStream()
    writer = AvroWriter(sink, table.schema, options or {}, compression)
    step = max(1, -(-table.num_rows // pieces))
    for offset in range(0, table.num_rows, step):
        writer.write_table(table.slice(offset, step))
    writer.close()
    return sink.getvalue().to_pybytes()


def _types(schema: pa.Schema) -> dict[str, pa.DataType]:
    return {f.name: f.type for f in schema}


@pytest.mark.parametrize(
    ("options", "compression", "codec"),
    [
        ({}, "zstd", "zstandard"),
        ({}, "snappy", "snappy"),
        ({}, "gzip", "deflate"),
        ({}, "none", "null"),
        ({"avro.codec": "bzip2"}, "zstd", "bzip2"),
        ({"avro.codec": "xz"}, "zstd", "xz"),
        ({"avro.codec": "deflate"}, "zstd", "deflate"),
    ],
)
def test_every_type_round_trips_with_nulls_under_every_codec(options, compression, codec):
    data = _write(DATA, options, compression, pieces=3)
    assert fastavro.reader(io.BytesIO(data)).codec == codec
    back = read_avro(data, "f.avro", None, _types(SCHEMA))
    assert back.schema.names == SCHEMA.names and back.schema.types == SCHEMA.types
    for name in SCHEMA.names:
        assert back.column(name).to_pylist() == DATA.column(name).to_pylist() or name == "f64", name
    nan = back.column("f64").to_pylist()
    assert nan[0] == 2.5 and nan[1] != nan[1] and nan[2] is None  # NaN survives
    # a projection, in the caller's order
    assert read_avro(data, "f.avro", ["s", "k"], _types(SCHEMA)).column_names == ["s", "k"]


def test_fastavro_reads_the_same_rows_paimon_readers_would():
    """An independent decoder (fastavro, Paimon's pypaimon reads with it) sees the same values."""
    records = list(fastavro.reader(io.BytesIO(_write(DATA))))
    assert [r["k"] for r in records] == [1, 2, 3, 4]
    assert records[0]["d38"] == D("1234567890123456789012345678.0123456789")
    assert records[0]["ts6"] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert records[0]["t"] == dt.time(1, 2, 3, 4000)
    assert records[0]["arr_rows"] == [{"x": 1, "y": "a"}, None, {"x": None, "y": None}]
    assert records[2]["row"] == {"a": None, "inner": None, "l": None}


def test_the_header_is_paimons_schema():
    schema = json.loads(fastavro.reader(io.BytesIO(_write(DATA))).metadata["avro.schema"])
    assert schema["name"] == RECORD
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    assert all(t[0] == "null" for t in fields.values())  # polars encodes every value as a union
    assert fields["d9"][1] == {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}
    assert fields["ts3"][1]["logicalType"] == "timestamp-millis"
    assert fields["ts0"][1]["logicalType"] == "timestamp-millis"
    assert fields["ts6"][1]["logicalType"] == "timestamp-micros"
    assert fields["ltz3"][1]["logicalType"] == "local-timestamp-millis"
    assert fields["ltz6"][1]["logicalType"] == "local-timestamp-micros"
    assert fields["t"][1] == {"type": "int", "logicalType": "time-millis"}
    assert fields["d"][1] == {"type": "int", "logicalType": "date"}
    assert fields["i8"][1] == "int" and fields["i16"][1] == "int"
    assert fields["row"][1]["name"] == f"{RECORD}_row"
    assert fields["row"][1]["fields"][1]["type"][1]["name"] == f"{RECORD}_row_inner"
    assert fields["arr_rows"][1]["items"][1]["name"] == f"{RECORD}_arr_rows"


def test_a_file_in_the_layout_of_paimons_java_writer_reads():
    """Plain NOT NULL fields, a string-keyed Avro ``map``, an array map, the key-value columns."""
    schema = {
        "type": "record",
        "name": RECORD,
        "fields": [
            {"name": "_KEY_k", "type": "long"},
            {"name": "_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_VALUE_KIND", "type": "int"},
            {"name": "k", "type": "long"},
            {"name": "tiny", "type": ["null", "int"], "default": None},
            {"name": "m", "type": ["null", {"type": "map", "values": ["null", "string"]}], "default": None},
            {
                "name": "am",
                "type": [
                    "null",
                    {
                        "type": "array",
                        "logicalType": "map",
                        "items": {
                            "type": "record",
                            "name": f"{RECORD}_am",
                            "fields": [
                                {"name": "key", "type": "int"},
                                {"name": "value", "type": ["null", "double"], "default": None},
                            ],
                        },
                    },
                ],
                "default": None,
            },
            {
                "name": "r",
                "type": {
                    "type": "record",
                    "name": f"{RECORD}_r",
                    "fields": [
                        {"name": "x", "type": "int"},
                        {"name": "mm", "type": {"type": "map", "values": "long"}},
                    ],
                },
            },
        ],
    }
    records = [
        {
            "_KEY_k": 1,
            "_SEQUENCE_NUMBER": 7,
            "_VALUE_KIND": 0,
            "k": 1,
            "tiny": -3,
            "m": {"a": "x", "b": None},
            "am": [{"key": 2, "value": 0.5}],
            "r": {"x": 1, "mm": {"q": 9}},
        },
        {
            "_KEY_k": 2,
            "_SEQUENCE_NUMBER": 8,
            "_VALUE_KIND": 3,
            "k": 2,
            "tiny": None,
            "m": None,
            "am": None,
            "r": {"x": 2, "mm": {}},
        },
    ]
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, codec="zstandard")
    types = {
        "_SEQUENCE_NUMBER": pa.int64(),
        "_VALUE_KIND": pa.int8(),
        "k": pa.int64(),
        "tiny": pa.int8(),
        "m": pa.map_(pa.string(), pa.string()),
        "am": pa.map_(pa.int32(), pa.float64()),
        "r": pa.struct([("x", pa.int32()), ("mm", pa.map_(pa.string(), pa.int64()))]),
    }
    back = read_avro(buf.getvalue(), "java.avro", list(types), types)
    assert back.schema.names == list(types) and back.schema.types == list(types.values())
    assert back.to_pylist() == [
        {
            "_SEQUENCE_NUMBER": 7,
            "_VALUE_KIND": 0,
            "k": 1,
            "tiny": -3,
            "m": [("a", "x"), ("b", None)],
            "am": [(2, 0.5)],
            "r": {"x": 1, "mm": [("q", 9)]},
        },
        {
            "_SEQUENCE_NUMBER": 8,
            "_VALUE_KIND": 3,
            "k": 2,
            "tiny": None,
            "m": None,
            "am": None,
            "r": {"x": 2, "mm": []},
        },
    ]
    # without the caller's types, each column takes the type its Avro type maps to
    assert read_avro(buf.getvalue(), "java.avro", ["m", "_VALUE_KIND"]).schema.types == [
        pa.map_(pa.string(), pa.string()),
        pa.int32(),
    ]


def test_an_avro_type_paimon_never_writes_is_refused_by_name():
    schema = {
        "type": "record",
        "name": RECORD,
        "fields": [{"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}}],
    }
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"e": "A"}])
    with pytest.raises(UnsupportedTableError, match="enum"):
        read_avro(buf.getvalue(), "e.avro")


# -- tables ----------------------------------------------------------------------------------------
TABLE = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        ("v", pa.string()),
        ("d", pa.decimal128(10, 2)),
        ("l", pa.list_(pa.field("element", pa.int64()))),
        ("r", pa.struct([("a", pa.int16())])),
    ]
)


def _rows(ks, v) -> pa.Table:
    ks = list(ks)
    return pa.table(
        {
            "k": ks,
            "v": [v if k % 3 else None for k in ks],
            "d": [D(k) / 4 for k in ks],
            "l": [[k, None] if k % 2 else None for k in ks],
            "r": [{"a": k % 100} if k % 5 else None for k in ks],
        },
        schema=TABLE,
    )


def _formats(t) -> set[str]:
    return {f.file_name.rsplit(".", 1)[1] for s in t.refresh().new_scan().plan().splits for f in s.files}


def _sorted(t) -> list[dict]:
    return sorted(t.refresh().to_arrow().to_pylist(), key=lambda r: r["k"])


@pytest.mark.parametrize("keys", [["k"], []], ids=["primary-key", "append"])
def test_avro_tables_are_written_read_and_compacted(catalog, keys):
    t = catalog.create_table(
        f"db.avro{len(keys)}",
        TABLE,
        primary_keys=keys,
        options={"file.format": "avro", "bucket": "2" if keys else "-1"},
    )
    t.write_arrow(_rows(range(100), "a"))
    t.write_arrow(_rows(range(50, 150), "b"))
    assert _formats(t) == {"avro"}
    expected = {r["k"]: r for r in _rows(range(100), "a").to_pylist()}
    expected.update({r["k"]: r for r in _rows(range(50, 150), "b").to_pylist()})
    got = _sorted(t)
    if keys:
        assert got == [expected[k] for k in sorted(expected)]
    else:
        assert len(got) == 200
    t.refresh().compact(full=True)
    assert _formats(t) == {"avro"} and _sorted(t) == got
    # statistics: the manifests prune by them as for Parquet
    from engine.scan.predicate import equal

    assert [r["k"] for r in t.refresh().to_arrow(filter=equal("k", 120)).to_pylist()] == [120]


def test_a_table_switches_format_and_evolves_across_avro_files(catalog):
    t = catalog.create_table("db.sw", TABLE, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(_rows(range(10), "p"))
    catalog.alter_table("db.sw", [SetOption("file.format", "avro")])
    t = catalog.get_table("db.sw")
    t.write_arrow(_rows(range(5, 15), "a"))
    assert _formats(t) == {"parquet", "avro"}
    catalog.alter_table("db.sw", [AddColumn("w", INT()), RenameColumn("v", "v2")])
    t = catalog.get_table("db.sw")
    rows = _sorted(t)
    assert [r["v2"] for r in rows] == [
        _rows([k], "p" if k < 5 else "a").column("v")[0].as_py() for k in range(15)
    ]
    assert all(r["w"] is None for r in rows)
    t.compact(full=True)
    assert _sorted(t) == rows and _formats(t) == {"avro"}


def test_types_an_avro_file_cannot_hold_are_refused_at_create(catalog):
    for bad, word in ((pa.timestamp("ns"), "TIMESTAMP"), (pa.time64("us"), "TIME")):
        schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("x", bad)])
        with pytest.raises(UnsupportedTableError, match=f"'x' is a {word}.*avro"):
            catalog.create_table(f"db.bad{word}", schema, options={"file.format": "avro"})


def test_a_damaged_avro_file_reads_as_corrupt_data(catalog):
    t = catalog.create_table("db.bad", TABLE, options={"file.format": "avro"})
    t.write_arrow(_rows(range(10), "a"))
    f = t.refresh().new_scan().plan().splits[0].files[0]
    path = t.store.paths.data_file("", 0, f.file_name)
    data = open(path, "rb").read()
    with open(path, "wb") as out:
        out.write(data[: len(data) - 30])
    with pytest.raises(CorruptDataError, match=f.file_name):
        t.refresh().to_arrow()


def test_string_columns_are_written_whatever_their_arrow_width():
    """Writers hand ``large_string`` columns sometimes (conformed input); the header stays ``string``."""
    table = pa.table({"s": pa.array(["a", None], pa.large_string())})
    back = read_avro(_write(table, pieces=1), "s.avro", None, {"s": pa.string()})
    assert back.column("s").to_pylist() == ["a", None] and back.schema.field("s").type == pa.string()


def test_maps_are_read_but_not_written_in_avro(catalog):
    """polars encodes a map's entries as nullable unions, which Paimon's map reader refuses: a MAP
    column is refused by name for Avro at CREATE, at a format switch and by the writer itself."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("m", pa.map_(pa.string(), pa.int64()))])
    with pytest.raises(UnsupportedTableError, match="'m' is a MAP"):
        catalog.create_table("db.maps", schema, options={"file.format": "avro"})
    catalog.create_table("db.maps", schema)
    with pytest.raises(UnsupportedTableError, match="'m' is a MAP"):
        catalog.alter_table("db.maps", [SetOption("file.format", "avro")])
    with pytest.raises(UnsupportedTableError, match="MAP"):
        AvroWriter(pa.BufferOutputStream(), schema, {}, "zstd")


def test_a_top_level_nullable_row_as_javas_writer_declares_it_reads():
    row = {
        "type": "record",
        "name": RECORD,
        "fields": [{"name": "k", "type": "int"}, {"name": "v", "type": ["null", "string"]}],
    }
    buf = io.BytesIO()
    fastavro.writer(buf, ["null", row], [{"k": 1, "v": "a"}, {"k": 2, "v": None}], codec="deflate")
    back = read_avro(buf.getvalue(), "java.avro", ["v", "k"], {"k": pa.int32(), "v": pa.string()})
    assert back.to_pylist() == [{"v": "a", "k": 1}, {"v": None, "k": 2}]


@pytest.mark.parametrize("precision", [5, 9, 18, 19, 38])
def test_decimals_round_trip_at_every_width_and_sign(precision):
    """Values whose top bit is set (327.68 = 0x8000 unscaled) keep their sign: polars' own decimal
    encoding would drop the sign byte, so the writer encodes the bytes itself."""
    rng = np.random.default_rng(precision)
    limit = 10**precision
    unscaled = [
        u for u in (0, 1, -1, 128, 32768, -32768, 2**31, 2**63, limit - 1, 1 - limit) if abs(u) < limit
    ]
    digits = min(precision, 18)
    unscaled += [int(x) * 10 ** (precision - digits) for x in rng.integers(1 - 10**digits, 10**digits, 200)]
    text = [("-" if u < 0 else "") + f"{abs(u) // 100}.{abs(u) % 100:02d}" for u in unscaled]
    t = pa.table({"d": pa.array([*text, None]).cast(pa.decimal128(precision, 2))})
    data = _write(t, pieces=3)
    assert (
        read_avro(data, "d.avro", None, {"d": t.schema.field("d").type}).column("d").to_pylist()
        == t.column("d").to_pylist()
    )
    assert [r["d"] for r in fastavro.reader(io.BytesIO(data))] == t.column("d").to_pylist()


def test_racing_writers_rebase_avro_files(catalog):
    """The commit rewrites a racing writer's Avro file with shifted sequence numbers
    (``engine.write.sequence_rebase``), in Avro, and the later commit's rows win."""
    from tests.engine.test_commit_races import KV, _kv, _rows

    t = catalog.create_table(
        "db.t",
        KV,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": "1", "write-only": "true", "file.format": "avro"},
    )
    t.write_arrow(_kv([1], "start"))
    wa, wb = t.new_writer(), t.new_writer()
    wa.write(_kv([1, 2], "A"))
    wb.write(_kv([1], "B"))
    ma, mb = wa.prepare_commit(), wb.prepare_commit()
    t.new_commit().commit(mb)
    t.new_commit().commit(ma)
    assert _rows(catalog.get_table("db.t")) == [(1, "A", "a"), (2, "A", "a")]
    assert _formats(t) == {"avro"}
