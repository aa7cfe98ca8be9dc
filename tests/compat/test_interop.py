"""Paimon compatibility, proven both ways: pypaimon reads dyntable's tables and dyntable reads pypaimon's.

pypaimon runs in its own virtual environment (it pins older pyarrow/fsspec) as a subprocess.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from tests.compat.harness import PyPaimon

pytestmark = pytest.mark.compat


def _sorted(table: pa.Table, *keys: str) -> list[dict]:
    return sorted(
        table.to_pylist(), key=lambda r: tuple((r[k] is None, r[k] if r[k] is not None else 0) for k in keys)
    )


def test_pypaimon_reads_partitioned_append_table_with_commits_and_overwrite(pypaimon: PyPaimon, catalog):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string()), ("hr", pa.int32())])
    t = catalog.create_table("db.a", schema, partition_keys=["dt", "hr"])
    t.write_arrow(
        pa.table(
            {"id": [1, 2, 3], "name": ["a", "b", "c"], "dt": ["d1", "d1", "d2"], "hr": [1, 2, 1]},
            schema=schema,
        )
    )
    t.write_arrow(pa.table({"id": [4], "name": ["d"], "dt": ["d2"], "hr": [2]}, schema=schema))
    t.write_arrow(
        pa.table({"id": [5], "name": ["e"], "dt": ["d1"], "hr": [1]}, schema=schema), overwrite={"dt": "d1"}
    )
    ours = _sorted(t.to_arrow(), "id")
    theirs = _sorted(pypaimon.read(catalog.warehouse, "db.a", schema=schema), "id")
    assert theirs == ours
    assert [r["id"] for r in ours] == [3, 4, 5]
    # time travel agrees too
    assert _sorted(pypaimon.read(catalog.warehouse, "db.a", snapshot_id=2, schema=schema), "id") == _sorted(
        t.to_arrow(snapshot_id=2), "id")


def test_pypaimon_reads_every_atomic_type(pypaimon: PyPaimon, catalog):
    schema = pa.schema(
        [
            ("b", pa.bool_()),
            ("i8", pa.int8()),
            ("i16", pa.int16()),
            ("i32", pa.int32()),
            ("i64", pa.int64()),
            ("f32", pa.float32()),
            ("f64", pa.float64()),
            ("dec", pa.decimal128(10, 2)),
            ("dec30", pa.decimal128(30, 4)),
            ("s", pa.string()),
            ("bin", pa.binary()),
            ("d", pa.date32()),
            ("ts", pa.timestamp("us")),
            ("ts3", pa.timestamp("ms")),
            ("ltz", pa.timestamp("us", tz="UTC")),
        ]
    )
    data = pa.table(
        {
            "b": [True, False, None],
            "i8": [1, -1, None],
            "i16": [2, None, 3],
            "i32": [3, 4, None],
            "i64": [2**40, None, -5],
            "f32": [1.5, None, -2.0],
            "f64": [2.5, 0.0, None],
            "dec": [decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")],
            "dec30": [decimal.Decimal("12345678901234567890.1234"), None, decimal.Decimal("0.0001")],
            "s": ["x", "", None],
            "bin": [b"\x00\xff", None, b""],
            "d": [dt.date(2024, 1, 2), None, dt.date(1999, 12, 31)],
            "ts": [dt.datetime(2024, 1, 2, 3, 4, 5, 123456), None, dt.datetime(1970, 1, 1)],
            "ts3": [dt.datetime(2024, 1, 2, 3, 4, 5, 123000), None, dt.datetime(2000, 1, 1)],
            "ltz": [dt.datetime(2024, 1, 2, tzinfo=dt.UTC), None, dt.datetime(2001, 1, 1, tzinfo=dt.UTC)],
        },
        schema=schema,
    )
    t = catalog.create_table("db.types", schema)
    t.write_arrow(data)
    theirs = pypaimon.read(catalog.warehouse, "db.types", schema=schema)
    assert _sorted(theirs, "i32") == _sorted(data, "i32")


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
def test_pypaimon_reads_primary_key_tables(pypaimon: PyPaimon, catalog, engine):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64()), ("dt", pa.string())])
    opts = {"bucket": "2", "merge-engine": engine}
    if engine == "aggregation":
        opts["fields.n.aggregate-function"] = "sum"
    name = f"db.pk_{engine.replace('-', '_')}"
    t = catalog.create_table(name, schema, partition_keys=["dt"], primary_keys=["dt", "id"], options=opts)
    t.write_arrow(
        pa.table(
            {"id": [1, 2, 3], "v": ["a", "b", None], "n": [1, 2, 3], "dt": ["x", "x", "y"]}, schema=schema
        )
    )
    t.write_arrow(pa.table({"id": [1, 3], "v": [None, "c"], "n": [10, 30], "dt": ["x", "y"]}, schema=schema))
    if engine == "deduplicate":
        t.write_arrow(pa.table({"id": [2], "v": ["gone"], "n": [0], "dt": ["x"], "rowkind": ["-D"]}))
    ours = _sorted(t.to_arrow(), "dt", "id")
    assert _sorted(pypaimon.read(catalog.warehouse, name, schema=schema), "dt", "id") == ours
    t.compact(full=True)
    assert _sorted(pypaimon.read(catalog.warehouse, name, schema=schema), "dt", "id") == ours


def test_pypaimon_reads_first_row_table_after_compaction(pypaimon: PyPaimon, catalog):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table(
        "db.fr", schema, primary_keys=["id"], options={"bucket": "1", "merge-engine": "first-row"}
    )
    t.write_arrow(pa.table({"id": [1, 2], "v": ["first", "first"]}))
    t.write_arrow(pa.table({"id": [1, 3], "v": ["second", "second"]}))
    t.compact(full=True)  # first-row tables hide level 0 from Paimon's batch reads
    assert _sorted(pypaimon.read(catalog.warehouse, "db.fr", schema=schema), "id") == _sorted(
        t.to_arrow(), "id"
    )


def test_pypaimon_agrees_on_first_row_tables_after_every_write_and_compaction(pypaimon: PyPaimon, catalog):
    # Paimon's batch reads of first-row tables skip level 0 and concatenate the other levels, so
    # each write must be compacted up at once, without a later version of a key below its first.
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table(
        "db.fr2", schema, primary_keys=["id"], options={"bucket": "1", "merge-engine": "first-row"}
    )
    writes = [
        pa.table({"id": list(range(500)), "v": ["w1"] * 500}, schema=schema),
        pa.table({"id": [1, 700], "v": ["w2", "w2"]}, schema=schema),
        pa.table({"id": [1, 700, 800], "v": ["w3"] * 3}, schema=schema),
        pa.table({"id": [2, 800, 900], "v": ["w4"] * 3}, schema=schema),
    ]
    for data in writes:
        t.write_arrow(data)
        ours = _sorted(t.to_arrow(), "id")
        assert _sorted(pypaimon.read(catalog.warehouse, "db.fr2", schema=schema), "id") == ours
    by_id = {r["id"]: r["v"] for r in ours}
    assert (
        len(ours) == 503
        and by_id[1] == "w1"
        and by_id[700] == "w2"
        and by_id[800] == "w3"
        and by_id[900] == "w4"
    )
    t.compact(full=True)
    assert (
        _sorted(t.to_arrow(), "id")
        == ours
        == _sorted(pypaimon.read(catalog.warehouse, "db.fr2", schema=schema), "id")
    )


def test_dyntable_reads_pypaimon_append_table(pypaimon: PyPaimon, catalog):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])
    pypaimon.create_table(catalog.warehouse, "db.theirs", schema, partition_keys=["dt"])
    pypaimon.write(
        catalog.warehouse,
        "db.theirs",
        pa.table({"id": [1, 2], "name": ["a", "b"], "dt": ["p", "q"]}, schema=schema),
    )
    pypaimon.write(
        catalog.warehouse, "db.theirs", pa.table({"id": [3], "name": ["c"], "dt": ["p"]}, schema=schema)
    )
    t = catalog.get_table("db.theirs")
    assert _sorted(t.to_arrow(), "id") == _sorted(
        pypaimon.read(catalog.warehouse, "db.theirs", schema=schema), "id"
    )
    # and we can keep writing to it, and pypaimon still reads it
    t.write_arrow(pa.table({"id": [4], "name": ["d"], "dt": ["q"]}, schema=schema))
    assert [r["id"] for r in _sorted(pypaimon.read(catalog.warehouse, "db.theirs", schema=schema), "id")] == [
        1,
        2,
        3,
        4,
    ]


def test_dyntable_reads_pypaimon_primary_key_table(pypaimon: PyPaimon, catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    pypaimon.create_table(catalog.warehouse, "db.pk", schema, primary_keys=["id"], options={"bucket": "2"})
    pypaimon.write(
        catalog.warehouse, "db.pk", pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema)
    )
    pypaimon.write(catalog.warehouse, "db.pk", pa.table({"id": [2], "v": ["B"]}, schema=schema))
    t = catalog.get_table("db.pk")
    assert _sorted(t.to_arrow(), "id") == [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    # our writer continues the bucket's sequence numbers, so our update wins over pypaimon's rows
    t.write_arrow(pa.table({"id": [3], "v": ["ours"]}))
    assert {r["id"]: r["v"] for r in pypaimon.read(catalog.warehouse, "db.pk", schema=schema).to_pylist()}[
        3
    ] == "ours"


def test_dyntable_reads_pypaimon_dynamic_bucket_table(pypaimon: PyPaimon, catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    pypaimon.create_table(catalog.warehouse, "db.dyn", schema, primary_keys=["id"])
    pypaimon.write(catalog.warehouse, "db.dyn", pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    pypaimon.write(catalog.warehouse, "db.dyn", pa.table({"id": [1], "v": ["A"]}, schema=schema))
    assert _sorted(catalog.get_table("db.dyn").to_arrow(), "id") == [{"id": 1, "v": "A"}, {"id": 2, "v": "b"}]


def test_pypaimon_reads_a_count_layout_table_as_rows_with_counts(pypaimon: PyPaimon, catalog):
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    t = catalog.create_table("db.cnt", schema, options={"retractions.enabled": "true"})
    t.write_arrow(pa.table({"a": [1, 1, 2], "b": ["x", "x", "y"]}))
    t.write_arrow(pa.table({"a": [2], "b": ["y"], "rowkind": ["-D"]}))
    physical = pa.schema(
        [("a", pa.int64()), ("b", pa.string()), pa.field("_VALUE_COUNT", pa.int64(), nullable=False)]
    )
    theirs = {
        (r["a"], r["b"]): r["_VALUE_COUNT"]
        for r in pypaimon.read(catalog.warehouse, "db.cnt", schema=physical).to_pylist()
    }
    assert theirs == {(1, "x"): 2, (2, "y"): 0}
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["a"]) == [{"a": 1, "b": "x"}, {"a": 1, "b": "x"}]


# -- dynamic-bucket primary-key tables ('bucket' = '-1', issue 9) -----------------------------

_DYN_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def _dyn_rows(table: pa.Table) -> list[dict]:
    return _sorted(table.select(["id", "v", "dt"]), "dt", "id")


def test_pypaimon_reads_and_continues_dyntable_dynamic_bucket_table(pypaimon: PyPaimon, catalog):
    """dyntable writes a dynamic-bucket table (HASH index included); pypaimon reads it, writes
    existing keys into the buckets ours put them in (no duplicates), and dyntable reads that."""
    opts = {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}
    t = catalog.create_table(
        "db.dyn", _DYN_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=opts
    )
    t.write_arrow(
        pa.table(
            {"id": list(range(8)), "v": list("abcdefgh"), "dt": ["x"] * 6 + ["y"] * 2}, schema=_DYN_SCHEMA
        )
    )
    t.write_arrow(
        pa.table({"id": [1, 7, 20], "v": ["B", "H", "u"], "dt": ["x", "y", "x"]}, schema=_DYN_SCHEMA)
    )
    assert len({s.bucket for s in t.plan().splits}) > 1
    theirs = pypaimon.read(catalog.warehouse, "db.dyn", schema=_DYN_SCHEMA)
    assert _dyn_rows(theirs) == _dyn_rows(t.to_arrow())
    # pypaimon updates keys dyntable placed: it must find them through our HASH index.
    pypaimon.write(catalog.warehouse, "db.dyn", pa.table({"id": [0, 5, 20, 30], "v": ["A", "F", "U", "n"],
                                                          "dt": ["x", "x", "x", "x"]}, schema=_DYN_SCHEMA))
    ours = _dyn_rows(t.refresh().to_arrow())
    assert len(ours) == len({(r["dt"], r["id"]) for r in ours}) == 10
    assert {r["id"]: r["v"] for r in ours if r["dt"] == "x"} == {
        0: "A",
        1: "B",
        2: "c",
        3: "d",
        4: "e",
        5: "F",
        20: "U",
        30: "n",
    }
    assert _dyn_rows(pypaimon.read(catalog.warehouse, "db.dyn", schema=_DYN_SCHEMA)) == ours


def test_dyntable_writes_pypaimon_dynamic_bucket_table(pypaimon: PyPaimon, catalog):
    """pypaimon creates and writes a dynamic-bucket table; dyntable updates its keys in place
    (through pypaimon's HASH index), compacts, and pypaimon still reads one row per key."""
    opts = {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}
    pypaimon.create_table(
        catalog.warehouse,
        "db.pdyn",
        _DYN_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options=opts,
    )
    pypaimon.write(catalog.warehouse, "db.pdyn", pa.table({"id": [1, 2, 3, 4, 5], "v": list("abcde"),
                                                           "dt": ["x"] * 5}, schema=_DYN_SCHEMA))
    t = catalog.get_table("db.pdyn")
    t.write_arrow(
        pa.table({"id": [2, 5, 6], "v": ["B", "E", "f"], "dt": ["x", "x", "x"]}, schema=_DYN_SCHEMA)
    )
    expected = {1: "a", 2: "B", 3: "c", 4: "d", 5: "E", 6: "f"}
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    t.compact(full=True)
    theirs = pypaimon.read(catalog.warehouse, "db.pdyn", schema=_DYN_SCHEMA)
    assert len(theirs) == 6 and {r["id"]: r["v"] for r in theirs.to_pylist()} == expected
    pypaimon.write(
        catalog.warehouse,
        "db.pdyn",
        pa.table({"id": [6, 7], "v": ["F", "g"], "dt": ["x", "x"]}, schema=_DYN_SCHEMA),
    )
    expected.update({6: "F", 7: "g"})
    assert {r["id"]: r["v"] for r in t.refresh().to_arrow().to_pylist()} == expected


def test_pypaimon_reads_dyntable_cross_partition_upsert_table(pypaimon: PyPaimon, catalog):
    t = catalog.create_table(
        "db.xdyn", _DYN_SCHEMA, partition_keys=["dt"], primary_keys=["id"], options={"bucket": "-1"}
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": list("abc"), "dt": ["x", "x", "y"]}, schema=_DYN_SCHEMA))
    t.write_arrow(
        pa.table({"id": [1, 3], "v": ["A", "C"], "dt": ["y", "z"]}, schema=_DYN_SCHEMA)
    )  # keys move
    ours = _dyn_rows(t.to_arrow())
    assert ours == [
        {"id": 2, "v": "b", "dt": "x"},
        {"id": 1, "v": "A", "dt": "y"},
        {"id": 3, "v": "C", "dt": "z"},
    ]
    assert _dyn_rows(pypaimon.read(catalog.warehouse, "db.xdyn", schema=_DYN_SCHEMA)) == ours


# ---- tags and branches --------------------------------------------------------------------------
# The driver has no tag/branch commands: these tests run pypaimon's own tag and branch API
# (FileStoreTable.create_tag, branch_manager().create_branch) in a one-off script in its venv.


def _pypaimon_script(pypaimon: PyPaimon, warehouse: str, body: str) -> str:
    """Run ``body`` in the pypaimon venv with ``catalog`` bound; return its stdout."""
    import subprocess
    import textwrap

    from tests.compat.harness import _driver_env

    script = "from pypaimon import CatalogFactory\n" \
             f"catalog = CatalogFactory.create({{'warehouse': {warehouse!r}}})\n" + textwrap.dedent(body)
    done = subprocess.run([pypaimon.python, "-c", script], capture_output=True, text=True, env=_driver_env(),
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _pypaimon_read(
    pypaimon: PyPaimon, warehouse: str, table: str, schema: pa.Schema, **options: str
) -> pa.Table:
    """pypaimon's read with dynamic options (``scan.tag-name`` ...), as the driver applies them."""
    from tests.compat.harness import _read_ipc, cast_to_schema

    out = pypaimon._tmp(".arrow")
    try:
        pypaimon.call("read", warehouse=warehouse, table=table, out=str(out), options=options)
        return cast_to_schema(_read_ipc(out), schema)
    finally:
        out.unlink(missing_ok=True)


def test_pypaimon_reads_dyntable_tags_even_after_their_snapshot_expired(pypaimon: PyPaimon, catalog):
    import os

    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.tagged", schema, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.refs.tags.create("t1")
    t.write_arrow(pa.table({"id": [2, 4], "v": ["B", "d"]}, schema=schema))
    t.refs.tags.create("t2")
    t.write_arrow(pa.table({"id": [1], "v": ["A"]}, schema=schema))
    for tag in ("t1", "t2"):
        ours = _sorted(t.to_arrow(tag=tag), "id")
        theirs = _pypaimon_read(pypaimon, catalog.warehouse, "db.tagged", schema, **{"scan.tag-name": tag})
        assert _sorted(theirs, "id") == ours
    assert [r["v"] for r in _sorted(t.to_arrow(tag="t1"), "id")] == ["a", "b", "c"]
    # Expire the tagged snapshot as Paimon's expiration would (the tag keeps its files).
    os.remove(f"{t.store.paths.snapshot_dir}/snapshot-1")
    theirs = _pypaimon_read(pypaimon, catalog.warehouse, "db.tagged", schema, **{"scan.tag-name": "t1"})
    assert [r["v"] for r in _sorted(theirs, "id")] == ["a", "b", "c"]
    listed = _pypaimon_script(pypaimon, catalog.warehouse, """
        print(sorted(catalog.get_table('db.tagged').list_tags()))
    """)
    assert listed.strip() == "['t1', 't2']"


def test_dyntable_reads_and_keeps_writing_around_a_pypaimon_tag(pypaimon: PyPaimon, catalog):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    pypaimon.create_table(catalog.warehouse, "db.ptag", schema, primary_keys=["id"], options={"bucket": "1"})
    pypaimon.write(catalog.warehouse, "db.ptag", pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    _pypaimon_script(pypaimon, catalog.warehouse, """
        catalog.get_table('db.ptag').create_tag('theirs')
    """)
    pypaimon.write(catalog.warehouse, "db.ptag", pa.table({"id": [2], "v": ["B"]}, schema=schema))
    t = catalog.get_table("db.ptag")
    assert sorted(t.refs.tags.all()) == ["theirs"]
    tagged = _sorted(t.to_arrow(tag="theirs"), "id")
    assert tagged == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert tagged == _sorted(_pypaimon_read(pypaimon, catalog.warehouse, "db.ptag", schema,
                                            **{"scan.tag-name": "theirs"}), "id")
    # dyntable keeps writing and tagging the table; pypaimon sees both tags and the new rows.
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=schema))
    t.refs.tags.create("ours")
    theirs = _pypaimon_read(pypaimon, catalog.warehouse, "db.ptag", schema, **{"scan.tag-name": "ours"})
    assert _sorted(theirs, "id") == _sorted(t.to_arrow(), "id")
    assert _sorted(t.to_arrow(tag="theirs"), "id") == tagged  # unchanged by the later writes


def test_pypaimon_reads_and_writes_a_dyntable_branch(pypaimon: PyPaimon, catalog):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.br", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.refs.tags.create("base")
    t.write_arrow(pa.table({"id": [3], "v": ["main"]}, schema=schema))
    t.refs.branches.create("dev", from_tag="base")
    dev = catalog.get_table("db.br$branch_dev")
    dev.write_arrow(pa.table({"id": [2], "v": ["dev"]}, schema=schema))
    theirs = _pypaimon_read(pypaimon, catalog.warehouse, "db.br$branch_dev", schema)
    assert _sorted(theirs, "id") == _sorted(dev.to_arrow(), "id")
    assert _sorted(theirs, "id") == [{"id": 1, "v": "a"}, {"id": 2, "v": "dev"}]
    assert "dev" in _pypaimon_script(pypaimon, catalog.warehouse, """
        print(catalog.get_table('db.br').branch_manager().branches())
    """)
    # pypaimon writes to dyntable's branch; dyntable reads it, and main is untouched.
    pypaimon.write(catalog.warehouse, "db.br$branch_dev", pa.table({"id": [4], "v": ["py"]}, schema=schema))
    dev = catalog.get_table("db.br$branch_dev")
    assert [r["id"] for r in _sorted(dev.to_arrow(), "id")] == [1, 2, 4]
    assert _sorted(catalog.get_table("db.br").to_arrow(), "id") == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "main"}]


def test_dyntable_reads_and_writes_a_pypaimon_branch(pypaimon: PyPaimon, catalog):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    pypaimon.create_table(catalog.warehouse, "db.pbr", schema, primary_keys=["id"], options={"bucket": "1"})
    pypaimon.write(catalog.warehouse, "db.pbr", pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    _pypaimon_script(pypaimon, catalog.warehouse, """
        table = catalog.get_table('db.pbr')
        table.create_tag('base')
        table.branch_manager().create_branch('exp', 'base')
    """)
    pypaimon.write(catalog.warehouse, "db.pbr$branch_exp", pa.table({"id": [2], "v": ["exp"]}, schema=schema))
    t = catalog.get_table("db.pbr")
    assert "exp" in t.refs.branches.names()
    exp = catalog.get_table("db.pbr$branch_exp")
    assert _sorted(exp.to_arrow(), "id") == [{"id": 1, "v": "a"}, {"id": 2, "v": "exp"}]
    exp.write_arrow(pa.table({"id": [3], "v": ["ours"]}, schema=schema))
    theirs = _pypaimon_read(pypaimon, catalog.warehouse, "db.pbr$branch_exp", schema)
    assert _sorted(theirs, "id") == _sorted(catalog.get_table("db.pbr$branch_exp").to_arrow(), "id")
    assert [r["v"] for r in _sorted(t.to_arrow(), "id")] == ["a", "b"]


def test_pypaimon_reads_main_after_replace_main_with_a_diverged_schema(pypaimon: PyPaimon, catalog):
    from engine.schema_changes import AddColumn
    from engine.types import INT

    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.rm", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.refs.tags.create("base")
    t.refs.branches.create("dev", from_tag="base")
    t = catalog.alter_table("db.rm", [AddColumn("m", INT())])  # main's schema diverges
    t.write_arrow(pa.table({"id": [3], "v": ["main"], "m": [30]}))
    old = _sorted(t.to_arrow(), "id")
    dev = catalog.alter_table("db.rm$branch_dev", [AddColumn("n", INT())])
    dev.write_arrow(pa.table({"id": [2, 4], "v": ["dev", "dev"], "n": [20, 40]}))
    result = t.refs.branches.replace_main("dev")
    t = t.refresh()
    new_schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int32())])
    theirs = _sorted(pypaimon.read(catalog.warehouse, "db.rm", schema=new_schema), "id")
    assert theirs == _sorted(t.to_arrow(), "id") == _sorted(dev.to_arrow(), "id")
    assert [r["n"] for r in theirs] == [None, 20, 40]
    old_schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("m", pa.int32())])
    backup = _pypaimon_read(
        pypaimon, catalog.warehouse, "db.rm", old_schema, **{"scan.tag-name": result.backup_tag}
    )
    assert _sorted(backup, "id") == old
    # pypaimon keeps writing main with the branch's schema; dyntable reads it.
    pypaimon.write(
        catalog.warehouse, "db.rm", pa.table({"id": [5], "v": ["py"], "n": [50]}, schema=new_schema)
    )
    assert {"id": 5, "v": "py", "n": 50} in catalog.get_table("db.rm").to_arrow().to_pylist()


@pytest.mark.parametrize("merge_engine", ["deduplicate", "aggregation"])
def test_pypaimon_reads_a_streamed_compaction(pypaimon: PyPaimon, catalog, monkeypatch, merge_engine):
    """A compaction whose sections are merged in steps of a few rows (the streaming merge of large
    sections), its output rolled into many small files with one row group each: pypaimon reads
    the same rows before and after, and the files' key ranges and statistics let it prune."""
    import engine.merge.streaming as streaming
    import engine.write.kv_rolling as kv_rolling

    schema = pa.schema([("id", pa.int64()), ("k", pa.string()), ("n", pa.int64()), ("v", pa.string())])
    opts = {"bucket": "2", "merge-engine": merge_engine, "target-file-size": "4kb"}
    if merge_engine == "aggregation":
        opts["fields.n.aggregate-function"] = "sum"
    name = f"db.streamed_{merge_engine}"
    t = catalog.create_table(name, schema, primary_keys=["id", "k"], options=opts)
    for tag in range(4):
        ids = list(range(tag, 600, tag + 1))
        t.refresh().write_arrow(pa.table({
            "id": ids, "k": [f"k{i % 3}" for i in ids], "n": [i + tag for i in ids],
            "v": [None if (i + tag) % 5 == 0 else f"v{tag}" for i in ids],
        }, schema=schema))
    ours = _sorted(t.refresh().to_arrow(), "id", "k")
    monkeypatch.setattr(streaming, "MERGE_CHUNK_ROWS", 16)
    monkeypatch.setattr(kv_rolling, "ROWS_PER_SLICE", 64)
    t.refresh().compact(full=True)
    files = [f for s in t.refresh().plan().splits for f in s.files]
    assert len(files) > 2
    assert _sorted(t.refresh().to_arrow(), "id", "k") == ours
    assert _sorted(pypaimon.read(catalog.warehouse, name, schema=schema), "id", "k") == ours
