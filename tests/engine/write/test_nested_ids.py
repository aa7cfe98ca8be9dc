"""Paimon 2.0's field ids on list elements and map keys/values in every Parquet file dyntable writes
(engine.write.nested_ids), and reading files with and without them (engine.files.evolve)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine.write.file_writer as file_writer
from engine.write.nested_ids import (
    array_element_id,
    lacking_nested_ids,
    map_key_id,
    map_value_id,
)

ROW = pa.struct([("x", pa.int32()), ("l", pa.list_(pa.int64()))])
SCHEMA = pa.schema([
    ("k", pa.int32()), ("a", pa.list_(pa.int32())), ("ar", pa.list_(ROW)),
    ("m", pa.map_(pa.string(), pa.int32())),
    ("s", pa.struct([("mm", pa.map_(pa.string(), pa.list_(pa.int32())))])),
])  # fmt: skip
# ids: k 0, a 1, ar 2, ar.x 3, ar.l 4, m 5, s 6, s.mm 7


def _rows(*keys: int) -> pa.Table:
    n = len(keys)
    return pa.table({
        "k": list(keys), "a": [[k, None] if k % 2 else None for k in keys],
        "ar": [[{"x": k, "l": [k]}, None] for k in keys], "m": [[("a", k)] if k % 3 else None for k in keys],
        "s": [{"mm": [("z", [k, None])]} if k % 2 else None for k in keys],
    }, schema=SCHEMA) if n else SCHEMA.empty_table()  # fmt: skip


def _ids(t: pa.DataType) -> list:
    """The ``PARQUET:field_id`` of every field below ``t``, depth first."""
    out = []
    children = (
        [t.field(i) for i in range(t.num_fields)] if pa.types.is_struct(t)
        else [t.key_field, t.item_field] if pa.types.is_map(t)
        else [t.value_field] if pa.types.is_list(t) else []
    )  # fmt: skip
    for c in children:
        out.append(int((c.metadata or {}).get(b"PARQUET:field_id", b"-1")))
        out.extend(_ids(c.type))
    return out


def _files(table) -> list[Path]:
    return sorted(Path(table.path).rglob("*.parquet"))


def test_paimon_arithmetic() -> None:
    # Integer.MAX_VALUE / 4 = 536870911, depth limit 1024 (SpecialFields, Paimon 2.0)
    assert array_element_id(1, 1) == 536870911 + 1024 + 1
    assert map_key_id(5, 1) == 536870911 - 5 * 1024 - 1
    assert map_value_id(7, 2) == 536870911 + 7 * 1024 + 2
    # Java int arithmetic wraps: 1073741826 * 1024 is 2048 as an int, and
    # 536870911 + 1572864 * 1024 + 1 is 2^31, which wraps to -2^31
    assert map_key_id(1073741826, 1) == 536870911 - 2048 - 1
    assert array_element_id(1572864, 1) == -(2**31)


def test_append_file_carries_paimon_ids_and_reads_back(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    rows = _rows(1, 2, 3)
    t.write_arrow(rows)
    (f,) = _files(t)
    schema = pq.read_schema(f)
    assert lacking_nested_ids(schema) == frozenset()
    assert _ids(schema.field("a").type) == [array_element_id(1, 1)]
    assert _ids(schema.field("ar").type) == [array_element_id(2, 1), 3, 4, array_element_id(4, 1)]
    assert _ids(schema.field("m").type) == [map_key_id(5, 1), map_value_id(5, 1)]
    assert _ids(schema.field("s").type) == [7, map_key_id(7, 1), map_value_id(7, 1), array_element_id(7, 2)]
    # the Parquet schema itself, not only pyarrow's view of it
    text = str(pq.ParquetFile(f).schema)
    assert f"field_id={array_element_id(7, 2)} element" in text and f"field_id={map_key_id(5, 1)} key" in text
    assert t.refresh().to_arrow().sort_by("k").to_pylist() == rows.to_pylist()


def test_key_files_compaction_and_changelog_carry_them(catalog) -> None:
    keyed = pa.schema([pa.field("k", pa.int32(), nullable=False), *list(SCHEMA)[1:]])
    t = catalog.create_table(
        "db.t", keyed, primary_keys=["k"], options={"bucket": "1", "changelog-producer": "lookup"}
    )
    t.write_arrow(_rows(1, 2, 3).cast(keyed))
    t.refresh().write_arrow(_rows(2, 4).cast(keyed))
    t.refresh().compact(full=True)
    files = _files(t)
    assert any(p.name.startswith("changelog-") for p in files)
    for p in files:
        assert lacking_nested_ids(pq.read_schema(p)) == frozenset(), p.name
        assert _ids(pq.read_schema(p).field("m").type) == [map_key_id(5, 1), map_value_id(5, 1)]
    got = t.refresh().to_arrow().sort_by("k").to_pylist()
    assert got == _rows(1, 2, 3, 4).to_pylist()


@pytest.mark.parametrize("key", [False, True], ids=["append", "primary-key"])
def test_files_without_the_ids_still_read_alongside_new_ones(catalog, monkeypatch, key) -> None:
    schema = pa.schema([pa.field("k", pa.int32(), nullable=not key), *list(SCHEMA)[1:]])
    t = catalog.create_table("db.t", schema, primary_keys=["k"] if key else [],
                             options={"bucket": "1"} if key else {})
    with monkeypatch.context() as m:  # a file as dyntable wrote them before, or another writer
        m.setattr(file_writer, "with_nested_ids", lambda s: s)
        t.write_arrow(_rows(1, 2).cast(schema))
    t.refresh().write_arrow(_rows(3, 4).cast(schema))
    lacking = sorted(len(lacking_nested_ids(pq.read_schema(p))) for p in _files(t))
    assert lacking == [0, 4]  # a, ar, m, s in the old file
    assert t.refresh().to_arrow().sort_by("k").to_pylist() == _rows(1, 2, 3, 4).to_pylist()
    t.refresh().compact(full=True)  # the rewrite carries them
    live = [p for p in _files(t) if p.name in _live_names(t)]
    assert live and all(not lacking_nested_ids(pq.read_schema(p)) for p in live)
    assert t.refresh().to_arrow().sort_by("k").to_pylist() == _rows(1, 2, 3, 4).to_pylist()


def _live_names(table) -> set[str]:
    return {f.file_name for s in table.refresh().new_read_builder().new_scan().plan().splits for f in s.files}
