"""The stream reader hands Spark few large Arrow batches, not one per small change file (no JVM needed)."""

from __future__ import annotations

import pyarrow as pa

from sqlext.source.requests import ReadRequest
from sqlext.source.stream import BATCH_ROWS, DyntableStreamReader

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _commit(table, lo: int, n: int) -> None:
    ids = list(range(lo, lo + n))
    table.write_arrow(pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA))


def _read_parts(warehouse: str, **extra: str) -> list[list[pa.RecordBatch]]:
    options = {"warehouse": warehouse, "table": "db.s", "scan.mode": "from-snapshot", "scan.snapshot-id": "1",
               **extra}
    reader = DyntableStreamReader(ReadRequest.from_options(options))
    start = reader.initialOffset()
    parts = reader.partitions(start, reader.latestOffset(start))
    return [list(reader.read(p)) for p in parts]


def _read(warehouse: str, **extra: str) -> list[pa.RecordBatch]:
    return [b for part in _read_parts(warehouse, **extra) for b in part]


def test_small_append_commits_arrive_in_few_batches_in_commit_order(warehouse, catalog):
    t = catalog.create_table("db.s", SCHEMA)
    for i in range(30):
        _commit(t, i * 5_000, 5_000)  # 30 files of 5,000 rows, one per commit
    parts = _read_parts(warehouse)
    batches = [b for part in parts for b in part]
    assert sum(b.num_rows for b in batches) == 150_000
    for part in parts:  # was one batch per file
        assert len(part) == -(-sum(b.num_rows for b in part) // BATCH_ROWS)
    assert len(batches) < 30
    ids = pa.concat_arrays([b.column("id") for b in batches]).to_pylist()
    assert sorted(ids) == list(range(150_000))
    assert all(b.schema.names == ["id", "v"] for b in batches)


def test_primary_key_changes_keep_their_order_and_kinds(warehouse, catalog):
    t = catalog.create_table("db.s", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for _ in range(10):
        _commit(t, 0, 100)  # the same keys updated ten times
    batches = _read(warehouse, **{"read.changelog": "true"})
    assert len(batches) == 1  # ten 100-row change files combined
    rows = batches[0].to_pydict()
    assert len(rows["id"]) == 1_000
    assert rows["v"][-100:] == [f"v{i}" for i in range(100)]


def test_scan_mode_is_parsed_by_the_option_registry_and_the_table_sets_the_default(warehouse, catalog):
    import pytest

    from engine.errors import InvalidArgumentError

    t = catalog.create_table("db.s", SCHEMA, options={"scan.mode": "latest"})
    _commit(t, 0, 10)

    def reader(**extra: str) -> DyntableStreamReader:
        return DyntableStreamReader(
            ReadRequest.from_options({"warehouse": warehouse, "table": "db.s", **extra})
        )

    assert reader().mode == "latest"  # the table's option
    assert reader(**{"scan.mode": "FULL"}).mode == "full"  # the statement's wins; case-insensitive
    with pytest.raises(InvalidArgumentError, match="'scan.mode' = 'sideways' is invalid: expected one of"):
        reader(**{"scan.mode": "sideways"})
    with pytest.raises(InvalidArgumentError, match="cannot start a stream"):
        reader(**{"scan.mode": "latest-delta"})
    assert reader(**{"scan.mode": "compacted-full"}).mode == "compacted-full"
