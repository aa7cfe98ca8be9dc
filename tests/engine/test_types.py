"""Type serde (Paimon JSON), SQL type text, Arrow mapping and widening rules."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.arrow_types import from_arrow_field, from_arrow_type, to_arrow_field, to_arrow_type
from engine.errors import InvalidArgumentError
from engine.type_widening import is_widening
from engine.types import (
    ARRAY,
    BIGINT,
    BINARY,
    BOOLEAN,
    BYTES,
    CHAR,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    MAP,
    MAX_LENGTH,
    MULTISET,
    ROW,
    SMALLINT,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    VARBINARY,
    VARCHAR,
    DataField,
    DataType,
    field_from_json,
    field_to_json,
    max_field_id,
    parse_sql_type,
    type_from_json,
    type_to_json,
    type_to_sql,
)

# ---- strategies (also used by test_schema) ----------------------------------------------------

_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)
_descs = st.none() | st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)


def _atomic() -> st.SearchStrategy[DataType]:
    nb = st.booleans()
    return st.one_of(
        st.builds(
            lambda c, n: c(nullable=n),
            st.sampled_from([BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE, STRING, BYTES]),
            nb,
        ),
        st.integers(1, 38).flatmap(lambda p: st.builds(DECIMAL, st.just(p), st.integers(0, p), nb)),
        st.builds(CHAR, st.integers(1, 300), nb),
        st.builds(VARCHAR, st.integers(1, 300) | st.just(MAX_LENGTH), nb),
        st.builds(BINARY, st.integers(1, 300), nb),
        st.builds(VARBINARY, st.integers(1, 300), nb),
        st.builds(TIME, st.integers(0, 9), nb),
        st.builds(TIMESTAMP, st.integers(0, 9), nb),
        st.builds(TIMESTAMP_LTZ, st.integers(0, 9), nb),
    )


def _rows(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
    fields = st.lists(
        st.tuples(_names, children, _descs), min_size=1, max_size=3, unique_by=lambda t: t[0].lower()
    )
    return st.builds(lambda fs, n: ROW([DataField(0, a, t, d) for a, t, d in fs], n), fields, st.booleans())


def renumber(t: DataType, ids: itertools.count | None = None) -> DataType:
    """``t`` with ROW field ids 0.. depth-first (what parse_sql_type produces)."""
    ids = ids if ids is not None else itertools.count()
    if t.fields:
        new = []
        for f in t.fields:
            fid = next(ids)
            new.append(DataField(fid, f.name, renumber(f.type, ids), f.description))
        return replace(t, fields=tuple(new))
    if t.element is not None:
        return replace(t, element=renumber(t.element, ids))
    if t.key is not None and t.value is not None:
        key = renumber(t.key, ids)
        return replace(t, key=key, value=renumber(t.value, ids))
    return t


data_types = st.recursive(
    _atomic(),
    lambda ch: st.one_of(
        st.builds(ARRAY, ch, st.booleans()),
        st.builds(MULTISET, ch, st.booleans()),
        st.builds(MAP, ch, ch, st.booleans()),
        _rows(ch),
    ),
    max_leaves=6,
).map(renumber)

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- Paimon JSON encoding -------------------------------------------------------------------------

ATOMIC_JSON = [
    (BOOLEAN(), "BOOLEAN"),
    (TINYINT(), "TINYINT"),
    (SMALLINT(), "SMALLINT"),
    (INT(False), "INT NOT NULL"),
    (BIGINT(), "BIGINT"),
    (FLOAT(), "FLOAT"),
    (DOUBLE(False), "DOUBLE NOT NULL"),
    (DATE(), "DATE"),
    (DECIMAL(10, 2), "DECIMAL(10, 2)"),
    (DECIMAL(38, 0, False), "DECIMAL(38, 0) NOT NULL"),
    (CHAR(5), "CHAR(5)"),
    (VARCHAR(10), "VARCHAR(10)"),
    (STRING(), "STRING"),
    (STRING(False), "STRING NOT NULL"),
    (BINARY(5), "BINARY(5)"),
    (VARBINARY(10), "VARBINARY(10)"),
    (BYTES(), "BYTES"),
    (TIME(0), "TIME(0)"),
    (TIME(3, False), "TIME(3) NOT NULL"),
    (TIMESTAMP(6), "TIMESTAMP(6)"),
    (TIMESTAMP(3, False), "TIMESTAMP(3) NOT NULL"),
    (TIMESTAMP_LTZ(6), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    (TIMESTAMP_LTZ(9, False), "TIMESTAMP(9) WITH LOCAL TIME ZONE NOT NULL"),
]


@pytest.mark.parametrize(("t", "text"), ATOMIC_JSON, ids=[x[1] for x in ATOMIC_JSON])
def test_atomic_json_is_paimons_exact_string(t: DataType, text: str) -> None:
    assert type_to_json(t) == text
    assert type_from_json(text) == t


def test_nested_json_objects() -> None:
    t = ROW(
        [
            DataField(5, "a", ARRAY(INT(False), nullable=False), "the a"),
            DataField(6, "m", MAP(STRING(False), MULTISET(BIGINT()))),
        ]
    )
    enc = type_to_json(t)
    assert enc == {
        "type": "ROW",
        "fields": [
            {
                "id": 5,
                "name": "a",
                "type": {"type": "ARRAY NOT NULL", "element": "INT NOT NULL"},
                "description": "the a",
            },
            {
                "id": 6,
                "name": "m",
                "type": {
                    "type": "MAP",
                    "key": "STRING NOT NULL",
                    "value": {"type": "MULTISET", "element": "BIGINT"},
                },
            },
        ],
    }
    assert type_from_json(json.loads(json.dumps(enc))) == t


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TIMESTAMP_LTZ(3)", TIMESTAMP_LTZ(3)),
        ("TIMESTAMP", TIMESTAMP(6)),
        ("TIMESTAMP WITHOUT TIME ZONE", TIMESTAMP(6)),
        ("TIME", TIME(0)),
        ("DECIMAL", DECIMAL(10, 0)),
        ("DECIMAL(7)", DECIMAL(7, 0)),
        ("CHAR", CHAR(1)),
        ("BINARY", BINARY(1)),  # Paimon meaning: BINARY(1); never written by Java
        ("VARCHAR(2147483647)", STRING()),
        ("varchar(10) not null", VARCHAR(10, False)),
        ("INT NULL", INT()),
    ],
)
def test_type_from_json_is_lenient(text: str, expected: DataType) -> None:
    assert type_from_json(text) == expected


def test_nested_fields_without_ids_get_fresh_ones() -> None:
    t = type_from_json(
        {"type": "ROW", "fields": [{"name": "x", "type": "INT"}, {"id": 7, "name": "y", "type": "INT"}]}
    )
    assert [f.id for f in t.fields] == [8, 7]
    f = field_from_json(
        {"id": 1, "name": "r", "type": {"type": "ROW", "fields": [{"name": "x", "type": "INT"}]}}
    )
    assert f.type.fields[0].id == 2
    assert field_to_json(DataField(3, "c", INT())) == {"id": 3, "name": "c", "type": "INT"}


@pytest.mark.parametrize(
    "bad",
    [
        "INT NOT",
        "DECIMAL(40, 2)",
        "DECIMAL(5, 6)",
        "TIMESTAMP(10)",
        "",
        {"type": "VECTOR"},
        {"type": "ARRAY"},
        42,
        {"type": "ROW", "fields": [{"name": 1, "type": "INT"}]},
    ],
)
def test_type_from_json_rejects_garbage(bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        type_from_json(bad)  # type: ignore[arg-type]


@FAST
@given(data_types)
def test_json_round_trip(t: DataType) -> None:
    assert type_from_json(json.loads(json.dumps(type_to_json(t)))) == t


# ---- SQL type text -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("int", INT()),
        ("INTEGER", INT()),
        ("bigint", BIGINT()),
        ("LONG", BIGINT()),
        ("smallint", SMALLINT()),
        ("short", SMALLINT()),
        ("TINYINT", TINYINT()),
        ("byte", TINYINT()),
        ("boolean", BOOLEAN()),
        ("BOOL", BOOLEAN()),
        ("float", FLOAT()),
        ("REAL", FLOAT()),
        ("double", DOUBLE()),
        ("DOUBLE PRECISION", DOUBLE()),
        ("decimal(10,2)", DECIMAL(10, 2)),
        ("NUMERIC(5, 1)", DECIMAL(5, 1)),
        ("dec", DECIMAL(10, 0)),
        ("char(3)", CHAR(3)),
        ("varchar(20)", VARCHAR(20)),
        ("string", STRING()),
        ("binary(4)", BINARY(4)),
        ("binary", BYTES()),
        ("varbinary(9)", VARBINARY(9)),
        ("bytes", BYTES()),
        ("date", DATE()),
        ("time(3)", TIME(3)),
        ("time", TIME(0)),
        ("timestamp(3)", TIMESTAMP(3)),
        ("timestamp", TIMESTAMP(6)),
        ("TIMESTAMP_NTZ", TIMESTAMP(6)),
        ("timestamp_ltz(3)", TIMESTAMP_LTZ(3)),
        ("timestamp_ltz", TIMESTAMP_LTZ(6)),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", TIMESTAMP_LTZ(3)),
        ("int not null", INT(False)),
        ("ARRAY<INT>", ARRAY(INT())),
        ("array<int not null> not null", ARRAY(INT(False), False)),
        ("MAP<STRING,INT>", MAP(STRING(), INT())),
        ("map<string, array<bigint>>", MAP(STRING(), ARRAY(BIGINT()))),
        ("MULTISET<STRING>", MULTISET(STRING())),
        ("ROW<a INT, b STRING>", ROW([DataField(0, "a", INT()), DataField(1, "b", STRING())])),
        (
            "row(a int 'first', b string)",
            ROW([DataField(0, "a", INT(), "first"), DataField(1, "b", STRING())]),
        ),
        (
            "STRUCT<a: INT NOT NULL COMMENT 'it''s', `b c`: ROW<x INT>>",
            ROW(
                [DataField(0, "a", INT(False), "it's"), DataField(1, "b c", ROW([DataField(2, "x", INT())]))]
            ),
        ),
    ],
)
def test_parse_sql_type(text: str, expected: DataType) -> None:
    assert parse_sql_type(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("timestamp", TIMESTAMP_LTZ(6)),
        ("TIMESTAMP(3)", TIMESTAMP_LTZ(3)),
        ("ARRAY<TIMESTAMP>", ARRAY(TIMESTAMP_LTZ(6))),
        ("MAP<TIMESTAMP, TIMESTAMP NOT NULL>", MAP(TIMESTAMP_LTZ(6), TIMESTAMP_LTZ(6, False))),
        ("STRUCT<at: TIMESTAMP>", ROW([DataField(0, "at", TIMESTAMP_LTZ(6))])),
        # the kinds named by name, or by Paimon's zone clause, are the same under either meaning
        ("TIMESTAMP_NTZ", TIMESTAMP(6)),
        ("timestamp_ntz(3)", TIMESTAMP(3)),
        ("TIMESTAMP(3) WITHOUT TIME ZONE", TIMESTAMP(3)),
        ("TIMESTAMP_LTZ", TIMESTAMP_LTZ(6)),
        ("TIMESTAMP WITH LOCAL TIME ZONE", TIMESTAMP_LTZ(6)),
    ],
)
def test_a_bare_timestamp_can_mean_the_local_kind(text: str, expected: DataType) -> None:
    """What a Spark session with spark.sql.timestampType=TIMESTAMP_LTZ (its default) means."""
    assert parse_sql_type(text, timestamp_ltz=True) == expected


def test_paimon_type_strings_keep_their_meaning() -> None:
    """Schema files spell the wall-clock kind TIMESTAMP(p): always Paimon's TIMESTAMP there."""
    assert type_from_json("TIMESTAMP(6)") == TIMESTAMP(6)
    assert type_from_json("TIMESTAMP(3) WITH LOCAL TIME ZONE") == TIMESTAMP_LTZ(3)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "integr",
        "INT NOT",
        "ARRAY<INT",
        "MAP<INT>",
        "DECIMAL(1,2)",
        "DECIMAL(39)",
        "CHAR(0)",
        "TIMESTAMP WITH TIME ZONE",
        "TIMESTAMP(12)",
        "STRUCT<>",
        "INT INT",
        "VARCHAR(x)",
    ],
)
def test_parse_sql_type_errors_name_the_text(bad: str) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        parse_sql_type(bad)
    assert repr(bad) in str(e.value)


@pytest.mark.parametrize(
    ("t", "sql"),
    [
        (BIGINT(), "BIGINT"),
        (STRING(), "STRING"),
        (DECIMAL(10, 2), "DECIMAL(10,2)"),
        (ARRAY(INT()), "ARRAY<INT>"),
        (MAP(STRING(), INT()), "MAP<STRING,INT>"),
        (ROW([DataField(0, "a", INT())]), "STRUCT<a: INT>"),
        (TIMESTAMP(6), "TIMESTAMP_NTZ"),
        (TIMESTAMP(3), "TIMESTAMP_NTZ(3)"),
        (TIMESTAMP_LTZ(6), "TIMESTAMP_LTZ"),
        (TIMESTAMP_LTZ(3), "TIMESTAMP_LTZ(3)"),
        (BYTES(), "BINARY"),
        (VARCHAR(5, False), "VARCHAR(5) NOT NULL"),
    ],
)
def test_type_to_sql(t: DataType, sql: str) -> None:
    assert type_to_sql(t) == sql


@FAST
@given(data_types)
def test_sql_text_round_trip(t: DataType) -> None:
    text = type_to_sql(t)  # names each timestamp's kind: the same type whatever a bare TIMESTAMP means
    assert parse_sql_type(text) == t == parse_sql_type(text, timestamp_ltz=True)


# ---- Arrow ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "arrow"),
    [
        (BOOLEAN(), pa.bool_()),
        (TINYINT(), pa.int8()),
        (SMALLINT(), pa.int16()),
        (INT(), pa.int32()),
        (BIGINT(), pa.int64()),
        (FLOAT(), pa.float32()),
        (DOUBLE(), pa.float64()),
        (DECIMAL(20, 3), pa.decimal128(20, 3)),
        (CHAR(3), pa.string()),
        (STRING(), pa.string()),
        (BINARY(2), pa.binary()),
        (BYTES(), pa.binary()),
        (DATE(), pa.date32()),
        (TIME(0), pa.time32("ms")),
        (TIME(3), pa.time32("ms")),
        (TIME(6), pa.time32("ms")),  # Paimon keeps every TIME in milliseconds
        (TIMESTAMP(0), pa.timestamp("ms")),
        (TIMESTAMP(3), pa.timestamp("ms")),
        (TIMESTAMP(6), pa.timestamp("us")),
        (TIMESTAMP(9), pa.timestamp("ns")),
        (TIMESTAMP_LTZ(3), pa.timestamp("ms", tz="UTC")),
        (TIMESTAMP_LTZ(6), pa.timestamp("us", tz="UTC")),
        (ARRAY(INT(False)), pa.list_(pa.field("element", pa.int32(), False))),
        (MAP(STRING(), INT()), pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int32()))),
        (ROW([DataField(1, "x", INT(False))]), pa.struct([pa.field("x", pa.int32(), False)])),
    ],
)
def test_to_arrow_type(t: DataType, arrow: pa.DataType) -> None:
    assert to_arrow_type(t) == arrow


@pytest.mark.parametrize(
    ("arrow", "t"),
    [
        (pa.large_string(), STRING()),
        (pa.large_binary(), BYTES()),
        (pa.timestamp("s"), TIMESTAMP(0)),
        (pa.timestamp("us", tz="Europe/Paris"), TIMESTAMP_LTZ(6)),
        (pa.dictionary(pa.int32(), pa.string()), STRING()),
        (pa.binary(7), BINARY(7)),
        (pa.uint8(), SMALLINT()),
        (pa.uint32(), BIGINT()),
        (pa.date64(), DATE()),
        (pa.float16(), FLOAT()),
        (pa.large_list(pa.int64()), ARRAY(BIGINT())),
        (pa.time64("ns"), TIME(9)),
        (pa.decimal256(20, 2), DECIMAL(20, 2)),
    ],
)
def test_from_arrow_type_aliases(arrow: pa.DataType, t: DataType) -> None:
    assert from_arrow_type(arrow) == t
    assert from_arrow_type(arrow, nullable=False) == t.copy(False)


@pytest.mark.parametrize(
    "arrow", [pa.uint64(), pa.duration("s"), pa.null(), pa.decimal256(50, 2), pa.month_day_nano_interval()]
)
def test_from_arrow_type_unsupported(arrow: pa.DataType) -> None:
    with pytest.raises(InvalidArgumentError):
        from_arrow_type(arrow)


def test_arrow_field_metadata_keeps_ids_and_exact_types() -> None:
    f = DataField(7, "c", CHAR(5, False), "a comment")
    af = to_arrow_field(f)
    assert af.metadata[b"PARQUET:field_id"] == b"7"
    assert json.loads(af.metadata[b"paimon.type"]) == "CHAR(5) NOT NULL"
    assert not af.nullable and af.type == pa.string()
    assert from_arrow_field(af) == f
    # metadata that no longer matches the Arrow type (e.g. after a cast) is ignored
    stale = pa.field("c", pa.int64(), metadata={b"paimon.type": b'"CHAR(5)"'})
    assert from_arrow_field(stale, default_id=3) == DataField(3, "c", BIGINT())


@FAST
@given(data_types, st.booleans())
def test_arrow_round_trip(t: DataType, top_nullable: bool) -> None:
    f = DataField(100, "col", t.copy(top_nullable))
    assert from_arrow_field(to_arrow_field(f)) == f
    # without metadata the mapping is still a fixed point on the Arrow side
    arrow = to_arrow_type(t)
    assert to_arrow_type(from_arrow_type(arrow)) == arrow


@settings(max_examples=25, deadline=None)
@given(st.lists(data_types, min_size=1, max_size=3))
def test_parquet_file_keeps_field_ids_and_types(
    tmp_path_factory: pytest.TempPathFactory, ts: list[DataType]
) -> None:
    fields = [DataField(i * 50, f"c{i}", t) for i, t in enumerate(ts)]
    schema = pa.schema([to_arrow_field(f) for f in fields])
    path = tmp_path_factory.mktemp("pq") / "f.parquet"
    pq.write_table(schema.empty_table(), path)
    back = pq.read_schema(path)
    assert [from_arrow_field(af) for af in back] == fields


def test_parquet_field_ids_are_written_to_the_file(tmp_path) -> None:
    row = ROW([DataField(3, "x", INT()), DataField(4, "y", STRING())])
    fields = [DataField(0, "k", BIGINT(False)), DataField(2, "r", row)]
    path = tmp_path / "ids.parquet"
    # without the stored Arrow schema, ids can only come from the Parquet schema itself
    pq.write_table(pa.schema([to_arrow_field(f) for f in fields]).empty_table(), path, store_schema=False)
    back = pq.read_schema(path)
    assert back.field("k").metadata[b"PARQUET:field_id"] == b"0"
    assert back.field("r").metadata[b"PARQUET:field_id"] == b"2"
    assert [back.field("r").type.field(i).metadata[b"PARQUET:field_id"] for i in range(2)] == [b"3", b"4"]


def test_max_field_id() -> None:
    t = ARRAY(ROW([DataField(3, "a", MAP(INT(), ROW([DataField(9, "b", INT())])))]))
    assert max_field_id(t) == 9
    assert max_field_id(INT()) == -1


# ---- widening ---------------------------------------------------------------------------------------

WIDEN_OK = [
    (TINYINT(), SMALLINT()),
    (SMALLINT(), BIGINT()),
    (INT(), BIGINT()),
    (INT(), DOUBLE()),
    (SMALLINT(), FLOAT()),
    (INT(), DECIMAL(10, 0)),
    (BIGINT(), DECIMAL(22, 3)),
    (FLOAT(), DOUBLE()),
    (DECIMAL(10, 2), DECIMAL(12, 4)),
    (CHAR(3), VARCHAR(3)),
    (VARCHAR(5), VARCHAR(10)),
    (VARCHAR(5), STRING()),
    (INT(), STRING()),
    (DATE(), STRING()),
    (BINARY(4), BYTES()),
    (VARBINARY(4), VARBINARY(8)),
    (DATE(), TIMESTAMP(3)),
    (TIMESTAMP(3), TIMESTAMP(6)),
    (TIME(0), TIME(3)),
    (TIMESTAMP_LTZ(3), TIMESTAMP_LTZ(9)),
    (INT(False), BIGINT()),
    (INT(False), BIGINT(False)),
    (ARRAY(INT()), ARRAY(BIGINT())),
    (MAP(STRING(), INT()), MAP(STRING(), DOUBLE())),
    (ROW([DataField(1, "a", INT())]), ROW([DataField(0, "a", BIGINT())])),
    (DECIMAL(5, 2), DECIMAL(5, 2)),
]
WIDEN_BAD = [
    (BIGINT(), INT()),
    (BIGINT(), DOUBLE()),
    (INT(), FLOAT()),
    (DOUBLE(), FLOAT()),
    (DECIMAL(10, 2), DECIMAL(10, 3)),
    (DECIMAL(10, 2), DECIMAL(11, 0)),
    (INT(), DECIMAL(9, 0)),
    (VARCHAR(10), VARCHAR(5)),
    (STRING(), VARCHAR(10)),
    (CHAR(3), CHAR(5)),
    (BYTES(), STRING()),
    (VARBINARY(8), VARBINARY(4)),
    (DATE(), TIMESTAMP_LTZ(6)),
    (TIMESTAMP(6), TIMESTAMP(3)),
    (TIMESTAMP(6), TIMESTAMP_LTZ(6)),
    (INT(), BIGINT(False)),
    (STRING(), INT()),
    (ARRAY(INT()), MULTISET(INT())),
    (MAP(INT(), INT()), MAP(BIGINT(), INT())),
    (ROW([DataField(1, "a", INT())]), ROW([DataField(1, "b", INT())])),
    (INT(), ARRAY(INT())),
    (DOUBLE(), BIGINT()),
]


@pytest.mark.parametrize(
    ("src", "dst"), WIDEN_OK, ids=[f"{type_to_sql(a)}->{type_to_sql(b)}" for a, b in WIDEN_OK]
)
def test_widening_allowed(src: DataType, dst: DataType) -> None:
    assert is_widening(src, dst)


@pytest.mark.parametrize(
    ("src", "dst"), WIDEN_BAD, ids=[f"{type_to_sql(a)}->{type_to_sql(b)}" for a, b in WIDEN_BAD]
)
def test_widening_refused(src: DataType, dst: DataType) -> None:
    assert not is_widening(src, dst)


@FAST
@given(data_types)
def test_every_type_widens_to_itself(t: DataType) -> None:
    assert is_widening(t, t)
