"""Format tables in the engine: Paimon's schema file, listing, and staged writes replacing data."""

from __future__ import annotations

import json
import os

import pytest

from engine import FormatTableError, InvalidArgumentError, open_catalog
from engine.types import INT, STRING, DataField


def _fields() -> list[DataField]:
    return [DataField(0, "id", INT()), DataField(1, "p", STRING())]


def _touch(path: str, text: str = "x") -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_schema_file_as_paimon_stores_it(tmp_path):
    cat = open_catalog(str(tmp_path))
    table = cat.create_format_table("default.t", _fields(), "CSV", ["p"], {"csv.field-delimiter": ";"})
    schema = json.loads((tmp_path / "default.db" / "t" / "schema" / "schema-0").read_text())
    assert schema["options"]["type"] == "format-table"
    assert schema["options"]["file.format"] == "csv"
    assert schema["partitionKeys"] == ["p"]
    assert table.format == "csv" and table.partition_keys == ("p",)
    assert table.reader_options() == {"sep": ";"}
    assert cat.list_tables("default") == ["t"]


def test_a_format_table_is_not_a_data_table(tmp_path):
    cat = open_catalog(str(tmp_path))
    cat.create_format_table("default.t", _fields(), "parquet")
    with pytest.raises(FormatTableError, match="format table"):
        cat.get_table("default.t")
    cat.create_table("default.d", _fields())
    assert cat.get_format_table("default.d") is None


def test_paimon_refusals(tmp_path):
    cat = open_catalog(str(tmp_path))
    with pytest.raises(InvalidArgumentError, match="Cannot define primary-key for format table"):
        cat.create_format_table("default.t", _fields(), "csv", options={"primary-key": "id"})
    with pytest.raises(InvalidArgumentError, match="csv.quote-character must not be empty"):
        cat.create_format_table("default.t", _fields(), "csv", options={"csv.quote-character": ""})
    with pytest.raises(InvalidArgumentError, match="not 'avro'"):
        cat.create_format_table("default.t", _fields(), "avro")


def test_listing_skips_hidden_and_schema(tmp_path):
    cat = open_catalog(str(tmp_path))
    t = cat.create_format_table("default.t", _fields(), "csv", ["p"])
    loc = t.location
    _touch(f"{loc}/p=a/part-0.csv")
    _touch(f"{loc}/p=b%2Fc/part-0.csv")
    _touch(f"{loc}/_SUCCESS")
    _touch(f"{loc}/_temporary/0/p=z/part-9.csv")
    _touch(f"{loc}/.hidden.crc")
    assert [p.rsplit("/", 2)[-2] for p in t.data_files(cat.io)] == ["p=a", "p=b%2Fc"]
    assert t.partition_dirs(cat.io) == [{"p": "a"}, {"p": "b/c"}]


@pytest.mark.parametrize(("mode", "static", "left"), [
    ("none", None, {"p=a/old.csv", "p=b/old.csv", "p=a/new.csv"}),
    ("static", None, {"p=a/new.csv"}),
    ("static", {"p": "b"}, {"p=a/old.csv", "p=a/new.csv"}),
    ("dynamic", None, {"p=b/old.csv", "p=a/new.csv"}),
])
def test_commit_staged(tmp_path, mode, static, left):
    cat = open_catalog(str(tmp_path))
    t = cat.create_format_table("default.t", _fields(), "csv", ["p"])
    _touch(f"{t.location}/p=a/old.csv")
    _touch(f"{t.location}/p=b/old.csv")
    staged = t.staging_dir()
    _touch(f"{staged}/p=a/new.csv")
    assert t.commit_staged(cat.io, staged, mode, static) == 1
    prefix = t.location + "/"
    assert {p[len(prefix):] for p in t.data_files(cat.io)} == left
    assert not os.path.exists(staged)
    assert cat.get_format_table("default.t") is not None  # the schema survives every overwrite


def test_alter_options_and_refusals(tmp_path):
    from engine.schema_changes import AddColumn, RemoveOption, SetOption, UpdateComment

    cat = open_catalog(str(tmp_path))
    cat.create_format_table("default.t", _fields(), "csv", options={"sep": "|"})
    t = cat.alter_format_table("default.t", [SetOption("mode", "dropmalformed"), RemoveOption("sep"),
                                             UpdateComment("c")])
    assert t.options == {"mode": "dropmalformed", "type": "format-table", "file.format": "csv"}
    assert t.comment == "c"
    assert (tmp_path / "default.db" / "t" / "schema" / "schema-1").exists()
    with pytest.raises(FormatTableError, match="changing 'file.format'"):
        cat.alter_format_table("default.t", [SetOption("file.format", "parquet")])
    with pytest.raises(FormatTableError, match="AddColumn"):
        cat.alter_format_table("default.t", [AddColumn("w", INT())])
    with pytest.raises(InvalidArgumentError, match="csv.field-delimiter must not be empty"):
        cat.alter_format_table("default.t", [SetOption("csv.field-delimiter", "")])


def test_external_location(tmp_path):
    cat = open_catalog(str(tmp_path / "wh"))
    data = str(tmp_path / "files")
    t = cat.create_format_table("default.t", _fields(), "parquet", options={"path": data})
    assert t.location == data and t.data_files(cat.io) == []
    _touch(f"{data}/part-0.parquet")
    assert t.data_files(cat.io) == [f"{data}/part-0.parquet"]
    cat.drop_table("default.t")
    assert os.path.exists(f"{data}/part-0.parquet")  # an external table's files outlive it
