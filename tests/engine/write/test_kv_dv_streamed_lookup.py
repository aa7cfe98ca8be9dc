"""The lookup compaction of deletion-vector tables streamed chunk by chunk (no JVM).

A unit with level-0 files and files above its output level is merged, looked up above and
written in key-ordered chunks (``engine.write.kv_deletion_vectors._looked_up_chunks``). With a
budget of a few rows every compaction runs on many chunks; the tables, their files and every
deletion vector must come out exactly as with a budget larger than the data (one chunk per key
section: the whole-unit merge), and the peak memory of a large lookup compaction must follow the
budget, not the unit.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.files.reader import read_data_file
from engine.merge import streaming
from engine.write import kv_deletion_vectors, kv_rolling
from tests.engine.write.test_kv_deletion_vectors import (
    ENGINES,
    SCHEMA,
    _assert_one_live_row_per_key_above_level0,
    _batch,
    _dvs_of,
    _rows,
)

WHOLE = 10_000_000  # a budget no test unit reaches: every section is one chunk


def _dv_table(catalog, name: str, engine: str, extra: dict[str, str] | None = None):
    opts = {"bucket": "1", "deletion-vectors.enabled": "true", **ENGINES[engine], **(extra or {})}
    return catalog.create_table(name, SCHEMA, primary_keys=["k"], options=opts)


def _layout(t) -> list[tuple]:
    """Every data file by what it holds (names differ between tables): bucket, level, rows, key
    range and the positions its deletion vector marks."""
    t = t.refresh()
    dvs = _dvs_of(t)
    out = []
    for split in t.plan().splits:
        for f in split.files:
            path = t.store.paths.data_file(t.store.partition_dir(()), split.bucket, f.file_name)
            keys = read_data_file(t.store, path, f, [t.schema.field("k")]).column("k").to_pylist()
            dv = dvs.get(f.file_name)
            marked = tuple(dv.positions().tolist()) if dv is not None else ()
            out.append((split.bucket, f.level, f.row_count, tuple(keys), marked))
    return sorted(out)


def _count_lookups(monkeypatch) -> list[int]:
    """Counts the chunk lookups of streamed units (the calls that pass a cache)."""
    calls: list[int] = []
    real = kv_deletion_vectors.lookup_above

    def counting(*args, **kwargs):
        if kwargs.get("cache") is not None:
            calls.append(args[3].num_rows)
        return real(*args, **kwargs)

    monkeypatch.setattr(kv_deletion_vectors, "lookup_above", counting)
    return calls


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    engine=st.sampled_from(list(ENGINES)),
    steps=st.lists(
        st.tuples(st.sampled_from(["upsert", "upsert", "delete", "compact"]),
                  st.lists(st.integers(0, 300), min_size=5, max_size=80)),
        min_size=1, max_size=5,
    ),
)
def test_chunked_lookup_compaction_equals_the_whole_unit_one(tmp_path_factory, engine, steps):
    from engine import open_catalog

    catalog = open_catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    extra = {"num-sorted-run.compaction-trigger": "3"}
    tables = {budget: _dv_table(catalog, f"db.t{budget}", engine, extra) for budget in (WHOLE, 16)}

    def apply(op: str, keys: list[int], i: int) -> None:
        for budget, t in tables.items():
            with pytest.MonkeyPatch.context() as m:
                m.setattr(streaming, "MERGE_CHUNK_ROWS", budget)
                if op == "compact":
                    t.refresh().compact(full=False)
                elif op == "delete":
                    t.refresh().write_arrow(_batch(keys, f"x{i}", ["-D"] * len(keys)))
                else:
                    t.refresh().write_arrow(_batch(keys, f"u{i}"))

    apply("upsert", list(range(0, 300, 2)), -1)
    for i, (op, keys) in enumerate(steps):
        keys = sorted(set(keys))
        if op == "delete" and engine == "aggregation":
            op = "upsert"  # (a -D of a sum is a retraction, not a delete)
        if op != "compact" and not keys:
            continue
        apply(op, keys, i)
        whole, chunked = tables[WHOLE], tables[16]
        assert _rows(chunked) == _rows(whole)
        assert _layout(chunked) == _layout(whole)
        _assert_one_live_row_per_key_above_level0(chunked)


@pytest.mark.parametrize("engine", ["partial-update", "deduplicate-seq", "aggregation"])
def test_a_lookup_unit_runs_on_many_chunks_and_marks_what_one_chunk_marks(catalog, monkeypatch, engine):
    """Written on top of a base in the top level, each write's level-0 file is a unit whose keys
    are looked up above its output level: with a 16-row budget in many chunks."""
    calls = _count_lookups(monkeypatch)
    whole, chunked = (_dv_table(catalog, f"db.{n}", engine) for n in ("whole", "chunked"))
    for i, keys in enumerate([range(0, 600, 2), range(0, 600, 3), range(1, 600, 5), range(0, 700, 7)]):
        for budget, t in ((WHOLE, whole), (16, chunked)):
            monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", budget)
            calls.clear()
            t.refresh().write_arrow(_batch(keys, f"w{i}"))
        if i:
            assert len(calls) > 5 and max(calls) <= 16, "the lookups ran per chunk of at most the budget"
        assert _rows(chunked) == _rows(whole)
        assert _layout(chunked) == _layout(whole)
    assert sum(d.cardinality for d in _dvs_of(chunked).values()) > 0
    _assert_one_live_row_per_key_above_level0(chunked)


def test_a_lookup_compaction_that_fails_midway_commits_nothing(catalog, monkeypatch):
    """A read failing after some chunks were looked up and written: the compaction fails and
    commits nothing (its DV marks die with it); run again, it gives the rows a twin table gets."""
    from engine.write.factory import new_writer

    twin, t = (_dv_table(catalog, f"db.{n}", "partial-update") for n in ("twin", "fail"))
    for table in (twin, t):
        table.write_arrow(_batch(range(0, 600, 2), "a"))
        w = new_writer(table.refresh().store, compact=False)  # left in level 0
        w.write(_batch(range(0, 600, 3), "b"))
        table.refresh().new_commit().commit(w.prepare_commit())
    twin.refresh().compact(full=False)
    layout, snapshot = _layout(t), t.refresh().latest_snapshot().id
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 16)
    real = kv_deletion_vectors.iter_data_file

    def failing(*args, **kwargs):
        for i, batch in enumerate(real(*args, **kwargs)):
            if i == 3:
                raise OSError("disk gone")
            yield batch

    calls = _count_lookups(monkeypatch)
    monkeypatch.setattr(kv_deletion_vectors, "iter_data_file", failing)
    with pytest.raises(OSError, match="disk gone"):
        t.refresh().compact(full=False)
    assert calls, "it failed after some chunks were looked up"
    assert t.refresh().latest_snapshot().id == snapshot and _layout(t) == layout
    monkeypatch.setattr(kv_deletion_vectors, "iter_data_file", real)
    t.refresh().compact(full=False)
    assert _rows(t) == _rows(twin) and _layout(t) == _layout(twin)
    assert sum(d.cardinality for d in _dvs_of(t).values()) > 0


_POOLS: list[pa.MemoryPool] = []
BASE_ROWS = 500_000
UNIT_RUNS, UNIT_ROWS = 4, 100_000


def test_peak_memory_of_a_lookup_compaction_follows_the_budget(catalog, monkeypatch):
    """A partial-update table: a base of 500,000 keys in the top level (small files), then four
    level-0 runs of 100,000 rows each over a part of its key range, compacted as one unit whose
    keys are looked up in the base. Merged whole, the unit's rows are held at once (and twice:
    read and merged); streamed with a 5,000-row budget, the peak Arrow allocation is a fraction of
    it (measured: 16.5 and 3.9 MB). Row groups are made small, as a Parquet reader decodes one
    whole per run and the writer holds one: so the budget is what the test sees."""
    monkeypatch.setattr(kv_rolling, "ROWS_PER_SLICE", 4_096)
    from engine.write.factory import new_writer

    calls = _count_lookups(monkeypatch)

    def peak(budget: int) -> int:
        t = _dv_table(catalog, f"db.mem{budget}", "partial-update",
                      {"write-only": "true", "target-file-size": "256kb"})
        t.write_arrow(_batch(range(0, 2 * BASE_ROWS, 2), "a"))
        t.refresh().compact(full=True)
        for run in range(UNIT_RUNS):
            w = new_writer(t.refresh().store, compact=False)
            w.write(_batch(range(run, run + 2 * UNIT_ROWS, 2), f"r{run}"))
            t.refresh().new_commit().commit(w.prepare_commit())
        monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", budget)
        calls.clear()
        default = pa.default_memory_pool()
        pool = pa.proxy_memory_pool(default)
        _POOLS.append(pool)  # never freed: buffers allocated through it may outlive the test
        pa.set_memory_pool(pool)
        try:
            t.refresh().compact(full=False)
        finally:
            pa.set_memory_pool(default)
        assert calls, "the unit went through the lookup"
        # every even key below 1,000,000 and the odd ones up to 200,001
        assert len(_rows(t)) == BASE_ROWS + UNIT_ROWS + 1
        return pool.max_memory()

    whole = peak(WHOLE)
    streamed = peak(5_000)
    assert streamed * 3 < whole, (streamed, whole)
