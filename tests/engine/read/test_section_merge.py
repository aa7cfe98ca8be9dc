"""Merge-on-read and compaction stream large key sections with the same rows as a whole merge,
and with bounded Arrow memory.

Tables get several overlapping sorted runs (level-0 writes, some compacted to higher levels,
upserts and deletes over composite keys). Each is read — and compacted — once with the default
merge budget (every section small: merged whole) and once with a budget of a few rows (every
section streamed, runs split mid-file and mid-batch); the rows must agree, and a streamed
compaction must write files a reader takes back unchanged.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.merge.streaming as streaming
import engine.read.section_merge as section_merge
import engine.write.compactor as compactor
import engine.write.kv_rolling as kv_rolling
from engine.files.reader import read_data_file
from engine.meta.binary_row import deserialize_row
from engine.scan.predicate import Leaf

SCHEMA = pa.schema([
    pa.field("k1", pa.int32(), nullable=False),
    pa.field("k2", pa.string(), nullable=False),
    ("v", pa.int64()),
    ("s", pa.string()),
    ("n", pa.int64()),
])
ENGINES = {
    "deduplicate": {},
    "deduplicate-seq": {"sequence.field": "n"},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                    "fields.n.aggregate-function": "max", "fields.n.ignore-retract": "true"},
    "first-row": {"merge-engine": "first-row"},
}


def _batch(keys, tag: int, deletes=()) -> pa.Table:
    keys = list(keys)
    return pa.table({
        "k1": pa.array([k % 5 for k in keys], pa.int32()),
        "k2": pa.array([f"key-{k:04d}" for k in keys]),
        "v": pa.array([None if (k + tag) % 6 == 0 else k * 10 + tag for k in keys], pa.int64()),
        "s": pa.array([None if (k * tag) % 4 == 0 else f"t{tag}" for k in keys]),
        "n": pa.array([(k * 7 + tag) % 9 for k in keys], pa.int64()),
        "rowkind": pa.array(["-D" if k in deletes else "+U" for k in keys]),
    })


def _rows(table, **kw) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.refresh().to_arrow(**kw).to_pylist())


def _build(catalog, name: str, engine: str, steps) -> object:
    opts = {"bucket": "1", "write-only": "true", **ENGINES[engine]}
    t = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["k1", "k2"], options=opts)
    t.write_arrow(_batch(range(0, 120, 2), 0).drop_columns(["rowkind"]))
    for i, (keys, deleted, compact) in enumerate(steps, start=1):
        if engine in ("first-row", "partial-update"):
            deleted = set()  # their tables refuse deletes without ignore-delete; first-row keeps firsts
        if keys:
            t.refresh().write_arrow(_batch(sorted(set(keys)), i, set(deleted)))
        if compact:
            t.refresh().compact(full=False)
    return t.refresh()


@st.composite
def histories(draw):
    engine = draw(st.sampled_from(sorted(ENGINES)))
    steps = draw(st.lists(
        st.tuples(st.lists(st.integers(0, 140), max_size=40), st.sets(st.integers(0, 140), max_size=8),
                  st.booleans()),
        min_size=1, max_size=5,
    ))
    return engine, steps, draw(st.integers(1, 9))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(histories())
def test_streamed_sections_read_and_compact_like_whole_ones(tmp_path_factory, monkeypatch, case):
    from engine import open_catalog

    engine, steps, budget = case
    catalog = open_catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    t = _build(catalog, "t", engine, steps)
    filt = Leaf("gt", "v", (300,))
    whole = _rows(t), _rows(t, columns=["k2", "s"], filter=filt)
    reference = _build(catalog, "reference", engine, steps)
    reference.compact(full=True)
    with monkeypatch.context() as m:
        m.setattr(streaming, "MERGE_CHUNK_ROWS", budget)
        assert (_rows(t), _rows(t, columns=["k2", "s"], filter=filt)) == whole
        t.compact(full=True)
        streamed_compaction = _rows(t)
    assert streamed_compaction == _rows(reference)
    if engine != "first-row":  # (first-row batch reads skip level 0: they see only compacted rows)
        assert streamed_compaction == whole[0]
    # The streamed compaction's files are sorted, key-unique and described exactly.
    t = t.refresh()
    store = t.store
    for split in t.plan().splits:
        for f in split.files:
            part_dir = store.partition_dir(split.partition_values)
            path = store.paths.data_file(part_dir, split.bucket, f.file_name)
            rows = read_data_file(store, path, f, [store.schema.field("k1"), store.schema.field("k2")])
            assert rows.num_rows == f.row_count
            keys = list(zip(rows.column("k1").to_pylist(), rows.column("k2").to_pylist(), strict=True))
            assert keys == sorted(set(keys))


def test_streamed_compaction_rolls_files_and_keeps_stats(catalog, monkeypatch):
    """A compaction streamed in chunks of 64 rows writes the same rows, rolled at the target size,
    each file's key range and row count from its own rows."""
    opts = {"bucket": "1", "write-only": "true", "target-file-size": "8kb"}
    t = catalog.create_table("db.roll", SCHEMA, primary_keys=["k1", "k2"], options=opts)
    for tag in range(4):
        t.refresh().write_arrow(_batch(range(tag, 3000, 3 + tag), tag))
    expected = _rows(t)
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 64)
    monkeypatch.setattr(kv_rolling, "ROWS_PER_SLICE", 256)  # the size is checked per row group
    t.refresh().compact(full=True)
    t = t.refresh()
    assert _rows(t) == expected
    store = t.store
    (split,) = t.plan().splits
    files = sorted(split.files, key=lambda f: f.min_sequence_number)
    assert len(files) > 1 and {f.level for f in files} == {store.options.num_levels - 1}
    assert sum(f.row_count for f in files) == len(expected)
    key_types = [store.schema.field(k).type for k in ("k1", "k2")]
    previous_max = None
    for f in sorted(files, key=lambda f: deserialize_row(f.min_key, key_types)):
        path = store.paths.data_file(store.partition_dir(()), 0, f.file_name)
        rows = read_data_file(store, path, f, [store.schema.field("k1"), store.schema.field("k2")])
        keys = list(zip(rows.column("k1").to_pylist(), rows.column("k2").to_pylist(), strict=True))
        assert rows.num_rows == f.row_count and keys == sorted(set(keys))
        assert (tuple(deserialize_row(f.min_key, key_types)), tuple(deserialize_row(f.max_key, key_types))) \
            == (keys[0], keys[-1])
        assert previous_max is None or previous_max < keys[0]
        previous_max = keys[-1]


@pytest.mark.parametrize("mode", ["read", "compact"])
def test_peak_arrow_memory_is_bounded_by_the_budget_not_the_section(catalog, monkeypatch, mode):
    """Five runs over one key range (one section of 400,000 rows): merged whole, every run is held
    at once; streamed with a 20,000-row budget, the peak Arrow allocation (a fresh proxy pool's
    high-water mark) is a small fraction of that. (A compaction's writer also holds up to one
    output row group: made small here, so that the budget is what the test sees.)"""
    monkeypatch.setattr(kv_rolling, "ROWS_PER_SLICE", 16_384)

    def peak(budget: int) -> int:
        table = _runs_table(catalog, f"db.mem_{mode}_{budget}")
        monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", budget)
        default = pa.default_memory_pool()
        pool = pa.proxy_memory_pool(default)
        _POOLS.append(pool)  # never freed: buffers allocated through it may outlive the test
        pa.set_memory_pool(pool)
        try:
            if mode == "read":
                builder = table.new_read_builder()
                reader = builder.new_read()
                rows = sum(part.num_rows for split in builder.new_scan().plan().splits
                           for part in reader.read(split))
                assert rows == RUN_ROWS
            else:
                table.compact(full=True)
        finally:
            pa.set_memory_pool(default)
        if mode == "compact":
            assert len(_rows(table)) == RUN_ROWS
        return pool.max_memory()

    whole = peak(10_000_000)
    streamed = peak(20_000)
    assert streamed * 4 < whole, (streamed, whole)


RUN_ROWS = 200_000
_POOLS: list[pa.MemoryPool] = []


def _runs_table(catalog, name: str, rows: int = RUN_ROWS):
    """A base run of ``rows`` keys and four update runs over the whole key range: one section."""
    opts = {"bucket": "1", "write-only": "true"}
    t = catalog.create_table(name, SCHEMA, primary_keys=["k1", "k2"], options=opts)
    t.write_arrow(_batch(range(rows), 0).drop_columns(["rowkind"]))
    for tag in range(1, 5):
        t.refresh().write_arrow(_batch(range(tag, rows, 2), tag))
    return t.refresh()


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
def test_streamed_full_compaction_of_a_deletion_vector_table(catalog, monkeypatch, engine):
    """A DV table's full compaction streams too (nothing above the top level to look up): each file
    is read minus its DV, batch by batch, and the result equals the whole-merge compaction's."""
    opts = {"bucket": "1", **ENGINES[engine]}
    dv_opts = {**opts, "deletion-vectors.enabled": "true"}
    tables = {name: catalog.create_table(f"db.{name}_{engine.replace('-', '_')}", SCHEMA,
                                         primary_keys=["k1", "k2"], options=o)
              for name, o in (("whole", dv_opts), ("streamed", dv_opts), ("plain", opts))}
    for t in tables.values():
        t.write_arrow(_batch(range(0, 600, 2), 0).drop_columns(["rowkind"]))
        for tag in range(1, 4):  # each write compacts level 0 up and marks the rows it supersedes
            deleted = set(range(tag, 600, 25)) if engine != "partial-update" else set()
            t.refresh().write_arrow(_batch(range(tag, 600, 3 + tag), tag, deleted))
    tables["whole"].refresh().compact(full=True)
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 5)
    streamed_sections = []
    real = section_merge.merge_sorted_runs

    def counting(runs, *args, **kwargs):
        streamed_sections.append(len(runs))
        return real(runs, *args, **kwargs)

    monkeypatch.setattr(section_merge, "merge_sorted_runs", counting)
    tables["streamed"].refresh().compact(full=True)
    assert streamed_sections and max(streamed_sections) > 1
    assert _rows(tables["streamed"]) == _rows(tables["whole"]) == _rows(tables["plain"])


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_streamed_full_compaction_changelog_and_first_row_lookup(catalog, monkeypatch, engine):
    """A full-compaction changelog diffed as the old top level and the new state stream by, and
    a first-row compaction's lookup of the keys kept above its output level streamed alongside,
    give the same changelog, files and rows as merging everything whole."""
    from engine.scan.incremental import ChangeReader, incremental_splits

    opts = {"bucket": "1", **ENGINES[engine]}
    if engine == "deduplicate":
        opts["changelog-producer"] = "full-compaction"
    else:  # universal picks below the top level: the lookup above the output level runs
        opts["num-sorted-run.compaction-trigger"] = "2"

    lookups = []
    real_lookup = compactor._without_keys_above

    def counting_lookup(*args, **kwargs):
        lookups.append(1)
        return real_lookup(*args, **kwargs)

    def history(name: str, budget: int | None):
        with monkeypatch.context() as m:
            if budget is not None:
                m.setattr(streaming, "MERGE_CHUNK_ROWS", budget)
                m.setattr(compactor, "_without_keys_above", counting_lookup)
            t = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["k1", "k2"], options=opts)
            t.write_arrow(_batch(range(0, 300, 2), 0).drop_columns(["rowkind"]))
            t.refresh().compact(full=True)
            start = t.refresh().latest_snapshot().id
            for tag in range(1, 5):
                deleted = set(range(tag, 300, 17)) if engine == "deduplicate" else set()
                t.refresh().write_arrow(_batch(range(tag * 3, 300 + tag * 20, 2 + tag), tag, deleted))
                if tag % 2 == 0:
                    t.refresh().compact(full=engine == "deduplicate")
            t = t.refresh()
            changes = None
            if engine == "deduplicate":
                splits = incremental_splits(t.store, start, t.latest_snapshot().id)
                rows = ChangeReader(t.store).read_all(splits).to_pylist()
                changes = sorted((tuple(r.values()) for r in rows), key=repr)
            levels = sorted((f.level, f.row_count) for s in t.plan().splits for f in s.files)
            return _rows(t), changes, levels

    whole = history(f"whole_{engine.replace('-', '_')}", None)
    streamed = history(f"streamed_{engine.replace('-', '_')}", 7)
    assert streamed == whole
    if engine == "deduplicate":
        assert whole[1], "the full compactions emitted changelog rows"
    else:
        assert lookups, "compactions below the top level looked up the keys kept above"


def test_a_streamed_compaction_that_fails_midway_commits_nothing(catalog, monkeypatch):
    """A read failing after some chunks were already written: the compaction raises, its open
    file is closed, nothing is committed and the table reads as before."""
    t = _runs_table(catalog, "db.fails", rows=3_000)
    before = _rows(t)
    snapshot = t.latest_snapshot().id
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 50)
    monkeypatch.setattr(kv_rolling, "ROWS_PER_SLICE", 64)
    real = section_merge.iter_data_file
    batches = []

    def failing(*args, **kwargs):
        for batch in real(*args, **kwargs):
            batches.append(batch.num_rows)
            if len(batches) == 40:
                raise OSError("disk gone")
            yield batch

    monkeypatch.setattr(section_merge, "iter_data_file", failing)
    with pytest.raises(OSError, match="disk gone"):
        t.refresh().compact(full=True)
    t = t.refresh()
    assert t.latest_snapshot().id == snapshot
    assert _rows(t) == before
