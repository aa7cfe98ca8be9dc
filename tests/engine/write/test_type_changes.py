"""The stored-row checks of merge-schema type changes (engine.write.type_changes), end to end
through ``Table.write_arrow``: a primary key widened as Paimon's ``PaimonSinkTest`` "enable schema
evolution" widens it, old files read in the new type, old keys still found in their buckets; an
explicit cast taken only when every stored value converts."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os

import pyarrow as pa
import pytest

from engine.errors import SchemaMergeError

EXPLICIT = {"write.merge-schema": "true", "write.merge-schema.type-widening": "true",
            "write.merge-schema.explicit-cast": "true"}
WIDEN = {"write.merge-schema": "true", "write.merge-schema.type-widening": "true"}
DAY, NEXT = dt.date(2023, 8, 9), dt.date(2023, 8, 10)


def _key_table(catalog, bucket: int, keys=(1, 2)):
    catalog.create_table("db.t", pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())]),
                         primary_keys=["a"], options={"bucket": str(bucket)})
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"a": pa.array(keys, pa.int32()), "b": ["2023-08-09"] * len(keys)}))
    return t


def _rows(t):
    return sorted(tuple(r.values()) for r in t.refresh().to_arrow().to_pylist())


def _schemas(t) -> list[str]:
    return sorted(os.listdir(f"{t.path}/schema"))


@pytest.mark.parametrize("bucket", [3, -1])
def test_primary_key_widens_and_old_keys_keep_their_buckets(catalog, bucket):
    # PaimonSinkTest "enable schema evolution": a INT -> BIGINT, b STRING -> DATE, c added.
    t = _key_table(catalog, bucket)
    t.with_options(EXPLICIT).write_arrow(pa.table({
        "a": pa.array([1, 3], pa.int64()), "b": pa.array([NEXT, NEXT]),
        "c": pa.array([123, 456], pa.int32())}))
    evolved = t.refresh()
    assert [str(f.type) for f in evolved.arrow_schema] == ["int64", "date32[day]", "int32"]
    assert _rows(evolved) == [(1, NEXT, 123), (2, DAY, None), (3, NEXT, 456)]
    # Key 2 was written as an INT; upserted as a BIGINT it lands in the same bucket, one row.
    evolved.write_arrow(pa.table({"a": pa.array([2], pa.int64()), "b": pa.array([NEXT]), "c": [7]}))
    assert _rows(evolved) == [(1, NEXT, 123), (2, NEXT, 7), (3, NEXT, 456)]
    evolved.refresh().compact()
    assert _rows(evolved) == [(1, NEXT, 123), (2, NEXT, 7), (3, NEXT, 456)]


def test_a_stored_negative_key_refuses_the_widening(catalog):
    t = _key_table(catalog, 3, keys=(-1, 2))
    with pytest.raises(SchemaMergeError, match="key column 'a'.*holds the key -1"):
        t.with_options(WIDEN).write_arrow(pa.table({"a": pa.array([5], pa.int64()), "b": ["x"]}))
    assert _schemas(t) == ["schema-0"]
    assert _rows(t) == [(-1, "2023-08-09"), (2, "2023-08-09")]


def test_after_widening_negative_keys_are_written_in_the_new_type(catalog):
    t = _key_table(catalog, 2)
    t.with_options(WIDEN).write_arrow(pa.table({"a": pa.array([-5], pa.int64()), "b": ["x"]}))
    t.refresh().write_arrow(pa.table({"a": pa.array([-5], pa.int64()), "b": ["y"]}))
    assert _rows(t) == [(-5, "y"), (1, "2023-08-09"), (2, "2023-08-09")]


def test_explicit_cast_of_values_that_convert_and_of_those_that_do_not(catalog):
    catalog.create_table("db.t", pa.schema([("n", pa.string()), ("v", pa.int64())]))
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"n": ["1", None], "v": pa.array([10, 2 ** 40])}))
    with pytest.raises(SchemaMergeError, match=r"column 'v' from BIGINT to INT.*does not convert"):
        t.with_options(EXPLICIT).write_arrow(pa.table({"v": pa.array([1], pa.int32())}))
    assert _schemas(t) == ["schema-0"]
    t.with_options(EXPLICIT).write_arrow(pa.table({"n": pa.array([7], pa.int32())}))
    assert str(t.refresh().arrow_schema.field("n").type) == "int32"
    values = t.refresh().to_arrow().column("n").to_pylist()
    assert sorted(values, key=lambda x: (x is None, x)) == [1, 7, None]


def test_a_shorter_length_must_fit_every_stored_value(catalog):
    from engine.types import parse_sql_type
    from engine.write.type_changes import check_stored_rows

    catalog.create_table("db.t", pa.schema([("s", pa.string())]))
    t = catalog.get_table("db.t")
    t.write_arrow(pa.table({"s": ["abc", "de"]}))
    old = t.schema

    def to(sql: str):
        field = dataclasses.replace(old.fields[0], type=parse_sql_type(sql))
        return dataclasses.replace(old, id=old.id + 1, fields=(field,))

    with pytest.raises(SchemaMergeError, match=r"column 's' to VARCHAR\(2\).*length 3"):
        check_stored_rows(t.store, old, to("VARCHAR(2)"))
    check_stored_rows(t.store, old, to("VARCHAR(3)"))
