"""Primary-key tables with deletion vectors, written and compacted by dyntable (no JVM).

Each scenario runs the same writes on a table with ``deletion-vectors.enabled`` and on one
without; after every step the DV table, read as Paimon's batch readers read it (level 0 skipped,
no merge, DVs applied), must equal the merge-on-read table. The LSM invariant the readers rely on
is checked too: among the live rows of levels >= 1 every key appears once. Java and pypaimon
are compared in ``tests/compat/test_java_deletion_vectors_write.py``.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import InvalidArgumentError
from engine.files.reader import read_data_file
from engine.meta.deletion_vectors import read_deletion_vectors
from engine.meta.index_files import DELETION_VECTORS_INDEX, IndexStore

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])
BASE = 2000

ENGINES = {
    "deduplicate": {},
    "deduplicate-seq": {"sequence.field": "n"},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                    "fields.v.aggregate-function": "last_non_null_value"},
}


def _tables(catalog, engine: str, extra: dict[str, str] | None = None):
    opts = {"bucket": "2", **ENGINES[engine], **(extra or {})}
    ref = catalog.create_table(f"db.ref_{engine.replace('-', '_')}", SCHEMA, primary_keys=["k"], options=opts)
    dv = catalog.create_table(f"db.dv_{engine.replace('-', '_')}", SCHEMA, primary_keys=["k"],
                              options={**opts, "deletion-vectors.enabled": "true"})
    return ref, dv


def _rows(t) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.refresh().to_arrow().to_pylist())


def _dvs_of(t) -> dict[str, object]:
    t = t.refresh()
    snap = t.latest_snapshot()
    index = IndexStore(t.store.io, t.store.paths)
    out: dict[str, object] = {}
    for e in index.read_manifest(snap.index_manifest):
        if e.file.index_type == DELETION_VECTORS_INDEX:
            out.update(read_deletion_vectors(index, e.file))
    return out


def _assert_one_live_row_per_key_above_level0(t) -> None:
    t = t.refresh()
    dvs = _dvs_of(t)
    live = {s.bucket: set() for s in t.plan().splits}
    for split in t.plan().splits:
        names = {f.file_name for f in split.files}
        assert set(d.data_file for d in split.deletion_files) <= names
        for f in split.files:
            if f.level == 0:
                continue
            path = t.store.paths.data_file(t.store.partition_dir(()), split.bucket, f.file_name)
            keys = read_data_file(t.store, path, f, [t.schema.field("k")]).column("k").to_numpy()
            dv = dvs.get(f.file_name)
            if dv is not None:
                keys = keys[dv.keep_mask(len(keys))]
            seen = live[split.bucket]
            assert not (seen & set(keys.tolist())), f"a key has two live rows above level 0 in {f.file_name}"
            seen |= set(keys.tolist())
    assert set(dvs) <= {f.file_name for s in t.plan().splits for f in s.files}, "a DV outlived its file"


def _batch(keys, tag: str, kinds=None) -> pa.Table:
    keys = list(keys)
    cols = {"k": pa.array(keys, pa.int64()), "v": pa.array([f"{tag}{k}" for k in keys]),
            "n": pa.array([k % 7 + 1 for k in keys], pa.int64())}
    if kinds is not None:
        cols["rowkind"] = pa.array(kinds)
    return pa.table(cols)


def _write_both(ref, dv, batch: pa.Table) -> None:
    ref.refresh().write_arrow(batch)
    dv.refresh().write_arrow(batch)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_updates_and_deletes_mark_older_rows_and_reads_match_merge_on_read(catalog, engine):
    ref, dv = _tables(catalog, engine)
    _write_both(ref, dv, _batch(range(BASE), "a"))
    _write_both(ref, dv, _batch(range(0, BASE, 10), "b"))
    assert _rows(dv) == _rows(ref)
    dvs = _dvs_of(dv)
    assert sum(d.cardinality for d in dvs.values()) == BASE // 10, "each updated key marks its old row"
    _assert_one_live_row_per_key_above_level0(dv)
    if engine != "aggregation":  # (aggregation: a -D of a sum is a retraction, not a delete)
        keys = [5, 15, 25, 10]
        _write_both(ref, dv, _batch(keys, "c", ["-D", "-D", "-D", "-D"]))
        assert _rows(dv) == _rows(ref)
        assert not {5, 15, 25, 10} & {r[0] for r in _rows(dv)}
    _write_both(ref, dv, _batch(range(3, BASE, 40), "d"))
    assert _rows(dv) == _rows(ref)
    _assert_one_live_row_per_key_above_level0(dv)
    dv.refresh().compact(full=True)
    ref.refresh().compact(full=True)
    assert _rows(dv) == _rows(ref)
    assert sum(d.cardinality for d in _dvs_of(dv).values()) == 0, "a full compaction applies every DV"
    _assert_one_live_row_per_key_above_level0(dv)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    engine=st.sampled_from(list(ENGINES)),
    steps=st.lists(
        st.tuples(st.sampled_from(["upsert", "delete", "compact", "tasks"]),
                  st.lists(st.integers(0, 400), max_size=60)),
        min_size=1, max_size=6,
    ),
)
def test_random_writes_keep_dv_reads_equal_to_merge_on_read(tmp_path_factory, engine, steps):
    from engine import open_catalog

    catalog = open_catalog(str(tmp_path_factory.mktemp("wh")))
    catalog.create_database("db")
    ref, dv = _tables(catalog, engine, {"num-sorted-run.compaction-trigger": "3"})
    _write_both(ref, dv, _batch(range(0, 400, 2), "a"))
    for i, (op, keys) in enumerate(steps):
        keys = sorted(set(keys))
        if op == "compact":
            ref.refresh().compact(full=bool(i % 2))
            dv.refresh().compact(full=bool(i % 2))
        elif keys and op == "delete" and engine != "aggregation":
            _write_both(ref, dv, _batch(keys, f"x{i}", ["-D"] * len(keys)))
        elif keys and op == "tasks":  # two task writers of one commit, mixed kinds, keys may repeat
            deleted = set(keys[::3]) if engine != "aggregation" else set()
            batches = [_cdc(keys[::2], f"p{i}", deleted), _cdc(keys[len(keys) // 3:], f"q{i}", deleted)]
            for t in (ref, dv):
                _task_writes(t, batches)
        elif keys:
            _write_both(ref, dv, _batch(keys, f"u{i}"))
        assert _rows(dv) == _rows(ref)
        _assert_one_live_row_per_key_above_level0(dv)


def test_lookup_changelog_of_a_dv_table_is_exact(catalog):
    ref, dv = _tables(catalog, "deduplicate", {"changelog-producer": "lookup"})
    _write_both(ref, dv, _batch(range(100), "a"))
    _write_both(ref, dv, _batch([1, 2, 200], "b"))
    from engine.scan.incremental import ChangeReader, change_splits

    def changes(t):
        t = t.refresh()
        snap = [s for s in t.snapshots() if s.commit_kind.value == "APPEND"][-1]
        reader = ChangeReader(t.store)
        return sorted(tuple(r.values()) for r in reader.read_all(change_splits(t.store, snap)).to_pylist())

    assert changes(dv) == changes(ref)
    assert changes(dv) == sorted([("-U", 1, "a1", 2), ("+U", 1, "b1", 2), ("-U", 2, "a2", 3),
                                  ("+U", 2, "b2", 3), ("+I", 200, "b200", 5)])


@pytest.mark.parametrize("options, message", [
    ({"changelog-producer": "full-compaction"}, "Paimon allows none, input or lookup"),
    ({"merge-engine": "first-row"}, "first-row"),
])
def test_paimon_refuses_these_combinations_and_so_does_dyntable(catalog, options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k"],
                             options={"deletion-vectors.enabled": "true", **options})


def test_turning_dvs_on_needs_modifiable_then_a_full_compaction_makes_reads_exact(catalog):
    from engine.schema_changes import SetOption

    t = catalog.create_table("db.late", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(_batch(range(BASE), "a"))
    with pytest.raises(InvalidArgumentError, match="deletion-vectors.modifiable"):
        catalog.alter_table("db.late", [SetOption("deletion-vectors.enabled", "true")])
    catalog.alter_table("db.late", [SetOption("deletion-vectors.modifiable", "true"),
                                    SetOption("deletion-vectors.enabled", "true")])
    t = catalog.get_table("db.late")
    t.compact(full=True)
    t.refresh().write_arrow(_batch(range(0, BASE, 100), "b"))
    rows = _rows(t)
    assert len(rows) == BASE
    assert rows[100] == (100, "b100", 100 % 7 + 1)
    _assert_one_live_row_per_key_above_level0(t)
    assert sum(d.cardinality for d in _dvs_of(t).values()) == BASE // 100


def test_dv_positions_are_the_rows_read_back(catalog):
    _, dv = _tables(catalog, "deduplicate")
    dv.write_arrow(_batch(range(BASE), "a"))
    dv.refresh().write_arrow(_batch([7, 1999], "b"))
    (name, vector), = [(n, d) for n, d in _dvs_of(dv).items() if d.cardinality]
    split = next(s for s in dv.refresh().plan().splits if any(f.file_name == name for f in s.files))
    f = next(f for f in split.files if f.file_name == name)
    path = dv.store.paths.data_file(dv.store.partition_dir(()), split.bucket, name)
    keys = read_data_file(dv.store, path, f, [dv.schema.field("k")]).column("k").to_numpy()
    assert sorted(keys[vector.positions()].tolist()) == sorted(k for k in (7, 1999) if k in set(keys))
    assert np.all(np.isin(keys[vector.positions()], [7, 1999]))


def test_a_streams_full_phase_reads_level_0_of_a_dv_table_merged_minus_dvs(catalog):
    ref, dv = _tables(catalog, "partial-update")
    _write_both(ref, dv, _batch(range(300), "a"))
    _write_both(ref, dv, _batch(range(0, 300, 4), "b"))
    for t in (ref, dv):  # a write left in level 0, as with write-only or a failed compaction
        t.refresh().new_commit().commit(_uncompacted(t.refresh(), _batch(range(1, 300, 6), "c")))
    batch = _rows(dv)
    assert batch != _rows(ref), "batch reads of a DV table do not see level 0"
    builder = dv.refresh().new_read_builder()
    reader = builder.new_read(all_levels=True)  # what a stream's full phase reads
    full = [tuple(r.values()) for r in reader.to_arrow(builder.new_scan().plan().splits).to_pylist()]
    assert sorted(full) == _rows(ref)


def _uncompacted(t, batch):
    from engine.write.factory import new_writer

    w = new_writer(t.store, compact=False)
    w.write(batch)
    return w.prepare_commit()


def test_files_system_table_shows_each_files_dv_cardinality(catalog):
    from engine.system_tables.files import read_files

    _, dv = _tables(catalog, "deduplicate")
    dv.write_arrow(_batch(range(BASE), "a"))
    dv.refresh().write_arrow(_batch(range(0, BASE, 10), "b"))
    files = read_files(dv.refresh().store, None).to_pylist()
    expected = {n: d.cardinality for n, d in _dvs_of(dv).items() if d.cardinality}
    shown = {r["file_path"].rsplit("/", 1)[-1]: r["deletion_vector_cardinality"] for r in files}
    assert {n: c for n, c in shown.items() if c} == expected and sum(expected.values()) == BASE // 10
    assert all(c is None for n, c in shown.items() if n not in expected)


@pytest.mark.parametrize("options", [{"bucket": "-1"}, {"bucket": "2"}], ids=["dynamic-bucket", "fixed"])
def test_overwrite_and_dynamic_buckets_keep_dvs_consistent(catalog, options):
    opts = {**options, "deletion-vectors.enabled": "true"}
    t = catalog.create_table("db.ow", SCHEMA, primary_keys=["k"], options=opts)
    t.write_arrow(_batch(range(500), "a"))
    t.refresh().write_arrow(_batch(range(0, 500, 5), "b"))
    assert len(_rows(t)) == 500 and _rows(t)[5][1] == "b5"
    _assert_one_live_row_per_key_above_level0(t)
    t.refresh().write_arrow(_batch(range(10), "o"), overwrite=True)
    assert _rows(t) == [(k, f"o{k}", k % 7 + 1) for k in range(10)]
    _assert_one_live_row_per_key_above_level0(t)
    t.refresh().write_arrow(_batch([3, 11], "p"))
    assert [r[:2] for r in _rows(t)] == [(k, "p3" if k == 3 else f"o{k}") for k in range(10)] + [(11, "p11")]
    _assert_one_live_row_per_key_above_level0(t)


def test_partitioned_dv_table_reads_like_merge_on_read(catalog):
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), *SCHEMA])
    tables = [catalog.create_table(f"db.part{i}", schema, partition_keys=["p"], primary_keys=["p", "k"],
                                   options={"bucket": "2", **extra})
              for i, extra in enumerate(({}, {"deletion-vectors.enabled": "true"}))]

    def batch(keys, tag, kinds=None):
        b = _batch(keys, tag, kinds)
        return b.add_column(0, "p", pa.array(["x" if k % 3 else "y" for k in keys]))

    for step in (batch(range(600), "a"), batch(range(0, 600, 4), "b"),
                 batch(range(1, 600, 9), "c", ["-D"] * len(range(1, 600, 9))), batch(range(2, 600, 7), "d")):
        for t in tables:
            t.refresh().write_arrow(step)
        assert _rows(tables[1]) == _rows(tables[0])
    assert sum(d.cardinality for d in _dvs_of(tables[1]).values()) > 0


def test_a_compaction_whose_bucket_dvs_changed_meanwhile_conflicts_and_loses_nothing(catalog):
    from engine.compaction import plan, run_in_process
    from engine.errors import CommitConflictError

    t = catalog.create_table("db.race", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(_batch(range(BASE), "a"))
    t.refresh().write_arrow(_batch(range(0, BASE, 3), "b"))
    stale = run_in_process(t.store, plan(t.refresh().store, full=True))  # computed, not yet committed
    t.refresh().write_arrow(_batch(range(1, BASE, 5), "c"))  # marks rows of the files it rewrites
    with pytest.raises(CommitConflictError, match="deletion vectors of bucket 0"):
        t.refresh().new_commit().commit(stale)
    rows = {r[0]: r[1] for r in _rows(t)}
    assert len(rows) == BASE and rows[1] == "c1" and rows[3] == "b3" and rows[2] == "a2"
    _assert_one_live_row_per_key_above_level0(t)
    t.refresh().compact(full=True)
    assert {r[0]: r[1] for r in _rows(t)} == rows


def _task_writes(t, batches) -> None:
    """One commit of ``batches`` written by one task writer each, as a Spark job writes. Every
    job has its own token, as Spark's do: task writers name files by job token and task number, so
    two commits under one token would write the same file names."""
    job = f"job-{uuid.uuid4().hex[:12]}"
    builder = t.refresh().new_write_builder(commit_user="job")
    messages = []
    for task, batch in enumerate(batches):
        messages += builder.new_task_write(job, task).write_all([batch])
    builder.new_commit().commit(messages)


def _cdc(keys, tag: str, deleted) -> pa.Table:
    keys = list(keys)
    return _batch(keys, tag, ["-D" if k in deleted else "+U" for k in keys])


@pytest.mark.parametrize("overlap", [False, True])
def test_a_cdc_batch_from_two_tasks_moves_up_without_rewriting_the_base(catalog, overlap):
    """Level-0 files with disjoint keys move up unrewritten, each into its own level, their deletes
    and the rows they supersede marked in DVs; the base keeps its files. A key written by both
    tasks needs the merge by sequence number instead; both give the merge-on-read rows."""
    ref, dv = _tables(catalog, "deduplicate")
    _write_both(ref, dv, _batch(range(BASE), "a"))
    base = {f.file_name: f.level for s in dv.refresh().plan().splits for f in s.files}
    deleted = set(range(5, BASE, 20))
    second = range(1, BASE + 400, 3) if not overlap else range(0, BASE + 400, 2)
    batches = [_cdc(range(0, BASE + 400, 3), "t0", deleted), _cdc(second, "t1", deleted)]
    for t in (ref, dv):
        _task_writes(t, batches)
    assert _rows(dv) == _rows(ref)
    _assert_one_live_row_per_key_above_level0(dv)
    after = [(s.bucket, f) for s in dv.refresh().plan().splits for f in s.files]
    assert all(f.level > 0 for _, f in after)
    assert set(base) <= {f.file_name for _, f in after}, "the base files stay in place"
    new = {}
    for bucket, f in after:
        if f.file_name not in base:
            new.setdefault(bucket, []).append(f.level)
    if overlap:
        assert all(len(levels) == 1 for levels in new.values()), "merged into one run per bucket"
    else:
        assert all(sorted(levels) == [3, 4] for levels in new.values()), "one level per task file"
        dvs = _dvs_of(dv)
        assert any(name not in base and d.cardinality for name, d in dvs.items()), "own deletes marked"
    # later writes and compactions on top stay exact
    _write_both(ref, dv, _cdc(range(2, BASE + 400, 7), "c", {9, 16}))
    assert _rows(dv) == _rows(ref)
    _assert_one_live_row_per_key_above_level0(dv)
    dv.refresh().compact(full=True)
    assert _rows(dv) == _rows(ref)
    assert sum(d.cardinality for d in _dvs_of(dv).values()) == 0
