"""The append writer keeps one rolling file per bucket across the small batches Spark hands over."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("x", pa.float64()), ("p", pa.int32())])


def _batches(start: int, rows: int, batch: int = 10_000):
    for lo in range(start, start + rows, batch):
        ids = pa.array(range(lo, lo + batch), pa.int64())
        yield pa.table(
            {
                "id": ids,
                "s": pa.compute.cast(ids, pa.string()),
                "x": pa.compute.cast(ids, pa.float64()),
                "p": pa.compute.cast(pa.compute.bit_wise_and(ids, 3), pa.int32()),
            },
            schema=SCHEMA,
        )


def _write(table, start: int, rows: int):
    writer = table.new_writer()
    for b in _batches(start, rows):
        writer.write(b)
    return table.commit(writer.prepare_commit())


def test_four_appends_of_small_batches_make_one_file_per_partition_each(catalog):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    for i in range(4):
        _write(t, i * 400_000, 400_000)
    files = t.store.live_entries(t.latest_snapshot())
    assert len(files) == 4 * 4  # was 640 files of ~18 KB: one per 10,000-row batch and partition
    assert t.to_arrow().num_rows == 1_600_000
    assert sorted(pq.read_table(t.path + "/p=1").column("id").to_pylist())[:2] == [1, 5]


def test_files_roll_at_the_target_size_and_keep_exact_statistics(catalog):
    # Files roll between row groups (up to 262,144 rows each), so a small target gives a file per row group.
    t = catalog.create_table("db.r", SCHEMA, options={"target-file-size": "1 mb"})
    _write(t, 0, 600_000)
    entries = t.store.live_entries(t.latest_snapshot())
    assert len(entries) > 1
    assert sum(e.file.row_count for e in entries) == 600_000
    seqs = sorted((e.file.min_sequence_number, e.file.max_sequence_number) for e in entries)
    assert seqs[0][0] == 0 and seqs[-1][1] == 599_999
    assert all(a[1] + 1 == b[0] for a, b in zip(seqs, seqs[1:], strict=False))  # contiguous, no overlap
    # min/max pruning still finds exactly the file holding a value
    from engine.scan import predicate as P

    plan = t.plan(filter=P.equal("id", 550_000))
    hit = [f for s in plan.splits for f in s.files]
    assert 1 <= len(hit) < len(entries)
    assert t.to_arrow(filter=P.equal("id", 550_000)).num_rows >= 1


def test_abort_deletes_the_open_files(catalog):
    import os

    t = catalog.create_table("db.a", SCHEMA)
    writer = t.new_writer()
    for b in _batches(0, 300_000):
        writer.write(b)  # row groups already went to an open file
    writer.abort()
    data = [f for _d, _s, fs in os.walk(t.path) for f in fs if f.startswith("data-")]
    assert data == []


def test_the_zstd_level_option_reaches_the_parquet_writer(tmp_path):
    import pyarrow as pa
    import pytest

    from engine import open_catalog
    from engine.errors import InvalidArgumentError

    catalog = open_catalog(str(tmp_path))
    catalog.create_database("db")
    rows = pa.table({"v": [f"value {i % 5000} " * 4 for i in range(50_000)]})
    sizes = {}
    for level in (1, 19):
        t = catalog.create_table(
            f"db.z{level}", rows.schema, options={"file.compression.zstd-level": str(level)}
        )
        t.write_arrow(rows)
        sizes[level] = sum(f.file_size for s in t.plan().splits for f in s.files)
        assert t.to_arrow().column("v").to_pylist() == rows.column("v").to_pylist()
    assert sizes[19] < sizes[1]  # the level was used: a higher level compresses these rows smaller
    with pytest.raises(InvalidArgumentError, match="zstd level"):
        catalog.create_table("db.bad", rows.schema, options={"file.compression.zstd-level": "40"})
