"""The incremental diff of two primary-key states, streamed bucket by bucket in key order.

``diff_key_ordered`` must give the rows and kinds ``diff_changes`` gives on the whole states:
checked as a property over states cut into tiny key-ordered pieces and spread over groups (keys
may change group, as in a bucket rescale), through ``incremental-between`` diffs of real tables
read in 16-row merge chunks, and by the peak memory of a diff of a table of many files.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import open_catalog
from engine.errors import CorruptDataError, InvalidArgumentError
from engine.merge import streaming
from engine.scan import incremental
from engine.scan.incremental import ROWKIND, diff_changes, diff_key_ordered, resolve_between
from engine.write import kv_rolling

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _sorted(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _pieces(table: pa.Table, sizes: list[int]) -> list[pa.Table]:
    """``table`` (sorted by key) as a stream of pieces of the given sizes (cycled)."""
    out, start, i = [], 0, 0
    while start < table.num_rows:
        n = sizes[i % len(sizes)] if sizes else table.num_rows
        out.append(table.slice(start, n))
        start, i = start + n, i + 1
    return out


states = st.dictionaries(st.integers(0, 60), st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", None])),
                         max_size=50)


@settings(max_examples=150, deadline=None)
@given(before=states, after=states, sizes=st.lists(st.integers(1, 5), max_size=4),
       groups=st.integers(1, 3), moved=st.booleans())
def test_streamed_diff_equals_the_whole_diff(before, after, sizes, groups, moved):
    """Each state: key -> (group, value); a key's group may differ between the two (``moved``)."""

    def side(state: dict, shift: int) -> tuple[pa.Table, list[list[pa.Table]]]:
        keys = sorted(state)
        whole = pa.table({"k": pa.array(keys, pa.int64()), "v": [state[k][1] for k in keys]}, schema=SCHEMA)
        of = [(state[k][0] + shift) % groups for k in keys]
        parts = [whole.filter(pa.array([g == i for g in of])) if keys else whole for i in range(groups)]
        return whole, [_pieces(p, sizes) for p in parts]

    b_whole, b_groups = side(before, 0)
    a_whole, a_groups = side(after, 1 if moved else 0)
    streamed = diff_key_ordered([([b], [a]) for b, a in zip(b_groups, a_groups, strict=True)], ["k"], SCHEMA)
    whole = diff_changes(b_whole, a_whole, ["k"])
    assert streamed.schema == whole.schema
    assert _sorted(streamed) == _sorted(whole)
    kinds = streamed.column(ROWKIND).to_pylist()
    assert kinds == sorted(kinds, key=lambda k: k not in ("-D", "-U")), "removals first"


def test_several_streams_per_side_and_errors():
    t = pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}, schema=SCHEMA)
    u = pa.table({"k": pa.array([2, 4], pa.int64()), "v": ["B", "d"]}, schema=SCHEMA)
    out = diff_key_ordered([([iter([t.slice(0, 2)]), iter([t.slice(2)])], [iter([u])])], ["k"], SCHEMA)
    assert _sorted(out) == _sorted(diff_changes(t, u, ["k"]))
    with pytest.raises(CorruptDataError, match="not in key order"):
        diff_key_ordered([([iter([t.take([2, 0, 1])])], [iter([u])])], ["k"], SCHEMA)
    lists = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.list_(pa.int64()))])
    rows = pa.table({"k": pa.array([1], pa.int64()), "v": [[1]]}, schema=lists)
    with pytest.raises(InvalidArgumentError, match="cannot compare rows"):
        diff_key_ordered([([iter([rows])], [iter([rows])])], ["k"], lists)
    assert diff_key_ordered([], ["k"], SCHEMA).num_rows == 0


def _table(tmp_path, name: str, options: dict[str, str]):
    cat = open_catalog(str(tmp_path / name))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"], options=options)


def _batch(keys, tag: str, kinds=None) -> pa.Table:
    keys = list(keys)
    cols = {"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys]}
    if kinds is not None:
        cols["rowkind"] = kinds
    return pa.table(cols)


def _whole_diff(t, between: str) -> pa.Table:
    """The diff as it was computed before streaming: both states read whole, then diffed (without
    the ``-U`` rows, which Paimon's incremental diff does not emit; every row here was upserted, so
    the end state stores a changed row as ``+I``)."""
    rng = resolve_between(t.store, between, "diff")

    def state(snapshot):
        if snapshot is None:
            return t.schema.arrow_schema().empty_table()
        b = t.new_read_builder().at(snapshot_id=snapshot.id)
        return b.new_read().to_arrow(b.new_scan().plan().splits)

    changes = diff_changes(state(rng.start), state(rng.end), ["k"])
    changes = changes.filter(pc.not_equal(changes.column("rowkind"), "-U"))
    return changes.set_column(0, "rowkind", pc.replace_substring(changes.column("rowkind"), "+U", "+I"))


@pytest.mark.parametrize("options", [
    {"bucket": "2"},
    {"bucket": "2", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"bucket": "1", "write-only": "true"},  # level 0 left unmerged: sections of many runs
    {"bucket": "2", "deletion-vectors.enabled": "true"},  # read whole (not in key order)
], ids=["dedup", "partial-update", "write-only", "deletion-vectors"])
def test_incremental_between_diff_streams_in_small_chunks(tmp_path, monkeypatch, options):
    t = _table(tmp_path, "w", options)
    t.write_arrow(_batch(range(300), "a"))
    t.refs.tags.create("t1", t.latest_snapshot().id)
    t.refresh().write_arrow(_batch(range(0, 300, 7), "b"))
    t.refresh().write_arrow(_batch(range(1, 300, 11), "c", ["-D"] * len(range(1, 300, 11))))
    t.refresh().write_arrow(_batch(range(290, 340), "d"))
    t.refresh().write_arrow(_batch(range(0, 300, 13), "a"))  # back to the t1 rows: no change
    t.refs.tags.create("t2", t.refresh().latest_snapshot().id)
    steps: list[int] = []
    real = incremental.unmatched_rows

    def counting(before, after):
        steps.append(before.num_rows + after.num_rows)
        return real(before, after)

    monkeypatch.setattr(incremental, "unmatched_rows", counting)
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 16)
    t2 = t.refresh().refs.tags.get("t2").snapshot.id
    for between in ("t1,t2", f"0,{t2}", f"1,{t2}"):
        t = t.refresh()
        got = t.new_read_builder().new_incremental(between, "diff").diff()
        expected = _whole_diff(t, between)
        assert got is not None and _sorted(got) == _sorted(expected), between
    assert t.new_read_builder().new_incremental("t1,t1", "diff").diff() is None  # equal ends: nothing
    if "deletion-vectors.enabled" not in options:
        assert len(steps) > 10, "the diff ran in many key-aligned steps"
    got = _sorted(t.new_read_builder().with_projection(["v"]).new_incremental("t1,t2", "diff").diff())
    assert got == sorted((r[0], r[2]) for r in _sorted(_whole_diff(t, "t1,t2")))


POOLS: list[pa.MemoryPool] = []


def test_peak_memory_of_a_streamed_diff_follows_the_files_not_the_table(tmp_path, monkeypatch):
    """400,000 rows in small files over 4 buckets, 2% of them changed between two tags: the whole
    diff holds both states (and groups them); the streamed one holds a merge chunk (10,000 rows
    here) or a file per state and the changes (measured: 32.3 and 2.1 MB)."""
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 10_000)
    monkeypatch.setattr(kv_rolling, "ROWS_PER_SLICE", 4_096)  # (files roll at a row group's end)
    t = _table(tmp_path, "m", {"bucket": "4", "target-file-size": "128kb"})
    t.write_arrow(_batch(range(400_000), "value-"))
    t.refresh().compact(full=True)  # (a compaction rolls files at the target size; a flush does not)
    t.refs.tags.create("t1", t.refresh().latest_snapshot().id)
    t.refresh().write_arrow(_batch(range(0, 400_000, 50), "other-"))
    t.refs.tags.create("t2", t.refresh().latest_snapshot().id)
    t = t.refresh()

    def peak(compute) -> tuple[int, pa.Table]:
        default = pa.default_memory_pool()
        pool = pa.proxy_memory_pool(default)
        POOLS.append(pool)  # never freed: buffers allocated through it may outlive the test
        pa.set_memory_pool(pool)
        try:
            out = compute()
        finally:
            pa.set_memory_pool(default)
        return pool.max_memory(), out

    whole, expected = peak(lambda: _whole_diff(t, "t1,t2"))
    streamed, got = peak(lambda: t.new_read_builder().new_incremental("t1,t2", "diff").diff())
    assert got.num_rows == 8_000 and _sorted(got) == _sorted(expected)  # the 8,000 new rows (+U)
    assert streamed * 4 < whole, (streamed, whole)
