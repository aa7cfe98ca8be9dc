"""engine.ops.merge_branch: Paimon's merge_branch for append tables (its Spark tests restated), and
dyntable's key-level merge of primary-key branches with conflicts."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.errors import InvalidArgumentError, NoSuchBranchError, NoSuchSnapshotError
from engine.ops.maintenance_log import read_records
from engine.ops.merge_branch import merge_branch
from engine.ops.merge_keys import MergeConflictError
from engine.schema_changes import AddColumn

APPEND = pa.schema([("id", pa.int32()), ("name", pa.string())])
KEYED = pa.schema([pa.field("id", pa.int32(), False), ("v", pa.string()), ("n", pa.int64())])


def rows(t, **kw) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_arrow(**kw).to_pylist())


def append_table(catalog, name="db.T"):
    t = catalog.create_table(name, APPEND)
    t.write_arrow(pa.table({"id": [1], "name": ["a"]}, schema=APPEND))
    t.refs.tags.create("tag1", 1)
    return t


def test_merge_branch_of_an_append_table(catalog):
    """MergeBranchProcedureTest 'merge branch test': the branch's new rows reach main, once."""
    t = append_table(catalog)
    t.refs.branches.create("test_branch", from_tag="tag1")
    b = catalog.get_table("db.T$branch_test_branch")
    b.write_arrow(pa.table({"id": [2], "name": ["b"]}, schema=APPEND))
    dry = merge_branch(t.store, "test_branch", dry_run=True)
    assert (dry.mode, dry.files, dry.upserted, dry.snapshot_id) == ("files", 1, 1, None)
    assert dry.base_snapshot_id == 1
    assert rows(catalog.get_table("db.T")) == [(1, "a")]
    done = merge_branch(t.store, "test_branch")
    assert done.snapshot_id == 2 and done.files == 1
    main = catalog.get_table("db.T")
    assert rows(main) == [(1, "a"), (2, "b")]
    snap = main.latest_snapshot()
    assert snap.commit_kind.name == "APPEND"
    assert snap.properties["dyntable.merge-branch.source"] == "test_branch"
    # the merged file has its own name in main (each history expires its own files)
    [merged] = [e for e in main.store.live_entries(snap) if "-link-" in e.file.file_name]
    assert merged.file.file_name.split("-link-")[0] in {e.file.file_name.split(".")[0]
                                                        for e in b.store.live_entries(b.latest_snapshot())}
    again = merge_branch(t.store, "test_branch")  # merged before: nothing new
    assert again.snapshot_id is None and again.files == 0 and rows(catalog.get_table("db.T")) == rows(main)
    # main went on meanwhile: only the branch's newer file is merged
    main.write_arrow(pa.table({"id": [3], "name": ["c"]}, schema=APPEND))
    b.write_arrow(pa.table({"id": [4], "name": ["d"]}, schema=APPEND))
    assert merge_branch(t.store, "test_branch").files == 1
    assert rows(catalog.get_table("db.T")) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    log = [r for r in read_records(t.store.io, t.path) if r.procedure == "merge_branch"]
    assert [r.dry_run for r in log] == [True, False, False, False] and log[1].details["files"] == 1


def test_merge_into_an_explicit_target_branch(catalog):
    """MergeBranchProcedureTest 'merge branch with explicit target branch'."""
    t = append_table(catalog)
    t.refs.branches.create("branchA", from_tag="tag1")
    t.refs.branches.create("branchB", from_tag="tag1")
    catalog.get_table("db.T$branch_branchA").write_arrow(pa.table({"id": [2], "name": ["b"]}, schema=APPEND))
    merge_branch(t.store, "branchA", "branchB")
    assert rows(catalog.get_table("db.T$branch_branchB")) == [(1, "a"), (2, "b")]
    assert rows(catalog.get_table("db.T")) == [(1, "a")]


def test_what_is_refused(catalog):
    """MergeBranchProcedureTest: a missing branch fails; and a merge that would be wrong is refused."""
    t = append_table(catalog)
    with pytest.raises(NoSuchBranchError, match="nonexistent"):
        merge_branch(t.store, "nonexistent")
    t.refs.branches.create("empty")
    with pytest.raises(NoSuchSnapshotError, match="does not have snapshot"):
        merge_branch(t.store, "empty")
    with pytest.raises(InvalidArgumentError, match="itself"):
        merge_branch(t.store, "main")
    with pytest.raises(InvalidArgumentError, match="conflict"):
        merge_branch(t.store, "empty", conflict="mine")
    # an append branch that rewrote its base would repeat the base's rows
    t.refs.branches.create("over", from_tag="tag1")
    over = catalog.get_table("db.T$branch_over")
    over.write_arrow(pa.table({"id": [9], "name": ["z"]}, schema=APPEND), overwrite=True)
    with pytest.raises(InvalidArgumentError, match="rewrote 1 data file"):
        merge_branch(t.store, "over")
    # the columns must match
    t.refs.branches.create("wide", from_tag="tag1")
    catalog.alter_table(catalog.get_table("db.T$branch_wide").identifier, [AddColumn("extra", "INT")])
    with pytest.raises(InvalidArgumentError, match="schema mismatch"):
        merge_branch(t.store, "wide")
    assert rows(catalog.get_table("db.T")) == [(1, "a")]


def keyed(catalog, options=None):
    t = catalog.create_table("db.K", KEYED, primary_keys=["id"], options={"bucket": "2", **(options or {})})
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "n": [1, 2, 3, 4]}, schema=KEYED))
    t.refs.tags.create("t1", 1)
    t.refs.branches.create("dev", from_tag="t1")
    return t, catalog.get_table("db.K$branch_dev")


def change(t, ids, vs, ns, kinds=None):
    data = {"id": ids, "v": vs, "n": ns}
    if kinds:
        data["rowkind"] = kinds
    t.write_arrow(pa.table(data, schema=pa.schema([*KEYED, *([("rowkind", pa.string())] if kinds else [])])))


@pytest.mark.parametrize("policy", ["fail", "source", "target"])
def test_key_level_merge_reports_conflicts_and_applies_the_policy(catalog, policy):
    t, dev = keyed(catalog)
    change(dev, [2, 3, 5, 4], ["B", "c", "E", "d2"], [20, 3, 50, 4], ["+U", "-D", "+I", "+U"])
    change(t, [2, 4], ["X", "d2"], [99, 4])  # 2: both changed differently; 4: both changed alike
    dry = merge_branch(t.store, "dev", conflict=policy, dry_run=True)
    assert (dry.mode, dry.conflict_count, dry.conflicts) == ("keys", 1, ({"id": 2},))
    assert rows(catalog.get_table("db.K")) == [(1, "a", 1), (2, "X", 99), (3, "c", 3), (4, "d2", 4)]
    if policy == "fail":
        with pytest.raises(MergeConflictError, match="id=2") as info:
            merge_branch(t.store, "dev")
        assert info.value.count == 1
        assert rows(catalog.get_table("db.K")) == [(1, "a", 1), (2, "X", 99), (3, "c", 3), (4, "d2", 4)]
        return
    done = merge_branch(t.store, "dev", conflict=policy)
    expected_2 = (2, "B", 20) if policy == "source" else (2, "X", 99)
    assert rows(catalog.get_table("db.K")) == sorted([(1, "a", 1), expected_2, (4, "d2", 4), (5, "E", 50)])
    assert done.deleted == 1 and done.upserted == (2 if policy == "source" else 1)
    again = merge_branch(t.store, "dev", conflict=policy)  # the target has the branch's changes now
    assert again.snapshot_id is None and again.upserted == 0 and again.deleted == 0


def test_key_level_merge_goes_through_the_merge_engine(catalog):
    t, dev = keyed(catalog, {"merge-engine": "partial-update"})
    change(dev, [1], ["A"], [None])
    change(t, [3], [None], [30])
    merge_branch(t.store, "dev")
    # partial-update: the branch's merged row of key 1 is written; main's own change of key 3 stays
    assert rows(catalog.get_table("db.K")) == [(1, "A", 1), (2, "b", 2), (3, "c", 30), (4, "d", 4)]


def test_key_level_merge_of_an_empty_branch_and_refused_engines(catalog):
    t = catalog.create_table("db.E", KEYED, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "n": [1]}, schema=KEYED))
    t.refs.branches.create("fresh")  # no base: every key of the branch is the branch's
    catalog.get_table("db.E$branch_fresh").write_arrow(pa.table({"id": [1, 2], "v": ["x", "y"], "n": [0, 0]},
                                                                schema=KEYED))
    with pytest.raises(MergeConflictError):
        merge_branch(t.store, "fresh")  # main's key 1 changed "since" the empty base too
    merge_branch(t.store, "fresh", conflict="source")
    assert rows(catalog.get_table("db.E")) == [(1, "x", 0), (2, "y", 0)]
    agg = catalog.create_table("db.A", KEYED, primary_keys=["id"],
                               options={"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    agg.write_arrow(pa.table({"id": [1], "v": ["a"], "n": [1]}, schema=KEYED))
    agg.refs.tags.create("t", 1)
    agg.refs.branches.create("b", from_tag="t")
    catalog.get_table("db.A$branch_b").write_arrow(pa.table({"id": [1], "v": ["a"], "n": [5]}, schema=KEYED))
    with pytest.raises(InvalidArgumentError, match="aggregation"):
        merge_branch(agg.store, "b")


def test_a_second_merge_after_the_target_compacted_adds_nothing_twice(catalog):
    """The target compacting the merged copies away (their names then say nothing) must not make a
    later merge take the same files again; a branch that rewrote files a merge took is refused."""
    t = append_table(catalog)
    t.refs.branches.create("dev", from_tag="tag1")
    dev = catalog.get_table("db.T$branch_dev")
    dev.write_arrow(pa.table({"id": [2], "name": ["b"]}, schema=APPEND))
    merge_branch(t.store, "dev")
    t.write_arrow(pa.table({"id": [3], "name": ["c"]}, schema=APPEND))
    t.refresh().compact(full=True)
    assert merge_branch(t.store, "dev").snapshot_id is None
    dev.write_arrow(pa.table({"id": [4], "name": ["d"]}, schema=APPEND))
    assert merge_branch(t.store, "dev").files == 1
    assert rows(catalog.get_table("db.T")) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    # the branch compacts its own files, which earlier merges took: the rewrite would repeat them
    t.refs.branches.create("own")
    own = catalog.get_table("db.T$branch_own")
    own.write_arrow(pa.table({"id": [5], "name": ["e"]}, schema=APPEND))
    merge_branch(t.store, "own")
    own.write_arrow(pa.table({"id": [6], "name": ["f"]}, schema=APPEND))
    own.refresh().compact(full=True)
    with pytest.raises(InvalidArgumentError, match="an earlier merge"):
        merge_branch(t.store, "own")
    assert rows(catalog.get_table("db.T")) == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]
