"""Java Paimon (0.9, its own Java API) and dyntable agree on each other's tables, both ways.

dyntable's engine writes primary-key and append tables that Paimon's ``ReadBuilder`` must read
row for row (latest, tags, time travel, every type); Paimon's ``BatchWriteBuilder`` and compaction
write into dyntable's tables and dyntable must read the result and keep writing; Paimon creates a
tag and expires snapshots on a dyntable table and dyntable still reads it. The JVM is shared by
the session (the ``paimon_java`` fixture), so each check costs milliseconds, not a JVM start.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from tests.compat.java_oracle import JavaPaimon, arrow_rows

pytestmark = pytest.mark.java

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])


def _kv(ids, v, dt_="a") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "dt": [dt_] * len(ids)}, schema=KV)


def ours(catalog, name: str, **kw) -> list[tuple]:
    return arrow_rows(catalog.get_table(name).to_arrow(**kw))


# ---- dyntable writes, Java reads ---------------------------------------------------------------


@pytest.mark.parametrize("bucket", ["2", "-1"], ids=["fixed-bucket", "dynamic-bucket"])
def test_java_reads_a_dyntable_primary_key_table_at_every_step(java: JavaPaimon, catalog, bucket):
    t = catalog.create_table("db.pk", KV, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"bucket": bucket})
    t.write_arrow(pa.concat_tables([_kv([1, 2, 3], "w1-"), _kv([7, 8], "w1-", "b")]))
    t.refs.tags.create("first")
    t.write_arrow(_kv([2, 4], "w2-"))
    t.write_arrow(pa.table({"id": [3], "v": ["gone"], "dt": ["a"], "rowkind": ["-D"]}))
    before_compaction = ours(catalog, "db.pk")
    assert java.read("db.pk") == before_compaction
    assert (1, "w1-1", "a") in before_compaction and (2, "w2-2", "a") in before_compaction
    t.compact(full=True)
    t.write_arrow(_kv([8, 9], "w3-", "b"))
    assert java.read("db.pk") == ours(catalog, "db.pk")
    assert java.read("db.pk", tag="first") == ours(catalog, "db.pk", tag="first") == arrow_rows(
        pa.concat_tables([_kv([1, 2, 3], "w1-"), _kv([7, 8], "w1-", "b")]))
    for snapshot_id in java.snapshot_ids("db.pk"):
        assert java.read("db.pk", snapshot_id=snapshot_id) == ours(catalog, "db.pk", snapshot_id=snapshot_id)
    assert java.snapshot_ids("db.pk") == t.store.snapshots.list_ids()
    assert java.tags("db.pk") == {"first": 1}


def test_java_reads_a_dyntable_append_table_with_overwrite_and_compaction(java: JavaPaimon, catalog):
    t = catalog.create_table("db.app", KV, partition_keys=["dt"])
    for i in range(4):
        t.write_arrow(_kv([i, i + 10], f"w{i}-", "a" if i % 2 else "b"))
    t.write_arrow(_kv([99], "over-", "b"), overwrite={"dt": "b"})
    assert java.read("db.app") == ours(catalog, "db.app")
    t.compact(full=True)
    t.write_arrow(_kv([5], "w5-"))
    expected = ours(catalog, "db.app")
    assert java.read("db.app") == expected
    assert sorted(r[0] for r in expected) == [1, 3, 5, 11, 13, 99]
    assert java.unreadable("db.app") == {}


def test_java_reads_every_atomic_type_dyntable_writes(java: JavaPaimon, catalog):
    # DECIMAL(p <= 18) is checked on its own below (Paimon 0.9 cannot read dyntable's encoding of it).
    schema = pa.schema([
        pa.field("k", pa.int32(), nullable=False), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()),
        ("i64", pa.int64()), ("f32", pa.float32()), ("f64", pa.float64()),
        ("dec30", pa.decimal128(30, 4)), ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()),
        ("ts", pa.timestamp("us")), ("ts3", pa.timestamp("ms")), ("ltz", pa.timestamp("us", tz="UTC")),
    ])
    data = pa.table({
        "k": [1, 2, 3], "b": [True, False, None], "i8": [1, -1, None], "i16": [2, None, 3],
        "i64": [2**40, None, -5], "f32": [1.5, None, -2.0], "f64": [2.5, 0.0, None],
        "dec30": [decimal.Decimal("12345678901234567890.1234"), None, decimal.Decimal("0.0001")],
        "s": ["x", "", None], "bin": [b"\x00\xff", None, b""],
        "d": [dt.date(2024, 1, 2), None, dt.date(1969, 12, 31)],
        "ts": [dt.datetime(2024, 1, 2, 3, 4, 5, 123456), None, dt.datetime(1970, 1, 1)],
        "ts3": [dt.datetime(2024, 1, 2, 3, 4, 5, 123000), None, dt.datetime(2000, 1, 1)],
        "ltz": [dt.datetime(2024, 1, 2, tzinfo=dt.UTC), None,
                dt.datetime(2001, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC)],
    }, schema=schema)
    for name, keys in (("db.types_pk", ["k"]), ("db.types_app", [])):
        t = catalog.create_table(name, schema, primary_keys=keys, options={"bucket": "1"} if keys else {})
        t.write_arrow(data)
        columns, rows = java.read_full(name)
        assert columns == schema.names
        assert rows == arrow_rows(data) == ours(catalog, name)


def test_java_reads_dyntable_decimals_of_precision_up_to_18(java: JavaPaimon, catalog):
    # Paimon stores DECIMAL(p <= 9) as INT32 and DECIMAL(p <= 18) as INT64 in Parquet, and
    # Paimon's Java reader before 1.2 reads those precisions only from INT32/INT64 columns: a
    # FIXED_LEN_BYTE_ARRAY column (pyarrow's default encoding) fails with
    # UnsupportedOperationException (PlainBinaryDictionary) in Paimon 0.9.
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("d9", pa.decimal128(9, 2)),
                        ("d18", pa.decimal128(18, 4))])
    data = pa.table({"k": [1, 2, 3], "d9": [decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")],
                     "d18": [decimal.Decimal("12345678901234.5678"), decimal.Decimal("0.0001"), None]},
                    schema=schema)
    t = catalog.create_table("db.decimals", schema, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(data)
    assert java.read("db.decimals") == arrow_rows(data) == ours(catalog, "db.decimals")


# ---- Java writes, dyntable reads ---------------------------------------------------------------


def test_dyntable_reads_java_writes_and_compactions_of_a_primary_key_table(java: JavaPaimon, catalog):
    t = catalog.create_table("db.jpk", KV, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"bucket": "2"})
    t.write_arrow(_kv([1, 2, 3, 4], "ours-"))
    java.write("db.jpk", [[2, "java-2", "a"], {"id": 5, "v": "java-5", "dt": "b"}])
    java.write("db.jpk", [[3, None, "a"]], row_kinds=["-D"])
    expected = sorted([(1, "ours-1", "a"), (2, "java-2", "a"), (4, "ours-4", "a"), (5, "java-5", "b")])
    assert ours(catalog, "db.jpk") == java.read("db.jpk") == expected
    compacted = java.compact("db.jpk")
    assert java.snapshots("db.jpk")[-1] == {**java.snapshots("db.jpk")[-1], "id": compacted,
                                             "commit_kind": "COMPACT"}
    assert ours(catalog, "db.jpk") == java.read("db.jpk") == expected
    # dyntable keeps writing on top of Java's compacted files (its sequence numbers continue).
    t = t.refresh()
    t.write_arrow(_kv([5, 6], "ours2-", "b"))
    expected = sorted([*expected[:3], (5, "ours2-5", "b"), (6, "ours2-6", "b")])
    assert ours(catalog, "db.jpk") == java.read("db.jpk") == expected
    t.compact(full=True)
    assert ours(catalog, "db.jpk") == java.read("db.jpk") == expected
    assert java.unreadable("db.jpk") == {}


def test_java_reads_and_writes_over_dyntables_tiered_manifest_merges(java: JavaPaimon, catalog):
    # A low merge-min-count: most of dyntable's commits merge the base manifests by tiers (settled
    # manifests kept as they are, the rest rewritten), interleaved with Java's own commits and
    # compactions, whose DELETE entries must retire files from dyntable's kept manifests.
    t = catalog.create_table("db.tier", KV, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"bucket": "2", "manifest.merge-min-count": "3"})
    for i in range(12):
        t = t.refresh()
        t.write_arrow(_kv([i, i + 100], f"w{i}-", "ab"[i % 2]))
        if i % 5 == 4:
            java.write("db.tier", [[i, f"java-{i}", "a"]])
        if i == 7:
            java.compact("db.tier")
    t = t.refresh()
    t.compact(full=True)
    t = t.refresh()
    t.write_arrow(_kv([1, 2], "last-"))
    expected = ours(catalog, "db.tier")
    assert java.read("db.tier") == expected
    assert (4, "java-4", "a") in expected and (1, "last-1", "a") in expected
    for sid in java.snapshot_ids("db.tier"):
        assert java.read("db.tier", snapshot_id=sid) == ours(catalog, "db.tier", snapshot_id=sid)
    assert java.unreadable("db.tier") == {}


def test_dyntable_reads_java_writes_and_compaction_of_an_append_table(java: JavaPaimon, catalog):
    t = catalog.create_table("db.japp", KV, partition_keys=["dt"])
    t.write_arrow(_kv([1, 2], "ours-"))
    for i in range(3):
        java.write("db.japp", [[10 + i, f"java-{i}", "a"], [20 + i, f"java-{i}", "b"]])
    expected = ours(catalog, "db.japp")
    assert java.read("db.japp") == expected and len(expected) == 8
    java.compact("db.japp")
    assert java.snapshots("db.japp")[-1]["commit_kind"] == "COMPACT"
    assert ours(catalog, "db.japp") == java.read("db.japp") == expected
    t.refresh().write_arrow(_kv([3], "ours-"))
    assert ours(catalog, "db.japp") == java.read("db.japp") == sorted([*expected, (3, "ours-3", "a")])


def test_java_tags_and_expires_a_dyntable_table_and_dyntable_still_reads_it(java: JavaPaimon, catalog):
    t = catalog.create_table("db.exp", KV, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(_kv([1, 2, 3], "w1-"))
    t.write_arrow(_kv([2], "w2-"))
    at_two = ours(catalog, "db.exp")
    java.create_tag("db.exp", "java-tag")
    t.write_arrow(_kv([3], "w3-"))
    t.write_arrow(_kv([4], "w4-"))
    assert sorted(t.refresh().refs.tags.all()) == ["java-tag"]
    latest = ours(catalog, "db.exp")
    result = java.expire_snapshots("db.exp", retain_max=1)
    assert result["expired"] > 0 and [s["id"] for s in result["snapshots"]] == [4]
    t = t.refresh()
    assert t.store.snapshots.list_ids() == [4]
    assert ours(catalog, "db.exp") == java.read("db.exp") == latest
    assert ours(catalog, "db.exp", tag="java-tag") == java.read("db.exp", tag="java-tag") == at_two
    # dyntable writes on, expires by its own rules, and Java still reads every snapshot and tag.
    t.write_arrow(_kv([5], "w5-"))
    t.maintenance.expire_snapshots(retain_max=1)
    assert java.unreadable("db.exp") == {}
    assert java.read("db.exp") == ours(catalog, "db.exp") == sorted([*latest, (5, "w5-5", "a")])


def test_dyntable_follows_javas_own_rollback_branch_and_fast_forward(java: JavaPaimon, catalog):
    t = catalog.create_table("db.jhist", KV, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(_kv([1, 2], "w1-"))
    t.refs.tags.create("base")
    base = ours(catalog, "db.jhist")
    t.write_arrow(_kv([2, 3], "w2-"))
    t.write_arrow(_kv([4], "w3-"))
    # Paimon's rollback deletes the later snapshots; dyntable reads and writes what is left.
    java.rollback_to("db.jhist", "base")
    assert java.snapshot_ids("db.jhist") == [1]
    assert ours(catalog, "db.jhist") == base
    t = t.refresh()
    t.write_arrow(_kv([5], "ours-"))
    # A branch Paimon creates from a tag: dyntable writes to it, Paimon fast-forwards main to it.
    assert java.create_branch("db.jhist", "jdev", from_tag="base") == ["jdev"]
    assert t.refs.branches.names() == ["jdev"]
    catalog.get_table("db.jhist$branch_jdev").write_arrow(_kv([1, 9], "dev-"))
    branch_rows = ours(catalog, "db.jhist$branch_jdev")
    assert branch_rows == [(1, "dev-1", "a"), (2, "w1-2", "a"), (9, "dev-9", "a")]
    assert java.read("db.jhist", branch="jdev") == branch_rows
    java.fast_forward("db.jhist", "jdev")
    assert ours(catalog, "db.jhist") == java.read("db.jhist") == branch_rows
    assert java.unreadable("db.jhist") == {}
