"""TableSchema: Paimon schema-file serde, creation rules, field ids and evolution."""

from __future__ import annotations

import json
import pickle

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.arrow_types import to_arrow_field
from engine.errors import CorruptMetadataError, InvalidArgumentError, NoSuchColumnError
from engine.schema import TableSchema
from engine.schema_changes import (
    AddColumn,
    DropColumn,
    MoveColumn,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnType,
    UpdateComment,
)
from engine.types import (
    ARRAY,
    BIGINT,
    DECIMAL,
    INT,
    MAP,
    ROW,
    STRING,
    DataField,
    DataType,
    type_from_json,
    type_to_sql,
)
from tests.engine.test_types import data_types

# The hand-made example of the format document (§2.3), byte for byte.
DOC_EXAMPLE = """{
  "version" : 3,
  "id" : 0,
  "fields" : [
    { "id" : 0, "name" : "k",  "type" : "BIGINT NOT NULL" },
    { "id" : 1, "name" : "v",  "type" : "STRING" },
    { "id" : 2, "name" : "dt", "type" : "STRING NOT NULL" },
    { "id" : 3, "name" : "tags", "type" : { "type" : "ARRAY", "element" : "STRING" } }
  ],
  "highestFieldId" : 3,
  "partitionKeys" : [ "dt" ],
  "primaryKeys" : [ "dt", "k" ],
  "options" : { "bucket" : "4", "file.format" : "parquet" },
  "timeMillis" : 1720496663041
}"""


def make(**kw: object) -> TableSchema:
    args: dict = {
        "arrow_or_fields": [("k", BIGINT()), ("v", STRING()), ("dt", STRING())],
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "k"],
        "options": {"bucket": "2"},
        "time_millis": 5,
    }
    args.update(kw)
    return TableSchema.create(**args)  # type: ignore[arg-type]


# ---- serde ----------------------------------------------------------------------------------------


def test_doc_example_round_trip() -> None:
    s = TableSchema.from_json(DOC_EXAMPLE)
    assert s.id == 0 and s.version == 3 and s.highest_field_id == 3 and s.time_millis == 1720496663041
    assert s.field_names == ("k", "v", "dt", "tags")
    assert s.field("k").type == BIGINT(False)
    assert s.field("tags").type == ARRAY(STRING())
    assert s.partition_keys == ("dt",) and s.primary_keys == ("dt", "k")
    assert dict(s.options) == {"bucket": "4", "file.format": "parquet"}
    assert s.comment is None
    assert json.loads(s.to_json()) == json.loads(DOC_EXAMPLE)
    assert TableSchema.from_json(s.to_json()) == s
    assert s.trimmed_primary_keys == ("k",) and s.logical_bucket_keys == ("k",)


def test_to_json_is_laid_out_like_java() -> None:
    s = TableSchema(
        1,
        (DataField(0, "a", INT(False)), DataField(1, "r", ROW([DataField(2, "x", INT())]))),
        2,
        (),
        ("a",),
        {"bucket": "1"},
        comment="hi",
        time_millis=7,
    )
    assert s.to_json() == (
        "{\n"
        '  "version" : 3,\n'
        '  "id" : 1,\n'
        '  "fields" : [ {\n'
        '    "id" : 0,\n'
        '    "name" : "a",\n'
        '    "type" : "INT NOT NULL"\n'
        "  }, {\n"
        '    "id" : 1,\n'
        '    "name" : "r",\n'
        '    "type" : {\n'
        '      "type" : "ROW",\n'
        '      "fields" : [ {\n'
        '        "id" : 2,\n'
        '        "name" : "x",\n'
        '        "type" : "INT"\n'
        "      } ]\n"
        "    }\n"
        "  } ],\n"
        '  "highestFieldId" : 2,\n'
        '  "partitionKeys" : [ ],\n'
        '  "primaryKeys" : [ "a" ],\n'
        '  "options" : {\n'
        '    "bucket" : "1"\n'
        "  },\n"
        '  "comment" : "hi",\n'
        '  "timeMillis" : 7\n'
        "}"
    )


def test_compatibility_rules_on_read() -> None:
    base = {
        "id": 0,
        "fields": [{"id": 0, "name": "a", "type": "INT"}],
        "highestFieldId": 0,
        "partitionKeys": [],
        "primaryKeys": [],
        "options": {},
    }
    v1 = TableSchema.from_json(json.dumps(base))  # no version -> 1
    assert v1.version == 1 and v1.options["bucket"] == "1" and v1.options["file.format"] == "orc"
    assert v1.time_millis == 0
    v2 = TableSchema.from_json(json.dumps({**base, "version": 2}))
    assert v2.options["bucket"] == "-1" and v2.options["file.format"] == "orc"
    v3 = TableSchema.from_json(
        json.dumps({**base, "version": 3, "someFutureKey": [1], "options": {"x": "y"}})
    )
    assert dict(v3.options) == {"x": "y", "bucket": "-1"}  # Java reads a missing bucket as -1
    kept = TableSchema.from_json(
        json.dumps({**base, "version": 1, "options": {"bucket": "3", "file.format": "avro"}})
    )
    assert kept.options["bucket"] == "3" and kept.options["file.format"] == "avro"


def test_nested_ids_missing_in_file_are_assigned_uniquely() -> None:
    doc = {
        "version": 3,
        "id": 0,
        "highestFieldId": 1,
        "partitionKeys": [],
        "primaryKeys": [],
        "options": {},
        "fields": [
            {"id": 0, "name": "a", "type": {"type": "ROW", "fields": [{"name": "x", "type": "INT"}]}},
            {"id": 1, "name": "b", "type": {"type": "ROW", "fields": [{"name": "y", "type": "INT"}]}},
        ],
    }
    s = TableSchema.from_json(json.dumps(doc))
    ids = [s.field("a").type.fields[0].id, s.field("b").type.fields[0].id]
    assert len(set(ids)) == 2 and min(ids) > 1 and s.highest_field_id == max(ids)


def _doc(**overrides: object) -> str:
    doc = {"id": 0, "fields": [], "highestFieldId": 0, "partitionKeys": [], "primaryKeys": [], "options": {}}
    doc.update(overrides)
    return json.dumps({k: v for k, v in doc.items() if v is not None})


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        DOC_EXAMPLE[: len(DOC_EXAMPLE) // 2],
        "[]",
        "null",
        _doc(options=None),  # a required key is missing
        _doc(id="0"),
        _doc(fields={}),
        _doc(partitionKeys=[1]),
        _doc(options={"a": 1}),
        _doc(fields=[{"id": 0, "name": "v", "type": "NO_SUCH_TYPE"}]),  # a type no Paimon has
        _doc(fields=[{"id": 0, "type": "INT"}]),
    ],
)
def test_corrupt_files(text: str) -> None:
    with pytest.raises(CorruptMetadataError):
        TableSchema.from_json(text)


def test_schema_is_frozen_hashable_picklable() -> None:
    s = make()
    assert pickle.loads(pickle.dumps(s)) == s
    assert hash(pickle.loads(pickle.dumps(s))) == hash(s)
    with pytest.raises(TypeError):
        s.options["bucket"] = "3"  # type: ignore[index]
    with pytest.raises(AttributeError):
        s.id = 3  # type: ignore[misc]
    assert {s: 1}[TableSchema.from_json(s.to_json())] == 1


@st.composite
def schemas(draw: st.DrawFn) -> TableSchema:
    types = draw(st.lists(data_types, min_size=1, max_size=4))
    names = draw(
        st.lists(
            st.text("abcdefgh_", min_size=1, max_size=4),
            min_size=len(types),
            max_size=len(types),
            unique_by=str.lower,
        )
    )
    comment = draw(st.none() | st.text(max_size=10))
    return TableSchema.create(
        list(zip(names, types, strict=True)), comment=comment, options={"bucket": "3"}, time_millis=1
    )


@settings(max_examples=60, deadline=None)
@given(schemas())
def test_random_schemas_survive_json(s: TableSchema) -> None:
    assert TableSchema.from_json(s.to_json()) == s


@settings(max_examples=60, deadline=None)
@given(schemas())
def test_random_schemas_survive_arrow(s: TableSchema) -> None:
    again = TableSchema.create(s.arrow_schema(), comment=s.comment, options=dict(s.options), time_millis=1)
    assert again == s


# ---- creation ------------------------------------------------------------------------------------


def test_field_ids_depth_first() -> None:
    s = TableSchema.create([("a", INT()), ("b", "ROW<x INT, y INT>"), ("c", INT())], time_millis=0)
    assert [f.id for f in s.fields] == [0, 1, 4]
    assert [f.id for f in s.field("b").type.fields] == [2, 3]
    assert s.highest_field_id == 4
    row = ROW([DataField(9, "p", INT()), DataField(9, "q", ROW([DataField(9, "r", INT())]))])  # ids ignored
    deep = TableSchema.create([("m", MAP(STRING(), ARRAY(row))), ("z", INT())])
    inner = deep.field("m").type.value.element  # type: ignore[union-attr]
    assert [inner.fields[0].id, inner.fields[1].id, inner.fields[1].type.fields[0].id] == [1, 2, 3]
    assert deep.field("z").id == 4 and deep.highest_field_id == 4


def test_create_defaults_and_pk_not_null() -> None:
    s = make(options=None)
    assert s.id == 0 and s.version == 3 and s.options["bucket"] == "-1"
    assert s.field("k").type == BIGINT(False) and s.field("dt").type == STRING(False)
    assert s.field("v").type.nullable
    loose = make(options={"primary-key.nullable": "true"})
    assert loose.field("k").type.nullable
    assert s.field_by_id(1).name == "v"
    with pytest.raises(NoSuchColumnError):
        s.field("nope")
    with pytest.raises(NoSuchColumnError):
        s.field_by_id(99)
    assert s.field("K").name == "k"  # case-insensitive fallback


def test_create_from_arrow_and_options_keys() -> None:
    arrow = pa.schema([pa.field("id", pa.int64()), pa.field("d", pa.string()), pa.field("x", pa.float64())])
    s = TableSchema.create(arrow, options={"primary-key": "d, id", "partition": "d", "bucket-key": "id"})
    assert s.primary_keys == ("d", "id") and s.partition_keys == ("d",)
    assert "primary-key" not in s.options and "partition" not in s.options
    assert s.logical_bucket_keys == ("id",)
    append = TableSchema.create(arrow)
    assert append.logical_bucket_keys == ("id", "d", "x") and append.trimmed_primary_keys == ()
    assert s.arrow_schema().field("id").metadata[b"PARQUET:field_id"] == b"0"
    assert [f.name for f in s.arrow_schema()] == ["id", "d", "x"]


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        (
            {"arrow_or_fields": [("a", INT()), ("A", INT())], "partition_keys": [], "primary_keys": []},
            "duplicate",
        ),
        ({"arrow_or_fields": []}, "at least one column"),
        ({"partition_keys": ["nope"]}, "nope"),
        ({"primary_keys": ["dt", "nope"]}, "nope"),
        ({"primary_keys": ["dt", "k", "k"]}, "twice"),
        ({"primary_keys": ["k"], "options": {"sequence.field": "v"}}, "cannot be used with cross-partition"),
        ({"primary_keys": ["dt"]}, "equals the partition keys"),
        ({"options": {"row-tracking.enabled": "true"}}, "needs an append table"),
        ({"primary_keys": [], "options": {"row-tracking.enabled": "true", "bucket": "2", "bucket-key": "k"}},
         "needs an append table"),
        ({"arrow_or_fields": [("k", ARRAY(INT())), ("dt", STRING())], "primary_keys": ["dt", "k"]}, "atomic"),
        ({"arrow_or_fields": [("dt", STRING())], "primary_keys": []}, "every column"),
        ({"primary_keys": [], "options": {"merge-engine": "first-row"}}, "needs a primary key"),
        ({"primary_keys": [], "options": {"changelog-producer": "input"}}, "needs a primary key"),
        ({"options": {"bucket-key": "v"}}, "subset of the primary key"),
        ({"options": {"bucket-key": "dt"}}, "partition keys"),
        ({"options": {"data-file.external-paths": "data"}}, "no scheme"),
        ({"options": {"bucket": "many"}}, "bucket"),
        ({"options": {"sequence.field": "zz"}}, "zz"),
        ({"options": {"fields.zz.aggregate-function": "sum"}}, "zz"),
        ({"options": {"primary-key": "k"}}, "not both"),
        ({"options": {"file.format": "lance"}}, "parquet"),
        ({"arrow_or_fields": [("k", "BIGINT"), ("v", "NOT A TYPE"), ("dt", "STRING")]}, "NOT A TYPE"),
        ({"arrow_or_fields": [("k",)]}, "(name, type"),
    ],
)
def test_create_rejects(kw: dict, msg: str) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        make(**kw)
    assert msg in str(e.value)


# ---- evolution ---------------------------------------------------------------------------------------


def test_each_change_kind() -> None:
    s = make(arrow_or_fields=[("k", BIGINT()), ("v", STRING()), ("dt", STRING()), ("r", "ROW<x INT>")])
    assert s.highest_field_id == 4
    s1 = s.apply_changes([AddColumn("n", "INT", "new", ("after", "k"))], time_millis=9)
    assert s1.id == 1 and s1.time_millis == 9 and s1.field_names == ("k", "n", "v", "dt", "r")
    assert s1.field("n") == DataField(5, "n", INT(), "new") and s1.highest_field_id == 5
    s2 = s1.apply_changes([AddColumn("first", "ROW<a INT, b INT>", position="first")])
    assert s2.field_names[0] == "first" and [f.id for f in s2.field("first").type.fields] == [7, 8]
    assert s2.field("first").id == 6 and s2.highest_field_id == 8
    s3 = s2.apply_changes([DropColumn("first"), DropColumn("n")])
    assert s3.field_names == ("k", "v", "dt", "r") and s3.highest_field_id == 8  # never decreases
    s4 = s3.apply_changes([AddColumn("n", INT())])
    assert s4.field("n").id == 9  # dropped ids are never reused
    s5 = s4.apply_changes([RenameColumn("v", "value"), UpdateColumnComment("value", "c"), UpdateComment("t")])
    assert s5.field("value").id == 1 and s5.field("value").description == "c" and s5.comment == "t"
    s6 = s5.apply_changes(
        [UpdateColumnType("n", "BIGINT"), UpdateColumnType("r", "STRUCT<x: DECIMAL(12,0)>")]
    )
    assert s6.field("n").type == BIGINT() and s6.field("n").id == 9
    assert s6.field("r").type.fields == (DataField(4, "x", DECIMAL(12, 0)),)  # old nested id kept
    s7 = s6.apply_changes(
        [SetOption("snapshot.num-retained.min", "3"), RemoveOption("bucket-key"), SetOption("bucket", "2")]
    )
    assert s7.options["snapshot.num-retained.min"] == "3" and s7.options["bucket"] == "2"
    s8 = s7.apply_changes([RemoveOption("snapshot.num-retained.min")])
    assert "snapshot.num-retained.min" not in s8.options and s8.id == 8
    assert TableSchema.from_json(s8.to_json()) == s8


def test_type_change_keeps_nullability_unless_asked() -> None:
    s = TableSchema.create([("a", INT(False)), ("b", INT())])
    assert s.apply_changes([UpdateColumnType("a", BIGINT())]).field("a").type == BIGINT(False)
    assert (
        s.apply_changes([UpdateColumnType("a", BIGINT(), keep_nullability=False)]).field("a").type == BIGINT()
    )
    with pytest.raises(InvalidArgumentError):
        s.apply_changes([UpdateColumnType("b", BIGINT(False), keep_nullability=False)])


def test_rename_follows_into_options() -> None:
    s = TableSchema.create(
        [("k", BIGINT()), ("s", BIGINT()), ("a", INT()), ("b", INT())],
        primary_keys=["k"],
        options={
            "merge-engine": "partial-update",
            "fields.s.sequence-group": "a,b",
            "fields.a.ignore-retract": "true",
        },
    )
    r = s.apply_changes([RenameColumn("a", "a2"), RenameColumn("s", "s2")])
    assert r.options["fields.s2.sequence-group"] == "a2,b" and r.options["fields.a2.ignore-retract"] == "true"
    assert "fields.s.sequence-group" not in r.options
    append = TableSchema.create([("x", INT()), ("y", INT())], options={"bucket-key": "x"})
    assert append.apply_changes([RenameColumn("x", "z")]).options["bucket-key"] == "z"
    same = s.apply_changes([RenameColumn("b", "b")])  # renaming to its own name is not a clash
    assert same.field_names == s.field_names


def test_drop_removes_the_columns_own_options() -> None:
    s = TableSchema.create(
        [("k", BIGINT()), ("v", INT())],
        primary_keys=["k"],
        options={"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    )
    s2 = s.apply_changes([AddColumn("w", INT()), DropColumn("v")])
    assert "fields.v.aggregate-function" not in s2.options


def test_rename_primary_key_column_keys_follow() -> None:
    # Paimon's SchemaManager allows renaming a primary-key column (not a partition column).
    s = make(options={"bucket": "2", "bucket-key": "k", "sequence.field": "v"})
    s2 = s.apply_changes([RenameColumn("k", "id")])
    assert s2.primary_keys == ("dt", "id") and s2.partition_keys == ("dt",)
    assert s2.options["bucket-key"] == "id" and s2.field("id").id == s.field("k").id
    assert s2.trimmed_primary_keys == ("id",)


def test_move_column_first_after_last() -> None:
    # Paimon's SchemaManager.applyMove: FIRST, AFTER (either direction), LAST; ids are kept.
    s = make()
    assert s.apply_changes([MoveColumn("dt", "first")]).field_names == ("dt", "k", "v")
    assert s.apply_changes([MoveColumn("k", ("after", "v"))]).field_names == ("v", "k", "dt")
    assert s.apply_changes([MoveColumn("dt", ("after", "k"))]).field_names == ("k", "dt", "v")
    assert s.apply_changes([MoveColumn("k", "last")]).field_names == ("v", "dt", "k")
    assert [f.id for f in s.apply_changes([MoveColumn("dt", "first")]).fields] == [2, 0, 1]


@pytest.mark.parametrize(
    ("src", "dst", "ok"),
    [
        ("BIGINT", "DOUBLE", True), ("INT", "FLOAT", True), ("DECIMAL(10,2)", "DOUBLE", True),
        ("BIGINT", "FLOAT", True), ("INT", "BIGINT", True), ("FLOAT", "DOUBLE", True),
        ("DOUBLE", "FLOAT", False), ("BIGINT", "INT", False), ("STRING", "INT", False),
        ("DOUBLE", "BIGINT", False), ("INT", "STRING", True),
    ],
)
def test_type_changes_follow_paimons_implicit_casts(src: str, dst: str, ok: bool) -> None:
    s = TableSchema.create([("k", "INT"), ("c", src)], primary_keys=["k"])
    if ok:
        assert type_to_sql(s.apply_changes([UpdateColumnType("c", dst)]).field("c").type) == dst
    else:
        with pytest.raises(InvalidArgumentError):
            s.apply_changes([UpdateColumnType("c", dst)])


@pytest.mark.parametrize(
    ("change", "msg"),
    [
        (AddColumn("v", INT()), "already exists"),
        (AddColumn("V", INT()), "already exists"),
        (AddColumn("x", INT(False)), "NOT NULL"),
        (AddColumn("x", INT(), position="middle"), "position"),
        (DropColumn("k"), "primary-key"),
        (DropColumn("dt"), "partition"),
        (RenameColumn("dt", "d2"), "partition"),
        (MoveColumn("v", ("after", "v")), "itself"),
        (MoveColumn("k", "first"), "Cannot move itself for column k"),  # Paimon's applyMove
        (MoveColumn("dt", "last"), "Cannot move itself for column dt"),
        (UpdateColumnType("k", "INT"), "primary-key"),
        (RenameColumn("v", "K"), "already exists"),
        (UpdateColumnType("k", "DECIMAL(30,0)"), "primary-key"),
        (UpdateColumnType("dt", "STRING"), "partition"),
        (UpdateColumnType("v", "INT"), "widening"),
        (SetOption("merge-engine", "first-row"), "cannot be changed"),
        (SetOption("bucket", "8"), "CLUSTERED INTO"),
        (SetOption("sequence.field", "v"), "cannot be changed"),
        (SetOption("primary-key", "k"), "ADD PRIMARY KEY"),
        (SetOption("bucket", "0"), "invalid"),
        (SetOption("snapshot.num-retained.min", "x"), "snapshot.num-retained.min"),
        (SetOption("record-level.expire-time", "1 d"), "not supported"),
        (SetOption("bucket-key", "k"), "cannot be changed"),
        (RemoveOption("bucket"), "cannot be changed"),
    ],
)
def test_forbidden_changes(change: object, msg: str) -> None:
    s = make()
    with pytest.raises(InvalidArgumentError) as e:
        s.apply_changes([change])  # type: ignore[list-item]
    assert msg in str(e.value)


def test_missing_columns_and_last_column() -> None:
    s = make()
    for change in (
        DropColumn("nope"),
        RenameColumn("nope", "x"),
        UpdateColumnType("nope", INT()),
        UpdateColumnComment("nope", "c"),
        AddColumn("x", INT(), position=("after", "nope")),
    ):
        with pytest.raises(NoSuchColumnError):
            s.apply_changes([change])
    single = TableSchema.create([("only", INT())])
    with pytest.raises(InvalidArgumentError, match="at least one column"):
        single.apply_changes([DropColumn("only")])
    with pytest.raises(InvalidArgumentError):
        single.apply_changes(["not a change"])  # type: ignore[list-item]


def test_immutable_options_change_while_empty_or_when_allowed() -> None:
    s = make()
    assert (
        s.apply_changes([SetOption("merge-engine", "first-row")], has_snapshots=False).options["merge-engine"]
        == "first-row"
    )
    assert s.apply_changes([SetOption("bucket", "8")], allow_immutable={"bucket"}).options["bucket"] == "8"
    assert s.apply_changes([SetOption("bucket", "2")]).options["bucket"] == "2"  # same value: a no-op
    with pytest.raises(InvalidArgumentError):
        s.apply_changes([SetOption("primary-key", "k")], has_snapshots=False)  # keys live in the schema


def test_changes_are_all_or_nothing_and_validated_together() -> None:
    s = make()
    with pytest.raises(InvalidArgumentError):
        s.apply_changes([AddColumn("x", INT()), DropColumn("k")])
    assert s.field_names == ("k", "v", "dt")  # the original is untouched (immutable)
    append = TableSchema.create([("a", INT()), ("b", INT())], options={"fields.b.default-value": "0"})
    assert "fields.b.default-value" not in append.apply_changes([DropColumn("b")]).options


def test_nested_column_type_must_keep_the_same_fields() -> None:
    s = TableSchema.create([("r", "ROW<x INT, y INT>"), ("m", "MAP<STRING, INT>")])
    with pytest.raises(InvalidArgumentError):
        s.apply_changes([UpdateColumnType("r", "ROW<x BIGINT, z INT>")])
    m = s.apply_changes([UpdateColumnType("m", "MAP<STRING, BIGINT>")])
    assert m.field("m").type == MAP(STRING(), BIGINT())


def test_describe_uses_spark_type_text() -> None:
    s = make(arrow_or_fields=[("k", BIGINT()), ("v", "DECIMAL(10,2)"), ("dt", STRING())])
    assert s.describe() == [
        ("k", "BIGINT NOT NULL", None),
        ("v", "DECIMAL(10,2)", None),
        ("dt", "STRING NOT NULL", None),
    ]


def test_arrow_field_metadata_matches_schema() -> None:
    s = make()
    for f in s.fields:
        assert s.arrow_schema().field(f.name) == to_arrow_field(f)
        assert type_from_json(json.loads(s.arrow_schema().field(f.name).metadata[b"paimon.type"])) == f.type


def test_dataclass_holds_plain_types() -> None:
    s = TableSchema(0, [DataField(0, "a", INT())], 0, [], [], {"k": "v"})  # type: ignore[arg-type]
    assert isinstance(s.fields, tuple) and isinstance(s.partition_keys, tuple)
    assert dict(s.options) == {"k": "v"} and s.options == {"k": "v"}
    assert isinstance(s.field("a").type, DataType)


def test_java_default_value_survives_a_schema_change() -> None:
    """Newer Java writers store a column's DEFAULT as ``defaultValue``; rewriting the schema keeps it."""
    from engine.schema_changes import AddColumn

    obj = json.loads(make().to_json())
    obj["fields"][1]["defaultValue"] = "'my_value'"
    s = TableSchema.from_json(json.dumps(obj))
    assert s.field("v").default_value == "'my_value'"
    evolved = s.apply_changes([AddColumn("extra", INT())])
    assert json.loads(evolved.to_json())["fields"][1]["defaultValue"] == "'my_value'"
