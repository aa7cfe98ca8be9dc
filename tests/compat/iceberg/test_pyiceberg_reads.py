"""pyiceberg, in its own virtual environment, reads the Iceberg metadata dyntable publishes
(``metadata.iceberg.storage``) and sees exactly the rows dyntable reads: now, at every Iceberg
snapshot (time travel to a state that really existed), at tags, after schema changes, full
compaction of key tables, expiration and rollback, in both storage layouts."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine.schema_changes import AddColumn, DropColumn, RenameColumn
from tests.compat.iceberg.oracle import pyiceberg_python, read_iceberg

pytestmark = pytest.mark.compat

ICEBERG = {"metadata.iceberg.storage": "table-location"}


@pytest.fixture(scope="module")
def python() -> str:
    return pyiceberg_python()


def _rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    columns = columns or table.column_names
    rows = [tuple(r[c] for c in columns) for r in table.select(columns).to_pylist()]
    return sorted(rows, key=repr)


def _metadata(table) -> Path:
    return Path(table.path) / "metadata" / f"v{table.latest_snapshot().id}.metadata.json"


def _same(iceberg: pa.Table, ours: pa.Table) -> None:
    assert _rows(iceberg, ours.column_names) == _rows(ours)


ATOMIC = pa.schema(
    [
        ("id", pa.int32()),
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(12, 3)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("ts3", pa.timestamp("ms")),
        ("tsz", pa.timestamp("us", tz="UTC")),
    ]
)


def _atomic_rows(start: int) -> pa.Table:
    n = 4
    ids = list(range(start, start + n))

    def some(values: list[Any]) -> list[Any]:
        return [None if i % 3 == 2 else v for i, v in enumerate(values)]

    base = dt.datetime(2024, 5, 6, 7, 8, 9, 123000)
    return pa.table(
        {
            "id": ids,
            "b": some([i % 2 == 0 for i in ids]),
            "i8": some([i % 100 for i in ids]),
            "i16": some([i * 7 for i in ids]),
            "i64": some([i * 10_000_000_000 for i in ids]),
            "f32": some([i / 4 for i in ids]),
            "f64": some([i / 3 for i in ids]),
            "dec": some([decimal.Decimal(f"{i}.125") for i in ids]),
            "s": some([f"s{i}" for i in ids]),
            "bin": some([bytes([i % 256, 0, 1]) for i in ids]),
            "d": some([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids]),
            "ts": some([base + dt.timedelta(seconds=i) for i in ids]),
            "ts3": some([base + dt.timedelta(minutes=i) for i in ids]),
            "tsz": some([(base + dt.timedelta(hours=i)).replace(tzinfo=dt.UTC) for i in ids]),
        },
        schema=ATOMIC,
    )


def test_append_every_atomic_type_with_nulls_every_snapshot(catalog, python) -> None:
    t = catalog.create_table("db.atomic", ATOMIC, options=ICEBERG)
    for k in range(3):
        t.write_arrow(_atomic_rows(10 * k))
    t = t.refresh()
    # Row filters pyiceberg prunes with the files' bounds and null counts: a wrong bound loses rows.
    filters = {
        "i64 >= 100000000000": lambda r: r["i64"] is not None and r["i64"] >= 100_000_000_000,
        "d < '2024-01-15'": lambda r: r["d"] is not None and r["d"] < dt.date(2024, 1, 15),
        "dec > 20.125": lambda r: r["dec"] is not None and r["dec"] > decimal.Decimal("20.125"),
        "ts >= '2024-05-06T07:08:30.123'": lambda r: r["ts"] is not None
        and r["ts"] >= dt.datetime(2024, 5, 6, 7, 8, 30, 123000),
        "id = 21": lambda r: r["id"] == 21,
        "i8 is null": lambda r: r["i8"] is None,
        "b = true": lambda r: r["b"] is True,
    }
    got = read_iceberg(python, _metadata(t), snapshots=[1, 2, 3], filters=list(filters))
    ours = t.to_arrow()
    for (text, keep), filtered in zip(filters.items(), got.filtered, strict=True):
        expected = pa.Table.from_pylist([r for r in ours.to_pylist() if keep(r)], schema=ours.schema)
        assert _rows(filtered, ours.column_names) == _rows(expected), text
        assert expected.num_rows > 0, text
    _same(got.current, ours)
    assert got.snapshot_ids == [1, 2, 3] and got.current_snapshot_id == 3
    for sid in (1, 2, 3):
        _same(got.at[sid], t.to_arrow(snapshot_id=sid))
    fields = {f["name"]: f for f in got.schema["fields"]}
    assert fields["id"]["id"] == t.schema.field("id").id
    assert fields["dec"]["type"] == "decimal(12, 3)" and fields["tsz"]["type"] == "timestamptz"


def test_char_varchar_binary_and_struct_columns(catalog, python) -> None:
    from engine.types import BIGINT, BINARY, CHAR, INT, ROW, STRING, VARCHAR, DataField

    fields = [
        DataField(0, "id", INT()),
        DataField(1, "c", CHAR(5)),
        DataField(2, "vc", VARCHAR(10)),
        DataField(3, "r", ROW([DataField(4, "x", BIGINT()), DataField(5, "y", STRING())])),
        DataField(6, "bn", BINARY(3)),
    ]
    t = catalog.create_table("db.more", fields, options=ICEBERG)
    rows = {
        "id": [1, 2, None],
        "c": ["ab", None, "abcde"],
        "vc": ["x", "y", None],
        "r": [{"x": 1, "y": "a"}, None, {"x": None, "y": None}],
        "bn": [b"abc", None, b"xyz"],
    }
    t.write_arrow(pa.table(rows, schema=t.arrow_schema))
    t = t.refresh()
    got = read_iceberg(python, _metadata(t))
    assert got.current.to_pylist() == t.to_arrow().to_pylist()  # one file: the same order


def test_partitioned_append_overwrite_and_time_travel(catalog, python) -> None:
    schema = pa.schema([("k", pa.int64()), ("p", pa.string()), ("d", pa.date32()), ("v", pa.string())])
    t = catalog.create_table("db.parts", schema, partition_keys=["p", "d"], options=ICEBERG)
    day = dt.date(2024, 3, 1)
    t.write_arrow(
        pa.table(
            {"k": [1, 2, 3], "p": ["a", "b", None], "d": [day, day, None], "v": ["x", "y", "z"]},
            schema=schema,
        )
    )
    t.write_arrow(pa.table({"k": [4, 5], "p": ["a", "c"], "d": [day, day], "v": ["u", None]}, schema=schema))
    # An overwrite of partition (a, day): Iceberg sees the old files DELETED, the new one ADDED.
    t.write_arrow(pa.table({"k": [6], "p": ["a"], "d": [day], "v": ["w"]}, schema=schema), overwrite=True)
    t = t.refresh()
    got = read_iceberg(python, _metadata(t), snapshots=[1, 2, 3])
    _same(got.current, t.to_arrow())
    for sid in (1, 2, 3):
        _same(got.at[sid], t.to_arrow(snapshot_id=sid))


def test_primary_key_table_shows_the_top_level_only(catalog, python) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table(
        "db.pk", schema, primary_keys=["k"], options={**ICEBERG, "bucket": "2", "write-only": "true"}
    )
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.write_arrow(pa.table({"k": [2, 3, 4], "v": ["B", "C", "D"]}, schema=schema))
    t = t.refresh()
    before = read_iceberg(python, _metadata(t))
    assert before.current.num_rows == 0  # nothing fully compacted yet: Iceberg sees no level-0 file
    t.compact(full=True)
    t = t.refresh()
    got = read_iceberg(python, _metadata(t))
    _same(got.current, t.to_arrow())
    keys = got.current.column("k").to_pylist()
    assert len(keys) == len(set(keys)) == 4
    # New writes stay invisible to Iceberg until the next full compaction; no key twice meanwhile.
    t.write_arrow(pa.table({"k": [1, 5], "v": ["A", "E"]}, schema=schema))
    t = t.refresh()
    _same(read_iceberg(python, _metadata(t)).current, t.to_arrow(snapshot_id=t.latest_snapshot().id - 1))
    t.compact(full=True)
    t = t.refresh()
    ids = [s.id for s in t.snapshots()]
    got = read_iceberg(python, _metadata(t), snapshots=ids)
    _same(got.current, t.to_arrow())
    assert sorted(got.current.column("k").to_pylist()) == [1, 2, 3, 4, 5]
    # Time travel: each Iceberg snapshot shows the table as its last full compaction left it (empty
    # before the first), a state that really existed, never a key twice.
    compacted = [s.id for s in t.snapshots() if s.commit_kind == "COMPACT"]
    assert len(compacted) == 2
    for sid in ids:
        last = max((c for c in compacted if c <= sid), default=None)
        if last is None:
            assert got.at[sid].num_rows == 0
        else:
            _same(got.at[sid], t.to_arrow(snapshot_id=last))


@pytest.mark.parametrize(
    "options",
    [
        {"merge-engine": "deduplicate"},
        {"merge-engine": "partial-update"},
        {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
        {"merge-engine": "first-row"},
    ],
    ids=lambda o: o["merge-engine"],
)
def test_primary_key_merge_engines_compacted_after_every_commit(catalog, python, options) -> None:
    """``full-compaction.delta-commits = 1``: each batch write compacts fully, so Iceberg sees every
    commit's merged rows (each merge engine's), at every snapshot."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])
    t = catalog.create_table(
        "db.pkm", schema, primary_keys=["k"],
        options={**ICEBERG, **options, "bucket": "2", "full-compaction.delta-commits": "1"},
    )  # fmt: skip
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", None, "c"], "n": [1, 2, 3]}, schema=schema))
    t.write_arrow(pa.table({"k": [2, 3, 4], "v": ["B", None, "D"], "n": [10, None, 40]}, schema=schema))
    t = t.refresh()
    ids = [s.id for s in t.snapshots()]
    got = read_iceberg(python, _metadata(t), snapshots=ids)
    ours = t.to_arrow()
    _same(got.current, ours)
    assert sorted(got.current.column("k").to_pylist()) == [1, 2, 3, 4]
    compactions = [s.id for s in t.snapshots() if s.commit_kind == "COMPACT"]
    assert len(compactions) == 2  # one full compaction after each write
    for sid in ids:  # a write's snapshot shows the previous compaction's state, a compaction its own
        compacted = max((c for c in compactions if c <= sid), default=None)
        if compacted is None:
            assert got.at[sid].num_rows == 0
        else:
            _same(got.at[sid], t.to_arrow(snapshot_id=compacted))


def test_schema_evolution_keeps_field_ids(catalog, python) -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.float64())])
    t = catalog.create_table("db.evolve", schema, options=ICEBERG)
    t.write_arrow(pa.table({"a": [1, 2], "b": ["x", None], "c": [0.5, 1.5]}, schema=schema))
    ids_before = {f.name: f.id for f in t.schema.fields}
    catalog.alter_table("db.evolve", [AddColumn("e", "BIGINT"), RenameColumn("b", "bb"), DropColumn("c")])
    t = catalog.get_table("db.evolve")
    t.write_arrow(pa.table({"a": [3], "bb": ["z"], "e": [30]}))
    t = t.refresh()
    got = read_iceberg(python, _metadata(t), snapshots=[1])
    _same(got.current, t.to_arrow())
    ids = {f["name"]: f["id"] for f in got.schema["fields"]}
    assert ids == {f.name: f.id for f in t.schema.fields}
    assert ids["bb"] == ids_before["b"]  # the renamed column kept b's id: its old values are still read
    assert _rows(got.current, ["a", "bb"]) == [(1, "x"), (2, None), (3, "z")]
    # time travel reads a snapshot in the schema it was written with, in both engines
    assert got.at[1].column_names == ["a", "b", "c"]
    _same(got.at[1], t.to_arrow(snapshot_id=1))


def test_expiration_drops_iceberg_snapshots_before_their_files(catalog, python) -> None:
    schema = pa.schema([("a", pa.int64())])
    t = catalog.create_table("db.expire", schema, options={**ICEBERG, "write-only": "true"})
    for i in range(5):
        t.write_arrow(pa.table({"a": [i]}, schema=schema), overwrite=True)
    t = t.refresh()
    t.maintenance.expire_snapshots(retain_max=2, retain_min=1)
    got = read_iceberg(python, _metadata(t), snapshots=[4])
    assert got.snapshot_ids == [4, 5]
    _same(got.current, t.to_arrow())
    _same(got.at[4], t.to_arrow(snapshot_id=4))
    # every file any Iceberg snapshot names still exists
    assert all(Path(p).exists() for p in got.data_files)


def test_rollback_and_tags(catalog, python) -> None:
    schema = pa.schema([("a", pa.int64())])
    t = catalog.create_table("db.roll", schema, options=ICEBERG)
    for i in range(3):
        t.write_arrow(pa.table({"a": [i]}, schema=schema))
    t.refs.tags.create("t2", 2)
    t.refs.rollback_to(2)
    t = t.refresh()
    got = read_iceberg(python, _metadata(t), snapshots=[1, 2, 3, 4], tags=["t2"])
    assert got.current_snapshot_id == t.latest_snapshot().id == 4
    _same(got.current, t.to_arrow())
    assert _rows(got.current) == [(0,), (1,)]
    _same(got.tags["t2"], t.to_arrow(tag="t2"))
    # Time travel to every exposed snapshot, the rolled-back one (3) included, shows what it held.
    assert got.snapshot_ids == [1, 2, 3, 4]
    for sid in (1, 2, 3, 4):
        _same(got.at[sid], t.to_arrow(snapshot_id=sid))
    assert _rows(got.at[3]) == [(0,), (1,), (2,)]
    t.write_arrow(pa.table({"a": [9]}, schema=schema))
    t = t.refresh()
    _same(read_iceberg(python, _metadata(t)).current, t.to_arrow())


def test_hadoop_catalog_layout(catalog, python) -> None:
    schema = pa.schema([("a", pa.int64()), ("p", pa.int32())])
    t = catalog.create_table(
        "db.hc", schema, partition_keys=["p"], options={"metadata.iceberg.storage": "hadoop-catalog"}
    )
    t.write_arrow(pa.table({"a": [1, 2], "p": [1, 2]}, schema=schema))
    t.write_arrow(pa.table({"a": [3], "p": [2]}, schema=schema))
    t = t.refresh()
    metadata_dir = Path(catalog.warehouse) / "iceberg" / "db" / "hc" / "metadata"
    assert (metadata_dir / "version-hint.text").read_text() == "2"
    assert not (Path(t.path) / "metadata").exists()
    got = read_iceberg(python, metadata_dir / "v2.metadata.json", snapshots=[1])
    _same(got.current, t.to_arrow())
    _same(got.at[1], t.to_arrow(snapshot_id=1))
