"""The streaming merge of sorted runs equals the whole-section merge, row for row.

Random runs (each sorted by the merge driver's own key order, so float and string keys with nulls,
NaN and -0.0 order as in files) share keys across runs and sometimes repeat a key inside a run;
sequence numbers grow across runs as the LSM gives them (sometimes tied), kinds include
retractions. Each run is cut into batches of random tiny sizes, so the merge bound moves inside
runs, and the concatenated chunks of :func:`merge_sorted_runs` must equal :func:`merge` of all
runs concatenated in run order, for every merge engine.
"""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import CorruptDataError
from engine.merge import streaming
from engine.merge.config import MergeConfig
from engine.merge.functions import key_sort_codes, merge
from engine.merge.streaming import align_sorted_runs, merge_sorted_runs, run_batch_rows

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"

# Key layouts: (arrow fields of the key, a strategy of one key tuple)
KEY_LAYOUTS = {
    "int": ([pa.field("k", pa.int64(), nullable=False)], st.tuples(st.integers(-5, 20))),
    "composite": (
        [pa.field("k1", pa.int32(), nullable=False), pa.field("k2", pa.string())],
        st.tuples(st.integers(0, 3), st.sampled_from([None, "", "a", "ab", "b", "é", "a\x00"])),
    ),
    "float": (
        [pa.field("k", pa.float64())],
        st.tuples(st.sampled_from([None, -1.5, -0.0, 0.0, 2.0, math.inf, math.nan])),
    ),
    "binary_long": (
        [pa.field("k", pa.binary())],
        st.tuples(st.sampled_from([b"", b"x" * 70, b"x" * 70 + b"y", b"z" * 65, b"a"])),
    ),
}

VALUE_FIELDS = [pa.field("v", pa.int64()), pa.field("s", pa.string()), pa.field("sf", pa.int64())]

CONFIGS = {
    "deduplicate": (MergeConfig(engine="deduplicate"), False),
    "deduplicate-seqfield": (MergeConfig(engine="deduplicate", sequence_fields=("sf",)), False),
    "first-row": (MergeConfig(engine="first-row", ignore_delete=True), False),
    "partial-update": (MergeConfig(engine="partial-update"), True),
    "partial-update-ignore-delete": (MergeConfig(engine="partial-update", ignore_delete=True), False),
    "aggregation": (
        MergeConfig(engine="aggregation", field_aggregates={"v": "sum", "s": "last_non_null_value"}),
        False,
    ),
}


def _sorted_by_key(table: pa.Table, keys: list[str]) -> pa.Table:
    """Stable sort in the merge driver's key order (the order files are written in)."""
    if table.num_rows == 0:
        return table
    codes = key_sort_codes([table.column(k) for k in keys])
    order = np.lexsort([np.arange(table.num_rows), *reversed(codes)])
    return table.take(pa.array(order))


@st.composite
def scenarios(draw):
    layout = draw(st.sampled_from(sorted(KEY_LAYOUTS)))
    key_fields, key_strategy = KEY_LAYOUTS[layout]
    keys = [f.name for f in key_fields]
    config_name = draw(st.sampled_from(sorted(CONFIGS)))
    config, adds_only = CONFIGS[config_name]
    schema = pa.schema([pa.field(SEQ, pa.int64(), nullable=False), pa.field(KIND, pa.int8(), nullable=False),
                        *key_fields, *VALUE_FIELDS])
    num_runs = draw(st.integers(1, 5))
    seq = 0
    runs = []
    for _ in range(num_runs):
        run_keys = draw(st.lists(key_strategy, max_size=14))
        if not draw(st.booleans()):  # most runs hold a key once (a merged run); some repeat keys
            seen, unique = set(), []
            for k in run_keys:
                marker = tuple("nan" if isinstance(x, float) and math.isnan(x) else x for x in k)
                if marker not in seen:
                    seen.add(marker)
                    unique.append(k)
            run_keys = unique
        rows = []
        for k in run_keys:
            if draw(st.integers(0, 4)) > 0:  # sometimes a sequence number is tied with the last
                seq += 1
            kind = 0 if adds_only else draw(st.sampled_from([0, 0, 2, 1, 3]))
            v = draw(st.one_of(st.none(), st.integers(-3, 3)))
            s = draw(st.sampled_from([None, "", "x", "yy"]))
            sf = draw(st.integers(0, 3))
            rows.append((seq, kind, *k, v, s, sf))
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
        arrays = [pa.array(list(c), f.type) for c, f in zip(columns, schema, strict=True)]
        table = pa.Table.from_arrays(arrays, schema=schema)
        runs.append(_sorted_by_key(table, keys))
    batch_sizes = [draw(st.lists(st.integers(1, 4), min_size=1, max_size=6)) for _ in runs]
    drop_deletes = draw(st.booleans())
    return keys, config, runs, batch_sizes, drop_deletes


def _batches(table: pa.Table, sizes: list[int]):
    offset, i = 0, 0
    while offset < table.num_rows:
        size = sizes[i % len(sizes)]
        yield table.slice(offset, size)
        offset += size
        i += 1


def _same(a: pa.Table, b: pa.Table) -> bool:
    # NaN != NaN in to_pylist comparisons: compare through a null-safe, NaN-aware representation.
    def norm(t):
        return [tuple("nan" if isinstance(x, float) and math.isnan(x) else x for x in row.values())
                for row in t.to_pylist()]
    return a.schema.equals(b.schema) and norm(a) == norm(b)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_streaming_merge_equals_whole_section_merge(case):
    keys, config, runs, batch_sizes, drop_deletes = case
    expected = merge(pa.concat_tables(runs), keys, config, drop_deletes=drop_deletes)
    streams = [_batches(run, sizes) for run, sizes in zip(runs, batch_sizes, strict=True)]
    chunks = list(merge_sorted_runs(streams, keys, config, drop_deletes=drop_deletes))
    got = pa.concat_tables(chunks) if chunks else expected.schema.empty_table()
    if expected.num_rows == 0:
        assert got.num_rows == 0
    else:
        assert _same(got, expected)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_aligned_steps_partition_every_run_and_never_split_a_key(case):
    keys, _, runs, batch_sizes, _ = case
    streams = [_batches(run, sizes) for run, sizes in zip(runs, batch_sizes, strict=True)]
    steps = list(align_sorted_runs(streams, keys))
    for i, run in enumerate(runs):
        parts = [step[i] for step in steps if step[i] is not None]
        got = pa.concat_tables(parts) if parts else run.schema.empty_table()
        assert _same(got, run)
    step_of: dict = {}
    for n, step in enumerate(steps):
        assert any(p is not None and p.num_rows for p in step)
        for part in step:
            for row in (part.select(keys).to_pylist() if part is not None else []):
                marker = tuple(_key_marker(x) for x in row.values())
                assert step_of.setdefault(marker, n) == n, "a key's rows are in one step"


def _key_marker(x):
    """A hashable stand-in with Paimon's key equality (-0.0 and 0.0 differ, every NaN is equal)."""
    if isinstance(x, float):
        return ("nan",) if math.isnan(x) else ("float", x, math.copysign(1.0, x))
    return x


def test_streaming_merge_yields_several_chunks_in_key_order():
    """Many runs over one key range, read 3 rows at a time: chunks are bounded and ordered."""
    schema = pa.schema([pa.field(SEQ, pa.int64()), pa.field(KIND, pa.int8()), pa.field("k", pa.int64()),
                        pa.field("v", pa.int64())])
    runs = []
    for r in range(4):
        k = np.arange(r, 1000, 2, dtype=np.int64)  # overlapping key ranges, interleaved keys
        runs.append(pa.table([np.full(len(k), r, np.int64), np.zeros(len(k), np.int8), k, k * 10 + r],
                             schema=schema))
    config = MergeConfig()
    expected = merge(pa.concat_tables(runs), ["k"], config, drop_deletes=True)
    # No read growth: every run reads one 3-row batch at a time.
    chunks = list(merge_sorted_runs([_batches(t, [3]) for t in runs], ["k"], config, drop_deletes=True,
                                    chunk_rows=0))
    assert len(chunks) > 100
    assert max(c.num_rows for c in chunks) <= 12
    got = pa.concat_tables(chunks)
    assert got.equals(expected)
    assert got.column("k").to_pylist() == list(range(1000))
    # Runs that bound steps read more (up to 60 rows together beyond a batch each): fewer, bigger
    # chunks, still bounded and in key order.
    grown = list(merge_sorted_runs([_batches(t, [3]) for t in runs], ["k"], config, drop_deletes=True,
                                   chunk_rows=60))
    assert len(grown) < len(chunks)
    assert max(c.num_rows for c in grown) <= 60 + 4 * 3
    assert pa.concat_tables(grown).equals(expected)


def test_a_dense_run_among_many_sparse_ones_streams_in_few_steps():
    """A base run holding every even key and 40 small runs spread over the same range (the layout
    of a compaction after many writers): the runs are grouped (more than GROUP_FANOUT) and the base
    reads more each time it bounds a step, so the merge takes few steps, not one per batch."""
    schema = pa.schema([pa.field(SEQ, pa.int64()), pa.field(KIND, pa.int8()), pa.field("k", pa.int64()),
                        pa.field("v", pa.int64())])
    rng = np.random.default_rng(7)
    base_keys = np.arange(0, 20_000, 2, dtype=np.int64)
    runs = [pa.table([np.zeros(len(base_keys), np.int64), np.zeros(len(base_keys), np.int8), base_keys,
                      base_keys], schema=schema)]
    for r in range(40):
        k = np.sort(rng.choice(20_000, 50, replace=False)).astype(np.int64)
        runs.append(pa.table([np.full(len(k), r + 1, np.int64), np.zeros(len(k), np.int8), k, k + r],
                             schema=schema))
    config = MergeConfig()
    expected = merge(pa.concat_tables(runs), ["k"], config, drop_deletes=True)
    chunks = list(merge_sorted_runs([_batches(t, [25]) for t in runs], ["k"], config, drop_deletes=True,
                                    chunk_rows=4_096))
    assert pa.concat_tables(chunks).equals(expected)
    assert len(chunks) < 100  # one 25-row batch of the base per step would take 400


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(0, 8))
def test_grouped_runs_merge_like_the_whole_section(case, chunk_rows):
    """With a fan-out of 2 every scenario of more than two runs is merged through groups (each a
    sorted run of its own, level by level), with small read growth: still equal to the whole merge."""
    keys, config, runs, batch_sizes, drop_deletes = case
    expected = merge(pa.concat_tables(runs), keys, config, drop_deletes=drop_deletes)
    streams = [_batches(run, sizes) for run, sizes in zip(runs, batch_sizes, strict=True)]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(streaming, "GROUP_FANOUT", 2)
        chunks = list(merge_sorted_runs(streams, keys, config, drop_deletes=drop_deletes,
                                        chunk_rows=chunk_rows))
    got = pa.concat_tables(chunks) if chunks else expected.schema.empty_table()
    if expected.num_rows == 0:
        assert got.num_rows == 0
    else:
        assert _same(got, expected)


def test_a_run_out_of_key_order_is_reported_not_merged_wrongly():
    schema = pa.schema([pa.field(SEQ, pa.int64()), pa.field(KIND, pa.int8()), pa.field("k", pa.int64())])
    good = pa.table([[1, 1, 1], [0, 0, 0], [1, 5, 9]], schema=schema)
    bad = pa.table([[2, 2, 2], [0, 0, 0], [2, 1, 3]], schema=schema)
    with pytest.raises(CorruptDataError, match="not in key order"):
        list(merge_sorted_runs([_batches(good, [2]), _batches(bad, [3])], ["k"], MergeConfig(),
                               drop_deletes=True))


def test_run_batch_rows_share_the_chunk_between_runs():
    assert run_batch_rows(4, 1_000_000) == 250_000
    assert run_batch_rows(1_000, 1_000_000) == 4_096  # a floor keeps steps worth their overhead
    assert run_batch_rows(3, 5) == 5  # tiny budgets (tests) read tiny batches


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(0, 8))
def test_runs_combined_through_scratch_files_merge_like_the_whole_section(case, chunk_rows):
    """More than SPILL_RUNS runs are first combined into sorted scratch files, group by group (here
    2 and 2, so every scenario of three runs or more spills): the same rows, and no file is left."""
    keys, config, runs, batch_sizes, drop_deletes = case
    expected = merge(pa.concat_tables(runs), keys, config, drop_deletes=drop_deletes)
    streams = [_batches(run, sizes) for run, sizes in zip(runs, batch_sizes, strict=True)]
    with tempfile.TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as m:
        m.setattr(streaming, "GROUP_FANOUT", 2)
        m.setattr(streaming, "SPILL_RUNS", 2)
        m.setattr(tempfile, "tempdir", scratch)
        chunks = list(merge_sorted_runs(streams, keys, config, drop_deletes=drop_deletes,
                                        chunk_rows=chunk_rows))
        assert os.listdir(scratch) == []
    got = pa.concat_tables(chunks) if chunks else expected.schema.empty_table()
    if expected.num_rows == 0:
        assert got.num_rows == 0
    else:
        assert _same(got, expected)


def test_a_failed_merge_leaves_no_scratch_file(monkeypatch, tmp_path):
    schema = pa.schema([pa.field(SEQ, pa.int64()), pa.field(KIND, pa.int8()), pa.field("k", pa.int64())])
    good = [pa.table([[i], [0], [i]], schema=schema) for i in range(5)]
    bad = pa.table([[9, 9], [0, 0], [5, 1]], schema=schema)  # out of key order
    monkeypatch.setattr(streaming, "GROUP_FANOUT", 2)
    monkeypatch.setattr(streaming, "SPILL_RUNS", 2)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(CorruptDataError):
        list(merge_sorted_runs([[t] for t in [*good, bad]], ["k"], MergeConfig(), drop_deletes=True))
    assert os.listdir(tmp_path) == []


def test_many_small_runs_are_packed_into_sorted_scratch_runs_around_a_big_one(monkeypatch, tmp_path):
    """300 small runs (the level-0 files of a write by many tasks; small: at most chunk_rows / 16
    rows) with a big run among them: the small ones are packed, in run order, into scratch runs of
    at most ``chunk_rows`` rows, each sorted once; the big run keeps its place; the rows equal the
    whole merge (a key's rows of several runs keep their run order: later runs win)."""
    schema = pa.schema([pa.field(SEQ, pa.int64()), pa.field(KIND, pa.int8()), pa.field("k", pa.int64()),
                        pa.field("v", pa.int64())])
    rng = np.random.default_rng(11)
    runs = []
    for r in range(300):
        if r == 150:
            k = np.arange(0, 3_000, 3, dtype=np.int64)  # the big run
        else:
            k = np.sort(rng.choice(3_000, 10, replace=False)).astype(np.int64)
        runs.append(pa.table([np.full(len(k), r, np.int64), np.zeros(len(k), np.int8), k,
                              np.full(len(k), r, np.int64)], schema=schema))
    stretches: list[pa.Table] = []
    real = streaming._sorted_stretch

    def recorded(tables, keys):
        stretches.append(real(tables, keys))
        return stretches[-1]

    monkeypatch.setattr(streaming, "_sorted_stretch", recorded)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = MergeConfig()
    expected = merge(pa.concat_tables(runs), ["k"], config, drop_deletes=True)
    chunks = list(merge_sorted_runs([_batches(t, [7]) for t in runs], ["k"], config, drop_deletes=True,
                                    chunk_rows=200))
    assert pa.concat_tables(chunks).equals(expected)
    assert len(stretches) == 16  # 149 small runs before the big one (8 stretches), 150 after (8)
    assert all(s.num_rows <= 200 for s in stretches)
    assert os.listdir(tmp_path) == []


def test_a_small_run_out_of_key_order_is_reported_when_packed(monkeypatch):
    schema = pa.schema([pa.field(SEQ, pa.int64()), pa.field(KIND, pa.int8()), pa.field("k", pa.int64())])
    good = [pa.table([[i], [0], [i]], schema=schema) for i in range(5)]
    bad = pa.table([[9, 9], [0, 0], [5, 1]], schema=schema)
    monkeypatch.setattr(streaming, "SPILL_RUNS", 2)
    with pytest.raises(CorruptDataError, match="not in key order"):
        list(merge_sorted_runs([[t] for t in [*good, bad, *good]], ["k"], MergeConfig(), drop_deletes=True))


def test_many_big_runs_are_copied_to_scratch_files_beyond_the_first_few(monkeypatch, tmp_path):
    """100 runs too big to pack: the first GROUP_FANOUT stay streams (each holding only the rows
    read to tell its size), the other 84 are copied to scratch files as they are read, so memory
    does not grow with their number; the rows equal the whole merge."""
    schema = pa.schema([pa.field(SEQ, pa.int64()), pa.field(KIND, pa.int8()), pa.field("k", pa.int64())])
    runs = [
        pa.table([np.full(40, r, np.int64), np.zeros(40, np.int8), np.arange(r, r + 400, 10, dtype=np.int64)],
                 schema=schema)
        for r in range(100)
    ]
    copied: list[str] = []
    real = streaming._spilled

    def recorded(run, scratch):
        copied.append(scratch)
        return real(run, scratch)

    monkeypatch.setattr(streaming, "_spilled", recorded)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = MergeConfig()
    expected = merge(pa.concat_tables(runs), ["k"], config, drop_deletes=True)
    streams = [_batches(t, [4]) for t in runs]
    direct = tmp_path / "direct"
    direct.mkdir()
    packed = streaming._packed_small_runs(streams, ["k"], 32, str(direct))  # small: at most 2 rows
    assert len(packed) == 100 and len(copied) == 100 - streaming.GROUP_FANOUT
    copied.clear()
    chunks = list(merge_sorted_runs([_batches(t, [4]) for t in runs], ["k"], config, drop_deletes=True,
                                    chunk_rows=32))
    assert pa.concat_tables(chunks).equals(expected)
    assert os.listdir(tmp_path) == ["direct"]
