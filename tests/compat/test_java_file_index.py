"""Data-file indexes shared with Java Paimon 0.9, both directions.

* dyntable writes append tables with bloom-filter and bitmap indexes (embedded in the manifest and
  in separate ``.index`` files); Java's planner skips the same files with an equality / IN filter
  (embedded indexes) and its reader skips them (separate files), so the rows Java returns for a
  filter come only from the files dyntable's scan keeps; without a filter both read the same rows.
* Java writes such tables; dyntable parses every blob exactly (re-serialising the parsed blob gives
  Java's bytes), builds byte-identical bloom filters and the same bitmaps from the same rows, and
  skips files with Java's indexes.

The rows are laid out so that min/max statistics cannot skip anything: only an index can.
"""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import predicate as P
from engine.fileindex import read_file_index, write_file_index
from engine.fileindex.bitmap import BitmapIndex, build
from engine.fileindex.bloom import BloomFilter
from tests.compat.java_oracle import JavaPaimon, arrow_rows

pytestmark = pytest.mark.java

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("k", pa.int32())])
# Per file: overlapping name and k ranges, so statistics keep every file for 'd' / k = 4.
BATCHES = [
    ([1, 2, 3], ["a", "c", "e"], [1, 3, 5]),
    ([4, 5, 6], ["b", "d", "f"], [2, 4, 6]),
    ([7, 8, 9], ["a2", "c2", "g"], [1, 5, 7]),
]
EMBEDDED = {"file-index.bloom-filter.columns": "id,name", "file-index.bloom-filter.id.items": "50",
            "file-index.bloom-filter.name.items": "50", "file-index.bitmap.columns": "k"}
SEPARATE = {"file-index.bloom-filter.columns": "name", "file-index.bitmap.columns": "k"}  # 1,000,000 items


def _dyntable_table(catalog, name, options):
    t = catalog.create_table(name, SCHEMA, options=options)
    for ids, names, ks in BATCHES:
        t.write_arrow(pa.table({"id": ids, "name": names, "k": pa.array(ks, pa.int32())}, schema=SCHEMA))
    return t


def _our_files(t, predicate):
    return sorted(f.file_name for s in t.new_scan().with_filter(predicate).plan().splits for f in s.files)


def _rows_of(t, names):
    """dyntable's rows of the files named ``names``."""
    rows = []
    for s in t.new_scan().plan().splits:
        for f in s.files:
            if f.file_name in names:
                rows += pq.read_table(os.path.join(t.path, "bucket-0", f.file_name)).to_pylist()
    return sorted((r["id"], r["name"], r["k"]) for r in rows)


@pytest.mark.parametrize("options", [EMBEDDED, SEPARATE], ids=["embedded", "separate"])
def test_java_skips_the_files_dyntable_indexed(catalog, java: JavaPaimon, options):
    t = _dyntable_table(catalog, "db.t", options)
    files = [f for s in t.new_scan().plan().splits for f in s.files]
    if options is EMBEDDED:
        assert all(f.embedded_file_index is not None and not f.extra_files for f in files)
    else:
        assert all(f.embedded_file_index is None for f in files)
        assert all(f.extra_files == (f.file_name + ".index",) for f in files)
    assert java.read("db.t") == arrow_rows(t.to_arrow())
    for column, spec, predicate in (
        ("name", {"column": "name", "values": ["d"]}, P.equal("name", "d")),
        ("name", {"column": "name", "op": "in", "values": ["d", "g"]}, P.is_in("name", ["d", "g"])),
        ("k", {"column": "k", "values": [4]}, P.equal("k", 4)),
    ):
        kept = _our_files(t, predicate)
        assert 0 < len(kept) < 3, column
        java_rows = java.read("db.t", filter=spec)
        assert java_rows == _rows_of(t, set(kept)), spec  # Java reads exactly the files we keep
        assert sorted(t.to_arrow(filter=predicate).to_pylist(), key=str) == sorted(
            t.to_arrow().filter(predicate.to_arrow()).to_pylist(), key=str)
        planned = sorted(f["file"] for f in java.files("db.t", filter=spec))
        # Java 0.9 tests embedded indexes while planning, separate index files while reading.
        assert planned == (kept if options is EMBEDDED else sorted(f.file_name for f in files))


def test_java_reads_primary_key_files_that_carry_indexes(catalog, java: JavaPaimon):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", **SEPARATE})
    for ids, names, ks in BATCHES:
        t.write_arrow(pa.table({"id": ids, "name": names, "k": pa.array(ks, pa.int32())}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [5], "name": ["changed"], "k": pa.array([0], pa.int32())}, schema=SCHEMA))
    assert java.read("db.pk") == arrow_rows(t.to_arrow())
    assert t.to_arrow(filter=P.equal("name", "d")).num_rows == 0


JAVA_COLUMNS = [("id", "BIGINT"), ("name", "STRING"), ("k", "INT"), ("day", "DATE"), ("ts", "TIMESTAMP(6)"),
                ("ms", "TIMESTAMP(3)"), ("x", "DOUBLE"), ("small", "SMALLINT")]
BLOOM_COLUMNS = ["id", "name", "day", "ts", "ms", "x"]
BITMAP_COLUMNS = ["k", "small"]  # Paimon 0.9 writes one index per column: no column gets both


def _java_rows(batch: int) -> list[list]:
    base = dt.datetime(2024, 3, 1, 12, 0, 0, 123456)
    rows = []
    for i in range(batch * 20, batch * 20 + 20):
        rows.append([i if i % 7 else None, f"name-{i % 13}-é", i % 5 + batch, dt.date(2024, 1, 1 + i % 28),
                     base + dt.timedelta(seconds=i, microseconds=i), base + dt.timedelta(milliseconds=i * 3),
                     i / 3 if i % 4 else -0.0, (i % 3) * 1000])
    return rows


@pytest.mark.parametrize("items", ["40", None], ids=["embedded", "separate"])
def test_dyntable_reads_java_written_indexes_byte_for_byte(catalog, java: JavaPaimon, items):
    options = {"file.format": "parquet", "file-index.in-manifest-threshold": "8 kb",
               "file-index.bloom-filter.columns": ",".join(BLOOM_COLUMNS),
               "file-index.bitmap.columns": ",".join(BITMAP_COLUMNS)}
    if items:
        options.update({f"file-index.bloom-filter.{c}.items": items for c in BLOOM_COLUMNS})
    java.create_table("db.j", JAVA_COLUMNS, options=options)
    for batch in range(3):
        java.write("db.j", _java_rows(batch))
    t = catalog.get_table("db.j")
    fields = {f.name: f for f in t.schema.fields}
    files = [f for s in t.new_scan().plan().splits for f in s.files]
    assert len(files) == 3
    for f in files:
        if items:
            assert f.embedded_file_index is not None and not f.extra_files
            blob = f.embedded_file_index
        else:
            assert f.embedded_file_index is None and f.extra_files == (f.file_name + ".index",)
            with open(os.path.join(t.path, "bucket-0", f.extra_files[0]), "rb") as src:
                blob = src.read()
        parsed = read_file_index(blob)
        assert write_file_index(parsed) == blob  # every byte of Java's layout is understood
        assert set(parsed) == {*BLOOM_COLUMNS, *BITMAP_COLUMNS}
        rows = pq.read_table(os.path.join(t.path, "bucket-0", f.file_name))
        for column in BLOOM_COLUMNS:
            ours = BloomFilter.build(rows.column(column), int(items or 1_000_000), 0.1).serialize()
            assert ours == parsed[column]["bloom-filter"], column  # bit-identical filters
        for column in BITMAP_COLUMNS:
            dtype = fields[column].type
            theirs = BitmapIndex.parse(parsed[column]["bitmap"], dtype)
            ours = BitmapIndex.parse(build(rows.column(column), dtype), dtype)
            assert theirs.row_count == ours.row_count and set(theirs.offsets) == set(ours.offsets)
            for key in theirs.offsets:
                assert theirs.rows(key) == ours.rows(key), (column, key)
            assert theirs.rows(None) == ours.rows(None)
    # Java's indexes skip files in dyntable's scans, and the filtered rows stay exact.
    everything = t.to_arrow()
    for predicate in (P.equal("k", 6), P.equal("k", 0), P.equal("name", "nope"), P.equal("id", 45),
                      P.equal("day", dt.date(2024, 1, 3)), P.equal("x", 1 / 3)):
        kept = _our_files(t, predicate)
        got = t.to_arrow(filter=predicate)
        expected = everything.filter(predicate.to_arrow())
        assert sorted(got.to_pylist(), key=str) == sorted(expected.to_pylist(), key=str)
        if got.num_rows == 0:
            assert kept == [], predicate
    assert len(_our_files(t, P.equal("k", 6))) == 1  # k = i % 5 + batch: 6 only in the last file
