"""Java Paimon (0.9) reads what dyntable's branch options and merge_branch make: a fallback-branch
read gives the same rows in both, and a merged branch's files are read by Java like any commit."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.ops.merge_branch import merge_branch
from engine.schema_changes import SetOption
from tests.compat.java_oracle import JavaPaimon, arrow_rows

pytestmark = pytest.mark.java

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                pa.field("dt", pa.string(), nullable=False)])


def _kv(ids, v, dt_="a") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "dt": [dt_] * len(ids)}, schema=KV)


def ours(catalog, name: str, **kw) -> list[tuple]:
    return arrow_rows(catalog.get_table(name).to_arrow(**kw))


def test_java_and_dyntable_read_a_fallback_branch_alike(java: JavaPaimon, catalog):
    t = catalog.create_table("db.fb", KV, partition_keys=["dt"])
    t.refs.branches.create("stream")
    catalog.alter_table(t.identifier, [SetOption("scan.fallback-branch", "stream")])
    catalog.get_table("db.fb$branch_stream").write_arrow(pa.concat_tables([_kv([1, 2], "s", "d1"),
                                                                           _kv([3], "s", "d2")]))
    catalog.get_table("db.fb").write_arrow(_kv([9], "m", "d1"))
    expected = ours(catalog, "db.fb")
    assert sorted(r[0] for r in expected) == [3, 9]  # d1 from main, d2 from the fallback branch
    assert java.read("db.fb") == expected


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_java_reads_main_after_merge_branch(java: JavaPaimon, catalog, primary_key):
    t = catalog.create_table("db.mb", KV, partition_keys=["dt"],
                             primary_keys=["dt", "id"] if primary_key else (), options={"bucket": "2"}
                             if primary_key else {})
    t.write_arrow(_kv([1, 2], "base"))
    t.refs.tags.create("t1", 1)
    t.refs.branches.create("dev", from_tag="t1")
    catalog.get_table("db.mb$branch_dev").write_arrow(_kv([2, 3], "dev", "b" if not primary_key else "a"))
    catalog.get_table("db.mb").write_arrow(_kv([4], "main"))
    merge_branch(t.store, "dev")
    expected = ours(catalog, "db.mb")
    assert java.read("db.mb") == expected
    assert java.unreadable("db.mb") == {}
    ids = sorted(r[0] for r in expected)
    assert ids == ([1, 2, 3, 4] if primary_key else [1, 2, 2, 3, 4])
