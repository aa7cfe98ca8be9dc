"""ARRAY, MAP and MULTISET columns in the Iceberg metadata (engine.iceberg.schema) and the check
that every published file carries their member field ids (engine.iceberg.nested).
tests/compat/iceberg/test_pyiceberg_collections.py reads such tables with pyiceberg."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest

import engine.iceberg.nested as nested
import engine.write.file_writer as file_writer
from engine.errors import InvalidArgumentError
from engine.iceberg import sync
from engine.iceberg.schema import iceberg_schema
from engine.schema import TableSchema
from engine.write.nested_ids import array_element_id, map_key_id, map_value_id

ICEBERG = {"metadata.iceberg.storage": "table-location"}
SCHEMA = pa.schema([("k", pa.int32()), ("a", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int64()))])
WHY = "without Parquet field ids on its list elements or map keys and values"


def _rows(*keys: int) -> pa.Table:
    return pa.table(
        {"k": list(keys), "a": [[k, None] for k in keys], "m": [[("x", k)] if k % 2 else None for k in keys]},
        schema=SCHEMA,
    )


def _meta_dir(table) -> Path:
    return Path(table.path) / "metadata"


def _current(table) -> dict:
    version = int((_meta_dir(table) / "version-hint.text").read_text())
    return json.loads((_meta_dir(table) / f"v{version}.metadata.json").read_text())


def test_schema_uses_paimons_element_key_and_value_ids() -> None:
    s = TableSchema.create(
        [
            ("a", "ARRAY<INT NOT NULL>"),
            ("r", "STRUCT<x: INT, mm: MAP<STRING, ARRAY<BIGINT>> NOT NULL>"),
            ("ms", "MULTISET<STRING>"),
            ("m", "MAP<INT, STRING NOT NULL>"),
        ]
    )
    fields = {f["name"]: f for f in iceberg_schema(s)["fields"]}
    assert fields["a"]["type"] == {
        "type": "list", "element-id": array_element_id(0, 1), "element-required": True, "element": "int",
    }  # fmt: skip
    mm = fields["r"]["type"]["fields"][1]
    assert mm["required"] is True and mm["id"] == s.field("r").type.fields[1].id
    assert mm["type"] == {
        "type": "map", "key-id": map_key_id(mm["id"], 1), "key": "string",
        "value-id": map_value_id(mm["id"], 1), "value-required": False,
        "value": {"type": "list", "element-id": array_element_id(mm["id"], 2), "element-required": False,
                  "element": "long"},
    }  # fmt: skip
    ms_id = fields["ms"]["id"]
    assert fields["ms"]["type"] == {
        "type": "map", "key-id": map_key_id(ms_id, 1), "key": "string",
        "value-id": map_value_id(ms_id, 1), "value-required": True, "value": "int",
    }  # fmt: skip
    assert fields["m"]["type"]["value-required"] is True and fields["m"]["type"]["value"] == "string"


def test_a_file_without_the_ids_is_refused_until_it_is_gone(catalog, caplog, monkeypatch) -> None:
    t = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    with monkeypatch.context() as m, caplog.at_level(logging.WARNING, logger="engine.iceberg"):
        m.setattr(file_writer, "with_nested_ids", lambda s: s)  # as dyntable wrote before, or Spark
        t.write_arrow(_rows(1, 2))
    assert WHY in caplog.text and not _meta_dir(t).exists()
    assert t.refresh().to_arrow().num_rows == 2  # the write itself went through
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="engine.iceberg"):
        t.refresh().write_arrow(_rows(3))  # a new file with the ids: the old one is still live
    assert WHY in caplog.text and not _meta_dir(t).exists()
    with pytest.raises(InvalidArgumentError, match=WHY):
        sync(t.refresh().store)
    t.refresh().write_arrow(_rows(4, 5), overwrite=True)  # every live file now has them
    meta = _current(t)
    fields = {f["name"]: f["type"] for f in meta["schemas"][-1]["fields"]}
    assert fields["a"]["element-id"] == array_element_id(1, 1)
    assert meta["current-snapshot-id"] == t.refresh().latest_snapshot().id


def test_only_the_added_files_are_opened(catalog, monkeypatch) -> None:
    opened: list[int] = []
    real = nested.lacking_nested_ids
    monkeypatch.setattr(nested, "lacking_nested_ids", lambda s: opened.append(1) or real(s))
    monkeypatch.setattr(nested, "_lacking", type(nested._lacking)())
    t = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    for i in range(4):
        nested._lacking.clear()  # as in a new process: what the commit opens, not what is remembered
        t.refresh().write_arrow(_rows(i))
        assert len(opened) == i + 1  # this commit's one file, never the earlier ones again
    plain = catalog.create_table("db.p", pa.schema([("k", pa.int32())]), options=ICEBERG)
    plain.write_arrow(pa.table({"k": [1]}, schema=plain.arrow_schema))
    assert len(opened) == 4  # no collection column: no footer read at all
    assert _current(t)["current-snapshot-id"] == 4


def test_catching_up_over_a_refused_snapshot_publishes_once_its_file_is_gone(catalog, monkeypatch) -> None:
    t = catalog.create_table("db.t", SCHEMA, options=ICEBERG)
    t.write_arrow(_rows(1))
    assert _current(t)["current-snapshot-id"] == 1
    with monkeypatch.context() as m:
        m.setattr(file_writer, "with_nested_ids", lambda s: s)
        t.refresh().write_arrow(_rows(2))  # refused: version 1 stays current
    assert int((_meta_dir(t) / "version-hint.text").read_text()) == 1
    t.refresh().write_arrow(_rows(3), overwrite=True)  # the file of snapshot 2 is gone
    meta = _current(t)
    assert meta["current-snapshot-id"] == 3
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [3]  # afresh: snapshot 2 never was readable


def test_orc_files_with_collections_are_refused(catalog, caplog) -> None:
    # ORC files carry no Parquet field ids: an Iceberg reader could not find the members
    t = catalog.create_table("db.t", SCHEMA, options={**ICEBERG, "file.format": "orc"})
    with caplog.at_level(logging.WARNING, logger="engine.iceberg"):
        t.write_arrow(_rows(1, 2))
    assert WHY in caplog.text and not _meta_dir(t).exists()
    assert t.refresh().to_arrow().num_rows == 2
