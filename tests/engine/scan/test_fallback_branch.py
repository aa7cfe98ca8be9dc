"""scan.fallback-branch: batch reads take the partitions the read branch lacks from the fallback branch
(Paimon's FallbackReadFileStoreTable and its documentation example)."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from engine.errors import InvalidArgumentError, NoSuchBranchError
from engine.scan import predicate as P
from engine.schema_changes import AddColumn, RemoveOption, SetOption

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("name", pa.string(), False),
                    ("amount", pa.int64())])


def rows(*items: tuple[str, str, int]) -> pa.Table:
    return pa.table({"dt": [i[0] for i in items], "name": [i[1] for i in items],
                     "amount": [i[2] for i in items]}, schema=SCHEMA)


def content(t, **kw) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_arrow(**kw).to_pylist())


def make(catalog, name="db.T", **kw):
    t = catalog.create_table(name, SCHEMA, partition_keys=["dt"], **kw)
    t.refs.branches.create("test")
    t = catalog.alter_table(t.identifier, [SetOption("scan.fallback-branch", "test")])
    return t, catalog.get_table(f"{name}$branch_test")


def test_the_documentation_example(catalog):
    t, b = make(catalog)
    b.write_arrow(rows(("20240725", "apple", 4), ("20240725", "peach", 10), ("20240726", "cherry", 3),
                       ("20240726", "pear", 6)))
    t.write_arrow(rows(("20240725", "apple", 5), ("20240725", "banana", 7)))
    t = catalog.get_table("db.T")
    assert content(t) == [("20240725", "apple", 5), ("20240725", "banana", 7),
                          ("20240726", "cherry", 3), ("20240726", "pear", 6)]
    # the fallback branch itself reads only its own rows; so does main without the option
    assert len(content(b)) == 4
    t = catalog.alter_table(t.identifier, [RemoveOption("scan.fallback-branch")])
    assert content(t) == [("20240725", "apple", 5), ("20240725", "banana", 7)]


def test_filters_projection_and_key_tables(catalog):
    t, b = make(catalog, primary_keys=["dt", "name"], options={"bucket": "2"})
    b.write_arrow(rows(("d1", "a", 1), ("d2", "b", 2), ("d3", "c", 3)))
    b.write_arrow(rows(("d2", "b", 20)))  # merged by key within the fallback branch
    t.write_arrow(rows(("d1", "x", 9)))
    t = catalog.get_table("db.T")
    assert content(t) == [("d1", "x", 9), ("d2", "b", 20), ("d3", "c", 3)]
    # A partition condition: main lacks d2 and d3 among the selected partitions, so they fall back.
    assert content(t, filter=P.is_in("dt", ["d1", "d2"])) == [("d1", "x", 9), ("d2", "b", 20)]
    # A value condition: main has d1 (complete, even though no row of it matches), d3 falls back.
    assert content(t, filter=P.equal("name", "c")) == [("d3", "c", 3)]
    assert content(t, filter=P.equal("name", "a")) == []
    got = t.to_arrow(columns=["amount"]).column("amount").to_pylist()
    assert sorted(got) == [3, 9, 20]


def test_time_travel_reads_the_fallback_branch_as_of_the_same_time(catalog):
    t, b = make(catalog)
    t.write_arrow(rows(("d1", "m", 1)))  # main snapshot 1
    time.sleep(0.01)  # commit times are milliseconds: the branch's commits come strictly later
    b.write_arrow(rows(("d2", "f", 2)))  # branch snapshot 1, after main's 1
    b.write_arrow(rows(("d3", "f", 3)))
    time.sleep(0.01)
    t = catalog.get_table("db.T")
    assert content(t, snapshot_id=1) == [("d1", "m", 1)]  # the branch had nothing yet
    t.write_arrow(rows(("d1", "m", 4)))
    assert content(t, snapshot_id=2) == [("d1", "m", 1), ("d1", "m", 4), ("d2", "f", 2), ("d3", "f", 3)]


def test_only_batch_reads_fall_back(catalog):
    t, b = make(catalog)
    b.write_arrow(rows(("d2", "f", 2)))
    t = catalog.get_table("db.T")
    assert content(t) == [("d2", "f", 2)]
    assert t.new_scan().plan().splits == ()  # writers, compaction and maintenance see main only
    t.write_arrow(rows(("d1", "m", 1)))
    assert [s.branch for s in t.plan().splits] == [None, "test"]


def test_mismatched_or_missing_fallback_branches_are_refused(catalog):
    t, b = make(catalog)
    catalog.alter_table(b.identifier, [AddColumn("extra", "INT")])
    with pytest.raises(InvalidArgumentError, match="same columns"):
        catalog.get_table("db.T").to_arrow()
    t2 = catalog.create_table("db.U", SCHEMA, partition_keys=["dt"],
                              options={"scan.fallback-branch": "nope"})
    with pytest.raises(NoSuchBranchError, match="nope"):
        t2.to_arrow()
    # an unpartitioned table has nothing to fall back to
    t3 = catalog.create_table("db.V", SCHEMA, options={"scan.fallback-branch": "nope"})
    assert content(t3) == []
