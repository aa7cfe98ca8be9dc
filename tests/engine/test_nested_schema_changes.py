"""ALTER TABLE changes to nested fields (engine.schema_nested) and reading files written before them
(engine.files.evolve), through the public engine API (no Spark).

The data cases are Paimon's SparkSchemaEvolutionITCase (release 2.0) nested-column tests, with
their expected rows, written through the engine instead of Spark SQL.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import InvalidArgumentError, NoSuchColumnError
from engine.files.evolve import conform_column
from engine.schema import TableSchema
from engine.schema_changes import (
    AddColumn,
    DropColumn,
    MoveColumn,
    RenameColumn,
    UpdateColumnComment,
    UpdateColumnType,
)
from engine.types import BIGINT, INT, STRING, DataField, parse_sql_type

NESTED = "STRUCT<f1: INT, f2: STRUCT<f1: STRING, f2: INT>>"


def base() -> TableSchema:
    # ids: k 0, v 1, v.f1 2, v.f2 3, v.f2.f1 4, v.f2.f2 5
    return TableSchema.create([("k", "INT NOT NULL"), ("v", NESTED)], primary_keys=["k"])


def ids(t) -> list[tuple[int, str]]:
    return [(f.id, f.name) for f in t.fields]


# ---- schema rules ------------------------------------------------------------------------------


def test_a_new_nested_field_takes_the_next_id_of_the_whole_table():
    s = base().apply_changes([AddColumn(("v", "f3"), STRING()), AddColumn(("v", "f2", "f3"), BIGINT())])
    v = s.field("v").type
    assert ids(v) == [(2, "f1"), (3, "f2"), (6, "f3")]
    assert ids(v.fields[1].type) == [(4, "f1"), (5, "f2"), (7, "f3")]
    assert s.highest_field_id == 7
    # a ROW added inside: the field first, its own fields after it
    s = s.apply_changes([AddColumn(("v", "r"), parse_sql_type("STRUCT<a: INT, b: INT>"))])
    r = s.field("v").type.fields[-1]
    assert (r.id, ids(r.type)) == (8, [(9, "a"), (10, "b")]) and s.highest_field_id == 10


def test_dropping_lowers_no_id_and_a_readded_field_gets_a_new_one():
    s = base().apply_changes([DropColumn(("v", "f2", "f1"))])
    assert ids(s.field("v").type.fields[1].type) == [(5, "f2")]
    s = s.apply_changes(
        [AddColumn(("v", "f2", "f1"), parse_sql_type("DECIMAL(5, 2)"), position=("after", "f2"))]
    )
    assert ids(s.field("v").type.fields[1].type) == [(5, "f2"), (6, "f1")]


def test_positions_rename_comment_and_type_of_nested_fields():
    s = base().apply_changes(
        [
            AddColumn(("v", "f0"), INT(), "first one", "first"),
            RenameColumn(("v", "f2", "f1"), "f100"),
            UpdateColumnComment(("v", "f1"), "the f1"),
            UpdateColumnType(("v", "f2", "f2"), BIGINT()),
            MoveColumn(("v", "f2"), ("before", "f1")),
        ]
    )
    v = s.field("v").type
    assert ids(v) == [(6, "f0"), (3, "f2"), (2, "f1")]
    assert v.fields[0].description == "first one" and v.fields[2].description == "the f1"
    assert ids(v.fields[1].type) == [(4, "f100"), (5, "f2")]
    assert v.fields[1].type.fields[1].type == BIGINT()


def test_paths_through_arrays_and_maps():
    s = TableSchema.create(
        [
            ("k", "INT"),
            ("a", "ARRAY<STRUCT<f1: STRING, f2: INT>>"),
            ("m", "MAP<INT, STRUCT<f1: STRING, f2: INT>>"),
            ("n", "ARRAY<INT>"),
        ]
    )
    s = s.apply_changes(
        [
            AddColumn(("a", "element", "f3"), STRING(), position=("after", "f2")),
            DropColumn(("a", "element", "f1")),
            RenameColumn(("m", "value", "f1"), "f100"),
            UpdateColumnType(("m", "value", "f2"), BIGINT()),
            UpdateColumnType(("n", "element"), BIGINT()),  # an array's element itself
        ]
    )
    # ids: k 0, a 1, a.element.f1 2, .f2 3, m 4, m.value.f1 5, .f2 6, n 7
    assert ids(s.field("a").type.element) == [(3, "f2"), (8, "f3")]
    assert ids(s.field("m").type.value) == [(5, "f100"), (6, "f2")]
    assert s.field("m").type.value.fields[1].type == BIGINT()
    assert s.field("n").type.element == BIGINT()


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (AddColumn(("v", "f1"), INT()), InvalidArgumentError, "field 'v.f1' already exists"),
        (AddColumn(("v", "F1"), INT()), InvalidArgumentError, "already exists"),
        (AddColumn(("v", "x"), INT(False)), InvalidArgumentError, "NOT NULL"),
        (AddColumn(("v", "nope", "x"), INT()), NoSuchColumnError, "'v.nope' does not exist"),
        (
            AddColumn(("k", "x"), INT()),
            InvalidArgumentError,
            "'k' has type INT NOT NULL: it has no field 'x'",
        ),
        (AddColumn(("v", "f1", "x"), INT()), InvalidArgumentError, "'v.f1' has type INT: it has no field"),
        (DropColumn(("v", "f1", "x")), InvalidArgumentError, "it has no field"),
        (UpdateColumnType(("v", "f1", "x"), INT()), InvalidArgumentError, "has no nested field 'x'"),
        (AddColumn(("v", "x"), INT(), position=("after", "nope")), NoSuchColumnError, "v.nope"),
        (DropColumn(("v", "nope")), NoSuchColumnError, "v.nope"),
        (RenameColumn(("v", "f1"), "f2"), InvalidArgumentError, "'v.f2' already exists"),
        (UpdateColumnType(("v", "f2", "f2"), STRING(False).copy(True)), None, None),
        (UpdateColumnType(("v", "f2", "f1"), INT()), InvalidArgumentError, "cannot change column 'v.f2.f1'"),
        (MoveColumn(("v", "f1"), "first"), InvalidArgumentError, "Cannot move itself"),
    ],
)
def test_nested_changes_are_checked(change, error, match):
    if error is None:
        base().apply_changes([change])  # allowed (INT -> STRING)
        return
    with pytest.raises(error, match=match):
        base().apply_changes([change])


def test_the_last_field_of_a_row_cannot_be_dropped():
    s = TableSchema.create([("k", "INT"), ("v", "STRUCT<only: INT>")])
    with pytest.raises(InvalidArgumentError, match="last field of 'v'"):
        s.apply_changes([DropColumn(("v", "only"))])


def test_array_and_map_steps_are_named_element_and_value():
    s = TableSchema.create([("a", "ARRAY<STRUCT<f: INT>>"), ("m", "MAP<STRING, STRUCT<f: INT>>")])
    with pytest.raises(InvalidArgumentError, match="the fields of its element are 'a.element.<field>'"):
        s.apply_changes([DropColumn(("a", "f"))])
    with pytest.raises(InvalidArgumentError, match="name its element as 'a.element', not 'x'"):
        s.apply_changes([DropColumn(("a", "x", "f"))])
    with pytest.raises(InvalidArgumentError, match="key of map 'm' cannot be changed"):
        s.apply_changes([UpdateColumnType(("m", "key"), STRING())])
    with pytest.raises(InvalidArgumentError, match="name its value as 'm.value'"):
        s.apply_changes([DropColumn(("m", "x", "f"))])


def test_a_nested_change_keeps_the_schema_file_round_trip():
    s = base().apply_changes([AddColumn(("v", "f3"), STRING()), RenameColumn(("v", "f1"), "f10")])
    assert TableSchema.from_json(s.to_json()) == s


# ---- conforming arrays by id ---------------------------------------------------------------------


def test_conform_matches_nested_fields_by_id_in_sliced_arrays_with_nulls():
    old = base().field("v").type
    new = (
        base()
        .apply_changes(
            [
                DropColumn(("v", "f1")),
                AddColumn(("v", "f1"), STRING()),
                RenameColumn(("v", "f2", "f1"), "name"),
                UpdateColumnType(("v", "f2", "f2"), BIGINT()),
            ]
        )
        .field("v")
        .type
    )
    from engine.arrow_types import to_arrow_type

    arr = pa.array(
        [
            {"f1": 1, "f2": {"f1": "a", "f2": 10}},
            None,
            {"f1": 3, "f2": None},
            {"f1": 4, "f2": {"f1": "d", "f2": 40}},
        ],
        to_arrow_type(old),
    )
    out = conform_column(arr.slice(1), old, new)
    assert out.type == to_arrow_type(new)
    # the re-added f1 is a new field: the old INT values do not come back under its name
    assert out.to_pylist() == [
        None,
        {"f2": None, "f1": None},
        {"f2": {"name": "d", "f2": 40}, "f1": None},
    ]


def test_time_files_written_in_microseconds_read_at_milliseconds():
    # dyntable once wrote TIME(4..9) as Parquet TIME_MICROS; Paimon (and now dyntable) keeps every
    # TIME in milliseconds, so such files read at the column's storage precision.
    old = pa.array([1_500, None, 86_399_999_999], pa.time64("us"))
    t6 = parse_sql_type("TIME(6)")
    got = conform_column(old, t6, t6)
    assert got.type == pa.time32("ms")
    assert got.cast(pa.int32()).to_pylist() == [1, None, 86_399_999]


def test_conform_inside_lists_and_maps():
    s0 = TableSchema.create(
        [("a", "ARRAY<STRUCT<f1: STRING, f2: INT>>"), ("m", "MAP<INT, STRUCT<f1: STRING>>")]
    )
    s1 = s0.apply_changes(
        [
            AddColumn(("a", "element", "f3"), STRING()),
            DropColumn(("a", "element", "f1")),
            RenameColumn(("m", "value", "f1"), "g"),
        ]
    )
    from engine.arrow_types import to_arrow_type

    a0, a1 = s0.field("a").type, s1.field("a").type
    arr = pa.array(
        [[{"f1": "x", "f2": 1}], None, [{"f1": "y", "f2": 2}, {"f1": "z", "f2": 3}]], to_arrow_type(a0)
    )
    out = conform_column(pa.chunked_array([arr.slice(1)]), a0, a1)
    assert out.to_pylist() == [None, [{"f2": 2, "f3": None}, {"f2": 3, "f3": None}]]
    m0, m1 = s0.field("m").type, s1.field("m").type
    marr = pa.array([[(1, {"f1": "p"})], None, [(2, {"f1": "q"})]], to_arrow_type(m0))
    assert conform_column(marr, m0, m1).to_pylist() == [[(1, {"g": "p"})], None, [(2, {"g": "q"})]]


# ---- reading files written before the change (SparkSchemaEvolutionITCase, Paimon 2.0) --------------


def _write(t, rows: list[tuple]) -> None:
    names = t.schema.field_names
    t.write_arrow(
        pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows], schema=t.arrow_schema)
    )


def _rows(t) -> list[tuple]:
    out = t.to_arrow()
    return sorted(tuple(r.values()) for r in out.to_pylist())


def test_add_and_drop_nested_column(catalog):
    t = catalog.create_table(
        "db.t", [("k", "INT NOT NULL"), ("v", NESTED)], primary_keys=["k"], options={"bucket": "1"}
    )
    _write(
        t,
        [
            (1, {"f1": 10, "f2": {"f1": "apple", "f2": 100}}),
            (2, {"f1": 20, "f2": {"f1": "banana", "f2": 200}}),
        ],
    )
    t = catalog.alter_table("db.t", [AddColumn(("v", "f3"), STRING())])
    t = catalog.alter_table("db.t", [AddColumn(("v", "f2", "f3"), BIGINT())])
    _write(
        t,
        [
            (1, {"f1": 11, "f2": {"f1": "APPLE", "f2": 101, "f3": 1001}, "f3": "one"}),
            (3, {"f1": 31, "f2": {"f1": "CHERRY", "f2": 301, "f3": 3001}, "f3": "three"}),
        ],
    )
    assert _rows(t) == [
        (1, {"f1": 11, "f2": {"f1": "APPLE", "f2": 101, "f3": 1001}, "f3": "one"}),
        (2, {"f1": 20, "f2": {"f1": "banana", "f2": 200, "f3": None}, "f3": None}),
        (3, {"f1": 31, "f2": {"f1": "CHERRY", "f2": 301, "f3": 3001}, "f3": "three"}),
    ]
    t = catalog.alter_table("db.t", [DropColumn(("v", "f2", "f1"))])
    _write(
        t,
        [
            (1, {"f1": 12, "f2": {"f2": 102, "f3": 1002}, "f3": "one"}),
            (4, {"f1": 42, "f2": {"f2": 402, "f3": 4002}, "f3": "four"}),
        ],
    )
    t = catalog.alter_table(
        "db.t", [AddColumn(("v", "f2", "f1"), parse_sql_type("DECIMAL(5, 2)"), position=("after", "f2"))]
    )
    import decimal

    _write(
        t,
        [
            (1, {"f1": 13, "f2": {"f2": 103, "f1": decimal.Decimal("100.03"), "f3": 1003}, "f3": "one"}),
            (5, {"f1": 53, "f2": {"f2": 503, "f1": decimal.Decimal("500.03"), "f3": 5003}, "f3": "five"}),
        ],
    )
    got = [(k, v["f1"], (v["f2"]["f2"], v["f2"]["f1"], v["f2"]["f3"]), v["f3"]) for k, v in _rows(t)]
    assert got == [
        (1, 13, (103, decimal.Decimal("100.03"), 1003), "one"),
        (2, 20, (200, None, None), None),
        (3, 31, (301, None, 3001), "three"),
        (4, 42, (402, None, 4002), "four"),
        (5, 53, (503, decimal.Decimal("500.03"), 5003), "five"),
    ]


def test_rename_and_retype_nested_columns_in_arrays_and_maps(catalog):
    t = catalog.create_table(
        "db.t",
        [
            ("k", "INT NOT NULL"),
            ("a", "ARRAY<STRUCT<f1: STRING, f2: INT>>"),
            ("m", "MAP<INT, STRUCT<f1: STRING, f2: INT>>"),
        ],
        primary_keys=["k"],
        options={"bucket": "1"},
    )
    _write(t, [(1, [{"f1": "apple", "f2": 100}], [(10, {"f1": "cat", "f2": 200})])])
    t = catalog.alter_table(
        "db.t",
        [
            RenameColumn(("a", "element", "f1"), "f100"),
            UpdateColumnType(("a", "element", "f2"), BIGINT()),
            RenameColumn(("m", "value", "f1"), "f100"),
            UpdateColumnType(("m", "value", "f2"), BIGINT()),
        ],
    )
    _write(t, [(3, [{"f100": "FLOWER", "f2": 3000000000000}], [(10, {"f100": "dog", "f2": 3000000000000})])])
    assert _rows(t) == [
        (1, [{"f100": "apple", "f2": 100}], [(10, {"f100": "cat", "f2": 200})]),
        (3, [{"f100": "FLOWER", "f2": 3000000000000}], [(10, {"f100": "dog", "f2": 3000000000000})]),
    ]
    # a second change on top: both files are read through two schema versions by id
    t = catalog.alter_table(
        "db.t", [AddColumn(("a", "element", "f3"), STRING()), DropColumn(("a", "element", "f100"))]
    )
    assert [r[1] for r in _rows(t)] == [[{"f2": 100, "f3": None}], [{"f2": 3000000000000, "f3": None}]]


# ---- column defaults (Paimon 1.2+: the field's defaultValue) -------------------------------------


def test_a_null_written_to_a_column_with_a_default_becomes_the_default(catalog):
    from engine.schema_changes import UpdateColumnDefault

    t = catalog.create_table("db.d", [("a", "INT"), ("b", "INT"), ("c", "STRING"), ("d", "DATE")])
    t = catalog.alter_table(
        "db.d",
        [
            UpdateColumnDefault("b", "2"),
            UpdateColumnDefault("c", "'my_value'"),
            UpdateColumnDefault("d", "'2024-01-02'"),
        ],
    )
    assert t.schema.field("c").default_value == "'my_value'"
    t.write_arrow(pa.table({"a": pa.array([1, 2], pa.int32()), "b": pa.array([None, 5], pa.int32())}))
    import datetime as dt

    assert _rows(t) == [(1, 2, "my_value", dt.date(2024, 1, 2)), (2, 5, "my_value", dt.date(2024, 1, 2))]
    t = catalog.alter_table("db.d", [UpdateColumnDefault("b", None)])
    assert t.schema.field("b").default_value is None
    t.write_arrow(pa.table({"a": pa.array([3], pa.int32())}))
    assert (3, None, "my_value", dt.date(2024, 1, 2)) in _rows(t)


@pytest.mark.parametrize(
    ("type_", "text"),
    [("INT", "current_timestamp()"), ("INT", "'x'"), ("DATE", "1 + 1"), ("ARRAY<INT>", "ARRAY(1)")],
)
def test_defaults_that_do_not_cast_are_refused(type_, text):
    from engine.schema_changes import UpdateColumnDefault

    s = TableSchema.create([("a", type_)])
    with pytest.raises(InvalidArgumentError, match="default value"):
        s.apply_changes([UpdateColumnDefault("a", text)])
    with pytest.raises(InvalidArgumentError, match="default value"):
        TableSchema.create([DataField(0, "a", parse_sql_type(type_), None, text)])


def test_nested_fields_take_no_default():
    from engine.schema_changes import UpdateColumnDefault

    with pytest.raises(InvalidArgumentError, match="nested field 'v.f1'"):
        base().apply_changes([UpdateColumnDefault(("v", "f1"), "1")])


def test_setting_or_dropping_a_default_retires_the_older_option():
    from engine.schema_changes import UpdateColumnDefault

    s = TableSchema.create([("a", "INT"), ("b", "INT")], options={"fields.b.default-value": "0"})
    assert "fields.b.default-value" not in s.apply_changes([UpdateColumnDefault("b", "1")]).options
    assert "fields.b.default-value" not in s.apply_changes([UpdateColumnDefault("b", None)]).options
