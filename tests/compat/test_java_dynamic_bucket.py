"""Java Paimon 0.9 and dyntable share dynamic-bucket tables ('bucket' = '-1', the default).

Partition-local dynamic buckets (Java's HASH_DYNAMIC): each side's writer places an existing key
in the bucket the other side's HASH index files give it, and fills new keys to
``dynamic-bucket.target-row-num``; so after writes from both sides, in either order, every key
is in one bucket and Java and dyntable read the same rows. Cross-partition upsert tables
(CROSS_PARTITION in 0.9) written by dyntable read the same in Java; Java's own writer for them
needs its RocksDB key index, which the oracle's class path lacks (the driver says so).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.meta.bucket import hash_codes
from engine.meta.index_files import HASH_INDEX, IndexStore
from engine.types import BIGINT
from tests.compat.java_oracle import JavaOracleError, JavaPaimon, arrow_rows

pytestmark = pytest.mark.java

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])


def _kv(ids, v, dt="a") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "dt": [dt] * len(ids)}, schema=KV)


def _ours(catalog, name):
    return arrow_rows(catalog.get_table(name).to_arrow())


def _placement(t) -> dict[tuple[str, int], int]:
    """(dt, id) → bucket of every live row, read bucket by bucket."""
    out = {}
    reader = t.new_read(["id", "dt"])
    for split in t.plan().splits:
        for part in reader.read(split):
            for r in part.to_pylist():
                assert (r["dt"], r["id"]) not in out, f"key {r} is in two buckets"
                out[(r["dt"], r["id"])] = split.bucket
    return out


def _index_covers_data(t):
    """Each bucket's HASH file holds the hashes of the keys in it (whoever wrote them)."""
    store = IndexStore(t.store.io, t.store.paths)
    entries = store.read_manifest(t.latest_snapshot().index_manifest)
    index = {(e.partition, e.bucket): set(store.read_hashes(e.file).tolist())
             for e in entries if e.file.index_type == HASH_INDEX}
    reader = t.new_read(["id"])
    for split in t.plan().splits:
        for part in reader.read(split):
            hashes = set(hash_codes([part.column("id")], [BIGINT()]).tolist())
            assert hashes <= index[(split.partition, split.bucket)]


def test_java_continues_a_dyntable_dynamic_bucket_table_and_dyntable_continues_java(java: JavaPaimon,
                                                                                     catalog):
    t = catalog.create_table("db.dyn", KV, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"dynamic-bucket.target-row-num": "3"})  # bucket -1 by default
    t.write_arrow(pa.concat_tables([_kv(list(range(9)), "ours-"), _kv([1, 2], "ours-", "b")]))
    placed = _placement(t)
    assert sorted(set(placed.values())) == [0, 1, 2]
    assert java.read("db.dyn") == _ours(catalog, "db.dyn")
    # Java updates every key and adds new ones: existing keys stay where our HASH files put them.
    java.write("db.dyn", [
        *([i, f"java-{i}", "a"] for i in range(12)), [2, "java-2", "b"], [3, "java-3", "b"]])
    t = t.refresh()
    after_java = _placement(t)
    assert {k: b for k, b in after_java.items() if k in placed} == placed
    assert len(after_java) == 15
    assert [after_java[("a", i)] for i in range(9, 12)] == [3, 3, 3]  # buckets 0-2 are full
    assert after_java[("b", 3)] == 0  # bucket 0 of b had room
    assert java.read("db.dyn") == _ours(catalog, "db.dyn")
    _index_covers_data(t)
    # dyntable writes after Java: it reads Java's HASH files, so no key gets a second bucket.
    t.write_arrow(pa.concat_tables([_kv(list(range(14)), "ours2-"), _kv([3, 4], "ours2-", "b")]))
    final = _placement(t)
    assert {k: b for k, b in final.items() if k in after_java} == after_java
    assert java.read("db.dyn") == _ours(catalog, "db.dyn")
    assert len(java.read("db.dyn")) == len(final) == 18
    _index_covers_data(t)
    t.compact(full=True)
    assert java.read("db.dyn") == _ours(catalog, "db.dyn")


def test_dyntable_continues_a_java_created_dynamic_bucket_table(java: JavaPaimon, catalog):
    java.create_table("db.jdyn", [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("dt", "STRING NOT NULL")],
                      partition_keys=["dt"], primary_keys=["dt", "id"],
                      options={"bucket": "-1", "dynamic-bucket.target-row-num": "2"})
    java.write("db.jdyn", [[i, f"java-{i}", "a"] for i in range(5)])
    t = catalog.get_table("db.jdyn")
    placed = _placement(t)
    assert sorted(set(placed.values())) == [0, 1, 2]
    t.write_arrow(_kv([0, 2, 4, 5, 6], "ours-"))
    t = t.refresh()
    now = _placement(t)
    assert {k: b for k, b in now.items() if k in placed} == placed
    assert now[("a", 5)] == 2 and now[("a", 6)] == 3  # bucket 2 had room for one key
    assert java.read("db.jdyn") == _ours(catalog, "db.jdyn")
    java.write("db.jdyn", [[6, "java-6", "a"], [7, "java-7", "a"]])
    t = t.refresh()
    assert _placement(t)[("a", 6)] == 3
    assert java.read("db.jdyn") == _ours(catalog, "db.jdyn")
    assert len(_ours(catalog, "db.jdyn")) == 8
    _index_covers_data(t)


def test_java_reads_a_dyntable_cross_partition_upsert_table(java: JavaPaimon, catalog):
    t = catalog.create_table("db.x", KV, partition_keys=["dt"], primary_keys=["id"],
                             options={"dynamic-bucket.target-row-num": "2"})
    t.write_arrow(pa.concat_tables([_kv([1, 2, 3], "w1-"), _kv([4], "w1-", "b")]))
    t.write_arrow(pa.concat_tables([_kv([1, 4], "w2-", "c"), _kv([5], "w2-", "a")]))  # 1: a → c, 4: b → c
    expected = sorted([(1, "w2-1", "c"), (2, "w1-2", "a"), (3, "w1-3", "a"), (4, "w2-4", "c"),
                       (5, "w2-5", "a")])
    assert _ours(catalog, "db.x") == java.read("db.x") == expected
    t.compact(full=True)
    assert java.read("db.x") == expected
    with pytest.raises(JavaOracleError, match="RocksDB"):
        java.write("db.x", [[1, "java", "a"]])
