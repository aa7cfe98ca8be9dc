"""Writes that evolve the schema (``write.merge-schema``) through ``Table.write_arrow``, end to end.

The cases are Paimon 2.0's Spark tests (``WriteMergeSchemaTest``, ``DataFrameWriteTestBase``)
as an Arrow user writes them, with Paimon's expected rows; then what the commit guarantees: one
new schema version published with the write's snapshot, none when the write fails, and a
concurrent schema change is detected.
"""

from __future__ import annotations

import os
from decimal import Decimal

import pyarrow as pa
import pytest

from engine.errors import CommitConflictError, InvalidArgumentError, SchemaMergeError
from engine.schema_changes import AddColumn


def _rows(table, order: str) -> list[dict]:
    return sorted(table.refresh().to_arrow().to_pylist(), key=lambda r: (r[order] is None, r[order]))


def _metadata_files(table) -> tuple[list[str], list[str]]:
    schema = sorted(n for n in os.listdir(f"{table.path}/schema"))
    snapshot = sorted(n for n in os.listdir(f"{table.path}/snapshot") if n.startswith("snapshot-"))
    return schema, snapshot


@pytest.fixture
def ab(catalog):
    catalog.create_table("db.t", pa.schema([("a", pa.int32()), ("b", pa.string())]))
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["1", "2"]}))
    return t


def test_dataframe_write_new_columns_then_missing_and_new(ab):
    # WriteMergeSchemaTest "dataframe write".
    ab.write_arrow(pa.table({"a": [3], "b": ["3"], "c": [3]}), merge_schema=True)
    assert _rows(ab, "a") == [{"a": 1, "b": "1", "c": None}, {"a": 2, "b": "2", "c": None},
                              {"a": 3, "b": "3", "c": 3}]
    ab.write_arrow(pa.table({"d": ["4"], "b": ["4"], "c": [4]}), merge_schema=True)
    assert ab.refresh().schema.field_names == ("a", "b", "c", "d")
    assert _rows(ab, "a") == [
        {"a": 1, "b": "1", "c": None, "d": None}, {"a": 2, "b": "2", "c": None, "d": None},
        {"a": 3, "b": "3", "c": 3, "d": None}, {"a": None, "b": "4", "c": 4, "d": "4"},
    ]


def test_without_merge_schema_new_columns_fail_and_nothing_changes(ab):
    with pytest.raises(InvalidArgumentError, match=r"\['c'\] are not in the table"):
        ab.write_arrow(pa.table({"a": [3], "b": ["3"], "c": [3]}))
    assert _metadata_files(ab) == (["schema-0"], ["snapshot-1"])


def test_numeric_date_binary_and_complex_new_columns(ab):
    # WriteMergeSchemaTest "numeric types", "date and time types", "binary and boolean", "complex types".
    import datetime as dt

    data = pa.table({
        "a": [3], "b": ["3"],
        "byte_col": pa.array([10], pa.int8()), "short_col": pa.array([1000], pa.int16()),
        "long_col": [10000000000], "float_col": pa.array([1.23], pa.float32()), "double_col": [4.56],
        "decimal_col": pa.array([Decimal("7.89")], pa.decimal128(10, 2)),
        "date_col": [dt.date(2023, 1, 1)],
        "timestamp_col": pa.array([dt.datetime(2023, 1, 1, 12)], pa.timestamp("us")),
        "binary_col": [b"binary_data"], "boolean_col": [True],
        "array_col": [[1, 2, 3]],
        "map_col": pa.array([[("key1", "value1")]], pa.map_(pa.string(), pa.string())),
        "struct_col": [{"x": "x", "y": 1}],
    })
    ab.write_arrow(data, merge_schema=True)
    rows = _rows(ab, "a")
    assert rows[0] == {"a": 1, "b": "1", **{k: None for k in data.column_names[2:]}}
    got = rows[2]
    assert got["byte_col"] == 10 and got["short_col"] == 1000 and got["long_col"] == 10000000000
    assert abs(got["float_col"] - 1.23) < 1e-6 and got["double_col"] == 4.56
    assert got["decimal_col"] == Decimal("7.89")
    assert got["date_col"] == dt.date(2023, 1, 1) and got["timestamp_col"] == dt.datetime(2023, 1, 1, 12)
    assert got["binary_col"] == b"binary_data" and got["boolean_col"] is True
    assert got["array_col"] == [1, 2, 3] and got["map_col"] == [("key1", "value1")]
    assert got["struct_col"] == {"x": "x", "y": 1}


def test_nested_struct_new_field_matched_by_name(catalog):
    # WriteMergeSchemaTest "nested struct with new fields by dataframe".
    inner = pa.struct([("key2", pa.string()), ("key3", pa.string())])
    catalog.create_table("db.t", pa.schema([("id", pa.int32()), ("info", pa.struct([("key1", inner)]))]))
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"id": pa.array([1], pa.int32()),
                            "info": [{"key1": {"key2": "v2a", "key3": "v3a"}}]}))
    t.write_arrow(pa.table({"id": [2], "info": [{"key1": {"key2": "v2b", "key4": "v4b", "key3": "v3b"}}]}),
                  merge_schema=True)
    assert _rows(t, "id") == [
        {"id": 1, "info": {"key1": {"key2": "v2a", "key3": "v3a", "key4": None}}},
        {"id": 2, "info": {"key1": {"key2": "v2b", "key3": "v3b", "key4": "v4b"}}},
    ]


def test_nested_struct_missing_fields_and_top_level_column_together(catalog):
    # WriteMergeSchemaTest "nested struct with missing fields" and "... top-level new column together".
    info = pa.struct([(f, pa.string()) for f in ("f1", "f2", "f3")])
    catalog.create_table("db.t", pa.schema([("id", pa.int32()), ("info", info)]))
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"id": [1], "info": [{"f1": "a", "f2": "b", "f3": "c"}]}))
    t.write_arrow(pa.table({"id": [2], "info": [{"f2": "y", "f3": "z"}]}), merge_schema=True)
    t.write_arrow(pa.table({"id": [3], "info": [{"f1": "x", "f4": "w", "f3": "z"}], "extra": ["top"]}),
                  merge_schema=True)
    t.write_arrow(pa.table({"id": [4], "info": [{"f2": "p", "f3": "q", "f4": "r"}]}), merge_schema=True)
    assert [(r["id"], r["info"], r["extra"]) for r in _rows(t, "id")] == [
        (1, {"f1": "a", "f2": "b", "f3": "c", "f4": None}, None),
        (2, {"f1": None, "f2": "y", "f3": "z", "f4": None}, None),
        (3, {"f1": "x", "f2": None, "f3": "z", "f4": "w"}, "top"),
        (4, {"f1": None, "f2": "p", "f3": "q", "f4": "r"}, None),
    ]


def test_without_merge_schema_nested_extra_and_missing_fields_fail(catalog):
    # Paimon's alignment table: strict byName writes throw on nested source-extra and target-missing fields.
    catalog.create_table("db.t", pa.schema([("id", pa.int32()),
                                            ("info", pa.struct([("f1", pa.string()), ("f2", pa.string())]))]))
    t = catalog.get_table("db.t")
    with pytest.raises(InvalidArgumentError, match=r"'info\.f3' of the data is not in the table"):
        t.write_arrow(pa.table({"id": [1], "info": [{"f1": "a", "f2": "b", "f3": "c"}]}))
    with pytest.raises(InvalidArgumentError, match=r"\['info\.f1'\] of the table are missing"):
        t.write_arrow(pa.table({"id": [1], "info": [{"f2": "b"}]}))
    # Top-level missing columns read as NULL in both modes; nested fields by name in any order.
    t.write_arrow(pa.table({"info": [{"f2": "b", "f1": "a"}]}))
    assert t.to_arrow().to_pylist() == [{"id": None, "info": {"f1": "a", "f2": "b"}}]


def test_array_of_struct_missing_nested_field(catalog):
    # WriteMergeSchemaTest "array of struct missing nested field by dataframe".
    item = pa.struct([("f1", pa.int32()), ("f2", pa.string()), ("f6", pa.int32())])
    catalog.create_table("db.t", pa.schema([("ids", pa.list_(pa.int64())), ("items", pa.list_(item))]))
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"ids": [[1, 2]], "items": [[{"f1": 10, "f2": "v2"}]]}), merge_schema=True)
    assert t.to_arrow().to_pylist() == [{"ids": [1, 2], "items": [{"f1": 10, "f2": "v2", "f6": None}]}]
    assert _metadata_files(t)[0] == ["schema-0"]  # nothing new: no schema version


def test_case_insensitive_columns_and_only_case_differs(ab):
    # WriteMergeSchemaTest "case-insensitive dataframe write" and "repeated writes with alternating case".
    ab.write_arrow(pa.table({"A": [3], "B": ["c"], "extra": [100]}), merge_schema=True)
    ab.write_arrow(pa.table({"a": [4], "B": ["d"]}), merge_schema=True)
    ab.write_arrow(pa.table({"A": [5], "b": ["e"]}), merge_schema=True)
    assert ab.refresh().schema.field_names == ("a", "b", "extra")
    assert _metadata_files(ab)[0] == ["schema-0", "schema-1"]
    assert [(r["a"], r["extra"]) for r in _rows(ab, "a")] == [
        (1, None), (2, None), (3, 100), (4, None), (5, None)]


def test_case_sensitive_twin_is_refused_and_nothing_is_written(ab):
    with pytest.raises(SchemaMergeError, match="only by case"):
        ab.write_arrow(pa.table({"A": [3], "extra": [1]}), merge_schema=True, case_sensitive=True)
    assert _metadata_files(ab) == (["schema-0"], ["snapshot-1"])


def test_values_are_cast_to_the_kept_type(catalog):
    # DataFrameWriteTestBase "merge-schema conflict" cases: without type widening the table keeps
    # its types and the data is cast to them (string '2000' into BIGINT; BIGINT into ARRAY<STRING>).
    catalog.create_table("db.t", pa.schema([("id", pa.string()), ("value", pa.int64()),
                                            ("data", pa.struct([("prts", pa.list_(pa.string()))]))]))
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"id": ["r1"], "value": ["2000"], "data": [{"prts": [10, 20]}]}),
                  merge_schema=True)
    assert t.to_arrow().to_pylist() == [{"id": "r1", "value": 2000, "data": {"prts": ["10", "20"]}}]
    assert t.refresh().schema.id == 0


def test_type_widening_int_to_bigint_nested_and_decimal(catalog):
    # WriteMergeSchemaTest "nested struct with type evolution"; DataFrameWriteTestBase case 2 and 3.
    catalog.create_table("db.t", pa.schema([("id", pa.int32()), ("c", pa.int64()),
                                            ("info", pa.struct([("f1", pa.int32()), ("f2", pa.string())]))]))
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"id": [1], "c": [123], "info": [{"f1": 10, "f2": "a"}]}))
    wide = {"write.merge-schema.type-widening": "true"}
    t.with_options(wide).write_arrow(pa.table({
        "id": [2], "c": pa.array([Decimal(234)], pa.decimal128(38, 18)),
        "info": [{"f1": 20, "f3": "new", "f2": "b"}],
    }), merge_schema=True)
    evolved = t.refresh()
    assert [str(evolved.arrow_schema.field(n).type) for n in ("c", "info")] == [
        "decimal128(38, 18)", "struct<f1: int64, f2: string, f3: string>"]
    assert "write.merge-schema.type-widening" not in evolved.options  # dynamic options are not stored
    rows = _rows(evolved, "id")
    assert [(r["c"], r["info"]) for r in rows] == [
        (Decimal(123), {"f1": 10, "f2": "a", "f3": None}), (Decimal(234), {"f1": 20, "f2": "b", "f3": "new"})]
    # A smaller precision of the same scale keeps DECIMAL(38, 18).
    evolved.with_options(wide).write_arrow(
        pa.table({"id": [3], "c": pa.array([Decimal(4)], pa.decimal128(20, 18))}), merge_schema=True)
    assert str(t.refresh().arrow_schema.field("c").type) == "decimal128(38, 18)"


def test_explicit_cast_is_refused_when_a_stored_value_does_not_convert(ab):
    # Paimon's explicit-cast takes STRING -> DATE; the stored '1' and '2' are no dates, and old
    # files are read through the cast, so dyntable refuses before writing (engine.write.type_changes).
    opts = {"write.merge-schema.type-widening": "true", "write.merge-schema.explicit-cast": "true"}
    with pytest.raises(SchemaMergeError, match="cannot cast column 'b' from STRING to DATE"):
        ab.with_options(opts).write_arrow(pa.table({"a": [3], "b": pa.array([0], pa.date32())}),
                                          merge_schema=True)
    assert _metadata_files(ab) == (["schema-0"], ["snapshot-1"])


@pytest.mark.parametrize("bucket", [-1, 2])
def test_primary_key_table_upserts_after_evolving(catalog, bucket):
    # DataFrameWriteTestBase "Schema evolution: write data into Paimon", primary-key variant.
    catalog.create_table("db.t", pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())]),
                         primary_keys=["a"], options={"bucket": str(bucket)})
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["a", "b"]}))
    t.write_arrow(pa.table({"a": pa.array([1, 3], pa.int32()), "b": ["a2", "c"], "c": [123, 345],
                            "d": pa.array([[("k", 11.1)], [("k", 33.3)]],
                                          pa.map_(pa.string(), pa.float64()))}),
                  merge_schema=True)
    assert [(r["a"], r["b"], r["c"], r["d"]) for r in _rows(t, "a")] == [
        (1, "a2", 123, [("k", 11.1)]), (2, "b", None, None), (3, "c", 345, [("k", 33.3)])]


def test_table_option_turns_merge_schema_on(catalog):
    catalog.create_table("db.t", pa.schema([("a", pa.int32())]), options={"write.merge-schema": "true"})
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"a": [1], "n": ["x"]}))
    assert t.refresh().schema.field_names == ("a", "n")
    with pytest.raises(InvalidArgumentError, match="not in the table"):
        t.refresh().write_arrow(pa.table({"a": [1], "z": ["x"]}), merge_schema=False)


def test_one_extra_metadata_file_per_evolving_write(ab):
    # The measure: a merge-schema write publishes one schema file next to its snapshot; a write
    # that adds nothing publishes only its snapshot, like any write.
    before = _metadata_files(ab)
    ab.write_arrow(pa.table({"a": [3], "c": [1]}), merge_schema=True)
    after = _metadata_files(ab)
    assert (len(after[0]) - len(before[0]), len(after[1]) - len(before[1])) == (1, 1)
    ab.refresh().write_arrow(pa.table({"a": [4], "c": [2]}), merge_schema=True)
    assert [len(x) for x in _metadata_files(ab)] == [len(after[0]), len(after[1]) + 1]
    # The snapshot names the new schema, and so do its files.
    latest = ab.latest_snapshot()
    assert latest is not None and latest.schema_id == 1


def test_failed_write_publishes_no_schema_and_leaves_no_files(ab):
    # The data evolves the schema (new column c) but a value does not fit 'a' (INT): the writer
    # fails before any commit, so neither the schema nor a file is left.
    data_dir = ab.path
    files_before = sorted(os.path.join(d, f) for d, _, fs in os.walk(data_dir) for f in fs)
    with pytest.raises(InvalidArgumentError, match="column 'a'"):
        ab.write_arrow(pa.table({"a": [2**40], "c": [1]}), merge_schema=True)
    files_after = sorted(os.path.join(d, f) for d, _, fs in os.walk(data_dir) for f in fs)
    assert files_after == files_before


def test_commit_refuses_when_the_schema_changed_meanwhile(catalog, ab):
    # The write's files name schema 1 as merged from schema 0; an ALTER publishes another schema 1
    # first: the write must not commit (its files would be read through the wrong fields).
    evolved = ab.for_data(pa.schema([("a", pa.int32()), ("c", pa.int64())]), merge_schema=True)
    builder = evolved.new_write_builder()
    messages = builder.new_write().write_all([pa.table({"a": pa.array([9], pa.int32()), "c": [9]})])
    catalog.alter_table("db.t", [AddColumn("other", "STRING")])
    with pytest.raises(CommitConflictError, match="changed while this write evolved it"):
        builder.new_commit().commit(messages)
    t = ab.refresh()
    assert t.schema.field_names == ("a", "b", "other")
    assert [r["a"] for r in t.to_arrow().to_pylist()] == [1, 2]
    written = {f.file_name for m in messages for f in m.new_files}
    on_disk = {f for _, _, fs in os.walk(t.path) for f in fs}
    assert written and not written & on_disk  # the refused write's files are deleted


def test_two_writers_evolving_alike_both_commit(ab):
    data = pa.table({"a": pa.array([7], pa.int32()), "c": [7]})
    first = ab.for_data(data.schema, merge_schema=True)
    second = ab.for_data(data.schema, merge_schema=True)
    b1, b2 = first.new_write_builder(), second.new_write_builder()
    m1, m2 = b1.new_write().write_all([data]), b2.new_write().write_all([data])
    b1.new_commit().commit(m1)
    b2.new_commit().commit(m2)
    assert _metadata_files(ab)[0] == ["schema-0", "schema-1"]
    assert [r["c"] for r in _rows(ab, "a")] == [None, None, 7, 7]


def test_a_pickled_evolving_write_commits_its_schema(ab):
    # The Spark data source ships the evolved table to tasks and to the commit's worker by pickle:
    # the unpublished schema travels with it, so the commit publishes it before the snapshot.
    import pickle

    evolved = pickle.loads(pickle.dumps(ab.for_data(pa.schema([("a", pa.int32()), ("c", pa.int64())]),
                                                    merge_schema=True)))
    builder = pickle.loads(pickle.dumps(evolved.new_write_builder()))
    messages = builder.new_write().write_all([pa.table({"a": pa.array([3], pa.int32()), "c": [30]})])
    pickle.loads(pickle.dumps(builder.new_commit())).commit(messages)
    assert _metadata_files(ab) == (["schema-0", "schema-1"], ["snapshot-1", "snapshot-2"])
    assert [r["c"] for r in _rows(ab, "a")] == [None, None, 30]


def test_every_micro_batch_of_an_evolving_stream_commits(ab):
    # A streaming sink's driver keeps its evolved (unpublished) table for the whole query; each
    # micro-batch's commit runs on a pickled copy. The first publishes the schema, the later ones
    # find that same version published and commit on it.
    import pickle

    evolved = ab.for_data(pa.schema([("a", pa.int32()), ("c", pa.int64())]), merge_schema=True)
    builder = evolved.new_write_builder(commit_user="stream")
    for batch in (1, 2, 3):
        shipped = pickle.loads(pickle.dumps(builder))
        messages = shipped.new_write().write_all([pa.table({"a": pa.array([batch + 10], pa.int32()),
                                                            "c": [batch]})])
        pickle.loads(pickle.dumps(builder.new_commit())).with_identifier(batch).commit(messages)
    assert _metadata_files(ab) == (["schema-0", "schema-1"], [f"snapshot-{i}" for i in range(1, 5)])
    assert [r["c"] for r in _rows(ab, "a")] == [None, None, 1, 2, 3]
