"""The merge-schema rules (engine.schema_merge) as pure functions over schemas.

Cases follow Paimon 2.0's ``SchemaMergingUtilsTest`` and the Spark merge-schema tests
(``WriteMergeSchemaTest``, ``DataFrameWriteTestBase``), with Paimon's expected results, plus a
property: a merge keeps every table field (id, name, place), takes every data column, numbers new
fields uniquely, and merging the result again changes nothing.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import SchemaMergeError
from engine.schema import TableSchema
from engine.schema_merge import MergeSchemaFlags, merge_schema
from engine.type_widening import ALWAYS, NON_NEGATIVE, key_bytes_kept
from engine.types import TypeRoot, type_to_sql

MERGE = MergeSchemaFlags(enabled=True)
WIDEN = MergeSchemaFlags(enabled=True, type_widening=True)


def _table(*cols: tuple[str, pa.DataType], **kw) -> TableSchema:
    return TableSchema.create(pa.schema(list(cols)), **kw)


def _sql(schema: TableSchema) -> dict[str, str]:
    return {f.name: type_to_sql(f.type) for f in schema.fields}


def test_new_top_level_columns_are_appended_with_new_ids():
    t = _table(("a", pa.int32()), ("b", pa.string()))
    m = merge_schema(t, pa.schema([("a", pa.int32()), ("b", pa.string()), ("c", pa.int32())]), MERGE)
    assert m.id == t.id + 1
    assert [(f.id, f.name) for f in m.fields] == [(0, "a"), (1, "b"), (2, "c")]
    assert m.highest_field_id == 2
    assert m.options == t.options and m.partition_keys == t.partition_keys


def test_missing_and_new_columns_together():
    # WriteMergeSchemaTest "dataframe write": data (d, b, c) into (a, b, c) adds d at the end.
    t = _table(("a", pa.int32()), ("b", pa.string()), ("c", pa.int32()))
    m = merge_schema(t, pa.schema([("d", pa.string()), ("b", pa.string()), ("c", pa.int32())]), MERGE)
    assert list(_sql(m)) == ["a", "b", "c", "d"]


def test_unchanged_data_returns_the_same_schema_object():
    t = _table(("id", pa.int32()), ("name", pa.string()))
    assert merge_schema(t, pa.schema([("name", pa.string())]), MERGE) is t
    # Only case differs (WriteMergeSchemaTest "only case differs, no schema change").
    assert merge_schema(t, pa.schema([("ID", pa.int32()), ("NAME", pa.string())]), MERGE) is t
    # Only nullability differs: the table's is kept, as Paimon.
    nn = pa.schema([pa.field("id", pa.int32(), nullable=False)])
    assert merge_schema(t, nn, MERGE) is t


def test_nested_struct_field_added_at_the_end_of_its_struct():
    t = _table(("id", pa.int32()), ("info", pa.struct([("key1", pa.struct([("key2", pa.string()),
                                                                            ("key3", pa.string())]))])))
    data = pa.schema([("id", pa.int32()), ("info", pa.struct([("key1", pa.struct([
        ("key2", pa.string()), ("key4", pa.string()), ("key3", pa.string())]))]))])
    m = merge_schema(t, data, MERGE)
    key1 = m.field("info").type.fields[0]
    assert [f.name for f in key1.type.fields] == ["key2", "key3", "key4"]
    assert key1.type.fields[2].id == t.highest_field_id + 1  # ids of existing fields are kept
    assert [f.id for f in key1.type.fields[:2]] == [f.id for f in t.field("info").type.fields[0].type.fields]


def test_new_fields_inside_arrays_and_map_values():
    t = _table(("items", pa.list_(pa.struct([("f1", pa.int32())]))),
               ("m", pa.map_(pa.string(), pa.struct([("v", pa.string())]))))
    data = pa.schema([("items", pa.list_(pa.struct([("f1", pa.int32()), ("f2", pa.string())]))),
                      ("m", pa.map_(pa.string(), pa.struct([("v", pa.string()), ("w", pa.int64())])))])
    m = merge_schema(t, data, MERGE)
    assert _sql(m) == {"items": "ARRAY<STRUCT<f1: INT, f2: STRING>>",
                       "m": "MAP<STRING NOT NULL,STRUCT<v: STRING, w: BIGINT>>"}


def test_case_insensitive_nested_match_adds_only_the_new_field():
    # WriteMergeSchemaTest "nested struct case mismatch with new sub-field".
    t = _table(("id", pa.int32()), ("info", pa.struct([("key1", pa.string()), ("key2", pa.string())])))
    data = pa.schema([("id", pa.int32()),
                      ("info", pa.struct([("KEY1", pa.string()), ("KEY2", pa.string()),
                                          ("key3", pa.string())]))])
    m = merge_schema(t, data, MERGE)
    assert [f.name for f in m.field("info").type.fields] == ["key1", "key2", "key3"]


def test_case_sensitive_twin_column_is_refused():
    # Paimon (caseSensitive=true) adds ID next to id; dyntable's names are unique ignoring case.
    t = _table(("id", pa.int32()), ("name", pa.string()))
    flags = MergeSchemaFlags(enabled=True, case_sensitive=True)
    with pytest.raises(SchemaMergeError, match="only by case"):
        merge_schema(t, pa.schema([("ID", pa.int32()), ("extra", pa.int32())]), flags)


def test_without_type_widening_the_table_type_is_kept():
    # WriteMergeSchemaTest "INT to BIGINT keeps target type"; also ARRAY<INT> vs ARRAY<BIGINT>.
    t = _table(("id", pa.int32()), ("value", pa.int32()), ("ports", pa.list_(pa.int32())))
    data = pa.schema([("id", pa.int32()), ("value", pa.int64()), ("ports", pa.list_(pa.int64()))])
    assert merge_schema(t, data, MERGE) is t
    # Even a type that does not convert: the write's cast decides (string vs bigint conflict case).
    kept = merge_schema(_table(("v", pa.int64())), pa.schema([("v", pa.string())]), MERGE)
    assert kept.field("v").type.root is TypeRoot.BIGINT


def test_type_widening_widens_leaves_and_nested_leaves():
    t = _table(("a", pa.int32()), ("c", pa.int64()),
               ("info", pa.struct([("f1", pa.int32()), ("f2", pa.string())])))
    data = pa.schema([("a", pa.int64()), ("c", pa.decimal128(38, 0)),
                      ("info", pa.struct([("f1", pa.int64()), ("f3", pa.string()), ("f2", pa.string())]))])
    m = merge_schema(t, data, WIDEN)
    assert _sql(m) == {"a": "BIGINT", "c": "DECIMAL(38,0)",
                       "info": "STRUCT<f1: BIGINT, f2: STRING, f3: STRING>"}


def test_decimal_precision_grows_with_the_same_scale():
    # DataFrameWriteTestBase case 3: DECIMAL(20,18) data into a DECIMAL(38,18) column keeps 38.
    t = _table(("c", pa.decimal128(20, 18)))
    m = merge_schema(t, pa.schema([("c", pa.decimal128(38, 18))]), WIDEN)
    assert _sql(m) == {"c": "DECIMAL(38,18)"}
    assert merge_schema(m, pa.schema([("c", pa.decimal128(20, 18))]), WIDEN) is m


def test_decimal_scales_that_differ_are_refused():
    with pytest.raises(SchemaMergeError, match="different scales"):
        merge_schema(_table(("c", pa.decimal128(10, 2))), pa.schema([("c", pa.decimal128(10, 3))]), WIDEN)


EXPLICIT = MergeSchemaFlags(True, True, True)


@pytest.mark.parametrize(("table_type", "data_type", "widened"), [
    (pa.int64(), pa.int32(), "INT"),          # narrowing: an explicit cast in Paimon
    (pa.string(), pa.date32(), "DATE"),       # STRING -> DATE (PaimonSinkTest "enable schema evolution")
    (pa.float64(), pa.int32(), "INT"),        # DOUBLE -> INT
    (pa.timestamp("us"), pa.timestamp("ms"), "TIMESTAMP_NTZ(3)"),  # a lower precision
])
def test_explicit_casts_need_explicit_cast(table_type, data_type, widened):
    # Paimon's SchemaMergingUtils: refused with type-widening alone, taken with explicit-cast
    # (whether the stored rows convert is engine.write.type_changes' check).
    t = _table(("v", table_type))
    with pytest.raises(SchemaMergeError, match="cannot widen 'v'.*explicit-cast' is off"):
        merge_schema(t, pa.schema([("v", data_type)]), WIDEN)
    assert _sql(merge_schema(t, pa.schema([("v", data_type)]), EXPLICIT)) == {"v": widened}


@pytest.mark.parametrize(("table_type", "data_type"), [
    (pa.timestamp("us"), pa.int64()),            # an instant as a number: epoch seconds in Paimon
    (pa.int64(), pa.timestamp("us")),            # and back
    (pa.string(), pa.timestamp("us", tz="UTC")),  # text to TIMESTAMP_LTZ: the reader's time zone
    (pa.timestamp("us"), pa.timestamp("us", tz="UTC")),
    (pa.struct([("f", pa.int32())]), pa.string()),  # nested values as text
])
def test_explicit_casts_whose_value_differs_between_readers_are_refused(table_type, data_type):
    t = _table(("v", table_type))
    with pytest.raises(SchemaMergeError, match="cannot (widen|merge) 'v'"):
        merge_schema(t, pa.schema([("v", data_type)]), EXPLICIT)


def test_nested_and_atomic_types_do_not_merge_when_widening():
    t = _table(("payload", pa.int32()))
    with pytest.raises(SchemaMergeError, match="different kinds"):
        merge_schema(t, pa.schema([("payload", pa.struct([("value", pa.int32())]))]), WIDEN)


def test_key_columns_widen_only_where_stored_keys_keep_their_bytes():
    # Paimon widens a primary key (PaimonSinkTest "enable schema evolution": INT -> BIGINT); its
    # partition columns and keys whose stored bytes would change are refused here.
    t = _table(("k", pa.int32()), ("s", pa.string()), ("pt", pa.int32()), ("v", pa.int32()),
               primary_keys=["k", "s", "pt"], partition_keys=["pt"], options={"bucket": "2"})
    assert _sql(merge_schema(t, pa.schema([("k", pa.int64())]), WIDEN))["k"] == "BIGINT NOT NULL"
    with pytest.raises(SchemaMergeError, match="partition column 'pt'"):
        merge_schema(t, pa.schema([("pt", pa.int64())]), WIDEN)
    for data in (pa.schema([("k", pa.float64())]), pa.schema([("s", pa.date32())])):
        with pytest.raises(SchemaMergeError, match="key column '[ks]'.*buckets and key ranges"):
            merge_schema(t, data, MergeSchemaFlags(True, True, True))
    assert _sql(merge_schema(t, pa.schema([("v", pa.int64())]), WIDEN))["v"] == "BIGINT"
    b = _table(("k", pa.int32()), ("v", pa.int32()), options={"bucket": "2", "bucket-key": "k"})
    with pytest.raises(SchemaMergeError, match="key column 'k'"):
        merge_schema(b, pa.schema([("k", pa.float64())]), WIDEN)


@pytest.mark.parametrize(("src", "dst", "kept"), [
    ("INT", "BIGINT", NON_NEGATIVE), ("TINYINT", "INT", NON_NEGATIVE), ("VARCHAR(3)", "STRING", ALWAYS),
    ("DECIMAL(10,2)", "DECIMAL(18,2)", ALWAYS), ("DECIMAL(10,2)", "DECIMAL(20,2)", None),
    ("TIMESTAMP(3)", "TIMESTAMP(6)", None), ("TIMESTAMP(6)", "TIMESTAMP(9)", ALWAYS),
    ("INT", "DOUBLE", None), ("DATE", "TIMESTAMP(3)", None), ("INT", "INT", ALWAYS),
])
def test_which_widenings_keep_a_keys_bytes(src, dst, kept):
    from engine.meta.binary_row import serialize_row
    from engine.types import parse_sql_type

    s, d = parse_sql_type(src), parse_sql_type(dst)
    assert key_bytes_kept(s, d) == kept
    if kept == NON_NEGATIVE:  # the claim itself, on Paimon's BinaryRow bytes
        assert serialize_row([7], [s]) == serialize_row([7], [d])
        assert serialize_row([-7], [s]) != serialize_row([-7], [d])


def test_flags_follow_the_options_chain():
    from engine.options import CoreOptions

    on = CoreOptions({"write.merge-schema.type-widening": "true", "write.merge-schema.explicit-cast": "true"})
    assert MergeSchemaFlags.from_options(on) == MergeSchemaFlags()  # each needs the one before
    all_on = CoreOptions({"write.merge-schema": "true", "write.merge-schema.type-widening": "true",
                          "write.merge-schema.explicit-cast": "true"})
    flags = MergeSchemaFlags.from_options(all_on, case_sensitive=True)
    assert flags == MergeSchemaFlags(True, True, True, True)


# ---- a property ----------------------------------------------------------------------------------

_LEAVES = [pa.int32(), pa.int64(), pa.string(), pa.float64(), pa.bool_()]
_names = st.sampled_from(["a", "b", "c", "d", "e", "f"])


def _types(depth: int) -> st.SearchStrategy[pa.DataType]:
    leaf = st.sampled_from(_LEAVES)
    if depth == 0:
        return leaf
    sub = _types(depth - 1)
    struct = st.lists(st.tuples(_names, sub), min_size=1, max_size=3, unique_by=lambda x: x[0]).map(pa.struct)
    return st.one_of(leaf, struct, struct.map(pa.list_))


_schemas = st.lists(st.tuples(_names, _types(2)), min_size=1, max_size=4,
                    unique_by=lambda x: x[0]).map(pa.schema)


def _flip_case(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name.upper(), f.type) for f in schema])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=_schemas, data=_schemas, upper=st.booleans())
def test_merge_keeps_the_table_takes_the_data_and_is_idempotent(table, data, upper):
    t = TableSchema.create(table)
    d = _flip_case(data) if upper else data
    m = merge_schema(t, d, MERGE)
    # every table column keeps its id, name and place
    assert [(f.id, f.name) for f in m.fields[: len(t.fields)]] == [(f.id, f.name) for f in t.fields]
    # every data column is a column now (ignoring case)
    assert {n.lower() for n in d.names} <= {f.name.lower() for f in m.fields}
    # ids are unique and below highest_field_id
    ids = []
    stack = list(m.fields)
    while stack:
        f = stack.pop()
        ids.append(f.id)
        ty = f.type
        while ty.element is not None:
            ty = ty.element
        stack.extend(ty.fields)
    assert len(ids) == len(set(ids)) and max(ids) <= m.highest_field_id
    assert (m is t) == (m.fields == t.fields)
    # merging the same data again changes nothing
    assert merge_schema(m, d, MERGE) is m
