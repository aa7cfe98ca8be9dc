"""Manifests decoded into Arrow columns give exactly the records of the fastavro decoding, with
either decoder (polars, or the fastavro fallback), every codec, and files of older writers; the
columnar live-file merge agrees with ``live_files``."""

from __future__ import annotations

import importlib.util
import io
import random

import fastavro
import pytest

from engine.errors import CorruptMetadataError
from engine.meta import manifest_arrow
from engine.meta.manifest import (
    FileKind,
    live_files,
    read_manifest_entries,
    write_manifest_entries,
)
from engine.meta.manifest_arrow import entries_from_table, live_entry_rows, read_manifest_table
from tests.engine.meta.test_manifest import (
    add,
    delete,
    entry_record,
    entry_schema,
    old_file_record,
    old_file_schema,
    populated_entry,
    raw_file,
)

HAS_POLARS = importlib.util.find_spec("polars") is not None


@pytest.fixture(params=["polars", "fastavro"])
def decoder(request, monkeypatch):
    if request.param == "polars" and not HAS_POLARS:
        pytest.skip("polars is not installed")
    monkeypatch.setattr(manifest_arrow, "USE_POLARS", request.param == "polars")
    return request.param


def _entries():
    return [
        populated_entry(),
        add("data-a.parquet", bucket=3),
        add("data-b.parquet", partition=b"\x00\x00\x00\x01" + bytes(8) + b"p1\x00\x00\x00\x00\x00\x82"),
        delete(add("data-c.parquet", level=2)),
    ]


@pytest.mark.parametrize("codec", ["zstd", "none", "deflate", "bzip2", "xz"])
def test_columns_give_the_same_entries_as_the_record_decoder(decoder, codec):
    data = write_manifest_entries(_entries(), codec=codec)
    table = read_manifest_table(data)
    assert table.schema == manifest_arrow.ENTRY_SCHEMA
    assert entries_from_table(table) == read_manifest_entries(data)


def test_a_file_of_many_blocks_is_read_whole(decoder):
    # fastavro starts a new block every sync_interval bytes: the re-framing walks all of them.
    entries = [add(f"data-{i}.parquet", bucket=i % 4) for i in range(500)]
    records = [entry_record(old_file_record(e.file.file_name)) | {"_BUCKET": e.bucket} for e in entries]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(entry_schema(old_file_schema())), records,
                    codec="zstandard", sync_interval=2000)
    data = buf.getvalue()
    table = read_manifest_table(data)
    assert table.num_rows == 500
    assert entries_from_table(table) == read_manifest_entries(data)


def test_an_older_writers_missing_fields_are_null(decoder):
    data = raw_file(entry_schema(old_file_schema()), [entry_record(old_file_record("data-old.parquet"))],
                    codec="zstandard")
    table = read_manifest_table(data)
    row = table.to_pylist()[0]
    assert row["file_name"] == "data-old.parquet"
    assert row["creation_time"] is None and row["file_source"] is None and row["write_cols"] is None
    assert entries_from_table(table) == read_manifest_entries(data)


def test_undecodable_and_legacy_files_raise(decoder):
    good = write_manifest_entries(_entries())
    with pytest.raises(CorruptMetadataError):
        read_manifest_table(good[: len(good) // 2])
    with pytest.raises(CorruptMetadataError, match="legacy format identifier 1"):
        legacy = entry_record(old_file_record("x"), version=1)
        read_manifest_table(raw_file(entry_schema(old_file_schema()), [legacy]))
    missing = old_file_schema()
    missing["fields"] = [f for f in missing["fields"] if f["name"] != "_LEVEL"]
    record = old_file_record("x")
    del record["_LEVEL"]
    with pytest.raises(CorruptMetadataError, match="required field"):
        read_manifest_table(raw_file(entry_schema(missing), [entry_record(record)]))


def test_the_columnar_merge_agrees_with_live_files():
    rnd = random.Random(7)
    history, live = [], {}
    for step in range(400):
        if live and rnd.random() < 0.4:
            name = rnd.choice(sorted(live))
            history.append(delete(live.pop(name)))
            if rnd.random() < 0.3:  # compaction upgrade: the same file at a higher level
                upgraded = add(name, bucket=history[-1].bucket, level=history[-1].file.level + 1)
                history.append(upgraded)
                live[name] = upgraded
        else:
            entry = add(f"data-{step}.parquet", bucket=rnd.randrange(3))
            history.append(entry)
            live[entry.file.file_name] = entry
    chunks = [history[i : i + 50] for i in range(0, len(history), 50)]
    tables = [read_manifest_table(write_manifest_entries(chunk)) for chunk in chunks]
    merged = entries_from_table(live_entry_rows(tables))
    assert merged == live_files(history)
    assert all(e.kind is FileKind.ADD for e in merged)


def test_the_columnar_merge_refuses_inconsistent_manifests():
    twice = read_manifest_table(write_manifest_entries([add("data-1.parquet"), add("data-1.parquet")]))
    with pytest.raises(CorruptMetadataError, match="added twice"):
        live_entry_rows(twice)
    orphan = read_manifest_table(write_manifest_entries([delete(add("data-1.parquet"))]))
    with pytest.raises(CorruptMetadataError, match="never added"):
        live_entry_rows(orphan)
