"""``data-file.thin-mode`` (Paimon 1.0): primary-key files without the ``_KEY_`` columns, written by
every kv writer (flush, compaction, changelog), with the key range and key statistics taken from
the value columns; a table may switch it on or off, and files of both layouts read together."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.meta.binary_row import deserialize_row
from engine.schema_changes import SetOption

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("s", pa.string(), nullable=False),
                    pa.field("v", pa.float64())])


def batch(ks, v) -> pa.Table:
    ks = list(ks)
    return pa.table({"k": ks, "s": [f"s{k % 3}" for k in ks], "v": [float(v)] * len(ks)}, schema=SCHEMA)


def data_files(t) -> list:
    return [f for s in t.new_scan().plan().splits for f in s.files]


def physical_columns(t, f) -> list[str]:
    part = t.store.partition_dir(())
    return pq.read_schema(t.store.paths.data_file(part, 0, f.file_name, f.external_path)).names


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_thin_files_hold_no_key_columns_and_read_back(catalog, producer):
    t = catalog.create_table("db.thin", SCHEMA, primary_keys=["k", "s"], options={
        "bucket": "1", "data-file.thin-mode": "true", "changelog-producer": producer})
    t.write_arrow(batch(range(10), 1))
    t.write_arrow(batch(range(5, 15), 2))
    t = t.refresh()
    for f in data_files(t):
        assert physical_columns(t, f) == ["_SEQUENCE_NUMBER", "_VALUE_KIND", "k", "s", "v"]
        lo, hi = (deserialize_row(x, [t.store.schema.field(c).type for c in ("k", "s")])
                  for x in (f.min_key, f.max_key))
        assert lo <= hi and f.key_stats.min_values and f.key_stats.null_counts == (0, 0)
    got = sorted(zip(*t.to_arrow().select(["k", "v"]).to_pydict().values(), strict=True))
    assert got == [(k, 1.0) for k in range(5)] + [(k, 2.0) for k in range(5, 15)]
    t.compact(full=True)
    t = t.refresh()
    assert all(physical_columns(t, f)[:2] == ["_SEQUENCE_NUMBER", "_VALUE_KIND"] for f in data_files(t))
    assert sorted(zip(*t.to_arrow().select(["k", "v"]).to_pydict().values(), strict=True)) == got
    if producer == "lookup":  # changelog files are thin too (Paimon's writer factory makes both)
        changelog_dir = os.path.join(t.path, "bucket-0")
        names = [n for n in os.listdir(changelog_dir) if n.startswith("changelog-")]
        assert names and all(not any(c.startswith("_KEY_") for c in pq.read_schema(
            os.path.join(changelog_dir, n)).names) for n in names)


def test_thin_and_full_files_mix_when_the_option_changes(catalog):
    t = catalog.create_table("db.mix", SCHEMA, primary_keys=["k", "s"], options={"bucket": "1"})
    t.write_arrow(batch(range(6), 1))
    catalog.alter_table("db.mix", [SetOption("data-file.thin-mode", "true")])
    t = catalog.get_table("db.mix")
    t.write_arrow(batch(range(3, 9), 2))
    layouts = {tuple(c for c in physical_columns(t, f) if c.startswith("_KEY_")) for f in data_files(t)}
    assert layouts == {(), ("_KEY_k", "_KEY_s")}
    got = sorted(zip(*t.to_arrow().select(["k", "v"]).to_pydict().values(), strict=True))
    assert got == [(k, 1.0) for k in range(3)] + [(k, 2.0) for k in range(3, 9)]
