"""The lean manifest decoders used by orphan cleanup (``read_manifest_refs``,
``read_manifest_list_refs``, and ``refs_from_table`` over Arrow columns for large manifests): the
same files, identifiers and sizes as the full decoders, and exactly their errors on corrupt input
(fail closed)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from engine.errors import CorruptMetadataError
from engine.meta.manifest import (
    FileKind,
    read_manifest_entries,
    read_manifest_list,
    read_manifest_list_refs,
    read_manifest_refs,
    write_manifest_entries,
    write_manifest_list,
)
from engine.meta.manifest_arrow import read_manifest_table, refs_from_table
from tests.engine.meta.test_manifest import (
    POPULATED_META,
    add,
    delete,
    entry_record,
    entry_schema,
    old_file_record,
    old_file_schema,
    populated_entry,
    raw_file,
)


def test_refs_carry_what_reachability_reads():
    entries = [add(f"f{i}", bucket=i % 3) for i in range(20)] + [populated_entry()]
    entries.append(delete(entries[0]))
    data = write_manifest_entries(entries)
    refs = read_manifest_refs(data)
    full = read_manifest_entries(data)
    assert [r.identifier for r in refs] == [e.identifier for e in full]
    assert [(r.kind, r.partition, r.bucket) for r in refs] == [(e.kind, e.partition, e.bucket) for e in full]
    for r, e in zip(refs, full, strict=True):
        assert (r.file.file_name, r.file.file_size, r.file.extra_files, r.file.external_path) == (
            e.file.file_name, e.file.file_size, e.file.extra_files, e.file.external_path)
    assert refs[-1].kind is FileKind.DELETE


def _columnar_refs(data: bytes):
    return refs_from_table(read_manifest_table(data))


@pytest.mark.parametrize("n", [0, 1, 25, 3000])
def test_columnar_refs_equal_record_refs(n):
    entries = [add(f"f{i}", bucket=i % 3, level=i % 4) for i in range(n)]
    if n:
        entries += [populated_entry(), delete(entries[0])]
    data = write_manifest_entries(entries)
    records = read_manifest_refs(data)
    columns = _columnar_refs(data)
    fields = ("kind", "partition", "bucket", "file_name", "file_size", "level", "extra_files",
              "embedded_file_index", "external_path")
    assert [tuple(getattr(r, f) for f in fields) for r in columns] == [
        tuple(getattr(r, f) for f in fields) for r in records]
    assert [r.identifier for r in columns] == [e.identifier for e in read_manifest_entries(data)]
    assert all(type(r.kind) is FileKind and type(r.extra_files) is tuple for r in columns)


def test_columnar_refs_refuse_a_null_extra_files_list():
    table = read_manifest_table(write_manifest_entries([add("f0"), add("f1")]))
    broken = table.set_column(table.schema.get_field_index("extra_files"), "extra_files",
                              pa.array([["x"], None], table.schema.field("extra_files").type))
    with pytest.raises(CorruptMetadataError, match="_EXTRA_FILES"):
        refs_from_table(broken)


def test_list_refs_are_names_and_sizes():
    data = write_manifest_list([POPULATED_META] * 3)
    assert read_manifest_list_refs(data) == [(m.file_name, m.file_size) for m in read_manifest_list(data)]


def _without(field: str) -> bytes:
    schema = entry_schema(old_file_schema())
    schema["fields"][-1]["type"]["fields"] = [f for f in schema["fields"][-1]["type"]["fields"]
                                              if f["name"] != field]
    rec = entry_record({k: v for k, v in old_file_record("x").items() if k != field})
    return raw_file(schema, [rec])


CORRUPT: dict[str, Any] = {
    "truncated": lambda: write_manifest_entries([add(f"f{i}") for i in range(30)])[:-17],
    "garbage": lambda: b"not an avro file at all",
    "null record": lambda: raw_file(["null", entry_schema(old_file_schema())], [None]),
    "old version": lambda: raw_file(entry_schema(old_file_schema()), [entry_record(old_file_record("x"), 1)]),
    "unknown kind": lambda: raw_file(
        entry_schema(old_file_schema()), [entry_record(old_file_record("x"), 2, 7)]
    ),
    "unknown file source": lambda: raw_file(
        entry_schema(old_file_schema([{"name": "_FILE_SOURCE", "type": ["null", "int"]}])),
        [entry_record(old_file_record("x", _FILE_SOURCE=9))],
    ),
    "no _LEVEL": lambda: _without("_LEVEL"),
    "no _ROW_COUNT": lambda: _without("_ROW_COUNT"),
    "no _SCHEMA_ID": lambda: _without("_SCHEMA_ID"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_refs_refuse_exactly_what_the_full_decoder_refuses(case):
    data = CORRUPT[case]()
    with pytest.raises(CorruptMetadataError):
        read_manifest_entries(data)
    with pytest.raises(CorruptMetadataError):
        read_manifest_refs(data)


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_columnar_refs_refuse_what_the_record_refs_refuse(case):
    with pytest.raises(CorruptMetadataError):
        _columnar_refs(CORRUPT[case]())


def test_list_refs_refuse_corrupt_lists():
    data = write_manifest_list([POPULATED_META] * 10)
    for bad in (data[: len(data) // 2], write_manifest_entries([add("x")])):
        with pytest.raises(CorruptMetadataError):
            read_manifest_list(bad)
        with pytest.raises(CorruptMetadataError):
            read_manifest_list_refs(bad)
