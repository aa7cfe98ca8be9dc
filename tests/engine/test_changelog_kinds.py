"""The row kinds a stream of a primary-key table sees per changelog producer (docs/changelog.md)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine import open_catalog


@pytest.mark.parametrize(("producer", "expected"), [
    ("none", [("+I", 1, "a2"), ("-D", 2, "b"), ("+U", 3, "c")]),
    ("input", [("+I", 1, "a2"), ("-D", 2, "b"), ("-U", 3, "c"), ("+U", 3, "c")]),
    ("lookup", [("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b"), ("+I", 3, "c")]),
    # the first full compaction: the whole top level, as inserts (key 2 was deleted before it)
    ("full-compaction", [("+I", 1, "a2"), ("+I", 3, "c")]),
])
def test_changelog_kinds_per_producer(tmp_path, producer, expected):
    cat = open_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                         options={"changelog-producer": producer, "bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    start = t.latest_snapshot().id
    t.write_arrow(pa.table({"id": [1], "v": ["a2"]}))                               # an upsert
    t.write_arrow(pa.table({"id": [2], "v": ["b"], "rowkind": ["-D"]}))             # a delete
    t.write_arrow(pa.table({"id": [3, 3], "v": ["c", "c"], "rowkind": ["-U", "+U"]}))
    if producer == "full-compaction":
        t.compact(full=True)
    t = t.refresh()
    builder = t.new_read_builder()
    plan = builder.new_incremental(f"{start},{t.latest_snapshot().id}",
                                   "delta" if producer == "none" else "changelog")
    read = builder.new_read()
    got = [(r["rowkind"], r["id"], r["v"])
           for s in plan.splits() for b in read.read(s) for r in b.to_pylist()]
    assert got == expected
