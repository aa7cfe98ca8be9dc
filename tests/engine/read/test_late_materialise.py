"""Filtered merge-on-read with late materialisation gives exactly the plain merge's rows.

The oracle is the reader itself without a filter (every section merged with all its columns) and
the filter applied afterwards. Tables get several overlapping runs with upserts, ``-U``/``+U``
pairs and deletes, composite keys and nulls; the merge budget is lowered to a few rows, so every
section holds files "bigger than a row group" (the reader's condition for reading late) and is
streamed in key-aligned steps. Engines whose merged row is not one input row (partial-update,
aggregation) must fall back to the plain merge; so must reads with metadata columns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.read.late_materialise as late
import engine.read.split_reader as split_reader
from engine.lsm.intervals import partition_by_key_intervals
from engine.lsm.key_order import key_range_decoder
from engine.merge import streaming
from engine.meta.file_formats import read_rows
from engine.read.late_materialise import merge_section_late
from engine.read.section_merge import merge_section
from engine.read.split_reader import SplitReader
from engine.scan import predicate as P
from engine.scan.predicate import filter_table

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
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                    "fields.n.aggregate-function": "max", "fields.n.ignore-retract": "true"},
}
LATE = ("deduplicate", "deduplicate-seq", "first-row")
_names = iter(range(10**6))


def _batch(keys, tag: int, kinds) -> pa.Table:
    keys = list(keys)
    return pa.table({
        "k1": pa.array([k % 3 for k in keys], pa.int32()),
        "k2": pa.array([f"key-{k:03d}" for k in keys]),
        "v": pa.array([None if (k + tag) % 7 == 0 else (k * 13 + tag * 5) % 20 for k in keys], pa.int64()),
        "s": pa.array([None if (k * tag) % 5 == 0 else f"t{tag}-{k % 4}" for k in keys]),
        "n": pa.array([(k * 7 + tag) % 9 for k in keys], pa.int64()),
        "rowkind": pa.array(kinds),
    })


def _table(catalog, engine: str, writes, options=None):
    options = {"bucket": "1", "write-only": "true", **ENGINES[engine], **(options or {})}
    t = catalog.create_table(f"db.late{next(_names)}", SCHEMA, primary_keys=["k1", "k2"], options=options)
    for tag, (keys, kinds) in enumerate(writes, start=1):
        t.write_arrow(_batch(keys, tag, kinds))
    return t.refresh()


def _read(t, predicate, columns=None, **kw) -> pa.Table:
    reader = SplitReader(t.store, columns, predicate, **kw)
    parts = [x for s in t.plan().splits for x in reader.read(s)]
    return pa.concat_tables(parts) if parts else reader.output_schema.empty_table()


def _check(t, predicate, columns=None, **kw) -> int:
    got = _read(t, predicate, columns, **kw)
    # the oracle reads the filter's columns too, filters, then keeps the read's columns
    wanted = None if columns is None else [*columns, *sorted(predicate.columns() - set(columns))]
    expected = filter_table(_read(t, None, wanted, **kw), predicate).select(got.column_names)
    keys = [(c, "ascending") for c in ("k1", "k2") if c in got.column_names]
    assert got.sort_by(keys).to_pylist() == expected.sort_by(keys).to_pylist()
    return got.num_rows


def _spy(monkeypatch) -> list[int]:
    calls: list[int] = []
    late = split_reader.merge_section_late
    monkeypatch.setattr(split_reader, "merge_section_late",
                        lambda *a, **kw: calls.append(1) or late(*a, **kw))
    return calls


writes_st = st.lists(
    st.tuples(st.lists(st.integers(0, 40), min_size=1, max_size=25, unique=True),
              st.sampled_from(["+I", "+U", "-U", "-D"])),
    min_size=2, max_size=5)
filters_st = st.sampled_from([
    P.less_than("v", 6), P.greater_or_equal("v", 15), P.equal("s", "t2-1"), P.is_null("s"),
    P.and_(P.less_than("v", 12), P.is_not_null("s")), P.greater_than("n", 4),
    P.or_(P.equal("v", 3), P.equal("s", "t1-0")),
])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(engine=st.sampled_from(sorted(ENGINES)), writes=writes_st, predicate=filters_st,
       chunk=st.sampled_from([3, 8]), project=st.booleans())
def test_late_reads_equal_the_plain_merge_filtered(catalog, engine, writes, predicate, chunk, project):
    # -U/-D rows of first-row, partial-update and aggregation tables are ignored (ignore-delete)
    # or retracted, as their engines define; the oracle reads the same table.
    t = _table(catalog, engine, [(keys, [kind] * len(keys)) for keys, kind in writes])
    columns = ["k2", "s"] if project else None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(streaming, "MERGE_CHUNK_ROWS", chunk)
        calls = _spy(mp)
        # (first-row batch reads skip level 0, where these writes stay: read all levels, merged)
        _check(t, predicate, columns, all_levels=engine == "first-row")
    if engine not in LATE:
        assert not calls  # rows assembled from several versions: the plain merge
    else:
        probe = set(predicate.columns()) | {"k1", "k2"} | ({"n"} if engine == "deduplicate-seq" else set())
        if _late_sections(t, chunk) and not set(columns or SCHEMA.names) <= probe:
            assert calls  # something is left for the second pass


def _late_sections(t, chunk: int) -> bool:
    """Whether a section merges several runs and holds a file of more than ``chunk`` rows."""
    schema = t.store.schema
    key_range = key_range_decoder([schema.field(k).type for k in schema.trimmed_primary_keys])
    return any(len(section) > 1 and any(f.row_count > chunk for run in section for f in run.files)
               for split in t.plan().splits for section in partition_by_key_intervals(split.files, key_range))


def test_deletes_and_update_pairs_never_resurrect_a_version(catalog, monkeypatch):
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 4)
    calls = _spy(monkeypatch)
    t = _table(catalog, "deduplicate", [
        (range(30), ["+I"] * 30),
        (range(0, 30, 2), ["-U"] * 15),
        (range(0, 30, 2), ["+U"] * 15),
        (range(0, 30, 3), ["-D"] * 10),
    ])
    for predicate in (P.less_than("v", 10), P.greater_than("v", 10), P.is_null("v")):
        _check(t, predicate)
    assert calls


def test_merged_reads_of_a_deletion_vector_table(catalog, monkeypatch):
    # Batch reads of a DV table skip level 0 and merge nothing; a stream's full phase (all
    # levels) merges level 0 with the files above it, each file minus its deletion vector.
    t = _table(catalog, "deduplicate", [(range(40), ["+I"] * 40), (range(0, 40, 3), ["+U"] * 14)],
               {"deletion-vectors.enabled": "true", "write-only": "false"})
    t.with_options({"write-only": "true"}).write_arrow(_batch(range(5, 25), 3, ["-D"] * 5 + ["+U"] * 15))
    t = t.refresh()
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 5)
    calls = _spy(monkeypatch)
    assert any(s.deletion_files for s in t.plan().splits)
    for predicate in (P.less_than("v", 8), P.equal("s", "t3-1")):
        _check(t, predicate, all_levels=True)
    assert calls


def test_metadata_columns_fall_back(catalog, monkeypatch):
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 4)
    calls = _spy(monkeypatch)
    t = _table(catalog, "deduplicate", [(range(20), ["+I"] * 20), (range(0, 20, 2), ["+U"] * 10)])
    _check(t, P.less_than("v", 10), ["k1", "k2", "v", "__paimon_bucket"])
    assert not calls


def test_whole_sections_and_files_without_survivors(catalog, monkeypatch):
    """A section under the merge budget is probed whole; the second pass opens only the files
    holding a survivor."""
    t = _table(catalog, "deduplicate", [(range(0, 20), ["+I"] * 20), (range(100, 120), ["+I"] * 20),
                                        (range(0, 120, 5), ["+U"] * 24)])
    store = t.store
    (split,) = t.plan().splits
    schema = store.schema
    fields = [schema.field(c) for c in schema.field_names]
    key_range = key_range_decoder([schema.field(k).type for k in schema.trimmed_primary_keys])
    (section,) = [s for s in partition_by_key_intervals(split.files, key_range) if len(s) > 1]
    reader = SplitReader(store, None, P.is_null("s"))  # only the third write has no s where it writes
    opened: list[str] = []
    rows_of = late.read_data_file_rows
    monkeypatch.setattr(late, "read_data_file_rows", lambda s, p, f, *a: opened.append(f.file_name)
                        or rows_of(s, p, f, *a))
    part_dir = store.partition_dir(split.partition_values)
    config = reader.merge_config
    got = pa.concat_tables(merge_section_late(store, part_dir, split.bucket, section, fields, config,
                                              reader.filter, reader._narrow, chunk_rows=1000))
    plain = pa.concat_tables(merge_section(store, part_dir, split.bucket, section, fields, config,
                                           drop_deletes=True))
    assert got.num_rows and got.to_pylist() == filter_table(plain, reader.filter).to_pylist()
    newest = max(split.files, key=lambda f: f.max_sequence_number)
    assert opened == [newest.file_name]  # the survivors' values are all the newest file's


def test_read_rows_decodes_only_the_row_groups_holding_positions(tmp_path, monkeypatch):
    path = tmp_path / "f.parquet"
    rows = pa.table({"a": np.arange(100), "b": [f"x{i}" for i in range(100)]})
    pq.write_table(rows, path, row_group_size=10)
    read = pq.ParquetFile.read_row_groups
    groups: list[list[int]] = []
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups",
                        lambda self, g, **kw: groups.append(list(g)) or read(self, g, **kw))
    import pyarrow.fs as pafs

    fs = pafs.LocalFileSystem()
    positions = np.array([3, 4, 47, 48, 99], np.int64)
    got = read_rows(fs, str(path), ["b"], positions)
    assert got.column("b").to_pylist() == ["x3", "x4", "x47", "x48", "x99"]
    assert groups == [[0, 4, 9]]
    everything = read_rows(fs, str(path), ["a"], np.arange(0, 100, 7, dtype=np.int64))
    assert everything.column("a").to_pylist() == list(range(0, 100, 7))
