"""Append tables end to end through the public engine API (no Spark)."""

from __future__ import annotations

import datetime as dt
import decimal
import os

import pyarrow as pa
import pytest

from engine import (
    CommitKind,
    InvalidArgumentError,
    NoSuchColumnError,
    NoSuchSnapshotError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from engine import (
    predicate as P,
)
from engine.schema_changes import AddColumn, DropColumn, RenameColumn, UpdateColumnType
from engine.types import BIGINT, STRING

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])


def rows(ids, dt_value="2024-01-01"):
    return pa.table(
        {"id": list(ids), "name": [f"n{i}" for i in ids], "dt": [dt_value] * len(ids)}, schema=SCHEMA
    )


def sorted_ids(table):
    return sorted(table.column("id").to_pylist())


def test_create_write_read_round_trip(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(rows(range(5)))
    t.write_arrow(rows(range(5, 8)))
    out = t.to_arrow()
    assert sorted_ids(out) == list(range(8))
    assert out.schema.names == ["id", "name", "dt"]
    snaps = t.snapshots()
    assert [s.id for s in snaps] == [1, 2]
    assert all(s.commit_kind is CommitKind.APPEND for s in snaps)
    assert snaps[-1].total_record_count == 8 and snaps[-1].delta_record_count == 3


def test_time_travel_and_projection(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(rows(range(3)))
    t.write_arrow(rows(range(3, 6)))
    assert sorted_ids(t.to_arrow(snapshot_id=1)) == [0, 1, 2]
    assert t.to_arrow(columns=["name"]).schema.names == ["name"]
    with pytest.raises(NoSuchSnapshotError):
        t.to_arrow(snapshot_id=99)
    with pytest.raises(NoSuchColumnError):
        t.to_arrow(columns=["nope"])
    first = t.snapshots()[0]
    assert sorted_ids(t.to_arrow(timestamp_millis=first.time_millis)) == [0, 1, 2]


def test_partitions_overwrite_and_drop(catalog):
    t = catalog.create_table("db.p", SCHEMA, partition_keys=["dt"])
    t.write_arrow(pa.concat_tables([rows([1, 2], "a"), rows([3], "b")]))
    # static partition overwrite replaces only dt=a
    t.write_arrow(rows([10], "a"), overwrite={"dt": "a"})
    assert sorted_ids(t.to_arrow()) == [3, 10]
    # dynamic overwrite replaces only partitions that receive rows
    t.write_arrow(rows([20], "c"), overwrite="dynamic")
    assert sorted_ids(t.to_arrow()) == [3, 10, 20]
    # whole-table overwrite
    t.write_arrow(rows([30], "d"), overwrite=True)
    assert sorted_ids(t.to_arrow()) == [30]
    t.write_arrow(rows([31], "e"))
    t.drop_partitions([{"dt": "d"}])
    assert sorted_ids(t.to_arrow()) == [31]
    assert t.snapshots()[-1].commit_kind is CommitKind.OVERWRITE
    # partition pruning: a filter on the partition column only touches its partition
    plan = t.plan(filter=P.equal("dt", "e"))
    assert {s.partition_values for s in plan.splits} == {("e",)}
    assert t.plan(filter=P.equal("dt", "zzz")).splits == ()


def test_drop_partitions_by_partial_spec(catalog):
    # Paimon's DROP PARTITION by partial spec: a prefix spec drops every partition it matches
    # and may match none; a full spec that matches nothing refuses the whole drop.
    from engine.errors import NoSuchPartitionError

    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hh", pa.string())])
    t = catalog.create_table("db.pp", schema, partition_keys=["dt", "hh"])
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "hh": ["0", "1", "0", "1"]},
                           schema=schema))
    t.drop_partitions([{"dt": "a"}], if_exists=False)
    assert sorted_ids(t.to_arrow()) == [3, 4]
    t.drop_partitions([{"dt": "zz"}], if_exists=False)  # partial, matches nothing: no error
    assert sorted_ids(t.to_arrow()) == [3, 4]
    with pytest.raises(NoSuchPartitionError, match="nothing was dropped"):
        t.drop_partitions([{"dt": "b", "hh": "0"}, {"dt": "b", "hh": "9"}], if_exists=False)
    assert sorted_ids(t.to_arrow()) == [3, 4]
    t.drop_partitions([{"dt": "b", "hh": "0"}, {"dt": "zz"}], if_exists=False)
    assert sorted_ids(t.to_arrow()) == [4]


def test_partition_directories_follow_paimon(catalog, warehouse):
    import os

    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("k", pa.string())])
    t = catalog.create_table("db.d", schema, partition_keys=["day", "k"])
    t.write_arrow(
        pa.table({"id": [1, 2], "day": [dt.date(2024, 1, 1), None], "k": ["a/b", "x"]}, schema=schema)
    )
    root = os.path.join(warehouse, "db.db", "d")
    dirs = sorted(d for d in os.listdir(root) if d.startswith("day="))
    assert dirs == ["day=19723", "day=__DEFAULT_PARTITION__"]
    assert os.listdir(os.path.join(root, "day=19723")) == ["k=a%2Fb"]
    assert sorted(t.to_arrow().column("k").to_pylist()) == ["a/b", "x"]


def test_min_max_file_skipping(catalog):
    t = catalog.create_table("db.s", SCHEMA)
    t.write_arrow(rows(range(0, 10)))
    t.write_arrow(rows(range(100, 110)))
    plan = t.plan(filter=P.greater_or_equal("id", 100))
    assert len([f for s in plan.splits for f in s.files]) == 1
    assert sorted_ids(t.to_arrow(filter=P.greater_or_equal("id", 105))) == list(range(105, 110))
    assert t.to_arrow(filter=P.is_null("id")).num_rows == 0


def test_schema_evolution_reads_old_files_by_field_id(catalog):
    t = catalog.create_table("db.e", SCHEMA)
    t.write_arrow(rows([1, 2]))
    t = catalog.alter_table("db.e", [AddColumn("extra", BIGINT()), RenameColumn("name", "label")])
    t.write_arrow(pa.table({"id": [3], "label": ["x"], "dt": ["d"], "extra": [7]}))
    out = t.to_arrow().sort_by("id")
    assert out.column("label").to_pylist() == ["n1", "n2", "x"]
    assert out.column("extra").to_pylist() == [None, None, 7]
    t = catalog.alter_table("db.e", [DropColumn("extra"), UpdateColumnType("id", BIGINT())])
    assert t.to_arrow().schema.names == ["id", "label", "dt"]
    t = catalog.alter_table("db.e", [AddColumn("extra", STRING())])
    # a re-added column gets a new field id: old values do not come back
    assert t.to_arrow().column("extra").null_count == 3


def test_every_atomic_type_round_trips(catalog):
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
            ("dec38", pa.decimal128(38, 6)),
            ("s", pa.string()),
            ("bin", pa.binary()),
            ("d", pa.date32()),
            ("t", pa.time32("ms")),
            ("ts", pa.timestamp("us")),
            ("ts3", pa.timestamp("ms")),
            ("ltz", pa.timestamp("us", tz="UTC")),
            ("arr", pa.list_(pa.int32())),
            ("m", pa.map_(pa.string(), pa.int64())),
            ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ]
    )
    data = pa.table({
        "b": [True, None], "i8": [1, -2], "i16": [300, None], "i32": [70000, 1], "i64": [2**40, -1],
        "f32": [1.5, None], "f64": [2.25, -0.5], "dec": [decimal.Decimal("12.34"), None],
        "dec38": [decimal.Decimal("123456789012345678901234.567890"), decimal.Decimal("0")],
        "s": ["héllo", None], "bin": [b"\x00\x01", b""], "d": [dt.date(2024, 2, 29), None],
        "t": [dt.time(12, 30, 1), None], "ts": [dt.datetime(2024, 1, 1, 10, 0, 0, 123456), None],
        "ts3": [dt.datetime(2024, 1, 1, 10, 0, 0, 123000), None],
        "ltz": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC), None],
        "arr": [[1, 2], None], "m": [[("a", 1)], None], "st": [{"x": 1, "y": "z"}, None],
    }, schema=schema)
    t = catalog.create_table("db.types", schema)
    t.write_arrow(data)
    assert t.to_arrow().equals(t.to_arrow())  # stable
    out = t.to_arrow()
    assert out.to_pylist() == data.to_pylist()


def test_errors_are_typed(catalog):
    catalog.create_table("db.t", SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", SCHEMA)
    with pytest.raises(NoSuchTableError):
        catalog.get_table("db.missing")
    with pytest.raises(InvalidArgumentError):
        catalog.create_table("db.bad", SCHEMA, options={"bucket": "many"})
    with pytest.raises(InvalidArgumentError):
        catalog.create_table("db.bad2", SCHEMA, partition_keys=["nope"])
    with pytest.raises(InvalidArgumentError):
        catalog.get_table("db.t").write_arrow(pa.table({"id": [1], "oops": [1]}))
    with pytest.raises(InvalidArgumentError):
        catalog.create_table("../escape", SCHEMA)


def test_drop_table_deletes_storage(catalog, warehouse):
    import os

    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(rows([1]))
    assert os.path.isdir(t.path)
    catalog.drop_table("db.t")
    assert not os.path.exists(t.path)
    assert catalog.list_tables("db") == []


def test_rolling_at_target_file_size(catalog):
    t = catalog.create_table("db.r", SCHEMA, options={"target-file-size": "64 kb"})
    big = pa.table(
        {"id": list(range(300_000)), "name": [f"name-{i:08d}" for i in range(300_000)], "dt": ["x"] * 300_000}
    )
    t.write_arrow(big)
    files = [f for s in t.plan().splits for f in s.files]
    assert len(files) > 1
    assert sum(f.row_count for f in files) == 300_000
    assert t.to_arrow().num_rows == 300_000


def test_bucketed_append_table_gets_an_atomic_bucket_key(catalog):
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())), ("dt", pa.string())])
    t = catalog.create_table("db.b", schema, options={"bucket": "4"})
    assert t.options["bucket-key"] == "id,dt"
    t.write_arrow(pa.table({"id": list(range(20)), "tags": [["x"]] * 20, "dt": ["d"] * 20}, schema=schema))
    assert {s.bucket for s in t.plan().splits} <= {0, 1, 2, 3} and len(t.plan().splits) > 1
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(20))


def test_the_table_api_sqlext_reads_instead_of_the_store(catalog):
    t = catalog.create_table(
        "db.api", SCHEMA, partition_keys=["dt"], options={"snapshot.num-retained.max": "50"}
    )
    assert t.snapshot_id_range() == (None, None)
    for i in range(3):
        t.write_arrow(rows([i]))
    assert t.snapshot_id_range() == (1, 3)
    assert [s.id for s in t.snapshots_between(1, 3)] == [2, 3]
    assert t.partition_dir(["2024-01-01"]) == "dt=2024-01-01"
    assert t.core_options.snapshot_num_retained_max == 50
    # Dynamic options: the returned object only; the stored schema is unchanged.
    tuned = t.with_options({"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"})
    assert tuned.core_options.snapshot_num_retained_max == 1
    assert t.refresh().core_options.snapshot_num_retained_max == 50
    assert len(tuned.maintenance.expire_snapshots().snapshots) == 2
    with pytest.raises(InvalidArgumentError, match="snapshot.num-retained.max"):
        t.with_options({"snapshot.num-retained.max": "many"})


def test_nanosecond_timestamp_partitions_keep_every_digit(catalog):
    """TIMESTAMP(9) partition values below a microsecond name their directory with all nine
    digits (as Java's LocalDateTime prints them), and a manifest's partition bounds compare them
    with whole-microsecond values of the same commit."""
    schema = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ns"))])
    t = catalog.create_table("db.nanos", schema, partition_keys=["ts"])
    values = pa.array([1_000_000_001, 1_500_000_000, None], pa.timestamp("ns"))
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "ts": values}))
    got = t.to_arrow().sort_by("id").column("ts")
    assert got.cast(pa.int64()).to_pylist() == [1_000_000_001, 1_500_000_000, None]
    directories = sorted(os.listdir(t.path))
    assert "ts=1970-01-01T00%3A00%3A01.000000001" in directories
    assert "ts=1970-01-01T00%3A00%3A01.500" in directories
    assert t.to_arrow(filter=P.equal("ts", values[0].as_py())).column("id").to_pylist() == [1]
